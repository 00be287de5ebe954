// The S3 operations, declared once (RDMASTOR_S3_OPERATIONS): for each, the name it is routed and
// counted under (MinIO's API names, as metrics labels and the request log show them), how a
// request is recognised as it, the IAM action it needs and on what, the further actions some need,
// and its handler. From the table come: the S3Op enum and the names (here), the routing of a
// request to its operation (RouteOf, operations.cc), the IAM action of each (iam::ActionFor,
// iam::IsBucketAction: iam/actions.cc), what Authorized checks besides (S3Api::Authorized) and the
// dispatch to the handler (S3Api::Dispatch). Adding an operation is one line here plus its handler
// (docs/architecture.md, "Adding an S3 operation"). Nothing here includes more than the standard
// library: iam and the tests read the table too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmastor::s3 {

// Where a request is addressed: the service root ("/"), a bucket, an object (a non-empty key).
enum class At : uint8_t { kRoot, kBucket, kObject, kBucketOrRoot };
// What the IAM action applies to: the bucket (resource "bucket"; ListAllMyBuckets and
// CreateBucket too) or the object (resource "bucket/key").
enum class On : uint8_t { kBucket, kObject };
// A further condition on the request.
enum class When : uint8_t {
  kAlways,
  kCopySource,   // x-amz-copy-source is present
  kFormUpload,   // Content-Type multipart/form-data (a browser POST)
  kForceDelete,  // x-minio-force-delete is not empty (MinIO's extension), whatever its value
};
// Actions checked besides the operation's own (S3Api::Authorized), as AWS does.
enum Also : uint8_t {
  kNothingElse = 0,
  // s3:GetObject (s3:GetObjectVersion for a named version) on the x-amz-copy-source object.
  kReadsSource = 1,
  // s3:PutObjectAcl when the request's ACL grants to others than the owner; s3:PutObjectTagging
  // when it sets tags (a copy keeping its source's tags sets none).
  kSetsAclAndTags = 2,
  // The operation names its objects in its body: its handler checks the action for each
  // (DeleteObjects: s3:DeleteObject, s3:DeleteObjectVersion).
  kPerObject = 4,
  // s3:ForceDeleteBucket on the bucket (MinIO: x-minio-force-delete on DeleteBucket).
  kForceDeletes = 8,
  // Besides the request's own check, the handler checks the action for each object it removes
  // (a prefix's force delete: a policy denying part of the prefix keeps it).
  kAndEachObject = 16,
  // A listing with MinIO's metadata=true: each object's metadata is shown where the caller may
  // s3:GetObject it, its tags where it may s3:GetObjectTagging them (left out otherwise); in a
  // version listing s3:GetObjectVersion / s3:GetObjectVersionTagging.
  kShowsMetadata = 32,
};

