// One node of a distributed deployment: topology, its drives (LocalDrive for its own, RemoteDrive
// for the peers'), the peer RPC server, the lock servers, and start-up (wait for the peers,
// compare configurations, agree on the format, open the erasure layer).
//
// Start-up order (cli/main.cc): Create() → serve handler() on the S3 port (peer RPC is answered
// from then on; S3 requests get 503 until ready) → Start() → NodeHandler::SetS3.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cluster/dsync.h"
#include "cluster/internode_rdma.h"
#include "cluster/peer_server.h"
#include "cluster/peer_timings.h"
#include "cluster/topology.h"
#include "common/result.h"
#include "storage/erasure_store.h"

namespace rdmastor::cluster {

struct ClusterConfig {
  std::vector<std::string> drives;  // expanded URLs, as given
  std::string listen_host;          // --address host ("" = all interfaces)
  uint16_t listen_port = 9000;
  std::string access_key, secret_key;
  erasure::StorageClassSettings storage_classes;  // MINIO_STORAGE_CLASS_STANDARD / _RRS
  // Inter-node shard transport (MINIO_RDMA_INTERNODE, MINIO_RDMA_MIN_SIZE, ...). bind_ip "" =
  // this node's own address.
  InternodeRdmaSettings internode;
  PeerTimings peer;  // MINIO_PEER_WAIT, RDMASTOR_PEER_PING_INTERVAL, ...
  // TLS (--certs-dir). tls: this node serves HTTPS (public.crt / private.key). https://
  // endpoints need it, http:// endpoints refuse it (a node serving HTTPS only cannot be reached
  // by peers speaking HTTP). Peers' certificates are verified against the system store plus
  // every *.crt / *.pem in ca_dirs (MinIO's <certs-dir>/CAs).
  bool tls = false;
  std::string certs_dir;
  std::vector<std::string> ca_dirs;
};

class ClusterNode {
 public:
  static Result<std::unique_ptr<ClusterNode>> Create(const ClusterConfig& config);
  ~ClusterNode();

  const Topology& topology() const { return topology_; }
  s3::RequestHandler& handler() { return *handler_; }
  NodeHandler& node_handler() { return *handler_; }
  std::shared_ptr<const Dsync> dsync() const { return dsync_; }
  // The inter-node shard transport (never null; off when MINIO_RDMA_INTERNODE is off).
  InternodeRdma& internode() { return *internode_; }
  // Paths of this node's drives (health, metrics).
  std::vector<std::string> local_drive_paths() const;

  // Waits for every peer (bounded by peer.wait, logged), refuses a peer whose configuration
  // differs, then loads or creates the format (the first node creates a new deployment; the others
  // wait for its format files) and opens the erasure layer over all drives.
  Result<std::unique_ptr<storage::ErasureStore>> Start();

  // This node's configuration digest (what /minio/peer/v1/config answers).
  const std::string& config_json() const { return config_json_; }

 private:
  ClusterNode() = default;
  Status WaitForPeers(std::chrono::steady_clock::time_point deadline);

  ClusterConfig config_;
  Topology topology_;
  std::string config_json_;
  std::shared_ptr<const PeerAuth> auth_;
  std::vector<std::shared_ptr<PeerClient>> peers_;  // by node index (null for this node)
  std::shared_ptr<storage::LocalHost> local_;       // served to peers and used by this node's sets
  std::shared_ptr<LockServer> locks_;
  std::shared_ptr<InternodeRdma> internode_;
  std::shared_ptr<const Dsync> dsync_;
  std::unique_ptr<PeerServer> peer_server_;
  std::unique_ptr<NodeHandler> handler_;
};

}  // namespace rdmastor::cluster
