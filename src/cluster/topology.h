// The deployment's topology from the expanded MINIO_VOLUMES / server arguments: which node owns
// which drive, in which order drives form erasure sets, and which node is this process.
//
// Distributed endpoints are URLs "http://HOST:PORT/PATH" or, with TLS between the nodes,
// "https://HOST:PORT/PATH" (one scheme for all; port default 9000 for both). Nodes are
// identified by HOST:PORT, so several nodes may share one host (loopback tests) when their ports
// differ. Drives are laid out MinIO-style: the i-th drive of every node in node order, then the
// (i+1)-th, ... — for "http://node{1...4}:9000/mnt/disk{1...4}" the order is node1/disk1,
// node2/disk1, node3/disk1, node4/disk1, node1/disk2, ... so every erasure set (consecutive drives)
// spreads over the nodes and a node going down costs each set as few drives as possible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmastor::cluster {

struct Endpoint {
  std::string url;   // as given (after ellipsis expansion)
  std::string host;  // without brackets
  uint16_t port = 9000;
  std::string path;  // the drive directory on its node (absolute)
  int node = 0;      // index into Topology::nodes
  bool tls = false;  // https://
};

// "host:port" ("[::1]:9000" for IPv6): how the cluster names a node (peer signatures bind to it).
std::string NodeAddress(std::string_view host, uint16_t port);

struct Node {
  std::string host;
  uint16_t port = 9000;
  std::vector<int> drives;      // indexes into Topology::endpoints, in order
  bool local = false;           // this process
  std::string address() const;  // "host:port" ("[::1]:9000" for IPv6)
};

struct Topology {
  std::vector<Endpoint> endpoints;  // erasure order (see the top of this file)
  std::vector<Node> nodes;          // in order of first appearance
  int self = -1;                    // index of this node
  bool tls = false;                 // https:// endpoints: the nodes talk to each other over TLS

  const Node& self_node() const { return nodes[static_cast<size_t>(self)]; }
  // The node that formats a new deployment (the first one, MinIO's "first endpoint").
  bool is_first() const { return self == 0; }
};

// True when the drive list names URLs (distributed mode).
bool IsDistributed(const std::vector<std::string>& drives);

// Builds the topology from the expanded drive list. `listen_host` / `listen_port` are this
// process's --address ("" = all interfaces); `local_addresses` the addresses of this host's
// interfaces (LocalAddresses()). A node is this process when its port equals listen_port and its
// host is listen_host, "localhost" or one of local_addresses (names are resolved).
// Errors (kInvalidArgument, naming the endpoint): plain paths mixed with URLs, a scheme other than
// http/https or http mixed with https, a relative drive path, the same drive twice, nodes with
// different drive counts, no node or several nodes matching this process.
Result<Topology> BuildTopology(const std::vector<std::string>& drives,
                               const std::string& listen_host, uint16_t listen_port,
                               const std::vector<std::string>& local_addresses);

// IPv4/IPv6 addresses of this host's interfaces (getifaddrs), loopback included.
std::vector<std::string> LocalAddresses();

// The address of this host that `host` (a node's host: an IP literal or a name) stands for, IPv4
// first; "" when none of its addresses is one of local_addresses. A node binds it as the source of
// its peer RPCs and its inter-node RDMA target, so peers see both come from one address.
std::string LocalIpOf(const std::string& host, const std::vector<std::string>& local_addresses);

}  // namespace rdmastor::cluster
