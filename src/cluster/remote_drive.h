// Drive on another node: every call is one peer RPC of the call table (wire.h: POST
// /minio/storage/v1/<call>?disk=PATH, the request in the body) served by that node's PeerServer,
// which runs it on its LocalDrive; the commits of all the drives of one node that a write uses go
// in one call (RenameDataGroup: a 1 MiB PUT on 4 nodes x 4 drives makes 3 storage calls, not 12),
// and so do the metadata reads of a GET (ReadFileGroup).
// Shard payloads move in pieces (SendShardBytes / FetchShardBytes), each either in the HTTP body
// (TCP) or, with MINIO_RDMA_INTERNODE=on and a piece of at least MINIO_RDMA_MIN_SIZE, over
// cluster::InternodeRdma: the request then carries a token for the caller's buffer and an empty
// body, and the serving node pulls (RDMA READ) or pushes (RDMA WRITE) the bytes.
//
// Pieces: a shard writer sends its bytes in pieces of InternodeRdma::piece_bytes() (1 MiB, or
// MINIO_RDMA_MIN_SIZE up to 4 MiB), the last piece shorter; a shard reader fetches windows of the
// same size and serves the erasure layer's block reads from them (one RPC per window, not per
// stripe block). The transport is chosen per shard: every piece of a shard whose file is (or,
// when the size is unknown, has grown to) MINIO_RDMA_MIN_SIZE or more goes over RDMA.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/internode_rdma.h"
#include "cluster/peer_client.h"
#include "cluster/wire.h"
#include "storage/drive.h"

namespace rdmastor::cluster {

inline constexpr const char* kStoragePrefix = "/minio/storage/v1/";

class RemoteDrive final : public storage::Drive {
 public:
  // `path`: the drive directory on the peer; `url`: the endpoint as configured (for messages);
  // `internode`: the shard transport (null: TCP only); `self`: this node's address (host:port).
  RemoteDrive(std::shared_ptr<PeerClient> peer, std::string path, std::string url,
              std::shared_ptr<InternodeRdma> internode = nullptr, std::string self = {});

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

  Result<std::unique_ptr<storage::ShardWriter>> CreateShard(const std::string& path,
                                                            uint64_t size) override;
  Result<std::unique_ptr<storage::ShardFile>> OpenShard(const std::string& path,
                                                        uint64_t size) override;

  Status Commit(const storage::fsutil::CommitPlan& plan) override;
  Result<storage::RenameDataResult> RenameData(const storage::RenameDataRequest& req) override;
  // One key per peer node (its PeerClient), with kRemoteGroupKeyBit set: the drives of one node
  // commit in one renamedatagroup call.
  uint64_t GroupKey() const override;
  std::vector<Result<std::optional<std::string>>> ReadFileGroup(
      const std::vector<storage::Drive*>& group, const std::vector<std::string>& paths) override;
  std::vector<Result<storage::RenameDataResult>> RenameDataGroup(
      const std::vector<storage::Drive*>& group,
      const std::vector<storage::RenameDataRequest>& reqs) override;

  Result<storage::ListResult> ListObjects(const std::string& bucket,
                                          const storage::ListOptions& opts) override;

  // Shard payload transport: writes `data` at `offset` of the staged shard file `path` (create:
  // exclusively, at offset 0; sync: fsync after) / reads up to `len` bytes at `offset` into buf.
  // Over RDMA when InternodeRdma::ShouldUse says so; a failed RDMA piece is sent again over TCP
  // and the peer falls back (ReportFailure).
  // `shard_size`: the whole shard file's expected size (0 = unknown: the shard so far counts).
  Status SendShardBytes(const std::string& path, uint64_t offset, std::string_view data,
                        bool create, bool sync, uint64_t shard_size);
  // `handle` (in/out, optional): the file the peer kept open for this read's earlier pieces
  // (open_shards.h); the peer keeps it open until a piece reaches the shard's end, so every piece
  // reads the version the first one opened, even while an overwrite retires it.
  // `window`: when the piece came over RDMA into a pooled receive buffer that may be lent
  // (InternodeRdma::Exposed::TakeReceived), the bytes are left there, *window holds it, and buf
  // is untouched; otherwise *window is empty and the bytes are in buf.
  Result<size_t> FetchShardBytes(const std::string& path, uint64_t offset, char* buf, size_t len,
                                 uint64_t shard_size, uint64_t* handle = nullptr,
                                 rdma::BufferPool::Buffer* window = nullptr);
  // Size of the pieces shard writers send and readers fetch.
  size_t piece_bytes() const;

 private:
  // One call of the table: the request encoded, sent, the response decoded.
  template <PeerCall C>
  Result<typename CallOf<C>::Rsp> Invoke(const typename CallOf<C>::Req& req);
  // A batch call (C: renamedatagroup, readfilegroup) for the drives of `group` on this drive's
  // node, args[i] for group[i]; a drive of `group` that is not one runs one(drive, args[i]) on its
  // own. One result per drive; a failed call is every batched drive's error.
  template <PeerCall C, class Arg, class Out>
  std::vector<Out> InvokeGroup(const std::vector<storage::Drive*>& group,
                               const std::vector<Arg>& args,
                               const std::function<Out(storage::Drive&, const Arg&)>& one);
  // The same up to the raw reply (the shard calls: extra headers, a reply into the caller's
  // buffer).
  template <PeerCall C>
  Result<client::HttpResponse> Send(
      const typename CallOf<C>::Req& req,
      const client::ResponseTarget& target = client::ResponseTarget::String(),
      const s3::HeaderList& headers = {});

  // Whether a failed RDMA piece should be resent over TCP (the RDMA part failed, not the drive).
  static bool IsRdmaFailure(const Error& e);
  // One piece over RDMA: exposes buf to the peer and sends `call` with the token. The reply, or
  // nullopt when the piece must go over TCP (the miss is counted, a failure degrades the peer),
  // or the error of a failure that is not the RDMA path's (the drive's, the peer's).
  // The reply of an RDMA piece and the exposure it used (a receive copies the bytes out of it).
  struct RdmaReply {
    client::HttpResponse response;
    InternodeRdma::Exposed exposed;
  };
  template <PeerCall C>
  Result<std::optional<RdmaReply>> RdmaPiece(const typename CallOf<C>::Req& req, char* buf,
                                             size_t len, bool remote_write);
  static uint64_t TransportBasis(uint64_t shard_size, uint64_t offset, size_t piece);
  std::string StorageTarget(std::string_view call) const;

  std::shared_ptr<PeerClient> peer_;
  std::string path_;
  std::string url_;
  std::shared_ptr<InternodeRdma> internode_;
  std::string self_;
};

}  // namespace rdmastor::cluster
