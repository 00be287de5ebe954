// MINIO_RDMA_* settings of S3 over RDMA, read once at start and validated: an invalid value
// refuses to start with a message naming the variable and what it accepts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "rdma/s3_service.h"
#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {

enum class FabricKind { kOff, kVerbs, kSoft };

struct VerbsSettings {
  std::string device;            // MINIO_RDMA_DEVICE: "" = first device with an active port
  int port = 1;                  // MINIO_RDMA_PORT: 1..255
  int gid_index = -1;            // MINIO_RDMA_GID_INDEX: 0..255, -1 = pick a RoCE v2 IPv4 GID
  uint64_t dc_key = 0xffeeddcc;  // MINIO_RDMA_DC_KEY
  int num_dcis = 64;             // MINIO_RDMA_NUM_DCIS: 1..1024
  int cq_depth = 1024;           // MINIO_RDMA_CQ_DEPTH: 16..65536
  // Fabric knobs for the DC initiators' address handles and QPs (a client DCT's traffic class,
  // SL and pkey index too), as cuObject's server exposes them: lossless RoCE classes and IB
  // partitions.
  int traffic_class = 0;  // MINIO_RDMA_TRAFFIC_CLASS: 0..255, GRH traffic class (DSCP << 2 on RoCE)
  int service_level = 0;  // MINIO_RDMA_SERVICE_LEVEL: 0..15
  int pkey_index = 0;     // MINIO_RDMA_PKEY_INDEX: 0..65535
  int timeout = 14;       // MINIO_RDMA_TIMEOUT: 1..31, local ACK timeout 4.096 us * 2^n
  // MINIO_RDMA_MTU_MAX: the largest path MTU in bytes (256..4096, a power of two) the DC
  // initiators use; the port's active MTU when smaller. The token carries no MTU (cuObject's
  // format), so a server whose port MTU exceeds some clients' caps it here.
  int mtu_max = 4096;
  // MINIO_RDMA_ALLOW: networks a RoCE v2 token's GID may name besides the requester's own
  // address (VerbsOriginRefusal); "any" turns the check off.
  std::vector<soft::Cidr> allow;
  bool origin_check = true;
};

struct RdmaSettings {
  FabricKind fabric = FabricKind::kOff;  // MINIO_RDMA_FABRIC
  VerbsSettings verbs;
  std::vector<soft::Cidr> soft_allow;  // MINIO_RDMA_SOFT_ALLOW
  // MINIO_RDMA_RC_PORT: where clients open their RC connections (S3 over RDMA on RC); 0: off.
  int rc_port = 9100;
  // Names of the MINIO_RDMA_* variables this build acts on (the standard build warns about the
  // rest).
  std::vector<std::string> live_names;
};

// Defaults: fabric verbs on the RDMA build, off on the standard build (which offers soft only).
Result<RdmaSettings> ParseRdmaSettings(const std::map<std::string, std::string>& env);

std::string_view FabricName(FabricKind k);

// Builds the S3-over-RDMA service the settings ask for. Never fails: a fabric that cannot start
// (no device) yields an unavailable service whose reason is logged once here and sent with every
// 501.
std::unique_ptr<S3RdmaService> CreateS3RdmaService(const RdmaSettings& settings,
                                                   ServiceOptions options = {});

// The verbs fabric (RDMA build; the standard build returns kRDMANotSupported).
Result<std::unique_ptr<Fabric>> CreateVerbsFabric(const VerbsSettings& settings);

// The client side of S3 over RDMA on verbs: a DC target (mlx5dv DCT with access key
// settings.dc_key, on settings.device/port/gid_index) whose registered memory the server's DC
// initiators write into / read from. Its address() is what tokens carry: the port's LID, the
// DCT number (qpn) and the GID. RDMA build only; elsewhere, or with no device: kRDMANotSupported.
Result<std::unique_ptr<Target>> StartVerbsDcTarget(const VerbsSettings& settings);

}  // namespace rdmastor::rdma
