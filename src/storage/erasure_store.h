// The erasure-coded object layer: objects are Reed-Solomon coded (erasure/codec.h) across the
// drives of an erasure set; several sets split the namespace by key. Layout and quorum rules are in
// erasure/layout.h, the format file in storage/format.h.
//
// Per drive, the layout is the single-drive one (paths.h): <bucket>/<key>/.rdmastor.meta holds the
// object's metadata plus this drive's erasure info (ObjectMeta::erasure: geometry, this drive's
// shard index, the shard distribution, bitrot algorithm), and <bucket>/<key>/.rdmastor.data.<id>/
// part.N holds this drive's shard of part N. The data directory name is the same on every drive
// and identifies the version. A version whose shard file would be at most the inline block
// (erasure/layout.h, MINIO_STORAGE_CLASS_INLINE_BLOCK; 128 KiB by default, an eighth of it in a
// versioned bucket) keeps its shard inside the metadata instead: one file and one commit call per
// drive, and one read of the metadata file then serves the object.
//
// Shard distribution: drive position p of the set holds shard (p + h) mod n, h = XXH3-64(key) mod
// n, so parity load spreads over the drives. Set selection: XXH3-64 of the key seeded with the
// deployment id (stable, since the id is in every format file) modulo the number of sets.
//
// Writes: the body is encoded stripe by stripe (1 MiB) into a staging directory on every drive;
// after the commit check, each drive publishes with fsutil::Commit. If fewer than write-quorum
// drives committed, the drives that did are rolled back to their previous version and the write
// fails with kInsufficientWriteQuorum (503 SlowDown). Reads resolve the version agreed by at least
// read-quorum drives, verify every shard block, read parity instead of missing or corrupt data
// shards and decode; degraded objects are reported to the heal queue.
//
// Namespace locks (namespace_lock.h): a write takes the exclusive lock of its key only to publish
// (metadata into staging, commit on every drive, rollback), not while the body streams in, so a
// slow uploader never blocks other writers of the key; DeleteObject, UpdateMetadata and healing
// hold it for their whole change, multipart part commits, completion and abort hold the upload's
// lock. GET/HEAD hold the shared lock while they resolve the version and open its shards. A write
// that does not get its lock in time fails with 503 SlowDown and publishes nothing; one whose lock
// was lost (a distributed lock that could not be refreshed) aborts before it commits.
//
// Drive fan-out: the per-drive calls of a request (metadata reads, staging, shard appends per
// stripe, Finish, commit, delete) run in parallel on a bounded pool when drives are remote (each
// call is a network round trip); calls to local drives run on the request's thread meanwhile.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "erasure/layout.h"
#include "storage/drive.h"
#include "storage/drive_host.h"
#include "storage/format.h"
#include "storage/namespace_lock.h"
#include "storage/object_layer.h"

namespace rdmastor {
class ThreadPool;
}

namespace rdmastor::storage {

// How long a write, delete or heal waits for its namespace lock before answering 503 SlowDown.
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{10000};

// What healing one object did: drive copies rewritten, and the drives that needed a copy and did
// not get one (offline, or failed while healing).
struct ObjectHealResult {
  int rewritten = 0;
  std::vector<std::string> written_drives;  // the drives whose copy was rewritten
  std::vector<std::string> missed_drives;
};

struct HealCounts {
  uint64_t objects_scanned = 0;
  uint64_t objects_healed = 0;  // objects where at least one shard or metadata was rewritten
  uint64_t shards_written = 0;  // drive copies rewritten
  uint64_t failed = 0;          // objects that could not be healed (below read quorum)
  // Objects left with a copy not rebuilt because its drive was offline or failed while healing:
  // a later heal must finish them, so a walk with any is not a clean one.
  uint64_t incomplete = 0;
  std::set<std::string> missed_drives;                // the drives those copies belong on
  std::map<std::string, uint64_t> written_per_drive;  // drive -> copies rewritten on it

