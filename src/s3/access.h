// Access control for S3 requests: who is asking (root, a user, anonymous), what the request
// context offers to policy conditions, the decision over the bucket policy, the user's policies
// and canned ACLs, and the ?policy / ?policyStatus subresource handlers.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "iam/acl.h"
#include "iam/policy.h"
#include "iam/store.h"
#include "s3/http_types.h"
#include "s3/sigv4.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

struct Caller {
  enum class Kind { kRoot, kUser, kAnonymous };
  Kind kind = Kind::kAnonymous;
  std::string access_key;  // empty for anonymous

  bool root() const { return kind == Kind::kRoot; }
  bool anonymous() const { return kind == Kind::kAnonymous; }
  iam::Principal principal() const {
    return iam::Principal{kind == Kind::kAnonymous, kind == Kind::kRoot, access_key};
  }
};

// The account id of this deployment (there is one account: root and every user belong to it, and
// it owns every bucket): `configured` (RDMASTOR_ACCOUNT_ID) when set, else 12 digits derived from
// the deployment id, the same on every node.
std::string AccountId(std::string_view configured, std::string_view deployment_id);

// x-amz-expected-bucket-owner (and x-amz-source-expected-bucket-owner, a copy's source bucket), as
// AWS checks them: not an account id (12 digits): 400 InvalidBucketOwnerAWSAccountID; another
// account than `account_id`: 403 AccessDenied.
Status CheckExpectedBucketOwner(const HttpRequest& req, std::string_view account_id);

// The condition keys a request offers: aws:SourceIp, aws:SecureTransport, aws:CurrentTime,
// aws:EpochTime, aws:UserAgent, aws:Referer, aws:username / aws:userid, aws:PrincipalType,
// s3:prefix / s3:delimiter / s3:max-keys (when in the query), s3:x-amz-acl and the other
// x-amz-* request headers AWS lists as keys, s3:signatureversion, s3:authType, s3:versionid,
// s3:RequestObjectTag/<key> for each tag of x-amz-tagging. (s3:ExistingObjectTag/<key>: added by
// Authorize from the object, where a policy uses them.)
// `form`: a browser POST's fields as PutObject's headers ("acl" as x-amz-acl); the x-amz-* keys
// are then taken from them alone, never from the POST's own (unsigned) headers.
iam::ConditionContext ConditionsFor(const HttpRequest& req,
                                    const std::vector<std::pair<std::string, std::string>>& query,
                                    bool secure_transport, const Caller& who,
                                    const AuthContext* auth, const HeaderList* form = nullptr);

// What the object (or multipart upload) a request addresses brings to a decision: its canned ACL
// and its owner (storage/version_record.h `owner`: "" = the bucket's owner). Read only when a
// grant could decide.
struct ObjectAccess {
  iam::CannedAcl acl = iam::CannedAcl::kPrivate;
  std::string owner;
  std::string tags;     // canonical form (s3/tagging.h): the s3:ExistingObjectTag/<key> keys
  bool exists = false;  // a missing object (or version, or a delete marker) grants nothing
};
using ObjectAclReader = std::function<ObjectAccess()>;

// The bucket's public access settings that change a decision (s3/ownership.h), read only when
// they could.
struct PublicAccess {
  bool ignore_public_acls = false;       // canned ACLs grant nothing to anyone but the owner
  bool restrict_public_buckets = false;  // a public bucket policy allows no anonymous caller
};
using PublicAccessReader = std::function<PublicAccess()>;

// Is `who` allowed `action` on bucket (key empty: the bucket itself) in context `ctx`? Root is
// allowed everything. Otherwise an explicit Deny in the bucket policy or in one of the user's
// policies refuses; an Allow in either allows (a public bucket policy not for anonymous callers
// under RestrictPublicBuckets); then ownership allows (docs/access-control.md): the bucket's
// owner everything on its bucket and every object in it; an object's owner reading it and its
// ACL, and changing that ACL; a
// multipart upload's initiator aborting it and listing its parts. Then the grants of the bucket's
// canned ACL and, for an object read, of the object's, evaluated as policies (iam/acl.h), unless
// IgnorePublicAcls; nothing else does. Refusals are AccessDenied.
Status Authorize(iam::IamStore& iam, const Caller& who, std::string_view action,
                 const std::string& bucket, const std::string& key,
                 const iam::ConditionContext& ctx, const ObjectAclReader& object_acl = {},
                 const PublicAccessReader& public_access = {});

struct PolicyReply {
  int status = 200;
  std::string body;  // "" = none
  std::string content_type;
};

// Runs Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus on an existing bucket. `read_body`
// reads the request body (PUT).
Result<PolicyReply> HandleBucketPolicy(iam::IamStore& iam, storage::ObjectLayer& store,
                                       std::string_view api, const std::string& bucket,
                                       const std::function<Result<std::string>()>& read_body);

// Does the policy make the bucket public (AWS's GetBucketPolicyStatus): an Allow to every
// principal not limited to fixed source addresses or accounts.
bool PolicyIsPublic(const iam::Policy& policy);

}  // namespace rdmastor::s3
