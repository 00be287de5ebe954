#include "cluster/remote_drive.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace rdmastor::cluster {

namespace {

// Sends the shard in pieces of the drive's piece size (see the top of remote_drive.h).
class RemoteShardWriter final : public storage::ShardWriter {
 public:
  RemoteShardWriter(RemoteDrive& drive, std::string path, uint64_t size)
      : drive_(drive), path_(std::move(path)), size_(size), piece_(drive.piece_bytes()) {
    buf_.reserve(piece_);
  }
  Status Append(std::string_view data) override {
    while (!data.empty()) {
      // A full piece goes once more follows, so the last one carries the fsync (no extra call).
      if (buf_.size() == piece_) RS_RETURN_IF_ERROR(Flush(false));
      size_t n = std::min(data.size(), piece_ - buf_.size());
      buf_.append(data.substr(0, n));
      data.remove_prefix(n);
    }
    return {};
  }
  Status Finish() override { return Flush(true); }
  // The RenameData that follows runs on the serving node, whose first barrier (syncfs of the
  // drive's file system) makes the file durable: no fsync of its own (one per remote shard).
  Status Close() override {
    if (created_ && buf_.empty()) return {};
    return Flush(false, /*force=*/true);
  }

 private:
  Status Flush(bool sync, bool force = false) {
    if (buf_.empty() && !sync && !force) return {};
    RS_RETURN_IF_ERROR(
        drive_.SendShardBytes(path_, offset_, buf_, /*create=*/!created_, sync, size_));
    created_ = true;
    offset_ += buf_.size();
    buf_.clear();
    return {};
  }
  RemoteDrive& drive_;
  std::string path_;
  const uint64_t size_;
  const size_t piece_;
  std::string buf_;
  uint64_t offset_ = 0;
  bool created_ = false;  // the first piece creates the file
};

// Fetches windows of the piece size and serves the erasure layer's smaller block reads from the
// last one. Shard files are immutable once written (a new version writes a new data directory),
// so a window never goes stale; the peer keeps the file open across the pieces (handle_), so an
// overwrite that retires the data directory meanwhile does not break the read.
class RemoteShardFile final : public storage::ShardFile {
 public:
  RemoteShardFile(RemoteDrive& drive, std::string path, uint64_t size)
      : drive_(drive), path_(std::move(path)), size_(size), window_(drive.piece_bytes()) {}
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    if (len >= window_) return drive_.FetchShardBytes(path_, off, buf, len, size_, &handle_);
    const bool inside = off >= cache_off_ && off - cache_off_ <= cache_len_;
    if (!inside || (off + len > cache_off_ + cache_len_ && !cache_eof_)) {
      // A window, never past the end of a file of known size.
      size_t want = window_;
      if (size_ > off) want = static_cast<size_t>(std::min<uint64_t>(want, size_ - off));
      want = std::max(want, len);
      held_ = {};  // the last window's receive buffer goes back to the pool first
      cache_len_ = 0;
      cache_.resize(want);
      auto n = drive_.FetchShardBytes(path_, off, cache_.data(), want, size_, &handle_, &held_);
      if (!n.ok()) return n.error();
      cache_at_ = held_ ? held_.data() : cache_.data();
      cache_len_ = *n;
      cache_off_ = off;
      cache_eof_ = *n < want || (size_ != 0 && off + *n >= size_);
    }
    const size_t at = static_cast<size_t>(off - cache_off_);
    const size_t n = std::min(len, cache_len_ - at);
    std::memcpy(buf, cache_at_ + at, n);
    return n;
  }

 private:
  RemoteDrive& drive_;
  std::string path_;
  const uint64_t size_;  // 0: unknown
  const size_t window_;
  // The window [cache_off_, cache_off_ + cache_len_) of the file: at cache_at_, in cache_ or in
  // held_ (a receive buffer lent by InternodeRdma: the RDMA piece read in place, not copied out).
  std::string cache_;
  rdma::BufferPool::Buffer held_;
  const char* cache_at_ = nullptr;
  size_t cache_len_ = 0;
  uint64_t cache_off_ = 0;
  bool cache_eof_ = false;
  uint64_t handle_ = 0;  // the peer's open file for this read (0: none yet, or released)
};

}  // namespace

