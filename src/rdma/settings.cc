#include "rdma/settings.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/enum_names.h"
#include "common/text.h"
#include "rdma/build_info.h"
#include "rdma/rails.h"
#include "rdma/rc.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

namespace {

Error Invalid(const std::string& name, const std::string& value, const std::string& accepts) {
  return MakeError(ErrorCode::kInvalidArgument, name + "='" + value + "' is invalid: " + accepts);
}

// Decimal or 0x-prefixed hex, within [lo, hi].
std::optional<uint64_t> ParseNumber(std::string s, uint64_t lo, uint64_t hi) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s = s.substr(2);
    base = 16;
  }
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = text::HexDigit(c);
    if (d < 0 || d >= base) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

namespace {
constexpr EnumNames<FabricKind> kFabricNames[] = {
    {"off", FabricKind::kOff}, {"verbs", FabricKind::kVerbs}, {"soft", FabricKind::kSoft}};
}  // namespace

std::string_view FabricName(FabricKind k) { return NameOf(kFabricNames, k, "off"); }

Result<RdmaSettings> ParseRdmaSettings(const std::map<std::string, std::string>& env) {
  RdmaSettings s;
  const bool verbs_built = BuiltWithVerbs();
  s.fabric = verbs_built ? FabricKind::kVerbs : FabricKind::kOff;
  auto get = [&](const char* name) -> const std::string* {
    auto it = env.find(name);
    return it == env.end() || it->second.empty() ? nullptr : &it->second;
  };
  s.live_names = {"MINIO_RDMA_FABRIC", "MINIO_RDMA_SOFT_ALLOW", "MINIO_RDMA_RC_PORT"};
  if (const auto* v = get("MINIO_RDMA_RC_PORT")) {
    auto n = *v == "off" ? std::optional<uint64_t>(0) : ParseNumber(*v, 1, 65535);
    if (!n) return Invalid("MINIO_RDMA_RC_PORT", *v, "use a port from 1 to 65535, or off");
    s.rc_port = static_cast<int>(*n);
  }
  if (const auto* v = get("MINIO_RDMA_FABRIC")) {
    auto fabric = ValueOf(kFabricNames, text::ToLower(*v));
    if (fabric && (*fabric != FabricKind::kVerbs || verbs_built)) {
      s.fabric = *fabric;
    } else {
      return Invalid("MINIO_RDMA_FABRIC", *v,
                     verbs_built ? "use verbs, soft or off"
                                 : "use soft or off (this standard build has no verbs fabric)");
    }
  }
  if (const auto* v = get("MINIO_RDMA_SOFT_ALLOW")) {
    auto list = soft::ParseCidrList(*v);
    if (!list.ok())
      return Invalid("MINIO_RDMA_SOFT_ALLOW", *v,
                     list.error().message + "; use a list of IPv4 addresses or CIDRs");
    s.soft_allow = std::move(list).value();
  }
  if (!verbs_built) return s;  // the verbs knobs are compiled out (warned about by the caller)

  s.live_names.insert(
      s.live_names.end(),
      {"MINIO_RDMA_DEVICE", "MINIO_RDMA_PORT", "MINIO_RDMA_GID_INDEX", "MINIO_RDMA_DC_KEY",
       "MINIO_RDMA_NUM_DCIS", "MINIO_RDMA_CQ_DEPTH", "MINIO_RDMA_TRAFFIC_CLASS",
       "MINIO_RDMA_SERVICE_LEVEL", "MINIO_RDMA_PKEY_INDEX", "MINIO_RDMA_TIMEOUT",
       "MINIO_RDMA_ALLOW", "MINIO_RDMA_MTU_MAX"});
  auto& vs = s.verbs;
  if (const auto* v = get("MINIO_RDMA_DEVICE")) {
    // One device, or several (multi-rail), comma separated.
    auto names = SplitDeviceList(*v);
    bool ok = v->size() <= 512 && !names.empty() &&
              std::all_of(names.begin(), names.end(), [](const std::string& n) {
                return n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
                       });
              });
    if (!ok)
      return Invalid("MINIO_RDMA_DEVICE", *v,
                     "use an RDMA device name such as mlx5_0, or several: mlx5_0,mlx5_1");
    vs.device = *v;
  }
  struct IntKnob {
    const char* name;
    int* out;
    uint64_t lo, hi;
  };
  for (auto [name, out, lo, hi] : {IntKnob{"MINIO_RDMA_PORT", &vs.port, 1, 255},
                                   IntKnob{"MINIO_RDMA_GID_INDEX", &vs.gid_index, 0, 255},
                                   IntKnob{"MINIO_RDMA_NUM_DCIS", &vs.num_dcis, 1, 1024},
                                   IntKnob{"MINIO_RDMA_CQ_DEPTH", &vs.cq_depth, 16, 65536},
                                   IntKnob{"MINIO_RDMA_TRAFFIC_CLASS", &vs.traffic_class, 0, 255},
                                   IntKnob{"MINIO_RDMA_SERVICE_LEVEL", &vs.service_level, 0, 15},
                                   IntKnob{"MINIO_RDMA_PKEY_INDEX", &vs.pkey_index, 0, 65535},
                                   IntKnob{"MINIO_RDMA_TIMEOUT", &vs.timeout, 1, 31}}) {
    if (const auto* v = get(name)) {
      auto n = ParseNumber(*v, lo, hi);
      if (!n)
        return Invalid(name, *v,
                       "use an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
      *out = static_cast<int>(*n);
    }
  }
  if (const auto* v = get("MINIO_RDMA_ALLOW")) {
    // "any" turns the origin check off; otherwise networks besides each requester's address.
    if (*v == "any") {
      vs.origin_check = false;
    } else {
      auto list = soft::ParseCidrList(*v);
      if (!list.ok())
        return Invalid("MINIO_RDMA_ALLOW", *v,
                       list.error().message + "; use IPv4 addresses or CIDRs, or any");
      vs.allow = std::move(list).value();
    }
  }
  if (const auto* v = get("MINIO_RDMA_MTU_MAX")) {
    auto n = ParseNumber(*v, 256, 4096);
    if (!n || !PathMtuFromBytes(*n))
      return Invalid("MINIO_RDMA_MTU_MAX", *v, "use 256, 512, 1024, 2048 or 4096 (bytes)");
    vs.mtu_max = static_cast<int>(*n);
  }
  if (const auto* v = get("MINIO_RDMA_DC_KEY")) {
    auto n = ParseNumber(*v, 0, UINT64_MAX);
    if (!n) return Invalid("MINIO_RDMA_DC_KEY", *v, "use a 64-bit number, e.g. 0xffeeddcc");
    vs.dc_key = *n;
  }
  return s;
}

