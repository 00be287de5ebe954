// The handlers of the S3 operations (s3/operations.h names each in its table line), in the shape
// of s3/handler.h: the request as a value in, a Reply out, no HTTP plumbing.
#pragma once

#include "s3/handler.h"
#include "s3/object_lock.h"
#include "s3/ownership.h"

namespace rdmastor::s3 {

// Service and buckets (s3/bucket.cc).
Reply HandleListBuckets(const Env& env, S3Request& r);
Reply HandleCreateBucket(const Env& env, S3Request& r);
Reply HandleHeadBucket(const Env& env, S3Request& r);
Reply HandleDeleteBucket(const Env& env, S3Request& r);
Reply HandleGetBucketLocation(const Env& env, S3Request& r);
Reply HandleGetBucketVersioning(const Env& env, S3Request& r);
Reply HandlePutBucketVersioning(const Env& env, S3Request& r);
// MinIO's x-minio-force-delete on DeleteBucket (s3/force_delete.cc): the bucket with all in it.
Reply HandleForceDeleteBucket(const Env& env, S3Request& r);

// Subresources of buckets and objects (s3/bucket.cc): the operations of ?tagging (s3/tagging.h),
// ?acl (s3/acl.h), ?policy and ?policyStatus (s3/access.h), ?encryption (s3/sse.h), each serving
// all of its subresource's operations (r.op says which).
Reply HandleTaggingRequest(const Env& env, S3Request& r);
Reply HandleAclRequest(const Env& env, S3Request& r);
Reply HandleBucketPolicyRequest(const Env& env, S3Request& r);
Reply HandleBucketEncryption(const Env& env, S3Request& r);
// Object Lock (s3/object_lock.cc): ?object-lock on a bucket, ?retention and ?legal-hold on an
// object.
Reply HandleObjectLockConfiguration(const Env& env, S3Request& r);
Reply HandleObjectRetention(const Env& env, S3Request& r);
Reply HandleObjectLegalHold(const Env& env, S3Request& r);
// ?cors on a bucket (s3/cors.cc).
Reply HandleBucketCors(const Env& env, S3Request& r);
// ?lifecycle on a bucket (s3/lifecycle.cc).
Reply HandleBucketLifecycle(const Env& env, S3Request& r);

// Listings (s3/list.cc).
Reply HandleListObjectsV1(const Env& env, S3Request& r);
Reply HandleListObjectsV2(const Env& env, S3Request& r);
Reply HandleListObjectVersions(const Env& env, S3Request& r);
Reply HandleListMultipartUploads(const Env& env, S3Request& r);

// Objects (s3/object.cc).
Reply HandlePutObject(const Env& env, S3Request& r);
Reply HandleGetObject(const Env& env, S3Request& r);
Reply HandleHeadObject(const Env& env, S3Request& r);
Reply HandleGetObjectAttributes(const Env& env, S3Request& r);
Reply HandleDeleteObject(const Env& env, S3Request& r);
// MinIO's x-minio-force-delete on DeleteObject (s3/force_delete.cc): the key and every object
// under key/, all versions; checks the action for each key through r.allowed first.
Reply HandleDeletePrefix(const Env& env, S3Request& r);
// Checks s3:DeleteObject(Version) for each key through r.allowed.
Reply HandleDeleteObjects(const Env& env, S3Request& r);

// Multipart uploads (s3/multipart.cc).
Reply HandleCreateMultipartUpload(const Env& env, S3Request& r);
Reply HandleUploadPart(const Env& env, S3Request& r);
Reply HandleCompleteMultipartUpload(const Env& env, S3Request& r);
Reply HandleAbortMultipartUpload(const Env& env, S3Request& r);
Reply HandleListParts(const Env& env, S3Request& r);

// Copies (s3/copy.cc).
Reply HandleCopyObject(const Env& env, S3Request& r);
Reply HandleUploadPartCopy(const Env& env, S3Request& r);

}  // namespace rdmastor::s3
