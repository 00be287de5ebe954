#include "rdma/check.h"

#include <sys/resource.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/enum_names.h"
#include "common/text.h"
#include "rdma/build_info.h"
#include "rdma/settings.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

namespace {

constexpr uint64_t kMinMemlock = 256ULL << 20;  // pinned buffers of a busy server need more

constexpr EnumNames<CheckStatus> kStatusWords[] = {{"ok", CheckStatus::kOk},
                                                   {"warning", CheckStatus::kWarning},
                                                   {"failed", CheckStatus::kFailed},
                                                   {"skipped", CheckStatus::kSkipped}};
constexpr EnumNames<CheckStatus> kStatusTags[] = {{"[ ok ]", CheckStatus::kOk},
                                                  {"[warn]", CheckStatus::kWarning},
                                                  {"[FAIL]", CheckStatus::kFailed},
                                                  {"[ -- ]", CheckStatus::kSkipped}};

std::string_view StatusWord(CheckStatus s) { return NameOf(kStatusWords, s, "failed"); }
std::string_view StatusTag(CheckStatus s) { return NameOf(kStatusTags, s, "[FAIL]"); }

const char* kInstallRdmaBuild =
    "install the rdmastor-rdma package (same binary path, unit and /etc/default/rdmastor)";

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

CheckItem PortItem(const DeviceInfo& d, const PortInfo& p) {
  std::string where = d.name + "/" + std::to_string(p.port);
  std::string what = PortStateName(p.state) + ", " + p.link_layer + ", MTU " + std::to_string(p.active_mtu) +
                     " (max " + std::to_string(p.max_mtu) + ")";
  if (p.state != PortState::kActive) {
    return {"port " + where, CheckStatus::kFailed, what,
            p.link_layer == "Ethernet"
                ? "bring the netdev up (`ip link set DEV up`), check cable and switch port"
                : "check cable and switch port; a subnet manager must run on the fabric "
                  "(`ibstat`, `sminfo`)"};
  }
  if (p.active_mtu < 4096 && p.max_mtu >= 4096) {
    return {"port " + where, CheckStatus::kWarning, what,
            p.link_layer == "Ethernet"
                ? "enable jumbo frames end to end (netdev MTU 9000 on hosts and switches) for "
                  "RoCE MTU 4096"
                : "raise the subnet manager's MTU to 4096"};
  }
  return {"port " + where, CheckStatus::kOk, what, ""};
}

CheckItem GidItem(const DeviceInfo& d, const PortInfo& p) {
  std::string where = "gid " + d.name + "/" + std::to_string(p.port);
  if (p.link_layer != "Ethernet") {
    if (p.gids.empty())
      return {where, CheckStatus::kFailed, "empty GID table", "check the port with `ibstat`"};
    return {where, CheckStatus::kOk,
            std::to_string(p.gids.size()) + " GID(s), InfiniBand (LID routed)", ""};
  }
  const GidInfo* v2 = nullptr;
  for (const auto& g : p.gids) {
    if (g.type != "RoCE v2") continue;
    if (!v2) v2 = &g;
    if (g.gid.rfind("::ffff:", 0) == 0) {
      return {where, CheckStatus::kOk,
              "index " + std::to_string(g.index) + ": " + g.gid + " RoCE v2" +
                  (g.netdev.empty() ? "" : " (" + g.netdev + ")"),
              ""};
    }
  }
  if (v2) {
    return {where, CheckStatus::kWarning,
            "RoCE v2 GIDs but none IPv4-mapped (index " + std::to_string(v2->index) + ": " +
                v2->gid + ")",
            "assign an IPv4 address to the netdev: tokens carry the IPv4-mapped RoCE v2 GID"};
  }
  return {where, CheckStatus::kFailed, "no RoCE v2 GID",
          "assign an IP address to the netdev and check `show_gids` / `ibv_devinfo -v`"};
}

}  // namespace

std::string PortStateName(PortState state) {
  static constexpr EnumNames<PortState> kNames[] = {{"no state change (NOP)", PortState::kNop},
                                                    {"down", PortState::kDown},
                                                    {"init", PortState::kInit},
                                                    {"armed", PortState::kArmed},
                                                    {"active", PortState::kActive},
                                                    {"active defer", PortState::kActiveDefer}};
  return std::string(NameOf(kNames, state, "invalid state"));
}