namespace {
// bind_ip: where the S3 RC listener binds (the node's --address). Its device is the one the RC
// fabric must open: rdma_cm hands the listener's connections that device's context, and a fabric
// on the first usable device instead refused to listen on a host with several (a node on rxe1
// got "10.77.1.1 belongs to rxe1, not rxe0").
RcSettings RcSettingsFrom(const VerbsSettings& vs, const std::string& bind_ip) {
  RcSettings rs;
  rs.source_ip = bind_ip;
  rs.device = vs.device;
  rs.port = vs.port;
  rs.cq_depth = vs.cq_depth;
  rs.allow = vs.allow;
  rs.tos = vs.traffic_class ? vs.traffic_class : -1;
  return rs;
}

// The verbs fabric S3 over RDMA serves with: DC (CreateVerbsFabric, mlx5) and RC beside it on
// one NIC (MakeDcRcFabric), or RC only (no DC), or DC only (MINIO_RDMA_RC_PORT=off, or the RC
// fabric could not start: logged). `transports` says which ("DC and RC", "DC only (...)", "RC
// only (no DC: ...)"). reopening: the RC fabric on the device of the listener's address only.
Result<std::unique_ptr<Fabric>> OpenVerbsS3Fabric(const RdmaSettings& settings,
                                                  const std::string& rc_bind_ip, bool reopening,
                                                  std::string* transports) {
  auto say = [&](std::string what) {
    if (transports) *transports = std::move(what);
  };
  RcSettings rs = RcSettingsFrom(settings.verbs, rc_bind_ip);
  if (reopening) {
    auto addr = soft::ParseIpv4(rc_bind_ip);
    rs.require_source_device = addr && *addr != 0;  // that address's own device
  }
  auto dc = CreateVerbsFabric(settings.verbs);
  if (!dc.ok()) {
    if (settings.rc_port == 0) return dc.error();
    auto rc = CreateVerbsRcFabric(rs);
    if (!rc.ok()) return dc.error();
    say("RC only (no DC: " + dc.error().message + ")");
    return rc;
  }
  if (settings.rc_port == 0) {
    say("DC only (RC off: MINIO_RDMA_RC_PORT=off)");
    return dc;
  }
  auto rc = CreateVerbsRcFabric(rs);
  if (!rc.ok()) {
    spdlog::warn("S3 over RDMA: RC next to DC unavailable (requests naming x-amz-rdma-connection "
                 "get 501): {}",
                 rc.error().message);
    say("DC only (RC: " + rc.error().message + ")");
    return dc;
  }
  say("DC and RC");
  return MakeDcRcFabric(std::move(dc).value(), std::move(rc).value());
}

// RC next to the fabric's own transport; a listener that cannot start costs RC only (logged).
void StartRc(S3RdmaService& svc, const RdmaSettings& settings) {
  if (settings.rc_port == 0) {
    spdlog::info("S3 over RDMA: RC off (MINIO_RDMA_RC_PORT=off)");
    return;
  }
  if (auto st = svc.ListenRc(static_cast<uint16_t>(settings.rc_port)); !st.ok())
    spdlog::warn("S3 over RDMA: RC unavailable (requests naming x-amz-rdma-connection get 501): {}",
                 st.error().message);
}
}  // namespace

