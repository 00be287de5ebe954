// The erasure layer's namespace locks in a cluster (storage/namespace_lock.h): every lock is a
// DistributedLock on the lock servers of all nodes (dsync quorum, refresh, TTL expiry), so writers
// of one key on different nodes exclude each other, and a node that dies while holding a lock
// blocks the key only until its entries expire.
#pragma once

#include <memory>

#include "cluster/dsync.h"
#include "storage/namespace_lock.h"

namespace rdmastor::cluster {

class DsyncNamespaceLocker final : public storage::NamespaceLocker {
 public:
  explicit DsyncNamespaceLocker(std::shared_ptr<const Dsync> dsync) : dsync_(std::move(dsync)) {}
  Result<std::unique_ptr<storage::NamespaceLock>> Lock(const std::vector<std::string>& resources,
                                                       storage::LockMode mode,
                                                       std::chrono::milliseconds timeout,
                                                       std::string_view source) override;

 private:
  std::shared_ptr<const Dsync> dsync_;
};

}  // namespace rdmastor::cluster
