#include "iam/acl.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "iam/actions.h"

namespace rdmastor::iam {
namespace {

const Principal kAnonymous{true, false, {}};
const Principal kAlice{false, false, "alice"};

Decision Check(const Policy& p, std::string_view action, std::string_view resource,
               const Principal& who) {
  ConditionContext ctx{{"aws:principaltype", who.anonymous ? "Anonymous" : "User"}};
  return Evaluate(p, Request{action, resource, &who, &ctx});
}

TEST(CannedAcl, NamesAsAwsAcceptsThem) {
  for (CannedAcl a : {CannedAcl::kPrivate, CannedAcl::kPublicRead, CannedAcl::kPublicReadWrite,
                      CannedAcl::kAuthenticatedRead}) {
    EXPECT_EQ(*ParseCannedAcl(AclName(a)), a);
    EXPECT_EQ(AclFromStored(StoredAcl(a)), a);
  }
  EXPECT_EQ(*ParseCannedAcl("public-read"), CannedAcl::kPublicRead);
  EXPECT_EQ(*ParseCannedAcl("authenticated-read"), CannedAcl::kAuthenticatedRead);
  EXPECT_EQ(*ParseCannedAcl("bucket-owner-full-control"), CannedAcl::kPrivate);
  auto bad = ParseCannedAcl("Public-Read");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  ASSERT_EQ(bad.error().details.size(), 2u);
  EXPECT_EQ(bad.error().details[0].second, "x-amz-acl");
  EXPECT_EQ(ParseCannedAcl("log-delivery-write").error().code, ErrorCode::kNotImplemented);
  // A hostile value is echoed bounded.
  EXPECT_EQ(ParseCannedAcl(std::string(10000, 'x')).error().details[1].second.size(), 64u);
  EXPECT_EQ(StoredAcl(CannedAcl::kPrivate), "");
  EXPECT_EQ(AclFromStored(StoredAcl(CannedAcl::kPublicReadWrite)), CannedAcl::kPublicReadWrite);
  EXPECT_EQ(AclFromStored("something-newer"), CannedAcl::kPrivate);
}

TEST(CannedAcl, GrantsRoundTripThroughFromGrants) {
  const AclOwner owner = OwnerOf("alice", "root");
  EXPECT_EQ(owner.display_name, "alice");
  EXPECT_EQ(owner.id.size(), 64u);
  EXPECT_EQ(OwnerOf("", "root").id, kRootCanonicalId);
  EXPECT_EQ(OwnerOf("root", "root").id, kRootCanonicalId);
  for (auto acl : {CannedAcl::kPrivate, CannedAcl::kPublicRead, CannedAcl::kPublicReadWrite,
                   CannedAcl::kAuthenticatedRead}) {
    auto grants = GrantsOf(acl, owner);
    // The owner's grant last, as S3 answers.
    EXPECT_EQ(grants.back().permission, "FULL_CONTROL");
    EXPECT_EQ(grants.back().id, owner.id);
    EXPECT_EQ(FromGrants(grants, owner), acl);
    std::reverse(grants.begin(), grants.end());
    EXPECT_EQ(FromGrants(grants, owner), acl);  // any order
  }
  // Another owner's grant, a READ_ACP grant, or no owner grant: no canned ACL.
  auto other = GrantsOf(CannedAcl::kPublicRead, OwnerOf("bob", "root"));
  EXPECT_FALSE(FromGrants(other, owner));
  auto extra = GrantsOf(CannedAcl::kPrivate, owner);
  extra.push_back(Grant{true, {}, {}, std::string(kAllUsersUri), "READ_ACP"});
  EXPECT_FALSE(FromGrants(extra, owner));
  EXPECT_FALSE(FromGrants({}, owner));
}

TEST(CannedAcl, PoliciesGrantWhatAwsMapsThemTo) {
  auto pub = BucketAclPolicy(CannedAcl::kPublicRead, "b");
  EXPECT_EQ(Check(pub, "s3:ListBucket", "b", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(pub, "s3:ListBucketVersions", "b", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(pub, "s3:PutObject", "b/k", kAnonymous), Decision::kNotApplicable);
  EXPECT_EQ(Check(pub, "s3:GetObject", "b/k", kAnonymous), Decision::kNotApplicable);
  EXPECT_EQ(Check(pub, "s3:ListBucket", "other", kAnonymous), Decision::kNotApplicable);
  auto rw = BucketAclPolicy(CannedAcl::kPublicReadWrite, "b");
  EXPECT_EQ(Check(rw, "s3:PutObject", "b/k", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(rw, "s3:DeleteObject", "b/a/b", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(rw, "s3:PutBucketAcl", "b", kAnonymous), Decision::kNotApplicable);
  auto auth = BucketAclPolicy(CannedAcl::kAuthenticatedRead, "b");
  EXPECT_EQ(Check(auth, "s3:ListBucket", "b", kAnonymous), Decision::kNotApplicable);
  EXPECT_EQ(Check(auth, "s3:ListBucket", "b", kAlice), Decision::kAllow);
  EXPECT_TRUE(BucketAclPolicy(CannedAcl::kPrivate, "b").statements.empty());

  auto obj = ObjectAclPolicy(CannedAcl::kPublicRead, "b", "dir/*?key");
  EXPECT_EQ(Check(obj, "s3:GetObject", "b/dir/*?key", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(obj, "s3:GetObjectVersion", "b/dir/*?key", kAnonymous), Decision::kAllow);
  EXPECT_EQ(Check(obj, "s3:PutObject", "b/dir/*?key", kAnonymous), Decision::kNotApplicable);
  EXPECT_EQ(Check(obj, "s3:GetObjectAcl", "b/dir/*?key", kAnonymous), Decision::kNotApplicable);
  auto obj_auth = ObjectAclPolicy(CannedAcl::kAuthenticatedRead, "b", "k");
  EXPECT_EQ(Check(obj_auth, "s3:GetObject", "b/k", kAnonymous), Decision::kNotApplicable);
  EXPECT_EQ(Check(obj_auth, "s3:GetObject", "b/k", kAlice), Decision::kAllow);
}

TEST(CannedAcl, VersionActions) {
  EXPECT_EQ(VersionAction("s3:GetObject"), "s3:GetObjectVersion");
  EXPECT_EQ(VersionAction("s3:DeleteObject"), "s3:DeleteObjectVersion");
  EXPECT_EQ(VersionAction("s3:PutObjectTagging"), "s3:PutObjectVersionTagging");
  EXPECT_EQ(VersionAction("s3:GetObjectAcl"), "s3:GetObjectVersionAcl");
  EXPECT_EQ(VersionAction("s3:GetObjectAttributes"), "s3:GetObjectVersionAttributes");
  EXPECT_EQ(VersionAction("s3:PutObject"), "s3:PutObject");
  for (auto a :
       {"s3:GetObjectVersion", "s3:DeleteObjectVersion", "s3:GetObjectVersionTagging",
        "s3:PutObjectVersionTagging", "s3:DeleteObjectVersionTagging", "s3:GetObjectVersionAcl",
        "s3:PutObjectVersionAcl", "s3:GetObjectVersionAttributes"})
    EXPECT_TRUE(IsKnownAction(a)) << a;
}

}  // namespace
}  // namespace rdmastor::iam
