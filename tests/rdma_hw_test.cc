// Device tests (ctest label `hw`): need an RDMA NIC; skip with a message when none is present.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "rdma/build_info.h"
#include "rdma/check.h"
#include "rdma/rc.h"
#include "rdma/settings.h"
#include "rdma/transfer.h"

namespace rdmastor::rdma {
namespace {

// Writes a pattern of n bytes from `fabric` into the target's memory through `ep`, then reads it
// back, checking both directions.
void WriteThenReadBack(Fabric& fabric, Target& target, Endpoint& ep, size_t n) {
  std::vector<char> remote(n, 0), src(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(i * 7 + 1);
  auto rmr = target.RegisterMemory(remote.data(), n, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(rmr.ok()) << rmr.error().message;
  auto smr = fabric.RegisterMemory(src.data(), n, kLocalWrite);
  auto bmr = fabric.RegisterMemory(back.data(), n, kLocalWrite);
  ASSERT_TRUE(smr.ok() && bmr.ok());
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), n, (*rmr)->rkey()};
  {
    Transfer w(ep, Opcode::kWrite, rb);
    ASSERT_TRUE(w.Post(**smr, src.data(), n, 0).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  EXPECT_TRUE(remote == src);
  {
    Transfer r(ep, Opcode::kRead, rb);
    ASSERT_TRUE(r.Post(**bmr, back.data(), n, 0).ok());
    ASSERT_TRUE(r.Finish().ok());
  }
  EXPECT_TRUE(back == src);
}

TEST(VerbsDevice, RegistersMemoryAndOpensDcInitiators) {
  if (auto why = NoDcDeviceReason(QueryDevices()); !why.empty()) GTEST_SKIP() << why;
  auto fabric = CreateVerbsFabric({});
  ASSERT_TRUE(fabric.ok()) << fabric.error().message;
  std::vector<char> buf(1 << 20);
  auto mr = (*fabric)->RegisterMemory(buf.data(), buf.size(), kLocalWrite | kRemoteWrite);
  ASSERT_TRUE(mr.ok()) << mr.error().message;
  EXPECT_NE((*mr)->rkey(), 0u);
}

// S3-over-RDMA data path in loopback on one device: the server's DC initiators (verbs fabric)
// write into and read from the client's DC target (what the client library runs).
TEST(VerbsDevice, DcInitiatorReachesClientDcTarget) {
  if (auto why = NoDcDeviceReason(QueryDevices()); !why.empty()) GTEST_SKIP() << why;
  auto fabric = CreateVerbsFabric({});
  ASSERT_TRUE(fabric.ok()) << fabric.error().message;
  auto target = StartVerbsDcTarget({});
  ASSERT_TRUE(target.ok()) << target.error().message;
  auto ep = (*fabric)->Connect((*target)->address(), {"127.0.0.1"});
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  WriteThenReadBack(**fabric, **target, **ep, (2u << 20) + 3);
}

// Inter-node RC path over one device in loopback: RDMASTOR_HW_RC_IP names the IPv4 address of a
// local RDMA interface (RoCE or IPoIB) the target listens on.
TEST(VerbsRc, LoopbackWriteThenRead) {
  auto probe = ProbeDevices();
  if (!probe.available) GTEST_SKIP() << "no RDMA device on this host: " << probe.error;
  const char* ip = std::getenv("RDMASTOR_HW_RC_IP");
  if (!ip || !*ip) GTEST_SKIP() << "set RDMASTOR_HW_RC_IP to a local RDMA interface address";
  auto fabric = CreateVerbsRcFabric({});
  ASSERT_TRUE(fabric.ok()) << fabric.error().message;
  auto target = StartVerbsRcTarget(ip, {});
  ASSERT_TRUE(target.ok()) << target.error().message;
  auto ep = (*fabric)->Connect((*target)->address(), {ip});
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  WriteThenReadBack(**fabric, **target, **ep, (3u << 20) + 5);
}

}  // namespace
}  // namespace rdmastor::rdma
