// Owners, OwnershipControls and PublicAccessBlock (s3/ownership.h).
#include "s3/ownership.h"

#include "s3/handlers.h"

namespace rdmastor::s3 {

std::string OwnerKeyOf(const Caller& who) {
  return who.root() ? std::string(iam::kRootOwner) : who.access_key;
}

Owner OwnerShown(const iam::IamStore& iam, std::string_view owner_key,
                 std::string_view bucket_owner) {
  const iam::AclOwner o =
      iam::OwnerOf(owner_key.empty() ? bucket_owner : owner_key, iam.root_access_key());
  return Owner{o.id, o.display_name};
}

ListingOwners ListingOwnersOf(iam::IamStore& iam, const std::string& bucket) {
  const std::string bucket_owner = iam.CachedBucketAccess(bucket).owner;
  return ListingOwners{OwnerShown(iam, bucket_owner),
                       [&iam](std::string_view key) { return OwnerShown(iam, key); }};
}

std::string ObjectOwnershipOf(storage::ObjectLayer& store, const std::string& bucket) {
  auto stored = store.BucketConfig(bucket, kOwnershipConfigName);
  return stored.ok() ? *stored : std::string();
}

PublicAccessBlock PublicAccessBlockOf(storage::ObjectLayer& store, const std::string& bucket) {
  auto stored = store.BucketConfig(bucket, kPublicAccessBlockConfigName);
  if (!stored.ok() || stored->empty()) return {};
  auto parsed = ParsePublicAccessBlockXml(*stored);
  // A record this server wrote always parses; one that does not blocks everything (fail closed).
  return parsed.ok() ? *parsed : PublicAccessBlock{true, true, true, true};
}

PublicAccess PublicAccessOf(storage::ObjectLayer& store, const std::string& bucket) {
  const PublicAccessBlock block = PublicAccessBlockOf(store, bucket);
  return PublicAccess{block.ignore_public_acls, block.restrict_public_buckets};
}

bool IsPublicAcl(iam::CannedAcl acl) { return acl != iam::CannedAcl::kPrivate; }

Result<std::string> NewObjectOwner(iam::IamStore& iam, storage::ObjectLayer& store,
                                   const std::string& bucket, const Caller& who,
                                   const std::string* acl_header, bool grants) {
  const std::string acl = acl_header ? ToLower(*acl_header) : std::string();
  const std::string ownership = ObjectOwnershipOf(store, bucket);
  if (ownership == "BucketOwnerEnforced") {
    if (grants || (acl_header && acl != "bucket-owner-full-control"))
      return MakeError(ErrorCode::kAccessControlListNotSupported);
    return std::string();
  }
  if (grants || acl_header) {
    auto canned = acl_header ? iam::ParseCannedAcl(acl) : Result<iam::CannedAcl>(iam::CannedAcl{});
    if ((grants || (canned.ok() && IsPublicAcl(*canned))) &&
        PublicAccessBlockOf(store, bucket).block_public_acls)
      return MakeError(ErrorCode::kAccessDenied);
  }
  if (ownership == "BucketOwnerPreferred" && acl == "bucket-owner-full-control")
    return std::string();
  // The writer owns it; the bucket owner's own objects are recorded as "" (the bucket's owner).
  const std::string bucket_owner = iam.CachedBucketAccess(bucket).owner;
  if (who.anonymous()) return std::string();
  if (who.root() ? bucket_owner.empty() : bucket_owner == who.access_key) return std::string();
  return OwnerKeyOf(who);
}

Reply HandleOwnershipControls(const Env& env, S3Request& r) {
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return info.error();
  if (r.op == S3Op::kGetBucketOwnershipControls) {
    const std::string ownership = ObjectOwnershipOf(env.store, r.bucket);
    if (ownership.empty()) return MakeError(ErrorCode::kOwnershipControlsNotFound);
    return XmlReply(OwnershipControlsXml(ownership));
  }
  if (r.op == S3Op::kDeleteBucketOwnershipControls) {
    if (auto st = env.store.SetBucketConfig(r.bucket, kOwnershipConfigName, ""); !st.ok())
      return st.error();
    return EmptyReply(204);
  }
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto ownership = ParseOwnershipControlsXml(*body);
  if (!ownership.ok()) return ownership.error();
  // AWS: ACLs are disabled only on a bucket whose own ACL grants nothing to others.
  if (*ownership == "BucketOwnerEnforced" &&
      IsPublicAcl(iam::AclFromStored(env.iam->CachedBucketAccess(r.bucket).acl)))
    return MakeError(ErrorCode::kInvalidBucketAclWithObjectOwnership);
  if (auto st = env.store.SetBucketConfig(r.bucket, kOwnershipConfigName, *ownership); !st.ok())
    return st.error();
  return EmptyReply(200);
}

Reply HandlePublicAccessBlock(const Env& env, S3Request& r) {
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return info.error();
  if (r.op == S3Op::kGetPublicAccessBlock) {
    auto stored = env.store.BucketConfig(r.bucket, kPublicAccessBlockConfigName);
    if (!stored.ok()) return stored.error();
    if (stored->empty()) return MakeError(ErrorCode::kNoSuchPublicAccessBlockConfiguration);
    return XmlReply(*stored);
  }
  if (r.op == S3Op::kDeletePublicAccessBlock) {
    if (auto st = env.store.SetBucketConfig(r.bucket, kPublicAccessBlockConfigName, ""); !st.ok())
      return st.error();
    return EmptyReply(204);
  }
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto block = ParsePublicAccessBlockXml(*body);
  if (!block.ok()) return block.error();
  if (auto st = env.store.SetBucketConfig(r.bucket, kPublicAccessBlockConfigName,
                                          PublicAccessBlockXml(*block));
      !st.ok())
    return st.error();
  return EmptyReply(200);
}

}  // namespace rdmastor::s3
