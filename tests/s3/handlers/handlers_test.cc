// The S3 handlers (s3/handlers.h) against a real one-drive store in a temporary directory: the
// request as a value in, the reply out, no server and no HTTP.
#include "s3/handlers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <pugixml.hpp>
#include <set>
#include <string>
#include <vector>

#include "../../storage/storage_test_util.h"
#include "common/hash.h"
#include "iam/store.h"
#include "s3/cors.h"
#include "storage/erasure_store.h"

// Requests are written with designated initializers naming only what each sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace rdmastor::s3 {
namespace {

namespace fs = std::filesystem;
using storage::testing::MemBody;
using storage::testing::TempDir;
using Query = std::vector<std::pair<std::string, std::string>>;
using Handler = Reply (*)(const Env&, S3Request&);

std::string Header(const Reply& r, std::string_view name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "<none>";
}

std::string Md5Hex(const std::string& data) {
  auto h = hash::NewHasher(hash::Algo::kMD5);
  h->Update(data.data(), data.size());
  return hash::HexEncode(h->Final());
}

// The Content-MD5 header of `body`.
HeaderList ContentMd5(const std::string& body) {
  auto h = hash::NewHasher(hash::Algo::kMD5);
  h->Update(body.data(), body.size());
  return {{"content-md5", hash::Base64Encode(h->Final())}};
}

// The texts of every `path` (an XPath) in `xml`.
std::vector<std::string> All(const std::string& xml, const char* path) {
  pugi::xml_document doc;
  EXPECT_TRUE(doc.load_string(xml.c_str())) << xml;
  std::vector<std::string> out;
  for (const auto& n : doc.select_nodes(path)) out.push_back(n.node().text().get());
  return out;
}
std::string One(const std::string& xml, const char* path) {
  auto all = All(xml, path);
  return all.empty() ? "<none>" : all.front();
}

struct Request {
  S3Op op = S3Op::kUnknown;  // for the handlers serving several operations
  std::string method = "GET";
  std::string bucket = "bkt";
  std::string key;
  Query query;
  HeaderList headers;
  std::string body;
};

class HandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string drive = dir_.path() + "/d0";
    fs::create_directories(drive);
    auto s = storage::ErasureStore::Open({drive}, {});
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    iam_ = std::make_unique<iam::IamStore>(*store_, "root");
    env_.emplace(Env{*store_, iam_.get(), &sse_, nullptr, "us-east-1", false});
  }

  Reply Do(Handler h, const Request& in) {
    HttpRequest http;
    http.method = in.method;
    http.headers = in.headers;
    http.content_length = in.body.size();
    MemBody body(in.body);
    S3Request r(http, body, "test-request");
    r.op = in.op;
    r.bucket = in.bucket;
    r.key = in.key;
    r.has_key = !in.key.empty();
    r.query = in.query;
    r.caller = Caller{Caller::Kind::kRoot, "root"};
    for (const auto& [k, v] : in.query)
      if (k == "versionId") r.version = v == "null" ? std::string() : v;
    r.allowed = [this](std::string_view action, const std::string& key) -> Status {
      asked_.emplace(action);
      if (refuse_ == key) return MakeError(ErrorCode::kAccessDenied);
      return {};
    };
    return h(*env_, r);
  }

  // The bytes a GET reply sends after its head.
  static std::string Payload(const Reply& r) {
    std::string out(r.length, '\0');
    size_t got = 0;
    while (got < r.length) {
      auto n = r.reader->ReadAt(r.start + got, out.data() + got, r.length - got);
      if (!n.ok() || *n == 0) break;
      got += *n;
    }
    out.resize(got);
    return out;
  }

  void MakeBucket(const std::string& name = "bkt") {
    auto r = Do(HandleCreateBucket, {.method = "PUT", .bucket = name});
    ASSERT_TRUE(r.ok()) << r.error->message;
  }
  void Put(const std::string& key, const std::string& data, HeaderList headers = {}) {
    auto r = Do(HandlePutObject, {.method = "PUT", .key = key, .headers = headers, .body = data});
    ASSERT_TRUE(r.ok()) << key << ": " << r.error->message;
  }

  TempDir dir_;
  std::unique_ptr<storage::ErasureStore> store_;
  std::unique_ptr<iam::IamStore> iam_;
  SseConfig sse_;
  std::optional<Env> env_;
  std::string refuse_;           // a key r.allowed refuses
  std::set<std::string> asked_;  // the actions r.allowed was asked about
};

#define EXPECT_CODE(reply, want)                                    \
  do {                                                              \
    ASSERT_TRUE((reply).error) << "succeeded: " << (reply).status;  \
    EXPECT_EQ((reply).error->code, want) << (reply).error->message; \
  } while (0)

TEST_F(HandlerTest, BucketCreateHeadLocationVersioningDelete) {
  auto created = Do(HandleCreateBucket, {.method = "PUT"});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created.status, 200);
  EXPECT_EQ(Header(created, "Location"), "/bkt");
  // Again by its owner in us-east-1: the legacy 200; asking for another ACL: BucketAlreadyExists.
  EXPECT_EQ(Do(HandleCreateBucket, {.method = "PUT"}).status, 200);
  EXPECT_CODE(Do(HandleCreateBucket, {.method = "PUT", .headers = {{"x-amz-acl", "public-read"}}}),
              ErrorCode::kBucketAlreadyExists);

  auto head = Do(HandleHeadBucket, {.method = "HEAD"});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(Header(head, "x-amz-bucket-region"), "us-east-1");
  EXPECT_CODE(Do(HandleHeadBucket, {.method = "HEAD", .bucket = "nope"}), ErrorCode::kNoSuchBucket);

  auto location = Do(HandleGetBucketLocation, {.query = {{"location", ""}}});
  ASSERT_TRUE(location.ok());
  EXPECT_EQ(All(location.body, "/LocationConstraint").size(), 1u) << location.body;

  auto unversioned = Do(HandleGetBucketVersioning, {.query = {{"versioning", ""}}});
  EXPECT_EQ(One(unversioned.body, "/VersioningConfiguration/Status"), "<none>");
  auto put =
      Do(HandlePutBucketVersioning, {.method = "PUT",
                                     .query = {{"versioning", ""}},
                                     .body = "<VersioningConfiguration><Status>Enabled</Status>"
                                             "</VersioningConfiguration>"});
  ASSERT_TRUE(put.ok()) << put.error->message;
  auto versioned = Do(HandleGetBucketVersioning, {.query = {{"versioning", ""}}});
  EXPECT_EQ(One(versioned.body, "/VersioningConfiguration/Status"), "Enabled");
  EXPECT_CODE(Do(HandlePutBucketVersioning, {.method = "PUT",
                                             .query = {{"versioning", ""}},
                                             .body = "<VersioningConfiguration><Status>Maybe"
                                                     "</Status></VersioningConfiguration>"}),
              ErrorCode::kMalformedXML);

  Put("k", "x");
  EXPECT_CODE(Do(HandleDeleteBucket, {.method = "DELETE"}), ErrorCode::kBucketNotEmpty);
  auto list = Do(HandleListBuckets, {.bucket = ""});
  EXPECT_EQ(All(list.body, "//Bucket/Name"), std::vector<std::string>{"bkt"});
  MakeBucket("other");
  EXPECT_EQ(Do(HandleDeleteBucket, {.method = "DELETE", .bucket = "other"}).status, 204);
  EXPECT_CODE(Do(HandleHeadBucket, {.method = "HEAD", .bucket = "other"}),
              ErrorCode::kNoSuchBucket);
}