PortState PortStateFromVerbs(int state) {
  if (state < static_cast<int>(PortState::kNop) || state > static_cast<int>(PortState::kActiveDefer))
    return PortState::kNop;
  return static_cast<PortState>(state);
}

Result<std::vector<CheckItem>> RunRdmaCheck(const CheckFacts& f) {
  auto settings = ParseRdmaSettings(f.env);
  if (!settings.ok()) return settings.error();
  auto get = [&](const char* name) -> std::string {
    auto it = f.env.find(name);
    return it == f.env.end() ? std::string() : it->second;
  };
  std::string internode = text::ToLower(get("MINIO_RDMA_INTERNODE"));
  if (!internode.empty() && internode != "on" && internode != "off")
    return MakeError(
        ErrorCode::kInvalidArgument,
        "MINIO_RDMA_INTERNODE='" + get("MINIO_RDMA_INTERNODE") + "' is invalid: use on or off");

  std::vector<CheckItem> items;
  // 1. Build flavour.
  if (f.verbs_built) {
    items.push_back({"build", CheckStatus::kOk, "RDMA build: verbs and soft fabrics", ""});
  } else {
    items.push_back({"build", CheckStatus::kWarning,
                     "standard build: verbs compiled out (soft fabric only)", kInstallRdmaBuild});
  }

  // 2. Devices, 3. ports, 4. GID tables.
  const std::vector<DeviceInfo>* devs = nullptr;
  // The soft fabric needs no device: a missing one is then worth a warning, not a failure.
  const CheckStatus no_device =
      settings->fabric == FabricKind::kSoft ? CheckStatus::kWarning : CheckStatus::kFailed;
  if (!f.verbs_built) {
    items.push_back({"devices", no_device,
                     "no RDMA device usable: this standard build has no verbs support",
                     kInstallRdmaBuild});
  } else if (!f.devices.ok() || f.devices->empty()) {
    items.push_back(
        {"devices", no_device,
         "no RDMA device: " + (f.devices.ok() ? std::string("none listed by libibverbs")
                                              : f.devices.error().message),
         "load the NIC's RDMA driver (e.g. mlx5_ib; the kernel needs InfiniBand support) and "
         "rdma-core's provider, then check `ibv_devices`; without RDMA hardware set "
         "MINIO_RDMA_FABRIC=soft"});
  } else {
    devs = &*f.devices;
    std::string names;
    for (const auto& d : *devs) names += (names.empty() ? "" : ", ") + d.name;
    items.push_back(
        {"devices", CheckStatus::kOk, std::to_string(devs->size()) + " device(s): " + names, ""});
  }
  if (devs) {
    for (const auto& d : *devs) {
      for (const auto& p : d.ports) items.push_back(PortItem(d, p));
    }
    for (const auto& d : *devs) {
      for (const auto& p : d.ports) {
        if (p.state == PortState::kActive) items.push_back(GidItem(d, p));
      }
    }
  } else {
    items.push_back({"ports", CheckStatus::kSkipped, "not checked: no RDMA device", ""});
    items.push_back({"gid", CheckStatus::kSkipped, "not checked: no RDMA device", ""});
  }
  // The device and port the server would use: the same choice as the fabrics make (DC needs an
  // mlx5 device; inter-node RC does not).
  const auto& vs = settings->verbs;
  const bool need_dc = settings->fabric == FabricKind::kVerbs;
  Result<DevicePick> pick =
      devs ? SelectDevice(*devs, vs.device, vs.port, need_dc)
           : Result<DevicePick>(MakeError(ErrorCode::kRDMANotSupported, "no RDMA device"));
  Result<DevicePick> rc_pick =
      devs ? SelectDevice(*devs, vs.device, vs.port, false)
           : Result<DevicePick>(MakeError(ErrorCode::kRDMANotSupported, "no RDMA device"));
  const bool rc_usable = rc_pick.ok();

  // 5. Locked memory: registered buffers are pinned.
  if (!f.verbs_built) {
    items.push_back(
        {"memlock", CheckStatus::kSkipped, "not needed: the standard build pins no memory", ""});
  } else if (!f.memlock_bytes) {
    items.push_back({"memlock", CheckStatus::kOk, "unlimited", ""});
  } else if (f.cap_ipc_lock) {
    items.push_back({"memlock", CheckStatus::kOk,
                     "limit " + MiB(*f.memlock_bytes) + ", lifted by CAP_IPC_LOCK", ""});
  } else {
    items.push_back({"memlock",
                     *f.memlock_bytes < kMinMemlock ? CheckStatus::kFailed : CheckStatus::kWarning,
                     "RLIMIT_MEMLOCK " + std::to_string(*f.memlock_bytes >> 10) + " KiB",
                     "LimitMEMLOCK=infinity in the systemd unit (the packaged unit sets it), or "
                     "`ulimit -l unlimited` before starting"});
  }

  // 6. The configured device, port and GID index.
  bool configured = !get("MINIO_RDMA_DEVICE").empty() || !get("MINIO_RDMA_PORT").empty() ||
                    !get("MINIO_RDMA_GID_INDEX").empty();
  if (!f.verbs_built) {
    items.push_back(
        configured ? CheckItem{"configured", CheckStatus::kWarning,
                               "MINIO_RDMA_DEVICE/PORT/GID_INDEX are ignored by the standard build",
                               kInstallRdmaBuild}
                   : CheckItem{"configured", CheckStatus::kSkipped, "no verbs settings apply", ""});
  } else if (!configured) {
    items.push_back(
        pick.ok()
            ? CheckItem{"configured", CheckStatus::kOk,
                        "automatic: " + pick->device + " port " + std::to_string(pick->port), ""}
        : devs ? CheckItem{"configured", CheckStatus::kFailed, "automatic: " + pick.error().message,
                           "bring a port up (see the port layers above), or set "
                           "MINIO_RDMA_DEVICE / MINIO_RDMA_PORT to one that is"}
               : CheckItem{"configured", CheckStatus::kSkipped,
                           "automatic: first device with an active port (none)", ""});
  } else {
    std::string want = (vs.device.empty() ? std::string("(first usable device)") : vs.device) +
                       " port " + std::to_string(vs.port) +
                       (vs.gid_index >= 0 ? " gid " + std::to_string(vs.gid_index) : "");
    const bool listed = devs && (vs.device.empty() ||
                                 std::any_of(devs->begin(), devs->end(), [&](const DeviceInfo& d) {
                                   return d.name == vs.device;
                                 }));
    if (!listed) {
      items.push_back({"configured", CheckStatus::kFailed, want + ": device not present",
                       "set MINIO_RDMA_DEVICE to a name `ibv_devices` lists"});
    } else if (!pick.ok()) {
      items.push_back({"configured", CheckStatus::kFailed, want + ": " + pick.error().message,
                       "set MINIO_RDMA_DEVICE / MINIO_RDMA_PORT to a port `ibv_devinfo` shows "
                       "PORT_ACTIVE (see the port layers above)"});
    } else if (vs.gid_index >= 0 &&
               std::none_of(pick->port_info->gids.begin(), pick->port_info->gids.end(),
                            [&](const GidInfo& g) { return g.index == vs.gid_index; })) {
      items.push_back({"configured", CheckStatus::kFailed, want + ": GID index not populated",
                       "pick an index `show_gids` lists (RoCE v2, IPv4-mapped), or unset "
                       "MINIO_RDMA_GID_INDEX to choose automatically"});
    } else {
      items.push_back(
          {"configured", CheckStatus::kOk,
           want + ": " + pick->device + " port " + std::to_string(pick->port) + ", active", ""});
    }
  }

  // 7. GPU memory: clients register GPU buffers through nvidia_peermem or dma-buf.
  if (f.nvidia_peermem) {
    items.push_back({"gpu-memory", CheckStatus::kOk,
                     "nvidia_peermem loaded (GPUDirect RDMA through peer memory)", ""});
  } else if (f.nvidia_driver && f.kernel_dmabuf) {
    items.push_back({"gpu-memory", CheckStatus::kOk,
                     "NVIDIA driver loaded, kernel supports dma-buf (ibv_reg_dmabuf_mr)", ""});
  } else if (f.nvidia_driver) {
    items.push_back({"gpu-memory", CheckStatus::kWarning,
                     "NVIDIA driver loaded but neither nvidia_peermem nor kernel dma-buf",
                     "`modprobe nvidia_peermem`, or a kernel >= 5.12 for dma-buf"});
  } else {
    items.push_back({"gpu-memory", CheckStatus::kWarning,
                     "no NVIDIA driver loaded: host memory only",
                     "for GPU buffers install the NVIDIA driver and load nvidia_peermem (or use "
                     "dma-buf, kernel >= 5.12)"});
  }

  // 8. Inter-node settings (the same on every node; only this node can be checked here).
  std::string min_size = get("MINIO_RDMA_MIN_SIZE").empty() ? "1MiB" : get("MINIO_RDMA_MIN_SIZE");
  if (internode != "on") {
    items.push_back({"inter-node", CheckStatus::kOk,
                     "off: shards between nodes go over TCP (MINIO_RDMA_INTERNODE=on on every "
                     "node to use RDMA)",
                     ""});
  } else if (settings->fabric == FabricKind::kSoft) {
    items.push_back(
        {"inter-node", CheckStatus::kWarning,
         "on over the soft fabric: shards >= " + min_size +
             " move with RDMA semantics emulated over TCP (no offload); must be on "
             "for every node",
         f.verbs_built ? "for hardware RDMA set MINIO_RDMA_FABRIC=verbs" : kInstallRdmaBuild});
  } else if (!f.verbs_built || settings->fabric == FabricKind::kOff) {
    items.push_back({"inter-node", CheckStatus::kWarning,
                     "MINIO_RDMA_INTERNODE=on but no RDMA fabric: shards go over TCP (warned, "
                     "counted in minio_system_network_internode_rdma_fallbacks_total)",
                     f.verbs_built
                         ? "unset MINIO_RDMA_FABRIC (verbs) or set it to soft"
                         : "set MINIO_RDMA_FABRIC=soft, or " + std::string(kInstallRdmaBuild)});
  } else if (!rc_usable) {
    items.push_back({"inter-node", CheckStatus::kFailed,
                     "MINIO_RDMA_INTERNODE=on but no active RDMA port: peers fall back to TCP "
                     "(warned, counted in minio_system_network_internode_rdma_fallbacks_total)",
                     "fix the device and port layers above, or set MINIO_RDMA_INTERNODE=off on "
                     "every node"});
  } else {
    items.push_back({"inter-node", CheckStatus::kOk,
                     "on: shards >= " + min_size + " over RDMA; must be on for every node", ""});
  }

  // 9. The fabric S3 over RDMA uses.
  switch (settings->fabric) {
    case FabricKind::kVerbs: {
      // The transports come from the device, as the server chooses them: DC and RC on mlx5, RC
      // elsewhere (ChooseS3Transports).
      std::optional<S3Transports> t;
      if (devs) t = ChooseS3Transports(*devs, vs.device, vs.port, settings->rc_port);
      items.push_back(
          t && (t->dc || t->rc)
              ? CheckItem{"fabric", CheckStatus::kOk,
                          "verbs (hardware RDMA): S3 over RDMA on " + t->Describe(), ""}
              : CheckItem{"fabric", CheckStatus::kFailed,
                          "verbs selected but no active RDMA port" +
                              (t ? " (" + t->Describe() + ")" : std::string()) +
                              ": requests with x-amz-rdma-token get 501",
                          "fix the layers above, or MINIO_RDMA_FABRIC=soft for "
                          "the TCP emulation"});
      break;
    }
    case FabricKind::kSoft:
      items.push_back(
          {"fabric", CheckStatus::kWarning,
           "soft selected: RDMA semantics emulated over TCP (no hardware offload)",
           f.verbs_built ? "for hardware RDMA set MINIO_RDMA_FABRIC=verbs" : kInstallRdmaBuild});
      break;
    case FabricKind::kOff:
      items.push_back({"fabric", CheckStatus::kWarning,
                       "S3 over RDMA off: requests with x-amz-rdma-token get 501",
                       f.verbs_built
                           ? "unset MINIO_RDMA_FABRIC (verbs) or set it to soft"
                           : "set MINIO_RDMA_FABRIC=soft, or " + std::string(kInstallRdmaBuild)});
      break;
  }

  // 10. The live server (--endpoint): what clients get from it now, whatever this host's settings.
  // Its answer is what the server's rdmastor_rdma_fabric_ready gauge says (the same state: port
  // down or device failed and not reopened -> 0), named so the two are read as one.
  if (f.server) {
    const auto& s = *f.server;
    if (!s.answer.ok()) {
      items.push_back({"server", CheckStatus::kFailed,
                       s.endpoint + ": could not ask it: " + s.answer.error().message,
                       "start the server, check --endpoint, and set MINIO_ROOT_USER / "
                       "MINIO_ROOT_PASSWORD to its root credentials"});
    } else if (s.answer->ready) {
      items.push_back(
          {"server", CheckStatus::kOk,
           s.endpoint + " serves S3 over RDMA on the " + s.answer->fabric + " fabric" +
               (s.answer->fabric == "soft"
                    ? " (TCP emulation; clients: rdma=\"soft\" or \"auto\", rdmastor-cli --rdma)"
                    : "") +
               "; rdmastor_rdma_fabric_ready 1",
           ""});
    } else if (s.answer->fabric == "none") {
      items.push_back({"server", CheckStatus::kWarning,
                       s.endpoint + " does not serve S3 over RDMA: " + s.answer->reason +
                           " (requests with x-amz-rdma-token get 501)",
                       "start it with MINIO_RDMA_FABRIC=soft, or verbs (RDMA build with a device)"});
    } else {
      items.push_back({"server", CheckStatus::kFailed,
                       s.endpoint + ": the " + s.answer->fabric +
                           " fabric is not ready: " + s.answer->reason +
                           " (rdmastor_rdma_fabric_ready 0; token requests get 501)",
                       "see the server log; the fabric is reopened when the device is back"});
    }
  }
  return items;
}

