// The `soft` fabric: one-sided RDMA semantics emulated in user space over TCP (DESIGN.md §4).
//
// The client side runs a SoftTarget: a TCP listener that owns the registered regions (rkey →
// memory). Its address goes into the token: an IPv4-mapped GID (::ffff:a.b.c.d) for the host,
// `lid` for the TCP port, `qpn` for the endpoint id. The server side (SoftFabric) connects to it
// and posts WRITE/READ work requests; the target checks rkey, permission and bounds for every
// request and moves the bytes straight between the socket and the region, answering with the same
// completion statuses as hardware (kRemoteAccessError for a bad rkey or an out-of-bounds range).
// Wire format: see soft_wire.h.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rdma/fabric.h"

namespace rdmastor::rdma::soft {

// An IPv4 network "a.b.c.d/len".
struct Cidr {
  uint32_t network = 0;  // host byte order
  int prefix = 32;
  bool Contains(uint32_t ip) const;
};
// Parses a comma/space separated list of IPv4 CIDRs or addresses (MINIO_RDMA_SOFT_ALLOW).
Result<std::vector<Cidr>> ParseCidrList(std::string_view text);
// "127.0.0.1" or "::ffff:127.0.0.1" → host-order IPv4; nullopt for anything else.
std::optional<uint32_t> ParseIpv4(std::string_view text);

struct SoftFabricOptions {
  // Targets the server may connect to besides the address each HTTP request came from.
  std::vector<Cidr> allow;
  std::chrono::milliseconds connect_timeout{3000};
  // Longest a single socket send/receive may block: bounds a frozen peer.
  std::chrono::milliseconds io_timeout{10000};
  // Progress measured on bytes (RDMASTOR_RDMA_PROGRESS_TIMEOUT / _MIN_RATE): an endpoint whose
  // target moves fewer than max(1, min_rate × progress_interval) bytes in any progress_interval
  // of waiting on it (the handshake included) fails, so a target trickling a byte at a time is
  // cut off after one interval instead of resetting a per-call timer forever. At most io_timeout
  // (a peer that moves nothing is frozen).
  std::chrono::milliseconds progress_interval{10000};
  uint64_t min_rate = 1u << 20;  // bytes per second; 0: any byte per interval
  // Connection reuse: an endpoint released in a clean state (nothing outstanding, never in error)
  // keeps its connection for the next Connect to the same target (host, port, endpoint id), for
  // at most idle_timeout and at most max_idle connections in all. 0 disables reuse. Kept below
  // the target's own idle limit (SoftTargetOptions::io_timeout) so a reused connection is not
  // closed under the server by the client; one the client did close is detected (EOF) and
  // replaced before use.
  size_t max_idle_connections = 64;
  std::chrono::milliseconds idle_timeout{10000};
  int tos = -1;  // IP_TOS of its connections (MINIO_RDMA_INTERNODE_TRAFFIC_CLASS); -1: default
  // Set: every connection says HelloAuth with this proof (inter-node: cluster/peer_auth.h).
  ConnectProver prove;
};

// The initiator side (the server).
class SoftFabric final : public Fabric {
 public:
  explicit SoftFabric(SoftFabricOptions options = {});
  ~SoftFabric() override;
  std::string_view name() const override { return "soft"; }
  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override;
  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& remote,
                                            const RequestOrigin& origin) override;
  // Soft RC: a TCP listener whose clients (SoftTarget::RcConnection) say Hello with kRcMagic.
  Result<std::unique_ptr<RcListener>> ListenRc(const std::string& bind_ip, uint16_t port,
                                               RcAdmission admission) override;

  struct Registry;  // local regions by lkey (lkey and bounds checks on post)
  struct Pool;      // idle connections by target

  // Connections opened to targets so far, and Connects served by an idle connection instead.
  uint64_t connections_opened() const;
  uint64_t connections_reused() const;

 private:
  SoftFabricOptions options_;
  std::shared_ptr<Registry> registry_;
  std::shared_ptr<Pool> pool_;
};

struct SoftTargetOptions {
  std::string bind_ip = "127.0.0.1";  // IPv4 the listener binds to and advertises in the GID
  // Longest a request may take to arrive or be answered once it started.
  std::chrono::milliseconds io_timeout{30000};
  // Longest a connection may wait for its next request: above the initiators' own idle limit
  // (persistent inter-node channels close after 5 minutes idle), so a kept connection is not
  // closed under them. Keepalive probes end one whose initiator vanished sooner. A connection
  // that ends (EOF, error, idle) is closed at once: no descriptor lingers in CLOSE_WAIT.
  std::chrono::milliseconds idle_timeout{360000};
  int tos = -1;  // IP_TOS of accepted connections; -1: default
  // Set: a connection is served only once this accepts its proof, and then reaches only the
  // regions registered in the domain it answered (RegisterMemoryIn). Unset: every connection
  // is domain 0's.
  ConnectVerifier verify;
};

// The target side (the client): serves one-sided operations on its registered regions.
class SoftTarget final : public Target {
 public:
  static Result<std::unique_ptr<SoftTarget>> Start(SoftTargetOptions options = {});
  ~SoftTarget() override;
  RemoteAddress address() const override;
  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override;
  Result<std::unique_ptr<MemoryRegion>> RegisterMemoryIn(uint32_t domain, void* addr,
                                                         size_t length, unsigned access) override;
  // Maps the dma-buf (CPU-mappable exporters only) and serves it at [iova, iova + length).
  Result<std::unique_ptr<MemoryRegion>> RegisterDmabuf(int fd, uint64_t offset, size_t length,
                                                       uint64_t iova, unsigned access) override;
  Result<RcConnectionInfo> RcConnection(uint32_t server_ip, uint16_t port, bool fresh) override;
  uint64_t requests_served() const;
  uint64_t connections_accepted() const;

  struct Impl;

 private:
  explicit SoftTarget(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace rdmastor::rdma::soft
