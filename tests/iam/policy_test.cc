#include "iam/policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "iam/actions.h"

namespace rdmastor::iam {
namespace {

Policy MustParse(std::string_view json, PolicyKind kind = PolicyKind::kBucket,
                 std::string_view bucket = "photos") {
  auto p = ParsePolicy(json, kind, bucket);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message) << "\n" << json;
  return p.ok() ? *p : Policy{};
}

std::string RefusalMessage(std::string_view json, PolicyKind kind = PolicyKind::kBucket,
                           std::string_view bucket = "photos") {
  auto p = ParsePolicy(json, kind, bucket);
  if (p.ok()) return "(accepted)";
  EXPECT_EQ(p.error().code, ErrorCode::kMalformedPolicy) << p.error().message;
  return p.error().message;
}

Decision Check(const Policy& p, std::string_view action, std::string_view resource,
               const Principal& who = Principal{true, false, {}},
               const ConditionContext& ctx = {}) {
  return Evaluate(p, Request{action, resource, &who, &ctx});
}

constexpr const char* kPublicRead = R"({
  "Version": "2012-10-17",
  "Statement": [{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
                 "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::photos/*"]}]})";

TEST(WildcardTest, Basics) {
  EXPECT_TRUE(WildcardMatch("*", ""));
  EXPECT_TRUE(WildcardMatch("*", "anything/at/all"));
  EXPECT_TRUE(WildcardMatch("photos/*", "photos/a/b.jpg"));
  EXPECT_FALSE(WildcardMatch("photos/*", "photos"));
  EXPECT_TRUE(WildcardMatch("a?c", "abc"));
  EXPECT_FALSE(WildcardMatch("a?c", "ac"));
  EXPECT_TRUE(WildcardMatch("*.jpg", "x/y.jpg"));
  EXPECT_FALSE(WildcardMatch("*.jpg", "x/y.jpeg"));
  EXPECT_TRUE(WildcardMatch("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(WildcardMatch("a*b*c", "aXXbYY"));
  EXPECT_FALSE(WildcardMatch("S3:GetObject", "s3:getobject"));
  EXPECT_TRUE(WildcardMatch("S3:Get*", "s3:getobject", true));
}

TEST(WildcardTest, HostilePatternsStayCheap) {
  // A pattern of many stars against a long subject that almost matches: bounded by
  // |pattern| x |subject| steps, not exponential.
  std::string pattern, subject(1024, 'a');
  for (int i = 0; i < 200; ++i) pattern += "*a";
  pattern += "b";
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(WildcardMatch(pattern, subject));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(PolicyParseTest, AcceptsCommonDocuments) {
  auto p = MustParse(kPublicRead);
  ASSERT_EQ(p.statements.size(), 1u);
  EXPECT_TRUE(p.statements[0].any_principal);
  EXPECT_EQ(p.statements[0].actions[0], "s3:getobject");
  EXPECT_EQ(p.statements[0].resources[0], "photos/*");
  // A single statement object, a string action, {"AWS": [...]} principals, conditions.
  auto q = MustParse(R"({"Statement": {"Effect": "Deny",
      "Principal": {"AWS": ["arn:aws:iam::123456789012:user/alice", "arn:aws:iam::*:root"]},
      "Action": "s3:*", "NotResource": "arn:aws:s3:::photos/public/*",
      "Condition": {"Bool": {"aws:SecureTransport": false},
                    "IpAddressIfExists": {"aws:SourceIp": ["10.0.0.0/8", "2001:db8::/32"]},
                    "NumericLessThan": {"s3:max-keys": 10}}}})");
  ASSERT_EQ(q.statements.size(), 1u);
  const auto& st = q.statements[0];
  EXPECT_FALSE(st.allow);
  EXPECT_EQ(st.principals, (std::vector<std::string>{"alice", "root"}));
  EXPECT_TRUE(st.not_resource);
  ASSERT_EQ(st.conditions.size(), 3u);
}

TEST(PolicyParseTest, RefusesWithAwsMessages) {
  EXPECT_EQ(RefusalMessage("not json"),
            "Policies must be valid JSON and the first byte must be '{'");
  EXPECT_EQ(RefusalMessage("{\"Statement\": [}"),
            "Policies must be valid JSON and the first byte must be '{'");
  EXPECT_EQ(RefusalMessage("[]"), "Policies must be valid JSON and the first byte must be '{'");
  EXPECT_EQ(RefusalMessage("{}"), "Missing required field Statement");
  EXPECT_EQ(RefusalMessage(R"({"Statement": []})"), "Missing required field Statement");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                              "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Missing required field Principal");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Principal": "*", "Action": "s3:GetObject",
                                              "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Missing required field Effect");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Maybe", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Invalid effect: Maybe");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Missing required field Action");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject"}]})"),
            "Missing required field Resource");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:FlyToTheMoon", "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Policy has invalid action");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "ec2:RunInstances", "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Policy has invalid action");
  // A resource in another bucket, or not an S3 ARN.
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}]})"),
            "Policy has invalid resource");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "photos/*"}]})"),
            "Policy has invalid resource");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": {"AWS": "bob"},
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Invalid principal in policy");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow",
                              "Principal": {"Service": "s3.amazonaws.com"},
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})"),
            "Invalid principal in policy");
  EXPECT_EQ(RefusalMessage(R"({"Version": "2020-01-01", "Statement": [{"Effect": "Allow",
                              "Principal": "*", "Action": "s3:GetObject",
                              "Resource": "arn:aws:s3:::photos/*"}]})"),
            "The policy must contain a valid version string");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*",
                              "Condition": {"StringSortOf": {"s3:prefix": "a"}}}]})"),
            "Invalid Condition type : StringSortOf");
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*",
                              "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.300/8"}}}]})"),
            "Invalid IP address or CIDR in condition: 10.0.0.300/8");
  // Identity policies carry no principal.
  EXPECT_EQ(RefusalMessage(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
                              "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"}]})",
                           PolicyKind::kIdentity),
            "Policy document should not specify a principal.");
}

