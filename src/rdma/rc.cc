#include "rdma/rc.h"

#include "rdma/build_info.h"
#include "rdma/soft/net.h"
#include "rdma/token.h"

namespace rdmastor::rdma {

std::array<uint8_t, 8> EncodeRcConnectData(uint32_t endpoint) {
  std::array<uint8_t, 8> out{};
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<uint8_t>(kRcConnectMagic >> (8 * i));
    out[4 + i] = static_cast<uint8_t>(endpoint >> (8 * i));
  }
  return out;
}

std::optional<uint32_t> DecodeRcConnectData(const void* data, size_t len) {
  if (data == nullptr || len < 8) return std::nullopt;
  auto* p = static_cast<const uint8_t*>(data);
  uint32_t magic = 0, endpoint = 0;
  for (int i = 0; i < 4; ++i) {
    magic |= static_cast<uint32_t>(p[i]) << (8 * i);
    endpoint |= static_cast<uint32_t>(p[4 + i]) << (8 * i);
  }
  if (magic != kRcConnectMagic) return std::nullopt;
  return endpoint;
}

Result<RcTargetAddr> ResolveRcTarget(const RemoteAddress& remote, const RequestOrigin& origin,
                                     const std::vector<soft::Cidr>& allow) {
  auto ip = remote.has_gid ? GidToIpv4(remote.gid) : std::nullopt;
  if (!ip || remote.lid == 0)
    return MakeError(ErrorCode::kRDMANotSupported,
                     "RC: the token names no IPv4-mapped GID and rdma_cm port to connect to");
  auto from = soft::ParseIpv4(origin.remote_ip);
  bool allowed = from && *from == *ip;
  for (const auto& c : allow) allowed = allowed || c.Contains(*ip);
  if (!allowed)
    return MakeError(ErrorCode::kAccessDenied,
                     "RC: the token names host " + soft::net::Ipv4String(*ip) +
                         " but the request came from " + origin.remote_ip +
                         "; only the requester's address is reached unless "
                         "MINIO_RDMA_SOFT_ALLOW lists it");
  return RcTargetAddr{*ip, remote.lid};
}

#ifndef RDMASTOR_WITH_RDMA
constexpr std::string_view kNoRcHere = "verbs RC queue pairs are not compiled in";
Result<std::unique_ptr<Fabric>> CreateVerbsRcFabric(const RcSettings&) {
  return StandardBuildLacks(kNoRcHere);
}
Result<std::unique_ptr<Target>> StartVerbsRcTarget(const std::string&, const RcSettings&) {
  return StandardBuildLacks(kNoRcHere);
}
Result<std::unique_ptr<Target>> StartVerbsRcClient(const RcSettings&) {
  return StandardBuildLacks(kNoRcHere);
}
#endif

}  // namespace rdmastor::rdma
