#include "storage/namespace_lock.h"

#include <algorithm>

#include "common/no_block.h"

namespace rdmastor::storage {

std::string ObjectResource(std::string_view bucket, std::string_view key) {
  std::string r(bucket);
  r.append("/").append(key);
  return r;
}

std::string UploadResource(std::string_view bucket, std::string_view upload_id) {
  // Bucket names hold no ':', so this never equals an object's "bucket/key".
  std::string r("multipart:");
  r.append(bucket).append("/").append(upload_id);
  return r;
}

class LocalNamespaceLocker::Held final : public NamespaceLock {
 public:
  Held(LocalNamespaceLocker* owner, std::vector<std::string> resources, LockMode mode)
      : owner_(owner), resources_(std::move(resources)), mode_(mode) {}
  ~Held() override { owner_->Release(resources_, mode_); }

 private:
  LocalNamespaceLocker* owner_;
  std::vector<std::string> resources_;
  LockMode mode_;
};

bool LocalNamespaceLocker::Free(const State& s, LockMode mode) const {
  if (mode == LockMode::kExclusive) return !s.writer && s.readers == 0;
  return !s.writer && s.waiting_writers == 0;
}

Result<std::unique_ptr<NamespaceLock>> LocalNamespaceLocker::Lock(
    const std::vector<std::string>& resources, LockMode mode, std::chrono::milliseconds timeout,
    std::string_view source) {
  std::vector<std::string> rs = resources;
  std::sort(rs.begin(), rs.end());
  rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
  if (rs.empty()) return MakeError(ErrorCode::kInternalError, "namespace lock without resources");
  const bool exclusive = mode == LockMode::kExclusive;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  for (const auto& r : rs) {
    State& s = table_[r];
    ++s.waiters;
    s.waiting_writers += exclusive ? 1 : 0;
  }
  // A waiter counts itself in waiting_writers, which only blocks readers, so it can never block
  // itself. Requests wait for all their resources at once and hold nothing while waiting: no
  // lock-order cycles.
  const auto free = [&] {
    return std::all_of(rs.begin(), rs.end(), [&](const std::string& r) {
      State s = table_[r];
      if (exclusive) --s.waiting_writers;
      return Free(s, mode);
    });
  };
  // A thread that must not wait (common/no_block.h) takes the lock only when it is free now.
  const bool got = free() || (noblock::MayWait() && cv_.wait_until(lock, deadline, free));
  for (const auto& r : rs) {
    State& s = table_[r];
    --s.waiters;
    s.waiting_writers -= exclusive ? 1 : 0;
    if (got) {
      if (exclusive) {
        s.writer = true;
      } else {
        ++s.readers;
      }
    }
  }
  if (!got) {
    for (const auto& r : rs) {
      const State& s = table_[r];
      if (!s.writer && s.readers == 0 && s.waiters == 0) table_.erase(r);
    }
    lock.unlock();
    cv_.notify_all();  // a writer that gave up may have been the only thing keeping readers out
    return MakeError(ErrorCode::kSlowDown, std::string(exclusive ? "write" : "read") + " lock on " +
                                               rs.front() + " not acquired within " +
                                               std::to_string(timeout.count()) + " ms (" +
                                               std::string(source) + ")");
  }
  return std::unique_ptr<NamespaceLock>(new Held(this, std::move(rs), mode));
}

void LocalNamespaceLocker::Release(const std::vector<std::string>& resources, LockMode mode) {
  {
    std::lock_guard lock(mu_);
    for (const auto& r : resources) {
      auto it = table_.find(r);
      if (it == table_.end()) continue;
      State& s = it->second;
      if (mode == LockMode::kExclusive) {
        s.writer = false;
      } else {
        --s.readers;
      }
      if (!s.writer && s.readers == 0 && s.waiters == 0) table_.erase(it);
    }
  }
  cv_.notify_all();
}

size_t LocalNamespaceLocker::active() const {
  std::lock_guard lock(mu_);
  return table_.size();
}

}  // namespace rdmastor::storage
