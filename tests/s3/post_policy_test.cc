#include "s3/post_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/hash.h"
#include "s3/sigv4.h"

namespace rdmastor::s3 {
namespace {

// Hands out a fixed body at most `step` bytes per Read, so boundaries straddle reads.
class StringSource : public BodySource {
 public:
  StringSource(std::string data, size_t step) : data_(std::move(data)), step_(step) {}
  Result<size_t> Read(char* buf, size_t len) override {
    size_t n = std::min({len, step_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

std::string Part(const std::string& name, const std::string& value,
                 const std::string& extra_disposition = "") {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"" + name + "\"" + extra_disposition +
         "\r\n\r\n" + value + "\r\n";
}

TEST(FormBoundaryTest, ParsesAndRefuses) {
  EXPECT_EQ(*FormBoundary("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(*FormBoundary("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c");
  for (const char* bad : {"multipart/form-data", "text/plain; boundary=a",
                          "multipart/form-data; boundary=", "multipart/form-data; boundary=\"\""}) {
    auto r = FormBoundary(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kMalformedPOSTRequest);
  }
  EXPECT_FALSE(FormBoundary("multipart/form-data; boundary=" + std::string(71, 'b')).ok());
}

TEST(FormReaderTest, FieldsThenStreamedFileAtEveryReadSize) {
  std::string file;
  for (int i = 0; i < 3000; ++i) file += "\r\n--XyQ\r\n--X\r\n-\r\n--Xy" + std::to_string(i);
  std::string body = "preamble\r\n" + Part("key", "a/b") + Part("Policy", "p\r\nq") +
                     Part("file", file, "; filename=\"x.txt\"") + "--XyZ--\r\nepilogue";
  for (size_t step : {1, 3, 7, 64, 4096, 1 << 20}) {
    StringSource src(body, step);
    FormReader form(src, "XyZ");
    size_t budget = 1024;
    auto p = form.Next(budget);
    ASSERT_TRUE(p.ok() && *p) << step;
    EXPECT_EQ((*p)->name, "key");
    EXPECT_FALSE((*p)->filename);
    EXPECT_EQ(*form.ReadValue(budget), "a/b");
    p = form.Next(budget);
    ASSERT_TRUE(p.ok() && *p);
    EXPECT_EQ((*p)->name, "Policy");
    EXPECT_EQ(*form.ReadValue(budget), "p\r\nq");
    p = form.Next(budget);
    ASSERT_TRUE(p.ok() && *p);
    EXPECT_EQ((*p)->name, "file");
    EXPECT_EQ(*(*p)->filename, "x.txt");
    std::string got;
    char buf[777];
    for (;;) {
      auto n = form.Content().Read(buf, sizeof(buf));
      ASSERT_TRUE(n.ok());
      if (*n == 0) break;
      got.append(buf, *n);
    }
    EXPECT_EQ(got, file) << step;
    p = form.Next(budget);
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(*p);
  }
}

TEST(FormReaderTest, BoundsAndMalformedBodies) {
  {  // A value over the budget.
    StringSource src(Part("a", std::string(5000, 'v')) + "--XyZ--", 100);
    FormReader form(src, "XyZ");
    size_t budget = 4096;
    ASSERT_TRUE(form.Next(budget).ok());
    auto v = form.ReadValue(budget);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, ErrorCode::kMaxPostPreDataLengthExceeded);
  }
  {  // Headers that never end.
    StringSource src(
        "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX: " + std::string(100000, 'h'), 1000);
    FormReader form(src, "XyZ");
    size_t budget = 4096;
    auto p = form.Next(budget);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, ErrorCode::kMaxPostPreDataLengthExceeded);
  }
  for (const std::string& bad :
       {std::string("no boundary at all"), std::string("--XyZ\r\n\r\nvalue\r\n--XyZ--"),
        std::string("--XyZ\r\nContent-Type: a\r\n\r\nv\r\n--XyZ--"),
        std::string("--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--XyZ--"),
        std::string("--XyZ\r\nContent-Disposition: form-data\r\n\r\nv\r\n--XyZ--"),
        std::string("--XyZjunk"), Part("a", "v") + "--XyZ"}) {
    StringSource src(bad, 5);
    FormReader form(src, "XyZ");
    size_t budget = 4096;
    Status st;
    for (int i = 0; i < 5 && st.ok(); ++i) {
      auto p = form.Next(budget);
      if (!p.ok()) {
        st = p.error();
        break;
      }
      if (!*p) break;
      auto v = form.ReadValue(budget);
      if (!v.ok()) st = v.error();
    }
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().code, ErrorCode::kMalformedPOSTRequest) << bad;
  }
}

std::string B64(const std::string& s) { return hash::Base64Encode(s); }

TEST(PostPolicyTest, ParseAndCheck) {
  auto p = ParsePostPolicy(B64(R"({"expiration": "2030-01-01T12:00:00.000Z",
    "conditions": [{"bucket": "b"}, ["starts-with", "$key", "user/"], {"acl": "private"},
                   ["eq", "$Content-Type", "text/plain"], ["content-length-range", 1, "100"]]})"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->expiration_unix, 1893499200);
  ASSERT_TRUE(p->length_range);
  EXPECT_EQ(p->length_range->second, 100);
  std::map<std::string, std::string> fields{{"bucket", "b"},       {"key", "user/x"},
                                            {"acl", "private"},    {"content-type", "text/plain"},
                                            {"policy", "ignored"}, {"x-ignore-me", "1"}};
  EXPECT_TRUE(CheckPostPolicy(*p, fields, 1893499200).ok());
  auto expired = CheckPostPolicy(*p, fields, 1893499201);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().message, "Invalid according to Policy: Policy expired.");
  auto f2 = fields;
  f2["key"] = "admin/x";
  auto st = CheckPostPolicy(*p, f2, 0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kAccessDenied);
  EXPECT_EQ(
      st.error().message,
      R"(Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "user/"])");
  f2 = fields;
  f2["acl"] = "public-read";
  EXPECT_EQ(CheckPostPolicy(*p, f2, 0).error().message,
            R"(Invalid according to Policy: Policy Condition failed: ["eq", "$acl", "private"])");
  f2 = fields;
  f2["x-amz-meta-extra"] = "1";
  EXPECT_EQ(CheckPostPolicy(*p, f2, 0).error().message,
            "Invalid according to Policy: Extra input fields: x-amz-meta-extra");
  // A condition on an absent field: eq fails, starts-with "" holds.
  f2 = fields;
  f2.erase("acl");
  EXPECT_FALSE(CheckPostPolicy(*p, f2, 0).ok());
}

TEST(PostPolicyTest, InvalidDocuments) {
  for (
      const std::string& doc :
      {std::string("not json"), std::string(R"({"conditions": []})"),
       std::string(R"({"expiration": "tomorrow", "conditions": []})"),
       std::string(R"({"expiration": "2030-02-30T00:00:00Z", "conditions": []})"),
       std::string(R"({"expiration": "2030-01-01T00:00:00Z"})"),
       std::string(R"({"expiration": "2030-01-01T00:00:00Z", "conditions": [["eq", "key", "a"]]})"),
       std::string(
           R"({"expiration": "2030-01-01T00:00:00Z", "conditions": [["in", "$key", "a"]]})"),
       std::string(R"({"expiration": "2030-01-01T00:00:00Z", "conditions": [["eq", "$key"]]})"),
       std::string(
           R"({"expiration": "2030-01-01T00:00:00Z", "conditions": [["content-length-range", 5, 1]]})"),
       std::string(R"({"expiration": "2030-01-01T00:00:00Z", "conditions": [{"key": 1}]})")}) {
    auto p = ParsePostPolicy(B64(doc));
    ASSERT_FALSE(p.ok()) << doc;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidPolicyDocument) << doc;
  }
  EXPECT_FALSE(ParsePostPolicy("!!!").ok());
}

// The signature over the policy: V4 (signing key of the credential scope, hex HMAC-SHA256 of the
// base64 policy) and V2 (base64 HMAC-SHA1 of it), as S3 defines them.
TEST(PostSignatureTest, V4AndV2) {
  auto lookup = [](std::string_view ak) -> std::optional<std::string> {
    if (ak == "AKIAIOSFODNN7EXAMPLE")
      return std::string("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    return std::nullopt;
  };
  const std::string policy = B64(R"({"expiration": "2030-01-01T00:00:00Z", "conditions": []})");
  std::string key =
      DeriveSigningKey("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20151229", "us-east-1", "s3");
  std::map<std::string, std::string> v4{
      {"policy", policy},
      {"x-amz-algorithm", "AWS4-HMAC-SHA256"},
      {"x-amz-credential", "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request"},
      {"x-amz-date", "20151229T000000Z"},
      {"x-amz-signature", hash::HexEncode(hash::HmacSha256(key, policy))}};
  auto r = VerifyPostSignature(v4, lookup);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "AKIAIOSFODNN7EXAMPLE");
  auto bad = v4;
  bad["x-amz-signature"][0] = bad["x-amz-signature"][0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(VerifyPostSignature(bad, lookup).error().code, ErrorCode::kSignatureDoesNotMatch);
  bad = v4;
  bad["x-amz-date"] = "20151230T000000Z";
  EXPECT_EQ(VerifyPostSignature(bad, lookup).error().code, ErrorCode::kInvalidArgument);
  bad = v4;
  bad.erase("policy");
  EXPECT_EQ(VerifyPostSignature(bad, lookup).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(VerifyPostSignature({{"key", "k"}}, lookup).error().code, ErrorCode::kAccessDenied);

  std::map<std::string, std::string> v2{
      {"policy", policy},
      {"awsaccesskeyid", "AKIAIOSFODNN7EXAMPLE"},
      {"signature",
       hash::Base64Encode(hash::HmacSha1("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", policy))}};
  EXPECT_TRUE(VerifyPostSignature(v2, lookup).ok());
  v2["awsaccesskeyid"] = "OTHER";
  EXPECT_EQ(VerifyPostSignature(v2, lookup).error().code, ErrorCode::kInvalidAccessKeyId);
}

}  // namespace
}  // namespace rdmastor::s3