RemoteDrive::RemoteDrive(std::shared_ptr<PeerClient> peer, std::string path, std::string url,
                         std::shared_ptr<InternodeRdma> internode, std::string self)
    : peer_(std::move(peer)),
      path_(std::move(path)),
      url_(std::move(url)),
      internode_(std::move(internode)),
      self_(std::move(self)) {}

size_t RemoteDrive::piece_bytes() const {
  return internode_ ? internode_->piece_bytes() : InternodeRdma::kMinPieceBytes;
}

std::string StorageTarget(std::string_view call, PeerAddr addr, std::string_view disk) {
  std::string t = std::string(kStoragePrefix) + std::string(call);
  if (addr == PeerAddr::kDrive) t += "?" + QueryParam("disk", std::string(disk));
  return t;
}

bool IsRdmaFailure(const Error& e) {
  // The serving node could not move the piece (fabric error, refused connection, token it could
  // not use) or had no RDMA capacity left: the TCP resend is safe, the write/read is idempotent.
  return e.code == ErrorCode::kRDMATransferFailed || IsRdmaDecline(e.code) ||
         e.code == ErrorCode::kInvalidRDMAToken || e.code == ErrorCode::kSlowDown;
}

namespace {
Status AsStatus(const Result<peer::Done>& r) {
  if (!r.ok()) return r.error();
  return {};
}
}  // namespace

bool RemoteDrive::IsOnline() {
  if (!peer_->reachable()) return false;
  auto r = Invoke<PeerCall::kOnline>({});
  return r.ok() && *r;
}

Result<storage::DiskInfo> RemoteDrive::GetDiskInfo() { return Invoke<PeerCall::kDiskInfo>({}); }

Result<bool> RemoteDrive::EnsureRoot() { return Invoke<PeerCall::kEnsureRoot>({}); }

Status RemoteDrive::Prepare() {
  // Each node prepares its own drives at start; a peer's staging area is never swept remotely.
  return MakeError(ErrorCode::kInvalidRequest, "a remote drive is prepared by its own node");
}

Result<bool> RemoteDrive::IsEmpty() { return Invoke<PeerCall::kIsEmpty>({}); }

Result<storage::DriveFormat> RemoteDrive::ReadFormat() { return Invoke<PeerCall::kReadFormat>({}); }

Status RemoteDrive::WriteFormat(const storage::DriveFormat& format) {
  return AsStatus(Invoke<PeerCall::kWriteFormat>(format));
}

Result<bool> RemoteDrive::MakeVol(const std::string& bucket, const std::string& record) {
  return Invoke<PeerCall::kMakeVol>({bucket, record});
}

bool RemoteDrive::StatVol(const std::string& bucket) {
  if (!peer_->reachable()) return false;
  auto r = Invoke<PeerCall::kStatVol>({bucket});
  return r.ok() && *r;
}

Result<std::vector<std::string>> RemoteDrive::ListVols() { return Invoke<PeerCall::kListVols>({}); }

Result<std::optional<std::string>> RemoteDrive::ReadVolMeta(const std::string& bucket) {
  return Invoke<PeerCall::kReadVolMeta>({bucket});
}

Result<bool> RemoteDrive::VolHasObjects(const std::string& bucket) {
  return Invoke<PeerCall::kVolHasObjects>({bucket});
}

Status RemoteDrive::DeleteVol(const std::string& bucket) {
  return AsStatus(Invoke<PeerCall::kDeleteVol>({bucket}));
}

Result<std::optional<std::string>> RemoteDrive::ReadFile(const std::string& path) {
  return Invoke<PeerCall::kReadFile>({path});
}

Status RemoteDrive::WriteFile(const std::string& path, std::string_view data) {
  return AsStatus(Invoke<PeerCall::kWriteFile>({path, std::string(data)}));
}

