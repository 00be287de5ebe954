#include "s3/operations.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "iam/actions.h"
#include "iam/policy.h"

namespace rdmastor::s3 {
namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

std::string_view Route(std::string_view method, std::string_view path, Query query = {},
                       bool copy = false, bool form = false) {
  // "/" the root, "/b" a bucket, "/b/k" an object.
  const bool root = path == "/";
  const bool has_key = path.find('/', 1) != std::string_view::npos;
  return NameOf(RouteOf(RouteRequest{method, root, has_key, &query, copy, form}));
}

TEST(OperationsTest, RoutesAsMinioNamesThem) {
  EXPECT_EQ(Route("GET", "/"), "ListBuckets");
  EXPECT_EQ(Route("PUT", "/"), "unknown");
  EXPECT_EQ(Route("GET", "/", {{"events", ""}}), "ListenNotification");
  EXPECT_EQ(Route("GET", "/b", {{"events", ""}, {"tagging", ""}}), "ListenNotification");
  EXPECT_EQ(Route("PUT", "/b"), "PutBucket");
  EXPECT_EQ(Route("PUT", "/b", {{"versioning", ""}}), "PutBucketVersioning");
  EXPECT_EQ(Route("GET", "/b", {{"versioning", ""}}), "GetBucketVersioning");
  EXPECT_EQ(Route("GET", "/b", {{"location", ""}}), "GetBucketLocation");
  EXPECT_EQ(Route("GET", "/b"), "ListObjectsV1");
  EXPECT_EQ(Route("GET", "/b", {{"list-type", "2"}}), "ListObjectsV2");
  EXPECT_EQ(Route("GET", "/b", {{"list-type", "1"}}), "ListObjectsV1");
  EXPECT_EQ(Route("GET", "/b", {{"list-type", "2"}, {"metadata", "true"}}), "ListObjectsV2M");
  EXPECT_EQ(Route("GET", "/b", {{"metadata", "true"}, {"list-type", "2"}}), "ListObjectsV2M");
  EXPECT_EQ(Route("GET", "/b", {{"list-type", "2"}, {"metadata", "false"}}), "ListObjectsV2");
  EXPECT_EQ(Route("GET", "/b", {{"metadata", "true"}}), "ListObjectsV1");
  EXPECT_EQ(Route("GET", "/b", {{"versions", ""}}), "ListObjectVersions");
  EXPECT_EQ(Route("GET", "/b", {{"versions", ""}, {"metadata", "true"}}), "ListObjectVersionsM");
  EXPECT_EQ(Route("GET", "/b", {{"metadata", "true"}, {"versions", ""}}), "ListObjectVersionsM");
  EXPECT_EQ(Route("GET", "/b", {{"versions", ""}, {"metadata", "false"}}), "ListObjectVersions");
  EXPECT_EQ(Route("GET", "/b", {{"uploads", ""}}), "ListMultipartUploads");
  EXPECT_EQ(Route("POST", "/b", {{"delete", ""}}), "DeleteMultipleObjects");
  EXPECT_EQ(Route("POST", "/b", {}, false, true), "PostPolicyBucket");
  EXPECT_EQ(Route("POST", "/b"), "unknown");
  EXPECT_EQ(Route("HEAD", "/b"), "HeadBucket");
  EXPECT_EQ(Route("DELETE", "/b"), "DeleteBucket");
  EXPECT_EQ(Route("GET", "/b/k"), "GetObject");
  EXPECT_EQ(Route("HEAD", "/b/k"), "HeadObject");
  EXPECT_EQ(Route("GET", "/b/k", {{"attributes", ""}, {"uploadId", "u"}}), "GetObjectAttributes");
  EXPECT_EQ(Route("GET", "/b/k", {{"uploadId", "u"}}), "ListObjectParts");
  EXPECT_EQ(Route("PUT", "/b/k"), "PutObject");
  EXPECT_EQ(Route("PUT", "/b/k", {}, true), "CopyObject");
  EXPECT_EQ(Route("PUT", "/b/k", {{"partNumber", "1"}}), "PutObjectPart");
  EXPECT_EQ(Route("PUT", "/b/k", {{"uploadId", "u"}}, true), "CopyObjectPart");
  EXPECT_EQ(Route("POST", "/b/k", {{"uploads", ""}}), "NewMultipartUpload");
  EXPECT_EQ(Route("POST", "/b/k", {{"uploadId", "u"}}), "CompleteMultipartUpload");
  EXPECT_EQ(Route("POST", "/b/k"), "unknown");
  EXPECT_EQ(Route("DELETE", "/b/k", {{"uploadId", "u"}}), "AbortMultipartUpload");
  EXPECT_EQ(Route("DELETE", "/b/k"), "DeleteObject");
  Query none;
  EXPECT_EQ(NameOf(RouteOf(RouteRequest{"DELETE", false, true, &none, false, false, true})),
            "DeletePrefix");
  EXPECT_EQ(NameOf(RouteOf(RouteRequest{"DELETE", false, false, &none, false, false, true})),
            "ForceDeleteBucket");
  Query upload{{"uploadId", "u"}};
  EXPECT_EQ(NameOf(RouteOf(RouteRequest{"DELETE", false, true, &upload, false, false, true})),
            "AbortMultipartUpload");
  EXPECT_EQ(Route("PATCH", "/b/k"), "unknown");
}

// A subresource claims the request: only its operations serve it, the first one in table order
// wins, and one not implemented routes nowhere.
TEST(OperationsTest, SubresourcesClaimTheRequest) {
  EXPECT_EQ(Route("GET", "/b", {{"tagging", ""}}), "GetBucketTagging");
  EXPECT_EQ(Route("DELETE", "/b/k", {{"tagging", ""}}), "DeleteObjectTagging");
  EXPECT_EQ(Route("POST", "/b/k", {{"tagging", ""}, {"uploadId", "u"}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b/k", {{"acl", ""}, {"tagging", ""}}), "PutObjectTagging");
  EXPECT_EQ(Route("DELETE", "/b/k", {{"acl", ""}}), "unknown");
  EXPECT_EQ(Route("GET", "/b", {{"policy", ""}, {"policyStatus", ""}}), "GetBucketPolicyStatus");
  EXPECT_EQ(Route("PUT", "/b", {{"policy", ""}, {"policyStatus", ""}}), "unknown");
  EXPECT_EQ(Route("DELETE", "/b", {{"encryption", ""}}), "DeleteBucketEncryption");
  EXPECT_EQ(Route("POST", "/b", {{"encryption", ""}}), "unknown");
  // ?policy, ?encryption, ?cors and ?object-lock are bucket subresources only, ?retention and
  // ?legal-hold object ones; ?lifecycle a bucket one, ?replication none at all.
  EXPECT_EQ(Route("GET", "/b/k", {{"policy", ""}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b/k", {{"encryption", ""}}), "unknown");
  EXPECT_EQ(Route("GET", "/b", {{"replication", ""}, {"tagging", ""}}), "unknown");
  EXPECT_EQ(Route("GET", "/b", {{"lifecycle", ""}}), "GetBucketLifecycle");
  EXPECT_EQ(Route("PUT", "/b", {{"lifecycle", ""}}), "PutBucketLifecycle");
  EXPECT_EQ(Route("DELETE", "/b", {{"lifecycle", ""}}), "DeleteBucketLifecycle");
  EXPECT_EQ(Route("GET", "/b/k", {{"lifecycle", ""}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b", {{"cors", ""}}), "PutBucketCors");
  EXPECT_EQ(Route("DELETE", "/b", {{"cors", ""}}), "DeleteBucketCors");
  EXPECT_EQ(Route("GET", "/b/k", {{"cors", ""}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b", {{"object-lock", ""}}), "PutBucketObjectLockConfig");
  EXPECT_EQ(Route("GET", "/b", {{"object-lock", ""}}), "GetBucketObjectLockConfig");
  EXPECT_EQ(Route("DELETE", "/b", {{"object-lock", ""}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b/k", {{"retention", ""}, {"versionId", "v"}}), "PutObjectRetention");
  EXPECT_EQ(Route("GET", "/b/k", {{"legal-hold", ""}}), "GetObjectLegalHold");
  EXPECT_EQ(Route("GET", "/b", {{"retention", ""}}), "unknown");
  Query replication{{"replication", ""}};
  EXPECT_STREQ(UnsupportedSubresource(RouteRequest{"GET", false, false, &replication}),
               "replication");
  Query policy{{"policy", ""}};
  EXPECT_EQ(UnsupportedSubresource(RouteRequest{"GET", false, false, &policy}), nullptr);
  EXPECT_STREQ(UnsupportedSubresource(RouteRequest{"GET", false, true, &policy}), "policy");
  EXPECT_EQ(UnsupportedSubresource(RouteRequest{"GET", true, false, &replication}), nullptr);
}

// Every line has a name of its own and an action the policy language knows, and every operation
// with the same action agrees on what the action is on (iam::IsBucketAction reads it).
TEST(OperationsTest, TableIsConsistent) {
  std::set<std::string_view> names;
  for (const auto& op : kOperations) {
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_EQ(NameOf(op.op), op.name);
    EXPECT_TRUE(iam::IsKnownAction(op.action)) << op.name << ": " << op.action;
    EXPECT_EQ(iam::ActionFor(op.name), op.action);
    EXPECT_EQ(iam::IsBucketAction(op.action), op.on == On::kBucket) << op.name;
    // A line addressed to an object has an object action (a bucket-addressed one may act on
    // objects: DeleteObjects, POST Object).
    if (op.at == At::kObject) {
      EXPECT_EQ(op.on, On::kObject) << op.name;
    }
  }
  EXPECT_EQ(NameOf(S3Op::kUnknown), "unknown");
  EXPECT_EQ(InfoOf(S3Op::kCopyObject)->also, kReadsSource | kSetsAclAndTags);
  EXPECT_EQ(InfoOf(S3Op::kCopyObjectPart)->also, kReadsSource);
  EXPECT_EQ(InfoOf(S3Op::kDeleteMultipleObjects)->also, kPerObject);
}

// docs/s3-api.md's table of operations is generated from the table: this test fails when the two
// differ, and RDMASTOR_UPDATE_DOCS=1 has it rewrite the section (ctest -R DocsListEveryOperation
// after `RDMASTOR_UPDATE_DOCS=1 build/tests/s3_tests --gtest_filter='*DocsList*'`).
std::string RequestOf(const OpInfo& op) {
  std::string out = "`" + std::string(op.method) + " ";
  switch (op.at) {
    case At::kRoot:
      out += "/";
      break;
    case At::kBucket:
      out += "/bucket";
      break;
    case At::kObject:
      out += "/bucket/key";
      break;
    case At::kBucketOrRoot:
      out += "/[bucket]";
      break;
  }
  std::string query(op.subresource);
  std::string either;  // "a|b": either parameter
  if (auto bar = op.params.find('|'); bar != std::string_view::npos) {
    query += (query.empty() ? "" : "&") + std::string(op.params.substr(0, bar));
    either = " or `?" + std::string(op.params.substr(bar + 1)) + "`";
  } else if (!op.params.empty()) {
    query += (query.empty() ? "" : "&") + std::string(op.params);
  }
  if (!query.empty()) out += "?" + query;
  out += "`" + either;
  if (op.when == When::kCopySource) out += " with `x-amz-copy-source`";
  if (op.when == When::kFormUpload) out += ", `multipart/form-data` (a browser form)";
  if (op.when == When::kForceDelete) out += " with `x-minio-force-delete`";
  return out;
}

std::string AlsoOf(const OpInfo& op) {
  std::vector<std::string> parts;
  if (op.also & kReadsSource) parts.push_back("`s3:GetObject` on the copy source");
  if (op.also & kSetsAclAndTags)
    parts.push_back(
        "`s3:PutObjectAcl` when its ACL grants to others, `s3:PutObjectTagging` "
        "when it sets tags");
  if (op.also & kForceDeletes) parts.push_back("`s3:ForceDeleteBucket` on the bucket");
  if (op.also & kAndEachObject)
    parts.push_back(
        "the action again for each key it removes (in a versioned bucket "
        "`s3:DeleteObjectVersion`)");
  if (op.also & kShowsMetadata)
    parts.push_back(op.action == std::string_view("s3:ListBucketVersions")
                        ? "for each version, `s3:GetObjectVersion` to show its metadata and "
                          "`s3:GetObjectVersionTagging` its tags (left out otherwise)"
                        : "for each object, `s3:GetObject` to show its metadata and "
                          "`s3:GetObjectTagging` its tags (left out otherwise)");
  if (op.also & kPerObject)
    parts.push_back("instead of the request, each key its body names (a version: `...Version`)");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string GeneratedSection() {
  std::string out =
      "| Operation | Request | IAM action | Checked besides |\n"
      "|---|---|---|---|\n";
  for (const auto& op : kOperations) {
    const std::string on = op.at == At::kRoot     ? ""
                           : op.on == On::kBucket ? " on `arn:aws:s3:::bucket`"
                                                  : " on `arn:aws:s3:::bucket/key`";
    out += "| " + std::string(op.name) + " | " + RequestOf(op) + " | `" + std::string(op.action) +
           "`" + on + " | " + AlsoOf(op) + " |\n";
  }
  return out;
}

// The table's names are MinIO's; the hand-written tables of docs/s3-api.md use AWS's.
constexpr std::pair<std::string_view, std::string_view> kAwsNames[] = {
    {"ListenNotification", "ListenBucketNotification"},
    {"PutBucket", "CreateBucket"},
    {"DeleteMultipleObjects", "DeleteObjects"},
    {"PostPolicyBucket", "PostObject"},
    {"ListObjectsV1", "ListObjects (v1)"},
    {"ListObjectParts", "ListParts"},
    {"CopyObjectPart", "UploadPartCopy"},
    {"PutObjectPart", "UploadPart"},
    {"NewMultipartUpload", "CreateMultipartUpload"},
};

TEST(OperationsTest, DocsListEveryOperation) {
  const std::string path = std::string(RDMASTOR_SOURCE_DIR) + "/docs/s3-api.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream buf;
  buf << in.rdbuf();
  std::string doc = buf.str();
  const std::string begin = "<!-- operations: begin (generated from src/s3/operations.h) -->\n";
  const std::string end = "<!-- operations: end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << path << " lacks " << begin;
  ASSERT_NE(e, std::string::npos) << path << " lacks " << end;
  ASSERT_LT(b, e);
  const std::string want = GeneratedSection();
  const std::string have = doc.substr(b + begin.size(), e - b - begin.size());
  if (have != want && std::getenv("RDMASTOR_UPDATE_DOCS")) {
    doc.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(path) << doc;
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_EQ(have, want) << path << " is not the operation table: run with RDMASTOR_UPDATE_DOCS=1";
  // The hand-written tables name each operation too (by its AWS name where MinIO's differs), in
  // the first column of a row: its row says what of it is supported.
  std::string first_cells;
  std::istringstream lines(doc.substr(0, b));
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("| ")) first_cells += line.substr(0, line.find(" |", 1)) + "\n";
  }
  for (const auto& op : kOperations) {
    std::string_view aws = op.name;
    for (const auto& [minio, name] : kAwsNames)
      if (minio == op.name) aws = name;
    EXPECT_NE(first_cells.find(aws), std::string::npos)
        << aws << " has no row of its own in " << path;
  }
}

}  // namespace
}  // namespace rdmastor::s3
