#include "storage/local_drive.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/hash.h"
#include "common/no_block.h"
#include "storage/listing.h"
#include "storage/object_meta.h"
#include "storage/paths.h"

namespace rdmastor::storage {

namespace {

using fsutil::UniqueFd;
using paths::Join;

class LocalShardWriter final : public ShardWriter {
 public:
  LocalShardWriter(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    return fsutil::WriteAll(fd_.get(), data.data(), data.size(), path_);
  }
  Status Finish() override { return fsutil::Fsync(fd_.get(), path_); }
  // The commit's barrier makes the file durable (see Drive::RenameData).
  Status Close() override {
    fd_.Reset();
    return {};
  }

 private:
  UniqueFd fd_;
  std::string path_;
};

class LocalShardFile final : public ShardFile {
 public:
  LocalShardFile(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    return fsutil::PreadFull(fd_.get(), buf, len, off, path_);
  }
  Result<size_t> ReadFramedAt(uint64_t off, char* head, size_t head_len, char* buf,
                              size_t len) override {
    if (!noblock::MayWait()) return noblock::WouldBlock("read " + path_);
    struct iovec iov[2] = {{head, head_len}, {buf, len}};
    ssize_t n;
    do {
      n = ::preadv(fd_.get(), iov, 2, static_cast<off_t>(off));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return fsutil::ErrnoError("preadv", path_, errno);
    const auto got = static_cast<size_t>(n);
    if (got == 0 || got == head_len + len) return got;
    // A short read: at the end of the file, or (rarely) cut short; finish piece by piece.
    if (got < head_len) {
      auto h = fsutil::PreadFull(fd_.get(), head + got, head_len - got, off + got, path_);
      if (!h.ok()) return h;
      if (got + *h < head_len) return got + *h;
      auto d = fsutil::PreadFull(fd_.get(), buf, len, off + head_len, path_);
      if (!d.ok()) return d;
      return head_len + *d;
    }
    const size_t have = got - head_len;
    auto d = fsutil::PreadFull(fd_.get(), buf + have, len - have, off + got, path_);
    if (!d.ok()) return d;
    return got + *d;
  }
  ~LocalShardFile() override {
    if (map_) ::munmap(map_, map_len_);
  }
  // Mapped once per open file (one GET). Shard files are never written or truncated once
  // published (heal and overwrites write new files), so the mapping cannot shrink under a reader;
  // a file already shorter than its metadata says is not mapped (the read path reports it).
  std::string_view Map(uint64_t size) override {
    if (map_ && size <= map_len_) return {static_cast<const char*>(map_), size};
    if (map_ || map_failed_ || size == 0 || !noblock::MayWait()) return {};
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < size) {
      map_failed_ = true;
      return {};
    }
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) {
      map_failed_ = true;
      return {};
    }
    map_ = p;
    map_len_ = size;
    return {static_cast<const char*>(map_), size};
  }

 private:
  UniqueFd fd_;
  std::string path_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  bool map_failed_ = false;
};

}  // namespace

