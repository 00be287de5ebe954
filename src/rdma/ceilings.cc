#include "rdma/ceilings.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

namespace {

constexpr uint64_t kNoBound = std::numeric_limits<uint64_t>::max();

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// A bound on a count of staging buffers, and what sets it (for the message and the log).
struct Bound {
  uint64_t buffers = kNoBound;
  std::string what;
};

// The tightest of the bounds that apply: memory / mem_div, RLIMIT_MEMLOCK / lock_div, max_mr /
// mr_div (each at least one buffer).
Bound Tightest(const CeilingFacts& f, uint64_t mem_div, uint64_t lock_div, uint64_t mr_div) {
  Bound b;
  auto take = [&](uint64_t n, std::string what) {
    n = std::max<uint64_t>(1, n);
    if (n < b.buffers) b = {n, std::move(what)};
  };
  const uint64_t B = kCeilingStagingBytes;
  if (f.memory_bytes)
    take(f.memory_bytes / mem_div / B,
         "1/" + std::to_string(mem_div) + " of the " + MiB(f.memory_bytes) + " of memory");
  if (f.memlock_bytes)
    take(*f.memlock_bytes / lock_div / B,
         "1/" + std::to_string(lock_div) + " of RLIMIT_MEMLOCK (" + MiB(*f.memlock_bytes) +
             "; raise it, LimitMEMLOCK=infinity in the systemd unit)");
  if (f.max_mr)
    take(f.max_mr / mr_div,
         "1/" + std::to_string(mr_div) + " of the device's " + std::to_string(f.max_mr) +
             " memory regions");
  return b;
}

Error TooMany(const char* name, uint64_t value, const Bound& b) {
  return MakeError(ErrorCode::kInvalidArgument,
                   std::string(name) + "='" + std::to_string(value) + "' is invalid: " +
                       std::to_string(value) + " staging buffers of " +
                       MiB(kCeilingStagingBytes) + " exceed " + b.what + ", " +
                       std::to_string(b.buffers) + " buffers; use at most that, or unset it to " +
                       "size it from the device and memory");
}

// per 100 Gb/s of link, at least `floor`.
uint64_t ForLink(uint64_t per_100g, uint64_t floor, double gbps) {
  return std::max<uint64_t>(floor, static_cast<uint64_t>(gbps * per_100g / 100));
}

}  // namespace

Result<Ceilings> SizeCeilings(const CeilingSettings& s, const CeilingFacts& f) {
  Ceilings c;
  std::vector<std::string> capped;
  // S3 over RDMA: one staging buffer per transfer.
  const Bound s3_default = Tightest(f, 16, 2, 4), s3_explicit = Tightest(f, 4, 2, 2);
  if (s.transfers_max) {
    if (*s.transfers_max > s3_explicit.buffers)
      return TooMany("RDMASTOR_RDMA_TRANSFERS_MAX", *s.transfers_max, s3_explicit);
    c.transfers_max = *s.transfers_max;
  } else {
    uint64_t want = ForLink(32, 32, f.link_gbps);
    // An explicit per-client cap needs twice as many in all: grow to it within the looser bounds
    // an explicit value gets (it is what the operator asked for).
    if (s.transfers_per_client)
      want = std::max<uint64_t>(want, 2 * static_cast<uint64_t>(*s.transfers_per_client));
    const Bound& b = s.transfers_per_client && want > s3_default.buffers ? s3_explicit : s3_default;
    if (want > b.buffers) {
      capped.push_back("S3 transfers capped at " + b.what);
      want = b.buffers;
    }
    c.transfers_max = static_cast<size_t>(want);
  }
  const size_t per_client_max = std::max<size_t>(1, c.transfers_max / 2);
  if (s.transfers_per_client) {
    if (*s.transfers_per_client > per_client_max)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_RDMA_TRANSFERS_PER_CLIENT='" +
                           std::to_string(*s.transfers_per_client) +
                           "' is invalid: one client may hold at most half of the " +
                           std::to_string(c.transfers_max) +
                           " S3-over-RDMA transfers (RDMASTOR_RDMA_TRANSFERS_MAX), " +
                           std::to_string(per_client_max) +
                           "; lower it or raise RDMASTOR_RDMA_TRANSFERS_MAX");
    c.transfers_per_client = *s.transfers_per_client;
  } else {
    c.transfers_per_client = std::min(std::max<size_t>(8, c.transfers_max / 4), per_client_max);
  }
  // Inter-node serving side.
  const Bound in_default = Tightest(f, 16, 4, 4), in_explicit = Tightest(f, 4, 2, 2);
  if (s.internode_staging) {
    if (*s.internode_staging > in_explicit.buffers)
      return TooMany("MINIO_RDMA_INTERNODE_STAGING_BUFFERS", *s.internode_staging, in_explicit);
    c.internode_staging = *s.internode_staging;
  } else {
    uint64_t want = ForLink(16, 16, f.link_gbps);
    if (want > in_default.buffers) {
      capped.push_back("inter-node staging capped at " + in_default.what);
      want = in_default.buffers;
    }
    c.internode_staging = static_cast<size_t>(want);
  }
  if (s.channels) {
    c.channels = *s.channels;
  } else {
    int want = std::clamp(static_cast<int>(f.link_gbps / 50), 4, 16);
    // A peer never has more pieces in flight than MINIO_RDMA_INTERNODE_INFLIGHT; and on a device
    // with few QPs, room for 128 peers in both directions.
    want = std::min(want, std::max(1, s.internode_inflight));
    if (f.max_qp)
      want = std::min<int>(want, static_cast<int>(std::max<uint64_t>(1, f.max_qp / 256)));
    c.channels = want;
  }
  c.basis = f.link_gbps > 0 ? fmt::format("sized for {:g} Gb/s", f.link_gbps)
                           : std::string("the defaults for an unknown link");
  if (!f.source.empty()) c.basis += " (" + f.source + ")";
  for (const auto& why : capped) c.basis += "; " + why;
  return c;
}

CeilingFacts GatherCeilingFacts(bool pins, const Result<std::vector<DeviceInfo>>* devices,
                                const std::string& wanted, int port) {
  CeilingFacts f;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) f.memory_bytes = static_cast<uint64_t>(pages) * page;
  if (pins) {
    auto memlock = GatherMemlock();
    if (!memlock.cap_ipc_lock) f.memlock_bytes = memlock.bytes;
  }
  if (devices == nullptr || !devices->ok()) return f;
  for (const auto& d : **devices) {
    if (!DeviceAllowed(wanted, d.name)) continue;
    for (const auto& p : d.ports) {
      if (p.port != port || !PortUnusableReason(p).empty()) continue;
      f.link_gbps += p.rate_gbps;
      f.source += fmt::format("{}{} {:g} Gb/s", f.source.empty() ? "" : ", ", d.name, p.rate_gbps);
      if (d.max_mr && (!f.max_mr || d.max_mr < f.max_mr)) f.max_mr = d.max_mr;
      if (d.max_qp && (!f.max_qp || d.max_qp < f.max_qp)) f.max_qp = d.max_qp;
    }
  }
  return f;
}

}  // namespace rdmastor::rdma
