// Decisions the verbs backend takes from what the device reports, as pure functions over plain
// structs (no ibv types), so both builds unit-test them without a device (issue 12). The verbs
// code (rdma/verbs/) only gathers the facts, calls these and applies the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "rdma/check.h"

namespace rdmastor::rdma {

// What a registration call returned: the fields of struct ibv_mr.
struct Registration {
  uint64_t addr = 0;  // ibv_mr->addr
  uint64_t length = 0;
  uint32_t lkey = 0, rkey = 0;
};

// The address range work requests and tokens name a region by.
struct RegionSpan {
  uint64_t addr = 0;
  uint64_t length = 0;
};

// ibv_reg_mr: the region is where the memory is, [mr->addr, +length).
RegionSpan HostRegionSpan(const Registration& reg);
// ibv_reg_dmabuf_mr: libibverbs reports mr->addr = the dma-buf *offset*; initiators (and the
// client's own lookups) address the region through the iova it was registered with (the device
// pointer), so the span is [iova, +length) whatever addr says (ibv_reg_mr(3)).
RegionSpan DmabufRegionSpan(const Registration& reg, uint64_t iova);

// Path MTU codes, numerically equal to enum ibv_mtu.
enum class PathMtu : int { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };
int PathMtuBytes(PathMtu m);
// The path MTU a QP may use: what it wants, but never above the port's active MTU (on RoCE that
// follows the netdev MTU; a larger path MTU makes every transfer above one MTU end in
// retry-exceeded). An unknown active value (0) leaves the wanted one.
PathMtu ClampPathMtu(PathMtu active, PathMtu wanted);

// The device and port a fabric uses (DC fabric, DC target, RC fabric, `rdma check`).
struct DevicePick {
  std::string device;
  int port = 1;
  const DeviceInfo* info = nullptr;  // into the list SelectDevice was given
  const PortInfo* port_info = nullptr;
};
// A port is usable when it is ACTIVE and, on Ethernet (RoCE), has a RoCE v2 GID (an address on
// its netdev): InfiniBand routes by LID. MINIO_RDMA_DEVICE (`wanted`) names the device: it must be
// listed (and DC capable when `need_dc`) and its `port` usable. Unset: the first listed device
// (DC capable when `need_dc`) whose `port` is usable. The error says what was found and what to
// set.
Result<DevicePick> SelectDevice(const std::vector<DeviceInfo>& devices, const std::string& wanted,
                                int port, bool need_dc);
// Why `port` of `device` is not usable ("" when it is).
std::string PortUnusableReason(const PortInfo& port);

// The device limits queue sizes are clamped to (ibv_device_attr).
struct DeviceLimits {
  int max_qp_wr = 0;  // 0 = unknown: no clamp
  int max_cqe = 0;
};
struct QueueSizes {
  uint32_t send_wr = 0;  // QP max_send_wr
  int cqe = 0;           // ibv_create_cq cqe: what can be outstanding on it (+1 for the recv side)
};
// Sizes for an initiator QP and its own CQ: `wanted` work requests (MINIO_RDMA_CQ_DEPTH, capped
// by `cap` when the QP needs fewer), within the device's max_qp_wr, and a CQ large enough for every
// signalled request the QP can have outstanding (send + `recv_wr`), within max_cqe.
QueueSizes ClampQueues(int wanted, int cap, int recv_wr, const DeviceLimits& limits);

// Entries to allocate for ibv_query_gid_table: it fills entries of every port of the device, so it
// needs room for the whole device's table (the sum of the ports' gid_tbl_len; at least 1).
size_t GidTableEntries(const std::vector<int>& port_table_lengths);

// The text appended to a registration failure: ENOMEM from ibv_reg_mr is nearly always the
// locked-memory limit. Empty for other errors.
std::string RegistrationHint(int err);

}  // namespace rdmastor::rdma
