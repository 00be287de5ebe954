#include "iam/actions.h"

#include <utility>

namespace rdmastor::iam {

namespace {

constexpr std::pair<std::string_view, std::string_view> kActions[] = {
    {"ListBuckets", "s3:ListAllMyBuckets"},
    {"PutBucket", "s3:CreateBucket"},
    {"HeadBucket", "s3:ListBucket"},
    {"DeleteBucket", "s3:DeleteBucket"},
    {"GetBucketLocation", "s3:GetBucketLocation"},
    {"GetBucketVersioning", "s3:GetBucketVersioning"},
    {"PutBucketVersioning", "s3:PutBucketVersioning"},
    {"ListObjectsV1", "s3:ListBucket"},
    {"ListObjectsV2", "s3:ListBucket"},
    {"ListObjectVersions", "s3:ListBucketVersions"},
    {"ListMultipartUploads", "s3:ListBucketMultipartUploads"},
    {"DeleteMultipleObjects", "s3:DeleteObject"},
    {"PutBucketTagging", "s3:PutBucketTagging"},
    {"GetBucketTagging", "s3:GetBucketTagging"},
    {"DeleteBucketTagging", "s3:PutBucketTagging"},  // AWS: DeleteBucketTagging needs Put
    {"PutBucketPolicy", "s3:PutBucketPolicy"},
    {"GetBucketPolicy", "s3:GetBucketPolicy"},
    {"DeleteBucketPolicy", "s3:DeleteBucketPolicy"},
    {"GetBucketPolicyStatus", "s3:GetBucketPolicyStatus"},
    {"PutBucketEncryption", "s3:PutEncryptionConfiguration"},
    {"GetBucketEncryption", "s3:GetEncryptionConfiguration"},
    {"DeleteBucketEncryption", "s3:PutEncryptionConfiguration"},  // AWS: Delete needs Put
    {"PutBucketAcl", "s3:PutBucketAcl"},
    {"GetBucketAcl", "s3:GetBucketAcl"},
    {"ListenNotification", "s3:ListenBucketNotification"},
    {"PostPolicyBucket", "s3:PutObject"},
    {"GetObject", "s3:GetObject"},
    {"HeadObject", "s3:GetObject"},
    {"GetObjectAttributes", "s3:GetObjectAttributes"},
    {"PutObject", "s3:PutObject"},
    {"CopyObject", "s3:PutObject"},
    {"NewMultipartUpload", "s3:PutObject"},
    {"PutObjectPart", "s3:PutObject"},
    {"CopyObjectPart", "s3:PutObject"},
    {"CompleteMultipartUpload", "s3:PutObject"},
    {"AbortMultipartUpload", "s3:AbortMultipartUpload"},
    {"ListObjectParts", "s3:ListMultipartUploadParts"},
    {"DeleteObject", "s3:DeleteObject"},
    {"PutObjectTagging", "s3:PutObjectTagging"},
    {"GetObjectTagging", "s3:GetObjectTagging"},
    {"DeleteObjectTagging", "s3:DeleteObjectTagging"},
    {"PutObjectAcl", "s3:PutObjectAcl"},
    {"GetObjectAcl", "s3:GetObjectAcl"},
};

constexpr std::string_view kBucketActions[] = {
    "s3:ListAllMyBuckets",     "s3:CreateBucket",       "s3:ListBucket",
    "s3:DeleteBucket",         "s3:GetBucketLocation",  "s3:GetBucketVersioning",
    "s3:PutBucketVersioning",  "s3:ListBucketVersions", "s3:ListBucketMultipartUploads",
    "s3:PutBucketTagging",     "s3:GetBucketTagging",   "s3:PutBucketPolicy",
    "s3:GetBucketPolicy",      "s3:DeleteBucketPolicy", "s3:GetBucketPolicyStatus",
    "s3:PutBucketAcl",         "s3:GetBucketAcl",       "s3:ListenBucketNotification",
    "s3:PutEncryptionConfiguration", "s3:GetEncryptionConfiguration",
};

constexpr std::pair<std::string_view, std::string_view> kVersionActions[] = {
    {"s3:GetObject", "s3:GetObjectVersion"},
    {"s3:DeleteObject", "s3:DeleteObjectVersion"},
    {"s3:GetObjectTagging", "s3:GetObjectVersionTagging"},
    {"s3:PutObjectTagging", "s3:PutObjectVersionTagging"},
    {"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"},
    {"s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
    {"s3:PutObjectAcl", "s3:PutObjectVersionAcl"},
    {"s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"},
};

}  // namespace

std::string_view VersionAction(std::string_view action) {
  for (const auto& [plain, versioned] : kVersionActions)
    if (plain == action) return versioned;
  return action;
}

std::string_view ActionFor(std::string_view api) {
  for (const auto& [name, action] : kActions)
    if (name == api) return action;
  return {};
}

bool IsBucketAction(std::string_view action) {
  for (auto a : kBucketActions)
    if (a == action) return true;
  return false;
}

}  // namespace rdmastor::iam
