#include "storage/fsutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/no_block.h"
#include "storage/paths.h"

namespace rdmastor::storage::fsutil {

namespace {

using nlohmann::json;

constexpr const char* kIntentFile = "intent.json";

std::atomic<uint64_t> g_file_syncs{0};
std::atomic<uint64_t> g_dir_syncs{0};
std::atomic<uint64_t> g_fs_syncs{0};
std::atomic<Recorder*> g_recorder{nullptr};

FsOp NewOp(FsOp::Kind kind, const std::string& path, const std::string& path2 = std::string()) {
  FsOp op;
  op.kind = kind;
  op.path = path;
  op.path2 = path2;
  return op;
}

void Report(FsOp::Kind kind, const std::string& path, const std::string& path2 = std::string()) {
  if (Recorder* r = g_recorder.load(std::memory_order_acquire)) r->Record(NewOp(kind, path, path2));
}

// fsync of a directory by path, counted and reported (errno kept on failure).
int SyncDirPath(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  Report(FsOp::kFsyncDir, dir);
  g_dir_syncs.fetch_add(1, std::memory_order_relaxed);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  errno = err;
  return rc;
}

std::string Join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  out += '/';
  out += name;
  return out;
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// True when `path` is `base` or lies below it (purely lexical; callers build paths from
// validated components).
bool IsUnder(const std::string& path, const std::string& base) {
  return path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
         path[base.size()] == '/';
}

// mkdir -p below `base`; returns 0 or the errno of the failing step, with the path in *where.
// sync: fsync the parent of every directory created (false: a later group commit covers them).
// The deepest directory is tried first: a new key mostly lands under an existing prefix, and a
// walk from the top would take every ancestor's lock for an EEXIST (4 of 5 mkdir calls of a
// fresh 4 KiB PUT on each drive, all 32 writers contending for the same few directories).
int MkdirAllErrno(const std::string& base, const std::string& path, std::string* where,
                  bool sync = true) {
  if (path == base) return 0;
  if (!IsUnder(path, base)) {
    *where = path;
    return EINVAL;
  }
  for (int attempt = 0;; ++attempt) {
    if (Mkdir(path, 0755) == 0) {
      // Make the new entry durable in its parent.
      if (sync) (void)SyncDirPath(Parent(path));
      return 0;
    }
    if (errno == EEXIST) return 0;
    if (errno != ENOENT || attempt > 0) {
      *where = path;
      return errno;
    }
    if (const int err = MkdirAllErrno(base, Parent(path), where, sync); err != 0) return err;
  }
}

}  // namespace

SyncCounts GetSyncCounts() {
  return SyncCounts{g_file_syncs.load(std::memory_order_relaxed),
                    g_dir_syncs.load(std::memory_order_relaxed),
                    g_fs_syncs.load(std::memory_order_relaxed)};
}

void SetRecorder(Recorder* r) { g_recorder.store(r, std::memory_order_release); }

namespace {
// A file system call refused under a no-block scope (common/no_block.h): -1 with EAGAIN.
int WouldBlockErrno() {
  errno = EAGAIN;
  return -1;
}
}  // namespace

int Mkdir(const std::string& path, mode_t mode) {
  if (!noblock::MayWait()) return WouldBlockErrno();
  int rc = ::mkdir(path.c_str(), mode);
  if (rc == 0) Report(FsOp::kMkdir, path);
  return rc;
}

int Rename(const std::string& from, const std::string& to) {
  if (!noblock::MayWait()) return WouldBlockErrno();
  int rc = ::rename(from.c_str(), to.c_str());
  if (rc == 0) Report(FsOp::kRename, from, to);
  return rc;
}

int Link(const std::string& from, const std::string& to) {
  if (!noblock::MayWait()) return WouldBlockErrno();
  int rc = ::link(from.c_str(), to.c_str());
  if (rc == 0) Report(FsOp::kLink, from, to);
  return rc;
}

int Unlink(const std::string& path) {
  if (!noblock::MayWait()) return WouldBlockErrno();
  int rc = ::unlink(path.c_str());
  if (rc == 0) Report(FsOp::kUnlink, path);
  return rc;
}

int Rmdir(const std::string& path) {
  if (!noblock::MayWait()) return WouldBlockErrno();
  int rc = ::rmdir(path.c_str());
  if (rc == 0) Report(FsOp::kRmdir, path);
  return rc;
}

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Error ErrnoError(std::string_view op, const std::string& path, int err) {
  std::string msg = std::string(op) + " " + path + ": " + std::strerror(err);
  spdlog::error("storage: {}", msg);
  ErrorCode code = (err == ENOSPC || err == EDQUOT || err == EROFS) ? ErrorCode::kDriveNotWritable
                                                                    : ErrorCode::kInternalError;
  return MakeError(code, std::move(msg));
}

Result<UniqueFd> Open(const std::string& path, int flags, mode_t mode, int* err_out) {
  if (!noblock::MayWait()) {
    if (err_out) *err_out = EAGAIN;
    return noblock::WouldBlock("open " + path);
  }
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    if (err_out) *err_out = err;
    // The caller asked for errno to handle ENOENT itself: that case is expected, not logged.
    if (err == ENOENT && err_out)
      return MakeError(ErrorCode::kInternalError, "open " + path + ": no such file");
    return ErrnoError("open", path, err);
  }
  if (err_out) *err_out = 0;
  if (flags & O_CREAT) {
    if (Recorder* r = g_recorder.load(std::memory_order_acquire)) {
      FsOp op = NewOp(FsOp::kCreate, path);
      op.truncate = (flags & O_TRUNC) != 0;
      r->Record(std::move(op));
    }
  }
  return UniqueFd(fd);
}

