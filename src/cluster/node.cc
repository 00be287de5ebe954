#include "cluster/node.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/lock_client.h"
#include "cluster/remote_drive.h"
#include "common/hash.h"

namespace rdmastor::cluster {

namespace {

using Clock = std::chrono::steady_clock;

// A drive that this node serves (LocalDrive owned by ClusterNode) seen through the erasure layer.
class BorrowedDrive final : public storage::Drive {
 public:
  explicit BorrowedDrive(storage::LocalDrive* d) : d_(d) {}
  const std::string& name() const override { return d_->name(); }
  bool is_local() const override { return true; }
  bool IsOnline() override { return d_->IsOnline(); }
  Result<storage::DiskInfo> GetDiskInfo() override { return d_->GetDiskInfo(); }
  Result<bool> EnsureRoot() override { return d_->EnsureRoot(); }
  Status Prepare() override { return d_->Prepare(); }
  Result<bool> IsEmpty() override { return d_->IsEmpty(); }
  Result<storage::DriveFormat> ReadFormat() override { return d_->ReadFormat(); }
  Status WriteFormat(const storage::DriveFormat& f) override { return d_->WriteFormat(f); }
  Result<bool> MakeVol(const std::string& b, const std::string& r) override {
    return d_->MakeVol(b, r);
  }
  bool StatVol(const std::string& b) override { return d_->StatVol(b); }
  Result<std::vector<std::string>> ListVols() override { return d_->ListVols(); }
  Result<std::optional<std::string>> ReadVolMeta(const std::string& b) override {
    return d_->ReadVolMeta(b);
  }
  Result<bool> VolHasObjects(const std::string& b) override { return d_->VolHasObjects(b); }
  Status DeleteVol(const std::string& b) override { return d_->DeleteVol(b); }
  Result<std::optional<std::string>> ReadFile(const std::string& p) override {
    return d_->ReadFile(p);
  }
  Status WriteFile(const std::string& p, std::string_view data) override {
    return d_->WriteFile(p, data);
  }
  bool Exists(const std::string& p) override { return d_->Exists(p); }
  bool IsDir(const std::string& p) override { return d_->IsDir(p); }
  Result<std::vector<std::string>> ListDir(const std::string& p, bool dirs_only) override {
    return d_->ListDir(p, dirs_only);
  }
  Status MakeDir(const std::string& p) override { return d_->MakeDir(p); }
  Status MakeDirAll(const std::string& b, const std::string& p) override {
    return d_->MakeDirAll(b, p);
  }
  Status Rename(const std::string& a, const std::string& b) override { return d_->Rename(a, b); }
  Status Link(const std::string& a, const std::string& b) override { return d_->Link(a, b); }
  Status Unlink(const std::string& p) override { return d_->Unlink(p); }
  Status RemoveAll(const std::string& p) override { return d_->RemoveAll(p); }
  Status FsyncDir(const std::string& p) override { return d_->FsyncDir(p); }
  void PruneEmptyDirs(const std::string& p, const std::string& s) override {
    d_->PruneEmptyDirs(p, s);
  }
  Result<std::unique_ptr<storage::ShardWriter>> CreateShard(const std::string& p,
                                                            uint64_t size) override {
    return d_->CreateShard(p, size);
  }
  Result<std::unique_ptr<storage::ShardFile>> OpenShard(const std::string& p,
                                                        uint64_t size) override {
    return d_->OpenShard(p, size);
  }
  Status Commit(const storage::fsutil::CommitPlan& plan) override { return d_->Commit(plan); }
  Result<storage::RenameDataResult> RenameData(const storage::RenameDataRequest& r) override {
    return d_->RenameData(r);
  }
  // The drive's file system group, so that the node's own drives of a set commit (and run their
  // page-cache steps) together as a single node's do: measured on 4 nodes x 4 drives, without it
  // each of the 4 local drives committed on its own thread with barriers of its own.
  uint64_t GroupKey() const override { return d_->GroupKey(); }
  std::vector<Result<storage::RenameDataResult>> RenameDataGroup(
      const std::vector<storage::Drive*>& group,
      const std::vector<storage::RenameDataRequest>& reqs) override {
    std::vector<storage::Drive*> local(group);
    for (auto& d : local)
      if (auto* b = dynamic_cast<BorrowedDrive*>(d)) d = b->d_;
    return d_->RenameDataGroup(local, reqs);
  }
  Result<storage::ListResult> ListObjects(const std::string& b,
                                          const storage::ListOptions& o) override {
    return d_->ListObjects(b, o);
  }