// X(Name, "METHOD", At, "subresource", "params", When, "s3:Action", On, Also, handler)
//  - "subresource": a query parameter that claims the request: a request carrying one of the
//    subresources declared at its level is served only by the operations of the first one (in
//    table order) it carries, or by none ("unknown"); "" for none.
//  - "params": query parameters the operation needs: "" none, "a" present, "a=v" with this value,
//    "a|b" either, "a=v&b=w" both.
//  - handler: what S3Api::Dispatch runs (a member of S3Api, or a function returning a Reply).
// The first line that matches a request is its operation, so the more specific comes first. The
// lines above the first one with a subresource match before anything else (as MinIO routes
// ListenNotification); from there on a subresource not implemented (UnsupportedSubresource)
// routes nowhere.
#define RDMASTOR_S3_OPERATIONS(X)                                                                  \
  X(ListenNotification, "GET", kBucketOrRoot, "", "events", kAlways,                               \
    "s3:ListenBucketNotification", kBucket, kNothingElse, &S3Api::NotImplemented)                  \
  X(ListBuckets, "GET", kRoot, "", "", kAlways, "s3:ListAllMyBuckets", kBucket, kNothingElse,      \
    HandleListBuckets)                                                                             \
  /* Subresources: tagging before acl before the policy's. */                                      \
  X(PutBucketTagging, "PUT", kBucket, "tagging", "", kAlways, "s3:PutBucketTagging", kBucket,      \
    kNothingElse, HandleTaggingRequest)                                                            \
  X(GetBucketTagging, "GET", kBucket, "tagging", "", kAlways, "s3:GetBucketTagging", kBucket,      \
    kNothingElse, HandleTaggingRequest)                                                            \
  /* AWS: DeleteBucketTagging needs s3:PutBucketTagging. */                                        \
  X(DeleteBucketTagging, "DELETE", kBucket, "tagging", "", kAlways, "s3:PutBucketTagging",         \
    kBucket, kNothingElse, HandleTaggingRequest)                                                   \
  X(PutObjectTagging, "PUT", kObject, "tagging", "", kAlways, "s3:PutObjectTagging", kObject,      \
    kNothingElse, HandleTaggingRequest)                                                            \
  X(GetObjectTagging, "GET", kObject, "tagging", "", kAlways, "s3:GetObjectTagging", kObject,      \
    kNothingElse, HandleTaggingRequest)                                                            \
  X(DeleteObjectTagging, "DELETE", kObject, "tagging", "", kAlways, "s3:DeleteObjectTagging",      \
    kObject, kNothingElse, HandleTaggingRequest)                                                   \
  X(PutBucketAcl, "PUT", kBucket, "acl", "", kAlways, "s3:PutBucketAcl", kBucket, kNothingElse,    \
    HandleAclRequest)                                                                              \
  X(GetBucketAcl, "GET", kBucket, "acl", "", kAlways, "s3:GetBucketAcl", kBucket, kNothingElse,    \
    HandleAclRequest)                                                                              \
  X(PutObjectAcl, "PUT", kObject, "acl", "", kAlways, "s3:PutObjectAcl", kObject, kNothingElse,    \
    HandleAclRequest)                                                                              \
  X(GetObjectAcl, "GET", kObject, "acl", "", kAlways, "s3:GetObjectAcl", kObject, kNothingElse,    \
    HandleAclRequest)                                                                              \
  X(GetBucketPolicyStatus, "GET", kBucket, "policyStatus", "", kAlways,                            \
    "s3:GetBucketPolicyStatus", kBucket, kNothingElse, HandleBucketPolicyRequest)                  \
  X(PutBucketPolicy, "PUT", kBucket, "policy", "", kAlways, "s3:PutBucketPolicy", kBucket,         \
    kNothingElse, HandleBucketPolicyRequest)                                                       \
  X(GetBucketPolicy, "GET", kBucket, "policy", "", kAlways, "s3:GetBucketPolicy", kBucket,         \
    kNothingElse, HandleBucketPolicyRequest)                                                       \
  X(DeleteBucketPolicy, "DELETE", kBucket, "policy", "", kAlways, "s3:DeleteBucketPolicy",         \
    kBucket, kNothingElse, HandleBucketPolicyRequest)                                              \
  X(GetBucketEncryption, "GET", kBucket, "encryption", "", kAlways,                                \
    "s3:GetEncryptionConfiguration", kBucket, kNothingElse, HandleBucketEncryption)                \
  X(PutBucketEncryption, "PUT", kBucket, "encryption", "", kAlways,                                \
    "s3:PutEncryptionConfiguration", kBucket, kNothingElse, HandleBucketEncryption)                \
  /* AWS: DeleteBucketEncryption needs s3:PutEncryptionConfiguration. */                           \
  X(DeleteBucketEncryption, "DELETE", kBucket, "encryption", "", kAlways,                          \
    "s3:PutEncryptionConfiguration", kBucket, kNothingElse, HandleBucketEncryption)                \
  /* CORS (s3/cors.h); AWS: DeleteBucketCors needs s3:PutBucketCORS. */                           \
  X(PutBucketCors, "PUT", kBucket, "cors", "", kAlways, "s3:PutBucketCORS", kBucket, kNothingElse, \
    HandleBucketCors)                                                                              \
  X(GetBucketCors, "GET", kBucket, "cors", "", kAlways, "s3:GetBucketCORS", kBucket, kNothingElse, \
    HandleBucketCors)                                                                              \
  X(DeleteBucketCors, "DELETE", kBucket, "cors", "", kAlways, "s3:PutBucketCORS", kBucket,         \
    kNothingElse, HandleBucketCors)                                                                \
  /* Lifecycle (s3/lifecycle.h); AWS: DeleteBucketLifecycle needs s3:PutLifecycleConfiguration. */\
  X(PutBucketLifecycle, "PUT", kBucket, "lifecycle", "", kAlways, "s3:PutLifecycleConfiguration",  \
    kBucket, kNothingElse, HandleBucketLifecycle)                                                  \
  X(GetBucketLifecycle, "GET", kBucket, "lifecycle", "", kAlways, "s3:GetLifecycleConfiguration",  \
    kBucket, kNothingElse, HandleBucketLifecycle)                                                  \
  X(DeleteBucketLifecycle, "DELETE", kBucket, "lifecycle", "", kAlways,                            \
    "s3:PutLifecycleConfiguration", kBucket, kNothingElse, HandleBucketLifecycle)                  \
  /* OwnershipControls and PublicAccessBlock (s3/ownership.h); AWS: their Delete needs the Put. */ \
  X(PutBucketOwnershipControls, "PUT", kBucket, "ownershipControls", "", kAlways,                  \
    "s3:PutBucketOwnershipControls", kBucket, kNothingElse, HandleOwnershipControls)               \
  X(GetBucketOwnershipControls, "GET", kBucket, "ownershipControls", "", kAlways,                  \
    "s3:GetBucketOwnershipControls", kBucket, kNothingElse, HandleOwnershipControls)               \
  X(DeleteBucketOwnershipControls, "DELETE", kBucket, "ownershipControls", "", kAlways,            \
    "s3:PutBucketOwnershipControls", kBucket, kNothingElse, HandleOwnershipControls)               \
  X(PutPublicAccessBlock, "PUT", kBucket, "publicAccessBlock", "", kAlways,                        \
    "s3:PutBucketPublicAccessBlock", kBucket, kNothingElse, HandlePublicAccessBlock)               \
  X(GetPublicAccessBlock, "GET", kBucket, "publicAccessBlock", "", kAlways,                        \
    "s3:GetBucketPublicAccessBlock", kBucket, kNothingElse, HandlePublicAccessBlock)               \
  X(DeletePublicAccessBlock, "DELETE", kBucket, "publicAccessBlock", "", kAlways,                  \
    "s3:PutBucketPublicAccessBlock", kBucket, kNothingElse, HandlePublicAccessBlock)               \
  /* Object Lock (s3/object_lock.h). */                                                           \
  X(PutBucketObjectLockConfig, "PUT", kBucket, "object-lock", "", kAlways,                         \
    "s3:PutBucketObjectLockConfiguration", kBucket, kNothingElse, HandleObjectLockConfiguration)   \
  X(GetBucketObjectLockConfig, "GET", kBucket, "object-lock", "", kAlways,                         \
    "s3:GetBucketObjectLockConfiguration", kBucket, kNothingElse, HandleObjectLockConfiguration)   \
  X(PutObjectRetention, "PUT", kObject, "retention", "", kAlways, "s3:PutObjectRetention",         \
    kObject, kNothingElse, HandleObjectRetention)                                                  \
  X(GetObjectRetention, "GET", kObject, "retention", "", kAlways, "s3:GetObjectRetention",         \
    kObject, kNothingElse, HandleObjectRetention)                                                  \
  X(PutObjectLegalHold, "PUT", kObject, "legal-hold", "", kAlways, "s3:PutObjectLegalHold",        \
    kObject, kNothingElse, HandleObjectLegalHold)                                                  \
  X(GetObjectLegalHold, "GET", kObject, "legal-hold", "", kAlways, "s3:GetObjectLegalHold",        \
    kObject, kNothingElse, HandleObjectLegalHold)                                                  \
  /* Buckets. */                                                                                   \
  X(PutBucketVersioning, "PUT", kBucket, "", "versioning", kAlways, "s3:PutBucketVersioning",      \
    kBucket, kNothingElse, HandlePutBucketVersioning)                                              \
  X(PutBucket, "PUT", kBucket, "", "", kAlways, "s3:CreateBucket", kBucket, kNothingElse,          \
    HandleCreateBucket)                                                                            \
  X(HeadBucket, "HEAD", kBucket, "", "", kAlways, "s3:ListBucket", kBucket, kNothingElse,          \
    HandleHeadBucket)                                                                              \
  /* MinIO: x-minio-force-delete removes the bucket with everything in it. */                      \
  X(ForceDeleteBucket, "DELETE", kBucket, "", "", kForceDelete, "s3:DeleteBucket", kBucket,        \
    kForceDeletes, HandleForceDeleteBucket)                                                        \
  X(DeleteBucket, "DELETE", kBucket, "", "", kAlways, "s3:DeleteBucket", kBucket, kNothingElse,    \
    HandleDeleteBucket)                                                                            \
  X(DeleteMultipleObjects, "POST", kBucket, "", "delete", kAlways, "s3:DeleteObject", kObject,     \
    kPerObject, HandleDeleteObjects)                                                               \
  /* A browser-form upload: the form, not the request, carries the signature (POST policy); it */  \
  /* is served before authentication (S3Api::PostObject). */                                       \
  X(PostPolicyBucket, "POST", kBucket, "", "", kFormUpload, "s3:PutObject", kObject,               \
    kSetsAclAndTags, &S3Api::PostObject)                                                           \
  X(GetBucketLocation, "GET", kBucket, "", "location", kAlways, "s3:GetBucketLocation", kBucket,   \
    kNothingElse, HandleGetBucketLocation)                                                         \
  X(GetBucketVersioning, "GET", kBucket, "", "versioning", kAlways, "s3:GetBucketVersioning",      \
    kBucket, kNothingElse, HandleGetBucketVersioning)                                              \
  X(ListMultipartUploads, "GET", kBucket, "", "uploads", kAlways, "s3:ListBucketMultipartUploads", \
    kBucket, kNothingElse, HandleListMultipartUploads)                                             \
  /* MinIO: metadata=true lists each version's user metadata and tags too (minio-py's */           \
  /* include_version with include_user_meta). */                                                   \
  X(ListObjectVersionsM, "GET", kBucket, "", "versions&metadata=true", kAlways,                    \
    "s3:ListBucketVersions", kBucket, kShowsMetadata, HandleListObjectVersions)                    \
  X(ListObjectVersions, "GET", kBucket, "", "versions", kAlways, "s3:ListBucketVersions", kBucket, \
    kNothingElse, HandleListObjectVersions)                                                        \
  /* MinIO: metadata=true lists each object's user metadata and tags too (minio-py's */            \
  /* include_user_meta). */                                                                        \
  X(ListObjectsV2M, "GET", kBucket, "", "list-type=2&metadata=true", kAlways, "s3:ListBucket",     \
    kBucket, kShowsMetadata, HandleListObjectsV2)                                                  \
  X(ListObjectsV2, "GET", kBucket, "", "list-type=2", kAlways, "s3:ListBucket", kBucket,           \
    kNothingElse, HandleListObjectsV2)                                                             \
  X(ListObjectsV1, "GET", kBucket, "", "", kAlways, "s3:ListBucket", kBucket, kNothingElse,        \
    HandleListObjectsV1)                                                                           \
  /* Objects. */                                                                                   \
  X(GetObjectAttributes, "GET", kObject, "", "attributes", kAlways, "s3:GetObjectAttributes",      \
    kObject, kNothingElse, HandleGetObjectAttributes)                                              \
  X(ListObjectParts, "GET", kObject, "", "uploadId", kAlways, "s3:ListMultipartUploadParts",       \
    kObject, kNothingElse, HandleListParts)                                                        \
  X(GetObject, "GET", kObject, "", "", kAlways, "s3:GetObject", kObject, kNothingElse,             \
    HandleGetObject)                                                                               \
  X(HeadObject, "HEAD", kObject, "", "", kAlways, "s3:GetObject", kObject, kNothingElse,           \
    HandleHeadObject)                                                                              \
  X(CopyObjectPart, "PUT", kObject, "", "uploadId|partNumber", kCopySource, "s3:PutObject",        \
    kObject, kReadsSource, HandleUploadPartCopy)                                                   \
  X(PutObjectPart, "PUT", kObject, "", "uploadId|partNumber", kAlways, "s3:PutObject", kObject,    \
    kNothingElse, HandleUploadPart)                                                                \
  X(CopyObject, "PUT", kObject, "", "", kCopySource, "s3:PutObject", kObject,                      \
    kReadsSource | kSetsAclAndTags, HandleCopyObject)                                              \
  X(PutObject, "PUT", kObject, "", "", kAlways, "s3:PutObject", kObject, kSetsAclAndTags,          \
    HandlePutObject)                                                                               \
  X(NewMultipartUpload, "POST", kObject, "", "uploads", kAlways, "s3:PutObject", kObject,          \
    kSetsAclAndTags, HandleCreateMultipartUpload)                                                  \
  X(CompleteMultipartUpload, "POST", kObject, "", "uploadId", kAlways, "s3:PutObject", kObject,    \
    kNothingElse, HandleCompleteMultipartUpload)                                                   \
  X(AbortMultipartUpload, "DELETE", kObject, "", "uploadId", kAlways, "s3:AbortMultipartUpload",   \
    kObject, kNothingElse, HandleAbortMultipartUpload)                                             \
  /* MinIO: x-minio-force-delete removes the key and every object under key/ (all versions). */    \
  X(DeletePrefix, "DELETE", kObject, "", "", kForceDelete, "s3:DeleteObject", kObject,             \
    kAndEachObject, HandleDeletePrefix)                                                            \
  X(DeleteObject, "DELETE", kObject, "", "", kAlways, "s3:DeleteObject", kObject, kNothingElse,    \
    HandleDeleteObject)