// WriteAll without reporting.
Status WriteAllQuiet(int fd, const char* data, size_t len, const std::string& path_for_errors);

Status WriteAll(int fd, const char* data, size_t len, const std::string& path_for_errors) {
  if (!noblock::MayWait()) return noblock::WouldBlock("write " + path_for_errors);
  // Reported after the write, so a sync reported later started after it (see Recorder).
  if (Recorder* r = g_recorder.load(std::memory_order_acquire); r && len > 0) {
    RS_RETURN_IF_ERROR(WriteAllQuiet(fd, data, len, path_for_errors));
    FsOp op = NewOp(FsOp::kWrite, path_for_errors);
    op.data.assign(data, len);
    r->Record(std::move(op));
    return {};
  }
  return WriteAllQuiet(fd, data, len, path_for_errors);
}

Status WriteAllQuiet(int fd, const char* data, size_t len, const std::string& path_for_errors) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path_for_errors, errno);
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return {};
}

Result<size_t> PreadFull(int fd, char* buf, size_t len, uint64_t off,
                         const std::string& path_for_errors) {
  if (!noblock::MayWait()) return noblock::WouldBlock("read " + path_for_errors);
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, buf + got, len - got, static_cast<off_t>(off + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("pread", path_for_errors, errno);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

Status Pwrite(int fd, const char* data, size_t len, uint64_t off, const std::string& path,
              int* err_out) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pwrite(fd, data + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (err_out) {
        *err_out = errno;
        return MakeError(ErrorCode::kInternalError, "pwrite " + path + ": " + std::strerror(errno));
      }
      return ErrnoError("pwrite", path, errno);
    }
    done += static_cast<size_t>(n);
  }
  if (Recorder* r = g_recorder.load(std::memory_order_acquire); r && len > 0) {
    FsOp op = NewOp(FsOp::kWrite, path);
    op.offset = static_cast<int64_t>(off);
    op.data.assign(data, len);
    r->Record(std::move(op));
  }
  return {};
}

Status Fsync(int fd, const std::string& path_for_errors) {
  if (!noblock::MayWait()) return noblock::WouldBlock("fsync " + path_for_errors);
  Report(FsOp::kFsyncFile, path_for_errors);
  g_file_syncs.fetch_add(1, std::memory_order_relaxed);
  if (::fsync(fd) != 0) return ErrnoError("fsync", path_for_errors, errno);
  return {};
}

Status FsyncDir(const std::string& dir) {
  if (!noblock::MayWait()) return noblock::WouldBlock("fsync " + dir);
  if (SyncDirPath(dir) != 0) return ErrnoError("fsync dir", dir, errno);
  return {};
}

Status WriteFile(const std::string& path, std::string_view data) {
  auto fd = Open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!fd.ok()) return fd.error();
  return WriteAll(fd->get(), data.data(), data.size(), path);
}

Status WriteFileDurable(const std::string& path, std::string_view data) {
  auto fd = Open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!fd.ok()) return fd.error();
  RS_RETURN_IF_ERROR(WriteAll(fd->get(), data.data(), data.size(), path));
  return Fsync(fd->get(), path);
}

