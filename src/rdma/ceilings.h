// The concurrency ceilings of both RDMA paths (issue 37 item 10), sized once at start from the
// host and the device and validated there: S3-over-RDMA transfers the server runs at once (its
// staging buffers) and per client address, the inter-node serving side's staging buffers and the
// channels toward each peer. Sizing is a pure function over plain facts (unit-tested without a
// device); GatherCeilingFacts reads them from the host (libibverbs, sysconf, getrlimit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "rdma/check.h"

namespace rdmastor::rdma {

// Explicit settings; nullopt: sized from the facts.
struct CeilingSettings {
  std::optional<size_t> transfers_max;         // RDMASTOR_RDMA_TRANSFERS_MAX
  std::optional<size_t> transfers_per_client;  // RDMASTOR_RDMA_TRANSFERS_PER_CLIENT
  std::optional<size_t> internode_staging;     // MINIO_RDMA_INTERNODE_STAGING_BUFFERS
  std::optional<int> channels;                 // MINIO_RDMA_CHANNELS
  int internode_inflight = 8;                  // MINIO_RDMA_INTERNODE_INFLIGHT (set or default)
};

// What the ceilings are sized from. 0 / nullopt: unknown or no limit.
struct CeilingFacts {
  uint64_t memory_bytes = 0;  // physical memory
  // RLIMIT_MEMLOCK where it bounds registrations: the verbs fabric pins registered memory, and
  // only a process without CAP_IPC_LOCK is held to the limit. nullopt: no bound.
  std::optional<uint64_t> memlock_bytes;
  double link_gbps = 0;    // the usable RDMA ports' rates together (multi-rail adds up)
  uint64_t max_mr = 0;     // ibv_device_attr.max_mr (the smallest of the devices used)
  uint64_t max_qp = 0;     // ibv_device_attr.max_qp
  std::string source;      // what the facts came from, for the start-up line ("rxe0 2.5 Gb/s")
};

struct Ceilings {
  size_t transfers_max = 32;
  size_t transfers_per_client = 8;
  size_t internode_staging = 16;
  int channels = 4;
  std::string basis;  // how they were sized (logged at start)
};

// Every staging buffer (S3 and inter-node serving side) is one registration of this size.
inline constexpr size_t kCeilingStagingBytes = size_t{4} << 20;

// The defaults, for a link of `link_gbps` (0: unknown, the soft fabric), bounded by memory:
//   transfers_max        32 per 100 Gb/s, at least 32 (the soft fabric's and a slow link's);
//   transfers_per_client a quarter of transfers_max, at least 8, never more than half of it;
//   internode_staging    16 per 100 Gb/s, at least 16;
//   channels             one per 50 Gb/s, 4 to 16, at most MINIO_RDMA_INTERNODE_INFLIGHT (a
//                        peer never has more pieces in flight than that).
// A 400 Gb/s port: 128 transfers (512 MiB of staging), 32 per client, 64 inter-node staging
// buffers, 8 channels. Bounds on the defaults: each staging pool at most 1/16 of physical memory
// and max_mr / 4 registrations; where RLIMIT_MEMLOCK binds, S3 staging at most half of it and
// inter-node staging a quarter (at least one buffer each: a limit below one buffer is named when
// the first one is registered). An explicit value is checked against looser bounds (a quarter
// of physical memory, max_mr / 2, the same RLIMIT_MEMLOCK shares, channels against max_qp) and
// transfers_per_client against half of transfers_max: outside them it is an error naming the
// variable, the bound and the fix.
Result<Ceilings> SizeCeilings(const CeilingSettings& settings, const CeilingFacts& facts);

// The facts of this host: memory, RLIMIT_MEMLOCK (when `pins` - the verbs fabric is in use - and
// the process lacks CAP_IPC_LOCK), and with `devices` the rates and limits of the usable ports of
// the devices MINIO_RDMA_DEVICE (`wanted`) allows on `port`.
CeilingFacts GatherCeilingFacts(bool pins, const Result<std::vector<DeviceInfo>>* devices,
                                const std::string& wanted, int port);

}  // namespace rdmastor::rdma