bool RemoteDrive::Exists(const std::string& path) {
  auto r = Invoke<PeerCall::kExists>({path});
  return r.ok() && *r;
}

bool RemoteDrive::IsDir(const std::string& path) {
  auto r = Invoke<PeerCall::kIsDir>({path});
  return r.ok() && *r;
}

Result<std::vector<std::string>> RemoteDrive::ListDir(const std::string& path, bool dirs_only) {
  return Invoke<PeerCall::kListDir>({path, dirs_only});
}

Status RemoteDrive::MakeDir(const std::string& path) {
  return AsStatus(Invoke<PeerCall::kMakeDir>({path}));
}

Status RemoteDrive::MakeDirAll(const std::string& base, const std::string& path) {
  return AsStatus(Invoke<PeerCall::kMakeDirAll>({base, path}));
}

Status RemoteDrive::Rename(const std::string& from, const std::string& to) {
  return AsStatus(Invoke<PeerCall::kRename>({from, to}));
}

Status RemoteDrive::Link(const std::string& from, const std::string& to) {
  return AsStatus(Invoke<PeerCall::kLink>({from, to}));
}

Status RemoteDrive::Unlink(const std::string& path) {
  return AsStatus(Invoke<PeerCall::kUnlink>({path}));
}

Status RemoteDrive::RemoveAll(const std::string& path) {
  return AsStatus(Invoke<PeerCall::kRemoveAll>({path}));
}

Status RemoteDrive::FsyncDir(const std::string& path) {
  return AsStatus(Invoke<PeerCall::kFsyncDir>({path}));
}

void RemoteDrive::PruneEmptyDirs(const std::string& path, const std::string& stop) {
  (void)Invoke<PeerCall::kPrune>({path, stop});
}

Result<std::unique_ptr<storage::ShardWriter>> RemoteDrive::CreateShard(const std::string& path,
                                                                       uint64_t size) {
  // Nothing is sent yet: the first piece creates the file (and its staging directory), so a shard
  // of up to one piece is one call.
  RS_RETURN_IF_ERROR(storage::CheckRelPath(path));
  return std::unique_ptr<storage::ShardWriter>(new RemoteShardWriter(*this, path, size));
}

Result<std::unique_ptr<storage::ShardFile>> RemoteDrive::OpenShard(const std::string& path,
                                                                   uint64_t size) {
  RS_RETURN_IF_ERROR(storage::CheckRelPath(path));
  return std::unique_ptr<storage::ShardFile>(new RemoteShardFile(*this, path, size));
}

Status RemoteDrive::Commit(const storage::fsutil::CommitPlan& plan) {
  return AsStatus(Invoke<PeerCall::kCommit>(plan));
}

Result<storage::RenameDataResult> RemoteDrive::RenameData(const storage::RenameDataRequest& req) {
  return Invoke<PeerCall::kRenameData>(req);
}

Result<storage::ListResult> RemoteDrive::ListObjects(const std::string& bucket,
                                                     const storage::ListOptions& opts) {
  return Invoke<PeerCall::kListObjects>({bucket, opts});
}

// ---- shard payloads ----------------------------------------------------------------------

Status RemoteDrive::SendShardBytes(const std::string& path, uint64_t offset, std::string_view data,
                                   bool create, bool sync, uint64_t shard_size) {
  peer::ShardWriteArgs args{path, offset, create, sync, {}};
  const std::string& peer = peer_->address();
  if (internode_ && internode_->ShouldUse(peer, TransportBasis(shard_size, offset, data.size()))) {
    // The peer RDMA-READs the piece out of `data` (registered for remote read for this call).
    auto r = SendRdmaPiece<PeerCall::kShardWrite>(*peer_, *internode_, self_, path_, args,
                                                  const_cast<char*>(data.data()), data.size(),
                                                  /*remote_write=*/false);
    if (!r.ok()) return r.error();
    if (r->has_value()) {
      internode_->RecordShard(peer, admin::Transport::kRdma, data.size(), 0);
      return {};
    }
  }
  args.payload.assign(data);
  auto r = SendCall<PeerCall::kShardWrite>(*peer_, path_, args, client::ResponseTarget::String(),
                                           {{kPeerNodeHeader, self_}});
  if (!r.ok()) return r.error();
  if (internode_ && !data.empty())
    internode_->RecordShard(peer, admin::Transport::kTcp, data.size(), 0);
  return {};
}