Result<std::string> DataDirOfMetaFile(const std::string& meta_path) {
  auto raw = fsutil::ReadFileIfExists(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return std::string();
  auto meta = ParseObjectMeta(**raw, meta_path);
  if (!meta.ok()) return meta.error();
  return meta->data_dir;
}

Result<std::vector<std::string>> DataDirsOfMetaFile(const std::string& meta_path) {
  auto raw = fsutil::ReadFileIfExists(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return std::vector<std::string>{};
  auto file = ParseObjectVersions(**raw, meta_path);
  if (!file.ok()) return file.error();
  return file->DataDirs();
}

LocalDrive::LocalDrive(std::string root, uint64_t meta_cache_bytes)
    : root_(std::move(root)), meta_cache_(meta_cache_bytes) {}

Result<std::string> LocalDrive::Abs(const std::string& path) const {
  RS_RETURN_IF_ERROR(CheckRelPath(path));
  return path.empty() ? root_ : Join(root_, path);
}

#define RS_ABS(var, path)                    \
  auto var##_r = Abs(path);                  \
  if (!var##_r.ok()) return var##_r.error(); \
  const std::string& var = *var##_r

bool LocalDrive::IsOnline() { return fsutil::IsDir(paths::SysDir(root_)); }

Result<DiskInfo> LocalDrive::GetDiskInfo() {
  DiskInfo info;
  struct statvfs vfs {};
  if (::statvfs(root_.c_str(), &vfs) != 0) return fsutil::ErrnoError("statvfs", root_, errno);
  info.total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  info.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  info.online = IsOnline();
  return info;
}

Result<bool> LocalDrive::EnsureRoot() {
  meta_cache_.Clear();  // a drive found again may be another disk
  std::error_code ec;
  std::filesystem::create_directories(root_, ec);
  if (!fsutil::IsDir(root_)) {
    spdlog::warn("drive {} is offline: not a directory ({})", root_, ec.message());
    return false;
  }
  return true;
}

Status LocalDrive::Prepare() {
  struct ClearAfter {  // crash recovery rewrites metadata files
    MetaFileCache& c;
    ~ClearAfter() { c.Clear(); }
  } clear_after{meta_cache_};
  for (const std::string& d : {paths::SysDir(root_), paths::TmpDir(root_),
                               paths::MultipartRoot(root_), paths::BucketsMetaDir(root_)}) {
    if (fsutil::Mkdir(d, 0755) != 0 && errno != EEXIST)
      return fsutil::ErrnoError("mkdir", d, errno);
  }
  auto entries = fsutil::ListDir(paths::TmpDir(root_), /*dirs_only=*/false);
  if (!entries.ok()) return entries.error();
  for (const auto& e : *entries) {
    const std::string staging = Join(paths::TmpDir(root_), e);
    if (fsutil::IsDir(staging)) {
      auto st = fsutil::RecoverStaging(root_, staging, DataDirsOfMetaFile);
      if (!st.ok()) spdlog::error("storage: recovery of {}: {}", staging, st.error().message);
    }
    RS_RETURN_IF_ERROR(fsutil::RemoveAll(staging));
  }
  return {};
}

Result<bool> LocalDrive::IsEmpty() { return IsEmptyDrive(root_); }

Result<DriveFormat> LocalDrive::ReadFormat() { return storage::ReadFormat(root_); }

Status LocalDrive::WriteFormat(const DriveFormat& format) {
  meta_cache_.Clear();  // a replaced drive is formatted into its slot: nothing read before holds
  return WriteFormatFile(root_, format);
}

Result<bool> LocalDrive::MakeVol(const std::string& bucket, const std::string& record) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  if (!IsOnline()) {
    return MakeError(ErrorCode::kInternalError, "drive " + root_ + " is offline");
  }
  bool existed = false;
  const std::string dir = paths::BucketDir(root_, bucket);
  if (fsutil::Mkdir(dir, 0755) != 0) {
    if (errno != EEXIST) return fsutil::ErrnoError("mkdir", dir, errno);
    existed = true;
  } else {
    (void)fsutil::FsyncDir(root_);
  }
  const std::string meta = paths::BucketMetaFile(root_, bucket);
  if (!fsutil::Exists(meta)) {
    (void)fsutil::MkdirAll(root_, paths::BucketsMetaDir(root_));
    (void)fsutil::WriteFileDurable(meta, record);
  }
  return existed;
}

bool LocalDrive::StatVol(const std::string& bucket) {
  return paths::ValidateBucketName(bucket).ok() && fsutil::IsDir(paths::BucketDir(root_, bucket));
}

Result<std::vector<std::string>> LocalDrive::ListVols() {
  return fsutil::ListDir(root_, /*dirs_only=*/true);
}

Result<std::optional<std::string>> LocalDrive::ReadVolMeta(const std::string& bucket) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  return fsutil::ReadFileIfExists(paths::BucketMetaFile(root_, bucket));
}

Result<bool> LocalDrive::VolHasObjects(const std::string& bucket) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  return SubtreeHasObject(paths::BucketDir(root_, bucket));
}

Status LocalDrive::DeleteVol(const std::string& bucket) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  const std::string staging = Join(paths::TmpDir(root_), hash::RandomHex(16));
  if (fsutil::Mkdir(staging, 0700) != 0) {
    (void)fsutil::RemoveAll(paths::BucketDir(root_, bucket));
  } else {
    (void)fsutil::Rename(paths::BucketDir(root_, bucket), Join(staging, "bucket"));
    (void)fsutil::Rename(paths::MultipartBucketDir(root_, bucket), Join(staging, "mp"));
    (void)fsutil::RemoveAll(staging);
  }
  (void)fsutil::Unlink(paths::BucketMetaFile(root_, bucket));
  meta_cache_.InvalidateBelow(bucket);
  return fsutil::FsyncDir(root_);
}

