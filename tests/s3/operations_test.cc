#include "s3/operations.h"

#include <gtest/gtest.h>

#include <set>
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
  EXPECT_EQ(Route("GET", "/b", {{"versions", ""}}), "ListObjectVersions");
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
  // ?policy and ?encryption are bucket subresources only; ?cors is none at all.
  EXPECT_EQ(Route("GET", "/b/k", {{"policy", ""}}), "unknown");
  EXPECT_EQ(Route("PUT", "/b/k", {{"encryption", ""}}), "unknown");
  EXPECT_EQ(Route("GET", "/b", {{"cors", ""}, {"tagging", ""}}), "unknown");
  Query cors{{"cors", ""}};
  EXPECT_STREQ(UnsupportedSubresource(RouteRequest{"GET", false, false, &cors}), "cors");
  Query policy{{"policy", ""}};
  EXPECT_EQ(UnsupportedSubresource(RouteRequest{"GET", false, false, &policy}), nullptr);
  EXPECT_STREQ(UnsupportedSubresource(RouteRequest{"GET", false, true, &policy}), "policy");
  EXPECT_EQ(UnsupportedSubresource(RouteRequest{"GET", true, false, &cors}), nullptr);
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

}  // namespace
}  // namespace rdmastor::s3
