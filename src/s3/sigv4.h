// AWS Signature Version 4: verification of header-signed and presigned requests, the streaming
// (aws-chunked) chunk signature chain, and signing for our own clients and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::s3 {

// Returns the secret key for an access key, or nullopt when unknown (-> InvalidAccessKeyId).
using SecretLookup = std::function<std::optional<std::string>(std::string_view access_key)>;

enum class PayloadMode {
  kSignedSha256,             // x-amz-content-sha256: <hex>; body must hash to it
  kUnsigned,                 // UNSIGNED-PAYLOAD (also presigned URLs)
  kStreamingSigned,          // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
  kStreamingSignedTrailer,   // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  kStreamingUnsignedTrailer  // STREAMING-UNSIGNED-PAYLOAD-TRAILER
};

struct AuthContext {
  std::string access_key;
  PayloadMode payload_mode = PayloadMode::kUnsigned;
  std::string content_sha256;        // expected hex digest for kSignedSha256
  std::vector<std::string> signed_headers;  // lower-case, as listed in SignedHeaders
  bool presigned = false;
  // For the streaming modes: what the chunk signature chain needs.
  std::string seed_signature;        // the request's own signature (hex)
  std::string signing_key;           // raw derived key (kSecret -> date -> region -> s3 -> aws4_request)
  std::string amz_date;              // x-amz-date, e.g. 20130524T000000Z
  std::string scope;                 // 20130524/us-east-1/s3/aws4_request
};

// Verifies the request's signature (Authorization header or X-Amz-* query parameters).
// now_unix is the server clock (tests inject it). Errors: AccessDenied (no auth at all),
// AuthorizationHeaderMalformed / AuthorizationQueryParametersError, InvalidAccessKeyId,
// SignatureDoesNotMatch, RequestTimeTooSkewed (|skew| > 15 min), ExpiredToken/AccessDenied for an
// expired presigned URL ("Request has expired"), kInvalidArgument for an unknown payload mode.
Result<AuthContext> VerifyRequest(const HttpRequest& req, const SecretLookup& lookup,
                                  int64_t now_unix);

// Building blocks, exposed for unit tests against AWS's published examples.
std::string CanonicalUri(std::string_view raw_path);  // decode then SigV4-encode, '/' kept
std::string CanonicalQuery(std::string_view raw_query, bool drop_signature);
std::string DeriveSigningKey(std::string_view secret, std::string_view date,
                             std::string_view region, std::string_view service);
// The string to sign for one aws-chunked chunk (data = the chunk payload).
std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature, std::string_view chunk_data);
// The string to sign for the trailer chunk of kStreamingSignedTrailer.
std::string TrailerStringToSign(std::string_view amz_date, std::string_view scope,
                                std::string_view previous_signature,
                                std::string_view canonical_trailers);

// Client side: signs a request with header auth. `headers` must include host; x-amz-date and
// x-amz-content-sha256 are added. Returns the headers to send (including Authorization).
struct SignInput {
  std::string method;
  std::string raw_path;   // already percent-encoded as it will be sent
  std::string raw_query;  // already encoded
  HeaderList headers;     // lower-case names
  std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD", or a STREAMING-* constant
  std::string access_key, secret_key, region = "us-east-1";
  int64_t now_unix = 0;
};
HeaderList SignRequest(const SignInput& in);
// Client side: a presigned URL query string (without '?') valid for expires_s seconds.
std::string PresignQuery(const SignInput& in, int64_t expires_s);

}  // namespace rdmastor::s3
