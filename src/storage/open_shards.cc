#include "storage/open_shards.h"

#include <vector>

namespace rdmastor::storage {

OpenShards::OpenShards(size_t capacity, std::chrono::milliseconds idle)
    : capacity_(std::max<size_t>(1, capacity)), idle_(idle) {}

void OpenShards::ExpireLocked(Clock::time_point now,
                              std::vector<std::shared_ptr<storage::ShardFile>>& out) {
  while (!lru_.empty() && now - lru_.back().used >= idle_) {
    by_handle_.erase(lru_.back().handle);
    out.push_back(std::move(lru_.back().file));
    lru_.pop_back();
  }
}

std::shared_ptr<storage::ShardFile> OpenShards::Find(uint64_t handle, const std::string& drive,
                                                     const std::string& path) {
  std::vector<std::shared_ptr<storage::ShardFile>> closing;  // closed outside the lock
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  ExpireLocked(now, closing);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end() || it->second->drive != drive || it->second->path != path)
    return nullptr;
  it->second->used = now;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->file;
}

uint64_t OpenShards::Keep(std::shared_ptr<storage::ShardFile> file, const std::string& drive,
                          const std::string& path) {
  std::vector<std::shared_ptr<storage::ShardFile>> closing;
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  ExpireLocked(now, closing);
  while (lru_.size() >= capacity_) {
    by_handle_.erase(lru_.back().handle);
    closing.push_back(std::move(lru_.back().file));
    lru_.pop_back();
  }
  uint64_t handle = 0;
  do {
    handle = rng_();
  } while (handle == 0 || by_handle_.count(handle));
  lru_.push_front({handle, drive, path, std::move(file), now});
  by_handle_[handle] = lru_.begin();
  return handle;
}

void OpenShards::Release(uint64_t handle, const std::string& drive, const std::string& path) {
  std::shared_ptr<storage::ShardFile> closing;
  std::lock_guard lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end() || it->second->drive != drive || it->second->path != path) return;
  closing = std::move(it->second->file);
  lru_.erase(it->second);
  by_handle_.erase(it);
}

size_t OpenShards::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace rdmastor::storage