int CheckExitCode(const std::vector<CheckItem>& items) {
  for (const auto& i : items)
    if (i.status == CheckStatus::kFailed) return 1;
  return 0;
}

std::string RenderCheckText(const std::vector<CheckItem>& items, bool verbs_built) {
  std::ostringstream out;
  out << "rdmastor rdma check: " << (verbs_built ? "RDMA build" : "standard build") << "\n";
  int failed = 0, warnings = 0;
  for (const auto& i : items) {
    failed += i.status == CheckStatus::kFailed;
    warnings += i.status == CheckStatus::kWarning;
    char layer[64];
    std::snprintf(layer, sizeof(layer), "%-16s", i.layer.c_str());
    out << StatusTag(i.status) << ' ' << layer << ' ' << i.detail << "\n";
    if (!i.fix.empty() && i.status != CheckStatus::kOk)
      out << std::string(24, ' ') << "fix: " << i.fix << "\n";
  }
  out << (failed ? "NOT READY" : "READY") << ": " << failed << " failed, " << warnings
      << " warning(s)\n";
  return out.str();
}

std::string RenderCheckJson(const std::vector<CheckItem>& items, bool verbs_built) {
  std::string out = std::string("{\"build\":\"") + (verbs_built ? "rdma" : "standard") +
                    "\",\"ready\":" + (CheckExitCode(items) == 0 ? "true" : "false") +
                    ",\"checks\":[";
  for (size_t n = 0; n < items.size(); ++n) {
    const auto& i = items[n];
    out += std::string(n ? "," : "") + "{\"layer\":\"" + text::JsonEscape(i.layer) + "\",\"status\":\"" +
           std::string(StatusWord(i.status)) + "\",\"detail\":\"" + text::JsonEscape(i.detail) +
           "\",\"fix\":\"" + text::JsonEscape(i.fix) + "\"}";
  }
  return out + "]}\n";
}

