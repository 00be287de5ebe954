// Open shard read handles (issue 10 item 5), held by a LocalHost for the readers of its drives
// (DriveHost::ReadShardPieces). A GET reads a remote shard in pieces, one peer call each. Opening
// the file by path for every piece let an overwrite that retired the old data directory between
// two pieces break a large GET mid-stream (ENOENT). The first piece of a read now asks the serving
// node to keep the file it opened (ShardPieceRead::keep) and gets a handle back; later pieces name
// the handle and read the same open file (the same version), whatever happened to its path since.
// The last piece lets it go.
//
// Bounded, since a caller may vanish without a last piece: at most `capacity` handles (least
// recently used closed first) and none idle longer than `idle` (swept on every use). A handle is a
// random 64-bit value bound to the drive and path it was opened for: naming it with another drive
// or path does not reach its file (the piece is then opened by path, as without a handle).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>

#include "storage/drive.h"

namespace rdmastor::storage {

class OpenShards {
 public:
  using Clock = std::chrono::steady_clock;
  explicit OpenShards(size_t capacity = 1024,
                      std::chrono::milliseconds idle = std::chrono::seconds(30));

  // The file kept under `handle` for (drive, path), or nullptr (unknown, expired, another
  // drive or path). Marks it used.
  std::shared_ptr<storage::ShardFile> Find(uint64_t handle, const std::string& drive,
                                           const std::string& path);
  // Keeps `file` open for (drive, path); returns its new handle (never 0).
  uint64_t Keep(std::shared_ptr<storage::ShardFile> file, const std::string& drive,
                const std::string& path);
  // Closes `handle` (no-op when unknown or bound to another drive/path).
  void Release(uint64_t handle, const std::string& drive, const std::string& path);
  size_t size() const;

 private:
  struct Entry {
    uint64_t handle;
    std::string drive, path;
    std::shared_ptr<storage::ShardFile> file;
    Clock::time_point used;
  };
  void ExpireLocked(Clock::time_point now, std::vector<std::shared_ptr<storage::ShardFile>>& out);

  const size_t capacity_;
  const std::chrono::milliseconds idle_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> by_handle_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace rdmastor::storage
