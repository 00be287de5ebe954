// The RDMA concurrency ceilings (issue 37 item 10): sized from the link, memory, locked memory
// and device limits (rdma/ceilings.h), explicit values checked against what the host can hold.
#include <gtest/gtest.h>

#include "rdma/ceilings.h"
#include "rdma/check.h"

namespace rdmastor::rdma {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

Ceilings Size(const CeilingSettings& s, const CeilingFacts& f) {
  auto c = SizeCeilings(s, f);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : Ceilings{};
}

TEST(RdmaCeilings, UnknownLinkKeepsTheFormerDefaults) {
  // The soft fabric (no device) on a machine with plenty of memory: what the server always used.
  CeilingFacts f;
  f.memory_bytes = 64 * kGiB;
  auto c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 32u);
  EXPECT_EQ(c.transfers_per_client, 8u);
  EXPECT_EQ(c.internode_staging, 16u);
  EXPECT_EQ(c.channels, 4);
  EXPECT_NE(c.basis.find("unknown link"), std::string::npos) << c.basis;
  // Nothing known at all: the same.
  auto none = Size({}, {});
  EXPECT_EQ(none.transfers_max, 32u);
  EXPECT_EQ(none.internode_staging, 16u);
}

TEST(RdmaCeilings, A400GbNodeGetsRoomForItsLink) {
  CeilingFacts f;
  f.memory_bytes = 512 * kGiB;
  f.link_gbps = 400;
  f.max_mr = 1 << 24;  // mlx5
  f.max_qp = 1 << 18;
  f.source = "mlx5_0 400 Gb/s";
  auto c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 128u);  // 512 MiB of staging
  EXPECT_EQ(c.transfers_per_client, 32u);
  EXPECT_EQ(c.internode_staging, 64u);
  EXPECT_EQ(c.channels, 8);
  EXPECT_EQ(c.basis, "sized for 400 Gb/s (mlx5_0 400 Gb/s)");
  // Two rails add up; channels stop at MINIO_RDMA_INTERNODE_INFLIGHT (8 by default).
  f.link_gbps = 800;
  c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 256u);
  EXPECT_EQ(c.transfers_per_client, 64u);
  EXPECT_EQ(c.internode_staging, 128u);
  EXPECT_EQ(c.channels, 8);
  CeilingSettings more_inflight;
  more_inflight.internode_inflight = 32;
  EXPECT_EQ(Size(more_inflight, f).channels, 16);  // 800 / 50, at most 16
  // A 100 Gb/s or slower port (and Soft-RoCE's 2.5) stays at the floors.
  f.link_gbps = 100;
  c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 32u);
  EXPECT_EQ(c.internode_staging, 16u);
  EXPECT_EQ(c.channels, 4);
  f.link_gbps = 2.5;
  EXPECT_EQ(Size({}, f).basis.rfind("sized for 2.5 Gb/s", 0), 0u);
}

TEST(RdmaCeilings, DefaultsStayWithinMemoryLockedMemoryAndTheDevice) {
  CeilingFacts f;
  f.link_gbps = 400;
  f.memory_bytes = 4 * kGiB;  // 1/16: 256 MiB = 64 buffers each pool
  auto c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 64u);
  EXPECT_EQ(c.transfers_per_client, 16u);
  EXPECT_EQ(c.internode_staging, 64u);
  EXPECT_NE(c.basis.find("S3 transfers capped at 1/16 of the 4096 MiB of memory"),
            std::string::npos)
      << c.basis;
  // RLIMIT_MEMLOCK of 64 MiB without CAP_IPC_LOCK: S3 half (8 buffers), inter-node a quarter.
  f.memory_bytes = 512 * kGiB;
  f.memlock_bytes = 64u << 20;
  c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 8u);
  EXPECT_EQ(c.transfers_per_client, 4u);  // never more than half
  EXPECT_EQ(c.internode_staging, 4u);
  EXPECT_NE(c.basis.find("RLIMIT_MEMLOCK (64 MiB; raise it"), std::string::npos) << c.basis;
  // A limit below one buffer: one (its registration names the limit at start).
  f.memlock_bytes = 64u << 10;
  c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 1u);
  EXPECT_EQ(c.transfers_per_client, 1u);
  EXPECT_EQ(c.internode_staging, 1u);
  // A device with few memory regions / queue pairs.
  f.memlock_bytes.reset();
  f.max_mr = 100;
  f.max_qp = 512;
  c = Size({}, f);
  EXPECT_EQ(c.transfers_max, 25u);
  EXPECT_EQ(c.internode_staging, 25u);
  EXPECT_EQ(c.channels, 2);
}

