// S3 Object Lock, as AWS documents it: a bucket created with x-amz-bucket-object-lock-enabled (or
// a versioned bucket given a configuration) keeps every version it holds from being removed while
// the version is under retention (GOVERNANCE: unless the caller bypasses it with
// x-amz-bypass-governance-retention and s3:BypassGovernanceRetention; COMPLIANCE: nobody) or under
// a legal hold. A plain delete (no version) still creates a delete marker.
//
// Where it lives: the bucket's configuration in its record (BucketInfo::configs["object-lock"],
// BucketLockRecord's form); a version's retention and legal hold in the version record
// (storage/version_record.h: lock_mode, lock_until_ms, legal_hold), which heal and peer nodes copy
// whole. What enforces it: every S3 path that removes a version for good goes through
// DeleteVersionUnderLock (DeleteObject, DeleteObjects); MinIO's x-minio-force-delete is refused on
// a lock-enabled bucket as MinIO refuses it; retention changes are checked under the key's write
// lock (PutOptions::precondition). Over S3 over RDMA the same handlers run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

struct Env;
struct S3Request;

inline constexpr const char* kObjectLockConfigName = "object-lock";

// A bucket's Object Lock configuration.
struct BucketLock {
  bool enabled = false;
  std::string mode;  // default retention of new versions: "" none, "GOVERNANCE", "COMPLIANCE"
  int64_t days = 0, years = 0;  // its period: one of them, with a mode
};

// The configuration kept in the bucket record: "" (not enabled), "Enabled", or
// "Enabled <MODE> Days|Years <n>".
std::string BucketLockRecord(const BucketLock& lock);
BucketLock ParseBucketLockRecord(std::string_view record);
// The bucket's configuration (cached by the object layer: cheap enough for every write).
Result<BucketLock> BucketLockOf(storage::ObjectLayer& store, const std::string& bucket);

// The Object Lock of a version a write creates (PutObject, CopyObject, CreateMultipartUpload,
// POST Object): the request's x-amz-object-lock-mode / -retain-until-date / -legal-hold, else the
// bucket's default retention from `now_ms`. Lock headers on a bucket without Object Lock:
// InvalidRequest. `put`: the request carries the object's data, and AWS requires Content-MD5 or
// an x-amz-checksum (header or trailer) with lock headers.
Status ApplyObjectLock(storage::ObjectLayer& store, const std::string& bucket,
                       const HttpRequest& req, storage::PutOptions& opts, bool put, int64_t now_ms);

// May `v` be removed for good at `now_ms`? AccessDenied under a legal hold or an unexpired
// retention, but GOVERNANCE with `bypass`.
Status CheckRemovable(const storage::ObjectInfo& v, bool bypass, int64_t now_ms);

// x-amz-bypass-governance-retention: true, and the caller may s3:BypassGovernanceRetention.
bool BypassesGovernance(const S3Request& r, const std::string& key);

// DeleteObjectVersion with the lock enforced (`bypass`: GOVERNANCE retention is lifted, as
// BypassesGovernance says for a request): a version named (or, where the key is not versioned, the
// null version a plain delete would remove) that CheckRemovable refuses is kept and the answer is
// AccessDenied. A plain delete in a versioned bucket creates a delete marker. The lifecycle
// scanner deletes through it with no bypass.
// `if_match` (a conditional delete: If-Match, or a DeleteObjects entry's <ETag>) is compared with
// the version named, else the current one: none there (or a delete marker) is NoSuchKey
// (NoSuchVersion for a named version), another ETag PreconditionFailed, as AWS answers for general
// purpose buckets. Both checks run in the object layer under the key's write lock
// (storage::DeletePrecondition), so a retention set or an object replaced meanwhile is seen.
Result<storage::DeleteResult> DeleteVersionChecked(
    storage::ObjectLayer& store, const std::string& bucket, const std::string& key,
    const storage::VersionSel& version, bool bypass,
    const std::optional<std::string>& if_match = std::nullopt);
// DeleteVersionChecked for a request, bypassing GOVERNANCE where the request may.
Result<storage::DeleteResult> DeleteVersionUnderLock(
    const Env& env, const S3Request& r, const std::string& key, const storage::VersionSel& version,
    const std::optional<std::string>& if_match = std::nullopt);

// x-amz-object-lock-mode / -retain-until-date / -legal-hold of a version (GET, HEAD).
void AddObjectLockHeaders(HeaderList& out, const storage::ObjectInfo& info);

// The time Object Lock decisions use (ms since the epoch).
int64_t NowMs();

}  // namespace rdmastor::s3
