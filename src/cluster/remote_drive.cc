#include "cluster/remote_drive.h"

#include <nlohmann/json.hpp>

#include "cluster/wire.h"

namespace rdmastor::cluster {

namespace {

constexpr size_t kShardFlushBytes = 1 << 20;  // a remote shard writer sends at least this much

std::string P(std::string_view name, std::string_view value) { return QueryParam(name, value); }

class RemoteShardWriter final : public storage::ShardWriter {
 public:
  RemoteShardWriter(RemoteDrive& drive, std::string path) : drive_(drive), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    buf_.append(data);
    if (buf_.size() < kShardFlushBytes) return {};
    return Flush(false);
  }
  Status Finish() override { return Flush(true); }

 private:
  Status Flush(bool sync) {
    RS_RETURN_IF_ERROR(drive_.SendShardBytes(path_, offset_, buf_, /*create=*/false, sync));
    offset_ += buf_.size();
    buf_.clear();
    return {};
  }
  RemoteDrive& drive_;
  std::string path_;
  std::string buf_;
  uint64_t offset_ = 0;
};

class RemoteShardFile final : public storage::ShardFile {
 public:
  RemoteShardFile(RemoteDrive& drive, std::string path) : drive_(drive), path_(std::move(path)) {}
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    return drive_.FetchShardBytes(path_, off, buf, len);
  }

 private:
  RemoteDrive& drive_;
  std::string path_;
};

}  // namespace

RemoteDrive::RemoteDrive(std::shared_ptr<PeerClient> peer, std::string path, std::string url)
    : peer_(std::move(peer)), path_(std::move(path)), url_(std::move(url)) {}

Result<client::HttpResponse> RemoteDrive::Rpc(std::string_view call, const std::string& params,
                                              std::string_view body,
                                              const client::ResponseTarget& target) {
  std::string t = std::string(kStoragePrefix) + std::string(call) + "?" + P("disk", path_);
  if (!params.empty()) t += "&" + params;
  return peer_->Call("POST", t, body, target);
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
  return DecodeFormat(r->body);
}

Status RemoteDrive::WriteFormat(const storage::DriveFormat& format) {
  return StatusRpc("writeformat", "", EncodeFormat(format));
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

Result<std::unique_ptr<storage::ShardWriter>> RemoteDrive::CreateShard(const std::string& path) {
  // Create now (exclusively), so a drive that cannot take the shard drops out before the body
  // is read; the bytes follow in batches of kShardFlushBytes.
  RS_RETURN_IF_ERROR(SendShardBytes(path, 0, {}, /*create=*/true, /*sync=*/false));
  return std::unique_ptr<storage::ShardWriter>(new RemoteShardWriter(*this, path));
}

Result<std::unique_ptr<storage::ShardFile>> RemoteDrive::OpenShard(const std::string& path) {
  RS_RETURN_IF_ERROR(storage::CheckRelPath(path));
  return std::unique_ptr<storage::ShardFile>(new RemoteShardFile(*this, path));
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

// ---- shard payloads: the inter-node RDMA seam ------------------------------------------------
//
// With MINIO_RDMA_INTERNODE=on and data.size() >= MINIO_RDMA_MIN_SIZE, cluster::InternodeRdma
// replaces the body: the caller registers `data`, sends the same request with an empty body and
// its token header, and the serving PeerServer pulls the bytes with RDMA READ (SendShardBytes) or
// pushes them with RDMA WRITE into `buf` (FetchShardBytes). Everything else stays as is.

Status RemoteDrive::SendShardBytes(const std::string& path, uint64_t offset, std::string_view data,
                                   bool create, bool sync) {
  return StatusRpc("shardwrite",
                   P("path", path) + "&" + P("off", std::to_string(offset)) + "&" +
                       P("create", create ? "1" : "0") + "&" + P("sync", sync ? "1" : "0"),
                   data);
}

Result<size_t> RemoteDrive::FetchShardBytes(const std::string& path, uint64_t offset, char* buf,
                                            size_t len) {
  auto r = Rpc("shardread",
               P("path", path) + "&" + P("off", std::to_string(offset)) + "&" +
                   P("len", std::to_string(len)),
               {}, client::ResponseTarget::Buffer(buf, len));
  if (!r.ok()) return r.error();
  return static_cast<size_t>(r->body_bytes);
}

}  // namespace rdmastor::cluster