Result<std::shared_ptr<SyncBatcher>> SyncBatcher::For(const std::string& dir) {
  static std::mutex mu;
  static std::map<dev_t, std::weak_ptr<SyncBatcher>> by_dev;
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open dir", dir, errno);
  UniqueFd guard(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError("stat", dir, errno);
  std::lock_guard lock(mu);
  if (auto b = by_dev[st.st_dev].lock()) return b;
  auto b = std::make_shared<SyncBatcher>(std::move(guard), st.st_dev, dir);
  by_dev[st.st_dev] = b;
  return b;
}

SyncBatcher::Active::Active(SyncBatcher& b) : b_(b) {
  std::lock_guard lock(b_.mu_);
  ++b_.active_;
}

SyncBatcher::Active::~Active() {
  std::lock_guard lock(b_.mu_);
  --b_.active_;
  b_.cv_.notify_all();
}

Status SyncBatcher::Sync() {
  std::unique_lock lock(mu_);
  // The first generation that starts after this call covers everything written before it.
  const uint64_t need = started_ + 1;
  ++waiting_;
  cv_.notify_all();  // a gathering leader counts arrivals
  while (done_ < need) {
    if (running_ || gathering_) {
      cv_.wait(lock);
      continue;
    }
    // Leader. Registered commits that are not waiting here yet are about to reach a barrier
    // (or to finish): wait for them a moment, so one syncfs covers them too.
    gathering_ = true;
    const auto deadline = std::chrono::steady_clock::now() + kGather;
    while (waiting_ < active_ && cv_.wait_until(lock, deadline) != std::cv_status::timeout) {
    }
    gathering_ = false;
    running_ = true;
    const uint64_t gen = ++started_;
    lock.unlock();
    Report(FsOp::kSyncFs, dir_);
    g_fs_syncs.fetch_add(1, std::memory_order_relaxed);
    const int rc = ::syncfs(fd_.get());
    const int err = errno;
    lock.lock();
    running_ = false;
    done_ = gen;
    if (rc != 0) {
      failed_.emplace_back(gen, ErrnoError("syncfs", dir_, err));
      if (failed_.size() > 64) failed_.erase(failed_.begin());
    }
    cv_.notify_all();
  }
  --waiting_;
  for (const auto& [gen, error] : failed_) {
    if (gen == need) return error;
  }
  return {};
}

Result<std::optional<std::string>> ReadFileIfExists(const std::string& path, struct stat* st) {
  if (!noblock::MayWait()) return noblock::WouldBlock("read " + path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return ErrnoError("open", path, errno);
  }
  UniqueFd guard(fd);
  if (st && ::fstat(fd, st) != 0) return ErrnoError("fstat", path, errno);
  // One read for any file that fits the buffer (every metadata file, inline data included): a
  // regular file's read comes back short only at its end, so neither an fstat for the size nor a
  // second read that returns 0 is needed. Files read here are replaced by rename, never rewritten
  // in place, so a short read cannot be a writer's half-written end.
  thread_local std::vector<char> buf(256 << 10);
  std::string out;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", path, errno);
    }
    out.append(buf.data(), static_cast<size_t>(n));
    if (static_cast<size_t>(n) < buf.size()) break;
  }
  return std::optional<std::string>(std::move(out));
}