 private:
  storage::LocalDrive* d_;
};

std::string VolumesHash(const std::vector<std::string>& drives) {
  std::string all;
  for (const auto& d : drives) all += d + "\n";
  return hash::Sha256Hex(all);
}

}  // namespace

ClusterNode::~ClusterNode() = default;

Result<std::unique_ptr<ClusterNode>> ClusterNode::Create(const ClusterConfig& config) {
  auto topo =
      BuildTopology(config.drives, config.listen_host, config.listen_port, LocalAddresses());
  if (!topo.ok()) return topo.error();
  if (topo->tls && !config.tls) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        "the endpoints are https:// but this node has no TLS certificate: put "
        "public.crt and private.key in " +
            (config.certs_dir.empty() ? std::string("the certs directory") : config.certs_dir) +
            " (--certs-dir), or use http:// endpoints");
  }
  if (!topo->tls && config.tls) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "this node serves HTTPS (public.crt and private.key in " + config.certs_dir +
                         ") but the endpoints are http://: use https:// endpoints so that the "
                         "nodes talk to each other over TLS, or remove the certificate");
  }
  std::shared_ptr<const client::TlsContext> peer_tls;
  if (topo->tls) {
    client::TlsClientOptions to;
    to.ca_dirs = config.ca_dirs;
    auto ctx = client::TlsContext::Create(to);
    if (!ctx.ok()) return ctx.error();
    peer_tls = std::move(ctx).value();
    spdlog::info("cluster: peer RPC over TLS; trusted CAs: {}", peer_tls->trust_description());
  }
  auto node = std::unique_ptr<ClusterNode>(new ClusterNode());
  node->config_ = config;
  node->topology_ = std::move(*topo);
  const Topology& t = node->topology_;
  node->auth_ = std::make_shared<PeerAuth>(config.access_key, config.secret_key);
  node->config_json_ = nlohmann::json{
      {"version", 1},
      {"node", t.self_node().address()},
      {"volumes", VolumesHash(config.drives)},
      {"drive_count", config.drives.size()},
      {"credentials", node->auth_->credential_hash()},
      {"storage_class", config.storage_classes.standard},
      {"storage_class_rrs", config.storage_classes.rrs},
      {"rdma_internode", config.internode.enabled ? "on" : "off"},
      {"rdma_min_size", config.internode.min_size},
      {"rdma_fabric",
       config.internode.enabled
           ? rdma::FabricName(config.internode.fabric)
           : "-"}}.dump();
  // Peer RPCs leave from this node's own address, and its RDMA target listens there (or on
  // MINIO_RDMA_INTERNODE_ADDRESS): the soft fabric of a peer connects back only to the address
  // a request came from.
  const std::string self_ip = LocalIpOf(t.self_node().host, LocalAddresses());
  InternodeRdmaSettings rs = config.internode;
  if (rs.bind_ip.empty()) rs.bind_ip = self_ip.empty() ? "127.0.0.1" : self_ip;
  auto internode = InternodeRdma::Create(rs);
  if (!internode.ok()) return internode.error();
  node->internode_ = std::move(internode).value();
  PeerClientOptions peer_options;
  peer_options.local_ip = self_ip;
  peer_options.tls = peer_tls;
  peer_options.ping_interval = config.peer_ping_interval;
  peer_options.ping_timeout = config.peer_ping_timeout;
  peer_options.quick_timeout = config.peer_quick_timeout;
  std::vector<std::shared_ptr<LockerClient>> lockers;
  node->locks_ = std::make_shared<LockServer>();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (static_cast<int>(n) == t.self) {
      node->peers_.push_back(nullptr);
      lockers.push_back(std::make_shared<LocalLockerClient>(node->locks_));
      continue;
    }
    auto peer =
        std::make_shared<PeerClient>(t.nodes[n].host, t.nodes[n].port, node->auth_, peer_options);
    node->peers_.push_back(peer);
    lockers.push_back(std::make_shared<HttpLockerClient>(peer));
  }
  node->dsync_ = std::make_shared<Dsync>(std::move(lockers), t.self_node().address());
  std::map<std::string, storage::LocalDrive*> served;
  for (int i : t.self_node().drives) {
    const std::string& path = t.endpoints[static_cast<size_t>(i)].path;
    node->local_.push_back(std::make_unique<storage::LocalDrive>(path));
    served[path] = node->local_.back().get();
  }
  node->peer_server_ =
      std::make_unique<PeerServer>(node->auth_, t.self_node().address(), std::move(served),
                                   node->locks_, node->config_json_, node->internode_);
  node->handler_ = std::make_unique<NodeHandler>(node->peer_server_.get());
  spdlog::info("cluster: this node is {} (node {} of {}), {} drive(s) per node",
               t.self_node().address(), t.self + 1, t.nodes.size(), t.self_node().drives.size());
  return node;
}

