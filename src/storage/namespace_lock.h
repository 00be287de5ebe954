// Namespace locks: what the erasure layer holds while it changes (or resolves) an object, so that
// two writers of one key, or a writer and a reader, never interleave their per-drive steps.
//
// The erasure layer only knows this interface. A single node uses LocalNamespaceLocker (below);
// a cluster plugs in cluster::DsyncNamespaceLocker (cluster/namespace_lock.h), which takes the
// same lock on a quorum of the nodes' lock servers, so writers on different nodes exclude each
// other too. Resources are strings ("bucket/key", see ObjectResource); a lock on several
// resources is all or nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmastor::storage {

enum class LockMode { kShared, kExclusive };

// A held lock; the destructor releases it.
class NamespaceLock {
 public:
  virtual ~NamespaceLock() = default;
  // True once the lock may no longer be held (a distributed lock whose refresh did not reach
  // quorum: another node may take it after the stale entries expire). A writer checks it right
  // before it commits and aborts instead.
  virtual bool lost() const { return false; }
};

class NamespaceLocker {
 public:
  virtual ~NamespaceLocker() = default;
  // Waits at most `timeout` for `resources`; kSlowDown (503) naming the resource when they did
  // not become free in time. `source` says who asks ("PutObject"), for diagnostics.
  virtual Result<std::unique_ptr<NamespaceLock>> Lock(const std::vector<std::string>& resources,
                                                      LockMode mode,
                                                      std::chrono::milliseconds timeout,
                                                      std::string_view source) = 0;
};

// The resource of one object / one multipart upload.
std::string ObjectResource(std::string_view bucket, std::string_view key);
std::string UploadResource(std::string_view bucket, std::string_view upload_id);

// In-process locks: per resource one writer or any number of readers. A waiting writer keeps new
// readers out, so a stream of GETs cannot starve a PUT's commit. Thread-safe.
class LocalNamespaceLocker final : public NamespaceLocker {
 public:
  Result<std::unique_ptr<NamespaceLock>> Lock(const std::vector<std::string>& resources,
                                              LockMode mode, std::chrono::milliseconds timeout,
                                              std::string_view source) override;
  // Resources with a holder or a waiter (tests: empty when everything was released).
  size_t active() const;

 private:
  class Held;
  struct State {
    int readers = 0;
    bool writer = false;
    int waiting_writers = 0;
    int waiters = 0;  // any mode; the entry stays while someone waits on it
  };
  bool Free(const State& s, LockMode mode) const;
  void Release(const std::vector<std::string>& resources, LockMode mode);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, State> table_;  // only resources held or waited on
};

}  // namespace rdmastor::storage
