// The admin API under /minio/admin/v3/ (root credentials, SigV4 signed, as MinIO's `mc admin`).
// Today it serves healing and the state of S3 over RDMA:
//
//   POST /minio/admin/v3/heal/[BUCKET]                  starts a heal of BUCKET (or every bucket)
//                                                       -> {"clientToken": ..., "bucket": ...}
//   POST /minio/admin/v3/heal/[BUCKET]?clientToken=T[&after=N]
//                                                       -> the heal's state and counts, plus the
//                                                          items (objects healed or failed)
//                                                          numbered > N
//
//   GET  /minio/admin/v3/info                           -> the deployment (`rdmastor admin info`):
//                                                          {"mode", "version", "uptime" (s),
//                                                           "servers": [{"endpoint", "state",
//                                                           "drives": [{"endpoint", "state",
//                                                           "totalspace", "usedspace",
//                                                           "availspace", "set_index",
//                                                           "disk_index"}]}], "backend":
//                                                          {"backendType", "onlineDisks",
//                                                           "offlineDisks", "totalSets",
//                                                           "totalDrivesPerSet"}} (MinIO's names),
//                                                          and "lifecycle": the lifecycle
//                                                          scanner's status
//                                                          (LifecycleScanner::StatusJson)
//
//   GET  /minio/admin/v3/rdma                           -> {"fabric": "soft"|"verbs"|"none",
//                                                          "ready": bool, "reason": why not}
//                                                          (`rdmastor rdma check --endpoint`)
//
// One heal runs at a time, on its own thread (never an HTTP I/O or request worker thread):
// it first formats replaced drives (ErasureStore::CheckDrives), then walks with
// ErasureStore::HealAll (every bucket when drives were replaced). The last heal's result stays
// readable until the next one starts. A request for a second heal while one runs answers
// XMinioHealAlreadyRunning; a single-drive deployment answers XMinioHealNotImplemented (nothing to
// heal). Errors are S3 error XML.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "admin/health.h"
#include "common/result.h"
#include "iam/store.h"
#include "s3/http_types.h"
#include "storage/erasure_store.h"

namespace rdmastor::rdma {
class S3RdmaService;
}

namespace rdmastor::s3 {

class LifecycleScanner;

class HealService {
 public:
  // `store` may be null (single drive): every heal request is then refused.
  explicit HealService(storage::ErasureStore* store) : store_(store) {}
  ~HealService();  // waits for a running heal
  HealService(const HealService&) = delete;
  HealService& operator=(const HealService&) = delete;

  struct Item {
    uint64_t seq = 0;
    std::string bucket, key;
    uint64_t shards = 0;  // drive copies rewritten
    std::string error;    // non-empty: the object could not be healed
  };
  struct Snapshot {
    std::string token, bucket;
    std::string state;  // "running" | "done" | "failed"
    std::string error;  // when failed
    storage::HealCounts counts;
    int drives_replaced = 0;
    int64_t started_ns = 0, finished_ns = 0;
    std::deque<Item> items;  // numbered > `after`, oldest first
    uint64_t last_seq = 0;   // the newest item number
    uint64_t dropped = 0;    // items after `after` no longer kept (the client fell behind)
  };

  // Starts a heal of `bucket` ("" = all). Returns its token. Errors: kHealNotImplemented,
  // kHealAlreadyRunning, kNoSuchBucket.
  Result<std::string> Start(const std::string& bucket);
  // The heal named by `token` (kHealNoSuchProcess if unknown), with items numbered > after.
  Result<Snapshot> Status(const std::string& token, uint64_t after);

  static constexpr size_t kMaxItems = 10000;  // items kept for polling clients

 private:
  void Run(std::string bucket);

  storage::ErasureStore* store_;
  std::mutex mu_;
  Snapshot job_;  // the current or last heal (token empty: none yet)
  bool running_ = false;
  std::thread thread_;
};

struct AdminOptions {
  std::string access_key, secret_key;  // root credentials: the only ones admin requests accept
  HealService* heal = nullptr;         // null: heal requests are refused (single drive)
  const rdma::S3RdmaService* rdma = nullptr;  // null: S3 over RDMA not set up ("none")
  iam::IamStore* iam = nullptr;        // users and policies (s3/admin_iam.h); null: refused
  std::function<admin::ClusterHealth()> cluster_health;  // drives for `info`; unset: none known
  LifecycleScanner* lifecycle = nullptr;  // `info`'s "lifecycle" entry; null: none
};

// Serves /minio/admin/...; returns false (and sends nothing) for any other path. `body`: the
// request body (only the user and policy calls have one).
bool ServeAdmin(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                const AdminOptions& opts, BodySource& body);

}  // namespace rdmastor::s3
