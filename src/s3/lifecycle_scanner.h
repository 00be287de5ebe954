// The lifecycle scanner: applies every bucket's lifecycle rules (s3/lifecycle.h) in the
// background, as AWS does once a day.
//
// What a cycle does, bucket by bucket (in name order), key by key (in key order, every version):
//   - Expiration (Days after the object's modification time, or a Date) of the current version:
//     removes it where the key is not versioned, adds a delete marker where it is;
//   - Expiration's ExpiredObjectDeleteMarker: removes a delete marker that is the key's only
//     version left;
//   - NoncurrentVersionExpiration: removes a noncurrent version NoncurrentDays after it became
//     noncurrent (its successor's time), keeping the NewerNoncurrentVersions newest;
//   - AbortIncompleteMultipartUpload: aborts an upload DaysAfterInitiation after it started.
// A version under Object Lock (retention or legal hold) is never removed (DeleteVersionChecked
// without bypass); a day is counted as AWS counts it (to the next midnight UTC after the time plus
// the days). MinIO's stale-upload expiry (MINIO_API_STALE_UPLOADS_EXPIRY) is the erasure layer's
// own sweep (ErasureStore::StartUploadExpiry), for uploads in any bucket.
//
// Bounded: at most `batch` keys are listed at a time, with `pause` between batches. Resumable: the
// bucket and last key done are written to the system bucket (lifecycle/state.json) after every
// batch, and a cycle that did not finish (a restart, a crash, another node taking over) goes on
// from there. Once per cluster: a cycle runs under the namespace lock "rdmastor.sys/lifecycle"
// (a dsync lock in a cluster), taken without waiting, and only when the last cycle (whichever node
// ran it) ended at least `interval` ago; a node that loses the lock stops at its next batch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "storage/namespace_lock.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

struct LifecycleSettings {
  // How often a cycle starts (RDMASTOR_LIFECYCLE_INTERVAL); zero: the scanner does not run.
  std::chrono::milliseconds interval{std::chrono::hours(1)};
  // The length of a lifecycle "day" (RDMASTOR_LIFECYCLE_DAY_SECONDS): 86400 s; shorter for tests
  // and drills only, like MinIO's _MINIO_ILM_DEBUG.
  int64_t day_ms = 86'400'000;
  // Keys per batch (RDMASTOR_LIFECYCLE_BATCH) and the pause between batches
  // (RDMASTOR_LIFECYCLE_PAUSE).
  int batch = 1000;
  std::chrono::milliseconds pause{100};
};

// What the scanner has done (this node's counts since start, and the cluster-wide record of the
// last cycle in the system bucket).
struct LifecycleCounts {
  uint64_t cycles = 0;
  uint64_t objects_scanned = 0;   // versions looked at
  uint64_t objects_expired = 0;   // versions removed and delete markers added or removed
  uint64_t uploads_aborted = 0;
  uint64_t locked_kept = 0;       // versions due but kept under Object Lock
  uint64_t errors = 0;
};

class LifecycleScanner {
 public:
  // `locker` decides who runs a cycle (a LocalNamespaceLocker on one node, the cluster's dsync
  // locker in a cluster); `node` names this node in the status.
  LifecycleScanner(storage::ObjectLayer& store, LifecycleSettings settings,
                   std::shared_ptr<storage::NamespaceLocker> locker, std::string node);
  ~LifecycleScanner();  // Stop()
  LifecycleScanner(const LifecycleScanner&) = delete;
  LifecycleScanner& operator=(const LifecycleScanner&) = delete;

  // Runs cycles on a thread of its own every interval (nothing when the interval is zero).
  void Start();
  void Stop();

  // One cycle now, if this node may run it (true) or not (false: another node holds the lock,
  // the last cycle ended less than an interval ago, or no bucket has enabled rules: then nothing
  // is recorded and the system bucket is left alone).
  Result<bool> RunCycle();

  LifecycleCounts counts() const;
  bool running() const { return running_.load(); }
  int64_t last_cycle_end_ns() const { return last_end_ns_.load(); }
  // The status `rdmastor admin info` shows: this node's counts and the last cycle's record.
  nlohmann::json StatusJson();

 private:
  struct Cycle;
  Status ScanBucket(Cycle& c, const storage::BucketInfo& bucket, const std::string& after);
  Status AbortUploads(Cycle& c, const std::string& bucket);
  Status SaveState(const Cycle& c, bool done);
  void Count(uint64_t LifecycleCounts::*field, uint64_t n = 1);
  bool Sleep(std::chrono::milliseconds d);  // false when stopped

  storage::ObjectLayer& store_;
  const LifecycleSettings settings_;
  std::shared_ptr<storage::NamespaceLocker> locker_;
  const std::string node_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  LifecycleCounts counts_;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> last_end_ns_{0};
  std::thread thread_;
};

// The scanner's counts on /minio/v2/metrics/node (rdmastor_lifecycle_*), sampled at every scrape;
// `scanner` must outlive the metrics endpoint.
void PublishLifecycleMetrics(const LifecycleScanner& scanner);

}  // namespace rdmastor::s3
