#include "rdma/token.h"

#include <cstdio>

#include "common/text.h"

namespace rdmastor::rdma {

namespace {

// Field widths in order; every field is followed by ':' except the last (the 32-digit GID).
struct Field {
  const char* name;
  size_t width;
};
constexpr Field kFields[] = {{"raddr", 16}, {"rsize", 8},   {"rkey", 8}, {"lid", 4},
                             {"qpn", 6},    {"has_gid", 1}, {"gid", 32}};

// Upper case is rejected on purpose: the format is printf's lower-case %x.
int HexDigit(char c) { return text::HexDigit(c, /*lower_only=*/true); }

Error Bad(std::string what) {
  return MakeError(ErrorCode::kInvalidRDMAToken, "x-amz-rdma-token: " + std::move(what));
}

}  // namespace

Result<RdmaToken> ParseToken(std::string_view text) {
  if (text.size() != kTokenLength)
    return Bad("expected " + std::to_string(kTokenLength) + " characters, got " +
               std::to_string(text.size()));
  uint64_t values[6] = {};
  size_t pos = 0;
  for (size_t f = 0; f < std::size(kFields); ++f) {
    const Field& field = kFields[f];
    for (size_t i = 0; i < field.width; ++i, ++pos) {
      int d = HexDigit(text[pos]);
      if (d < 0) return Bad(std::string(field.name) + " is not lower-case hex");
      if (f < 6) values[f] = values[f] << 4 | static_cast<uint64_t>(d);
    }
    if (f + 1 < std::size(kFields)) {
      if (text[pos] != ':') return Bad("expected ':' after " + std::string(field.name));
      ++pos;
    }
  }
  RdmaToken t;
  t.raddr = values[0];
  t.rsize = static_cast<uint32_t>(values[1]);
  t.rkey = static_cast<uint32_t>(values[2]);
  t.lid = static_cast<uint16_t>(values[3]);
  t.qpn = static_cast<uint32_t>(values[4]);
  if (values[5] > 1) return Bad("has_gid must be 0 or 1");
  t.has_gid = values[5] == 1;
  const size_t gid_pos = kTokenLength - 32;
  for (size_t i = 0; i < 16; ++i)
    t.gid[i] = static_cast<uint8_t>(HexDigit(text[gid_pos + 2 * i]) << 4 |
                                    HexDigit(text[gid_pos + 2 * i + 1]));
  if (t.rsize > 0 && t.raddr > UINT64_MAX - t.rsize) return Bad("raddr + rsize wraps around");
  return t;
}

std::string FormatToken(const RdmaToken& t) {
  uint64_t hi = 0, lo = 0;
  for (size_t i = 0; i < 8; ++i) hi = hi << 8 | t.gid[i];
  for (size_t i = 8; i < 16; ++i) lo = lo << 8 | t.gid[i];
  char buf[kTokenLength + 1];
  std::snprintf(buf, sizeof(buf), "%016llx:%08x:%08x:%04x:%06x:%01x:%016llx%016llx",
                static_cast<unsigned long long>(t.raddr), t.rsize, t.rkey, t.lid, t.qpn & 0xffffffu,
                t.has_gid ? 1u : 0u, static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return std::string(buf, kTokenLength);
}

std::optional<uint32_t> GidToIpv4(const std::array<uint8_t, 16>& gid) {
  for (size_t i = 0; i < 10; ++i)
    if (gid[i] != 0) return std::nullopt;
  if (gid[10] != 0xff || gid[11] != 0xff) return std::nullopt;
  return static_cast<uint32_t>(gid[12]) << 24 | static_cast<uint32_t>(gid[13]) << 16 |
         static_cast<uint32_t>(gid[14]) << 8 | gid[15];
}

std::array<uint8_t, 16> Ipv4ToGid(uint32_t ip) {
  std::array<uint8_t, 16> gid{};
  gid[10] = gid[11] = 0xff;
  gid[12] = static_cast<uint8_t>(ip >> 24);
  gid[13] = static_cast<uint8_t>(ip >> 16);
  gid[14] = static_cast<uint8_t>(ip >> 8);
  gid[15] = static_cast<uint8_t>(ip);
  return gid;
}

}  // namespace rdmastor::rdma
