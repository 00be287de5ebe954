// The judgement of `rdmastor rdma check` on made-up hosts.
#include "rdma/check.h"

#include <gtest/gtest.h>

#include "rdma/build_info.h"
#include "rdma/verbs_plan.h"

#ifdef RDMASTOR_WITH_RDMA
#include <infiniband/verbs.h>
#endif

namespace rdmastor::rdma {
namespace {

const CheckItem* Find(const std::vector<CheckItem>& items, std::string_view layer) {
  for (const auto& i : items)
    if (i.layer == layer) return &i;
  return nullptr;
}

// A healthy RoCE host: one ConnectX port, active, MTU 4096, an IPv4-mapped RoCE v2 GID.
CheckFacts HealthyRoce() {
  CheckFacts f;
  f.verbs_built = true;
  PortInfo p{1,
             PortState::kActive,
             "Ethernet",
             4096,
             4096,
             {{0, "fe80::1", "RoCE v1", "eth0"},
              {1, "fe80::1", "RoCE v2", "eth0"},
              {3, "::ffff:10.0.0.5", "RoCE v2", "eth0"}}};
  f.devices = std::vector<DeviceInfo>{{"mlx5_0", {p}, /*dc_capable=*/true}};
  f.memlock_bytes = std::nullopt;
  f.nvidia_driver = true;
  f.nvidia_peermem = true;
  return f;
}

TEST(RdmaCheck, HealthyHostIsReady) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "verbs settings are compiled out of the standard build";
  auto items = RunRdmaCheck(HealthyRoce());
  ASSERT_TRUE(items.ok()) << items.error().message;
  for (const auto& i : *items) EXPECT_EQ(i.status, CheckStatus::kOk) << i.layer << ": " << i.detail;
  EXPECT_EQ(CheckExitCode(*items), 0);
  EXPECT_NE(Find(*items, "gid mlx5_0/1")->detail.find("::ffff:10.0.0.5"), std::string::npos);
  EXPECT_EQ(Find(*items, "configured")->detail, "automatic: mlx5_0 port 1");
  EXPECT_NE(RenderCheckText(*items, true).find("READY: 0 failed, 0 warning(s)"), std::string::npos);
}

TEST(RdmaCheck, NoDeviceFailsWithTheReason) {
  CheckFacts f;
  f.verbs_built = true;
  f.devices =
      MakeError(ErrorCode::kRDMANotSupported, "ibv_get_device_list: Function not implemented");
  f.memlock_bytes = 8ULL << 20;
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "devices")->status, CheckStatus::kFailed);
  EXPECT_NE(Find(*items, "devices")->detail.find("no RDMA device: ibv_get_device_list"),
            std::string::npos);
  EXPECT_EQ(Find(*items, "ports")->status, CheckStatus::kSkipped);
  EXPECT_EQ(Find(*items, "memlock")->status, CheckStatus::kFailed);  // 8 MiB, no CAP_IPC_LOCK
  EXPECT_NE(Find(*items, "memlock")->fix.find("LimitMEMLOCK=infinity"), std::string::npos);
  EXPECT_EQ(CheckExitCode(*items), 1);
}

TEST(RdmaCheck, PortDownSmallMtuAndMissingIpv4Gid) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "verbs settings are compiled out of the standard build";
  auto f = HealthyRoce();
  auto& dev = (*f.devices)[0];
  dev.ports[0].active_mtu = 1024;
  dev.ports[0].gids = {{1, "fe80::1", "RoCE v2", "eth0"}};
  dev.ports.push_back({2, PortState::kDown, "Ethernet", 1024, 4096, {}});
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "port mlx5_0/1")->status, CheckStatus::kWarning);
  EXPECT_NE(Find(*items, "port mlx5_0/1")->fix.find("jumbo"), std::string::npos);
  EXPECT_EQ(Find(*items, "port mlx5_0/2")->status, CheckStatus::kFailed);
  EXPECT_EQ(Find(*items, "gid mlx5_0/1")->status, CheckStatus::kWarning);
  EXPECT_EQ(Find(*items, "gid mlx5_0/2"), nullptr);  // GIDs are judged on active ports only
}

TEST(RdmaCheck, ConfiguredDeviceMustExist) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "verbs settings are compiled out of the standard build";
  auto f = HealthyRoce();
  f.env = {{"MINIO_RDMA_DEVICE", "mlx5_7"}};
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "configured")->status, CheckStatus::kFailed);
  f.env = {{"MINIO_RDMA_DEVICE", "mlx5_0"}, {"MINIO_RDMA_GID_INDEX", "9"}};
  items = RunRdmaCheck(f);
  EXPECT_NE(Find(*items, "configured")->detail.find("GID index not populated"), std::string::npos);
  f.env = {{"MINIO_RDMA_DEVICE", "mlx5_0"}, {"MINIO_RDMA_GID_INDEX", "3"}};
  items = RunRdmaCheck(f);
  EXPECT_EQ(Find(*items, "configured")->status, CheckStatus::kOk);
}