TEST_F(HandlerTest, ObjectPutGetHeadDelete) {
  MakeBucket();
  const std::string data = "hello, handlers";
  auto put = Do(HandlePutObject, {.method = "PUT",
                                  .key = "dir/obj",
                                  .headers = {{"content-type", "text/plain"},
                                              {"x-amz-meta-color", "blue"},
                                              {"cache-control", "no-cache"}},
                                  .body = data});
  ASSERT_TRUE(put.ok()) << put.error->message;
  EXPECT_EQ(Header(put, "ETag"), "\"" + Md5Hex(data) + "\"");
  EXPECT_NE(Header(put, "x-amz-checksum-crc64nvme"), "<none>");  // S3's default checksum

  auto get = Do(HandleGetObject, {.key = "dir/obj"});
  ASSERT_TRUE(get.ok()) << get.error->message;
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(Payload(get), data);
  EXPECT_EQ(Header(get, "Content-Type"), "text/plain");
  EXPECT_EQ(Header(get, "x-amz-meta-color"), "blue");
  EXPECT_EQ(Header(get, "cache-control"), "no-cache");
  EXPECT_EQ(Header(get, "ETag"), Header(put, "ETag"));

  auto head = Do(HandleHeadObject, {.method = "HEAD", .key = "dir/obj"});
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head.length, data.size());
  EXPECT_EQ(Header(head, "x-amz-meta-color"), "blue");

  auto range = Do(HandleGetObject, {.key = "dir/obj", .headers = {{"range", "bytes=7-14"}}});
  EXPECT_EQ(range.status, 206);
  EXPECT_EQ(Payload(range), "handlers");
  EXPECT_EQ(Header(range, "Content-Range"), "bytes 7-14/15");
  auto bad_range = Do(HandleGetObject, {.key = "dir/obj", .headers = {{"range", "bytes=99-"}}});
  EXPECT_CODE(bad_range, ErrorCode::kInvalidRange);
  EXPECT_EQ(Header(bad_range, "Content-Range"), "bytes */15");

  auto not_modified =
      Do(HandleGetObject, {.key = "dir/obj", .headers = {{"if-none-match", Header(put, "ETag")}}});
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_FALSE(not_modified.reader);
  EXPECT_CODE(Do(HandleGetObject, {.key = "dir/obj", .headers = {{"if-match", "\"other\""}}}),
              ErrorCode::kPreconditionFailed);

  EXPECT_EQ(Do(HandleDeleteObject, {.method = "DELETE", .key = "dir/obj"}).status, 204);
  EXPECT_CODE(Do(HandleGetObject, {.key = "dir/obj"}), ErrorCode::kNoSuchKey);
  // Deleting what is not there succeeds.
  EXPECT_EQ(Do(HandleDeleteObject, {.method = "DELETE", .key = "dir/obj"}).status, 204);
}

TEST_F(HandlerTest, PutObjectChecksAndRefuses) {
  MakeBucket();
  EXPECT_CODE(Do(HandlePutObject, {.method = "PUT",
                                   .key = "k",
                                   .headers = {{"content-md5", "1B2M2Y8AsgTpgAmY7PhCfg=="}},
                                   .body = "not empty"}),
              ErrorCode::kBadDigest);
  EXPECT_CODE(Do(HandlePutObject, {.method = "PUT",
                                   .key = "k",
                                   .headers = {{"x-amz-meta-big", std::string(3000, 'x')}},
                                   .body = "x"}),
              ErrorCode::kMetadataTooLarge);
  EXPECT_CODE(Do(HandlePutObject, {.method = "PUT", .bucket = "nope", .key = "k", .body = "x"}),
              ErrorCode::kNoSuchBucket);
  // If-None-Match: * refuses to replace an existing object.
  Put("k", "first");
  EXPECT_CODE(Do(HandlePutObject,
                 {.method = "PUT", .key = "k", .headers = {{"if-none-match", "*"}}, .body = "2"}),
              ErrorCode::kPreconditionFailed);
}

TEST_F(HandlerTest, DeleteObjectsChecksEachKey) {
  MakeBucket();
  Put("a", "1");
  Put("b", "2");
  refuse_ = "b";
  auto r = Do(HandleDeleteObjects,
              {.method = "POST",
               .query = {{"delete", ""}},
               .body = "<Delete><Object><Key>a</Key></Object><Object><Key>b</Key></Object>"
                       "</Delete>"});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(All(r.body, "/DeleteResult/Deleted/Key"), std::vector<std::string>{"a"});
  EXPECT_EQ(One(r.body, "/DeleteResult/Error/Key"), "b");
  EXPECT_EQ(One(r.body, "/DeleteResult/Error/Code"), "AccessDenied");
  EXPECT_CODE(Do(HandleGetObject, {.key = "a"}), ErrorCode::kNoSuchKey);
  EXPECT_TRUE(Do(HandleGetObject, {.key = "b"}).ok());
}

TEST_F(HandlerTest, ListV1AndV2WithPrefixDelimiterAndPages) {
  MakeBucket();
  for (const char* k : {"a/1", "a/2", "b/1", "c", "d"}) Put(k, k);

  auto all = Do(HandleListObjectsV2, {.query = {{"list-type", "2"}}});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(All(all.body, "//Contents/Key"),
            (std::vector<std::string>{"a/1", "a/2", "b/1", "c", "d"}));
  EXPECT_EQ(One(all.body, "//KeyCount"), "5");

  auto prefixed = Do(HandleListObjectsV2, {.query = {{"list-type", "2"}, {"prefix", "a/"}}});
  EXPECT_EQ(All(prefixed.body, "//Contents/Key"), (std::vector<std::string>{"a/1", "a/2"}));

  auto delimited = Do(HandleListObjectsV2, {.query = {{"list-type", "2"}, {"delimiter", "/"}}});
  EXPECT_EQ(All(delimited.body, "//CommonPrefixes/Prefix"), (std::vector<std::string>{"a/", "b/"}));
  EXPECT_EQ(All(delimited.body, "//Contents/Key"), (std::vector<std::string>{"c", "d"}));

  // Pages of two, continued with the token each page hands out.
  std::vector<std::string> keys;
  std::string token;
  for (int page = 0; page < 5; ++page) {
    Query q{{"list-type", "2"}, {"max-keys", "2"}};
    if (!token.empty()) q.emplace_back("continuation-token", token);
    auto r = Do(HandleListObjectsV2, {.query = q});
    ASSERT_TRUE(r.ok()) << r.error->message;
    for (auto& k : All(r.body, "//Contents/Key")) keys.push_back(k);
    if (One(r.body, "//IsTruncated") != "true") break;
    token = One(r.body, "//NextContinuationToken");
    ASSERT_NE(token, "<none>");
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "a/2", "b/1", "c", "d"}));
  EXPECT_CODE(Do(HandleListObjectsV2,
                 {.query = {{"list-type", "2"}, {"continuation-token", "!!not base64!!"}}}),
              ErrorCode::kInvalidArgument);

  // V1: marker / NextMarker (sent with a delimiter).
  auto v1 = Do(HandleListObjectsV1, {.query = {{"delimiter", "/"}, {"max-keys", "2"}}});
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(All(v1.body, "//CommonPrefixes/Prefix"), (std::vector<std::string>{"a/", "b/"}));
  EXPECT_EQ(One(v1.body, "//IsTruncated"), "true");
  const std::string marker = One(v1.body, "//NextMarker");
  EXPECT_EQ(marker, "b/");
  auto v1_next = Do(HandleListObjectsV1, {.query = {{"delimiter", "/"}, {"marker", marker}}});
  EXPECT_EQ(All(v1_next.body, "//Contents/Key"), (std::vector<std::string>{"c", "d"}));
  EXPECT_CODE(Do(HandleListObjectsV1, {.query = {{"max-keys", "-1"}}}),
              ErrorCode::kInvalidArgument);
}

