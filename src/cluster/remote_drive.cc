#include "cluster/remote_drive.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cluster/wire.h"

namespace rdmastor::cluster {

namespace {

std::string P(std::string_view name, std::string_view value) { return QueryParam(name, value); }

// Sends the shard in pieces of the drive's piece size (see the top of remote_drive.h).
class RemoteShardWriter final : public storage::ShardWriter {
 public:
  RemoteShardWriter(RemoteDrive& drive, std::string path, uint64_t size)
      : drive_(drive), path_(std::move(path)), size_(size), piece_(drive.piece_bytes()) {
    buf_.reserve(piece_);
  }
  Status Append(std::string_view data) override {
    while (!data.empty()) {
      size_t n = std::min(data.size(), piece_ - buf_.size());
      buf_.append(data.substr(0, n));
      data.remove_prefix(n);
      if (buf_.size() == piece_) RS_RETURN_IF_ERROR(Flush(false));
    }
    return {};
  }
  Status Finish() override { return Flush(true); }

 private:
  Status Flush(bool sync) {
    if (buf_.empty() && !sync) return {};
    RS_RETURN_IF_ERROR(drive_.SendShardBytes(path_, offset_, buf_, /*create=*/false, sync, size_));
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
};

// Fetches windows of the piece size and serves the erasure layer's smaller block reads from the
// last one. Shard files are immutable once written (a new version writes a new data directory),
// so a window never goes stale.
class RemoteShardFile final : public storage::ShardFile {
 public:
  RemoteShardFile(RemoteDrive& drive, std::string path, uint64_t size)
      : drive_(drive), path_(std::move(path)), size_(size), window_(drive.piece_bytes()) {}
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    if (len >= window_) return drive_.FetchShardBytes(path_, off, buf, len, size_);
    const bool inside = off >= cache_off_ && off - cache_off_ <= cache_.size();
    if (!inside || (off + len > cache_off_ + cache_.size() && !cache_eof_)) {
      // A window, never past the end of a file of known size.
      size_t want = window_;
      if (size_ > off) want = static_cast<size_t>(std::min<uint64_t>(want, size_ - off));
      want = std::max(want, len);
      cache_.resize(want);
      auto n = drive_.FetchShardBytes(path_, off, cache_.data(), want, size_);
      if (!n.ok()) {
        cache_.clear();
        return n.error();
      }
      cache_.resize(*n);
      cache_off_ = off;
      cache_eof_ = *n < want || (size_ != 0 && off + *n >= size_);
    }
    const size_t at = static_cast<size_t>(off - cache_off_);
    const size_t n = std::min(len, cache_.size() - at);
    std::memcpy(buf, cache_.data() + at, n);
    return n;
  }

