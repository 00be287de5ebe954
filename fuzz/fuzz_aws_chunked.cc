// aws-chunked bodies (streaming SigV4): the first byte picks the payload mode and how the body
// is split into reads; the rest is the raw body, decoded under AWS's example streaming context.
#include <vector>

#include "fuzz_util.h"
#include "s3/aws_chunked.h"
#include "s3/sigv4.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 20)) return 0;
  static const std::string key = s3::DeriveSigningKey("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                                      "20130524", "us-east-1", "s3");
  const s3::PayloadMode modes[] = {
      s3::PayloadMode::kStreamingSigned, s3::PayloadMode::kStreamingSignedTrailer,
      s3::PayloadMode::kStreamingUnsignedTrailer, s3::PayloadMode::kUnsigned};
  s3::AuthContext auth;
  auth.access_key = "AKIAIOSFODNN7EXAMPLE";
  auth.payload_mode = modes[data[0] & 3];
  auth.seed_signature = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  auth.signing_key = key;
  auth.amz_date = "20130524T000000Z";
  auth.scope = "20130524/us-east-1/s3/aws4_request";
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::PieceBody raw(body, data[0], 1 + (data[0] >> 2) * 97);
  s3::AwsChunkedSource src(raw, auth);
  std::vector<char> out(8192);
  uint64_t total = 0;
  for (int i = 0; i < 100000; ++i) {
    auto n = src.Read(out.data(), 1 + (i * 131) % out.size());
    if (!n.ok()) {
      // Sticky: the same error again.
      auto again = src.Read(out.data(), 1);
      fuzz::Check(!again.ok() && again.error().code == n.error().code, "error not sticky");
      return 0;
    }
    if (*n == 0) break;
    total += *n;
  }
  fuzz::Check(total == src.decoded_bytes(), "decoded_bytes disagrees with what Read returned");
  fuzz::Check(total <= body.size(), "decoded more bytes than the raw body holds");
  return 0;
}