bool Exists(const std::string& path) {
  if (!noblock::MayWait()) return false;
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsDir(const std::string& path) {
  if (!noblock::MayWait()) return false;
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status MkdirAll(const std::string& base, const std::string& path, bool sync) {
  std::string where;
  int err = MkdirAllErrno(base, path, &where, sync);
  if (err != 0) return ErrnoError("mkdir", where, err);
  return {};
}

namespace {

// A commit's staging directory (<root>/.rdmastor.sys/tmp/<32 hex>) holds a few files of known
// names: removing them by name spares reading directories (opendir/getdents) on every PUT.
// False when something else is left (a multipart object's parts, a leftover): then the caller
// removes the rest recursively.
bool IsStagingDir(const std::string& path) {
  const std::string parent = Parent(path);
  const std::string_view id = std::string_view(path).substr(parent.size() + 1);
  return parent.ends_with("/.rdmastor.sys/tmp") && id.size() == 32 &&
         id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A staged or retired data directory (<staging>/data, <staging>/old) of a single-part object.
bool RemoveDataDirByName(const std::string& sub) {
  (void)Unlink(Join(sub, "part.1"));
  return Rmdir(sub) == 0 || errno == ENOENT;
}

bool RemoveStagingByName(const std::string& path) {
  if (!IsStagingDir(path)) {
    // The retired data of a reused staging directory (RenameDataRequest::keep_staging).
    return path.ends_with("/old") && IsStagingDir(Parent(path)) && RemoveDataDirByName(path);
  }
  for (const char* f : {kIntentFile, "meta"}) (void)Unlink(Join(path, f));
  for (const char* d : {"old", "data"}) {
    if (!RemoveDataDirByName(Join(path, d))) return false;
  }
  return Rmdir(path) == 0 || errno == ENOENT;
}

}  // namespace

Status RemoveAll(const std::string& path) {
  if (RemoveStagingByName(path)) return {};
  std::error_code ec;
  const auto removed = std::filesystem::remove_all(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return ErrnoError("remove", path, ec.value());
  }
  if (removed > 0 && removed != static_cast<std::uintmax_t>(-1)) Report(FsOp::kRemoveAll, path);
  return {};
}

void PruneEmptyDirs(const std::string& dir, const std::string& stop) {
  std::string cur = dir;
  while (IsUnder(cur, stop)) {
    // Not empty: someone else's entries. Missing (a crash hit mkdir -p midway): go on upwards.
    if (Rmdir(cur) != 0 && errno != ENOENT) return;
    cur = Parent(cur);
  }
}

Result<std::vector<std::string>> ListDir(const std::string& dir, bool dirs_only) {
  if (!noblock::MayWait()) return noblock::WouldBlock("list " + dir);
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    // A directory removed under a concurrent walk simply has no entries.
    if (errno == ENOENT || errno == ENOTDIR) return std::vector<std::string>();
    return ErrnoError("opendir", dir, errno);
  }
  std::vector<std::string> out;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (dirs_only) {
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {  // some file systems do not fill d_type
        struct stat st;
        is_dir =
            ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      if (!is_dir) continue;
    }
    out.emplace_back(name);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoError("readdir", dir, err);
  return out;
}

namespace {

// Writes a commit's intent journal in place: a reused staging directory (RenameDataRequest::
// keep_staging) still holds the journal of its previous commit, and overwriting that file costs
// no inode, where a create + unlink per commit costs two (on ext4 without a journal each new
// inode scans past every inode freed in the last seconds: 65% of the server's CPU at 4 KiB PUT
// c=32). The JSON is padded with spaces (which a parser skips) to whole blocks and at least to
// the file's size, so no tail of an older, longer journal survives and the file never shrinks
// (a truncation would free its block). A crash before barrier 1 may leave the old journal, the
// new one or a torn mix; a mix fails to parse and recovery ignores it, and an old journal names
// only data directories that are referenced or garbage (see RecoverStaging).
Status WriteJournal(const std::string& path, const std::string& json_text) {
  auto fd = Open(path, O_WRONLY | O_CREAT, 0644);
  if (!fd.ok()) return fd.error();
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return ErrnoError("fstat", path, errno);
  constexpr size_t kBlock = 4096;
  size_t len = (json_text.size() + kBlock - 1) / kBlock * kBlock;
  len = std::max(len, static_cast<size_t>(st.st_size));
  std::string padded = json_text;
  padded.resize(len, ' ');
  return Pwrite(fd->get(), padded.data(), padded.size(), 0, path);
}

// Step 1 of a commit: checks the plan and journals what it may orphan (not synced by itself:
// barrier 1 makes the journal durable together with the staged data and metadata, before anything
// touches the target, so a torn journal after a crash means the target was never touched).
Status CommitBegin(const CommitPlan& plan) {
  // The names are joined to the target: a name that is not the layout's own could leave the drive
  // (old data is retired by rename, or removed in place) or take a neighbouring key's directory.
  if (!paths::IsMetaFileName(plan.meta_name) ||
      (!plan.new_data_name.empty() && !paths::IsDataDirName(plan.new_data_name)) ||
      (!plan.old_data_name.empty() && !paths::IsDataDirName(plan.old_data_name))) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "commit names not of the drive layout: meta '" + plan.meta_name + "', data '" +
                         plan.new_data_name + "', old data '" + plan.old_data_name + "'");
  }
  if (!IsUnder(plan.target, plan.base) || !IsUnder(plan.base, plan.root) ||
      !IsUnder(plan.staging, plan.root)) {
    return MakeError(ErrorCode::kInternalError, "commit target outside drive: " + plan.target);
  }
  try {
    json intent = {{"version", 1},
                   {"base", plan.base.substr(plan.root.size() + 1)},
                   {"target", plan.target.substr(plan.root.size() + 1)},
                   {"meta", plan.meta_name},
                   {"data", json::array()}};
    if (!plan.new_data_name.empty()) intent["data"].push_back(plan.new_data_name);
    if (!plan.old_data_name.empty()) intent["data"].push_back(plan.old_data_name);
    return WriteJournal(Join(plan.staging, kIntentFile), intent.dump());
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, std::string("commit intent: ") + e.what());
  }
}

// Steps 2 and 3, after barrier 1: creates the target, moves the data in and replaces (or removes)
// the metadata file, the commit point. A failure puts the data back into staging.
Status CommitSwap(const CommitPlan& plan) {
  const std::string staged_data = Join(plan.staging, "data");
  const std::string staged_meta = Join(plan.staging, "meta");
  const std::string target_meta = Join(plan.target, plan.meta_name);
  const bool has_meta = Exists(staged_meta);
  bool data_moved = false;
  auto rollback = [&] {
    if (data_moved) (void)Rename(Join(plan.target, plan.new_data_name), staged_data);
  };

  // 2. Create the target and move the data in. A concurrent delete of a neighbouring key may
  // prune a freshly created (still empty) target between the two steps: retry then. The new
  // directories need no sync of their own: barrier 2 covers them.
  if (!plan.new_data_name.empty()) {
    const std::string dest = Join(plan.target, plan.new_data_name);
    // The rename comes first: an overwrite's target exists, so it needs no mkdir.
    for (int attempt = 0;; ++attempt) {
      if (Rename(staged_data, dest) == 0) break;
      int err = errno;
      std::string where = dest;
      const char* op = "rename";
      if (err == ENOENT && attempt < 16) {
        err = MkdirAllErrno(plan.base, plan.target, &where, /*sync=*/false);
        op = "mkdir";
        if (err == 0 || err == ENOENT) continue;
      }
      return ErrnoError(op, where, err);
    }
    data_moved = true;
  }

  // 3. The commit point: the metadata file is replaced (or removed) atomically. Without a data
  // directory moved in first (inline objects, metadata updates) the target may not exist (a
  // fresh key), or a concurrent delete of a neighbouring key may prune it between its creation
  // and the rename: create it and retry then (an overwrite needs neither a stat nor a mkdir).
  if (has_meta) {
    for (int attempt = 0;; ++attempt) {
      if (Rename(staged_meta, target_meta) == 0) break;
      int err = errno;
      std::string where = target_meta;
      const char* op = "rename";
      if (err == ENOENT && !data_moved && attempt < 16) {
        err = MkdirAllErrno(plan.base, plan.target, &where, /*sync=*/false);
        op = "mkdir";
        if (err == 0 || err == ENOENT) continue;
      }
      rollback();
      return ErrnoError(op, where, err);
    }
  } else if (Unlink(target_meta) != 0 && errno != ENOENT) {
    int err = errno;
    rollback();
    return ErrnoError("unlink", target_meta, err);
  }
  return {};
}

// Step 4, after barrier 2: retires the old data into the staging area, where the caller (or
// recovery) deletes it. Not synced: after a crash recovery finds the journal and removes it again.
void CommitRetire(const CommitPlan& plan) {
  if (!plan.old_data_name.empty() && plan.old_data_name != plan.new_data_name) {
    const std::string old = Join(plan.target, plan.old_data_name);
    if (Rename(old, Join(plan.staging, "old")) != 0 && errno != ENOENT) {
      spdlog::warn("storage: cannot retire {}: {}; removing in place", old, std::strerror(errno));
      (void)RemoveAll(old);
    }
  }
}

}  // namespace

