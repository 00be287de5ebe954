#include "s3/sigv2.h"

#include <gtest/gtest.h>

#include <string>

#include "s3/sigv4.h"

namespace rdmastor::s3 {
namespace {

// Credentials of the examples in AWS's S3 developer guide, "Signing and authenticating REST
// requests" (Signature Version 2).
constexpr const char* kAk = "AKIAIOSFODNN7EXAMPLE";
constexpr const char* kSk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

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

std::string Authz(const std::string& sig) { return std::string("AWS ") + kAk + ":" + sig; }

void ExpectOk(const Result<AuthContext>& r) {
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->access_key, kAk);
  EXPECT_EQ(r->signature_version, 2);
  EXPECT_EQ(r->payload_mode, PayloadMode::kUnsigned);
}

void ExpectError(const Result<AuthContext>& r, ErrorCode code, const std::string& msg = "") {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  if (!msg.empty()) {
    EXPECT_EQ(r.error().message, msg);
  }
}

// Unix times of the examples' Date headers.
constexpr int64_t kT0 = 1175024202;  // Tue, 27 Mar 2007 19:36:42 GMT

TEST(SigV2Test, AwsExampleObjectGet) {
  auto req = MakeRequest("GET", "/photos/puppy.jpg", "",
                         {{"host", "johnsmith.s3.amazonaws.com"},
                          {"date", "Tue, 27 Mar 2007 19:36:42 +0000"},
                          {"authorization", Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMU=")}});
  EXPECT_EQ(V2CanonicalResource(req.raw_path, req.raw_query, "johnsmith"),
            "/johnsmith/photos/puppy.jpg");
  ExpectOk(VerifyRequest(req, Lookup(), kT0, "johnsmith"));
  // Path style: the same request without the bucket in Host does not match.
  ExpectError(VerifyRequest(req, Lookup(), kT0), ErrorCode::kSignatureDoesNotMatch);
}

TEST(SigV2Test, AwsExampleObjectPut) {
  auto req = MakeRequest("PUT", "/photos/puppy.jpg", "",
                         {{"content-type", "image/jpeg"},
                          {"content-length", "94328"},
                          {"host", "johnsmith.s3.amazonaws.com"},
                          {"date", "Tue, 27 Mar 2007 21:15:45 +0000"},
                          {"authorization", Authz("MyyxeRY7whkBe+bq8fHCL/2kKUg=")}});
  ExpectOk(VerifyRequest(req, Lookup(), kT0 + 6000, "johnsmith"));
}

TEST(SigV2Test, AwsExampleListAndAcl) {
  // Query parameters that are not sub-resources are not signed.
  auto list = MakeRequest("GET", "/", "prefix=photos&max-keys=50&marker=puppy",
                          {{"user-agent", "Mozilla/5.0"},
                           {"host", "johnsmith.s3.amazonaws.com"},
                           {"date", "Tue, 27 Mar 2007 19:42:41 +0000"},
                           {"authorization", Authz("htDYFYduRNen8P9ZfE/s9SuKy0U=")}});
  ExpectOk(VerifyRequest(list, Lookup(), kT0 + 400, "johnsmith"));
  auto acl = MakeRequest("GET", "/", "acl",
                         {{"host", "johnsmith.s3.amazonaws.com"},
                          {"date", "Tue, 27 Mar 2007 19:44:46 +0000"},
                          {"authorization", Authz("c2WLPFtWHVgbEmeEG93a4cG37dM=")}});
  EXPECT_EQ(V2CanonicalResource("/", "acl", "johnsmith"), "/johnsmith/?acl");
  ExpectOk(VerifyRequest(acl, Lookup(), kT0 + 400, "johnsmith"));
}

TEST(SigV2Test, AwsExampleDeleteWithAmzDate) {
  // x-amz-date takes precedence over Date; AWS's example signs its value on the date line.
  auto req = MakeRequest("DELETE", "/johnsmith/photos/puppy.jpg", "",
                         {{"user-agent", "dotnet"},
                          {"host", "s3.amazonaws.com"},
                          {"date", "Tue, 27 Mar 2007 21:20:27 +0000"},
                          {"x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"},
                          {"authorization", Authz("lx3byBScXR6KzyMaifNkardMwNk=")}});
  ExpectOk(VerifyRequest(req, Lookup(), kT0 + 6000));
}

TEST(SigV2Test, AwsExampleUploadWithAmzHeaders) {
  auto req = MakeRequest("PUT", "/db-backup.dat.gz", "",
                         {{"user-agent", "curl/7.15.5"},
                          {"host", "static.johnsmith.net:8080"},
                          {"date", "Tue, 27 Mar 2007 21:06:08 +0000"},
                          {"x-amz-acl", "public-read"},
                          {"content-type", "application/x-download"},
                          {"content-md5", "4gJE4saaMU4BqNR0kLY+lw=="},
                          {"x-amz-meta-reviewedby", "joe@johnsmith.net"},
                          {"x-amz-meta-reviewedby", "jane@johnsmith.net"},
                          {"x-amz-meta-filechecksum", "0x02661779"},
                          {"x-amz-meta-checksumalgorithm", "crc32"},
                          {"content-disposition", "attachment; filename=database.dat"},
                          {"content-encoding", "gzip"},
                          {"content-length", "5913339"},
                          {"authorization", Authz("ilyl83RwaSoYIEdixDQcA4OnAnc=")}});
  EXPECT_EQ(V2CanonicalAmzHeaders(req.headers),
            "x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\n"
            "x-amz-meta-filechecksum:0x02661779\n"
            "x-amz-meta-reviewedby:joe@johnsmith.net,jane@johnsmith.net\n");
  ExpectOk(VerifyRequest(req, Lookup(), kT0 + 5366, "static.johnsmith.net"));
}

TEST(SigV2Test, AwsExampleListBucketsAndUnicodeKeys) {
  auto all = MakeRequest("GET", "/", "",
                         {{"host", "s3.amazonaws.com"},
                          {"date", "Wed, 28 Mar 2007 01:29:59 +0000"},
                          {"authorization", Authz("qGdzdERIC03wnaRNKh6OqZehG9s=")}});
  ExpectOk(VerifyRequest(all, Lookup(), 1175045399));
  auto unicode = MakeRequest("GET", "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", "",
                             {{"host", "s3.amazonaws.com"},
                              {"date", "Wed, 28 Mar 2007 01:49:49 +0000"},
                              {"authorization", Authz("DNEZGsoieTZ92F3bUfSPQcbGmlM=")}});
  ExpectOk(VerifyRequest(unicode, Lookup(), 1175046589));
}

TEST(SigV2Test, AwsExampleQueryStringAuth) {
  const std::string q =
      "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires="
      "1175139620";
  auto req = MakeRequest("GET", "/photos/puppy.jpg", q, {{"host", "johnsmith.s3.amazonaws.com"}});
  auto r = VerifyRequest(req, Lookup(), 1175139620 - 10, "johnsmith");
  ExpectOk(r);
  EXPECT_TRUE(r->presigned);
  // The same URL one second after Expires.
  ExpectError(VerifyRequest(req, Lookup(), 1175139621, "johnsmith"), ErrorCode::kAccessDenied,
              "Request has expired");
  // A '+' sent unencoded reads as a space after decoding; it is still the signature.
  auto raw_plus = MakeRequest(
      "GET", "/photos/puppy.jpg",
      "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM+WFzoENXmpNDUsSn8%3D&Expires="
      "1175139620",
      {});
  ExpectOk(VerifyRequest(raw_plus, Lookup(), 1175139000, "johnsmith"));
  // A changed Expires no longer matches the signature.
  auto longer = MakeRequest(
      "GET", "/photos/puppy.jpg",
      "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires="
      "1175139621",
      {});
  ExpectError(VerifyRequest(longer, Lookup(), 1175139000, "johnsmith"),
              ErrorCode::kSignatureDoesNotMatch);
}

TEST(SigV2Test, QueryErrors) {
  auto missing = MakeRequest("GET", "/b/k", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1", {});
  ExpectError(VerifyRequest(missing, Lookup(), 0), ErrorCode::kAccessDenied,
              "Query-string authentication requires the Signature, Expires and AWSAccessKeyId "
              "parameters");
  auto bad_expires = MakeRequest(
      "GET", "/b/k", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=soon&Signature=x", {});
  ExpectError(VerifyRequest(bad_expires, Lookup(), 0), ErrorCode::kAccessDenied,
              "Invalid date (should be seconds since epoch): soon");
  auto unknown =
      MakeRequest("GET", "/b/k", "AWSAccessKeyId=NOPE&Expires=99999999999&Signature=x", {});
  ExpectError(VerifyRequest(unknown, Lookup(), 0), ErrorCode::kInvalidAccessKeyId);
  // V2 query and a header at once.
  auto both =
      MakeRequest("GET", "/b/k", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=9&Signature=x",
                  {{"authorization", Authz("x")}});
  ExpectError(VerifyRequest(both, Lookup(), 0), ErrorCode::kInvalidArgument);
}

TEST(SigV2Test, HeaderErrors) {
  auto base = [](std::string authz, std::string date) {
    return MakeRequest("GET", "/photos/puppy.jpg", "",
                       {{"date", std::move(date)}, {"authorization", std::move(authz)}});
  };
  const std::string date = "Tue, 27 Mar 2007 19:36:42 +0000";
  // Wrong signature, unknown key, malformed header, no date, skewed clock.
  ExpectError(
      VerifyRequest(base(Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMV="), date), Lookup(), kT0, "johnsmith"),
      ErrorCode::kSignatureDoesNotMatch);
  ExpectError(VerifyRequest(base("AWS OTHERKEY:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", date), Lookup(), kT0,
                            "johnsmith"),
              ErrorCode::kInvalidAccessKeyId);
  ExpectError(VerifyRequest(base("AWS AKIAIOSFODNN7EXAMPLE", date), Lookup(), kT0),
              ErrorCode::kInvalidArgument);
  ExpectError(VerifyRequest(base(Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMU="), "yesterday"), Lookup(), kT0,
                            "johnsmith"),
              ErrorCode::kAccessDenied,
              "AWS authentication requires a valid Date or x-amz-date header");
  ExpectError(VerifyRequest(base(Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMU="), date), Lookup(),
                            kT0 + 16 * 60, "johnsmith"),
              ErrorCode::kRequestTimeTooSkewed);
  // A signature computed over a different (empty) Content-Type does not cover the sent one.
  auto typed = base(Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMU="), date);
  typed.headers.emplace_back("content-type", "text/html");
  ExpectError(VerifyRequest(typed, Lookup(), kT0, "johnsmith"), ErrorCode::kSignatureDoesNotMatch);
  // Streaming uploads chain V4 signatures; V2 cannot seed them.
  auto streaming = base(Authz("bWq2s1WEIj+Ydj0vQ697zp+IXMU="), date);
  streaming.headers.emplace_back("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
  ExpectError(VerifyRequest(streaming, Lookup(), kT0, "johnsmith"), ErrorCode::kInvalidRequest);
}

TEST(SigV2Test, SubResourcesSortedAndDecoded) {
  EXPECT_EQ(V2CanonicalResource("/b/k", "uploadId=abc&partNumber=2&foo=bar", ""),
            "/b/k?partNumber=2&uploadId=abc");
  EXPECT_EQ(V2CanonicalResource("/b/k", "response-content-type=text%2Fplain&versionId=null", ""),
            "/b/k?response-content-type=text/plain&versionId=null");
  EXPECT_EQ(V2CanonicalResource("/b", "uploads&delete", ""), "/b?delete&uploads");
  EXPECT_EQ(V2CanonicalResource("", "", ""), "/");
}

}  // namespace
}  // namespace rdmastor::s3
