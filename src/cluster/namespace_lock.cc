#include "cluster/namespace_lock.h"

#include "common/no_block.h"

namespace rdmastor::cluster {

namespace {

class HeldDistributedLock final : public storage::NamespaceLock {
 public:
  explicit HeldDistributedLock(std::unique_ptr<DistributedLock> lock) : lock_(std::move(lock)) {}
  // ~DistributedLock releases on the lock servers that granted it.
  bool lost() const override { return lock_->lost(); }

 private:
  std::unique_ptr<DistributedLock> lock_;
};

}  // namespace

Result<std::unique_ptr<storage::NamespaceLock>> DsyncNamespaceLocker::Lock(
    const std::vector<std::string>& resources, storage::LockMode mode,
    std::chrono::milliseconds timeout, std::string_view source) {
  if (!noblock::MayWait()) return noblock::WouldBlock("a distributed lock");
  auto lock = std::make_unique<DistributedLock>(dsync_, resources, std::string(source));
  RS_RETURN_IF_ERROR(mode == storage::LockMode::kExclusive ? lock->Lock(timeout)
                                                           : lock->RLock(timeout));
  return std::unique_ptr<storage::NamespaceLock>(new HeldDistributedLock(std::move(lock)));
}

}  // namespace rdmastor::cluster