TEST(RdmaCheck, ReportsTheDeviceTheServerWouldUse) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "verbs settings are compiled out of the standard build";
  auto f = HealthyRoce();
  PortInfo healthy = (*f.devices)[0].ports[0];
  PortInfo down = healthy;
  down.state = PortState::kDown;
  PortInfo port2 = healthy;
  port2.port = 2;
  // Listed first: a non-mlx5 device (no DC) and an mlx5 whose port 1 is down (port 2 is up).
  f.devices = std::vector<DeviceInfo>{
      {"irdma0", {healthy}, false}, {"mlx5_0", {down, port2}, true}, {"mlx5_1", {healthy}, true}};
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok()) << items.error().message;
  EXPECT_EQ(Find(*items, "configured")->detail, "automatic: mlx5_1 port 1");
  EXPECT_EQ(Find(*items, "fabric")->status, CheckStatus::kOk);
  EXPECT_NE(Find(*items, "fabric")->detail.find("S3 over RDMA on DC and RC on mlx5_1 port 1"),
            std::string::npos)
      << Find(*items, "fabric")->detail;
  // Naming the device whose port 1 is down: not ready, and no other device is substituted.
  f.env = {{"MINIO_RDMA_DEVICE", "mlx5_0"}};
  items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "configured")->status, CheckStatus::kFailed);
  EXPECT_NE(Find(*items, "configured")->detail.find("port 1 is down"), std::string::npos);
  EXPECT_EQ(Find(*items, "fabric")->status, CheckStatus::kFailed);
  EXPECT_EQ(CheckExitCode(*items), 1);
  // ... and its port 2: ready on mlx5_0 port 2.
  f.env = {{"MINIO_RDMA_DEVICE", "mlx5_0"}, {"MINIO_RDMA_PORT", "2"}};
  items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "configured")->status, CheckStatus::kOk);
  EXPECT_NE(Find(*items, "fabric")->detail.find("mlx5_0 port 2"), std::string::npos);
  // No mlx5 device usable: no DC, S3 over RDMA on RC only (and it says why there is no DC).
  f.env = {};
  f.devices = std::vector<DeviceInfo>{{"irdma0", {healthy}, false}};
  items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "fabric")->status, CheckStatus::kOk);
  EXPECT_NE(Find(*items, "fabric")->detail.find("S3 over RDMA on RC only on irdma0 port 1"),
            std::string::npos)
      << Find(*items, "fabric")->detail;
  EXPECT_NE(Find(*items, "fabric")->detail.find("not an mlx5 device"), std::string::npos);
  // ... and with RC off, nothing at all.
  f.env = {{"MINIO_RDMA_RC_PORT", "off"}};
  items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "fabric")->status, CheckStatus::kFailed);
}

TEST(RdmaCheck, InternodeAndFabricSettings) {
  CheckFacts f;
  f.verbs_built = BuiltWithVerbs();
  f.devices = std::vector<DeviceInfo>{};
  f.env = {{"MINIO_RDMA_INTERNODE", "on"}, {"MINIO_RDMA_FABRIC", "soft"}};
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  // Inter-node RDMA over the soft fabric needs no device in either build: a warning (emulation).
  EXPECT_EQ(Find(*items, "inter-node")->status, CheckStatus::kWarning);
  EXPECT_NE(Find(*items, "inter-node")->detail.find("soft"), std::string::npos);
  EXPECT_EQ(Find(*items, "fabric")->status, CheckStatus::kWarning);
  // The soft fabric needs no device.
  EXPECT_EQ(Find(*items, "devices")->status, CheckStatus::kWarning);
  f.env = {{"MINIO_RDMA_FABRIC", "soft"}};
  items = RunRdmaCheck(f);
  EXPECT_EQ(CheckExitCode(*items), 0) << RenderCheckText(*items, f.verbs_built);
  // On the RDMA build's default fabric (verbs) without an active port, inter-node RDMA fails.
  f.env = {{"MINIO_RDMA_INTERNODE", "on"}};
  items = RunRdmaCheck(f);
  EXPECT_EQ(Find(*items, "inter-node")->status,
            BuiltWithVerbs() ? CheckStatus::kFailed : CheckStatus::kWarning);
  f.env = {{"MINIO_RDMA_INTERNODE", "sometimes"}};
  EXPECT_FALSE(RunRdmaCheck(f).ok());
}

TEST(RdmaCheck, GpuMemoryLayer) {
  CheckFacts f;
  f.verbs_built = BuiltWithVerbs();
  f.devices = std::vector<DeviceInfo>{};
  auto gpu = [&] { return Find(*RunRdmaCheck(f), "gpu-memory")->status; };
  EXPECT_EQ(gpu(), CheckStatus::kWarning);  // no driver: host memory only
  f.nvidia_driver = true;
  EXPECT_EQ(gpu(), CheckStatus::kWarning);  // neither peermem nor dma-buf
  f.kernel_dmabuf = true;
  EXPECT_EQ(gpu(), CheckStatus::kOk);
}

