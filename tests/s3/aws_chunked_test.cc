#include "s3/aws_chunked.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/hash.h"

namespace rdmastor::s3 {
namespace {

constexpr const char* kSk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

// In-memory body that hands out data in small, irregular pieces (deterministic), so the decoder's
// buffering across piece boundaries is exercised. max_piece == 0 returns as much as asked.
class PieceSource : public BodySource {
 public:
  explicit PieceSource(std::string data, size_t max_piece = 37)
      : data_(std::move(data)), max_piece_(max_piece) {}
  Result<size_t> Read(char* buf, size_t len) override {
    ++reads_;
    if (fail_at_ && pos_ >= *fail_at_) return MakeError(ErrorCode::kRequestTimeout, "gone");
    size_t n = std::min(len, data_.size() - pos_);
    if (max_piece_ > 0) {
      seed_ = seed_ * 1103515245 + 12345;
      n = std::min(n, 1 + (seed_ >> 8) % max_piece_);
    }
    if (fail_at_) n = std::min(n, *fail_at_ - pos_);
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  int reads() const { return reads_; }
  void FailAt(size_t pos) { fail_at_ = pos; }

 private:
  std::string data_;
  size_t max_piece_;
  size_t pos_ = 0;
  uint32_t seed_ = 42;
  int reads_ = 0;
  std::optional<size_t> fail_at_;
};

// The context VerifyRequest produces for AWS's "PUT Object" streaming example.
AuthContext AwsStreamingAuth(PayloadMode mode = PayloadMode::kStreamingSigned) {
  AuthContext a;
  a.access_key = "AKIAIOSFODNN7EXAMPLE";
  a.payload_mode = mode;
  a.seed_signature = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  a.signing_key = DeriveSigningKey(kSk, "20130524", "us-east-1", "s3");
  a.amz_date = "20130524T000000Z";
  a.scope = "20130524/us-east-1/s3/aws4_request";
  return a;
}

std::string Hex(size_t n) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%zx", n);
  return buf;
}

// The AWS example body: 64 KiB and 1 KiB of 'a', then the final chunk.
std::string AwsExampleBody() {
  return "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
         "\r\n" +
         std::string(65536, 'a') +
         "\r\n400;chunk-signature="
         "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" +
         std::string(1024, 'a') +
         "\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
         "\r\n\r\n";
}

std::string Sign(const AuthContext& a, const std::string& prev, const std::string& data) {
  return hash::HexEncode(
      hash::HmacSha256(a.signing_key, ChunkStringToSign(a.amz_date, a.scope, prev, data)));
}

// Encodes chunks (the last one should be empty) in the signed format; with trailers, appends them
// and the trailer signature.
std::string EncodeSigned(const AuthContext& a, const std::vector<std::string>& chunks,
                         const std::vector<std::pair<std::string, std::string>>& trailers = {},
                         bool with_trailer_signature = false) {
  std::string out, prev = a.seed_signature;
  for (const auto& c : chunks) {
    prev = Sign(a, prev, c);
    out += Hex(c.size()) + ";chunk-signature=" + prev + "\r\n" + c;
    if (!c.empty()) out += "\r\n";
  }
  std::string canonical;
  for (const auto& [k, v] : trailers) {
    out += k + ":" + v + "\r\n";
    canonical += k + ":" + v + "\n";
  }
  if (with_trailer_signature) {
    out += "x-amz-trailer-signature:" +
           hash::HexEncode(hash::HmacSha256(
               a.signing_key, TrailerStringToSign(a.amz_date, a.scope, prev, canonical))) +
           "\r\n";
  }
  return out + "\r\n";
}

// Reads everything with irregular buffer sizes; returns the data or the error.
Result<std::string> Drain(AwsChunkedSource& src) {
  std::string out;
  std::vector<char> buf(100000);
  size_t sizes[] = {1, 7, 100, 4096, 65536, 99999, 3};
  for (int i = 0;; ++i) {
    auto n = src.Read(buf.data(), sizes[i % 7]);
    if (!n.ok()) return n.error();
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

Result<std::string> DecodeAll(const std::string& body, const AuthContext& auth,
                              size_t max_piece = 37) {
  PieceSource raw(body, max_piece);
  AwsChunkedSource src(raw, auth);
  return Drain(src);
}

void ExpectDecodeError(const std::string& body, const AuthContext& auth, ErrorCode code) {
  auto r = DecodeAll(body, auth);
  ASSERT_FALSE(r.ok()) << "decoded " << r->size() << " bytes";
  EXPECT_EQ(r.error().code, code) << r.error().message;
}

TEST(AwsChunkedTest, AwsExampleSignedStream) {
  const std::string body = AwsExampleBody();
  ASSERT_EQ(body.size(), 66824u);  // the example's Content-Length
  for (size_t piece : {size_t{0}, size_t{1}, size_t{37}, size_t{5000}}) {
    SCOPED_TRACE(piece);
    PieceSource raw(body, piece);
    AwsChunkedSource src(raw, AwsStreamingAuth());
    auto r = Drain(src);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, std::string(66560, 'a'));
    EXPECT_EQ(src.decoded_bytes(), 66560u);
    EXPECT_TRUE(src.trailers().empty());
    // Further reads keep returning end of body.
    char c;
    auto again = src.Read(&c, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, 0u);
  }
  // The raw body is read in large pieces, not byte by byte.
  PieceSource raw(body, 0);
  AwsChunkedSource src(raw, AwsStreamingAuth());
  ASSERT_TRUE(Drain(src).ok());
  EXPECT_LE(raw.reads(), 8);
}

TEST(AwsChunkedTest, BadChunkSignatureReleasesNoBytesOfThatChunk) {
  std::string body = AwsExampleBody();
  // Second chunk's signature: flip its last hex digit.
  size_t pos = body.find("0055627c");
  ASSERT_NE(pos, std::string::npos);
  body[pos + 63] = body[pos + 63] == '8' ? '9' : '8';
  PieceSource raw(body);
  AwsChunkedSource src(raw, AwsStreamingAuth());
  std::string got;
  std::vector<char> buf(4096);
  Error err;
  while (true) {
    auto n = src.Read(buf.data(), buf.size());
    if (!n.ok()) {
      err = n.error();
      break;
    }
    ASSERT_NE(*n, 0u) << "reached end of body despite a bad signature";
    got.append(buf.data(), *n);
  }
  EXPECT_EQ(err.code, ErrorCode::kInvalidChunkSignature);
  EXPECT_EQ(got.size(), 65536u);  // only the verified first chunk
  // The error is sticky.
  auto again = src.Read(buf.data(), buf.size());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kInvalidChunkSignature);
}

TEST(AwsChunkedTest, TamperedDataOrFinalSignature) {
  std::string body = AwsExampleBody();
  body[1000] = 'b';  // inside the first chunk's data
  PieceSource raw(body);
  AwsChunkedSource src(raw, AwsStreamingAuth());
  char buf[100];
  auto n = src.Read(buf, sizeof(buf));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, ErrorCode::kInvalidChunkSignature);
  EXPECT_EQ(src.decoded_bytes(), 0u);