MemlockFacts GatherMemlock() {
  MemlockFacts m;
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) m.bytes = rl.rlim_cur;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      m.cap_ipc_lock = (caps >> 14) & 1;  // CAP_IPC_LOCK
    }
  }
  return m;
}

CheckFacts GatherCheckFacts(const std::map<std::string, std::string>& env) {
  CheckFacts f;
  f.verbs_built = BuiltWithVerbs();
  f.devices = QueryDevices();
  auto memlock = GatherMemlock();
  f.memlock_bytes = memlock.bytes;
  f.cap_ipc_lock = memlock.cap_ipc_lock;
  std::error_code ec;
  f.nvidia_driver = std::filesystem::exists("/sys/module/nvidia", ec);
  f.nvidia_peermem = std::filesystem::exists("/sys/module/nvidia_peermem", ec);
  utsname u{};
  if (uname(&u) == 0) {
    int major = 0, minor = 0;
    std::sscanf(u.release, "%d.%d", &major, &minor);
    f.kernel_dmabuf = major > 5 || (major == 5 && minor >= 12);
  }
  for (const auto& [k, v] : env)
    if (k.rfind("MINIO_RDMA_", 0) == 0) f.env[k] = v;
  return f;
}

std::string NoDcDeviceReason(const Result<std::vector<DeviceInfo>>& devices) {
  if (!devices.ok()) return "no RDMA device on this host: " + devices.error().message;
  if (devices->empty()) return "no RDMA device on this host: none listed by libibverbs";
  std::string names;
  for (const auto& d : *devices) {
    if (d.dc_capable) return "";
    names += (names.empty() ? "" : ", ") + d.name;
  }
  return "no DC-capable device (DC needs an mlx5 NIC; " + names + " " +
         (devices->size() == 1 ? "has" : "have") + " RC only)";
}