TEST_F(HandlerTest, MultipartCreateUploadListCompleteAbort) {
  MakeBucket();
  auto created = Do(HandleCreateMultipartUpload, {.method = "POST",
                                                  .key = "big",
                                                  .query = {{"uploads", ""}},
                                                  .headers = {{"x-amz-meta-kind", "mp"}}});
  ASSERT_TRUE(created.ok()) << created.error->message;
  const std::string upload_id = One(created.body, "/InitiateMultipartUploadResult/UploadId");
  ASSERT_NE(upload_id, "<none>");

  const std::string part1(5 << 20, 'a'), part2 = "tail";
  std::vector<std::string> etags;
  for (auto [n, data] : {std::pair{1, &part1}, std::pair{2, &part2}}) {
    auto r =
        Do(HandleUploadPart, {.method = "PUT",
                              .key = "big",
                              .query = {{"partNumber", std::to_string(n)}, {"uploadId", upload_id}},
                              .body = *data});
    ASSERT_TRUE(r.ok()) << r.error->message;
    EXPECT_EQ(Header(r, "ETag"), "\"" + Md5Hex(*data) + "\"");
    etags.push_back(Header(r, "ETag"));
  }
  EXPECT_CODE(Do(HandleUploadPart, {.method = "PUT",
                                    .key = "big",
                                    .query = {{"partNumber", "0"}, {"uploadId", upload_id}},
                                    .body = "x"}),
              ErrorCode::kInvalidArgument);

  auto parts = Do(HandleListParts, {.key = "big", .query = {{"uploadId", upload_id}}});
  ASSERT_TRUE(parts.ok()) << parts.error->message;
  EXPECT_EQ(All(parts.body, "//Part/PartNumber"), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(All(parts.body, "//Part/Size"),
            (std::vector<std::string>{std::to_string(part1.size()), "4"}));
  auto page =
      Do(HandleListParts, {.key = "big", .query = {{"uploadId", upload_id}, {"max-parts", "1"}}});
  EXPECT_EQ(All(page.body, "//Part/PartNumber"), std::vector<std::string>{"1"});
  EXPECT_EQ(One(page.body, "//IsTruncated"), "true");

  auto uploads = Do(HandleListMultipartUploads, {.query = {{"uploads", ""}}});
  EXPECT_EQ(All(uploads.body, "//Upload/UploadId"), std::vector<std::string>{upload_id});

  // Parts out of order are refused; then completed in order.
  auto complete_xml = [&](int first, int second) {
    return "<CompleteMultipartUpload><Part><PartNumber>" + std::to_string(first) +
           "</PartNumber><ETag>" + etags[first - 1] + "</ETag></Part><Part><PartNumber>" +
           std::to_string(second) + "</PartNumber><ETag>" + etags[second - 1] +
           "</ETag></Part></CompleteMultipartUpload>";
  };
  EXPECT_CODE(Do(HandleCompleteMultipartUpload, {.method = "POST",
                                                 .key = "big",
                                                 .query = {{"uploadId", upload_id}},
                                                 .body = complete_xml(2, 1)}),
              ErrorCode::kInvalidPartOrder);
  auto done = Do(HandleCompleteMultipartUpload, {.method = "POST",
                                                 .key = "big",
                                                 .query = {{"uploadId", upload_id}},
                                                 .body = complete_xml(1, 2)});
  ASSERT_TRUE(done.ok()) << done.error->message;
  EXPECT_TRUE(One(done.body, "//ETag").ends_with("-2\"")) << done.body;
  auto get = Do(HandleGetObject, {.key = "big"});
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(Payload(get), part1 + part2);
  EXPECT_EQ(Header(get, "x-amz-meta-kind"), "mp");
  EXPECT_EQ(Header(get, "x-amz-mp-parts-count"), "2");

  // Abort: the upload is gone.
  auto other = Do(HandleCreateMultipartUpload,
                  {.method = "POST", .key = "gone", .query = {{"uploads", ""}}});
  const std::string other_id = One(other.body, "//UploadId");
  EXPECT_EQ(Do(HandleAbortMultipartUpload,
               {.method = "DELETE", .key = "gone", .query = {{"uploadId", other_id}}})
                .status,
            204);
  EXPECT_CODE(Do(HandleListParts, {.key = "gone", .query = {{"uploadId", other_id}}}),
              ErrorCode::kNoSuchUpload);
}

TEST_F(HandlerTest, CopyObjectMetadataDirective) {
  MakeBucket();
  Put("src", "payload", {{"content-type", "text/plain"}, {"x-amz-meta-a", "1"}});

  auto copied = Do(HandleCopyObject,
                   {.method = "PUT",
                    .key = "copy",
                    .headers = {{"x-amz-copy-source", "/bkt/src"}, {"x-amz-meta-a", "ignored"}}});
  ASSERT_TRUE(copied.ok()) << copied.error->message;
  EXPECT_EQ(One(copied.body, "/CopyObjectResult/ETag"), "\"" + Md5Hex("payload") + "\"");
  auto get = Do(HandleGetObject, {.key = "copy"});
  EXPECT_EQ(Payload(get), "payload");
  EXPECT_EQ(Header(get, "Content-Type"), "text/plain");
  EXPECT_EQ(Header(get, "x-amz-meta-a"), "1");  // COPY (the default) keeps the source's

  auto replaced = Do(HandleCopyObject, {.method = "PUT",
                                        .key = "replaced",
                                        .headers = {{"x-amz-copy-source", "bkt/src"},
                                                    {"x-amz-metadata-directive", "REPLACE"},
                                                    {"content-type", "application/json"},
                                                    {"x-amz-meta-b", "2"}}});
  ASSERT_TRUE(replaced.ok()) << replaced.error->message;
  auto get2 = Do(HandleGetObject, {.key = "replaced"});
  EXPECT_EQ(Payload(get2), "payload");
  EXPECT_EQ(Header(get2, "Content-Type"), "application/json");
  EXPECT_EQ(Header(get2, "x-amz-meta-a"), "<none>");
  EXPECT_EQ(Header(get2, "x-amz-meta-b"), "2");

  // Onto itself only when something changes.
  EXPECT_CODE(Do(HandleCopyObject,
                 {.method = "PUT", .key = "src", .headers = {{"x-amz-copy-source", "bkt/src"}}}),
              ErrorCode::kInvalidRequest);
  auto self = Do(HandleCopyObject, {.method = "PUT",
                                    .key = "src",
                                    .headers = {{"x-amz-copy-source", "bkt/src"},
                                                {"x-amz-metadata-directive", "REPLACE"},
                                                {"x-amz-meta-c", "3"}}});
  ASSERT_TRUE(self.ok()) << self.error->message;
  EXPECT_EQ(Header(Do(HandleHeadObject, {.method = "HEAD", .key = "src"}), "x-amz-meta-c"), "3");

  EXPECT_CODE(Do(HandleCopyObject, {.method = "PUT",
                                    .key = "x",
                                    .headers = {{"x-amz-copy-source", "bkt/src"},
                                                {"x-amz-metadata-directive", "MERGE"}}}),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(Do(HandleCopyObject,
                 {.method = "PUT", .key = "x", .headers = {{"x-amz-copy-source", "bkt/none"}}}),
              ErrorCode::kNoSuchKey);
  EXPECT_CODE(Do(HandleCopyObject, {.method = "PUT",
                                    .key = "x",
                                    .headers = {{"x-amz-copy-source", "bkt/src"},
                                                {"x-amz-copy-source-if-match", "\"nope\""}}}),
              ErrorCode::kPreconditionFailed);
}

TEST_F(HandlerTest, SubresourceHandlersServeEachOperation) {
  MakeBucket();
  Put("k", "v");
  auto put = Do(HandleTaggingRequest,
                {.op = S3Op::kPutObjectTagging,
                 .method = "PUT",
                 .key = "k",
                 .query = {{"tagging", ""}},
                 .body = "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet>"
                         "</Tagging>"});
  ASSERT_TRUE(put.ok()) << put.error->message;
  auto get = Do(HandleTaggingRequest,
                {.op = S3Op::kGetObjectTagging, .key = "k", .query = {{"tagging", ""}}});
  EXPECT_EQ(One(get.body, "//Tag/Key"), "a");
  EXPECT_EQ(Header(Do(HandleHeadObject, {.method = "HEAD", .key = "k"}), "x-amz-tagging-count"),
            "1");
  EXPECT_CODE(Do(HandleTaggingRequest,
                 {.op = S3Op::kGetObjectTagging, .key = "none", .query = {{"tagging", ""}}}),
              ErrorCode::kNoSuchKey);

  EXPECT_CODE(
      Do(HandleBucketEncryption, {.op = S3Op::kGetBucketEncryption, .query = {{"encryption", ""}}}),
      ErrorCode::kServerSideEncryptionConfigurationNotFound);
  // SSE-S3 needs a master key (MINIO_KMS_SECRET_KEY); this Env has none.
  EXPECT_CODE(Do(HandleBucketEncryption,
                 {.op = S3Op::kPutBucketEncryption,
                  .method = "PUT",
                  .query = {{"encryption", ""}},
                  .body = "<ServerSideEncryptionConfiguration><Rule>"
                          "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
                          "</ApplyServerSideEncryptionByDefault></Rule>"
                          "</ServerSideEncryptionConfiguration>"}),
              ErrorCode::kNotImplemented);
}

TEST_F(HandlerTest, UploadPartCopyTakesARange) {
  MakeBucket();
  Put("src", "0123456789");
  auto created =
      Do(HandleCreateMultipartUpload, {.method = "POST", .key = "dst", .query = {{"uploads", ""}}});
  const std::string id = One(created.body, "//UploadId");
  auto part =
      Do(HandleUploadPartCopy,
         {.method = "PUT",
          .key = "dst",
          .query = {{"partNumber", "1"}, {"uploadId", id}},
          .headers = {{"x-amz-copy-source", "bkt/src"}, {"x-amz-copy-source-range", "bytes=2-5"}}});
  ASSERT_TRUE(part.ok()) << part.error->message;
  EXPECT_EQ(One(part.body, "/CopyPartResult/ETag"), "\"" + Md5Hex("2345") + "\"");
  EXPECT_CODE(Do(HandleUploadPartCopy, {.method = "PUT",
                                        .key = "dst",
                                        .query = {{"partNumber", "2"}, {"uploadId", id}},
                                        .headers = {{"x-amz-copy-source", "bkt/src"},
                                                    {"x-amz-copy-source-range", "bytes=5-10"}}}),
              ErrorCode::kInvalidArgument);
}

TEST_F(HandlerTest, ListObjectVersionsShowsVersionsAndDeleteMarkers) {
  MakeBucket();
  ASSERT_TRUE(
      Do(HandlePutBucketVersioning, {.method = "PUT",
                                     .query = {{"versioning", ""}},
                                     .body = "<VersioningConfiguration><Status>Enabled</Status>"
                                             "</VersioningConfiguration>"})
          .ok());
  auto first = Do(HandlePutObject, {.method = "PUT", .key = "k", .body = "one"});
  auto second = Do(HandlePutObject, {.method = "PUT", .key = "k", .body = "two!"});
  const std::string v1 = Header(first, "x-amz-version-id"), v2 = Header(second, "x-amz-version-id");
  ASSERT_NE(v1, "<none>");
  ASSERT_NE(v1, v2);
  auto marker = Do(HandleDeleteObject, {.method = "DELETE", .key = "k"});
  EXPECT_EQ(Header(marker, "x-amz-delete-marker"), "true");
  const std::string vm = Header(marker, "x-amz-version-id");

  auto list = Do(HandleListObjectVersions, {.query = {{"versions", ""}}});
  ASSERT_TRUE(list.ok()) << list.error->message;
  // Newest first: the marker (latest), then the two versions.
  EXPECT_EQ(All(list.body, "//DeleteMarker/VersionId"), std::vector<std::string>{vm});
  EXPECT_EQ(All(list.body, "//DeleteMarker/IsLatest"), std::vector<std::string>{"true"});
  EXPECT_EQ(All(list.body, "//Version/VersionId"), (std::vector<std::string>{v2, v1}));
  EXPECT_EQ(All(list.body, "//Version/Size"), (std::vector<std::string>{"4", "3"}));
  // Paged by one: the marker, then the next page starts at the newer version.
  auto page = Do(HandleListObjectVersions, {.query = {{"versions", ""}, {"max-keys", "1"}}});
  EXPECT_EQ(One(page.body, "/ListVersionsResult/IsTruncated"), "true");
  auto next = Do(HandleListObjectVersions,
                 {.query = {{"versions", ""},
                            {"max-keys", "1"},
                            {"key-marker", One(page.body, "//NextKeyMarker")},
                            {"version-id-marker", One(page.body, "//NextVersionIdMarker")}}});
  EXPECT_EQ(All(next.body, "//Version/VersionId"), std::vector<std::string>{v2});
  EXPECT_CODE(
      Do(HandleListObjectVersions, {.query = {{"versions", ""}, {"version-id-marker", v1}}}),
      ErrorCode::kInvalidArgument);

  // The older version is still readable by id; the key without one is gone.
  auto old = Do(HandleGetObject, {.key = "k", .query = {{"versionId", v1}}});
  ASSERT_TRUE(old.ok()) << old.error->message;
  EXPECT_EQ(Payload(old), "one");
  EXPECT_CODE(Do(HandleGetObject, {.key = "k"}), ErrorCode::kNoSuchKey);
}

TEST_F(HandlerTest, GetObjectAttributesNamesWhatIsAsked) {
  MakeBucket();
  Put("k", "hello");
  auto attrs = Do(HandleGetObjectAttributes,
                  {.key = "k",
                   .query = {{"attributes", ""}},
                   .headers = {{"x-amz-object-attributes", "ETag,ObjectSize,StorageClass"}}});
  ASSERT_TRUE(attrs.ok()) << attrs.error->message;
  EXPECT_EQ(One(attrs.body, "/GetObjectAttributesResponse/ETag"), Md5Hex("hello"));
  EXPECT_EQ(One(attrs.body, "/GetObjectAttributesResponse/ObjectSize"), "5");
  EXPECT_EQ(One(attrs.body, "/GetObjectAttributesResponse/StorageClass"), "STANDARD");
  EXPECT_EQ(One(attrs.body, "/GetObjectAttributesResponse/ObjectParts"), "<none>");
  EXPECT_CODE(Do(HandleGetObjectAttributes, {.key = "k", .query = {{"attributes", ""}}}),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(Do(HandleGetObjectAttributes, {.key = "k",
                                             .query = {{"attributes", ""}},
                                             .headers = {{"x-amz-object-attributes", "Colour"}}}),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(Do(HandleGetObjectAttributes, {.key = "none",
                                             .query = {{"attributes", ""}},
                                             .headers = {{"x-amz-object-attributes", "ETag"}}}),
              ErrorCode::kNoSuchKey);
}

TEST_F(HandlerTest, AclAndPolicyHandlersServeEachOperation) {
  MakeBucket();
  Put("k", "v");
  const char* kAllUsers = "http://acs.amazonaws.com/groups/global/AllUsers";
  auto private_acl =
      Do(HandleAclRequest, {.op = S3Op::kGetObjectAcl, .key = "k", .query = {{"acl", ""}}});
  ASSERT_TRUE(private_acl.ok()) << private_acl.error->message;
  EXPECT_EQ(All(private_acl.body, "//Grant/Permission"), std::vector<std::string>{"FULL_CONTROL"});
  auto put = Do(HandleAclRequest, {.op = S3Op::kPutObjectAcl,
                                   .method = "PUT",
                                   .key = "k",
                                   .query = {{"acl", ""}},
                                   .headers = {{"x-amz-acl", "public-read"}}});
  ASSERT_TRUE(put.ok()) << put.error->message;
  auto public_acl =
      Do(HandleAclRequest, {.op = S3Op::kGetObjectAcl, .key = "k", .query = {{"acl", ""}}});
  EXPECT_EQ(All(public_acl.body, "//Grant/Grantee/URI"), std::vector<std::string>{kAllUsers});
  EXPECT_CODE(Do(HandleAclRequest, {.op = S3Op::kPutBucketAcl,
                                    .method = "PUT",
                                    .query = {{"acl", ""}},
                                    .headers = {{"x-amz-acl", "no-such-acl"}}}),
              ErrorCode::kInvalidArgument);

  EXPECT_CODE(
      Do(HandleBucketPolicyRequest, {.op = S3Op::kGetBucketPolicy, .query = {{"policy", ""}}}),
      ErrorCode::kNoSuchBucketPolicy);
  const std::string policy =
      R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",)"
      R"("Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]})";
  auto set = Do(
      HandleBucketPolicyRequest,
      {.op = S3Op::kPutBucketPolicy, .method = "PUT", .query = {{"policy", ""}}, .body = policy});
  ASSERT_TRUE(set.ok()) << set.error->message;
  EXPECT_EQ(set.status, 204);
  auto got =
      Do(HandleBucketPolicyRequest, {.op = S3Op::kGetBucketPolicy, .query = {{"policy", ""}}});
  EXPECT_NE(got.body.find("s3:GetObject"), std::string::npos) << got.body;
  auto status = Do(HandleBucketPolicyRequest,
                   {.op = S3Op::kGetBucketPolicyStatus, .query = {{"policyStatus", ""}}});
  EXPECT_EQ(One(status.body, "/PolicyStatus/IsPublic"), "true");
  EXPECT_CODE(Do(HandleBucketPolicyRequest, {.op = S3Op::kPutBucketPolicy,
                                             .method = "PUT",
                                             .query = {{"policy", ""}},
                                             .body = "{not json"}),
              ErrorCode::kMalformedPolicy);
  EXPECT_EQ(Do(HandleBucketPolicyRequest,
               {.op = S3Op::kDeleteBucketPolicy, .method = "DELETE", .query = {{"policy", ""}}})
                .status,
            204);
  EXPECT_CODE(
      Do(HandleBucketPolicyRequest, {.op = S3Op::kGetBucketPolicy, .query = {{"policy", ""}}}),
      ErrorCode::kNoSuchBucketPolicy);
}

// MinIO's x-minio-force-delete: a prefix (the key and what lies under key/) and a whole bucket.
TEST_F(HandlerTest, ForceDeletePrefixAndBucket) {
  MakeBucket();
  for (const char* k : {"a", "a/x", "a/y/z", "a!b", "ab", "b"}) Put(k, k);
  const HeaderList force{{"x-minio-force-delete", "true"}};
  auto keys = [&] {
    return All(Do(HandleListObjectsV2, {.query = {{"list-type", "2"}}}).body, "//Contents/Key");
  };
  EXPECT_CODE(Do(HandleDeletePrefix,
                 {.method = "DELETE", .key = "a", .headers = {{"x-minio-force-delete", "yes"}}}),
              ErrorCode::kInvalidRequest);
  // "false": a plain delete of the key "a".
  EXPECT_EQ(Do(HandleDeletePrefix,
               {.method = "DELETE", .key = "a", .headers = {{"x-minio-force-delete", "false"}}})
                .status,
            204);
  EXPECT_EQ(keys(), (std::vector<std::string>{"a!b", "a/x", "a/y/z", "ab", "b"}));
  Put("a", "again");
  auto del = Do(HandleDeletePrefix, {.method = "DELETE", .key = "a", .headers = force});
  EXPECT_EQ(del.status, 204);
  EXPECT_EQ(keys(), (std::vector<std::string>{"a!b", "ab", "b"}));
  Put("d/1", "1");
  Put("d/2", "2");
  EXPECT_EQ(Do(HandleDeletePrefix, {.method = "DELETE", .key = "d/", .headers = force}).status,
            204);
  EXPECT_EQ(keys(), (std::vector<std::string>{"a!b", "ab", "b"}));

  // The bucket: versions, delete markers and an open upload go with it.
  ASSERT_TRUE(
      Do(HandlePutBucketVersioning, {.method = "PUT",
                                     .query = {{"versioning", ""}},
                                     .body = "<VersioningConfiguration><Status>Enabled</Status>"
                                             "</VersioningConfiguration>"})
          .ok());
  Put("b", "second");
  ASSERT_TRUE(Do(HandleDeleteObject, {.method = "DELETE", .key = "ab"}).ok());
  ASSERT_TRUE(
      Do(HandleCreateMultipartUpload, {.method = "POST", .key = "up", .query = {{"uploads", ""}}})
          .ok());
  EXPECT_CODE(Do(HandleForceDeleteBucket,
                 {.method = "DELETE", .headers = {{"x-minio-force-delete", "false"}}}),
              ErrorCode::kBucketNotEmpty);
  EXPECT_CODE(
      Do(HandleForceDeleteBucket, {.method = "DELETE", .headers = {{"x-minio-force-delete", "2"}}}),
      ErrorCode::kInvalidRequest);
  EXPECT_EQ(Do(HandleForceDeleteBucket, {.method = "DELETE", .headers = force}).status, 204);
  EXPECT_CODE(Do(HandleHeadBucket, {.method = "HEAD"}), ErrorCode::kNoSuchBucket);
  EXPECT_CODE(Do(HandleForceDeleteBucket, {.method = "DELETE", .headers = force}),
              ErrorCode::kNoSuchBucket);
}

// MinIO's metadata=true listing (ListObjectsV2M): user metadata and tags, where the caller may.
TEST_F(HandlerTest, ListWithMetadataShowsUserMetadataAndTags) {
  MakeBucket();
  Put("a", "1",
      {{"x-amz-meta-color", "blue"},
       {"content-type", "text/plain"},
       {"cache-control", "no-cache"},
       {"x-amz-tagging", "team=storage&tier=hot"}});
  Put("b", "2", {{"x-amz-meta-color", "red"}, {"x-amz-tagging", "t=1"}});
  Put("c", "3");
  const Query q{{"list-type", "2"}, {"metadata", "true"}};
  refuse_ = "b";
  auto list = Do(HandleListObjectsV2, {.op = S3Op::kListObjectsV2M, .query = q});
  ASSERT_TRUE(list.ok()) << list.error->message;
  EXPECT_EQ(One(list.body, "//Contents[Key='a']/UserMetadata/X-Amz-Meta-Color"), "blue");
  EXPECT_EQ(One(list.body, "//Contents[Key='a']/UserMetadata/content-type"), "text/plain");
  EXPECT_EQ(One(list.body, "//Contents[Key='a']/UserMetadata/Cache-Control"), "no-cache");
  EXPECT_EQ(One(list.body, "//Contents[Key='a']/UserTags"), "team=storage&tier=hot");
  // Refused s3:GetObject and s3:GetObjectTagging on "b": listed, without either.
  EXPECT_EQ(One(list.body, "//Contents[Key='b']/Size"), "1");
  EXPECT_EQ(One(list.body, "//Contents[Key='b']/UserMetadata"), "<none>");
  EXPECT_EQ(One(list.body, "//Contents[Key='b']/UserTags"), "<none>");
  EXPECT_EQ(One(list.body, "//Contents[Key='c']/UserTags"), "<none>");
  // A plain ListObjectsV2 shows neither.
  auto plain = Do(HandleListObjectsV2, {.op = S3Op::kListObjectsV2, .query = q});
  EXPECT_EQ(All(plain.body, "//UserMetadata").size(), 0u);
  EXPECT_EQ(All(plain.body, "//UserTags").size(), 0u);
}

// MinIO's ExcludedPrefixes / ExcludeFolders: keys they name get null versions in an Enabled bucket.
TEST_F(HandlerTest, VersioningExclusionsWriteNullVersions) {
  MakeBucket();
  auto put_config = [&](const std::string& inner) {
    return Do(HandlePutBucketVersioning,
              {.method = "PUT",
               .query = {{"versioning", ""}},
               .body = "<VersioningConfiguration>" + inner + "</VersioningConfiguration>"});
  };
  std::string eleven;
  for (int i = 0; i < 11; ++i)
    eleven += "<ExcludedPrefixes><Prefix>p" + std::to_string(i) + "/</Prefix></ExcludedPrefixes>";
  EXPECT_CODE(put_config("<Status>Enabled</Status>" + eleven),
              ErrorCode::kIllegalVersioningConfiguration);
  EXPECT_CODE(put_config("<Status>Suspended</Status><ExcludedPrefixes><Prefix>a/</Prefix>"
                         "</ExcludedPrefixes>"),
              ErrorCode::kIllegalVersioningConfiguration);
  EXPECT_CODE(put_config("<Status>Enabled</Status><ExcludeFolders>maybe</ExcludeFolders>"),
              ErrorCode::kMalformedXML);
  ASSERT_TRUE(put_config("<Status>Enabled</Status><ExcludedPrefixes><Prefix>tmp/</Prefix>"
                         "</ExcludedPrefixes><ExcludedPrefixes><Prefix>*/_staging/</Prefix>"
                         "</ExcludedPrefixes><ExcludeFolders>true</ExcludeFolders>")
                  .ok());
  auto config = Do(HandleGetBucketVersioning, {.query = {{"versioning", ""}}});
  EXPECT_EQ(All(config.body, "/VersioningConfiguration/ExcludedPrefixes/Prefix"),
            (std::vector<std::string>{"tmp/", "*/_staging/"}));
  EXPECT_EQ(One(config.body, "/VersioningConfiguration/ExcludeFolders"), "true");

  for (const char* k : {"tmp/a", "data/x", "dir/", "job/_staging/y"}) {
    Put(k, "one");
    Put(k, "two");
  }
  auto list = Do(HandleListObjectVersions, {.query = {{"versions", ""}}});
  auto ids = [&](const std::string& key) {
    return All(list.body, ("//Version[Key='" + key + "']/VersionId").c_str());
  };
  EXPECT_EQ(ids("tmp/a"), std::vector<std::string>{"null"});
  EXPECT_EQ(ids("dir/"), std::vector<std::string>{"null"});
  EXPECT_EQ(ids("job/_staging/y"), std::vector<std::string>{"null"});
  ASSERT_EQ(ids("data/x").size(), 2u);
  EXPECT_NE(ids("data/x")[0], "null");
  // A delete of an excluded key removes its null version, as in a Suspended bucket: a null
  // delete marker; elsewhere a marker with an id.
  auto tmp_del = Do(HandleDeleteObject, {.method = "DELETE", .key = "tmp/a"});
  EXPECT_EQ(Header(tmp_del, "x-amz-version-id"), "null");
  auto data_del = Do(HandleDeleteObject, {.method = "DELETE", .key = "data/x"});
  EXPECT_NE(Header(data_del, "x-amz-version-id"), "null");

  // A configuration without them clears them.
  ASSERT_TRUE(put_config("<Status>Enabled</Status>").ok());
  config = Do(HandleGetBucketVersioning, {.query = {{"versioning", ""}}});
  EXPECT_EQ(All(config.body, "//ExcludedPrefixes").size(), 0u);
  EXPECT_EQ(All(config.body, "//ExcludeFolders").size(), 0u);
  Put("tmp/a", "three");
  list = Do(HandleListObjectVersions, {.query = {{"versions", ""}, {"prefix", "tmp/"}}});
  // The null delete marker, and the new write's version with an id.
  EXPECT_EQ(All(list.body, "//DeleteMarker/VersionId"), std::vector<std::string>{"null"});
  ASSERT_EQ(All(list.body, "//Version/VersionId").size(), 1u) << list.body;
  EXPECT_NE(One(list.body, "//Version/VersionId"), "null");
}

// ListObjectVersionsM: each version's own metadata and tags, checked with the version actions;
// delete markers show none.
TEST_F(HandlerTest, ListVersionsWithMetadataShowsEachVersionsOwn) {
  MakeBucket();
  ASSERT_TRUE(
      Do(HandlePutBucketVersioning, {.method = "PUT",
                                     .query = {{"versioning", ""}},
                                     .body = "<VersioningConfiguration><Status>Enabled</Status>"
                                             "</VersioningConfiguration>"})
          .ok());
  Put("a", "1", {{"x-amz-meta-color", "blue"}, {"x-amz-tagging", "v=1"}});
  Put("a", "22", {{"x-amz-meta-color", "green"}, {"x-amz-tagging", "v=2"}});
  Put("b", "3", {{"x-amz-meta-color", "red"}, {"x-amz-tagging", "t=1"}});
  ASSERT_TRUE(Do(HandleDeleteObject, {.method = "DELETE", .key = "a"}).ok());
  const Query q{{"versions", ""}, {"metadata", "true"}};
  refuse_ = "b";
  asked_.clear();
  auto list = Do(HandleListObjectVersions, {.op = S3Op::kListObjectVersionsM, .query = q});
  ASSERT_TRUE(list.ok()) << list.error->message;
  EXPECT_EQ(One(list.body, "//Version[Key='a' and Size='1']/UserMetadata/X-Amz-Meta-Color"),
            "blue");
  EXPECT_EQ(One(list.body, "//Version[Key='a' and Size='1']/UserTags"), "v=1");
  EXPECT_EQ(One(list.body, "//Version[Key='a' and Size='2']/UserMetadata/X-Amz-Meta-Color"),
            "green");
  EXPECT_EQ(One(list.body, "//Version[Key='a' and Size='2']/UserTags"), "v=2");
  EXPECT_EQ(One(list.body, "//DeleteMarker[Key='a']/UserMetadata"), "<none>");
  // Refused s3:GetObjectVersion and s3:GetObjectVersionTagging on "b": listed, without either.
  EXPECT_EQ(One(list.body, "//Version[Key='b']/Size"), "1");
  EXPECT_EQ(One(list.body, "//Version[Key='b']/UserMetadata"), "<none>");
  EXPECT_EQ(One(list.body, "//Version[Key='b']/UserTags"), "<none>");
  EXPECT_EQ(asked_, (std::set<std::string>{"s3:GetObjectVersion", "s3:GetObjectVersionTagging"}));
  // A plain ListObjectVersions shows neither.
  auto plain = Do(HandleListObjectVersions, {.op = S3Op::kListObjectVersions, .query = q});
  EXPECT_EQ(All(plain.body, "//UserMetadata").size(), 0u);
  EXPECT_EQ(All(plain.body, "//UserTags").size(), 0u);
}

TEST_F(HandlerTest, ObjectLockRetentionLegalHoldAndDeletes) {
  ASSERT_TRUE(Do(HandleCreateBucket, {.method = "PUT",
                                      .headers = {{"x-amz-bucket-object-lock-enabled", "true"}}})
                  .ok());
  EXPECT_EQ(One(Do(HandleGetBucketVersioning, {.query = {{"versioning", ""}}}).body,
                "//*[local-name()='Status']"),
            "Enabled");
  auto cfg = [&](const std::string& xml) {
    return Do(HandleObjectLockConfiguration, {.op = S3Op::kPutBucketObjectLockConfig,
                                              .method = "PUT",
                                              .query = {{"object-lock", ""}},
                                              .headers = ContentMd5(xml),
                                              .body = xml});
  };
  ASSERT_TRUE(cfg("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
                  "<DefaultRetention><Mode>GOVERNANCE</Mode><Days>2</Days></DefaultRetention>"
                  "</Rule></ObjectLockConfiguration>")
                  .ok());
  EXPECT_CODE(cfg("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
                  "<DefaultRetention><Mode>GOVERNANCE</Mode><Days>0</Days></DefaultRetention>"
                  "</Rule></ObjectLockConfiguration>"),
              ErrorCode::kInvalidRetentionPeriod);
  auto got = Do(HandleObjectLockConfiguration,
                {.op = S3Op::kGetBucketObjectLockConfig, .query = {{"object-lock", ""}}});
  EXPECT_EQ(One(got.body, "//*[local-name()='Days']"), "2");
  // Suspending versioning is refused from now on.
  EXPECT_CODE(Do(HandlePutBucketVersioning,
                 {.method = "PUT",
                  .query = {{"versioning", ""}},
                  .body = "<VersioningConfiguration><Status>Suspended</Status>"
                          "</VersioningConfiguration>"}),
              ErrorCode::kInvalidBucketState);

  // Default retention: a plain PUT gets GOVERNANCE for two days.
  auto put = Do(HandlePutObject, {.method = "PUT", .key = "k", .body = "data"});
  ASSERT_TRUE(put.ok());
  const std::string v = Header(put, "x-amz-version-id");
  auto head = Do(HandleHeadObject, {.method = "HEAD", .key = "k"});
  EXPECT_EQ(Header(head, "x-amz-object-lock-mode"), "GOVERNANCE");
  EXPECT_NE(Header(head, "x-amz-object-lock-retain-until-date"), "<none>");
  // A version under retention is kept; the bypass needs the permission (refused here), and with
  // it the delete goes through.
  const HeaderList bypass = {{"x-amz-bypass-governance-retention", "true"}};
  EXPECT_CODE(Do(HandleDeleteObject, {.method = "DELETE", .key = "k", .query = {{"versionId", v}}}),
              ErrorCode::kAccessDenied);
  refuse_ = "k";
  EXPECT_CODE(Do(HandleDeleteObject, {.method = "DELETE", .key = "k",
                                      .query = {{"versionId", v}}, .headers = bypass}),
              ErrorCode::kAccessDenied);
  refuse_.clear();
  EXPECT_TRUE(asked_.count("s3:BypassGovernanceRetention"));
  // A plain delete creates a marker all the same.
  auto marker = Do(HandleDeleteObject, {.method = "DELETE", .key = "k"});
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(Header(marker, "x-amz-delete-marker"), "true");

  // Legal hold: held, no bypass lifts it; released, the bypass does.
  auto hold = [&](const char* status) {
    const std::string body = std::string("<LegalHold><Status>") + status + "</Status></LegalHold>";
    return Do(HandleObjectLegalHold,
              {.op = S3Op::kPutObjectLegalHold, .method = "PUT", .key = "k",
               .query = {{"legal-hold", ""}, {"versionId", v}}, .headers = ContentMd5(body),
               .body = body});
  };
  ASSERT_TRUE(hold("ON").ok());
  EXPECT_CODE(hold("on"), ErrorCode::kMalformedXML);
  EXPECT_CODE(Do(HandleDeleteObject, {.method = "DELETE", .key = "k",
                                      .query = {{"versionId", v}}, .headers = bypass}),
              ErrorCode::kAccessDenied);
  // DeleteObjects answers per key.
  auto multi = Do(HandleDeleteObjects,
                  {.method = "POST", .query = {{"delete", ""}},
                   .body = "<Delete><Object><Key>k</Key><VersionId>" + v +
                           "</VersionId></Object></Delete>"});
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(One(multi.body, "//*[local-name()='Error']/*[local-name()='Code']"), "AccessDenied");
  ASSERT_TRUE(hold("OFF").ok());
  EXPECT_EQ(Header(Do(HandleHeadObject, {.method = "HEAD", .key = "k",
                                         .query = {{"versionId", v}}}),
                   "x-amz-object-lock-legal-hold"),
            "OFF");

  // Retention: COMPLIANCE cannot be shortened, bypass or not; a PUT without an integrity header
  // is refused.
  auto retention = [&](const std::string& mode, const std::string& until, HeaderList h) {
    const std::string body = "<Retention><Mode>" + mode + "</Mode><RetainUntilDate>" + until +
                             "</RetainUntilDate></Retention>";
    for (auto& m : ContentMd5(body)) h.push_back(m);
    return Do(HandleObjectRetention,
              {.op = S3Op::kPutObjectRetention, .method = "PUT", .key = "k",
               .query = {{"retention", ""}, {"versionId", v}}, .headers = h, .body = body});
  };
  // GOVERNANCE (the default) turns COMPLIANCE only with the bypass.
  EXPECT_CODE(retention("COMPLIANCE", "2031-01-01T00:00:00Z", {}), ErrorCode::kAccessDenied);
  ASSERT_TRUE(retention("COMPLIANCE", "2031-01-01T00:00:00Z", bypass).ok());
  EXPECT_CODE(retention("COMPLIANCE", "2030-06-01T00:00:00Z", bypass), ErrorCode::kAccessDenied);
  EXPECT_CODE(retention("GOVERNANCE", "2032-01-01T00:00:00Z", bypass), ErrorCode::kAccessDenied);
  ASSERT_TRUE(retention("COMPLIANCE", "2032-01-01T00:00:00.5Z", {}).ok());
  auto r = Do(HandleObjectRetention, {.op = S3Op::kGetObjectRetention, .key = "k",
                                      .query = {{"retention", ""}, {"versionId", v}}});
  EXPECT_EQ(One(r.body, "//*[local-name()='RetainUntilDate']"), "2032-01-01T00:00:00.500Z");
  EXPECT_CODE(Do(HandleObjectRetention,
                 {.op = S3Op::kPutObjectRetention, .method = "PUT", .key = "k",
                  .query = {{"retention", ""}, {"versionId", v}},
                  .body = "<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2040-01-01T00:00:00Z"
                          "</RetainUntilDate></Retention>"}),
              ErrorCode::kInvalidRequest);
  EXPECT_CODE(Do(HandleDeleteObject, {.method = "DELETE", .key = "k",
                                      .query = {{"versionId", v}}, .headers = bypass}),
              ErrorCode::kAccessDenied);
  // MinIO's force deletes are refused on a lock-enabled bucket.
  EXPECT_CODE(Do(HandleDeletePrefix, {.method = "DELETE", .key = "k",
                                      .headers = {{"x-minio-force-delete", "true"}}}),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(Do(HandleForceDeleteBucket,
                 {.method = "DELETE", .headers = {{"x-minio-force-delete", "true"}}}),
              ErrorCode::kMethodNotAllowed);
  auto still = Do(HandleGetObject, {.key = "k", .query = {{"versionId", v}}});
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(Payload(still), "data");
}

TEST_F(HandlerTest, ObjectLockNeedsALockEnabledBucket) {
  MakeBucket();
  Put("k", "x");
  EXPECT_CODE(Do(HandleObjectLockConfiguration, {.op = S3Op::kGetBucketObjectLockConfig,
                                                 .query = {{"object-lock", ""}}}),
              ErrorCode::kObjectLockConfigurationNotFound);
  EXPECT_CODE(Do(HandleObjectLegalHold, {.op = S3Op::kGetObjectLegalHold, .key = "k",
                                         .query = {{"legal-hold", ""}}}),
              ErrorCode::kInvalidRequest);
  EXPECT_CODE(Do(HandlePutObject, {.method = "PUT", .key = "k2",
                                   .headers = {{"x-amz-object-lock-legal-hold", "ON"}},
                                   .body = "x"}),
              ErrorCode::kInvalidRequest);
  // Not versioned: no configuration can be put.
  const std::string enable =
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
      "</ObjectLockConfiguration>";
  EXPECT_CODE(Do(HandleObjectLockConfiguration,
                 {.op = S3Op::kPutBucketObjectLockConfig, .method = "PUT",
                  .query = {{"object-lock", ""}}, .headers = ContentMd5(enable), .body = enable}),
              ErrorCode::kInvalidBucketState);
}

TEST_F(HandlerTest, BucketCorsConfiguration) {
  MakeBucket();
  EXPECT_CODE(Do(HandleBucketCors, {.op = S3Op::kGetBucketCors, .query = {{"cors", ""}}}),
              ErrorCode::kNoSuchCORSConfiguration);
  auto put = [&](const std::string& rules) {
    const std::string body = "<CORSConfiguration>" + rules + "</CORSConfiguration>";
    return Do(HandleBucketCors, {.op = S3Op::kPutBucketCors, .method = "PUT",
                                 .query = {{"cors", ""}}, .headers = ContentMd5(body),
                                 .body = body});
  };
  EXPECT_CODE(put("<CORSRule><AllowedMethod>PATCH</AllowedMethod><AllowedOrigin>*</AllowedOrigin>"
                  "</CORSRule>"),
              ErrorCode::kInvalidRequest);
  EXPECT_CODE(put("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"),
              ErrorCode::kMalformedXML);
  EXPECT_CODE(put("<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*a*</AllowedOrigin>"
                  "</CORSRule>"),
              ErrorCode::kInvalidRequest);
  ASSERT_TRUE(put("<CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*.example.com"
                  "</AllowedOrigin><AllowedHeader>x-amz-*</AllowedHeader><MaxAgeSeconds>60"
                  "</MaxAgeSeconds></CORSRule>")
                  .ok());
  auto got = Do(HandleBucketCors, {.op = S3Op::kGetBucketCors, .query = {{"cors", ""}}});
  EXPECT_EQ(One(got.body, "//*[local-name()='AllowedOrigin']"), "*.example.com");
  auto rules = ParseCorsXml(got.body);
  ASSERT_TRUE(rules.ok());
  bool star = true;
  EXPECT_NE(MatchCors(*rules, "https://a.example.com", "GET", "X-Amz-Date, x-amz-meta-a", &star),
            nullptr);
  EXPECT_FALSE(star);
  EXPECT_EQ(MatchCors(*rules, "https://a.example.com", "PUT", "", &star), nullptr);
  EXPECT_EQ(MatchCors(*rules, "https://a.example.com", "GET", "content-type", &star), nullptr);
  EXPECT_EQ(MatchCors(*rules, "https://example.org", "GET", "", &star), nullptr);
  ASSERT_TRUE(Do(HandleBucketCors, {.op = S3Op::kDeleteBucketCors, .method = "DELETE",
                                    .query = {{"cors", ""}}})
                  .ok());
  EXPECT_CODE(Do(HandleBucketCors, {.op = S3Op::kGetBucketCors, .query = {{"cors", ""}}}),
              ErrorCode::kNoSuchCORSConfiguration);
}

}  // namespace
}  // namespace rdmastor::s3
