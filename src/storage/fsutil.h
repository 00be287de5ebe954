// POSIX file-system helpers for the storage layer: RAII descriptors, full reads/writes, fsync,
// mkdir -p, recursive removal, and the atomic commit protocol (staging dir + intent journal +
// rename) that both the single-drive store and the erasure-coded layer use to publish data.
// Nothing here throws; every failure is an Error whose message names the operation, the path and
// the errno text.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace rdmastor::storage::fsutil {

// Direct I/O (O_DIRECT) wants the file offset, the length and the memory address aligned to the
// device's logical block size (512 B or 4 KiB); 4 KiB covers both.
inline constexpr size_t kDirectIoAlign = 4096;

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

// ---- Sync counters --------------------------------------------------------------------------
// Every sync the storage layer issues goes through this file and is counted here: fsync /
// fdatasync of a file, fsync of a directory, syncfs of a whole file system (one group commit).
// Exported as rdmastor_storage_syncs_total{kind}; the bench prints syncs per PUT from it.
struct SyncCounts {
  uint64_t file = 0;
  uint64_t dir = 0;
  uint64_t fs = 0;
  uint64_t total() const { return file + dir + fs; }
};
SyncCounts GetSyncCounts();

// ---- Recorder (crash-consistency harness) -----------------------------------------------------
// When set, every mutation and every sync the storage layer makes through this file is reported
// after it succeeded (a sync: before it starts, so everything reported earlier is covered by it).
// tests/storage/crash_harness_test.cc replays these sequences cut at sync boundaries. Off (one
// relaxed atomic load per call) unless a test installs one.
struct FsOp {
  enum Kind {
    kMkdir,      // path
    kCreate,     // path: open with O_CREAT (and truncation when O_TRUNC)
    kWrite,      // path, offset (-1: at the end), data
    kRename,     // path -> path2
    kLink,       // path -> path2 (hard link)
    kUnlink,     // path
    kRmdir,      // path
    kRemoveAll,  // path (recursive)
    kFsyncFile,  // path: the file's data and size
    kFsyncDir,   // path: the directory's entries
    kSyncFs,     // path: everything written on the file system holding path
  };
  Kind kind = kMkdir;
  std::string path;
  std::string path2;
  int64_t offset = -1;
  std::string data;
  bool truncate = false;
};
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void Record(FsOp op) = 0;
};
// nullptr switches recording off. The recorder must outlive its installation.
void SetRecorder(Recorder* r);

// Mutations as the syscalls they wrap (0 / -1 with errno), reported to the recorder.
int Mkdir(const std::string& path, mode_t mode);
int Rename(const std::string& from, const std::string& to);
int Link(const std::string& from, const std::string& to);
int Unlink(const std::string& path);
int Rmdir(const std::string& path);

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
// With err_out, a failure's errno goes there and is not logged (a direct-I/O write the file
// system refuses with EINVAL is retried through the page cache by the caller).
Status Pwrite(int fd, const char* data, size_t len, uint64_t off, const std::string& path,
              int* err_out = nullptr);
Status Fsync(int fd, const std::string& path_for_errors);
Status FsyncDir(const std::string& dir);

// Creates (or truncates) `path`, writes `data`, fsyncs. Not atomic by itself.
Status WriteFileDurable(const std::string& path, std::string_view data);
// Creates (or truncates) `path` and writes `data` without syncing: made durable by a later
// SyncBatcher::Sync of its file system (the commit protocol's barriers).
Status WriteFile(const std::string& path, std::string_view data);

// ---- Group commit -----------------------------------------------------------------------------
// One per file system (keyed by its device): Sync() returns once a syncfs(2) that started after
// the call has completed, so everything the caller wrote before is durable. Concurrent callers
// share one syncfs: while one runs, the callers arriving meanwhile wait and the next one covers
// all of them (a leader runs it; the others sleep). A failed syncfs fails every caller it covered.
class SyncBatcher {
 public:
  // The batcher of the file system holding `dir` (an existing directory); shared by every drive
  // on that file system.
  static Result<std::shared_ptr<SyncBatcher>> For(const std::string& dir);
  SyncBatcher(UniqueFd fd, dev_t dev, std::string dir)
      : fd_(std::move(fd)), dev_(dev), dir_(std::move(dir)) {}
  dev_t dev() const { return dev_; }
  Status Sync();