std::string LinkLayerFromVerbs(int link_layer) {
  switch (link_layer) {
    case 0:  // IBV_LINK_LAYER_UNSPECIFIED: InfiniBand drivers that predate the field
    case 1:
      return "InfiniBand";
    case 2:
      return "Ethernet";
  }
  return "unknown (" + std::to_string(link_layer) + ")";
}

int MtuBytesFromVerbs(int mtu) { return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0; }

double PortRateGbps(int active_speed, int active_width) {
  // Per-lane rates of enum ib_port_speed (SDR .. XDR) and the lanes of enum ib_port_width.
  double lane = 0;
  switch (active_speed) {
    case 1: lane = 2.5; break;    // SDR
    case 2: lane = 5; break;      // DDR
    case 4: lane = 10; break;     // QDR
    case 8: lane = 10; break;     // FDR10
    case 16: lane = 14; break;    // FDR
    case 32: lane = 25; break;    // EDR
    case 64: lane = 50; break;    // HDR
    case 128: lane = 100; break;  // NDR
    case 256: lane = 200; break;  // XDR
  }
  int lanes = 0;
  switch (active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
  }
  return lane * lanes;
}

std::string GidTypeFromVerbs(int type) {
  switch (type) {
    case 0:
      return "IB";
    case 1:
      return "RoCE v1";
    case 2:
      return "RoCE v2";
  }
  return "unknown (" + std::to_string(type) + ")";
}