Result<size_t> RemoteDrive::FetchShardBytes(const std::string& path, uint64_t offset, char* buf,
                                            size_t len, uint64_t shard_size, uint64_t* handle,
                                            rdma::BufferPool::Buffer* window) {
  // Keep the file open on the peer unless this piece reaches the shard's end (then release it).
  const bool last = shard_size != 0 && offset + len >= shard_size;
  const peer::ShardReadArgs args{path, offset, len, handle ? *handle : 0, handle && !last};
  const std::string& peer = peer_->address();
  // The handle the peer answered with (the same, a new one, or 0 once released).
  auto note_handle = [&](const client::HttpResponse& r) -> Status {
    const std::string* head = r.FindHeader(kReplyHeader);
    auto got = head ? Wire<peer::ShardBytes>::Decode(Frame{*head, {}})
                    : Result<peer::ShardBytes>(ErrorCode::kInternalError);
    if (!got.ok())
      return MakeError(ErrorCode::kInternalError,
                       "peer " + peer + " sent a shardread reply without a valid header");
    if (handle) *handle = got->handle;
    return {};
  };
  if (internode_ && internode_->ShouldUse(peer, TransportBasis(shard_size, offset, len))) {
    // The peer RDMA-WRITEs what it read into `buf` and says how many bytes that was.
    auto r = SendRdmaPiece<PeerCall::kShardRead>(*peer_, *internode_, self_, path_, args, buf, len,
                                                 /*remote_write=*/true);
    if (!r.ok()) return r.error();
    if (r->has_value()) {
      const std::string* head = (*r)->response.FindHeader(kReplyHeader);
      auto got = head ? Wire<peer::ShardBytes>::Decode(Frame{*head, {}})
                      : Result<peer::ShardBytes>(ErrorCode::kInternalError);
      if (!got.ok() || got->rdma_bytes > len)
        return MakeError(ErrorCode::kInternalError,
                         "peer " + peer + " sent a shardread reply without a valid byte count");
      if (!window || !(*window = (*r)->exposed.TakeReceived()))
        (*r)->exposed.CopyOut(static_cast<size_t>(got->rdma_bytes));
      if (handle) *handle = got->handle;
      internode_->RecordShard(peer, admin::Transport::kRdma, 0, got->rdma_bytes);
      return static_cast<size_t>(got->rdma_bytes);
    }
  }
  auto r = SendCall<PeerCall::kShardRead>(
      *peer_, path_, args, client::ResponseTarget::Buffer(buf, len), {{kPeerNodeHeader, self_}});
  if (!r.ok()) return r.error();
  RS_RETURN_IF_ERROR(note_handle(*r));
  if (internode_ && r->body_bytes > 0)
    internode_->RecordShard(peer, admin::Transport::kTcp, 0, r->body_bytes);
  return static_cast<size_t>(r->body_bytes);
}

// ---- RemoteHost --------------------------------------------------------------------------

namespace {

// The results of a batch call: one per entry, or the call's error for every entry.
template <class T>
std::vector<Result<T>> PerEntry(Result<std::vector<Result<T>>> r, size_t n, const PeerClient& peer,
                                std::string_view call) {
  if (r.ok() && r->size() != n)
    r = MakeError(ErrorCode::kInternalError,
                  "peer " + peer.address() + " answered " + std::string(call) + " with " +
                      std::to_string(r->size()) + " results for " + std::to_string(n) + " drives");
  if (r.ok()) return std::move(r).value();
  return std::vector<Result<T>>(n, Result<T>(r.error()));
}

}  // namespace

RemoteHost::RemoteHost(std::shared_ptr<PeerClient> peer, std::shared_ptr<InternodeRdma> internode,
                       std::string self)
    : peer_(std::move(peer)), internode_(std::move(internode)), self_(std::move(self)) {}

