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
  // Its connections prove with the peer key that this node opens them (issue 37 item 9).
  rs.auth = node->auth_;
  rs.self = t.self_node().address();
  // Peers learn where this node's inter-node RDMA target listens (a separate RDMA network's
  // address with MINIO_RDMA_INTERNODE_ADDRESS): its tokens name it, its RPCs come from self_ip.
  node->config_json_ = [&] {
    auto j = nlohmann::json::parse(node->config_json_);
    j["rdma_address"] = rs.bind_ip;
    return j.dump();
  }();
  auto internode = InternodeRdma::Create(rs);
  if (!internode.ok()) return internode.error();
  node->internode_ = std::move(internode).value();
  PeerClientOptions peer_options;
  peer_options.local_ip = self_ip;
  peer_options.tls = peer_tls;
  peer_options.ping_interval = config.peer.ping_interval;
  peer_options.ping_timeout = config.peer.ping_timeout;
  peer_options.quick_timeout = config.peer.quick_timeout;
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
  std::vector<std::string> served;
  for (int i : t.self_node().drives) served.push_back(t.endpoints[static_cast<size_t>(i)].path);
  // One host for this node's drives: its peers' batches and its own erasure sets use the same.
  node->local_ = std::make_shared<storage::LocalHost>(served);
  node->peer_server_ =
      std::make_unique<PeerServer>(node->auth_, t.self_node().address(), node->local_, node->locks_,
                                   node->config_json_, node->internode_);
  node->handler_ = std::make_unique<NodeHandler>(node->peer_server_.get());
  spdlog::info("cluster: this node is {} (node {} of {}), {} drive(s) per node",
               t.self_node().address(), t.self + 1, t.nodes.size(), t.self_node().drives.size());
  return node;
}

std::vector<std::string> ClusterNode::local_drive_paths() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < local_->size(); ++i) out.push_back(local_->local(i).root());
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
                                          QueryParam("instance", dsync_->instance()) + "&" +
                                          QueryParam("rdma_address",
                                                     internode_->settings().bind_ip));
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
      if (auto ip = theirs.value("rdma_address", std::string()); !ip.empty())
        internode_->SetPeerRdmaAddress(t.nodes[n].address(), ip);
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
  const auto deadline = Clock::now() + config_.peer.wait;
  RS_RETURN_IF_ERROR(WaitForPeers(deadline));
  // From now on a peer that stops answering is found within a ping interval + timeout.
  for (auto& p : peers_)
    if (p) p->StartHealthCheck();
  const Topology& t = topology_;
  auto last_log = Clock::now();
  for (;;) {
    // One DriveHost per node: this node's LocalHost, a RemoteHost per peer (fresh each attempt).
    std::vector<std::shared_ptr<RemoteHost>> remote(t.nodes.size());
    std::vector<storage::DriveSlot> drives;
    size_t next_local = 0;
    for (const auto& e : t.endpoints) {
      if (e.node == t.self) {
        drives.push_back({local_, next_local++});
        continue;
      }
      auto& host = remote[static_cast<size_t>(e.node)];
      if (!host)
        host = std::make_shared<RemoteHost>(peers_[static_cast<size_t>(e.node)], internode_,
                                            topology_.self_node().address());
      drives.push_back({host, host->AddDrive(e.path, e.url)});
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