 private:
  RemoteDrive& drive_;
  std::string path_;
  const uint64_t size_;  // 0: unknown
  const size_t window_;
  std::string cache_;
  uint64_t cache_off_ = 0;
  bool cache_eof_ = false;
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

std::string RemoteDrive::StorageTarget(std::string_view call, const std::string& params) const {
  std::string t = std::string(kStoragePrefix) + std::string(call) + "?" + P("disk", path_);
  if (!params.empty()) t += "&" + params;
  return t;
}

Result<client::HttpResponse> RemoteDrive::Rpc(std::string_view call, const std::string& params,
                                              std::string_view body,
                                              const client::ResponseTarget& target) {
  // Quick calls (small reads, no payload, no fsync) get a deadline of their own; the others may
  // wait for a peer's busy disk up to the I/O timeout (a dead peer: the health check).
  static constexpr std::string_view kQuick[] = {
      "online", "diskinfo",   "statvol",  "readvolmeta",   "readfile", "exists",
      "isdir",  "readformat", "listvols", "volhasobjects", "isempty"};
  const bool quick = std::find(std::begin(kQuick), std::end(kQuick), call) != std::end(kQuick);
  return peer_->Call("POST", StorageTarget(call, params), body, target, {},
                     quick ? peer_->quick_timeout() : std::chrono::milliseconds(0));
}

Result<bool> RemoteDrive::BoolRpc(std::string_view call, const std::string& params,
                                  std::string_view body) {
  auto r = Rpc(call, params, body);
  if (!r.ok()) return r.error();
  return r->body == "1";
}

Status RemoteDrive::StatusRpc(std::string_view call, const std::string& params,
                              std::string_view body) {
  auto r = Rpc(call, params, body);
  if (!r.ok()) return r.error();
  return {};
}

bool RemoteDrive::IsOnline() {
  if (!peer_->reachable()) return false;
  auto r = BoolRpc("online", "");
  return r.ok() && *r;
}

Result<storage::DiskInfo> RemoteDrive::GetDiskInfo() {
  auto r = Rpc("diskinfo", "");
  if (!r.ok()) return r.error();
  try {
    auto j = nlohmann::json::parse(r->body);
    storage::DiskInfo d;
    d.total_bytes = j.at("total").get<uint64_t>();
    d.free_bytes = j.at("free").get<uint64_t>();
    d.online = j.at("online").get<bool>();
    return d;
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, std::string("malformed disk info: ") + e.what());
  }
}

Result<bool> RemoteDrive::EnsureRoot() { return BoolRpc("ensureroot", ""); }

Status RemoteDrive::Prepare() {
  // Each node prepares its own drives at start; a peer's staging area is never swept remotely.
  return MakeError(ErrorCode::kInvalidRequest, "a remote drive is prepared by its own node");
}

Result<bool> RemoteDrive::IsEmpty() { return BoolRpc("isempty", ""); }

Result<storage::DriveFormat> RemoteDrive::ReadFormat() {
  auto r = Rpc("readformat", "");
  if (!r.ok()) return r.error();
  return storage::ParseFormat(r->body, "the format of " + url_);
}

Status RemoteDrive::WriteFormat(const storage::DriveFormat& format) {
  return StatusRpc("writeformat", "", storage::SerializeFormat(format));
}

Result<bool> RemoteDrive::MakeVol(const std::string& bucket, const std::string& record) {
  return BoolRpc("makevol", P("bucket", bucket), record);
}

bool RemoteDrive::StatVol(const std::string& bucket) {
  if (!peer_->reachable()) return false;
  auto r = BoolRpc("statvol", P("bucket", bucket));
  return r.ok() && *r;
}

Result<std::vector<std::string>> RemoteDrive::ListVols() {
  auto r = Rpc("listvols", "");
  if (!r.ok()) return r.error();
  return DecodeStrings(r->body);
}

namespace {
Result<std::optional<std::string>> OptionalBody(Result<client::HttpResponse> r) {
  if (!r.ok()) return r.error();
  const std::string* found = r->FindHeader("x-rdmastor-found");
  if (!found || *found != "1") return std::optional<std::string>();
  return std::optional<std::string>(std::move(r->body));
}
}  // namespace

Result<std::optional<std::string>> RemoteDrive::ReadVolMeta(const std::string& bucket) {
  return OptionalBody(Rpc("readvolmeta", P("bucket", bucket)));
}

Result<bool> RemoteDrive::VolHasObjects(const std::string& bucket) {
  return BoolRpc("volhasobjects", P("bucket", bucket));
}

Status RemoteDrive::DeleteVol(const std::string& bucket) {
  return StatusRpc("deletevol", P("bucket", bucket));
}

Result<std::optional<std::string>> RemoteDrive::ReadFile(const std::string& path) {
  return OptionalBody(Rpc("readfile", P("path", path)));
}

Status RemoteDrive::WriteFile(const std::string& path, std::string_view data) {
  return StatusRpc("writefile", P("path", path), data);
}

bool RemoteDrive::Exists(const std::string& path) {
  auto r = BoolRpc("exists", P("path", path));
  return r.ok() && *r;
}

bool RemoteDrive::IsDir(const std::string& path) {
  auto r = BoolRpc("isdir", P("path", path));
  return r.ok() && *r;
}

Result<std::vector<std::string>> RemoteDrive::ListDir(const std::string& path, bool dirs_only) {
  auto r = Rpc("listdir", P("path", path) + "&" + P("dirs", dirs_only ? "1" : "0"));
  if (!r.ok()) return r.error();
  return DecodeStrings(r->body);
}

Status RemoteDrive::MakeDir(const std::string& path) { return StatusRpc("mkdir", P("path", path)); }

Status RemoteDrive::MakeDirAll(const std::string& base, const std::string& path) {
  return StatusRpc("mkdirall", P("base", base) + "&" + P("path", path));
}

Status RemoteDrive::Rename(const std::string& from, const std::string& to) {
  return StatusRpc("rename", P("from", from) + "&" + P("to", to));
}

Status RemoteDrive::Link(const std::string& from, const std::string& to) {
  return StatusRpc("link", P("from", from) + "&" + P("to", to));
}

Status RemoteDrive::Unlink(const std::string& path) { return StatusRpc("unlink", P("path", path)); }

Status RemoteDrive::RemoveAll(const std::string& path) {
  return StatusRpc("removeall", P("path", path));
}

Status RemoteDrive::FsyncDir(const std::string& path) {
  return StatusRpc("fsyncdir", P("path", path));
}

void RemoteDrive::PruneEmptyDirs(const std::string& path, const std::string& stop) {
  (void)StatusRpc("prune", P("path", path) + "&" + P("stop", stop));
}

Result<std::unique_ptr<storage::ShardWriter>> RemoteDrive::CreateShard(const std::string& path,
                                                                       uint64_t size) {
  // Create now (exclusively), so a drive that cannot take the shard drops out before the body
  // is read; the bytes follow in batches of kShardFlushBytes.
  RS_RETURN_IF_ERROR(SendShardBytes(path, 0, {}, /*create=*/true, /*sync=*/false, size));
  return std::unique_ptr<storage::ShardWriter>(new RemoteShardWriter(*this, path, size));
}

Result<std::unique_ptr<storage::ShardFile>> RemoteDrive::OpenShard(const std::string& path,
                                                                   uint64_t size) {
  RS_RETURN_IF_ERROR(storage::CheckRelPath(path));
  return std::unique_ptr<storage::ShardFile>(new RemoteShardFile(*this, path, size));
}

Status RemoteDrive::Commit(const storage::fsutil::CommitPlan& plan) {
  return StatusRpc("commit", "", EncodeCommitPlan(plan));
}

Result<storage::ListResult> RemoteDrive::ListObjects(const std::string& bucket,
                                                     const storage::ListOptions& opts) {
  auto r = Rpc("listobjects", P("bucket", bucket), EncodeListOptions(opts));
  if (!r.ok()) return r.error();
  return DecodeListResult(r->body);
}

// ---- shard payloads ----------------------------------------------------------------------

bool RemoteDrive::IsRdmaFailure(const Error& e) {
  // The serving node could not move the piece (fabric error, refused connection, token it could
  // not use) or had no RDMA capacity left: the TCP resend is safe, the write/read is idempotent.
  return e.code == ErrorCode::kRDMATransferFailed || e.code == ErrorCode::kRDMANotSupported ||
         e.code == ErrorCode::kInvalidRDMAToken || e.code == ErrorCode::kSlowDown;
}

std::string RemoteDrive::ShardParams(const std::string& path, uint64_t offset) const {
  return P("path", path) + "&" + P("off", std::to_string(offset));
}

// The size a piece's transport is chosen by: its shard's (when known), else the shard so far.
uint64_t RemoteDrive::TransportBasis(uint64_t shard_size, uint64_t offset, size_t piece) {
  if (piece == 0) return 0;  // nothing to move
  return shard_size != 0 ? shard_size : offset + piece;
}

Result<std::optional<client::HttpResponse>> RemoteDrive::RdmaPiece(std::string_view call,
                                                                   const std::string& params,
                                                                   char* buf, size_t len,
                                                                   bool remote_write) {
  const std::string& peer = peer_->address();
  auto exposed = internode_->Expose(peer, buf, len, remote_write);
  Error miss = exposed.ok() ? Error{} : exposed.error();
  if (exposed.ok()) {
    auto r = peer_->Call("POST", StorageTarget(call, params), {}, client::ResponseTarget::String(),
                         {{kInternodeTokenHeader, exposed->token()},
                          {kInternodeLengthHeader, std::to_string(len)},
                          {kPeerNodeHeader, self_}});
    if (r.ok()) return std::optional<client::HttpResponse>(std::move(r).value());
    if (!IsRdmaFailure(r.error())) return r.error();
    miss = r.error();
  }
  // A full in-flight bound is no failure of the path: count the fallback, keep the peer on RDMA.
  if (miss.code == ErrorCode::kSlowDown)
    internode_->RecordFallback(peer);
  else
    internode_->ReportFailure(peer, miss);
  return std::optional<client::HttpResponse>();
}

Status RemoteDrive::SendShardBytes(const std::string& path, uint64_t offset, std::string_view data,
                                   bool create, bool sync, uint64_t shard_size) {
  const std::string params = ShardParams(path, offset) + "&" + P("create", create ? "1" : "0") +
                             "&" + P("sync", sync ? "1" : "0");
  const std::string& peer = peer_->address();
  if (internode_ && internode_->ShouldUse(peer, TransportBasis(shard_size, offset, data.size()))) {
    // The peer RDMA-READs the piece out of `data` (registered for remote read for this call).
    auto r = RdmaPiece("shardwrite", params, const_cast<char*>(data.data()), data.size(),
                       /*remote_write=*/false);
    if (!r.ok()) return r.error();
    if (r->has_value()) {
      internode_->RecordShard(peer, admin::Transport::kRdma, data.size(), 0);
      return {};
    }
  }
  auto r = peer_->Call("POST", StorageTarget("shardwrite", params), data,
                       client::ResponseTarget::String(), {{kPeerNodeHeader, self_}});
  if (!r.ok()) return r.error();
  if (internode_ && !data.empty())
    internode_->RecordShard(peer, admin::Transport::kTcp, data.size(), 0);
  return {};
}

Result<size_t> RemoteDrive::FetchShardBytes(const std::string& path, uint64_t offset, char* buf,
                                            size_t len, uint64_t shard_size) {
  const std::string params = ShardParams(path, offset) + "&" + P("len", std::to_string(len));
  const std::string& peer = peer_->address();
  if (internode_ && internode_->ShouldUse(peer, TransportBasis(shard_size, offset, len))) {
    // The peer RDMA-WRITEs what it read into `buf` and says how many bytes that was.
    auto r = RdmaPiece("shardread", params, buf, len, /*remote_write=*/true);
    if (!r.ok()) return r.error();
    if (r->has_value()) {
      const std::string* h = (*r)->FindHeader(kShardBytesHeader);
      uint64_t n = 0;
      if (h == nullptr || std::from_chars(h->data(), h->data() + h->size(), n).ec != std::errc() ||
          n > len)
        return MakeError(
            ErrorCode::kInternalError,
            "peer " + peer + " sent a shardread reply without a valid " + kShardBytesHeader);
      internode_->RecordShard(peer, admin::Transport::kRdma, 0, n);
      return static_cast<size_t>(n);
    }
  }
  auto r = peer_->Call("POST", StorageTarget("shardread", params), {},
                       client::ResponseTarget::Buffer(buf, len), {{kPeerNodeHeader, self_}});
  if (!r.ok()) return r.error();
  if (internode_ && r->body_bytes > 0)
    internode_->RecordShard(peer, admin::Transport::kTcp, 0, r->body_bytes);
  return static_cast<size_t>(r->body_bytes);
}

}  // namespace rdmastor::cluster
