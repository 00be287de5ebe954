#include "storage/meta_cache.h"

#include <atomic>
#include <cerrno>

#include "common/no_block.h"
#include "storage/fsutil.h"

namespace rdmastor::storage {

namespace {
std::atomic<uint64_t> g_meta_cache_bytes{64ull << 20};

// A "." segment names the same file as the path without it: such a path is neither cached nor
// used to find entries (an invalidation through one clears everything).
bool HasDotSegment(std::string_view p) {
  return p == "." || p.starts_with("./") || p.ends_with("/.") ||
         p.find("/./") != std::string_view::npos;
}
}  // namespace

namespace {
std::atomic<uint64_t> g_hits{0}, g_misses{0};
}  // namespace

void SetMetaCacheBytes(uint64_t bytes) { g_meta_cache_bytes.store(bytes); }
MetaCacheTotals MetaCacheReads() { return {g_hits.load(), g_misses.load()}; }
uint64_t MetaCacheBytes() { return g_meta_cache_bytes.load(); }

MetaFileCache::Identity MetaFileCache::IdentityOf(const struct stat& st) {
  return Identity{st.st_dev, st.st_ino, st.st_size,
                  int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                  int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

Result<std::optional<std::string>> MetaFileCache::Read(const std::string& rel,
                                                       const std::string& abs) {
  if (max_bytes_ == 0 || HasDotSegment(rel)) return fsutil::ReadFileIfExists(abs);
  uint64_t generation;
  {
    std::unique_lock lock(mu_);
    if (auto it = entries_.find(rel); it != entries_.end()) {
      lock.unlock();
      // Validated against the file as it is now: one stat instead of open, read and close.
      struct stat st;
      if (::stat(abs.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
        return fsutil::ErrnoError("stat", abs, errno);
      }
      const Identity now = IdentityOf(st);
      lock.lock();
      it = entries_.find(rel);  // may be gone meanwhile
      if (it != entries_.end() && it->second.id == now) {
        ++hits_;
        g_hits.fetch_add(1, std::memory_order_relaxed);
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return std::optional<std::string>(it->second.bytes);
      }
    }
    // A miss reads the drive: not on a thread that must not wait (it retries on a worker).
    if (!noblock::MayWait()) return noblock::WouldBlock("read " + abs);
    ++misses_;
    g_misses.fetch_add(1, std::memory_order_relaxed);
    generation = generation_;
  }
  struct stat st;
  auto read = fsutil::ReadFileIfExists(abs, &st);
  if (!read.ok() || !read->has_value() || (*read)->size() > kMaxFileBytes) return read;
  std::lock_guard lock(mu_);
  // A change since the read began may have replaced the file after we opened it: not stored.
  if (generation != generation_) return read;
  if (auto it = entries_.find(rel); it != entries_.end()) EraseLocked(it);
  auto [it, inserted] = entries_.emplace(rel, Entry{**read, IdentityOf(st), {}});
  lru_.push_front(it->first);
  it->second.lru = lru_.begin();
  bytes_ += it->first.size() + it->second.bytes.size();
  while (bytes_ > max_bytes_ && !lru_.empty()) EraseLocked(entries_.find(lru_.back()));
  return read;
}

void MetaFileCache::EraseLocked(std::map<std::string, Entry, std::less<>>::iterator it) {
  bytes_ -= it->first.size() + it->second.bytes.size();
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void MetaFileCache::Invalidate(std::string_view rel) {
  if (HasDotSegment(rel)) return Clear();
  std::lock_guard lock(mu_);
  ++generation_;
  if (auto it = entries_.find(rel); it != entries_.end()) EraseLocked(it);
}

void MetaFileCache::InvalidateBelow(std::string_view rel) {
  std::lock_guard lock(mu_);
  ++generation_;
  if (rel.empty() || HasDotSegment(rel)) {
    entries_.clear();
    lru_.clear();
    bytes_ = 0;
    return;
  }
  // `rel` itself and every path below it; "a-b/..." sorts between "a" and "a/...", so skipped.
  for (auto it = entries_.lower_bound(rel); it != entries_.end() && it->first.starts_with(rel);) {
    const std::string& k = it->first;
    if (k.size() == rel.size() || k[rel.size()] == '/')
      EraseLocked(it++);
    else
      ++it;
  }
}

void MetaFileCache::Clear() { InvalidateBelow(""); }

MetaFileCache::Stats MetaFileCache::stats() const {
  std::lock_guard lock(mu_);
  return Stats{hits_, misses_, entries_.size(), bytes_};
}

}  // namespace rdmastor::storage
