// The cuObject RDMA token carried in `x-amz-rdma-token` (DESIGN.md §3): where the client's
// registered buffer is and how to reach it.
//
//   raddr:rsize:rkey:lid:qpn:has_gid:gid   printf "%016lx:%08x:%08x:%04x:%06x:%01x:%016lx%016lx"
//
// The codec is strict: exactly 81 characters, every field its exact width, lower-case hex only,
// has_gid 0 or 1, and raddr + rsize must not wrap. Anything else is 400 InvalidRDMAToken.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::rdma {

inline constexpr size_t kTokenLength = 81;

struct RdmaToken {
  uint64_t raddr = 0;  // client buffer virtual address
  uint32_t rsize = 0;  // buffer length in bytes
  uint32_t rkey = 0;   // remote key of the buffer's memory region
  uint16_t lid = 0;    // IB LID (0 on RoCE); soft fabric: TCP port of the client's target
  uint32_t qpn = 0;    // 24 bits: the client's DC target number; soft fabric: endpoint id
  bool has_gid = false;
  std::array<uint8_t, 16> gid{};  // network byte order (RoCE v2: IPv4-mapped address)

  bool operator==(const RdmaToken&) const = default;
};

// Parses a token; errors are kInvalidRDMAToken with a message naming the offending field.
Result<RdmaToken> ParseToken(std::string_view text);

// The canonical 81-character form (what ParseToken accepts).
std::string FormatToken(const RdmaToken& token);

// GID helpers: the IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d) in host byte order, and
// the reverse.
std::optional<uint32_t> GidToIpv4(const std::array<uint8_t, 16>& gid);
std::array<uint8_t, 16> Ipv4ToGid(uint32_t ipv4_host_order);

}  // namespace rdmastor::rdma