  void Add(const Result<ObjectHealResult>& object);
  // One info line with Summary(), then one per drive that got copies or missed some (a warning
  // when objects failed or stay incomplete). Per-object lines are logged at debug.
  void Log(std::string_view run) const;
  // "N object(s) scanned, N healed, N drive copies rewritten, N failed, N incomplete[ (...)]"
  std::string Summary() const;
};

// Called for every object healed while walking: bucket, key, counts so far.
using HealProgress = std::function<void(const std::string&, const std::string&, const HealCounts&)>;

// Healing as metrics and the admin API show it.
struct HealStatus {
  bool running = false;          // a HealAll walk is in progress
  HealCounts walk;               // the current or last HealAll walk
  HealCounts total;              // since start: walks plus objects healed from the queue
  int64_t last_activity_ns = 0;  // unix ns when a drive copy was last rewritten; 0 = never
  uint64_t drives_replaced = 0;  // replaced drives formatted into their slot since start
};

class ErasureSet;

class ErasureStore final : public ObjectLayer {
 public:
  // Plans the layout (the storage classes' parity from `classes`; unset = the defaults), loads
  // or writes the format files, and starts the background healer. Errors name the problem.
  static Result<std::unique_ptr<ErasureStore>> Open(const std::vector<std::string>& drives,
                                                    const erasure::StorageClassSettings& classes);
  // The same over any drives (local and remote, in endpoint order; clusters): each a drive of its
  // node's DriveHost, which the store keeps. Only local drives are prepared (staging recovery)
  // and checked for replacement here.
  static Result<std::unique_ptr<ErasureStore>> Open(std::vector<DriveSlot> drives,
                                                    const erasure::StorageClassSettings& classes,
                                                    const FormatOptions& format_options);
  const std::vector<Drive*>& drives() const { return drives_; }
  ~ErasureStore() override;

  const erasure::SetLayout& layout() const { return layout_; }
  const std::string& deployment_id() const { return deployment_id_; }

  // Replaces the namespace locker (Open installs a LocalNamespaceLocker; a cluster node installs
  // the distributed one before it serves S3). `timeout`: how long a write waits for its lock.
  void SetNamespaceLocker(std::shared_ptr<NamespaceLocker> locker,
                          std::chrono::milliseconds timeout = kDefaultLockTimeout);

  // Background work: a replaced-drive check every `interval_ms` (0 = never).
  void StartMonitor(int interval_ms);
  // Background work: every `interval`, aborts the multipart uploads initiated more than `expiry`
  // ago and frees their parts (MINIO_API_STALE_UPLOADS_EXPIRY and _CLEANUP_INTERVAL); a zero
  // expiry or interval turns it off. In a cluster every node sweeps: an upload is aborted under
  // its lock, so a second sweep finds it gone.
  void StartUploadExpiry(std::chrono::milliseconds expiry, std::chrono::milliseconds interval);
  // One sweep: aborts the uploads of every set initiated before `initiated_before_ns` (unix ns);
  // returns how many.
  int ExpireStaleUploads(int64_t initiated_before_ns);
  // Formats empty drives found where formatted ones were and heals everything onto them; returns
  // how many drives were replaced. Runs on the monitor thread; public for tests and the admin API
  // (which passes heal = false and heals with its own walk, to report progress).
  int CheckDrives(bool heal = true);
  // Heals one object / every object of a bucket ("" = all buckets) on every set.
  Result<bool> HealObject(const std::string& bucket, const std::string& key);
  Result<HealCounts> HealAll(const std::string& bucket, const HealProgress& progress);
  // Objects queued for healing by degraded reads and not yet processed.
  size_t heal_queue_size();
  HealStatus heal_status();
  // Waits until the heal queue is empty (tests); false on timeout.
  bool DrainHealQueue(int timeout_ms);

  Status MakeBucket(const std::string& bucket) override;
  Result<BucketInfo> GetBucketInfo(const std::string& bucket) override;
  Status SetBucketTags(const std::string& bucket, const std::string& tags) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status DeleteBucket(const std::string& bucket) override;