Status Commit(const CommitPlan& plan, SyncBatcher* sync) {
  if (!noblock::MayWait()) return noblock::WouldBlock("commit");
  std::shared_ptr<SyncBatcher> own;
  if (!sync) {
    auto b = SyncBatcher::For(plan.root);
    if (!b.ok()) return b.error();
    own = std::move(*b);
    sync = own.get();
  }
  return std::move(CommitMany({plan}, *sync).front());
}

std::vector<Status> CommitMany(const std::vector<CommitPlan>& plans, SyncBatcher& sync) {
  const size_t n = plans.size();
  std::vector<Status> out(n);
  // A barrier for the plans still in the commit: false (each of them failed with its error) when
  // none is left or the sync failed.
  auto barrier = [&] {
    if (!std::any_of(out.begin(), out.end(), [](const Status& s) { return s.ok(); })) return false;
    auto st = sync.Sync();
    if (st.ok()) return true;
    for (auto& s : out) {
      if (s.ok()) s = st;
    }
    return false;
  };
  // Registered until barrier 2 is behind it (other commits' barriers wait for it briefly).
  std::optional<SyncBatcher::Active> active(std::in_place, sync);
  for (size_t i = 0; i < n; ++i) out[i] = CommitBegin(plans[i]);
  // Barrier 1 (group commit): staged files, their directories and the journals are durable.
  if (!barrier()) return out;
  for (size_t i = 0; i < n; ++i) {
    if (out[i].ok()) out[i] = CommitSwap(plans[i]);
  }
  // Barrier 2 (group commit): the renames are durable; only now may the writes be acknowledged.
  // A failure leaves the new versions visible but maybe not durable: these drives do not count
  // towards the write's quorum.
  if (!barrier()) return out;
  active.reset();
  for (size_t i = 0; i < n; ++i) {
    if (out[i].ok()) CommitRetire(plans[i]);
  }
  return out;
}

