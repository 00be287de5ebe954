// The peer timings of a cluster node (docs/settings.md), one struct from the environment
// (cli::ServerConfig) through ClusterConfig to the node and its PeerClientOptions.
#pragma once

#include <chrono>

namespace rdmastor::cluster {

struct PeerTimings {
  // MINIO_PEER_WAIT: how long start-up waits for the peers (and the first node's format).
  std::chrono::milliseconds wait{120000};
  // The peer health check (PeerClientOptions): RDMASTOR_PEER_PING_INTERVAL (0: none),
  // RDMASTOR_PEER_PING_TIMEOUT.
  std::chrono::milliseconds ping_interval{1000};
  std::chrono::milliseconds ping_timeout{2000};
  // RDMASTOR_PEER_QUICK_TIMEOUT: the deadline of quick metadata calls.
  std::chrono::milliseconds quick_timeout{5000};
};

}  // namespace rdmastor::cluster