  body = AwsExampleBody();
  size_t pos = body.find("b6c6ea8a");
  body[pos] = 'c';
  ExpectDecodeError(body, AwsStreamingAuth(), ErrorCode::kInvalidChunkSignature);

  // Wrong seed (e.g. a replayed body under another request's signature).
  AuthContext other = AwsStreamingAuth();
  other.seed_signature[0] = '5';
  ExpectDecodeError(AwsExampleBody(), other, ErrorCode::kInvalidChunkSignature);

  // Reordered chunks break the chain even with valid per-chunk signatures.
  AuthContext a = AwsStreamingAuth();
  std::string s1 = Sign(a, a.seed_signature, "x");
  std::string s2 = Sign(a, s1, "y");
  std::string swapped =
      "1;chunk-signature=" + s2 + "\r\ny\r\n1;chunk-signature=" + s1 + "\r\nx\r\n";
  ExpectDecodeError(swapped, a, ErrorCode::kInvalidChunkSignature);
}

TEST(AwsChunkedTest, TruncatedBodyIsIncomplete) {
  AuthContext a = AwsStreamingAuth();
  const std::string body = EncodeSigned(a, {"hello", "world!", ""});
  ASSERT_TRUE(DecodeAll(body, a).ok());
  for (size_t cut = 0; cut < body.size(); ++cut) {
    SCOPED_TRACE(cut);
    ExpectDecodeError(body.substr(0, cut), a, ErrorCode::kIncompleteBody);
  }
  // The AWS example cut inside the big chunk.
  ExpectDecodeError(AwsExampleBody().substr(0, 30000), AwsStreamingAuth(),
                    ErrorCode::kIncompleteBody);
  // Unsigned framing cut inside the data.
  AuthContext u = AwsStreamingAuth(PayloadMode::kStreamingUnsignedTrailer);
  ExpectDecodeError("a\r\n0123", u, ErrorCode::kIncompleteBody);
  ExpectDecodeError("a\r\n0123456789", u, ErrorCode::kIncompleteBody);
  ExpectDecodeError("a\r\n0123456789\r\n", u, ErrorCode::kIncompleteBody);
}

TEST(AwsChunkedTest, MalformedFraming) {
  AuthContext a = AwsStreamingAuth();
  const std::string sig = Sign(a, a.seed_signature, "hello");
  const auto M = ErrorCode::kMalformedChunkedEncoding;
  ExpectDecodeError("zz;chunk-signature=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError(";chunk-signature=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError("-5;chunk-signature=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError(" 5;chunk-signature=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError("0x5;chunk-signature=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError("000000005;chunk-signature=" + sig + "\r\nhello\r\n", a, M);  // > 8 digits
  ExpectDecodeError("1000001;chunk-signature=" + sig + "\r\n", a, M);             // > 16 MiB
  ExpectDecodeError("ffffffff;chunk-signature=" + sig + "\r\n", a, M);
  ExpectDecodeError("5\r\nhello\r\n", a, M);                      // no signature
  ExpectDecodeError("5;chunk-signature=abc\r\nhello\r\n", a, M);  // bad signature format
  ExpectDecodeError("5;chunk-signatur=" + sig + "\r\nhello\r\n", a, M);
  ExpectDecodeError("5;chunk-signature=" + sig + "\r\nhelloX\r\n", a, M);  // data overruns size
  ExpectDecodeError("5;chunk-signature=" + sig + "\nhello\r\n", a, M);     // bare LF
  ExpectDecodeError(std::string(5000, '1'), a, M);                         // endless line
  // After the final chunk: stray data, or a trailer in a mode without trailers.
  std::string good = EncodeSigned(a, {"hello", ""});
  ExpectDecodeError(good + "x", a, M);
  std::string with_trailer =
      good.substr(0, good.size() - 2) + "x-amz-checksum-crc32:AAAAAA==\r\n\r\n";
  ExpectDecodeError(with_trailer, a, M);
  // Unsigned: the size line must still be valid hex and data must end with CRLF.
  AuthContext u = AwsStreamingAuth(PayloadMode::kStreamingUnsignedTrailer);
  ExpectDecodeError("g\r\n", u, M);
  ExpectDecodeError("5\r\nhello!!0\r\n\r\n", u, M);
}

TEST(AwsChunkedTest, ChunkSizeLimit) {
  AuthContext u = AwsStreamingAuth(PayloadMode::kStreamingUnsignedTrailer);
  const std::string big(16 * 1024 * 1024, 'z');
  auto r = DecodeAll("1000000\r\n" + big + "\r\n0\r\n\r\n", u, 0);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->size(), big.size());
  // One byte more is refused from the size line alone, before any data is buffered.
  ExpectDecodeError("1000001\r\nzzzz", u, ErrorCode::kMalformedChunkedEncoding);
}

TEST(AwsChunkedTest, UnsignedTrailerLikeBoto3) {
  // boto3 / awscli with checksums: x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER,
  // x-amz-trailer: x-amz-checksum-crc32.
  AuthContext u = AwsStreamingAuth(PayloadMode::kStreamingUnsignedTrailer);
  std::string data;
  for (int i = 0; i < 200000; ++i) data += static_cast<char>('a' + i % 26);
  const std::string crc = hash::Base64Encode(hash::Digest(hash::Algo::kCRC32, data));
  std::string body;
  for (size_t off = 0; off < data.size(); off += 65536) {
    size_t n = std::min<size_t>(65536, data.size() - off);
    body += Hex(n) + "\r\n" + data.substr(off, n) + "\r\n";
  }
  body += "0\r\nx-amz-checksum-crc32:" + crc + "\r\n\r\n";
  for (size_t piece : {size_t{0}, size_t{13}, size_t{70000}}) {
    PieceSource raw(body, piece);
    AwsChunkedSource src(raw, u);
    auto r = Drain(src);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, data);
    EXPECT_EQ(src.decoded_bytes(), data.size());
    ASSERT_EQ(src.trailers().size(), 1u);
    EXPECT_EQ(src.trailers().at("x-amz-checksum-crc32"), crc);
  }

  // Byte for byte what botocore 1.43's AwsChunkedWrapper sends (16-byte chunks).
  {
    PieceSource raw(
        "10\r\nhello worldhello\r\n10\r\n worldhello worl\r\n1\r\nd\r\n0\r\n"
        "x-amz-checksum-crc32:lrVJrA==\r\n\r\n");
    AwsChunkedSource src(raw, u);
    auto r = Drain(src);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, "hello worldhello worldhello world");
    EXPECT_EQ(src.trailers().at("x-amz-checksum-crc32"),
              hash::Base64Encode(hash::Digest(hash::Algo::kCRC32, *r)));
  }

  // Some clients stop without the closing CRLF after the trailers.
  PieceSource raw(body.substr(0, body.size() - 2));
  AwsChunkedSource src(raw, u);
  auto r = Drain(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(src.trailers().at("x-amz-checksum-crc32"), crc);

  // Trailer names are case-insensitive and values trimmed; several trailers may be sent.
  PieceSource raw2("3\r\nabc\r\n0\r\nX-Amz-Checksum-CRC32C: abcd== \r\nx-amz-meta-x:1\r\n\r\n");
  AwsChunkedSource src2(raw2, u);
  r = Drain(src2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "abc");
  EXPECT_EQ(src2.trailers().at("x-amz-checksum-crc32c"), "abcd==");
  EXPECT_EQ(src2.trailers().at("x-amz-meta-x"), "1");

  // Chunk extensions are ignored in unsigned framing.
  auto ext = DecodeAll("3;foo=bar\r\nabc\r\n0\r\n\r\n", u);
  ASSERT_TRUE(ext.ok()) << ext.error().message;
  EXPECT_EQ(*ext, "abc");

  // A zero-length body.
  auto empty = DecodeAll("0\r\n\r\n", u);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");

  ExpectDecodeError("3\r\nabc\r\n0\r\nno-colon-here\r\n\r\n", u,
                    ErrorCode::kMalformedChunkedEncoding);
  ExpectDecodeError("3\r\nabc\r\n0\r\n:value\r\n\r\n", u, ErrorCode::kMalformedChunkedEncoding);
  ExpectDecodeError("3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAA", u, ErrorCode::kIncompleteBody);
}

TEST(AwsChunkedTest, SignedTrailer) {
  AuthContext a = AwsStreamingAuth(PayloadMode::kStreamingSignedTrailer);
  const std::string data(70000, 'q');
  const std::string crc = hash::Base64Encode(hash::Digest(hash::Algo::kCRC32C, data));
  const std::vector<std::string> chunks = {data.substr(0, 65536), data.substr(65536), ""};
  const std::vector<std::pair<std::string, std::string>> trailers = {
      {"x-amz-checksum-crc32c", crc}};

  const std::string body = EncodeSigned(a, chunks, trailers, true);
  {
    PieceSource raw(body);
    AwsChunkedSource src(raw, a);
    auto r = Drain(src);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, data);
    EXPECT_EQ(src.trailers().at("x-amz-checksum-crc32c"), crc);
    EXPECT_EQ(src.trailers().count("x-amz-trailer-signature"), 0u);
  }
  // Lenient about the missing closing CRLF here too.
  EXPECT_TRUE(DecodeAll(body.substr(0, body.size() - 2), a).ok());

  // A changed trailer value fails the trailer signature.
  std::string tampered = body;
  size_t pos = tampered.find(crc);
  tampered[pos] = tampered[pos] == 'A' ? 'B' : 'A';
  ExpectDecodeError(tampered, a, ErrorCode::kInvalidChunkSignature);
  // So does a wrong trailer signature ...
  std::string bad_sig = body;
  pos = bad_sig.find("x-amz-trailer-signature:") + 24;
  bad_sig[pos] = bad_sig[pos] == '0' ? '1' : '0';
  ExpectDecodeError(bad_sig, a, ErrorCode::kInvalidChunkSignature);
  // ... or a missing one.
  ExpectDecodeError(EncodeSigned(a, chunks, trailers, false), a, ErrorCode::kInvalidChunkSignature);
  // A trailer smuggled in after the signature is rejected.
  std::string smuggled = body.substr(0, body.size() - 2) + "x-amz-meta-evil:1\r\n\r\n";
  ExpectDecodeError(smuggled, a, ErrorCode::kMalformedChunkedEncoding);
  // Chunk signatures are still checked in this mode.
  std::string bad_chunk = body;
  bad_chunk[bad_chunk.find("\r\n") + 10] = 'r';
  ExpectDecodeError(bad_chunk, a, ErrorCode::kInvalidChunkSignature);
}

TEST(AwsChunkedTest, RawSourceErrorPropagates) {
  PieceSource raw(AwsExampleBody());
  raw.FailAt(40000);
  AwsChunkedSource src(raw, AwsStreamingAuth());
  auto r = Drain(src);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kRequestTimeout);
  EXPECT_EQ(src.decoded_bytes(), 0u);
}

}  // namespace
}  // namespace rdmastor::s3
