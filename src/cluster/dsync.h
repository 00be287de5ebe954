// Distributed locking with MinIO dsync semantics (DESIGN.md §5, issue 5).
//
// Every node runs one LockServer: its local lock table. A DistributedLock acquires a resource on
// the lock servers of all nodes (through LockerClients: LocalLockerClient for this node, an HTTP
// RPC client over /minio/lock/v1/... for peers) and holds it when a quorum granted it:
//
//   N lockers, tolerance = N/2, read quorum = N - tolerance, write quorum = read quorum, plus one
//   when read quorum == tolerance (N even). So write = N/2+1 always; read = N/2 for even N and
//   (N+1)/2 for odd N. Two write quorums always intersect, and so do a write and a read quorum,
//   so one writer excludes every other writer and every reader; up to `tolerance` nodes may be
//   down for reads, N - write quorum for writes (1 of 4, 1 of 3, 2 of 5).
//
// Failure handling: an attempt that does not reach quorum releases what it got (and a locker that
// grants after the attempt gave up releases its grant at once), then retries with jittered
// exponential backoff until the caller's deadline. A held lock is refreshed in the background;
// every lock server drops an entry not refreshed within its TTL, so a dead holder cannot block a
// resource forever. When a refresh round confirms the lock on fewer than quorum servers, the lock
// is lost: lost() turns true and the on_lost callback runs once (the holder must abort its
// operation; another node may acquire the resource once the stale entries expire).
//
// A holder that dies does not refresh, so its entries would block their resources for the TTL.
// Each process names itself with an instance id (LockArgs::instance, new at every start): a lock
// server that learns a new instance for a node (from the node's start-up handshake or its first
// lock call) drops every entry the node's previous process held, so a restarted node frees its
// keys at once instead of after the TTL.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace rdmastor::cluster {

// What a lock request names (MinIO's dsync.LockArgs).
struct LockArgs {
  std::string uid;                     // one acquisition (unique per DistributedLock attempt)
  std::vector<std::string> resources;  // locked together, all or none
  std::string owner;                   // the requesting node (its id or address)
  std::string instance;                // the owner's process (NewLockInstance); "" = not tracked
  std::string source;                  // for diagnostics: who asked ("PutObject bucket/key")
  int quorum = 0;                      // informational: the quorum the caller needs
};

// A new process instance id: the start time (16 hex digits of microseconds since the epoch, so a
// later start sorts after an earlier one on the same clock) and 8 random bytes.
std::string NewLockInstance();

// One granted entry in a lock table (for diagnostics and tests).
struct LockInfo {
  std::string resource, uid, owner, instance, source;
  bool writer = false;
  std::chrono::steady_clock::duration since_refresh{};
};

struct LockServerOptions {
  // An entry not refreshed for this long is dropped (MinIO: lock validity 1 min, refresh 10 s).
  std::chrono::milliseconds ttl{30000};
  // The clock (tests inject one); default std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

// A node-local lock table: per resource either one writer or any number of readers. Thread-safe.
// Every call returns Result<bool>: true = granted / released / refreshed; false = refused (held by
// another) or nothing to act on; an error only for malformed arguments.
class LockServer {
 public:
  explicit LockServer(LockServerOptions options = {});

  Result<bool> Lock(const LockArgs& args);     // exclusive on every resource, or nothing
  Result<bool> RLock(const LockArgs& args);    // shared on every resource, or nothing
  Result<bool> Unlock(const LockArgs& args);   // drops args.uid's write entries
  Result<bool> RUnlock(const LockArgs& args);  // drops args.uid's read entries
  // Renews args.uid's entries; false when none is held any more (expired or force-unlocked).
  Result<bool> Refresh(const LockArgs& args);
  // Drops every entry on args.resources (or, with no resources, every entry of args.uid).
  Result<bool> ForceUnlock(const LockArgs& args);

  // Records that `owner` now runs as process `instance` (its start-up handshake; lock calls do
  // the same). A new instance drops every entry of the owner's previous process (it died with
  // them) and returns true; `dropped` gets how many. An instance that sorts before the known one
  // (a request of a replaced process arriving late) is refused (false, and its lock calls are
  // refused) while the known one was heard from within the TTL; after that it is taken as new
  // (a clock that stepped back must not lock a node out). Empty owner or instance: true.
  bool ObserveInstance(const std::string& owner, const std::string& instance,
                       size_t* dropped = nullptr);

  // Drops expired entries now (calls do it lazily too); returns how many.
  size_t Expire();
  std::vector<LockInfo> Snapshot() const;
  std::chrono::milliseconds ttl() const { return options_.ttl; }

 private:
  struct Entry {
    std::string uid, owner, instance, source;
    bool writer = false;
    std::chrono::steady_clock::time_point refreshed;
  };
  std::chrono::steady_clock::time_point Now() const;
  void ExpireResourceLocked(const std::string& resource, std::chrono::steady_clock::time_point now);
  void MaybeSweepLocked(std::chrono::steady_clock::time_point now);
  size_t SweepLocked(std::chrono::steady_clock::time_point now);
  Result<bool> Grant(const LockArgs& args, bool writer);
  Result<bool> Release(const LockArgs& args, bool writer);
  bool ObserveInstanceLocked(const std::string& owner, const std::string& instance,
                             std::chrono::steady_clock::time_point now, size_t* dropped);

  struct Instance {
    std::string id;
    std::chrono::steady_clock::time_point seen;
  };

  LockServerOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Entry>> table_;  // resource -> entries (no empty vectors)
  std::chrono::steady_clock::time_point last_sweep_;
  std::map<std::string, Instance> instances_;  // owner -> its current process
};

// The calls a DistributedLock makes on one node's lock server. Implementations may block (an RPC
// with its own timeout); DistributedLock calls them from worker threads and bounds the wait.
// An error means the node could not be asked (unreachable, timed out, refused the RPC).
class LockerClient {
 public:
  virtual ~LockerClient() = default;
  virtual Result<bool> Lock(const LockArgs& args) = 0;
  virtual Result<bool> RLock(const LockArgs& args) = 0;
  virtual Result<bool> Unlock(const LockArgs& args) = 0;
  virtual Result<bool> RUnlock(const LockArgs& args) = 0;
  virtual Result<bool> Refresh(const LockArgs& args) = 0;
  virtual Result<bool> ForceUnlock(const LockArgs& args) = 0;
  // Where the lock server is ("local" or the peer's endpoint), for logs.
  virtual std::string endpoint() const = 0;
};

// This node's lock server, called in-process.
class LocalLockerClient final : public LockerClient {
 public:
  explicit LocalLockerClient(std::shared_ptr<LockServer> server) : server_(std::move(server)) {}
  Result<bool> Lock(const LockArgs& args) override { return server_->Lock(args); }
  Result<bool> RLock(const LockArgs& args) override { return server_->RLock(args); }
  Result<bool> Unlock(const LockArgs& args) override { return server_->Unlock(args); }
  Result<bool> RUnlock(const LockArgs& args) override { return server_->RUnlock(args); }
  Result<bool> Refresh(const LockArgs& args) override { return server_->Refresh(args); }
  Result<bool> ForceUnlock(const LockArgs& args) override { return server_->ForceUnlock(args); }
  std::string endpoint() const override { return "local"; }
  LockServer& server() { return *server_; }

 private:
  std::shared_ptr<LockServer> server_;
};

// Quorums for N lockers (see the top of this file).
int LockTolerance(int lockers);
int ReadLockQuorum(int lockers);
int WriteLockQuorum(int lockers);

struct DsyncOptions {
  // Longest one attempt waits for the lockers' answers (a slow or dead node).
  std::chrono::milliseconds call_timeout{1000};
  // Once a quorum granted, how much longer an attempt waits for the remaining lockers (a late
  // grant is given back at once).
  std::chrono::milliseconds straggler_wait{50};
  // Backoff between attempts: a random duration in [d/2, d], d = min(max, min * 2^attempt).
  std::chrono::milliseconds retry_min{10};
  std::chrono::milliseconds retry_max{500};
  // Held locks are refreshed this often; keep it well under the lock servers' TTL.
  std::chrono::milliseconds refresh_interval{10000};
  // Longest Unlock waits for the lockers' answers; entries it could not release expire by TTL.
  std::chrono::milliseconds release_timeout{1000};
};

// The set of lock servers of a deployment (one per node, this node's included) and this node's
// identity. Shared by every DistributedLock of the node.
class Dsync {
 public:
  // `instance`: this process (NewLockInstance() when empty).
  Dsync(std::vector<std::shared_ptr<LockerClient>> lockers, std::string owner,
        DsyncOptions options = {}, std::string instance = {});
  const std::vector<std::shared_ptr<LockerClient>>& lockers() const { return lockers_; }
  const std::string& owner() const { return owner_; }
  const std::string& instance() const { return instance_; }
  const DsyncOptions& options() const { return options_; }

 private:
  std::vector<std::shared_ptr<LockerClient>> lockers_;
  std::string owner_;
  std::string instance_;
  DsyncOptions options_;
};

// A read/write lock on a set of resources across the deployment (MinIO's DRWMutex). One holder at
// a time per object: Lock/RLock, then Unlock/RUnlock (the destructor releases a held lock).
// Not thread-safe itself; use one per operation.
class DistributedLock {
 public:
  DistributedLock(std::shared_ptr<const Dsync> dsync, std::vector<std::string> resources,
                  std::string source = {});
  ~DistributedLock();
  DistributedLock(const DistributedLock&) = delete;
  DistributedLock& operator=(const DistributedLock&) = delete;

  // Tries until `timeout` passes. kSlowDown naming the resource when no quorum was reached in
  // time (MinIO answers "operation timed out" as 503 SlowDown too); kInvalidRequest when this
  // object already holds a lock.
  Status Lock(std::chrono::milliseconds timeout);
  Status RLock(std::chrono::milliseconds timeout);
  void Unlock();
  void RUnlock();

  bool held() const { return held_; }
  // True once a refresh round confirmed the lock on fewer than quorum servers.
  bool lost() const { return lost_->load(); }
  // Runs once, on the refresh thread, when the lock is lost. Set before locking. It must not call
  // Unlock/RUnlock (they join that thread): signal the operation, which then unlocks.
  void OnLost(std::function<void()> callback) { on_lost_ = std::move(callback); }
  const std::string& uid() const { return args_.uid; }
  int attempts() const { return attempts_; }

 private:
  Status Acquire(bool writer, std::chrono::milliseconds timeout);
  void Release();
  void StartRefresher();
  void StopRefresher();

  std::shared_ptr<const Dsync> dsync_;
  LockArgs args_;
  bool held_ = false, writer_ = false;
  int attempts_ = 0;
  std::vector<bool> granted_;  // per locker, of the current acquisition
  std::shared_ptr<std::atomic<bool>> lost_ = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> on_lost_;

  struct RefreshState {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
  };
  std::shared_ptr<RefreshState> refresh_;
  std::thread refresher_;
};

}  // namespace rdmastor::cluster
