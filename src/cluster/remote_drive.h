// Another node's drives: RemoteHost (the node's DriveHost: each batch is one peer call of a node
// row of the call table, served by that node's LocalHost) and RemoteDrive (one of its drives for
// per-drive work: each call one peer RPC of a drive row, POST /minio/storage/v1/<call>?disk=PATH,
// the request in the body, served by that node's LocalDrive). A PUT on 4 nodes x 4 drives sends
// each other node one shardwritegroup per piece (all its drives' pieces) and one renamedatagroup;
// a GET's metadata reads are one readfilegroup per node.
// Shard payloads move in pieces (SendShardBytes / FetchShardBytes), each either in the HTTP body
// (TCP) or, with MINIO_RDMA_INTERNODE=on and a piece of at least MINIO_RDMA_MIN_SIZE, over
// cluster::InternodeRdma: the request then carries a token for the caller's buffer and an empty
// body, and the serving node pulls (RDMA READ) or pushes (RDMA WRITE) the bytes.
//
// Pieces: the erasure layer sends shard bytes in pieces of piece_bytes() per drive
// (RemoteHost::WriteShardPieces, all of a node's drives' pieces in one call and one RDMA
// transfer); a RemoteDrive shard writer (heal) sends its bytes in pieces of
// InternodeRdma::piece_bytes() (1 MiB, or MINIO_RDMA_MIN_SIZE up to 4 MiB), the last piece shorter;
// a shard reader fetches windows of the same size and serves the erasure layer's block reads from
// them (one RPC per window, not per stripe block). The transport is chosen per shard: every piece
// of a shard whose file is (or, when the size is unknown, has grown to) MINIO_RDMA_MIN_SIZE or more
// goes over RDMA.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/internode_rdma.h"
#include "cluster/peer_client.h"
#include "cluster/wire.h"
#include "storage/drive.h"
#include "storage/drive_host.h"

namespace rdmastor::cluster {

inline constexpr const char* kStoragePrefix = "/minio/storage/v1/";

// The target of a call of the table: ?disk=PATH for a drive row, none for a node row.
std::string StorageTarget(std::string_view call, PeerAddr addr, std::string_view disk);

// Sends one call of the table to `peer` with its row's deadline; `disk` names the drive of a
// drive row (ignored for a node row).
template <PeerCall C>
Result<client::HttpResponse> SendCall(
    PeerClient& peer, std::string_view disk, const typename CallOf<C>::Req& req,
    const client::ResponseTarget& target = client::ResponseTarget::String(),
    const s3::HeaderList& headers = {}) {
  return peer.Call("POST", StorageTarget(CallOf<C>::name, CallOf<C>::addr, disk),
                   EncodeRequest(req), target, headers,
                   CallOf<C>::quick ? peer.quick_timeout() : std::chrono::milliseconds(0));
}

// A call's reply decoded (its head in kReplyHeader when the response type has a payload).
template <PeerCall C>
Result<typename CallOf<C>::Rsp> DecodeReply(const PeerClient& peer, client::HttpResponse r) {
  using Rsp = typename CallOf<C>::Rsp;
  Frame f;
  if constexpr (kHasPayload<Rsp>) {
    const std::string* head = r.FindHeader(kReplyHeader);
    if (head == nullptr)
      return MakeError(ErrorCode::kInternalError, "peer " + peer.address() + " answered " +
                                                      std::string(CallOf<C>::name) + " without " +
                                                      kReplyHeader);
    f.head = *head;
    f.payload = std::move(r.body);
  } else {
    f.head = std::move(r.body);
  }
  return Wire<Rsp>::Decode(std::move(f));
}

template <PeerCall C>
Result<typename CallOf<C>::Rsp> InvokeCall(PeerClient& peer, std::string_view disk,
                                           const typename CallOf<C>::Req& req) {
  auto r = SendCall<C>(peer, disk, req);
  if (!r.ok()) return r.error();
  return DecodeReply<C>(peer, std::move(r).value());
}

// Whether a failed RDMA piece should be resent over TCP (the RDMA part failed, not the drive).
bool IsRdmaFailure(const Error& e);

// The reply of an RDMA piece and the exposure it used (a receive copies the bytes out of it).
struct RdmaReply {
  client::HttpResponse response;
  InternodeRdma::Exposed exposed;
};

// One piece over RDMA: exposes buf to the peer and sends `call` with the token. The reply, or
// nullopt when the piece must go over TCP (the miss is counted, a failure degrades the peer), or
// the error of a failure that is not the RDMA path's (the drive's, the peer's).
template <PeerCall C>
Result<std::optional<RdmaReply>> SendRdmaPiece(PeerClient& peer, InternodeRdma& internode,
                                               const std::string& self, std::string_view disk,
                                               const typename CallOf<C>::Req& req, char* buf,
                                               size_t len, bool remote_write) {
  auto exposed = internode.Expose(peer.address(), buf, len, remote_write);
  Error miss = exposed.ok() ? Error{} : exposed.error();
  if (exposed.ok()) {
    auto r = SendCall<C>(peer, disk, req, client::ResponseTarget::String(),
                         {{kInternodeTokenHeader, exposed->token()},
                          {kInternodeLengthHeader, std::to_string(len)},
                          {kPeerNodeHeader, self}});
    // The peer answered (whatever it said): it is done with the buffer, which may be reused. A
    // call that got no answer (kServiceUnavailable: unreachable, timed out) leaves it discarded.
    if (r.ok() || r.error().code != ErrorCode::kServiceUnavailable) exposed->Answered();
    if (r.ok())
      return std::optional<RdmaReply>(RdmaReply{std::move(r).value(), std::move(exposed).value()});
    if (!IsRdmaFailure(r.error())) return r.error();
    miss = r.error();
  }
  // A full in-flight bound is no failure of the path: count the fallback, keep the peer on RDMA.
  if (miss.code == ErrorCode::kSlowDown)
    internode.RecordFallback(peer.address());
  else
    internode.ReportFailure(peer.address(), miss);
  return std::optional<RdmaReply>();
}

// The size a piece's transport is chosen by: its shard's (when known), else the shard so far.
inline uint64_t TransportBasis(uint64_t shard_size, uint64_t offset, size_t piece) {
  if (piece == 0) return 0;  // nothing to move
  return shard_size != 0 ? shard_size : offset + piece;
}

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

