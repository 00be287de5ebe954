// Drive on a local directory: the erasure layer's file-system code (fsutil, paths, listing,
// format) behind the Drive interface. Relative paths are checked and resolved below the root.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "storage/drive.h"
#include "storage/meta_cache.h"
#include "storage/paths.h"

namespace rdmastor::storage {

class LocalDrive final : public Drive {
 public:
  // `root` should be absolute and normalised (ErasureStore does that). `meta_cache_bytes`: the
  // budget of its metadata file cache (MetaFileCache; 0 = none).
  explicit LocalDrive(std::string root, uint64_t meta_cache_bytes = 0);

  const std::string& root() const { return root_; }
  const std::string& name() const override { return root_; }
  bool is_local() const override { return true; }

  RDMASTOR_DRIVE_OVERRIDES

  // A shard piece (LocalHost::WriteShardPieces): writes `data` at `offset` of shard file `path`,
  // creating it exclusively when `create`; fsyncs when `sync`. A piece that starts at a
  // fsutil::kDirectIoAlign boundary of the file and of memory writes its whole aligned blocks with
  // direct I/O (O_DIRECT: from the caller's buffer to the disk, no page-cache copy) and the rest
  // through the page cache, unless direct writes are off or the drive's file system refuses them
  // (then everything goes through the page cache, as before). Durability is the same either way:
  // the commit's barrier (syncfs) or the fsync covers the file's blocks and their allocation.
  Status WriteShardAt(const std::string& path, uint64_t offset, std::string_view data, bool create,
                      bool sync);

  MetaFileCache::Stats meta_cache_stats() const { return meta_cache_.stats(); }
  // MINIO_API_ODIRECT (default on): shard pieces with direct I/O where the file system takes it.
  static void SetDirectWrites(bool on);
  static bool direct_writes();

 private:
  friend class LocalHost;  // its RenameData runs StageRename / FinishRename around CommitMany

  // root/<path> after CheckRelPath; an Error for a path that would leave the drive.
  Result<std::string> Abs(const std::string& path) const;
  // Creates the shard file `abs` (drive-relative `path`) exclusively, with its missing parent
  // directories when it lies in the staging area.
  Result<fsutil::UniqueFd> CreateShardFile(const std::string& path, const std::string& abs,
                                           int extra_flags = 0, int* err_out = nullptr) const;
  // Direct I/O was refused here (EINVAL: tmpfs before Linux 6.6, some FUSE and network file
  // systems): this drive writes through the page cache from then on.
  void DirectRefused(const std::string& abs, const char* step);
  // The group-commit batcher of the file system the drive is on now (checked on every call: a
  // replaced disk is a different file system).
  Result<std::shared_ptr<fsutil::SyncBatcher>> Batcher();

  // RenameData in three parts, so that the drives of a file system (LocalHost::RenameData) run
  // each part for all of them around one fsutil::CommitMany: Stage checks the request and writes
  // the merged metadata file into staging (or settles a request with nothing to commit: `plan`
  // unset), Finish cleans up after a successful commit.
  struct StagedRename {
    std::optional<fsutil::CommitPlan> plan;  // unset: settled without a commit (`out` is final)
    RenameDataResult out;
    std::string staging, target, base;
    std::vector<std::string> extra_data;  // no longer named by the file: removed after the commit
    std::string old_data;                 // retired by the commit (into <staging>/old)
    bool has_new_meta = false;
  };
  Result<StagedRename> StageRename(const RenameDataRequest& req);
  RenameDataResult FinishRename(StagedRename& s, const RenameDataRequest& req);
  // After a RenameData's commit, whatever became of it: the key's metadata file changed.
  void InvalidateMeta(const RenameDataRequest& req) {
    meta_cache_.Invalidate(paths::Join(req.key_dir, req.meta_name));
  }

  std::string root_;
  // Object metadata files as last read (ReadFile); every call below that changes files
  // invalidates what it touched once it is done (meta_cache.h).
  MetaFileCache meta_cache_;
  std::atomic<bool> direct_refused_{false};
  std::mutex batcher_mu_;
  std::shared_ptr<fsutil::SyncBatcher> batcher_;
};

// A single drive must be usable to serve (no other drive stands in): creates `root` when missing
// and fails with kDriveNotWritable, naming the path and the errno text, when it is not a
// directory in which a file can really be written and synced.
Status CheckDriveWritable(const std::string& root);

// The data directory name the metadata file at `meta_path` (absolute) references; "" when the
// file is missing.
Result<std::string> DataDirOfMetaFile(const std::string& meta_path);
// Every version's data directory (crash recovery keeps them all).
Result<std::vector<std::string>> DataDirsOfMetaFile(const std::string& meta_path);

}  // namespace rdmastor::storage