Result<std::optional<std::string>> LocalDrive::ReadFile(const std::string& path) {
  RS_ABS(abs, path);
  const std::string_view name = std::string_view(path).substr(path.rfind('/') + 1);
  if (paths::IsMetaFileName(name)) return meta_cache_.Read(path, abs);
  return fsutil::ReadFileIfExists(abs);
}

// Each change below invalidates the cached metadata files it touched once it is done, failed or
// not (a failure may have changed part of it).
Status LocalDrive::WriteFile(const std::string& path, std::string_view data) {
  RS_ABS(abs, path);
  auto st = fsutil::WriteFileDurable(abs, data);
  meta_cache_.InvalidateBelow(path);
  return st;
}

bool LocalDrive::Exists(const std::string& path) {
  auto abs = Abs(path);
  return abs.ok() && fsutil::Exists(*abs);
}

bool LocalDrive::IsDir(const std::string& path) {
  auto abs = Abs(path);
  return abs.ok() && fsutil::IsDir(*abs);
}

Result<std::vector<std::string>> LocalDrive::ListDir(const std::string& path, bool dirs_only) {
  RS_ABS(abs, path);
  return fsutil::ListDir(abs, dirs_only);
}

Status LocalDrive::MakeDir(const std::string& path) {
  RS_ABS(abs, path);
  if (fsutil::Mkdir(abs, 0755) != 0) return fsutil::ErrnoError("mkdir", abs, errno);
  return {};
}

Status LocalDrive::MakeDirAll(const std::string& base, const std::string& path) {
  RS_ABS(abs_base, base);
  RS_ABS(abs, path);
  return fsutil::MkdirAll(abs_base, abs);
}

Status LocalDrive::Rename(const std::string& from, const std::string& to) {
  RS_ABS(a, from);
  RS_ABS(b, to);
  const int rc = fsutil::Rename(a, b), err = errno;
  meta_cache_.InvalidateBelow(from);
  meta_cache_.InvalidateBelow(to);
  if (rc != 0) return fsutil::ErrnoError("rename", a, err);
  return {};
}

Status LocalDrive::Link(const std::string& from, const std::string& to) {
  RS_ABS(a, from);
  RS_ABS(b, to);
  const int rc = fsutil::Link(a, b), err = errno;
  meta_cache_.InvalidateBelow(to);
  if (rc != 0) return fsutil::ErrnoError("link", a, err);
  return {};
}

Status LocalDrive::Unlink(const std::string& path) {
  RS_ABS(abs, path);
  const int rc = fsutil::Unlink(abs), err = errno;
  meta_cache_.InvalidateBelow(path);
  if (rc != 0 && err != ENOENT) return fsutil::ErrnoError("unlink", abs, err);
  return {};
}

Status LocalDrive::RemoveAll(const std::string& path) {
  RS_ABS(abs, path);
  if (abs == root_) return MakeError(ErrorCode::kInvalidArgument, "refusing to remove a drive");
  auto st = fsutil::RemoveAll(abs);
  meta_cache_.InvalidateBelow(path);
  return st;
}

Status LocalDrive::FsyncDir(const std::string& path) {
  RS_ABS(abs, path);
  return fsutil::FsyncDir(abs);
}

void LocalDrive::PruneEmptyDirs(const std::string& path, const std::string& stop) {
  auto a = Abs(path);
  auto b = Abs(stop);
  if (a.ok() && b.ok()) fsutil::PruneEmptyDirs(*a, *b);
}

namespace {
// True for a path strictly inside the staging area (.rdmastor.sys/tmp/...).
bool InStaging(std::string_view path) {
  const std::string tmp = rel::Tmp() + "/";
  return path.size() > tmp.size() && path.starts_with(tmp);
}
}  // namespace

Result<fsutil::UniqueFd> LocalDrive::CreateShardFile(const std::string& path,
                                                     const std::string& abs, int extra_flags,
                                                     int* err_out) const {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | extra_flags;
  int err = 0;
  auto fd = fsutil::Open(abs, flags, 0644, &err);
  if (err_out) *err_out = err;
  if (fd.ok() || err != ENOENT || !InStaging(path)) return fd;
  // The staging directory (and the shard's parent in it) is made by the first shard write; the
  // commit's first barrier makes the new entries durable.
  const std::string parent = abs.substr(0, abs.rfind('/'));
  RS_RETURN_IF_ERROR(fsutil::MkdirAll(paths::TmpDir(root_), parent, /*sync=*/false));
  fd = fsutil::Open(abs, flags, 0644, &err);
  if (err_out) *err_out = err;
  return fd;
}