  RDMASTOR_DRIVE_OVERRIDES

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
  template <PeerCall C>
  Result<typename CallOf<C>::Rsp> Invoke(const typename CallOf<C>::Req& req) {
    return InvokeCall<C>(*peer_, path_, req);
  }

  std::shared_ptr<PeerClient> peer_;
  std::string path_;
  std::string url_;
  std::shared_ptr<InternodeRdma> internode_;
  std::string self_;
};

// The drives of one peer node (DriveHost): each batch is one call of a node row of the table.
class RemoteHost final : public storage::DriveHost {
 public:
  // `internode`: the shard transport (null: TCP only); `self`: this node's address (host:port).
  RemoteHost(std::shared_ptr<PeerClient> peer, std::shared_ptr<InternodeRdma> internode = nullptr,
             std::string self = {});

  // Adds the peer's drive at `path` (`url`: the endpoint as configured); returns its index.
  size_t AddDrive(std::string path, std::string url);

  const std::string& name() const override { return peer_->address(); }
  bool is_local() const override { return false; }
  const std::vector<storage::Drive*>& drives() const override { return drives_; }
  size_t piece_bytes() const override;

  std::vector<Result<std::optional<std::string>>> ReadFiles(
      const std::vector<storage::FileRead>& reads) override;
  std::vector<Result<storage::RenameDataResult>> RenameData(
      std::vector<storage::RenameDataEntry> entries) override;
  // One shardwritegroup call: the pieces one after another in its body, or (a shard that
  // qualifies for inter-node RDMA) in one buffer the peer pulls at once; a failed RDMA transfer
  // is sent again over TCP.
  std::vector<Status> WriteShardPieces(const std::vector<storage::ShardPiece>& pieces) override;
  // One shardreadgroup call: the entries' slots land in their buffers (straight into them when
  // the buffers are one contiguous run, as the erasure read path asks), over TCP or, a shard that
  // qualifies, pushed by the peer over RDMA in one transfer; a failed RDMA transfer is asked again
  // over TCP.
  std::vector<Result<storage::ShardPieceGot>> ReadShardPieces(
      const std::vector<storage::ShardPieceRead>& reads) override;

 private:
  std::shared_ptr<PeerClient> peer_;
  std::shared_ptr<InternodeRdma> internode_;
  std::string self_;
  std::vector<std::unique_ptr<RemoteDrive>> remote_;
  std::vector<storage::Drive*> drives_;
};

}  // namespace rdmastor::cluster