TEST(RdmaCeilings, ExplicitValuesAreKeptOrRefusedByName) {
  CeilingFacts f;
  f.memory_bytes = 8 * kGiB;
  CeilingSettings s;
  s.transfers_max = 200;  // 800 MiB: within a quarter of memory
  s.transfers_per_client = 100;
  s.internode_staging = 3;
  s.channels = 1;
  auto c = Size(s, f);
  EXPECT_EQ(c.transfers_max, 200u);
  EXPECT_EQ(c.transfers_per_client, 100u);
  EXPECT_EQ(c.internode_staging, 3u);
  EXPECT_EQ(c.channels, 1);

  s = {};
  s.transfers_max = 600;  // 2.3 GiB > 2 GiB
  auto bad = SizeCeilings(s, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message.rfind("RDMASTOR_RDMA_TRANSFERS_MAX='600' is invalid: ", 0), 0u)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("1/4 of the 8192 MiB of memory, 512 buffers"),
            std::string::npos)
      << bad.error().message;

  s = {};
  s.internode_staging = 10;
  f.memlock_bytes = 32u << 20;  // half: 16 MiB = 4 buffers
  bad = SizeCeilings(s, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("MINIO_RDMA_INTERNODE_STAGING_BUFFERS='10' is invalid", 0),
            0u)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("RLIMIT_MEMLOCK"), std::string::npos);
  f.memlock_bytes.reset();

  // More per client than half of the server's transfers.
  s = {};
  s.transfers_max = 10;
  s.transfers_per_client = 6;
  bad = SizeCeilings(s, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "RDMASTOR_RDMA_TRANSFERS_PER_CLIENT='6' is invalid: one client may hold at most half "
            "of the 10 S3-over-RDMA transfers (RDMASTOR_RDMA_TRANSFERS_MAX), 5; lower it or raise "
            "RDMASTOR_RDMA_TRANSFERS_MAX");
  // An explicit per-client cap alone raises the sized total to twice it.
  s = {};
  s.transfers_per_client = 40;
  c = Size(s, f);
  EXPECT_EQ(c.transfers_max, 80u);
  EXPECT_EQ(c.transfers_per_client, 40u);
  s.transfers_per_client = 1;
  c = Size(s, f);
  EXPECT_EQ(c.transfers_max, 32u);
  EXPECT_EQ(c.transfers_per_client, 1u);
}

TEST(RdmaCeilings, PortRates) {
  EXPECT_EQ(PortRateGbps(1, 1), 2.5);     // Soft-RoCE: 1X SDR
  EXPECT_EQ(PortRateGbps(32, 2), 100);    // 4X EDR: 100 GbE, EDR InfiniBand
  EXPECT_EQ(PortRateGbps(64, 2), 200);    // 4X HDR
  EXPECT_EQ(PortRateGbps(128, 2), 400);   // 4X NDR: 400 GbE, NDR InfiniBand
  EXPECT_EQ(PortRateGbps(128, 16), 200);  // 2X NDR
  EXPECT_EQ(PortRateGbps(256, 2), 800);   // 4X XDR
  EXPECT_EQ(PortRateGbps(0, 2), 0);
  EXPECT_EQ(PortRateGbps(128, 0), 0);
  EXPECT_EQ(PortRateGbps(3, 1), 0);
}

TEST(RdmaCeilings, FactsFromDevicesCountUsableAllowedPorts) {
  auto port = [](int n, PortState st, double gbps) {
    PortInfo p;
    p.port = n;
    p.state = st;
    p.link_layer = "InfiniBand";
    p.rate_gbps = gbps;
    return p;
  };
  DeviceInfo a{"mlx5_0", {port(1, PortState::kActive, 400)}, true, 1 << 24, 1 << 18};
  DeviceInfo b{"mlx5_1", {port(1, PortState::kActive, 400)}, true, 1 << 20, 1 << 17};
  DeviceInfo down{"mlx5_2", {port(1, PortState::kDown, 400)}, true, 16, 16};
  Result<std::vector<DeviceInfo>> devices = std::vector<DeviceInfo>{a, b, down};
  auto f = GatherCeilingFacts(false, &devices, "", 1);
  EXPECT_EQ(f.link_gbps, 800);
  EXPECT_EQ(f.max_mr, uint64_t{1} << 20);
  EXPECT_EQ(f.max_qp, uint64_t{1} << 17);
  EXPECT_EQ(f.source, "mlx5_0 400 Gb/s, mlx5_1 400 Gb/s");
  EXPECT_GT(f.memory_bytes, 0u);
  EXPECT_FALSE(f.memlock_bytes.has_value());  // nothing pinned: no bound
  f = GatherCeilingFacts(false, &devices, "mlx5_1", 1);
  EXPECT_EQ(f.link_gbps, 400);
  EXPECT_EQ(f.source, "mlx5_1 400 Gb/s");
  Result<std::vector<DeviceInfo>> none = MakeError(ErrorCode::kRDMANotSupported, "no device");
  f = GatherCeilingFacts(false, &none, "", 1);
  EXPECT_EQ(f.link_gbps, 0);
  EXPECT_EQ(f.source, "");
}

}  // namespace
}  // namespace rdmastor::rdma