Result<std::unique_ptr<ShardWriter>> LocalDrive::CreateShard(const std::string& path,
                                                             uint64_t /*size*/) {
  RS_ABS(abs, path);
  auto fd = CreateShardFile(path, abs);
  if (!fd.ok()) return fd.error();
  return std::unique_ptr<ShardWriter>(new LocalShardWriter(std::move(*fd), abs));
}

Result<std::unique_ptr<ShardFile>> LocalDrive::OpenShard(const std::string& path,
                                                         uint64_t /*size*/) {
  RS_ABS(abs, path);
  int err = 0;
  auto fd = fsutil::Open(abs, O_RDONLY, 0, &err);
  if (!fd.ok()) return fd.error();
  return std::unique_ptr<ShardFile>(new LocalShardFile(std::move(*fd), abs));
}

namespace {
std::atomic<bool> g_direct_writes{true};
}  // namespace

void LocalDrive::SetDirectWrites(bool on) { g_direct_writes.store(on); }
bool LocalDrive::direct_writes() { return g_direct_writes.load(std::memory_order_relaxed); }

void LocalDrive::DirectRefused(const std::string& abs, const char* step) {
  if (!direct_refused_.exchange(true))
    spdlog::info(
        "storage: {} refuses direct I/O ({} {}): shard writes on this drive go through "
        "the page cache",
        root_, step, abs);
}

Status LocalDrive::WriteShardAt(const std::string& path, uint64_t offset, std::string_view data,
                                bool create, bool sync) {
  RS_ABS(abs, path);
  constexpr size_t kAlign = fsutil::kDirectIoAlign;
  // The page-cache copy of every shard byte was ~11% of a 1 MiB PUT's server CPU (perf, 4 drives);
  // the erasure writer hands over aligned pieces (FrameBuffers), whose whole blocks skip it.
  size_t direct = 0;
  if (direct_writes() && !direct_refused_.load(std::memory_order_relaxed) && offset % kAlign == 0 &&
      reinterpret_cast<uintptr_t>(data.data()) % kAlign == 0)
    direct = data.size() / kAlign * kAlign;
  int err = 0;
  Result<UniqueFd> fd = MakeError(ErrorCode::kInternalError, "not opened");
  if (direct > 0) {
    fd = create ? CreateShardFile(path, abs, O_DIRECT, &err)
                : fsutil::Open(abs, O_WRONLY | O_DIRECT, 0644, &err);
    if (!fd.ok() && err == EINVAL) {
      // Refused at open; a creating open made the (empty) file before it failed (opened again
      // with O_CREAT, so that the crash harness's recorder sees the creation).
      DirectRefused(abs, "open");
      direct = 0;
      fd = fsutil::Open(abs, O_WRONLY | (create ? O_CREAT : 0), 0644);
    }
  } else {
    fd = create ? CreateShardFile(path, abs) : fsutil::Open(abs, O_WRONLY, 0644);
  }
  if (!fd.ok()) return fd.error();
  const bool opened_direct = direct > 0;
  if (direct > 0) {
    auto st = fsutil::Pwrite(fd->get(), data.data(), direct, offset, abs, &err);
    if (!st.ok() && err != EINVAL) return fsutil::ErrnoError("pwrite", abs, err);
    if (!st.ok()) {
      DirectRefused(abs, "pwrite");
      direct = 0;  // all of it again, through the page cache
    }
  }
  if (direct < data.size()) {
    // The unaligned rest (the file's last bytes) through the page cache.
    if (opened_direct) {
      const int fl = ::fcntl(fd->get(), F_GETFL);
      if (fl < 0 || ::fcntl(fd->get(), F_SETFL, fl & ~O_DIRECT) != 0)
        return fsutil::ErrnoError("fcntl", abs, errno);
    }
    RS_RETURN_IF_ERROR(fsutil::Pwrite(fd->get(), data.data() + direct, data.size() - direct,
                                      offset + direct, abs));
  }
  if (sync) return fsutil::Fsync(fd->get(), abs);
  return {};
}

Result<std::shared_ptr<fsutil::SyncBatcher>> LocalDrive::Batcher() {
  struct stat st;
  if (::stat(root_.c_str(), &st) != 0) return fsutil::ErrnoError("stat", root_, errno);
  std::lock_guard lock(batcher_mu_);
  if (!batcher_ || batcher_->dev() != st.st_dev) {
    auto b = fsutil::SyncBatcher::For(root_);
    if (!b.ok()) return b.error();
    batcher_ = std::move(*b);
  }
  return batcher_;
}