  // A commit registers for as long as it runs (Commit does), so that the caller about to run a
  // syncfs first waits, at most kGather, while other registered commits are about to reach a
  // barrier: the drives of one PUT on one file system then share one syncfs per barrier.
  class Active {
   public:
    explicit Active(SyncBatcher& b);
    ~Active();
    Active(const Active&) = delete;
    Active& operator=(const Active&) = delete;

   private:
    SyncBatcher& b_;
  };
  static constexpr std::chrono::microseconds kGather{2000};

 private:
  UniqueFd fd_;
  dev_t dev_;
  std::string dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t started_ = 0;  // generations of syncfs started / completed
  uint64_t done_ = 0;
  bool running_ = false;    // a syncfs runs
  bool gathering_ = false;  // its leader waits for registered commits to arrive
  int active_ = 0;          // registered commits
  int waiting_ = 0;         // callers inside Sync()
  std::vector<std::pair<uint64_t, Error>> failed_;  // recent failed generations
};
// Whole file; nullopt when it does not exist (ENOENT / ENOTDIR). `st`, when given, receives the
// fstat of the file that was read (MetaFileCache keys its entries by it).
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path,
                                                    struct stat* st = nullptr);

bool Exists(const std::string& path);
bool IsDir(const std::string& path);

// mkdir -p for `path`, which must lie under `base` (an existing directory; nothing at or above it
// is created). With `sync`, parents of newly created directories are fsynced so the entries are
// durable; without, a later SyncBatcher::Sync makes them durable.
Status MkdirAll(const std::string& base, const std::string& path, bool sync = true);

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
// The staged files need not be synced by the caller. Commit() then, in this order: writes an
// intent journal (<staging>/intent.json) naming the data directories it may orphan; barrier 1
// (SyncBatcher::Sync: the staged files, the journal and their directories are durable); creates
// `target`; renames data in; renames meta over the old file (the atomic commit point) or unlinks
// it; barrier 2 (the renames are durable: the commit may be acknowledged); moves the old data
// directory into <staging>/old (not synced). The caller serializes commits to one target (key
// lock) and removes the staging directory afterwards. After a crash, RecoverStaging() reads the
// journal and removes whichever named data directory the surviving metadata does not reference,
// so a crash leaves exactly the old or the new version and no garbage outside the staging area.
// Both barriers are group commits: concurrent commits on one file system share their syncfs.
// The staging directory may be one reused from an earlier commit (RenameDataRequest::
// keep_staging): it then holds that commit's stale journal, which Commit() overwrites in place.

struct CommitPlan {
  std::string root;           // drive root; the journal stores paths relative to it
  std::string base;           // existing dir below root under which `target` may be created
  std::string staging;        // absolute staging directory (on the same file system)
  std::string target;         // absolute target directory
  std::string meta_name;      // metadata file name inside target
  std::string new_data_name;  // name for <staging>/data inside target; "" = no data
  std::string old_data_name;  // data dir the current metadata references; "" = none
};
// `sync`: the batcher of the drive's file system (nullptr: looked up from plan.root).
Status Commit(const CommitPlan& plan, SyncBatcher* sync = nullptr);
// Several commits on one file system (`sync` is its batcher), e.g. one object on the drives that
// share it: each step for every plan, then one barrier for all of them, so the group costs two
// syncs and no thread per drive. One status per plan; a plan that fails a step drops out.
std::vector<Status> CommitMany(const std::vector<CommitPlan>& plans, SyncBatcher& sync);

// Returns the data directory name the metadata file `meta_path` references ("" when the file
// is missing), or an error when it cannot be read.
using DataNameReader = std::function<Result<std::string>(const std::string& meta_path)>;
// Every data directory name the metadata file references (one per version that has data).
using DataNamesReader =
    std::function<Result<std::vector<std::string>>(const std::string& meta_path)>;

// Completes or rolls back an interrupted Commit() whose staging dir survived a crash. Does not
// remove the staging directory itself.
Status RecoverStaging(const std::string& root, const std::string& staging,
                      const DataNamesReader& read_data_names);
Status RecoverStaging(const std::string& root, const std::string& staging,
                      const DataNameReader& read_data_name);

}  // namespace rdmastor::storage::fsutil
