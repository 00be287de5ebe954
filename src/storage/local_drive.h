// Drive on a local directory: the erasure layer's file-system code (fsutil, paths, listing,
// format) behind the Drive interface. Relative paths are checked and resolved below the root.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "storage/drive.h"

namespace rdmastor::storage {

class LocalDrive final : public Drive {
 public:
  // `root` should be absolute and normalised (ErasureStore does that).
  explicit LocalDrive(std::string root);

  const std::string& root() const { return root_; }
  const std::string& name() const override { return root_; }
  bool is_local() const override { return true; }

  bool IsOnline() override;
  Result<DiskInfo> GetDiskInfo() override;
  Result<bool> EnsureRoot() override;
  Status Prepare() override;
  Result<bool> IsEmpty() override;

  Result<DriveFormat> ReadFormat() override;
  Status WriteFormat(const DriveFormat& format) override;

  Result<bool> MakeVol(const std::string& bucket, const std::string& record) override;
  bool StatVol(const std::string& bucket) override;
  Result<std::vector<std::string>> ListVols() override;
  Result<std::optional<std::string>> ReadVolMeta(const std::string& bucket) override;
  Result<bool> VolHasObjects(const std::string& bucket) override;
  Status DeleteVol(const std::string& bucket) override;

  Result<std::optional<std::string>> ReadFile(const std::string& path) override;
  Status WriteFile(const std::string& path, std::string_view data) override;
  bool Exists(const std::string& path) override;
  bool IsDir(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path, bool dirs_only) override;
  Status MakeDir(const std::string& path) override;
  Status MakeDirAll(const std::string& base, const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Link(const std::string& from, const std::string& to) override;
  Status Unlink(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status FsyncDir(const std::string& path) override;
  void PruneEmptyDirs(const std::string& path, const std::string& stop) override;

  Result<std::unique_ptr<ShardWriter>> CreateShard(const std::string& path, uint64_t size) override;
  Result<std::unique_ptr<ShardFile>> OpenShard(const std::string& path, uint64_t size) override;

  Status Commit(const fsutil::CommitPlan& plan) override;
  Result<RenameDataResult> RenameData(const RenameDataRequest& req) override;

  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts) override;

  // A shard piece (LocalHost::WriteShardPieces): writes `data` at `offset` of shard file `path`,
  // creating it exclusively when `create`; fsyncs when `sync`.
  Status WriteShardAt(const std::string& path, uint64_t offset, std::string_view data, bool create,
                      bool sync);

 private:
  friend class LocalHost;  // its RenameData runs StageRename / FinishRename around CommitMany

  // root/<path> after CheckRelPath; an Error for a path that would leave the drive.
  Result<std::string> Abs(const std::string& path) const;
  // Creates the shard file `abs` (drive-relative `path`) exclusively, with its missing parent
  // directories when it lies in the staging area.
  Result<fsutil::UniqueFd> CreateShardFile(const std::string& path, const std::string& abs) const;
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

  std::string root_;
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
