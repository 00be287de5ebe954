// The IAM action each S3 request needs, by the request's API name (MinIO's names, as the S3 layer
// routes and counts them: "GetObject", "ListObjectsV2", ...), read from the S3 operation table
// (s3/operations.h).
#pragma once

#include <string_view>

namespace rdmastor::iam {

// The action AWS documents for the operation ("s3:GetObject" for GetObject and HeadObject,
// "s3:ListBucket" for HeadBucket and both ListObjects, "s3:PutObject" for every part of a
// multipart upload, ...); "" for a name that is no S3 operation (nothing can allow it).
// The further actions some operations need (s3:GetObject on a copy's source, ...) are the table's
// Also column, checked by S3Api::Authorized.
std::string_view ActionFor(std::string_view api);

// The action AWS checks instead of `action` when the request names a version (versionId):
// s3:GetObject -> s3:GetObjectVersion, s3:DeleteObject -> s3:DeleteObjectVersion, the object
// tagging, ACL and attributes actions -> their ...Version... forms; any other action unchanged.
std::string_view VersionAction(std::string_view action);

// True when the action applies to the bucket itself (resource "bucket") rather than to an
// object in it (resource "bucket/key"); ListAllMyBuckets and CreateBucket are bucket-level too.
bool IsBucketAction(std::string_view action);

}  // namespace rdmastor::iam