std::vector<std::string> ClusterNode::local_drive_paths() const {
  std::vector<std::string> out;
  for (const auto& d : local_) out.push_back(d->root());
  return out;
}

Status ClusterNode::WaitForPeers(Clock::time_point deadline) {
  const Topology& t = topology_;
  const auto mine = nlohmann::json::parse(config_json_);
  std::vector<bool> ok(t.nodes.size(), false);
  ok[static_cast<size_t>(t.self)] = true;
  auto last_log = Clock::now() - std::chrono::seconds(10);
  // The last real failure per peer: inside PeerClient's fail-fast window a call only says "is
  // unreachable", and the logs and the final error should name the cause.
  std::vector<std::string> last_error(t.nodes.size());
  std::vector<bool> tls_warned(t.nodes.size(), false);
  for (int attempt = 1;; ++attempt) {
    std::string waiting;
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      if (ok[n]) continue;
      if (!peers_[n]->reachable() && !last_error[n].empty()) {
        waiting +=
            (waiting.empty() ? "" : ", ") + t.nodes[n].address() + " (" + last_error[n] + ")";
        continue;
      }
      // Naming this process lets the peer drop locks a previous process of this node held.
      auto r = peers_[n]->Call("GET", std::string(kPeerPrefix) + "config?" +
                                          QueryParam("node", dsync_->owner()) + "&" +
                                          QueryParam("instance", dsync_->instance()));
      if (!r.ok()) {
        // A peer that started just now refuses what was signed before it started (its replay
        // cache is new); a peer whose clock lags this one's a little is refused for that long:
        // both pass on a later attempt, unlike a credential mismatch.
        const bool before_start =
            r.error().message.find(kPeerSignedBeforeStart) != std::string::npos;
        if (r.error().code == ErrorCode::kAccessDenied && !before_start) {
          return MakeError(ErrorCode::kInvalidArgument,
                           "peer " + t.nodes[n].address() +
                               " refused this node's peer RPC signature: the root credentials "
                               "(MINIO_ROOT_USER / MINIO_ROOT_PASSWORD) differ between nodes, or "
                               "the clocks are more than 5 minutes apart");
        }
        last_error[n] = r.error().message;
        // A TLS failure (untrusted certificate, wrong name, peer not speaking HTTPS) does not go
        // away by waiting, unlike a peer that is still starting: say so at once.
        if (!tls_warned[n] && last_error[n].find("TLS") != std::string::npos) {
          tls_warned[n] = true;
          spdlog::warn("cluster: {}", last_error[n]);
        }
        waiting +=
            (waiting.empty() ? "" : ", ") + t.nodes[n].address() + " (" + r.error().message + ")";
        continue;
      }
      nlohmann::json theirs;
      try {
        theirs = nlohmann::json::parse(r->body);
      } catch (const std::exception& e) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "peer " + t.nodes[n].address() + " sent a malformed configuration");
      }
      auto differs = [&](const char* field, const std::string& what) -> std::optional<Error> {
        if (theirs.value(field, nlohmann::json()) == mine.at(field)) return std::nullopt;
        return MakeError(ErrorCode::kInvalidArgument,
                         "configuration mismatch with peer " + t.nodes[n].address() + ": " + what +
                             " (this node: " + mine.at(field).dump() +
                             ", peer: " + theirs.value(field, nlohmann::json()).dump() +
                             "); every node must be started with the same settings");
      };
      if (auto e = differs("credentials",
                           "different root credentials (MINIO_ROOT_USER / "
                           "MINIO_ROOT_PASSWORD; hashes shown)"))
        return *e;
      if (auto e = differs("volumes",
                           "different drive lists (MINIO_VOLUMES / server arguments; "
                           "hashes shown)"))
        return *e;
      if (auto e = differs("drive_count", "different number of drives")) return *e;
      if (auto e = differs("storage_class", "different MINIO_STORAGE_CLASS_STANDARD")) return *e;
      if (auto e = differs("storage_class_rrs", "different MINIO_STORAGE_CLASS_RRS")) return *e;
      if (auto e = differs("rdma_internode", "different MINIO_RDMA_INTERNODE")) return *e;
      if (auto e = differs("rdma_min_size", "different MINIO_RDMA_MIN_SIZE")) return *e;
      if (auto e = differs("rdma_fabric", "different inter-node RDMA fabric (MINIO_RDMA_FABRIC)"))
        return *e;
      ok[n] = true;
      spdlog::info("cluster: peer {} is up, configuration matches", t.nodes[n].address());
    }
    if (waiting.empty()) return {};
    const auto now = Clock::now();
    if (now >= deadline) {
      int up = 0;
      for (bool b : ok) up += b;
      if (up > static_cast<int>(t.nodes.size()) / 2) {
        spdlog::warn("cluster: starting with {} of {} nodes; still unreachable: {}", up,
                     t.nodes.size(), waiting);
        return {};
      }
      return MakeError(ErrorCode::kServiceUnavailable,
                       "gave up waiting for peers (MINIO_PEER_WAIT): unreachable: " + waiting);
    }
    if (now - last_log >= std::chrono::seconds(5)) {
      last_log = now;
      spdlog::info("cluster: waiting for peers (attempt {}): {}", attempt, waiting);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 100 * attempt)));
  }
}

