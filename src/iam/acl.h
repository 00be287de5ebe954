// Canned ACLs (x-amz-acl) on buckets and objects: the names AWS defines, the grants each one
// stands for (what GetBucketAcl / GetObjectAcl show), and the allow statements those grants
// amount to, so that the one policy evaluator (iam/policy.h) enforces them.
//
// Only canned ACLs exist here: an explicit grant list is accepted when it equals the grants of a
// canned ACL (FromGrants) and refused otherwise, as are the x-amz-grant-* headers (the S3 layer).
// The owner's FULL_CONTROL grant is the owner's rights (s3/access.h, Authorize): every user owns
// what it creates, as an AWS account does (docs/access-control.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "iam/policy.h"

namespace rdmastor::iam {

enum class CannedAcl { kPrivate, kPublicRead, kPublicReadWrite, kAuthenticatedRead };

// The owner the server's root is shown as (the canonical id MinIO shows for its owner).
inline constexpr std::string_view kRootCanonicalId =
    "02d6176db174dc93cb1b899f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4";
inline constexpr std::string_view kRootDisplayName = "rdmastor";

inline constexpr std::string_view kAllUsersUri = "http://acs.amazonaws.com/groups/global/AllUsers";
inline constexpr std::string_view kAuthenticatedUsersUri =
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";

// An x-amz-acl value (or the POST form's `acl` field) as AWS accepts it. `object`: the request
// writes an object, where bucket-owner-read / bucket-owner-full-control are private here (the
// object owner is the bucket owner); on a bucket AWS ignores them, so they are private too.
// Errors: kInvalidArgument (ArgumentName x-amz-acl, as AWS) for a name AWS does not define,
// kNotImplemented for aws-exec-read and log-delivery-write (grants to AWS's own services).
Result<CannedAcl> ParseCannedAcl(std::string_view value);

// The stored form ("" for private, else the x-amz-acl name), and back (anything unknown: private,
// the safe reading of a record written by a newer server).
std::string StoredAcl(CannedAcl acl);
CannedAcl AclFromStored(std::string_view stored);
std::string_view AclName(CannedAcl acl);

// One grant as GetBucketAcl / GetObjectAcl show it.
struct Grant {
  bool group = false;  // xsi:type Group (uri) or CanonicalUser (id, display name)
  std::string id;
  std::string display_name;
  std::string uri;
  std::string permission;  // FULL_CONTROL | READ | WRITE

  bool operator==(const Grant&) const = default;
};

struct AclOwner {
  std::string id;  // canonical user id (CanonicalUserId)
  std::string display_name;
};

// How records name root as an owner where "" means something else (an object version's owner:
// "" = the bucket's owner). No user can have this name (IamStore::AddUser).
inline constexpr std::string_view kRootOwner = "root";

// The canonical user id of an owner: the fixed id of the server's root (owner "", kRootOwner or
// the root's access key), else a stable 64-hex id derived from the user's access key, shown with
// the access key as its display name.
AclOwner OwnerOf(std::string_view owner_access_key, std::string_view root_access_key);

// The grants `acl` stands for: the groups' first, the owner's last (the order S3 answers in).
std::vector<Grant> GrantsOf(CannedAcl acl, const AclOwner& owner);

// The canned ACL whose grants are exactly `grants` (in any order, duplicates ignored), or nullopt.
std::optional<CannedAcl> FromGrants(const std::vector<Grant>& grants, const AclOwner& owner);

// The allow statements the grants of `acl` amount to, for Evaluate (iam/policy.h):
//  - on a bucket: READ to AllUsers / AuthenticatedUsers allows s3:ListBucket,
//    s3:ListBucketVersions, s3:ListBucketMultipartUploads on it; WRITE (public-read-write) allows
//    s3:PutObject and s3:DeleteObject on its objects;
//  - on an object (resource "bucket/key"): READ allows s3:GetObject and s3:GetObjectVersion.
// AuthenticatedUsers is every caller that is not anonymous. Private: no statement.
Policy BucketAclPolicy(CannedAcl acl, std::string_view bucket);
Policy ObjectAclPolicy(CannedAcl acl, std::string_view bucket, std::string_view key);

}  // namespace rdmastor::iam
