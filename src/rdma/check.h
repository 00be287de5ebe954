// `rdmastor rdma check`: walks the layers an RDMA deployment needs (build, devices and ports, GID
// table, locked memory, configured device, GPU memory registration, inter-node settings, fabric)
// and reports each as ok / warning / failed with the fix.
//
// Gathering facts (libibverbs, getrlimit, sysfs) is separate from judging them, so the judgement
// is unit-tested with made-up hosts and the command's output is golden-tested on a real one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace rdmastor::rdma {

struct GidInfo {
  int index = 0;
  std::string gid;   // "fe80::...", "::ffff:10.0.0.1"
  std::string type;  // "IB", "RoCE v1", "RoCE v2"
  std::string netdev;
};

// A port's state, with enum ibv_port_state's values. Judged as a value, never by its text:
// libibverbs' ibv_port_state_str() writes "active" in lower case, and comparing that text with
// "ACTIVE" once judged every port of every real NIC down.
enum class PortState : uint8_t {
  kNop = 0,
  kDown = 1,
  kInit = 2,
  kArmed = 3,
  kActive = 4,
  kActiveDefer = 5,
};

// The words libibverbs' ibv_port_state_str() prints ("down", "active", ...); the RDMA build's unit
// test checks them against the library itself.
std::string PortStateName(PortState state);

// A port state number as the kernel reports it; anything outside the enum is kNop ("no state
// change"), never active.
PortState PortStateFromVerbs(int state);

struct PortInfo {
  int port = 1;
  PortState state = PortState::kDown;
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  int active_mtu = 0;      // bytes
  int max_mtu = 0;         // bytes
  std::vector<GidInfo> gids;
  double rate_gbps = 0;  // active_speed x active_width (PortRateGbps); 0 = unknown
};

struct DeviceInfo {
  std::string name;
  std::vector<PortInfo> ports;
  bool dc_capable = false;  // an mlx5 device: DC transport (mlx5dv_is_supported)
  uint64_t max_mr = 0;      // ibv_device_attr: memory regions, queue pairs (0 = unknown)
  uint64_t max_qp = 0;
};

// What a running server said about its S3-over-RDMA service (GET /minio/admin/v3/rdma), asked by
// `rdma check --endpoint URL`.
struct LiveFabric {
  std::string fabric;  // "soft" | "verbs" | "none"
  bool ready = false;
  std::string reason;  // why not ready
};
struct LiveServerFacts {
  std::string endpoint;
  Result<LiveFabric> answer = LiveFabric{};  // or why the server could not be asked
};

// Everything the check judges, gathered from the host (GatherCheckFacts) or made up in tests.
struct CheckFacts {
  bool verbs_built = false;
  // The devices, or why they cannot be listed (standard build, ENOSYS, no device).
  Result<std::vector<DeviceInfo>> devices = std::vector<DeviceInfo>{};
  std::optional<uint64_t> memlock_bytes;   // soft RLIMIT_MEMLOCK; nullopt = unlimited
  bool cap_ipc_lock = false;               // may lock memory beyond the limit
  bool nvidia_driver = false;              // /sys/module/nvidia
  bool nvidia_peermem = false;             // /sys/module/nvidia_peermem
  bool kernel_dmabuf = false;              // kernel >= 5.12: ibv_reg_dmabuf_mr possible
  std::map<std::string, std::string> env;  // MINIO_RDMA_* as set
  std::optional<LiveServerFacts> server;   // --endpoint: the live server's answer
};

enum class CheckStatus { kOk, kWarning, kFailed, kSkipped };

struct CheckItem {
  std::string layer;  // "build", "devices", ...
  CheckStatus status;
  std::string detail;  // what was found
  std::string fix;     // what to do (warning / failed)
};

CheckFacts GatherCheckFacts(const std::map<std::string, std::string>& env);

// This process's soft RLIMIT_MEMLOCK (nullopt = unlimited) and whether it holds CAP_IPC_LOCK.
struct MemlockFacts {
  std::optional<uint64_t> bytes;
  bool cap_ipc_lock = false;
};
MemlockFacts GatherMemlock();

// The device list through libibverbs (RDMA build); the standard build returns an error. It is
// DevicesFromVerbsJson(QueryVerbsJson()): one conversion from libibverbs' numbers to DeviceInfo,
// the same one the unit tests run on what a real device returned (tests/rdma/fixtures).
Result<std::vector<DeviceInfo>> QueryDevices();

// What libibverbs returned for every device, port and GID, as its own numbers (`rdmastor rdma
// devices --json`):
//   {"devices":[{"name":"rxe0","dc_capable":false,"ports":[{"port":1,"state":4,
//     "link_layer":2,"active_mtu":3,"max_mtu":5,"active_speed":1,"active_width":1,
//     "gids":[{"index":1,"gid":"fe80::...","type":2,"netdev":"rxv0"}]}],"max_mr":524287,
//     "max_qp":1048560}]}
// state: enum ibv_port_state; link_layer: IBV_LINK_LAYER_*; *_mtu: enum ibv_mtu; type: enum
// ibv_gid_type (ibv_query_gid_table); gid as inet_ntop writes it; active_speed / active_width,
// max_mr and max_qp as ibv_port_attr / ibv_device_attr hold them (optional when read back: older
// captures lack them). A device libibverbs lists but cannot open has "ports": []. RDMA build; the
// standard build returns an error.
Result<std::string> QueryVerbsJson();
Result<std::vector<DeviceInfo>> DevicesFromVerbsJson(const std::string& json);

// libibverbs' numbers as rdmastor judges them. Link layer: IBV_LINK_LAYER_UNSPECIFIED (0, what
// drivers older than RoCE report) and _INFINIBAND (1) are "InfiniBand", _ETHERNET (2) "Ethernet",
// anything else "unknown (N)" (never usable for RoCE). MTU: IBV_MTU_256..4096 (1..5) in bytes,
// else 0. GID type: IBV_GID_TYPE_IB/ROCE_V1/ROCE_V2 (0/1/2) as "IB", "RoCE v1", "RoCE v2", else
// "unknown (N)". The RDMA build's unit test checks the numbers against the verbs headers.
// Why DC cannot be used on any of these devices ("" when one is DC-capable): no device (and why
// libibverbs listed none), or none is mlx5 (ConnectX), the only kind with DC; Soft-RoCE (rxe),
// irdma, bnxt_re, ionic have RC only. The DC device tests skip with it, naming the devices; with
// an mlx5 device they run, so a broken one fails instead of skipping.
std::string NoDcDeviceReason(const Result<std::vector<DeviceInfo>>& devices);

std::string LinkLayerFromVerbs(int link_layer);
int MtuBytesFromVerbs(int mtu);
// A port's rate in Gb/s from ibv_port_attr active_speed and active_width (the kernel's
// ib_port_speed / ib_port_width bits; RoCE ports report their Ethernet speed in the same terms,
// 400GbE as 4X NDR). 0 when either is unknown.
double PortRateGbps(int active_speed, int active_width);
std::string GidTypeFromVerbs(int type);

// Judges the facts. Invalid MINIO_RDMA_* values are an error (the server would refuse them too).
Result<std::vector<CheckItem>> RunRdmaCheck(const CheckFacts& facts);

std::string RenderCheckText(const std::vector<CheckItem>& items, bool verbs_built);
std::string RenderCheckJson(const std::vector<CheckItem>& items, bool verbs_built);

// 0 = nothing failed (warnings allowed), 1 = at least one layer failed.
int CheckExitCode(const std::vector<CheckItem>& items);

}  // namespace rdmastor::rdma
