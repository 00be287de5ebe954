#include "s3/unsupported.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace rdmastor::s3 {
namespace {

HttpRequest With(std::initializer_list<std::pair<std::string, std::string>> headers) {
  HttpRequest req;
  req.method = "PUT";
  for (const auto& h : headers) req.headers.push_back(h);
  return req;
}

std::optional<ErrorCode> Refusal(std::string_view api, const HttpRequest& req) {
  auto st = RefuseUnimplemented(api, req);
  if (st.ok()) return std::nullopt;
  return st.error().code;
}

// Writes implement encryption (s3/sse.h): RefuseUnimplemented lets its headers through.
TEST(UnsupportedTest, EncryptionIsNotRefusedOnWrites) {
  for (const char* api :
       {"PutObject", "CopyObject", "NewMultipartUpload", "PutObjectPart", "CopyObjectPart"}) {
    EXPECT_EQ(Refusal(api, With({{"x-amz-server-side-encryption", "AES256"}})), std::nullopt)
        << api;
    EXPECT_EQ(Refusal(api, With({{"x-amz-server-side-encryption-customer-algorithm", "AES256"}})),
              std::nullopt)
        << api;
  }
}

TEST(UnsupportedTest, StorageClass) {
  EXPECT_EQ(Refusal("PutObject", With({{"x-amz-storage-class", "STANDARD"}})), std::nullopt);
  EXPECT_EQ(Refusal("PutObject", With({{"x-amz-storage-class", "REDUCED_REDUNDANCY"}})),
            std::nullopt);
  EXPECT_EQ(Refusal("NewMultipartUpload", With({{"x-amz-storage-class", "GLACIER"}})),
            ErrorCode::kInvalidStorageClass);
  EXPECT_EQ(Refusal("CopyObject", With({{"x-amz-storage-class", "standard"}})),
            ErrorCode::kInvalidStorageClass);
  // Parts inherit the upload's class: UploadPart does not look at it.
  EXPECT_EQ(Refusal("PutObjectPart", With({{"x-amz-storage-class", "GLACIER"}})), std::nullopt);
}

TEST(UnsupportedTest, BucketAndMinioFeatures) {
  // Implemented (Object Lock, s3/object_lock.h): neither refused here.
  EXPECT_EQ(Refusal("PutBucket", With({{"x-amz-bucket-object-lock-enabled", "True"}})),
            std::nullopt);
  EXPECT_EQ(Refusal("PutBucket", With({{"x-amz-bucket-object-lock-enabled", "false"}})),
            std::nullopt);
  // Implemented (ForceDeleteBucket, s3/force_delete.cc).
  EXPECT_EQ(Refusal("ForceDeleteBucket", With({{"x-minio-force-delete", "true"}})), std::nullopt);
  EXPECT_EQ(Refusal("PutObject", With({{"x-amz-meta-snowball-auto-extract", "true"}})),
            ErrorCode::kNotImplemented);
  EXPECT_EQ(Refusal("ListenNotification", With({})), ErrorCode::kNotImplemented);
  EXPECT_EQ(Refusal("PutObject", With({{"x-amz-tagging", "a=b"}})), std::nullopt);  // implemented
  EXPECT_EQ(Refusal("PutObject", With({{"x-amz-object-lock-mode", "GOVERNANCE"}})),
            std::nullopt);
}

}  // namespace
}  // namespace rdmastor::s3
