// RC (reliable connected) queue pairs connected with librdmacm: the verbs backend's path for
// inter-node transfers (DESIGN.md §4), behind the same Fabric/Target boundary as the soft fabric.
//
// Addressing is the soft fabric's, so one token format serves both: the target listens with
// rdma_cm on an IPv4 address and port; its token carries the IPv4-mapped GID (::ffff:a.b.c.d),
// lid = the rdma_cm port, qpn = a random 24-bit endpoint id that the initiator sends as connection
// private data and the target checks before accepting. Each Connect is one RC QP with its own CQ;
// after an error completion the QP is in the error state and later requests flush, exactly what
// the shared Transfer engine expects. As on the soft fabric, an initiator only connects to the
// address the request came from unless an allow list names the target.
//
// The verbs implementation is in verbs/rc_fabric.cc (RDMA build); the standard build's factories
// answer kRDMANotSupported. The helpers below are pure and unit-tested in both builds.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "rdma/fabric.h"
#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {

struct RcSettings {
  std::string device;  // MINIO_RDMA_DEVICE: "" = the first device with a usable port (SelectDevice)
  int port = 1;        // MINIO_RDMA_PORT: the port that must be usable
  int cq_depth = 1024;  // MINIO_RDMA_CQ_DEPTH: send queue per QP (clamped to the device's limits)
  std::chrono::milliseconds connect_timeout{3000};  // address/route resolution and connection
  std::vector<soft::Cidr> allow;  // targets reachable besides the requester's own address
  int tos = -1;  // MINIO_RDMA_INTERNODE_TRAFFIC_CLASS (0-255, rdma_cm ToS); -1: the default
  // The node's own address (where its RC target listens and its peer RPCs come from): the
  // initiator uses the device that address belongs to and binds it as the source of its
  // connections (SelectRcDevice). "": the first usable device, routes as the kernel picks.
  std::string source_ip;
  // source_ip must belong to an RDMA device (else: kRDMANotSupported), instead of falling back to
  // the first usable device: when a removed device is opened again, another device that happens
  // to be usable is not the one the node's address (and its clients' connections) live on.
  bool require_source_device = false;
  // Inter-node connections prove who opens them (fabric.h, ConnectProver / ConnectVerifier):
  // the initiator sends prove's proof in its connect private data; a target with `verify` checks
  // it before it creates a QP and puts the connection's QP in the protection domain it answers.
  ConnectProver prove;
  ConnectVerifier verify;
};

// Connection private data: magic + the endpoint id from the token (8 bytes, little endian); with
// a proof (RcSettings::prove) the magic is "RRC2" and a length byte, 3 zero bytes and the proof
// follow (at most kMaxConnectProof bytes: 56 in all, what an IB/RoCE connect request carries).
inline constexpr uint32_t kRcConnectMagic = 0x31435252;      // "RRC1"
inline constexpr uint32_t kRcConnectAuthMagic = 0x32435252;  // "RRC2"
std::vector<uint8_t> EncodeRcConnectData(uint32_t endpoint, const std::vector<uint8_t>& proof = {});
// The endpoint id, or nullopt when the data is too short or not ours (the target rejects).
std::optional<uint32_t> DecodeRcConnectData(const void* data, size_t len);
// The proof an "RRC2" connect carries; empty for "RRC1" or anything malformed.
std::vector<uint8_t> DecodeRcConnectProof(const void* data, size_t len);

struct RcTargetAddr {
  uint32_t ip = 0;  // host byte order
  uint16_t port = 0;
};
// Where a token's RC target listens. kRDMANotSupported without an IPv4-mapped GID or port; the
// origin policy (requester's address or `allow`) gives kAccessDenied.
Result<RcTargetAddr> ResolveRcTarget(const RemoteAddress& remote, const RequestOrigin& origin,
                                     const std::vector<soft::Cidr>& allow);

// The initiator side (connects RC QPs to targets) and the target side (accepts them and exposes
// registered memory). Both fail with kRDMANotSupported when no device is usable (the standard
// build, or a host whose ibv_get_device_list fails with ENOSYS).
Result<std::unique_ptr<Fabric>> CreateVerbsRcFabric(const RcSettings& settings);
Result<std::unique_ptr<Target>> StartVerbsRcTarget(const std::string& bind_ip,
                                                   const RcSettings& settings);
// The client side of S3 over RDMA on RC: registers memory and opens one RC connection per server
// (Target::RcConnection) from settings.source_ip on the device that address belongs to.
Result<std::unique_ptr<Target>> StartVerbsRcClient(const RcSettings& settings);

}  // namespace rdmastor::rdma