  Result<ObjectInfo> PutObject(const std::string& bucket, const std::string& key, BodySource& body,
                               const PutOptions& opts, const CommitCheck& check) override;
  Result<std::unique_ptr<ObjectReader>> OpenObject(const std::string& bucket,
                                                   const std::string& key) override;
  Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key) override;
  Status DeleteObject(const std::string& bucket, const std::string& key) override;
  Result<ObjectInfo> UpdateMetadata(const std::string& bucket, const std::string& key,
                                    const PutOptions& opts) override;
  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts) override;

  Status SetBucketVersioning(const std::string& bucket, Versioning state,
                             const VersioningExclusions& excluded = {}) override;
  Status SetBucketEncryption(const std::string& bucket, const std::string& algorithm) override;
  Result<std::string> BucketEncryption(const std::string& bucket) override;
  Status SetBucketConfig(const std::string& bucket, const std::string& name,
                         const std::string& value) override;
  Result<std::string> BucketConfig(const std::string& bucket, const std::string& name) override;
  Result<Versioning> BucketVersioning(const std::string& bucket) override;
  Result<std::unique_ptr<ObjectReader>> OpenObjectVersion(const std::string& bucket,
                                                          const std::string& key,
                                                          const std::string& version_id) override;
  Result<ObjectInfo> StatObjectVersion(const std::string& bucket, const std::string& key,
                                       const std::string& version_id) override;
  Result<ObjectInfo> StatLatest(const std::string& bucket, const std::string& key,
                                ObjectInfo* marker) override;
  Result<DeleteResult> DeleteObjectVersion(const std::string& bucket, const std::string& key,
                                           const VersionSel& v,
                                           const DeletePrecondition& precondition = {}) override;
  Result<ListResult> ListObjectVersions(const std::string& bucket,
                                        const ListOptions& opts) override;

  Result<std::string> NewMultipartUpload(const std::string& bucket, const std::string& key,
                                         const PutOptions& opts) override;
  Result<PartInfo> PutObjectPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number, BodySource& body,
                                 std::optional<uint64_t> size, const CommitCheck& check) override;
  Result<std::vector<PartInfo>> ListParts(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id) override;
  Result<std::vector<UploadInfo>> ListMultipartUploads(const std::string& bucket,
                                                       const std::string& prefix) override;
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id) override;
  Result<ObjectInfo> CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id,
                                             const std::vector<CompletePart>& parts,
                                             const WritePrecondition& precondition = {},
                                             const CompleteChecksum& declared = {}) override;
  Result<PutOptions> GetUploadOptions(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) override;

 private:
  ErasureStore() = default;
  ErasureSet& SetFor(const std::string& key);
  void Enqueue(const std::string& bucket, const std::string& key);
  void BackgroundLoop();
  void RecordHeal(const Result<ObjectHealResult>& r, const HealCounts* walk);

  erasure::SetLayout layout_;
  std::string deployment_id_;
  uint64_t hash_seed_ = 0;
  std::vector<DriveSlot> slots_;  // keeps the hosts, which own the drives
  std::vector<Drive*> drives_;
  // Runs the per-drive calls of remote drives in parallel; null when every drive is local.
  // Declared before sets_: the sets use it, so it is destroyed after them.
  std::unique_ptr<ThreadPool> drive_pool_;
  std::vector<std::unique_ptr<ErasureSet>> sets_;

  std::mutex mu_;  // guards the heal queue and the monitor state
  std::condition_variable cv_;
  std::set<std::pair<std::string, std::string>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  int monitor_interval_ms_ = 0;
  std::chrono::milliseconds upload_expiry_{0}, upload_sweep_interval_{0};
  std::thread worker_;

  std::mutex check_mu_;   // one CheckDrives at a time
  std::mutex walk_mu_;    // one HealAll walk at a time
  std::mutex status_mu_;  // guards status_
  HealStatus status_;
};

}  // namespace rdmastor::storage