size_t RemoteHost::AddDrive(std::string path, std::string url) {
  remote_.push_back(
      std::make_unique<RemoteDrive>(peer_, std::move(path), std::move(url), internode_, self_));
  drives_.push_back(remote_.back().get());
  return remote_.size() - 1;
}

size_t RemoteHost::piece_bytes() const {
  // All of the node's drives' pieces in one call fit one transport piece (a registered RDMA
  // buffer of the pool, no per-call registration).
  const size_t piece = internode_ ? internode_->piece_bytes() : InternodeRdma::kMinPieceBytes;
  return std::max<size_t>(piece / std::max<size_t>(1, remote_.size()), size_t{64} << 10);
}

std::vector<Result<std::optional<std::string>>> RemoteHost::ReadFiles(
    const std::vector<storage::FileRead>& reads) {
  peer::ReadFileBatch batch;
  for (const auto& r : reads) batch.entries.push_back({remote_.at(r.drive)->path(), r.path});
  auto r = InvokeCall<PeerCall::kReadFileGroup>(*peer_, {}, batch);
  return PerEntry(
      r.ok() ? Result<std::vector<Result<std::optional<std::string>>>>(std::move(r->results))
             : r.error(),
      reads.size(), *peer_, CallOf<PeerCall::kReadFileGroup>::name);
}

std::vector<Result<storage::RenameDataResult>> RemoteHost::RenameData(
    std::vector<storage::RenameDataEntry> entries) {
  peer::RenameDataBatch batch;
  for (auto& e : entries) batch.entries.push_back({remote_.at(e.drive)->path(), std::move(e.req)});
  auto r = InvokeCall<PeerCall::kRenameDataGroup>(*peer_, {}, batch);
  return PerEntry(
      r.ok() ? Result<std::vector<Result<storage::RenameDataResult>>>(std::move(r->results))
             : r.error(),
      entries.size(), *peer_, CallOf<PeerCall::kRenameDataGroup>::name);
}

std::vector<Status> RemoteHost::WriteShardPieces(const std::vector<storage::ShardPiece>& pieces) {
  constexpr PeerCall kCall = PeerCall::kShardWriteGroup;
  peer::ShardWriteBatch batch;
  size_t total = 0;
  uint64_t basis = 0;  // the largest shard's: picks the transport for all the pieces
  for (const auto& p : pieces) {
    batch.entries.push_back(
        {remote_.at(p.drive)->path(), p.path, p.offset, p.data.size(), p.create, p.sync});
    total += p.data.size();
    basis = std::max(basis, TransportBasis(p.shard_size, p.offset, p.data.size()));
  }
  // The pieces one after another: the body of a TCP call, or the buffer the peer pulls.
  std::string payload;
  payload.reserve(total);
  for (const auto& p : pieces) payload.append(p.data);
  const std::string& peer = peer_->address();
  Result<client::HttpResponse> sent = MakeError(ErrorCode::kInternalError, "not sent");
  bool done = false;
  if (internode_ && internode_->ShouldUse(peer, basis)) {
    auto r = SendRdmaPiece<kCall>(*peer_, *internode_, self_, {}, batch, payload.data(),
                                  payload.size(), /*remote_write=*/false);
    if (!r.ok()) {
      sent = r.error();
      done = true;
    } else if (r->has_value()) {
      internode_->RecordShard(peer, admin::Transport::kRdma, total, 0);
      sent = std::move((*r)->response);
      done = true;
    }
  }
  if (!done) {
    batch.payload = std::move(payload);
    sent = SendCall<kCall>(*peer_, {}, batch, client::ResponseTarget::String(),
                           {{kPeerNodeHeader, self_}});
    if (sent.ok() && internode_ && total > 0)
      internode_->RecordShard(peer, admin::Transport::kTcp, total, 0);
  }
  auto decoded = sent.ok() ? DecodeReply<kCall>(*peer_, std::move(sent).value())
                           : Result<peer::DoneResults>(sent.error());
  auto per =
      PerEntry(decoded.ok() ? Result<std::vector<Result<peer::Done>>>(std::move(decoded->results))
                            : decoded.error(),
               pieces.size(), *peer_, CallOf<kCall>::name);
  std::vector<Status> out;
  out.reserve(per.size());
  for (auto& r : per) out.push_back(r.ok() ? Status() : Status(r.error()));
  return out;
}

