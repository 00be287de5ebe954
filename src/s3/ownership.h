// Who owns what, as AWS documents it between accounts: every user (and root) is an owner with its
// own canonical id; a bucket belongs to its creator, an object version to its writer unless the
// bucket's OwnershipControls give it to the bucket owner. Also the two bucket settings that
// govern ACLs and public access: OwnershipControls (Put/Get/DeleteBucketOwnershipControls,
// BucketInfo::configs["ownership"]) and PublicAccessBlock (Put/Get/DeletePublicAccessBlock,
// BucketInfo::configs["public-access-block"], PublicAccessBlockXml's form). How ownership, ACLs
// and policies combine is docs/access-control.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "iam/acl.h"
#include "iam/store.h"
#include "s3/access.h"
#include "s3/http_types.h"
#include "s3/xml.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

struct Env;
struct Reply;
struct S3Request;

inline constexpr const char* kOwnershipConfigName = "ownership";
inline constexpr const char* kPublicAccessBlockConfigName = "public-access-block";

// An owner as version records and upload records keep it (storage/version_record.h `owner`):
// "" = the bucket's owner, iam::kRootOwner = root, else a user's access key.
// The owner a request's caller is recorded as (root: iam::kRootOwner).
std::string OwnerKeyOf(const Caller& who);

// The owner `owner_key` is shown as (ID, DisplayName); "" = the bucket's owner `bucket_owner`
// (a bucket access record's owner: "" = root).
Owner OwnerShown(const iam::IamStore& iam, std::string_view owner_key,
                 std::string_view bucket_owner = {});

// The names a listing of `bucket` shows owners under: the bucket's owner, and every other one.
struct ListingOwners {
  Owner bucket;
  OwnerNames names;
};
ListingOwners ListingOwnersOf(iam::IamStore& iam, const std::string& bucket);

// The bucket's ObjectOwnership ("" = none set: objects belong to their writer, as ObjectWriter).
std::string ObjectOwnershipOf(storage::ObjectLayer& store, const std::string& bucket);

// The owner a new object version written by `who` gets, and whether the request's ACL may be
// kept, under the bucket's ObjectOwnership: BucketOwnerEnforced gives every object to the bucket
// owner and refuses any ACL but bucket-owner-full-control (400 AccessControlListNotSupported);
// BucketOwnerPreferred gives it to the bucket owner when the writer sends
// bucket-owner-full-control; otherwise (ObjectWriter, none) the writer owns it. Also applies
// BlockPublicAcls: a public canned ACL or grant is refused (403 AccessDenied). `acl_header`: the
// x-amz-acl value (or the POST form's acl field), nullptr when none; `grants`: an x-amz-grant-*
// header was sent.
Result<std::string> NewObjectOwner(iam::IamStore& iam, storage::ObjectLayer& store,
                                   const std::string& bucket, const Caller& who,
                                   const std::string* acl_header, bool grants);

// The bucket's PublicAccessBlock (all false when none is set).
PublicAccessBlock PublicAccessBlockOf(storage::ObjectLayer& store, const std::string& bucket);

// What of it changes an authorization decision (s3/access.h, Authorize).
PublicAccess PublicAccessOf(storage::ObjectLayer& store, const std::string& bucket);

// Does a canned ACL (or explicit grants) make the resource public, as AWS's BlockPublicAcls
// judges it (public-read, public-read-write, authenticated-read)?
bool IsPublicAcl(iam::CannedAcl acl);

// ?ownershipControls and ?publicAccessBlock on a bucket.
Reply HandleOwnershipControls(const Env& env, S3Request& r);
Reply HandlePublicAccessBlock(const Env& env, S3Request& r);

}  // namespace rdmastor::s3
