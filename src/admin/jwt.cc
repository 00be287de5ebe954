#include "admin/jwt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/hash.h"

namespace rdmastor::admin {

namespace {

std::string Base64UrlEncode(std::string_view bytes) {
  std::string s = hash::Base64Encode(bytes);
  for (auto& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::string s(in);
  for (auto& c : s) {
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (c == '+' || c == '/' || c == '=')
      return std::nullopt;
  }
  while (s.size() % 4 != 0) s.push_back('=');
  return hash::Base64Decode(s);
}

const EVP_MD* DigestFor(std::string_view alg) {
  if (alg == "HS512") return EVP_sha512();
  if (alg == "HS256") return EVP_sha256();
  return nullptr;
}

std::string Hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

Error Denied(std::string why) {
  return MakeError(ErrorCode::kAccessDenied, "invalid metrics bearer token: " + std::move(why));
}

// A string member of a JSON object: "" when absent, nullopt when present with another type (the
// token is attacker input: nothing may be assumed about its shape).
std::optional<std::string> StringMember(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

std::string SignJwt(const JwtClaims& claims, std::string_view secret, std::string_view alg) {
  const EVP_MD* md = DigestFor(alg);
  if (!md) md = EVP_sha512(), alg = "HS512";
  nlohmann::json header = {{"alg", alg}, {"typ", "JWT"}};
  nlohmann::json payload = {{"exp", claims.exp}, {"sub", claims.sub}};
  if (!claims.iss.empty()) payload["iss"] = claims.iss;
  std::string signing_input =
      Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(payload.dump());
  return signing_input + "." + Base64UrlEncode(Hmac(md, secret, signing_input));
}

Result<JwtClaims> VerifyJwt(std::string_view token, std::string_view secret, int64_t now_unix) {
  auto dot1 = token.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return Denied("not a JWT (expected three dot-separated parts)");
  auto header_raw = Base64UrlDecode(token.substr(0, dot1));
  auto payload_raw = Base64UrlDecode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto sig = Base64UrlDecode(token.substr(dot2 + 1));
  if (!header_raw || !payload_raw || !sig) return Denied("bad base64url encoding");
  auto header = nlohmann::json::parse(*header_raw, nullptr, /*allow_exceptions=*/false);
  auto payload = nlohmann::json::parse(*payload_raw, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !payload.is_object()) return Denied("header or claims not JSON");
  auto alg = StringMember(header, "alg");
  const EVP_MD* md = alg ? DigestFor(*alg) : nullptr;
  // Only HMAC: "none" or a public-key algorithm must never be accepted with the shared secret.
  if (!md) return Denied("unsupported algorithm (HS512 or HS256)");
  std::string expected = Hmac(md, secret, token.substr(0, dot2));
  if (!hash::ConstantTimeEquals(*sig, expected))
    return Denied("signature does not match");
  JwtClaims claims;
  auto exp = payload.find("exp");
  if (exp == payload.end() || !exp->is_number()) return Denied("missing exp claim");
  if (exp->is_number_float()) {
    // A NumericDate may have a fraction; one outside int64 cannot be converted.
    double d = exp->get<double>();
    if (!(d > -9.0e18 && d < 9.0e18)) return Denied("exp claim out of range");
    claims.exp = static_cast<int64_t>(d);
  } else if (exp->is_number_unsigned() && exp->get<uint64_t>() > INT64_MAX) {
    return Denied("exp claim out of range");
  } else {
    claims.exp = exp->get<int64_t>();
  }
  if (claims.exp <= now_unix) return Denied("token expired");
  auto sub = StringMember(payload, "sub");
  auto iss = StringMember(payload, "iss");
  if (!sub || !iss) return Denied("sub and iss claims must be strings");
  claims.sub = std::move(*sub);
  claims.iss = std::move(*iss);
  return claims;
}

Status VerifyPrometheusBearer(std::string_view authorization, std::string_view access_key,
                              std::string_view secret, int64_t now_unix) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                  [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
    return MakeError(ErrorCode::kAccessDenied,
                     "metrics need 'Authorization: Bearer <token>' (rdmastor admin "
                     "prometheus-token), or MINIO_PROMETHEUS_AUTH_TYPE=public");
  auto claims = VerifyJwt(authorization.substr(kBearer.size()), secret, now_unix);
  if (!claims.ok()) return claims.error();
  if (claims->sub != access_key) return Denied("token was issued for another access key");
  return {};
}

}  // namespace rdmastor::admin