Status LocalDrive::Commit(const fsutil::CommitPlan& plan) {
  RS_ABS(base, plan.base);
  RS_ABS(staging, plan.staging);
  RS_ABS(target, plan.target);
  fsutil::CommitPlan abs = plan;
  abs.root = root_;
  abs.base = base;
  abs.staging = staging;
  abs.target = target;
  auto batcher = Batcher();
  if (!batcher.ok()) return batcher.error();
  auto st = fsutil::Commit(abs, batcher->get());
  meta_cache_.Invalidate(Join(plan.target, plan.meta_name));
  return st;
}

Result<LocalDrive::StagedRename> LocalDrive::StageRename(const RenameDataRequest& req) {
  // Every name is checked before anything is touched (fsutil::Commit checks them again).
  RS_RETURN_IF_ERROR(CheckRenameDataRequest(req));
  RS_ABS(staging, req.staging);
  RS_ABS(target, req.key_dir);
  const std::string base = paths::BucketDir(root_, req.bucket);
  if (!fsutil::IsDir(base)) return MakeError(ErrorCode::kNoSuchBucket);
  StagedRename staged;
  RenameDataResult& out = staged.out;
  const std::string meta_path = Join(target, req.meta_name);
  auto old = fsutil::ReadFileIfExists(meta_path);
  if (!old.ok()) return old.error();
  // The current file's versions; a corrupt file names no data directory: a commit replaces it,
  // retiring nothing.
  std::optional<ObjectVersions> current;
  if (old->has_value()) {
    if (auto f = ParseObjectVersions(**old, meta_path); f.ok()) current = std::move(*f);
    out.old_meta = std::move(*old);
  }
  std::optional<std::string> new_meta = req.meta;
  std::string& old_data = staged.old_data;
  std::vector<std::string>& extra_data = staged.extra_data;
  switch (req.mode) {
    case RenameMode::kReplace: {
      std::vector<std::string> keep;
      if (req.meta) {
        if (auto f = ParseObjectVersions(*req.meta, "renamedata meta"); f.ok())
          keep = f->DataDirs();
      }
      if (current && !req.keep_data) {
        for (const auto& d : current->DataDirs()) {
          if (std::find(keep.begin(), keep.end(), d) != keep.end()) continue;
          if (old_data.empty() && d == current->Latest()->data_dir)
            old_data = d;
          else
            extra_data.push_back(d);
        }
        // Only a whole-file removal drops versions other than the latest one's data.
        if (req.meta) extra_data.clear();
      }
      break;
    }
    case RenameMode::kAddVersion: {
      if (!req.meta) return MakeError(ErrorCode::kInvalidArgument, "add version without meta");
      auto add = ParseObjectVersions(*req.meta, "renamedata meta");
      if (!add.ok()) return MakeError(ErrorCode::kInvalidArgument, add.error().message);
      if (add->versions.size() != 1)
        return MakeError(ErrorCode::kInvalidArgument, "add version: not one version");
      ObjectVersions file = current ? std::move(*current) : ObjectVersions{};
      const std::string new_dir = add->versions.front().data_dir;
      auto replaced = file.Add(std::move(add->versions.front()));
      if (replaced && !replaced->data_dir.empty() && replaced->data_dir != new_dir &&
          !req.keep_data)
        old_data = replaced->data_dir;
      new_meta = SerializeObjectVersions(file);
      break;
    }
    case RenameMode::kRemoveVersion: {
      if (req.meta) return MakeError(ErrorCode::kInvalidArgument, "remove version with meta");
      if (!current) {  // nothing (readable) to remove from
        (void)fsutil::RemoveAll(staging);
        return staged;
      }
      auto removed = current->Remove(req.version_id);
      if (!removed) {
        (void)fsutil::RemoveAll(staging);
        return staged;
      }
      old_data = removed->data_dir;
      if (!current->versions.empty()) new_meta = SerializeObjectVersions(*current);
      break;
    }
  }
  // Not synced here: the commit's first barrier makes it durable with the data. The staging
  // directory exists when shard writes made it (a version with data) or when it is a reused one
  // (keep_staging); otherwise (an inline object, a delete) it is made here, after a failed open
  // rather than an mkdir on every commit.
  auto make_staging = [&]() -> Status {
    if (fsutil::Mkdir(staging, 0755) != 0 && errno != EEXIST)
      return fsutil::ErrnoError("mkdir", staging, errno);
    return {};
  };
  if (new_meta) {
    const std::string staged_meta = Join(staging, "meta");
    constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC;
    int err = 0;
    auto fd = fsutil::Open(staged_meta, kFlags, 0644, &err);
    if (!fd.ok() && err == ENOENT && req.data_name.empty()) {
      RS_RETURN_IF_ERROR(make_staging());
      fd = fsutil::Open(staged_meta, kFlags, 0644);
    }
    if (!fd.ok()) return fd.error();
    RS_RETURN_IF_ERROR(
        fsutil::WriteAll(fd->get(), new_meta->data(), new_meta->size(), staged_meta));
  } else if (req.data_name.empty()) {
    RS_RETURN_IF_ERROR(make_staging());  // for the commit's journal
  }
  staged.has_new_meta = new_meta.has_value();
  staged.staging = staging;
  staged.target = target;
  staged.base = base;
  staged.plan =
      fsutil::CommitPlan{root_, base, staging, target, req.meta_name, req.data_name, old_data};
  return staged;
}