std::vector<Result<storage::ShardPieceGot>> RemoteHost::ReadShardPieces(
    const std::vector<storage::ShardPieceRead>& reads) {
  constexpr PeerCall kCall = PeerCall::kShardReadGroup;
  using Results = std::vector<Result<storage::ShardPieceGot>>;
  if (reads.empty()) return {};
  peer::ShardReadBatch batch;
  size_t total = 0;
  uint64_t basis = 0;  // the largest shard's: picks the transport for all the pieces
  bool contiguous = true;
  for (const auto& r : reads) {
    batch.entries.push_back(
        {remote_.at(r.drive)->path(), r.path, r.offset, r.len, r.handle, r.keep});
    contiguous = contiguous && r.buf == reads[0].buf + total;
    total += static_cast<size_t>(r.len);
    basis = std::max(basis, TransportBasis(r.shard_size, r.offset, static_cast<size_t>(r.len)));
  }
  // The slots, one after another: the caller's run of buffers, or a staging copy of it.
  std::string staged;
  char* dst = reads[0].buf;
  if (!contiguous) {
    staged.resize(total);
    dst = staged.data();
  }
  const std::string& peer = peer_->address();
  const std::string* head = nullptr;
  Result<client::HttpResponse> sent = MakeError(ErrorCode::kInternalError, "not sent");
  bool done = false;
  if (internode_ && internode_->ShouldUse(peer, basis)) {
    // The peer RDMA-WRITEs every slot into `dst` at once.
    auto r = SendRdmaPiece<kCall>(*peer_, *internode_, self_, {}, batch, dst, total,
                                  /*remote_write=*/true);
    if (!r.ok()) {
      sent = r.error();
      done = true;
    } else if (r->has_value()) {
      (*r)->exposed.CopyOut(total);
      internode_->RecordShard(peer, admin::Transport::kRdma, 0, total);
      sent = std::move((*r)->response);
      done = true;
    }
  }
  if (!done) {
    sent = SendCall<kCall>(*peer_, {}, batch, client::ResponseTarget::Buffer(dst, total),
                           {{kPeerNodeHeader, self_}});
    if (sent.ok() && sent->body_bytes != total)
      sent =
          MakeError(ErrorCode::kInternalError, "peer " + peer + " answered shardreadgroup with " +
                                                   std::to_string(sent->body_bytes) +
                                                   " bytes for " + std::to_string(total));
    if (sent.ok() && internode_ && total > 0)
      internode_->RecordShard(peer, admin::Transport::kTcp, 0, total);
  }
  if (sent.ok()) head = sent->FindHeader(kReplyHeader);
  auto decoded = !sent.ok() ? Result<peer::ShardReadResults>(sent.error())
                 : head     ? Wire<peer::ShardReadResults>::Decode(Frame{*head, {}})
                            : Result<peer::ShardReadResults>(MakeError(
                                  ErrorCode::kInternalError,
                                  "peer " + peer + " answered shardreadgroup without " + kReplyHeader));
  auto per = PerEntry(decoded.ok() ? Result<Results>(std::move(decoded->results)) : decoded.error(),
                      reads.size(), *peer_, CallOf<kCall>::name);
  size_t at = 0;
  for (size_t j = 0; j < reads.size(); ++j) {
    const auto len = static_cast<size_t>(reads[j].len);
    if (per[j].ok() && per[j]->bytes > len)
      per[j] = MakeError(ErrorCode::kInternalError,
                         "peer " + peer + " answered a shard piece longer than asked");
    if (!contiguous && per[j].ok()) std::memcpy(reads[j].buf, staged.data() + at, len);
    at += len;
  }
  return per;
}

}  // namespace rdmastor::cluster
