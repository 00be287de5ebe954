// The metrics bearer JWT (MINIO_PROMETHEUS_AUTH_TYPE=jwt): what an unauthenticated scrape sends.
// The input is tried as a whole token, and as "header.payload" signed here with the right key
// (HS256 and HS512), so the claim checks behind the signature are reached as well.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "admin/jwt.h"
#include "fuzz_util.h"

using namespace rdmastor;

namespace {

constexpr std::string_view kSecret = "fuzz-secret-key";

std::string B64Url(const unsigned char* p, size_t n) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t{p[i]} << 16 | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    if (i + 1 < n) out += tbl[(v >> 6) & 63];
    if (i + 2 < n) out += tbl[v & 63];
  }
  return out;
}

std::string Signed(std::string_view signing_input, const EVP_MD* md) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, kSecret.data(), static_cast<int>(kSecret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &len);
  return std::string(signing_input) + "." + B64Url(mac, len);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const int64_t now = 1700000000;
  auto c = admin::VerifyJwt(text, kSecret, now);
  if (c.ok()) fuzz::Check(c->exp > now, "accepted an expired token");
  (void)admin::VerifyPrometheusBearer(std::string("Bearer ") + std::string(text), "fuzzkey",
                                      kSecret, now);
  for (const EVP_MD* md : {EVP_sha256(), EVP_sha512()}) {
    std::string token = Signed(text, md);
    auto v = admin::VerifyJwt(token, kSecret, now);
    if (v.ok()) fuzz::Check(v->exp > now, "accepted an expired signed token");
    (void)admin::VerifyPrometheusBearer("Bearer " + token, "fuzzkey", kSecret, now);
  }
  return 0;
}