RenameDataResult LocalDrive::FinishRename(StagedRename& s, const RenameDataRequest& req) {
  for (const auto& d : s.extra_data) (void)fsutil::RemoveAll(Join(s.target, d));
  // A removed version is not rolled back: its data goes with the staging directory.
  if (s.has_new_meta && req.mode != RenameMode::kRemoveVersion && !s.old_data.empty() &&
      s.old_data != req.data_name && fsutil::Exists(Join(s.staging, "old"))) {
    s.out.old_data_name = s.old_data;  // kept for the caller: removed or restored after quorum
  } else if (req.keep_staging &&
             (s.old_data.empty() || fsutil::RemoveAll(Join(s.staging, "old")).ok())) {
    // The commit moved the staged data and metadata out: only the journal is left.
    s.out.staging_kept = true;
  } else {
    (void)fsutil::RemoveAll(s.staging);
  }
  if (req.prune) fsutil::PruneEmptyDirs(s.target, s.base);
  return std::move(s.out);
}

Result<RenameDataResult> LocalDrive::RenameData(const RenameDataRequest& req) {
  auto staged = StageRename(req);
  if (!staged.ok()) return staged.error();
  if (!staged->plan) return std::move(staged->out);
  auto batcher = Batcher();
  if (!batcher.ok()) return batcher.error();
  auto st = fsutil::Commit(*staged->plan, batcher->get());
  InvalidateMeta(req);
  RS_RETURN_IF_ERROR(st);
  return FinishRename(*staged, req);
}

Result<ListResult> LocalDrive::ListObjects(const std::string& bucket, const ListOptions& opts) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  const std::string dir = paths::BucketDir(root_, bucket);
  if (!fsutil::IsDir(dir)) return MakeError(ErrorCode::kNoSuchBucket);
  try {
    return ListDrive(bucket, dir, opts);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, std::string("listing failed: ") + e.what());
  }
}

namespace {

Error NotWritable(const std::string& path, std::string_view what, int err) {
  std::string msg = "drive " + path + ": " + std::string(what) + ": " + std::strerror(err);
  spdlog::error("storage: {}", msg);
  return MakeError(ErrorCode::kDriveNotWritable, std::move(msg));
}

}  // namespace

Status CheckDriveWritable(const std::string& root) {
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec) return NotWritable(root, "cannot create", ec.value());
    if (::stat(root.c_str(), &st) != 0) return NotWritable(root, "cannot create", errno);
  }
  if (!S_ISDIR(st.st_mode)) return NotWritable(root, "not a directory", ENOTDIR);
  if (::access(root.c_str(), W_OK | X_OK) != 0) return NotWritable(root, "no write access", errno);
  // access() passes on some read-only setups (root, network file systems): really write.
  const std::string probe = Join(root, ".rdmastor.probe-" + hash::RandomHex(8));
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return NotWritable(root, "cannot create a file", errno);
  UniqueFd guard(fd);
  if (::write(fd, "ok", 2) != 2 || ::fsync(fd) != 0) {
    const int err = errno;
    fsutil::Unlink(probe);
    return NotWritable(root, "cannot write a file", err);
  }
  fsutil::Unlink(probe);
  return {};
}

}  // namespace rdmastor::storage
