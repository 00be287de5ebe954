// The object metadata files of one local drive, kept in memory (issue 39: a small GET's open,
// read and close of its metadata file were most of its storage cost). docs/architecture.md,
// "Metadata cache", has the argument why a cached file can never be served stale:
//  - every change a server makes to a drive goes through that drive's LocalDrive in this
//    process (its own writes and every peer's, which arrive as peer calls), and each changing call
//    invalidates what it touches (Invalidate / InvalidateBelow / Clear) after it is done;
//  - an entry is used only while a stat of the file matches what was read (device, inode, size,
//    modification and change time), so a change made behind the server's back (an operator, a
//    replaced disk, a corruption test) is a miss too;
//  - a read that raced a change never enters the cache: it notes the generation before reading
//    and stores only when no invalidation happened meanwhile.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::storage {

// The node's budget for cached metadata files, in bytes, shared by its local drives
// (RDMASTOR_META_CACHE; 0 turns the cache off). Read when a LocalHost is made.
void SetMetaCacheBytes(uint64_t bytes);
uint64_t MetaCacheBytes();

// Every drive's cache together since start (rdmastor_meta_cache_reads_total).
struct MetaCacheTotals {
  uint64_t hits = 0, misses = 0;
};
MetaCacheTotals MetaCacheReads();

class MetaFileCache {
 public:
  // Files larger than this are read from the drive every time (an inline object's file is at most
  // a few hundred KiB; a cache of them would hold few).
  static constexpr size_t kMaxFileBytes = 256 << 10;

  explicit MetaFileCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The file `abs` (key `rel`, the drive-relative path) as fsutil::ReadFileIfExists reads it.
  Result<std::optional<std::string>> Read(const std::string& rel, const std::string& abs);

  // After a change of the file `rel` (or the directory tree at `rel`: everything below it).
  void Invalidate(std::string_view rel);
  void InvalidateBelow(std::string_view rel);
  void Clear();

  struct Stats {
    uint64_t hits = 0, misses = 0, entries = 0, bytes = 0;
  };
  Stats stats() const;

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  static Identity IdentityOf(const struct stat& st);
  struct Entry {
    std::string bytes;
    Identity id;
    std::list<std::string_view>::iterator lru;  // views the map's key
  };
  void EraseLocked(std::map<std::string, Entry, std::less<>>::iterator it);

  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;  // ordered: InvalidateBelow erases a range
  std::list<std::string_view> lru_;                    // most recently used first
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;  // bumped by every invalidation
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace rdmastor::storage