TEST(PolicyParseTest, HostileDocumentsAreBounded) {
  std::string huge = R"({"Statement": [)";
  while (huge.size() <= kMaxPolicyBytes) huge += R"({"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"},)";
  huge.back() = ']';
  huge += "}";
  auto p = ParsePolicy(huge, PolicyKind::kBucket, "photos");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kPolicyTooLarge);

  std::string deep = R"({"Statement": )" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_EQ(RefusalMessage(deep), "Policy document is nested too deeply");
  // Brackets inside strings do not count.
  std::string quoted = R"({"Id": ")" + std::string(100, '[') + R"(", "Statement": [{"Effect": "Allow",
      "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})";
  MustParse(quoted);
}

TEST(PolicyEvalTest, PublicReadGrantsGetOnly) {
  auto p = MustParse(kPublicRead);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/cat.jpg"), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:PutObject", "photos/cat.jpg"), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos"), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:GetObject", "other/cat.jpg"), Decision::kNotApplicable);
}

TEST(PolicyEvalTest, ExplicitDenyWins) {
  auto p = MustParse(R"({"Statement": [
      {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::photos/*"},
      {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
       "Resource": "arn:aws:s3:::photos/keep/*"}]})");
  EXPECT_EQ(Check(p, "s3:DeleteObject", "photos/tmp/x"), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:DeleteObject", "photos/keep/x"), Decision::kDeny);
  EXPECT_EQ(Check(p, "s3:getobject", "photos/keep/x"), Decision::kAllow);  // actions any case
}

TEST(PolicyEvalTest, NotActionAndNotResource) {
  auto p = MustParse(R"({"Statement": [
      {"Effect": "Allow", "Principal": "*", "NotAction": ["s3:Delete*", "s3:Put*"],
       "NotResource": "arn:aws:s3:::photos/private/*"}]})");
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a"), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos"), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:PutObject", "photos/a"), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/private/a"), Decision::kNotApplicable);
}

TEST(PolicyEvalTest, Principals) {
  auto p = MustParse(R"({"Statement": [{"Effect": "Allow",
      "Principal": {"AWS": ["arn:aws:iam::123456789012:user/alice"]},
      "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})");
  Principal alice{false, false, "alice"}, bob{false, false, "bob"}, anon{true, false, {}},
      root{false, true, "minioadmin"};
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", alice), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", bob), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", anon), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", root), Decision::kNotApplicable);
  auto any = MustParse(R"({"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"},
      "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]})");
  EXPECT_EQ(Check(any, "s3:GetObject", "photos/a", anon), Decision::kAllow);
  EXPECT_EQ(Check(any, "s3:GetObject", "photos/a", bob), Decision::kAllow);
}

TEST(PolicyEvalTest, IdentityPolicyAppliesToItsUser) {
  auto p = MustParse(R"({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
      "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": ["arn:aws:s3:::*"]}]})",
                     PolicyKind::kIdentity, "");
  Principal alice{false, false, "alice"};
  EXPECT_EQ(Check(p, "s3:GetObject", "any/key", alice), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:ListBucket", "any", alice), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:PutObject", "any/key", alice), Decision::kNotApplicable);
  // MinIO's consoleAdmin-style statements name other services; they parse and never match S3.
  MustParse(R"({"Statement": [{"Effect": "Allow", "Action": ["admin:*", "kms:*"],
      "Resource": ["arn:aws:s3:::*"]}]})",
            PolicyKind::kIdentity, "");
}

TEST(PolicyEvalTest, StringConditionsOnListing) {
  auto p = MustParse(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
      "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::photos",
      "Condition": {"StringLike": {"s3:prefix": ["public/*", ""]},
                    "StringEquals": {"s3:delimiter": "/"}}}]})");
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:prefix", "public/2024/"}, {"s3:delimiter", "/"}}),
            Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:prefix", ""}, {"s3:delimiter", "/"}}),
            Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:prefix", "private/"}, {"s3:delimiter", "/"}}),
            Decision::kNotApplicable);
  // Missing keys do not match a positive operator.
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:prefix", "public/"}}),
            Decision::kNotApplicable);
}

TEST(PolicyEvalTest, NegatedAndIfExistsAndNull) {
  auto p = MustParse(R"({"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
      "Resource": "arn:aws:s3:::photos/*",
      "Condition": {"StringNotEquals": {"s3:x-amz-acl": "private"}}}]})");
  EXPECT_EQ(Check(p, "s3:PutObject", "photos/a", {}, {{"s3:x-amz-acl", "public-read"}}),
            Decision::kDeny);
  EXPECT_EQ(Check(p, "s3:PutObject", "photos/a", {}, {{"s3:x-amz-acl", "private"}}),
            Decision::kNotApplicable);
  // A negated operator holds when the key is absent.
  EXPECT_EQ(Check(p, "s3:PutObject", "photos/a"), Decision::kDeny);

  auto ie = MustParse(R"({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
      "Resource": "arn:aws:s3:::photos/*",
      "Condition": {"StringEqualsIfExists": {"aws:Referer": "https://example.com/"}}}]})");
  EXPECT_EQ(Check(ie, "s3:GetObject", "photos/a"), Decision::kAllow);
  EXPECT_EQ(Check(ie, "s3:GetObject", "photos/a", {}, {{"aws:referer", "https://evil/"}}),
            Decision::kNotApplicable);

  auto null = MustParse(R"({"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
      "Resource": "arn:aws:s3:::photos/*", "Condition": {"Null": {"aws:Referer": "true"}}}]})");
  EXPECT_EQ(Check(null, "s3:GetObject", "photos/a"), Decision::kDeny);
  EXPECT_EQ(Check(null, "s3:GetObject", "photos/a", {}, {{"aws:referer", "x"}}),
            Decision::kNotApplicable);
}

TEST(PolicyEvalTest, SourceIpAndSecureTransport) {
  auto p = MustParse(R"({"Statement": [
      {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*",
       "Condition": {"IpAddress": {"aws:SourceIp": ["192.168.1.0/24", "2001:db8::/32"]}}},
      {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::photos/*",
       "Condition": {"Bool": {"aws:SecureTransport": "false"}, "NotIpAddress": {"aws:SourceIp": "127.0.0.1/32"}}}]})");
  auto ctx = [](std::string ip, bool tls) {
    return ConditionContext{{"aws:sourceip", ip}, {"aws:securetransport", tls ? "true" : "false"}};
  };
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("192.168.1.77", true)), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("2001:db8:1::5", true)), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("192.168.2.1", true)),
            Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("192.168.1.77", false)), Decision::kDeny);
  // ::ffff:-mapped IPv4 (what a dual-stack socket reports) is the IPv4 address.
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("::ffff:192.168.1.9", true)),
            Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:GetObject", "photos/a", {}, ctx("not-an-ip", true)),
            Decision::kNotApplicable);
}

TEST(PolicyEvalTest, NumericConditions) {
  auto p = MustParse(R"({"Statement": [{"Effect": "Allow", "Principal": "*",
      "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::photos",
      "Condition": {"NumericLessThanEquals": {"s3:max-keys": "10"}}}]})");
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:max-keys", "10"}}), Decision::kAllow);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:max-keys", "11"}}), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos", {}, {{"s3:max-keys", "x"}}), Decision::kNotApplicable);
  EXPECT_EQ(Check(p, "s3:ListBucket", "photos"), Decision::kNotApplicable);
}

TEST(ActionsTest, EveryRouteHasItsAwsAction) {
  EXPECT_EQ(ActionFor("GetObject"), "s3:GetObject");
  EXPECT_EQ(ActionFor("HeadObject"), "s3:GetObject");
  EXPECT_EQ(ActionFor("HeadBucket"), "s3:ListBucket");
  EXPECT_EQ(ActionFor("ListObjectsV1"), "s3:ListBucket");
  EXPECT_EQ(ActionFor("ListObjectsV2"), "s3:ListBucket");
  EXPECT_EQ(ActionFor("ListMultipartUploads"), "s3:ListBucketMultipartUploads");
  EXPECT_EQ(ActionFor("ListObjectVersions"), "s3:ListBucketVersions");
  EXPECT_EQ(ActionFor("ListObjectParts"), "s3:ListMultipartUploadParts");
  EXPECT_EQ(ActionFor("PutObjectPart"), "s3:PutObject");
  EXPECT_EQ(ActionFor("CompleteMultipartUpload"), "s3:PutObject");
  EXPECT_EQ(ActionFor("AbortMultipartUpload"), "s3:AbortMultipartUpload");
  EXPECT_EQ(ActionFor("DeleteMultipleObjects"), "s3:DeleteObject");
  EXPECT_EQ(ActionFor("DeleteBucketTagging"), "s3:PutBucketTagging");
  EXPECT_EQ(ActionFor("ListBuckets"), "s3:ListAllMyBuckets");
  EXPECT_EQ(ActionFor("PutBucket"), "s3:CreateBucket");
  EXPECT_EQ(ActionFor("GetBucketPolicyStatus"), "s3:GetBucketPolicyStatus");
  EXPECT_EQ(ActionFor("unknown"), "");
  // Every mapped action is one the policy language knows.
  for (const char* api :
       {"ListBuckets", "PutBucket", "HeadBucket", "DeleteBucket", "GetBucketLocation",
        "GetBucketVersioning", "PutBucketVersioning", "ListObjectsV1", "ListObjectsV2",
        "ListObjectVersions", "ListMultipartUploads", "DeleteMultipleObjects", "PutBucketTagging",
        "GetBucketTagging", "DeleteBucketTagging", "PutBucketPolicy", "GetBucketPolicy",
        "DeleteBucketPolicy", "GetBucketPolicyStatus", "PutBucketAcl", "GetBucketAcl",
        "ListenNotification", "PostPolicyBucket", "GetObject", "HeadObject", "GetObjectAttributes",
        "PutObject", "CopyObject", "NewMultipartUpload", "PutObjectPart", "CopyObjectPart",
        "CompleteMultipartUpload", "AbortMultipartUpload", "ListObjectParts", "DeleteObject",
        "PutObjectTagging", "GetObjectTagging", "DeleteObjectTagging", "PutObjectAcl",
        "GetObjectAcl"}) {
    EXPECT_TRUE(IsKnownAction(ActionFor(api))) << api;
  }
  EXPECT_TRUE(IsBucketAction("s3:ListBucket"));
  EXPECT_FALSE(IsBucketAction("s3:GetObject"));
}

}  // namespace
}  // namespace rdmastor::iam
