#include "s3/sigv4.h"

#include <gtest/gtest.h>

#include <string>

#include "common/hash.h"

namespace rdmastor::s3 {
namespace {

// Credentials and time of the examples in the AWS S3 SigV4 documentation.
constexpr const char* kAk = "AKIAIOSFODNN7EXAMPLE";
constexpr const char* kSk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr int64_t kT = 1369353600;  // 20130524T000000Z
constexpr const char* kEmptySha =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

SecretLookup Lookup() {
  return [](std::string_view ak) -> std::optional<std::string> {
    if (ak == kAk) return std::string(kSk);
    return std::nullopt;
  };
}

HttpRequest MakeRequest(std::string method, std::string path, std::string query,
                        HeaderList headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.raw_path = std::move(path);
  r.raw_query = std::move(query);
  r.target = r.raw_path + (r.raw_query.empty() ? "" : "?" + r.raw_query);
  r.headers = std::move(headers);
  return r;
}

std::string Authz(const std::string& signed_headers, const std::string& signature) {
  return std::string("AWS4-HMAC-SHA256 Credential=") + kAk +
         "/20130524/us-east-1/s3/aws4_request,SignedHeaders=" + signed_headers +
         ",Signature=" + signature;
}

void SetHeader(HttpRequest& r, const std::string& name, const std::string& value) {
  for (auto& [k, v] : r.headers) {
    if (k == name) {
      v = value;
      return;
    }
  }
  r.headers.emplace_back(name, value);
}

// AWS example "GET Object" (Range header, signed empty payload).
HttpRequest AwsGetObject() {
  return MakeRequest("GET", "/test.txt", "",
                     {{"host", "examplebucket.s3.amazonaws.com"},
                      {"range", "bytes=0-9"},
                      {"x-amz-content-sha256", kEmptySha},
                      {"x-amz-date", "20130524T000000Z"},
                      {"authorization",
                       Authz("host;range;x-amz-content-sha256;x-amz-date",
                             "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")}});
}

// AWS example "Presigned URL" (GET /test.txt, 86400 s).
HttpRequest AwsPresigned() {
  return MakeRequest(
      "GET", "/test.txt",
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"
      "east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
      "SignedHeaders=host&X-Amz-Signature="
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
      {{"host", "examplebucket.s3.amazonaws.com"}});
}

void ExpectError(const Result<AuthContext>& r, ErrorCode code) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
}

TEST(SigV4Test, DeriveSigningKeyGeneralExample) {
  // AWS general reference: deriving the signing key (IAM example, 20150830).
  EXPECT_EQ(hash::HexEncode(DeriveSigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830",
                                             "us-east-1", "iam")),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

// Derived keys are cached: a repeated scope, a scope whose parts only split differently, and
// scopes past the cache's bound all still get the key their own four HMACs give.
TEST(SigV4Test, DeriveSigningKeyIsTheSameFromTheCache) {
  auto derived = [](std::string_view secret, std::string_view date, std::string_view region,
                    std::string_view service) {
    std::string k = hash::HmacSha256("AWS4" + std::string(secret), date);
    k = hash::HmacSha256(k, region);
    k = hash::HmacSha256(k, service);
    return hash::HmacSha256(k, "aws4_request");
  };
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(DeriveSigningKey("secret", "20240101", "us-east-1", "s3"),
              derived("secret", "20240101", "us-east-1", "s3"));
    EXPECT_EQ(DeriveSigningKey("secret2", "0240101", "us-east-1", "s3"),
              derived("secret2", "0240101", "us-east-1", "s3"));
    EXPECT_EQ(DeriveSigningKey("secret", "20240101", "us-east-1s", "3"),
              derived("secret", "20240101", "us-east-1s", "3"));
  }
  EXPECT_NE(DeriveSigningKey("secret", "20240101", "us-east-1", "s3"),
            DeriveSigningKey("secret", "20240102", "us-east-1", "s3"));
  for (int i = 0; i < 3000; ++i) {
    const std::string region = "r" + std::to_string(i % 1500);
    ASSERT_EQ(DeriveSigningKey("k", "20240101", region, "s3"), derived("k", "20240101", region, "s3"))
        << region;
  }
}

TEST(SigV4Test, CanonicalUri) {
  EXPECT_EQ(CanonicalUri(""), "/");
  EXPECT_EQ(CanonicalUri("/"), "/");
  EXPECT_EQ(CanonicalUri("/test.txt"), "/test.txt");
  // The same key, encoded by the client or not: S3 encodes exactly once.
  EXPECT_EQ(CanonicalUri("/test$file.text"), "/test%24file.text");
  EXPECT_EQ(CanonicalUri("/test%24file.text"), "/test%24file.text");
  EXPECT_EQ(CanonicalUri("/b/my%20file+x"), "/b/my%20file%2Bx");
  EXPECT_EQ(CanonicalUri("/b/a%2Bb"), "/b/a%2Bb");
  EXPECT_EQ(CanonicalUri("/b/%E2%82%AC/~x_y-z."), "/b/%E2%82%AC/~x_y-z.");
  EXPECT_EQ(CanonicalUri("/b/a%2Fb"), "/b/a/b");
  EXPECT_EQ(CanonicalUri("/b//double"), "/b//double");
}

TEST(SigV4Test, CanonicalQuery) {
  EXPECT_EQ(CanonicalQuery("", false), "");
  EXPECT_EQ(CanonicalQuery("lifecycle", false), "lifecycle=");
  EXPECT_EQ(CanonicalQuery("prefix=J&max-keys=2", false), "max-keys=2&prefix=J");
  EXPECT_EQ(CanonicalQuery("b=2&a=2&a=1&c", false), "a=1&a=2&b=2&c=");
  EXPECT_EQ(CanonicalQuery("prefix=a+b&x=a%20b&y=a%2Bb", false), "prefix=a%20b&x=a%20b&y=a%2Bb");
  EXPECT_EQ(CanonicalQuery("k=%e2%82%ac&k2=a/b*", false), "k=%E2%82%AC&k2=a%2Fb%2A");
  EXPECT_EQ(CanonicalQuery("X-Amz-Signature=abc&X-Amz-Date=1", false),
            "X-Amz-Date=1&X-Amz-Signature=abc");
  EXPECT_EQ(CanonicalQuery("X-Amz-Signature=abc&X-Amz-Date=1", true), "X-Amz-Date=1");
  EXPECT_EQ(CanonicalQuery(AwsPresigned().raw_query, true),
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
            "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=host");
}

TEST(SigV4Test, AwsExampleGetObject) {
  auto r = VerifyRequest(AwsGetObject(), Lookup(), kT);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->access_key, kAk);
  EXPECT_EQ(r->payload_mode, PayloadMode::kSignedSha256);
  EXPECT_EQ(r->content_sha256, kEmptySha);
  EXPECT_FALSE(r->presigned);
  EXPECT_EQ(r->amz_date, "20130524T000000Z");
  EXPECT_EQ(r->scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(r->seed_signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(r->signing_key, DeriveSigningKey(kSk, "20130524", "us-east-1", "s3"));
  std::vector<std::string> want = {"host", "range", "x-amz-content-sha256", "x-amz-date"};
  EXPECT_EQ(r->signed_headers, want);
}

TEST(SigV4Test, AwsExamplePutObject) {
  // Key "test$file.text", signed Date header, payload "Welcome to Amazon S3."
  auto req =
      MakeRequest("PUT", "/test%24file.text", "",
                  {{"host", "examplebucket.s3.amazonaws.com"},
                   {"date", "Fri, 24 May 2013 00:00:00 GMT"},
                   {"x-amz-date", "20130524T000000Z"},
                   {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                   {"x-amz-content-sha256", hash::Sha256Hex("Welcome to Amazon S3.")},
                   {"authorization",
                    Authz("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                          "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")}});
  EXPECT_EQ(hash::Sha256Hex("Welcome to Amazon S3."),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  auto r = VerifyRequest(req, Lookup(), kT);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->payload_mode, PayloadMode::kSignedSha256);
  // The unencoded form of the same key must verify too.
  req.raw_path = "/test$file.text";
  EXPECT_TRUE(VerifyRequest(req, Lookup(), kT).ok());
}

TEST(SigV4Test, AwsExampleGetBucketLifecycle) {
  auto req =
      MakeRequest("GET", "/", "lifecycle",
                  {{"host", "examplebucket.s3.amazonaws.com"},
                   {"x-amz-date", "20130524T000000Z"},
                   {"x-amz-content-sha256", kEmptySha},
                   {"authorization",
                    Authz("host;x-amz-content-sha256;x-amz-date",
                          "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")}});
  auto r = VerifyRequest(req, Lookup(), kT);
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST(SigV4Test, AwsExampleListObjects) {
  auto req =
      MakeRequest("GET", "/", "max-keys=2&prefix=J",
                  {{"host", "examplebucket.s3.amazonaws.com"},
                   {"x-amz-date", "20130524T000000Z"},
                   {"x-amz-content-sha256", kEmptySha},
                   {"authorization",
                    Authz("host;x-amz-content-sha256;x-amz-date",
                          "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")}});
  auto r = VerifyRequest(req, Lookup(), kT);
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST(SigV4Test, AwsExamplePresignedUrl) {
  auto r = VerifyRequest(AwsPresigned(), Lookup(), kT + 60);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->presigned);
  EXPECT_EQ(r->payload_mode, PayloadMode::kUnsigned);
  EXPECT_EQ(r->access_key, kAk);
  std::vector<std::string> want = {"host"};
  EXPECT_EQ(r->signed_headers, want);

  // Valid through the last second, expired after it.
  EXPECT_TRUE(VerifyRequest(AwsPresigned(), Lookup(), kT + 86400).ok());
  auto expired = VerifyRequest(AwsPresigned(), Lookup(), kT + 86401);
  ExpectError(expired, ErrorCode::kAccessDenied);
  EXPECT_EQ(expired.error().message, "Request has expired");

  // Dated in the future beyond the allowed skew.
  ExpectError(VerifyRequest(AwsPresigned(), Lookup(), kT - 901), ErrorCode::kRequestTimeTooSkewed);
  EXPECT_TRUE(VerifyRequest(AwsPresigned(), Lookup(), kT - 900).ok());
}

TEST(SigV4Test, BotocorePresignedUrl) {
  // Produced by botocore 1.43 (S3SigV4QueryAuth, us-west-2, 3600 s) at 20130524T000000Z.
  auto req = MakeRequest(
      "PUT", "/bucket/my%20dir/k%2Bey.bin",
      "versionId=a%2Bb&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F"
      "20130524%2Fus-west-2%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=3600&X-"
      "Amz-SignedHeaders=host&X-Amz-Signature="
      "b58bcb26aa8cb00978ce1d004610bf7fb9a8c7ab9b1a3be546102735df657ecc",
      {{"host", "127.0.0.1:9000"}, {"content-length", "3"}});
  auto r = VerifyRequest(req, Lookup(), kT + 3599);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->scope, "20130524/us-west-2/s3/aws4_request");
  ExpectError(VerifyRequest(req, Lookup(), kT + 3601), ErrorCode::kAccessDenied);
}

TEST(SigV4Test, PresignedNegative) {
  auto with_query = [](std::string from, std::string to) {
    HttpRequest r = AwsPresigned();
    size_t pos = r.raw_query.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    r.raw_query.replace(pos, from.size(), to);
    return r;
  };
  // Out of range is 403 (AWS), still AuthorizationQueryParametersError; 0 has expired at once.
  ExpectError(
      VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=604801"), Lookup(), kT),
      ErrorCode::kPresignExpiresOutOfRange);
  ExpectError(
      VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=99999999"), Lookup(), kT),
      ErrorCode::kPresignExpiresOutOfRange);
  ExpectError(VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=0"), Lookup(), kT),
              ErrorCode::kAccessDenied);
  ExpectError(VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=-5"), Lookup(), kT),
              ErrorCode::kPresignExpiresOutOfRange);
  ExpectError(VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=abc"), Lookup(), kT),
              ErrorCode::kAuthorizationQueryParametersError);
  ExpectError(VerifyRequest(with_query("&X-Amz-Expires=86400", ""), Lookup(), kT),
              ErrorCode::kAuthorizationQueryParametersError);
  ExpectError(VerifyRequest(with_query("AWS4-HMAC-SHA256&", "AWS4-HMAC-SHA1&"), Lookup(), kT),
              ErrorCode::kAuthorizationQueryParametersError);
  ExpectError(VerifyRequest(with_query("20130524T000000Z", "2013-05-24T00:00:00Z"), Lookup(), kT),
              ErrorCode::kAuthorizationQueryParametersError);
  ExpectError(VerifyRequest(with_query("SignedHeaders=host", "SignedHeaders=range"), Lookup(), kT),
              ErrorCode::kAccessDenied);
  // The signature covers the expiry: extending it breaks the signature.
  ExpectError(VerifyRequest(with_query("X-Amz-Expires=86400", "X-Amz-Expires=86401"), Lookup(), kT),
              ErrorCode::kSignatureDoesNotMatch);
  ExpectError(VerifyRequest(with_query("AKIAIOSFODNN7EXAMPLE", "AKIAOTHER"), Lookup(), kT),
              ErrorCode::kInvalidAccessKeyId);
  ExpectError(VerifyRequest(with_query("X-Amz-Signature=a", "X-Amz-Signature=b"), Lookup(), kT),
              ErrorCode::kSignatureDoesNotMatch);
  // An extra parameter is covered by the signature.
  HttpRequest extra = AwsPresigned();
  extra.raw_query += "&versionId=1";
  ExpectError(VerifyRequest(extra, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  // Both mechanisms at once.
  HttpRequest both = AwsPresigned();
  both.headers.emplace_back("authorization", Authz("host", std::string(64, 'a')));
  ExpectError(VerifyRequest(both, Lookup(), kT), ErrorCode::kInvalidArgument);
}

TEST(SigV4Test, AwsExampleStreamingChunkChain) {
  // AWS example "PUT Object" with STREAMING-AWS4-HMAC-SHA256-PAYLOAD: 65 KiB of 'a' sent as a
  // 64 KiB chunk, a 1 KiB chunk and the final empty chunk.
  auto req = MakeRequest(
      "PUT", "/examplebucket/chunkObject.txt", "",
      {{"host", "s3.amazonaws.com"},
       {"x-amz-date", "20130524T000000Z"},
       {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
       {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
       {"content-encoding", "aws-chunked"},
       {"x-amz-decoded-content-length", "66560"},
       {"content-length", "66824"},
       {"authorization",
        Authz("content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-"
              "decoded-content-length;x-amz-storage-class",
              "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")}});
  auto r = VerifyRequest(req, Lookup(), kT);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->payload_mode, PayloadMode::kStreamingSigned);
  EXPECT_EQ(r->seed_signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");

  auto sign = [&](const std::string& prev, const std::string& data) {
    return hash::HexEncode(
        hash::HmacSha256(r->signing_key, ChunkStringToSign(r->amz_date, r->scope, prev, data)));
  };
  std::string c1 = sign(r->seed_signature, std::string(65536, 'a'));
  EXPECT_EQ(c1, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648");
  std::string c2 = sign(c1, std::string(1024, 'a'));
  EXPECT_EQ(c2, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497");
  std::string c3 = sign(c2, "");
  EXPECT_EQ(c3, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");

  EXPECT_EQ(ChunkStringToSign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", "prev", ""),
            std::string("AWS4-HMAC-SHA256-PAYLOAD\n20130524T000000Z\n20130524/us-east-1/s3/"
                        "aws4_request\nprev\n") +
                kEmptySha + "\n" + kEmptySha);
  EXPECT_EQ(TrailerStringToSign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", "prev",
                                "x-amz-checksum-crc32:AAAAAA==\n"),
            "AWS4-HMAC-SHA256-TRAILER\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "prev\n" +
                hash::Sha256Hex("x-amz-checksum-crc32:AAAAAA==\n"));
}

TEST(SigV4Test, BotocoreSignedRequestWithMessyHeaders) {
  // Signed independently by botocore 1.43 (S3SigV4Auth) at 20130524T000000Z: repeated header,
  // runs of blanks inside a value, an encoded key and a query with a value-less parameter.
  auto req = MakeRequest(
      "PUT", "/my%20dir/a%2Bb%24c.txt", "uploads&partNumber=3&x=a%20b",
      {{"host", "examplebucket.s3.amazonaws.com"},
       {"x-amz-meta-note", "  hello    big   world  "},
       {"x-amz-meta-dup", "one"},
       {"content-type", "text/plain"},
       {"x-amz-meta-dup", "two"},
       {"x-amz-date", "20130524T000000Z"},
       {"x-amz-content-sha256", hash::Sha256Hex("hello")},
       {"user-agent", "not signed"},
       {"authorization",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-dup;x-amz-"
        "meta-note, Signature=1e607d4c7ea23db3a521e1f39aafd6b8ac979adf7d80be8009e8b137d2fa1419"}});
  auto r = VerifyRequest(req, Lookup(), kT);
  EXPECT_TRUE(r.ok()) << r.error().message;
  // Repeated headers are joined in arrival order, so swapping them changes the signature.
  std::swap(req.headers[2].second, req.headers[4].second);
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
}

TEST(SigV4Test, AuthorizationHeaderSpacingVariants) {
  const std::string sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  const std::string cred = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string sh = "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date";
  for (const std::string& v : {
           "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=" + sig,
           "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=" + sig,
           "AWS4-HMAC-SHA256  " + cred + " ,  " + sh + " , Signature=" + sig + " ",
           "AWS4-HMAC-SHA256 " + cred + " " + sh + " Signature=" + sig,
           "AWS4-HMAC-SHA256 Signature=" + sig + ", " + cred + ", " + sh,
       }) {
    HttpRequest req = AwsGetObject();
    SetHeader(req, "authorization", v);
    auto r = VerifyRequest(req, Lookup(), kT);
    EXPECT_TRUE(r.ok()) << v << ": " << r.error().message;
  }
}

TEST(SigV4Test, HeaderAuthNegative) {
  // Wrong secret.
  auto wrong_secret = [](std::string_view) -> std::optional<std::string> { return "nope"; };
  ExpectError(VerifyRequest(AwsGetObject(), wrong_secret, kT), ErrorCode::kSignatureDoesNotMatch);
  // Unknown access key.
  auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  ExpectError(VerifyRequest(AwsGetObject(), none, kT), ErrorCode::kInvalidAccessKeyId);
  // Tampered signature.
  HttpRequest req = AwsGetObject();
  SetHeader(req, "authorization",
            Authz("host;range;x-amz-content-sha256;x-amz-date",
                  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb42"));
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  // Tampered signed header, method, path and query.
  req = AwsGetObject();
  SetHeader(req, "range", "bytes=0-10");
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  req = AwsGetObject();
  req.method = "HEAD";
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  req = AwsGetObject();
  req.raw_path = "/test.txT";
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  req = AwsGetObject();
  req.raw_query = "acl";
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  // A signed header the request does not carry.
  req = AwsGetObject();
  req.headers.erase(req.headers.begin() + 1);  // range
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  // Unsigned extra headers do not matter.
  req = AwsGetObject();
  req.headers.emplace_back("user-agent", "curl");
  EXPECT_TRUE(VerifyRequest(req, Lookup(), kT).ok());
}

TEST(SigV4Test, ClockSkew) {
  EXPECT_TRUE(VerifyRequest(AwsGetObject(), Lookup(), kT + 900).ok());
  EXPECT_TRUE(VerifyRequest(AwsGetObject(), Lookup(), kT - 900).ok());
  ExpectError(VerifyRequest(AwsGetObject(), Lookup(), kT + 901), ErrorCode::kRequestTimeTooSkewed);
  ExpectError(VerifyRequest(AwsGetObject(), Lookup(), kT - 901), ErrorCode::kRequestTimeTooSkewed);
}

TEST(SigV4Test, MalformedAuthorizationHeader) {
  const std::string sig(64, 'a');
  const std::string cred = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string sh = "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date";
  for (const std::string& v : {
           std::string("AWS4-HMAC-SHA256"),
           "AWS4-HMAC-SHA256 " + cred + ", " + sh,                      // no Signature
           "AWS4-HMAC-SHA256 " + sh + ", Signature=" + sig,             // no Credential
           "AWS4-HMAC-SHA256 " + cred + ", Signature=" + sig,           // no SignedHeaders
           "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=",     // empty Signature
           "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=xyz",  // not hex
           "AWS4-HMAC-SHA256 " + cred + ", " + cred + ", " + sh + ", Signature=" + sig,
           "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=" + sig + ", Foo=bar",
           "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature" + sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3, " + sh +
               ", Signature=" + sig,
           "AWS4-HMAC-SHA256 "
           "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request, " +
               sh + ", Signature=" + sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2013052/us-east-1/s3/aws4_request, " +
               sh + ", Signature=" + sig,
           "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, " + sh +
               ", Signature=" + sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_req, " +
               sh + ", Signature=" + sig,
           // Scope date differs from x-amz-date.
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request, " +
               sh + ", Signature=" + sig,
           "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;;range, Signature=" + sig,
       }) {
    HttpRequest req = AwsGetObject();
    SetHeader(req, "authorization", v);
    ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kAuthorizationHeaderMalformed);
  }
  // Other schemes (bearer tokens, unknown algorithms) are not supported; V2 ("AWS ") is, see
  // sigv2_test.cc.
  for (const std::string& v : {std::string("Bearer x"), std::string("AWS4-HMAC-SHA256X")}) {
    HttpRequest req = AwsGetObject();
    SetHeader(req, "authorization", v);
    ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kInvalidRequest);
  }
}

TEST(SigV4Test, HostMustBeSigned) {
  HttpRequest req = AwsGetObject();
  SetHeader(req, "authorization",
            Authz("range;x-amz-content-sha256;x-amz-date", std::string(64, 'a')));
  auto r = VerifyRequest(req, Lookup(), kT);
  ExpectError(r, ErrorCode::kAccessDenied);
  ASSERT_EQ(r.error().details.size(), 1u);
  EXPECT_EQ(r.error().details[0],
            (std::pair<std::string, std::string>("HeadersNotSigned", "host")));
}

// Every x-amz-* header must be signed: a presigned URL (host only) plus an added
// x-amz-copy-source, or a header-signed request with extra x-amz-* headers, is refused.
TEST(SigV4Test, UnsignedAmzHeadersAreRefused) {
  HttpRequest presigned = AwsPresigned();
  presigned.headers.emplace_back("x-amz-copy-source", "/other/secret");
  presigned.headers.emplace_back("x-amz-meta-a", "1");
  auto r = VerifyRequest(presigned, Lookup(), kT + 10);
  ExpectError(r, ErrorCode::kAccessDenied);
  EXPECT_EQ(r.error().message, "There were headers present in the request which were not signed");
  ASSERT_EQ(r.error().details.size(), 1u);
  EXPECT_EQ(r.error().details[0].first, "HeadersNotSigned");
  EXPECT_EQ(r.error().details[0].second, "x-amz-copy-source, x-amz-meta-a");

  // However many headers a client adds, the list echoed back stays bounded.
  HttpRequest many = AwsPresigned();
  for (int i = 0; i < 500; ++i)
    many.headers.emplace_back("x-amz-meta-" + std::to_string(i) + std::string(40, 'x'), "v");
  r = VerifyRequest(many, Lookup(), kT + 10);
  ExpectError(r, ErrorCode::kAccessDenied);
  EXPECT_LE(r.error().details.at(0).second.size(), 600u);
  EXPECT_TRUE(r.error().details.at(0).second.ends_with(", ..."));

  // x-amz-content-sha256 is exempt (its value is the payload line of the canonical request); an
  // x-amz-date header is not (a presigned request is dated by its query).
  HttpRequest with_sha = AwsPresigned();
  with_sha.headers.emplace_back("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
  EXPECT_TRUE(VerifyRequest(with_sha, Lookup(), kT + 10).ok());
  HttpRequest with_date = AwsPresigned();
  with_date.headers.emplace_back("x-amz-date", "20130524T000000Z");
  ExpectError(VerifyRequest(with_date, Lookup(), kT + 10), ErrorCode::kAccessDenied);

  // Header auth: x-amz-content-sha256 and x-amz-date are covered by the signature either way.
  HttpRequest get = AwsGetObject();
  SetHeader(
      get, "authorization",
      Authz("host;range", "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));
  EXPECT_EQ(VerifyRequest(get, Lookup(), kT).error().code, ErrorCode::kSignatureDoesNotMatch);
  get.headers.emplace_back("x-amz-rdma-token", "t");
  r = VerifyRequest(get, Lookup(), kT);
  ExpectError(r, ErrorCode::kAccessDenied);
  EXPECT_EQ(r.error().details.at(0).second, "x-amz-rdma-token");
}

TEST(SigV4Test, MissingAuthAndDates) {
  HttpRequest anon = MakeRequest("GET", "/bucket/key", "", {{"host", "h"}});
  auto r = VerifyRequest(anon, Lookup(), kT);
  ExpectError(r, ErrorCode::kAccessDenied);
  EXPECT_EQ(r.error().message, "anonymous access denied");

  // No date at all; malformed x-amz-date.
  HttpRequest req = AwsGetObject();
  req.headers.erase(req.headers.begin() + 3);
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kAccessDenied);
  req = AwsGetObject();
  SetHeader(req, "x-amz-date", "20130532T000000Z");
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kAccessDenied);
}

TEST(SigV4Test, DateHeaderFallback) {
  // Without x-amz-date the Date header supplies the time; the string to sign carries its ISO form.
  SignInput in;
  in.method = "GET";
  in.raw_path = "/bucket/key";
  in.headers = {{"host", "localhost:9000"}};
  in.access_key = kAk;
  in.secret_key = kSk;
  in.now_unix = kT;
  HeaderList signed_headers = SignRequest(in);
  HttpRequest req = MakeRequest("GET", "/bucket/key", "", {});
  for (auto& [k, v] : signed_headers) {
    if (k == "x-amz-date") continue;
    req.headers.emplace_back(k, v);
  }
  // x-amz-date was signed, so dropping it must fail (as a missing signed header) ...
  req.headers.emplace_back("date", "Fri, 24 May 2013 00:00:00 GMT");
  ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kSignatureDoesNotMatch);
  // ... while a request signed with only Date (as a Date-only client would) verifies.
  const std::string cr =
      "GET\n/bucket/key\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:localhost:9000\n"
      "x-amz-content-sha256:" +
      std::string(kEmptySha) + "\n\ndate;host;x-amz-content-sha256\n" + kEmptySha;
  const std::string sts =
      "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n" +
      hash::Sha256Hex(cr);
  const std::string sig =
      hash::HexEncode(hash::HmacSha256(DeriveSigningKey(kSk, "20130524", "us-east-1", "s3"), sts));
  HttpRequest date_only =
      MakeRequest("GET", "/bucket/key", "",
                  {{"host", "localhost:9000"},
                   {"date", "Fri, 24 May 2013 00:00:00 GMT"},
                   {"x-amz-content-sha256", kEmptySha},
                   {"authorization", Authz("date;host;x-amz-content-sha256", sig)}});
  auto r = VerifyRequest(date_only, Lookup(), kT + 10);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->amz_date, "20130524T000000Z");
  ExpectError(VerifyRequest(date_only, Lookup(), kT + 1000), ErrorCode::kRequestTimeTooSkewed);
}

TEST(SigV4Test, PayloadModes) {
  struct Case {
    std::string value;
    PayloadMode mode;
  };
  const Case cases[] = {
      {"UNSIGNED-PAYLOAD", PayloadMode::kUnsigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", PayloadMode::kStreamingSigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", PayloadMode::kStreamingSignedTrailer},
      {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", PayloadMode::kStreamingUnsignedTrailer},
      {hash::Sha256Hex("x"), PayloadMode::kSignedSha256},
  };
  for (const auto& c : cases) {
    SignInput in;
    in.method = "PUT";
    in.raw_path = "/b/k";
    in.headers = {{"host", "h:9000"}};
    in.payload_sha256 = c.value;
    in.access_key = kAk;
    in.secret_key = kSk;
    in.now_unix = kT;
    auto r = VerifyRequest(MakeRequest("PUT", "/b/k", "", SignRequest(in)), Lookup(), kT);
    ASSERT_TRUE(r.ok()) << c.value << ": " << r.error().message;
    EXPECT_EQ(r->payload_mode, c.mode) << c.value;
    if (c.mode == PayloadMode::kSignedSha256) {
      EXPECT_EQ(r->content_sha256, c.value);
    }
  }

  for (const std::string& bad :
       {std::string("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"), std::string("unsigned-payload"),
        std::string("abc"), std::string(63, 'a'), std::string(64, 'g')}) {
    HttpRequest req = AwsGetObject();
    SetHeader(req, "x-amz-content-sha256", bad);
    ExpectError(VerifyRequest(req, Lookup(), kT), ErrorCode::kInvalidArgument);
  }
  HttpRequest req = AwsGetObject();
  // Without the header the payload is taken to be empty (MinIO's rule); here the header was
  // signed, so its absence is a signature failure that names it.
  req.headers.erase(req.headers.begin() + 2);
  auto r = VerifyRequest(req, Lookup(), kT);
  ExpectError(r, ErrorCode::kSignatureDoesNotMatch);
  EXPECT_NE(r.error().message.find("x-amz-content-sha256"), std::string::npos);
}

TEST(SigV4Test, SignRequestReproducesAwsExample) {
  SignInput in;
  in.method = "GET";
  in.raw_path = "/test.txt";
  in.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"}};
  in.payload_sha256 = kEmptySha;
  in.access_key = kAk;
  in.secret_key = kSk;
  in.now_unix = kT;
  HeaderList out = SignRequest(in);
  HttpRequest req = MakeRequest("GET", "/test.txt", "", out);
  ASSERT_NE(req.FindHeader("authorization"), nullptr);
  EXPECT_EQ(*req.FindHeader("authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(req.HeaderOr("x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(req.HeaderOr("x-amz-content-sha256"), kEmptySha);
  EXPECT_TRUE(VerifyRequest(req, Lookup(), kT).ok());
}

TEST(SigV4Test, SignRequestRoundTrip) {
  SignInput in;
  in.method = "PUT";
  in.raw_path = "/bucket/dir/%E2%82%AC%20x%2By";
  in.raw_query = "partNumber=2&uploadId=abc%2Fdef";
  in.headers = {{"Host", "127.0.0.1:9000"},
                {"Content-Length", "5"},
                {"x-amz-meta-k", " a  b "},
                {"user-agent", "test"},
                {"expect", "100-continue"}};
  in.payload_sha256 = hash::Sha256Hex("hello");
  in.access_key = kAk;
  in.secret_key = kSk;
  in.region = "eu-west-3";
  in.now_unix = 1700000000;
  HttpRequest req = MakeRequest(in.method, in.raw_path, in.raw_query, SignRequest(in));
  auto r = VerifyRequest(req, Lookup(), in.now_unix + 5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->scope, "20231114/eu-west-3/s3/aws4_request");
  std::vector<std::string> want = {"content-length", "host", "x-amz-content-sha256", "x-amz-date",
                                   "x-amz-meta-k"};
  EXPECT_EQ(r->signed_headers, want);
  // The same request with the key sent unencoded still verifies (S3 encodes once).
  req.raw_path = "/bucket/dir/\xe2\x82\xac%20x+y";
  EXPECT_TRUE(VerifyRequest(req, Lookup(), in.now_unix).ok());
}

TEST(SigV4Test, PresignQueryReproducesAwsExample) {
  SignInput in;
  in.method = "GET";
  in.raw_path = "/test.txt";
  in.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  in.access_key = kAk;
  in.secret_key = kSk;
  in.now_unix = kT;
  std::string q = PresignQuery(in, 86400);
  EXPECT_EQ(q, AwsPresigned().raw_query);

  // With an existing query and a non-default region.
  in.raw_query = "versionId=v%201&response-content-type=text%2Fplain";
  in.region = "ap-south-1";
  HttpRequest req = MakeRequest("GET", "/test.txt", PresignQuery(in, 60),
                                {{"host", "examplebucket.s3.amazonaws.com"}});
  auto r = VerifyRequest(req, Lookup(), kT + 30);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->presigned);
  ExpectError(VerifyRequest(req, Lookup(), kT + 61), ErrorCode::kAccessDenied);
}

}  // namespace
}  // namespace rdmastor::s3

namespace rdmastor::s3 {
namespace {

// A value sent as ISO-8859-1 bytes but signed in its UTF-8 form (botocore over http.client).
TEST(SigV4Test, Latin1HeaderSignedAsUtf8) {
  SignInput in;
  in.method = "PUT";
  in.raw_path = "/b/k";
  in.payload_sha256 = "UNSIGNED-PAYLOAD";
  in.access_key = kAk;
  in.secret_key = kSk;
  in.now_unix = kT;
  auto sent_as = [&](const std::string& signed_value, const std::string& wire_value) {
    in.headers = {{"host", "h:9000"}, {"x-amz-meta-v", signed_value}};
    HeaderList h = SignRequest(in);
    for (auto& [k, v] : h)
      if (k == "x-amz-meta-v") v = wire_value;
    return VerifyRequest(MakeRequest("PUT", "/b/k", "", h), Lookup(), kT);
  };
  EXPECT_TRUE(sent_as("caf\xc3\xa9", "caf\xe9").ok());      // botocore
  EXPECT_TRUE(sent_as("caf\xe9", "caf\xe9").ok());          // raw bytes signed as sent
  EXPECT_TRUE(sent_as("caf\xc3\xa9", "caf\xc3\xa9").ok());  // UTF-8 both ways
  // Still bound to the value: another byte, or a UTF-8 value that differs, does not verify.
  EXPECT_EQ(sent_as("caf\xc3\xa9", "caf\xe8").error().code, ErrorCode::kSignatureDoesNotMatch);
  EXPECT_EQ(sent_as("caf\xc3\xa9", "caf\xc3\xa8").error().code, ErrorCode::kSignatureDoesNotMatch);
}

}  // namespace
}  // namespace rdmastor::s3