TEST(RdmaCheck, JsonEscapesAndSaysReady) {
  std::vector<CheckItem> items = {{"build", CheckStatus::kOk, "a \"quoted\" detail", ""}};
  EXPECT_EQ(RenderCheckJson(items, true),
            "{\"build\":\"rdma\",\"ready\":true,\"checks\":[{\"layer\":\"build\",\"status\":"
            "\"ok\",\"detail\":\"a \\\"quoted\\\" detail\",\"fix\":\"\"}]}\n");
}

TEST(RdmaCheck, LiveServerLayerJudgesTheServersAnswer) {
  CheckFacts f = HealthyRoce();
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(Find(*items, "server"), nullptr);  // no --endpoint: no server layer

  f.server = LiveServerFacts{"http://h:9000", LiveFabric{"soft", true, ""}};
  items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok());
  const auto* s = Find(*items, "server");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->status, CheckStatus::kOk);
  EXPECT_NE(s->detail.find("http://h:9000 serves S3 over RDMA on the soft fabric"), std::string::npos);
  EXPECT_NE(s->detail.find("rdmastor_rdma_fabric_ready 1"), std::string::npos) << s->detail;

  f.server = LiveServerFacts{"http://h:9000", LiveFabric{"none", false, "off (MINIO_RDMA_FABRIC=off)"}};
  items = RunRdmaCheck(f);
  s = Find(*items, "server");
  EXPECT_EQ(s->status, CheckStatus::kWarning);
  EXPECT_NE(s->detail.find("does not serve S3 over RDMA: off"), std::string::npos);
  EXPECT_EQ(CheckExitCode(*items), 0);

  f.server = LiveServerFacts{"http://h:9000", LiveFabric{"verbs", false, "port 1 is down"}};
  items = RunRdmaCheck(f);
  s = Find(*items, "server");
  EXPECT_EQ(s->status, CheckStatus::kFailed);
  EXPECT_NE(s->detail.find("the verbs fabric is not ready: port 1 is down"), std::string::npos);
  EXPECT_NE(s->detail.find("rdmastor_rdma_fabric_ready 0"), std::string::npos) << s->detail;
  EXPECT_EQ(CheckExitCode(*items), 1);

  f.server = LiveServerFacts{"http://h:9000", MakeError(ErrorCode::kInternalError, "refused")};
  items = RunRdmaCheck(f);
  s = Find(*items, "server");
  EXPECT_EQ(s->status, CheckStatus::kFailed);
  EXPECT_NE(s->detail.find("could not ask it: refused"), std::string::npos);
}

// The port state is judged as a value. Its words are the ones libibverbs prints, so `rdma check`
// and the start-up log read like `ibv_devinfo`'s neighbours; the RDMA build asks the library.
TEST(RdmaCheck, PortStateIsAValueNamedAsLibibverbsNamesIt) {
  EXPECT_EQ(PortStateFromVerbs(4), PortState::kActive);  // IBV_PORT_ACTIVE
  EXPECT_EQ(PortStateFromVerbs(1), PortState::kDown);
  EXPECT_EQ(PortStateFromVerbs(5), PortState::kActiveDefer);
  EXPECT_EQ(PortStateFromVerbs(-1), PortState::kNop);  // out of range: never active
  EXPECT_EQ(PortStateFromVerbs(99), PortState::kNop);
  EXPECT_EQ(PortStateName(PortState::kActive), "active");
#ifdef RDMASTOR_WITH_RDMA
  for (int s = IBV_PORT_NOP; s <= IBV_PORT_ACTIVE_DEFER; ++s) {
    EXPECT_EQ(PortStateName(PortStateFromVerbs(s)),
              ibv_port_state_str(static_cast<ibv_port_state>(s)))
        << "state " << s;
  }
  EXPECT_EQ(PortStateFromVerbs(IBV_PORT_ACTIVE), PortState::kActive);
#endif
}

// What a port reported as libibverbs reports an active one is usable, whatever its text says.
TEST(RdmaCheck, AnActivePortAsTheKernelReportsItIsUsable) {
  auto f = HealthyRoce();
  (*f.devices)[0].ports[0].state = PortStateFromVerbs(4);
  auto items = RunRdmaCheck(f);
  ASSERT_TRUE(items.ok()) << items.error().message;
  EXPECT_EQ(Find(*items, "port mlx5_0/1")->status, CheckStatus::kOk)
      << Find(*items, "port mlx5_0/1")->detail;
  EXPECT_EQ(PortUnusableReason((*f.devices)[0].ports[0]), "");
}

}  // namespace
}  // namespace rdmastor::rdma