#define RDMASTOR_S3_OP_ENUM(Name, ...) k##Name,
enum class S3Op : uint8_t { kUnknown, RDMASTOR_S3_OPERATIONS(RDMASTOR_S3_OP_ENUM) };
#undef RDMASTOR_S3_OP_ENUM

// One line of the table, without its handler.
struct OpInfo {
  S3Op op;
  std::string_view name;
  std::string_view method;
  At at;
  std::string_view subresource;
  std::string_view params;
  When when;
  std::string_view action;
  On on;
  uint8_t also;
};

#define RDMASTOR_S3_OP_INFO(Name, method, at, sub, params, when, action, on, also, handler) \
  OpInfo{S3Op::k##Name, #Name, method, At::at, sub, params, When::when, action, On::on, also},
inline constexpr OpInfo kOperations[] = {RDMASTOR_S3_OPERATIONS(RDMASTOR_S3_OP_INFO)};
#undef RDMASTOR_S3_OP_INFO

// The table's line of `op`; nullptr for kUnknown.
constexpr const OpInfo* InfoOf(S3Op op) {
  for (const auto& info : kOperations)
    if (info.op == op) return &info;
  return nullptr;
}

// The name `op` is counted and logged under; "unknown" for kUnknown (no route: 405
// MethodNotAllowed, or an unsupported subresource).
constexpr std::string_view NameOf(S3Op op) {
  const OpInfo* info = InfoOf(op);
  return info ? info->name : std::string_view("unknown");
}

// What routing looks at.
struct RouteRequest {
  std::string_view method;
  bool root = false;     // no bucket in the path or host
  bool has_key = false;  // the path names an object
  const std::vector<std::pair<std::string, std::string>>* query = nullptr;  // decoded
  bool copy_source = false;   // x-amz-copy-source present
  bool form_upload = false;   // Content-Type multipart/form-data
  bool force_delete = false;  // x-minio-force-delete not empty
};

// The operation of a request (the first line of the table that matches it), or kUnknown. Decided
// before authentication, so that refused requests are counted under the operation they tried.
S3Op RouteOf(const RouteRequest& req);

// The subresource of a bucket or object request that rdmastor does not implement (answered 501
// NotImplemented rather than acted on as the plain bucket/object), or nullptr.
const char* UnsupportedSubresource(const RouteRequest& req);

}  // namespace rdmastor::s3