Result<std::vector<DeviceInfo>> DevicesFromVerbsJson(const std::string& text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("devices") ||
      !doc["devices"].is_array())
    return MakeError(ErrorCode::kInvalidArgument, "device list: not a {\"devices\":[...]} document");
  std::vector<DeviceInfo> out;
  try {
    for (const auto& d : doc["devices"]) {
      DeviceInfo dev;
      dev.name = d.at("name").get<std::string>();
      dev.dc_capable = d.at("dc_capable").get<bool>();
      dev.max_mr = d.value("max_mr", uint64_t{0});
      dev.max_qp = d.value("max_qp", uint64_t{0});
      for (const auto& p : d.at("ports")) {
        PortInfo port;
        port.port = p.at("port").get<int>();
        port.state = PortStateFromVerbs(p.at("state").get<int>());
        port.link_layer = LinkLayerFromVerbs(p.at("link_layer").get<int>());
        port.active_mtu = MtuBytesFromVerbs(p.at("active_mtu").get<int>());
        port.max_mtu = MtuBytesFromVerbs(p.at("max_mtu").get<int>());
        port.rate_gbps = PortRateGbps(p.value("active_speed", 0), p.value("active_width", 0));
        for (const auto& g : p.at("gids"))
          port.gids.push_back({g.at("index").get<int>(), g.at("gid").get<std::string>(),
                               GidTypeFromVerbs(g.at("type").get<int>()),
                               g.at("netdev").get<std::string>()});
        dev.ports.push_back(std::move(port));
      }
      out.push_back(std::move(dev));
    }
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument, std::string("device list: ") + e.what());
  }
  return out;
}

Result<std::vector<DeviceInfo>> QueryDevices() {
  auto json = QueryVerbsJson();
  if (!json.ok()) return json.error();
  return DevicesFromVerbsJson(*json);
}

#ifndef RDMASTOR_WITH_RDMA
Result<std::string> QueryVerbsJson() {
  return MakeError(ErrorCode::kRDMANotSupported, "standard build: no verbs support");
}
#endif

}  // namespace rdmastor::rdma
