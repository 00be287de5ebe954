// The single-drive object layer: one directory holds everything (layout in storage/paths.h).
// Writes are staged under .rdmastor.sys/tmp and published with fsutil::Commit(), so readers and
// crashes see either the old or the new version of an object, never part of one.
//
// Concurrency: any number of threads may call into one DriveStore. Commits to one key are
// serialized by striped in-process locks (one DriveStore per drive directory per process; two
// processes must not share a drive). Readers take no lock: an ObjectReader holds the part files
// open, so an overwrite or delete after OpenObject() does not disturb it.
//
// Errors beyond the ObjectLayer contract: a body shorter than the declared size is
// kIncompleteBody, a longer one kInvalidRequest, more than 5 GiB for a PUT or part (declared or
// received) kEntityTooLarge; all are detected before the CommitCheck runs. A null CommitCheck
// makes the store compute the ETag (MD5) itself. Keys are re-validated (paths::MapKey):
// kInvalidObjectName / kKeyTooLong. Unusable bucket names read as kNoSuchBucket, except in
// MakeBucket (kInvalidBucketName).
//
// Multipart checksum algorithm: NewMultipartUpload() takes it from
// opts.user_metadata["x-amz-checksum-algorithm"] (removed from the stored user metadata, kept as
// its own field) and GetUploadOptions() hands it back under the same key.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "storage/object_layer.h"
#include "storage/object_meta.h"
#include "storage/paths.h"
#include "storage/s3_limits.h"

namespace rdmastor::storage {

inline constexpr size_t kDefaultEagerOpenParts = 128;

class DriveStore final : public ObjectLayer {
 public:
  // Creates `dir` when missing; fails with kDriveNotWritable (naming the path and the errno text)
  // when it is not a writable directory. Finishes or rolls back commits a crash interrupted and
  // wipes the staging area.
  static Result<std::unique_ptr<DriveStore>> Open(const std::string& dir);

  const std::string& root() const { return root_; }
  // Parts an ObjectReader opens up front (default 128); later parts open on first read, which
  // bounds descriptors for many-part objects but gives up the snapshot guarantee for those parts.
  void set_eager_open_parts_for_testing(size_t n) { eager_open_parts_ = n; }

  Status MakeBucket(const std::string& bucket) override;
  Result<BucketInfo> GetBucketInfo(const std::string& bucket) override;
  Status SetBucketTags(const std::string& bucket, const std::string& tags) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status DeleteBucket(const std::string& bucket) override;

  Result<ObjectInfo> PutObject(const std::string& bucket, const std::string& key,
                               BodySource& body, const PutOptions& opts,
                               const CommitCheck& check) override;
  Result<std::unique_ptr<ObjectReader>> OpenObject(const std::string& bucket,
                                                   const std::string& key) override;
  Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key) override;
  Status DeleteObject(const std::string& bucket, const std::string& key) override;
  Result<ObjectInfo> UpdateMetadata(const std::string& bucket, const std::string& key,
                                    const PutOptions& opts) override;
  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts) override;

  Result<std::string> NewMultipartUpload(const std::string& bucket, const std::string& key,
                                         const PutOptions& opts) override;
  Result<PartInfo> PutObjectPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number,
                                 BodySource& body, std::optional<uint64_t> size,
                                 const CommitCheck& check) override;
  Result<std::vector<PartInfo>> ListParts(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id) override;
  Result<std::vector<UploadInfo>> ListMultipartUploads(const std::string& bucket,
                                                       const std::string& prefix) override;
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id) override;
  Result<ObjectInfo> CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id,
                                             const std::vector<CompletePart>& parts,
                                             const WritePrecondition& precondition = {}) override;
  Result<PutOptions> GetUploadOptions(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) override;

 private:
  explicit DriveStore(std::string root);

  // A fresh staging directory under tmp; the caller removes it with DropStaging().
  Result<std::string> NewStaging();
  void DropStaging(const std::string& staging);

  Status CheckBucket(const std::string& bucket);  // valid name and existing: else error
  std::string KeyDir(const std::string& bucket, const paths::KeyLocation& loc) const;
  Result<ObjectMeta> ReadMeta(const std::string& meta_path);  // kNoSuchKey when missing

  // Streams `body` into <staging>/data/part.1 and checks the size; returns bytes written.
  // `md5_out` receives the hex MD5 when non-null (used when no CommitCheck computes the ETag).
  Result<uint64_t> ReceiveBody(BodySource& body, std::optional<uint64_t> declared,
                               uint64_t limit, const std::string& file, std::string* md5_out,
                               bool sync = true);
  // Publishes <staging>/data + <staging>/meta as the object `key` (holds the key lock; checks
  // `precondition` under it when set).
  Status PublishObject(const std::string& bucket, const std::string& key,
                       const paths::KeyLocation& loc, const std::string& staging, ObjectMeta& meta,
                       const WritePrecondition& precondition);

  Result<UploadRecord> LoadUpload(const std::string& bucket, const std::string& key,
                                  const std::string& upload_id, std::string* upload_dir);

  std::mutex& KeyLock(const std::string& bucket, const std::string& key);
  std::mutex& UploadLock(const std::string& upload_id);
  std::shared_mutex& BucketLock(const std::string& bucket);

  std::string root_;
  std::string tmp_;
  size_t eager_open_parts_ = kDefaultEagerOpenParts;
  std::array<std::mutex, 256> key_locks_;
  std::array<std::mutex, 64> upload_locks_;
  // Shared by commits into a bucket, exclusive for MakeBucket / DeleteBucket.
  std::array<std::shared_mutex, 32> bucket_locks_;
};

}  // namespace rdmastor::storage
