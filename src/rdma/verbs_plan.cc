#include "rdma/verbs_plan.h"

#include <algorithm>
#include <cerrno>

#include "common/enum_names.h"
#include "rdma/soft/net.h"
#include "rdma/token.h"

namespace rdmastor::rdma {

RegionSpan HostRegionSpan(const Registration& reg) { return {reg.addr, reg.length}; }

RegionSpan DmabufRegionSpan(const Registration& reg, uint64_t iova) { return {iova, reg.length}; }

int PathMtuBytes(PathMtu m) { return 128 << static_cast<int>(m); }

int CompletionVector(uint64_t n, int num_comp_vectors) {
  return num_comp_vectors > 0 ? static_cast<int>(n % static_cast<uint64_t>(num_comp_vectors)) : 0;
}

std::optional<PathMtu> PathMtuFromBytes(uint64_t bytes) {
  for (int m = static_cast<int>(PathMtu::k256); m <= static_cast<int>(PathMtu::k4096); ++m)
    if (bytes == static_cast<uint64_t>(PathMtuBytes(static_cast<PathMtu>(m))))
      return static_cast<PathMtu>(m);
  return std::nullopt;
}

PathMtu ClampPathMtu(PathMtu active, PathMtu wanted) {
  int a = static_cast<int>(active);
  if (a < static_cast<int>(PathMtu::k256) || a > static_cast<int>(PathMtu::k4096)) return wanted;
  return static_cast<PathMtu>(std::min(a, static_cast<int>(wanted)));
}

namespace {
const PortInfo* FindPort(const DeviceInfo& d, int port) {
  for (const auto& candidate : d.ports)
    if (candidate.port == port) return &candidate;
  return nullptr;
}
}  // namespace

std::string PortUnusableReason(const PortInfo& p) {
  if (p.state != PortState::kActive)
    return "port " + std::to_string(p.port) + " is " + PortStateName(p.state);
  if (p.link_layer == "Ethernet" &&
      std::none_of(p.gids.begin(), p.gids.end(),
                   [](const GidInfo& g) { return g.type == "RoCE v2"; }))
    return "port " + std::to_string(p.port) +
           " (Ethernet) has no RoCE v2 GID: no IP address on its netdev";
  return "";
}

Result<DevicePick> SelectDevice(const std::vector<DeviceInfo>& devices, const std::string& wanted,
                                int port, bool need_dc) {
  if (devices.empty()) return MakeError(ErrorCode::kRDMANotSupported, "no RDMA device found");
  if (auto names = SplitDeviceList(wanted); names.size() > 1) {
    // A list (multi-rail): the first usable one, for the paths that use one device.
    std::string seen;
    for (const auto& name : names) {
      auto pick = SelectDevice(devices, name, port, need_dc);
      if (pick.ok()) return pick;
      seen += (seen.empty() ? "" : "; ") + pick.error().message;
    }
    return MakeError(ErrorCode::kRDMANotSupported,
                     "no device of MINIO_RDMA_DEVICE=" + wanted + " can be used (" + seen + ")");
  }
  std::string seen;  // why each candidate was passed over
  for (const auto& d : devices) {
    if (!wanted.empty() && d.name != wanted) continue;
    std::string why;
    const PortInfo* p = FindPort(d, port);
    if (need_dc && !d.dc_capable)
      why = "not an mlx5 device: DC transport unavailable";
    else if (!p)
      why = "no port " + std::to_string(port) + " (MINIO_RDMA_PORT)";
    else
      why = PortUnusableReason(*p);
    if (why.empty()) return DevicePick{d.name, port, &d, p};
    if (!wanted.empty())
      return MakeError(ErrorCode::kRDMANotSupported,
                       "MINIO_RDMA_DEVICE=" + wanted + " cannot be used: " + why);
    seen += (seen.empty() ? "" : "; ") + d.name + ": " + why;
  }
  if (!wanted.empty())
    return MakeError(ErrorCode::kRDMANotSupported, "MINIO_RDMA_DEVICE=" + wanted + " not found");
  return MakeError(ErrorCode::kRDMANotSupported, "no RDMA device with an active port " +
                                                     std::to_string(port) + " (" + seen + ")");
}

bool DeviceAllowed(const std::string& wanted, const std::string& name) {
  auto names = SplitDeviceList(wanted);
  return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

Result<RcDeviceChoice> SelectRcDevice(const std::vector<DeviceInfo>& devices,
                                      const std::string& wanted, int port,
                                      const std::string& bind_device) {
  if (bind_device.empty()) {
    auto pick = SelectDevice(devices, wanted, port, /*need_dc=*/false);
    if (!pick.ok()) return pick.error();
    return RcDeviceChoice{*pick, false};
  }
  if (!DeviceAllowed(wanted, bind_device))
    return MakeError(ErrorCode::kRDMANotSupported,
                     "the node's address belongs to " + bind_device + ", which MINIO_RDMA_DEVICE=" +
                         wanted + " does not list: RDMA connections of this node use that address");
  for (const auto& d : devices) {
    if (d.name != bind_device) continue;
    const PortInfo* p = FindPort(d, port);
    std::string why = p ? PortUnusableReason(*p)
                        : "port " + std::to_string(port) + " does not exist (MINIO_RDMA_PORT)";
    if (why.empty()) return RcDeviceChoice{DevicePick{d.name, port, &d, p}, true};
    return MakeError(ErrorCode::kRDMANotSupported,
                     "the node's address belongs to " + bind_device + ", whose " + why);
  }
  return MakeError(ErrorCode::kRDMANotSupported, "the node's address belongs to " + bind_device +
                                                     ", which libibverbs does not list");
}

QueueSizes ClampQueues(int wanted, int cap, int recv_wr, const DeviceLimits& limits) {
  int send = std::max(1, cap > 0 ? std::min(wanted, cap) : wanted);
  if (limits.max_qp_wr > 0) send = std::min(send, limits.max_qp_wr);
  // Every send request may be signalled (and complete in error); the recv side adds its own.
  int cqe = send + std::max(0, recv_wr);
  if (limits.max_cqe > 0 && cqe > limits.max_cqe) {
    cqe = limits.max_cqe;
    // The CQ bounds what may be outstanding: never post more than it can hold.
    send = std::max(1, std::min(send, cqe - std::max(0, recv_wr)));
  }
  return {static_cast<uint32_t>(send), cqe};
}

size_t GidTableEntries(const std::vector<int>& port_table_lengths) {
  size_t n = 0;
  for (int len : port_table_lengths) n += static_cast<size_t>(std::max(len, 0));
  return std::max<size_t>(n, 1);
}

std::string RegistrationHint(int err) {
  if (err != ENOMEM) return "";
  return " (registered memory is locked memory: raise RLIMIT_MEMLOCK, LimitMEMLOCK=infinity in "
         "the systemd unit or `ulimit -l unlimited` before starting)";
}

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

DciDisposition DciAfterPoll(const DciUse& use, bool closing) {
  if (use.errored) return DciDisposition::kReplace;
  if (use.signaled_outstanding <= 0 && use.unsignaled_tail <= 0) return DciDisposition::kReturn;
  return closing ? DciDisposition::kReplace : DciDisposition::kKeep;
}

bool DciPoolLedger::ReserveCreate(Clock::time_point now) {
  if (missing() <= 0 || now < next_try_) return false;
  ++creating_;
  return true;
}

void DciPoolLedger::Created() {
  if (creating_ > 0) --creating_;
  ++live_;
  backoff_ = std::chrono::milliseconds(0);
  next_try_ = {};
}

void DciPoolLedger::CreateFailed(Clock::time_point now) {
  if (creating_ > 0) --creating_;
  backoff_ =
      std::clamp(backoff_ * 2, std::chrono::milliseconds(100), std::chrono::milliseconds(5000));
  next_try_ = now + backoff_;
}

void DciPoolLedger::Destroyed() {
  if (live_ > 0) --live_;
}

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

WaitStep NextWaitStep(std::chrono::microseconds elapsed, std::chrono::microseconds spin,
                      std::chrono::microseconds wait) {
  if (elapsed >= wait) return WaitStep::kGiveUp;
  if (elapsed < spin) return WaitStep::kPoll;
  return WaitStep::kSleep;
}

AhKey AhKeyFor(bool has_gid, const std::array<uint8_t, 16>& gid, uint16_t lid) {
  AhKey k;
  k.has_gid = has_gid;
  k.lid = lid;  // IB with a GRH still routes by DLID inside the subnet
  if (has_gid) k.gid = gid;
  return k;
}

bool RetryWithoutRelaxedOrdering(bool relaxed_was_set, int err) {
  return relaxed_was_set && (err == EINVAL || err == EOPNOTSUPP);
}

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

EventDecision OnAsyncEvent(AsyncEvent event, int event_port, int our_port,
                           const FabricState& state) {
  EventDecision d;
  d.next = state;
  const bool ours = event_port == our_port;
  const std::string port = "port " + std::to_string(our_port);
  switch (event) {
    case AsyncEvent::kDeviceFatal:
      d.next = {FabricHealth::kDown, "the device reported a fatal error; reopening it"};
      d.reopen = true;
      d.log_error = true;
      return d;
    case AsyncEvent::kPortError:
      if (!ours || state.health == FabricHealth::kDown) return d;
      d.next = {FabricHealth::kDegraded, port + " went down"};
      d.log_error = true;
      return d;
    case AsyncEvent::kPortActive:
      if (!ours) return d;
      d.requery_port = true;  // addresses, MTU and LID may differ after the link returns
      if (state.health == FabricHealth::kDegraded) d.next = {FabricHealth::kReady, ""};
      return d;
    case AsyncEvent::kGidChange:
    case AsyncEvent::kLidChange:
      d.requery_port = ours;
      return d;
    case AsyncEvent::kQueueError:
      d.log_error = true;  // one QP/CQ: its owner sees the error completion and replaces it
      return d;
    case AsyncEvent::kOther:
      return d;
  }
  return d;
}

FabricState ObserveDevice(const DeviceObservation& seen, int our_port, const FabricState& state) {
  if (state.health == FabricHealth::kDown) return state;
  if (seen.removed) return {FabricHealth::kDown, "the device was removed; reopening it when it is back"};
  if (seen.query_failed)
    return {FabricHealth::kDown, "the device stopped answering (a fatal error); reopening it"};
  if (!seen.port_active) return {FabricHealth::kDegraded, "port " + std::to_string(our_port) + " is down"};
  return {FabricHealth::kReady, ""};
}

S3Transports ChooseS3Transports(const std::vector<DeviceInfo>& devices, const std::string& wanted,
                                int port, int rc_port) {
  S3Transports t;
  t.rc_port = rc_port;
  if (auto dc = SelectDevice(devices, wanted, port, /*need_dc=*/true); dc.ok())
    t.dc = *dc;
  else
    t.no_dc = dc.error().message;
  if (rc_port == 0) {
    t.no_rc = "MINIO_RDMA_RC_PORT=off";
    return t;
  }
  // Beside DC: on DC's own device; else as the RC fabric picks (MINIO_RDMA_DEVICE or the first).
  if (auto rc = SelectDevice(devices, t.dc ? t.dc->device : wanted, port, /*need_dc=*/false);
      rc.ok())
    t.rc = *rc;
  else
    t.no_rc = rc.error().message;
  return t;
}

std::string S3Transports::Describe() const {
  auto on = [](const DevicePick& p) { return p.device + " port " + std::to_string(p.port); };
  const std::string listen = "RC connections to port " + std::to_string(rc_port);
  if (dc && rc && dc->device == rc->device) return "DC and RC on " + on(*dc) + " (" + listen + ")";
  if (dc && rc) return "DC on " + on(*dc) + " and RC on " + on(*rc) + " (" + listen + ")";
  if (dc) return "DC only on " + on(*dc) + " (no RC: " + no_rc + ")";
  if (rc) return "RC only on " + on(*rc) + " (no DC: " + no_dc + "; " + listen + ")";
  return "neither DC (" + no_dc + ") nor RC (" + no_rc + ")";
}

std::string_view FabricHealthName(FabricHealth h) {
  static constexpr EnumNames<FabricHealth> kNames[] = {{"ready", FabricHealth::kReady},
                                                       {"degraded", FabricHealth::kDegraded},
                                                       {"down", FabricHealth::kDown}};
  return NameOf(kNames, h, "unknown");
}

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

std::string VerbsOriginRefusal(bool token_has_gid, const std::array<uint8_t, 16>& token_gid,
                               std::string_view requester_ip, const std::vector<soft::Cidr>& allow,
                               bool check) {
  if (!check || !token_has_gid) return "";
  auto target = GidToIpv4(token_gid);
  if (!target) return "";  // an InfiniBand (or IPv6 RoCE) GID: nothing to compare
  auto from = soft::ParseIpv4(requester_ip);
  if (from && *from == *target) return "";
  for (const auto& c : allow)
    if (c.Contains(*target)) return "";
  return "verbs: the token's GID names host " + soft::net::Ipv4String(*target) +
         " but the request came from " + std::string(requester_ip) +
         "; only the requester's address is written to or read from unless MINIO_RDMA_ALLOW "
         "lists it";
}

Status VerbsOriginCheck(bool token_has_gid, const std::array<uint8_t, 16>& token_gid,
                        std::string_view requester_ip, const std::vector<soft::Cidr>& allow,
                        bool check) {
  auto why = VerbsOriginRefusal(token_has_gid, token_gid, requester_ip, allow, check);
  if (why.empty()) return {};
  return OriginDecline(std::move(why));
}

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

std::vector<std::string> SplitDeviceList(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    pos = comma + 1;
  }
  return out;
}

Result<std::vector<DevicePick>> SelectRails(const std::vector<DeviceInfo>& devices,
                                            const std::string& wanted, int port, bool need_dc) {
  std::vector<DevicePick> rails;
  auto names = SplitDeviceList(wanted);
  if (!names.empty()) {
    for (const auto& name : names) {
      auto pick = SelectDevice(devices, name, port, need_dc);
      if (!pick.ok()) return pick.error();
      if (std::none_of(rails.begin(), rails.end(),
                       [&](const DevicePick& r) { return r.device == pick->device; }))
        rails.push_back(*pick);
    }
    return rails;
  }
  for (const auto& d : devices) {
    auto pick = SelectDevice(devices, d.name, port, need_dc);
    if (pick.ok()) rails.push_back(*pick);
  }
  if (rails.empty()) return SelectDevice(devices, "", port, need_dc).error();
  return rails;
}

size_t SelectRail(const std::vector<Rail>& rails, bool token_has_gid,
                  const std::array<uint8_t, 16>& token_gid, std::string_view local_ip) {
  auto target = token_has_gid ? GidToIpv4(token_gid) : std::nullopt;
  size_t best = rails.size();
  int best_prefix = -1;
  auto mask = [](int prefix) {
    return prefix <= 0 ? 0u : prefix >= 32 ? 0xffffffffu : ~((1u << (32 - prefix)) - 1);
  };
  if (target) {
    for (size_t i = 0; i < rails.size(); ++i)
      for (const auto& n : rails[i].networks)
        if (((n.ip ^ *target) & mask(n.prefix)) == 0 && n.prefix > best_prefix) {
          best = i;
          best_prefix = n.prefix;
        }
    if (best < rails.size()) return best;
  }
  if (auto local = soft::ParseIpv4(local_ip)) {
    for (size_t i = 0; i < rails.size(); ++i)
      for (const auto& n : rails[i].networks)
        if (n.ip == *local) return i;
  }
  return 0;
}

}  // namespace rdmastor::rdma
