// Drive on another node: every call is one peer RPC (POST /minio/storage/v1/<call>?disk=PATH&...)
// served by that node's PeerServer, which runs it on its LocalDrive. Shard payloads travel in the
// HTTP bodies; SendShardBytes / FetchShardBytes are the single place where an inter-node RDMA
// transport (cluster::InternodeRdma, MINIO_RDMA_INTERNODE) takes them over.
#pragma once

#include <memory>
#include <string>

#include "cluster/peer_client.h"
#include "storage/drive.h"

namespace rdmastor::cluster {

inline constexpr const char* kStoragePrefix = "/minio/storage/v1/";

class RemoteDrive final : public storage::Drive {
 public:
  // `path`: the drive directory on the peer; `url`: the endpoint as configured (for messages).
  RemoteDrive(std::shared_ptr<PeerClient> peer, std::string path, std::string url);

  const std::string& name() const override { return url_; }
  bool is_local() const override { return false; }
  const std::string& path() const { return path_; }
  PeerClient& peer() { return *peer_; }

  bool IsOnline() override;
  Result<storage::DiskInfo> GetDiskInfo() override;
  Result<bool> EnsureRoot() override;
  Status Prepare() override;
  Result<bool> IsEmpty() override;

  Result<storage::DriveFormat> ReadFormat() override;
  Status WriteFormat(const storage::DriveFormat& format) override;

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

  Result<std::unique_ptr<storage::ShardWriter>> CreateShard(const std::string& path) override;
  Result<std::unique_ptr<storage::ShardFile>> OpenShard(const std::string& path) override;

  Status Commit(const storage::fsutil::CommitPlan& plan) override;

  Result<storage::ListResult> ListObjects(const std::string& bucket,
                                          const storage::ListOptions& opts) override;

  // Shard payload transport (the RDMA seam): writes `data` at `offset` of the staged shard file
  // `path` (create: exclusively, at offset 0; sync: fsync after) / reads up to `len` bytes at
  // `offset` into buf. Today both travel in the HTTP body of /shardwrite and /shardread.
  Status SendShardBytes(const std::string& path, uint64_t offset, std::string_view data,
                        bool create, bool sync);
  Result<size_t> FetchShardBytes(const std::string& path, uint64_t offset, char* buf, size_t len);

 private:
  Result<client::HttpResponse> Rpc(
      std::string_view call, const std::string& params, std::string_view body = {},
      const client::ResponseTarget& target = client::ResponseTarget::String());
  Result<bool> BoolRpc(std::string_view call, const std::string& params,
                       std::string_view body = {});
  Status StatusRpc(std::string_view call, const std::string& params, std::string_view body = {});

  std::shared_ptr<PeerClient> peer_;
  std::string path_;
  std::string url_;
};

}  // namespace rdmastor::cluster