std::unique_ptr<S3RdmaService> CreateS3RdmaService(const RdmaSettings& settings,
                                                   ServiceOptions options) {
  switch (settings.fabric) {
    case FabricKind::kOff: {
      std::string why = BuiltWithVerbs() ? "S3 over RDMA is off (MINIO_RDMA_FABRIC=off)"
                                         : "this is the standard build: S3 over RDMA needs "
                                           "MINIO_RDMA_FABRIC=soft or the RDMA build";
      spdlog::info("S3 over RDMA: off ({})", why);
      return std::make_unique<S3RdmaService>(nullptr, why, options);
    }
    case FabricKind::kSoft: {
      soft::SoftFabricOptions so;
      so.allow = settings.soft_allow;
      // The byte-level progress check runs in the soft endpoint, on the transfer's settings.
      so.progress_interval = options.transfer.timeout;
      so.io_timeout = options.transfer.timeout;
      so.min_rate = options.transfer.min_rate;
      spdlog::info("S3 over RDMA: on, soft fabric (TCP emulation; targets: the requesting host{})",
                   settings.soft_allow.empty() ? "" : " and MINIO_RDMA_SOFT_ALLOW");
      options.rc.allow = settings.soft_allow;
      auto svc =
          std::make_unique<S3RdmaService>(std::make_unique<soft::SoftFabric>(so), "", options);
      StartRc(*svc, settings);
      return svc;
    }
    case FabricKind::kVerbs: {
      // The transports come from the device (ChooseS3Transports, what `rdma check` reports): DC
      // and RC on mlx5, RC on a device without DC (Broadcom, Intel, AMD, Soft-RoCE).
      std::string transports;
      auto fabric = OpenVerbsS3Fabric(settings, options.rc_bind_ip, false, &transports);
      if (!fabric.ok()) {
        // Logged once here; every token request gets 501 with this reason.
        spdlog::warn("S3 over RDMA: unavailable, requests with x-amz-rdma-token get 501: {}",
                     fabric.error().message);
        return std::make_unique<S3RdmaService>(nullptr, fabric.error().message, options);
      }
      spdlog::info("S3 over RDMA: on, verbs fabric, {}", transports);
      options.rc.allow = settings.verbs.allow;
      // After a removed or failed device the fabric is created again, as at start, on the
      // device of the listener's address.
      auto svc = std::make_unique<S3RdmaService>(
          std::move(fabric).value(), "", options,
          [settings, ip = options.rc_bind_ip] {
            return OpenVerbsS3Fabric(settings, ip, true, nullptr);
          });
      if (transports.rfind("DC only (RC:", 0) != 0) StartRc(*svc, settings);
      return svc;
    }
  }
  return nullptr;
}

#ifndef RDMASTOR_WITH_RDMA
Result<std::unique_ptr<Fabric>> CreateVerbsFabric(const VerbsSettings&) {
  return StandardBuildLacks("the verbs fabric is not compiled in");
}
Result<std::unique_ptr<Target>> StartVerbsDcTarget(const VerbsSettings&) {
  return StandardBuildLacks("the verbs fabric is not compiled in");
}
#endif

}  // namespace rdmastor::rdma