Result<std::unique_ptr<storage::ErasureStore>> ClusterNode::Start() {
  const auto deadline = Clock::now() + config_.peer_wait;
  RS_RETURN_IF_ERROR(WaitForPeers(deadline));
  // From now on a peer that stops answering is found within a ping interval + timeout.
  for (auto& p : peers_)
    if (p) p->StartHealthCheck();
  const Topology& t = topology_;
  auto last_log = Clock::now();
  for (;;) {
    std::vector<std::unique_ptr<storage::Drive>> drives;
    size_t next_local = 0;
    for (const auto& e : t.endpoints) {
      if (e.node == t.self) {
        drives.push_back(std::make_unique<BorrowedDrive>(local_[next_local++].get()));
      } else {
        drives.push_back(std::make_unique<RemoteDrive>(peers_[static_cast<size_t>(e.node)], e.path,
                                                       e.url, internode_,
                                                       topology_.self_node().address()));
      }
    }
    storage::FormatOptions fo;
    fo.may_create = t.is_first();  // MinIO: the first endpoint's node formats a new deployment
    fo.fresh_needs_all = true;
    auto store = storage::ErasureStore::Open(std::move(drives), config_.storage_classes, fo);
    if (store.ok()) return store;
    if (store.error().code != ErrorCode::kServiceUnavailable || Clock::now() >= deadline) {
      return store.error();
    }
    if (Clock::now() - last_log >= std::chrono::seconds(5)) {
      last_log = Clock::now();
      spdlog::info("cluster: waiting for the format: {}", store.error().message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace rdmastor::cluster