Status RecoverStaging(const std::string& root, const std::string& staging,
                      const DataNameReader& read_data_name) {
  return RecoverStaging(root, staging,
                        [&](const std::string& meta_path) -> Result<std::vector<std::string>> {
                          auto name = read_data_name(meta_path);
                          if (!name.ok()) return name.error();
                          if (name->empty()) return std::vector<std::string>{};
                          return std::vector<std::string>{*name};
                        });
}

Status RecoverStaging(const std::string& root, const std::string& staging,
                      const DataNamesReader& read_data_names) {
  // The journal may be stale: a reused staging directory keeps its last commit's journal, long
  // finished, until the next commit overwrites it. Acting on it is harmless: recovery removes only
  // a named data directory that exists in the target and that the target's metadata does not
  // reference, and data directory names are unique (random), so such a directory is either
  // garbage or the new (or retired) data of a commit cut short, whose own journal names it too
  // (made durable by barrier 1 before the directory entered the target) and has it removed anyway.
  auto raw = ReadFileIfExists(Join(staging, kIntentFile));
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return {};  // crashed before journaling: nothing reached the target
  // The journal is made durable (barrier 1) before the target is touched: a torn or empty one
  // means the crash came first, and nothing reached the target.
  json intent = json::parse(**raw, nullptr, /*allow_exceptions=*/false);
  if (intent.is_discarded() || !intent.is_object()) {
    spdlog::info("storage: recovery ignores the unfinished journal in {}", staging);
    return {};
  }
  try {
    std::string rel = intent.at("target").get<std::string>();
    std::string base_rel = intent.value("base", std::string());
    std::string meta = intent.at("meta").get<std::string>();
    // Defense in depth: the journal is ours, but never act outside the drive.
    auto bad_rel = [](const std::string& r) {
      return r.empty() || r.front() == '/' || ("/" + r + "/").find("/../") != std::string::npos;
    };
    if (bad_rel(rel) || !paths::IsMetaFileName(meta)) {
      return MakeError(ErrorCode::kInternalError, "bad intent journal in " + staging);
    }
    const std::string target = Join(root, rel);
    // Every version's data directory is referenced, not only the latest one's.
    auto current = read_data_names(Join(target, meta));
    if (!current.ok()) return current.error();  // unreadable metadata: keep everything
    for (const auto& d : intent.at("data")) {
      std::string name = d.get<std::string>();
      if (!paths::IsDataDirName(name)) continue;
      if (std::find(current->begin(), current->end(), name) == current->end() &&
          Exists(Join(target, name))) {
        spdlog::info("storage: recovery removes orphaned {}", Join(target, name));
        RS_RETURN_IF_ERROR(RemoveAll(Join(target, name)));
      }
    }
    // A crash between mkdir and rename may have left empty directories behind.
    if (!bad_rel(base_rel)) PruneEmptyDirs(target, Join(root, base_rel));
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError,
                     "bad intent journal in " + staging + ": " + e.what());
  }
  return {};
}

}  // namespace rdmastor::storage::fsutil
