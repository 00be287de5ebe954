// POSIX file-system helpers for the storage layer: RAII descriptors, full reads/writes, fsync,
// mkdir -p, recursive removal, and the atomic commit protocol (staging dir + intent journal +
// rename) that both the single-drive store and the erasure-coded layer use to publish data.
// Nothing here throws; every failure is an Error whose message names the operation, the path and
// the errno text.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace rdmastor::storage::fsutil {

// Owns one file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset();

 private:
  int fd_ = -1;
};

// An Error for a failed system call: ENOSPC / EDQUOT / EROFS map to kDriveNotWritable (the drive
// is full or read-only), everything else to kInternalError. Logs the failure.
Error ErrnoError(std::string_view op, const std::string& path, int err);

// Opens with O_CLOEXEC added. Errors carry errno in *err_out when given (ENOENT checks).
Result<UniqueFd> Open(const std::string& path, int flags, mode_t mode = 0644,
                      int* err_out = nullptr);

Status WriteAll(int fd, const char* data, size_t len, const std::string& path_for_errors);
// pread until len bytes or EOF; returns the count.
Result<size_t> PreadFull(int fd, char* buf, size_t len, uint64_t off,
                         const std::string& path_for_errors);
Status Fsync(int fd, const std::string& path_for_errors);
Status FsyncDir(const std::string& dir);

// Creates (or truncates) `path`, writes `data`, fsyncs. Not atomic by itself.
Status WriteFileDurable(const std::string& path, std::string_view data);
// Whole file; nullopt when it does not exist (ENOENT / ENOTDIR).
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path);

bool Exists(const std::string& path);
bool IsDir(const std::string& path);

// mkdir -p for `path`, which must lie under `base` (an existing directory; nothing at or above it
// is created). Parents of newly created directories are fsynced so the entries are durable.
Status MkdirAll(const std::string& base, const std::string& path);

// rm -rf; a missing path is success.
Status RemoveAll(const std::string& path);

// Removes `dir` and then its parents while they are empty, stopping below `stop` (never removed).
// Best effort: stops quietly at the first directory that is not empty or cannot be removed.
void PruneEmptyDirs(const std::string& dir, const std::string& stop);

// Names of the entries of a directory (without "." and ".."); directories (not symlinks) only
// when dirs_only. A missing directory has no entries (walks race with concurrent deletes).
Result<std::vector<std::string>> ListDir(const std::string& dir, bool dirs_only);

// ---- Atomic commit --------------------------------------------------------------------------
//
// A commit publishes into `target` (a directory) a new data directory and/or a new metadata file,
// replacing an older pair. Everything is prepared in a private staging directory first:
//   <staging>/data    the new data directory (optional)
//   <staging>/meta    the new metadata file (absent: the commit deletes the metadata file)
// Commit() then, in this order: journals an intent (<staging>/intent.json, fsynced) naming the
// data directories it may orphan; creates `target`; renames data in; renames meta over the old
// file (the atomic commit point) or unlinks it; fsyncs `target`; moves the old data directory
// into <staging>/old. The caller serializes commits to one target (key lock) and removes the
// staging directory afterwards. After a crash, RecoverStaging() reads the intent and removes
// whichever named data directory the surviving metadata does not reference, so a crash leaves
// exactly the old or the new version and no garbage outside the staging area.

struct CommitPlan {
  std::string root;           // drive root; the journal stores paths relative to it
  std::string base;           // existing dir below root under which `target` may be created
  std::string staging;        // absolute staging directory (on the same file system)
  std::string target;         // absolute target directory
  std::string meta_name;      // metadata file name inside target
  std::string new_data_name;  // name for <staging>/data inside target; "" = no data
  std::string old_data_name;  // data dir the current metadata references; "" = none
};
Status Commit(const CommitPlan& plan);

// Returns the data directory name the metadata file `meta_path` references ("" when the file
// is missing), or an error when it cannot be read.
using DataNameReader = std::function<Result<std::string>(const std::string& meta_path)>;

// Completes or rolls back an interrupted Commit() whose staging dir survived a crash. Does not
// remove the staging directory itself.
Status RecoverStaging(const std::string& root, const std::string& staging,
                      const DataNameReader& read_data_name);

}  // namespace rdmastor::storage::fsutil
