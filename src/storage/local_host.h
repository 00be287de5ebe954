// The drives of this node (DriveHost, drive_host.h): LocalDrives on local directories. Its batch
// calls run the entries one after another on the calling thread (page-cache work: a thread per
// drive would only add hand-offs); RenameData commits the drives that share a file system with
// one fsutil::CommitMany, one pair of syncfs barriers for all of them. A cluster node serves the
// same LocalHost to its peers (cluster::PeerServer) and to its own erasure sets.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/drive_host.h"
#include "storage/local_drive.h"
#include "storage/open_shards.h"

namespace rdmastor::storage {

class LocalHost final : public DriveHost {
 public:
  // The piece a shard writer buffers per drive before it writes (as a remote node's, 1 MiB).
  static constexpr size_t kPieceBytes = size_t{1} << 20;

  // `roots` should be absolute and normalised (ErasureStore does that).
  explicit LocalHost(const std::vector<std::string>& roots);

  const std::string& name() const override { return name_; }
  bool is_local() const override { return true; }
  const std::vector<Drive*>& drives() const override { return drives_; }
  size_t piece_bytes() const override { return kPieceBytes; }

  LocalDrive& local(size_t i) { return *local_[i]; }
  size_t size() const { return local_.size(); }
  // The index of the drive whose root is `root`; nullopt when it is not one of this host's.
  std::optional<size_t> Find(std::string_view root) const;

  std::vector<Result<std::optional<std::string>>> ReadFiles(
      const std::vector<FileRead>& reads) override;
  std::vector<Result<RenameDataResult>> RenameData(std::vector<RenameDataEntry> entries) override;
  std::vector<Status> WriteShardPieces(const std::vector<ShardPiece>& pieces) override;
  // Each entry from its kept file (handle) or the file at its path; the drives' entries in
  // parallel when the batch spans drives and is large enough that disk waits overlap.
  std::vector<Result<ShardPieceGot>> ReadShardPieces(
      const std::vector<ShardPieceRead>& reads) override;
  // The shard files kept open across the pieces of one read (ShardPieceRead::keep).
  OpenShards& open_shards() { return open_shards_; }

 private:
  // An entry's drive, or the error of an index that names none.
  Result<LocalDrive*> At(size_t i);
  Result<ShardPieceGot> ReadShardPiece(const ShardPieceRead& r);

  std::string name_ = "local";
  std::vector<std::unique_ptr<LocalDrive>> local_;
  std::vector<Drive*> drives_;
  OpenShards open_shards_;
};

}  // namespace rdmastor::storage
