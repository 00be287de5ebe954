// JSON Web Tokens for the Prometheus endpoints (MINIO_PROMETHEUS_AUTH_TYPE=jwt): what
// `mc admin prometheus generate` and `rdmastor admin prometheus-token` hand to Prometheus as a
// bearer token. HMAC only (HS512, which mc uses, and HS256), keyed with the root secret key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::admin {

struct JwtClaims {
  std::string sub;  // the access key the token was issued for
  std::string iss;  // "prometheus"
  int64_t exp = 0;  // expiry, unix seconds
};

// Signs `claims` ("HS512" or "HS256"); returns header.payload.signature.
std::string SignJwt(const JwtClaims& claims, std::string_view secret,
                    std::string_view alg = "HS512");

// Verifies the signature (constant-time compare) and that the token has not expired at
// `now_unix`. kAccessDenied with the reason otherwise; never echoes the token.
Result<JwtClaims> VerifyJwt(std::string_view token, std::string_view secret, int64_t now_unix);

// The Authorization header of a metrics scrape: "Bearer <jwt>" whose sub is `access_key`.
Status VerifyPrometheusBearer(std::string_view authorization, std::string_view access_key,
                              std::string_view secret, int64_t now_unix);

}  // namespace rdmastor::admin
