#include "rdma/rc.h"

#include <algorithm>

#include "rdma/build_info.h"
#include "rdma/soft/net.h"
#include "rdma/token.h"

namespace rdmastor::rdma {

std::vector<uint8_t> EncodeRcConnectData(uint32_t endpoint, const std::vector<uint8_t>& proof) {
  const size_t n = std::min(proof.size(), kMaxConnectProof);
  std::vector<uint8_t> out(proof.empty() ? 8 : 12 + n);
  const uint32_t magic = proof.empty() ? kRcConnectMagic : kRcConnectAuthMagic;
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<uint8_t>(magic >> (8 * i));
    out[4 + i] = static_cast<uint8_t>(endpoint >> (8 * i));
  }
  if (!proof.empty()) {
    out[8] = static_cast<uint8_t>(n);
    std::copy(proof.begin(), proof.begin() + static_cast<ptrdiff_t>(n), out.begin() + 12);
  }
  return out;
}

namespace {
uint32_t Le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
}  // namespace

std::optional<uint32_t> DecodeRcConnectData(const void* data, size_t len) {
  if (data == nullptr || len < 8) return std::nullopt;
  auto* p = static_cast<const uint8_t*>(data);
  const uint32_t magic = Le32(p);
  if (magic != kRcConnectMagic && magic != kRcConnectAuthMagic) return std::nullopt;
  return Le32(p + 4);
}

std::vector<uint8_t> DecodeRcConnectProof(const void* data, size_t len) {
  if (data == nullptr || len < 12) return {};
  auto* p = static_cast<const uint8_t*>(data);
  const size_t n = p[8];
  // rdma_cm pads the private data it delivers: the length byte says where the proof ends.
  if (Le32(p) != kRcConnectAuthMagic || n > kMaxConnectProof || 12 + n > len) return {};
  return {p + 12, p + 12 + n};
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
