// The verbs backend's decisions (rdma/verbs_plan.h), over made-up device facts: they run on both
// builds, with or without a device.
#include "rdma/verbs_plan.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace rdmastor::rdma {
namespace {

TEST(VerbsPlanTest, DmabufRegionIsAddressedByIovaNotByTheReportedOffset) {
  // ibv_reg_dmabuf_mr(pd, offset = 8192, length, iova = device pointer, fd, access): libibverbs
  // fills mr->addr with the offset.
  const uint64_t iova = 0x7f3a00200000;
  Registration reg{/*addr=*/8192, /*length=*/1 << 20, 0x11, 0x22};
  RegionSpan span = DmabufRegionSpan(reg, iova);
  EXPECT_EQ(span.addr, iova);
  EXPECT_EQ(span.length, 1u << 20);
  // Host memory is where ibv_reg_mr says.
  Registration host{0x5000, 4096, 1, 2};
  EXPECT_EQ(HostRegionSpan(host).addr, 0x5000u);
  EXPECT_EQ(HostRegionSpan(host).length, 4096u);
}

TEST(VerbsPlanTest, PathMtuIsClampedToThePortsActiveMtu) {
  // RoCE on a 1500-byte netdev: active MTU 1024.
  EXPECT_EQ(ClampPathMtu(PathMtu::k1024, PathMtu::k4096), PathMtu::k1024);
  EXPECT_EQ(ClampPathMtu(PathMtu::k2048, PathMtu::k4096), PathMtu::k2048);
  EXPECT_EQ(ClampPathMtu(PathMtu::k4096, PathMtu::k4096), PathMtu::k4096);
  EXPECT_EQ(ClampPathMtu(PathMtu::k4096, PathMtu::k1024), PathMtu::k1024);  // never raised
  EXPECT_EQ(ClampPathMtu(static_cast<PathMtu>(0), PathMtu::k4096), PathMtu::k4096);
  EXPECT_EQ(PathMtuBytes(PathMtu::k256), 256);
  EXPECT_EQ(PathMtuBytes(PathMtu::k4096), 4096);
}

TEST(VerbsPlanTest, CompletionVectorsGoRoundRobin) {
  std::vector<int> got;
  for (uint64_t n = 0; n < 6; ++n) got.push_back(CompletionVector(n, 4));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(CompletionVector(7, 0), 0);  // a device that reports no vectors
  EXPECT_EQ(CompletionVector(7, 1), 0);
}

// MINIO_RDMA_MTU_MAX: the cap OpenPort clamps the port's active MTU to.
TEST(VerbsPlanTest, PathMtuFromBytesTakesTheFiveSizes) {
  EXPECT_EQ(PathMtuFromBytes(256), PathMtu::k256);
  EXPECT_EQ(PathMtuFromBytes(1024), PathMtu::k1024);
  EXPECT_EQ(PathMtuFromBytes(4096), PathMtu::k4096);
  for (uint64_t bad : {0ull, 128ull, 1500ull, 9000ull, 8192ull})
    EXPECT_FALSE(PathMtuFromBytes(bad)) << bad;
  // A 4096-byte port capped at 1024 (clients on 1500-byte netdevs).
  EXPECT_EQ(ClampPathMtu(PathMtu::k4096, *PathMtuFromBytes(1024)), PathMtu::k1024);
}

PortInfo Port(int n, PortState state, std::string link = "InfiniBand", bool roce_v2 = true) {
  PortInfo p;
  p.port = n;
  p.state = state;
  p.link_layer = link;
  p.active_mtu = 4096;
  p.max_mtu = 4096;
  if (link == "InfiniBand") p.gids.push_back({0, "fe80::1", "IB", ""});
  if (link == "Ethernet") {
    p.gids.push_back({0, "fe80::1", "RoCE v1", "eth0"});
    if (roce_v2) p.gids.push_back({3, "::ffff:10.0.0.1", "RoCE v2", "eth0"});
  }
  return p;
}

DeviceInfo Dev(std::string name, bool dc, std::vector<PortInfo> ports) {
  return {std::move(name), std::move(ports), dc};
}

TEST(VerbsPlanTest, AutomaticSelectionTakesTheFirstDeviceWithAnActiveUsablePort) {
  std::vector<DeviceInfo> devs = {
      Dev("mlx5_0", true, {Port(1, PortState::kDown)}),
      Dev("mlx5_1", true, {Port(1, PortState::kActive, "Ethernet", /*roce_v2=*/false)}),  // no IP yet
      Dev("irdma0", false, {Port(1, PortState::kActive, "Ethernet")}),                    // not mlx5
      Dev("mlx5_2", true, {Port(1, PortState::kActive, "Ethernet")}),
      Dev("mlx5_3", true, {Port(1, PortState::kActive)}),
  };
  auto dc = SelectDevice(devs, "", 1, /*need_dc=*/true);
  ASSERT_TRUE(dc.ok()) << dc.error().message;
  EXPECT_EQ(dc->device, "mlx5_2");
  EXPECT_EQ(dc->port_info, &devs[3].ports[0]);
  // RC (rdma_cm) needs no mlx5: the first usable device whatever its vendor.
  auto rc = SelectDevice(devs, "", 1, /*need_dc=*/false);
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->device, "irdma0");
}

TEST(VerbsPlanTest, ANamedDeviceMustBeUsableAndIsNeverSubstituted) {
  std::vector<DeviceInfo> devs = {Dev("mlx5_0", true, {Port(1, PortState::kActive)}),
                                  Dev("mlx5_1", true, {Port(1, PortState::kDown), Port(2, PortState::kActive)})};
  auto down = SelectDevice(devs, "mlx5_1", 1, true);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(down.error().message.find("MINIO_RDMA_DEVICE=mlx5_1"), std::string::npos);
  EXPECT_NE(down.error().message.find("port 1 is down"), std::string::npos) << down.error().message;
  auto port2 = SelectDevice(devs, "mlx5_1", 2, true);
  ASSERT_TRUE(port2.ok());
  EXPECT_EQ(port2->device, "mlx5_1");
  EXPECT_EQ(port2->port, 2);
  auto missing = SelectDevice(devs, "mlx5_9", 1, true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  auto no_port = SelectDevice(devs, "mlx5_0", 2, true);
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.error().message.find("MINIO_RDMA_PORT"), std::string::npos);
}

TEST(VerbsPlanTest, NoUsableDeviceSaysWhyForEach) {
  auto none = SelectDevice({}, "", 1, true);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no RDMA device"), std::string::npos);
  std::vector<DeviceInfo> devs = {Dev("mlx5_0", true, {Port(1, PortState::kInit)}),
                                  Dev("rxe0", false, {Port(1, PortState::kActive, "Ethernet")})};
  auto dc = SelectDevice(devs, "", 1, true);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message.find("mlx5_0: port 1 is init"), std::string::npos)
      << dc.error().message;
  EXPECT_NE(dc.error().message.find("rxe0: not an mlx5 device"), std::string::npos);
}

TEST(VerbsPlanTest, InterNodeRcUsesTheDeviceOfTheNodesAddress) {
  // Two NICs: mlx5_0 (first, usable) on a client network, mlx5_1 on the cluster network the
  // node's address (and its RC target) is on. Connections must leave from mlx5_1.
  std::vector<DeviceInfo> devs = {Dev("mlx5_0", true, {Port(1, PortState::kActive, "Ethernet")}),
                                  Dev("mlx5_1", true, {Port(1, PortState::kActive, "Ethernet")}),
                                  Dev("mlx5_2", true, {Port(1, PortState::kDown, "Ethernet")})};
  auto bound = SelectRcDevice(devs, "", 1, "mlx5_1");
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  EXPECT_EQ(bound->pick.device, "mlx5_1");
  EXPECT_TRUE(bound->bind_source);
  // MINIO_RDMA_DEVICE lists it (multi-rail list): still that device.
  auto listed = SelectRcDevice(devs, "mlx5_0, mlx5_1", 1, "mlx5_1");
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->pick.device, "mlx5_1");
  // MINIO_RDMA_DEVICE names another device: refused (its target could not listen there either).
  auto other = SelectRcDevice(devs, "mlx5_0", 1, "mlx5_1");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("mlx5_1"), std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find("MINIO_RDMA_DEVICE=mlx5_0"), std::string::npos);
  // The address's device has its port down: refused naming it, never another device.
  auto down = SelectRcDevice(devs, "", 1, "mlx5_2");
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message.find("mlx5_2, whose port 1 is down"), std::string::npos)
      << down.error().message;
  EXPECT_FALSE(SelectRcDevice(devs, "", 2, "mlx5_1").ok());  // no port 2
  EXPECT_FALSE(SelectRcDevice(devs, "", 1, "mlx5_9").ok());  // not listed
  // The address is no RDMA interface's (or loopback): the first usable device, route unpinned.
  auto unbound = SelectRcDevice(devs, "", 1, "");
  ASSERT_TRUE(unbound.ok());
  EXPECT_EQ(unbound->pick.device, "mlx5_0");
  EXPECT_FALSE(unbound->bind_source);
  auto named = SelectRcDevice(devs, "mlx5_1", 1, "");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->pick.device, "mlx5_1");
  EXPECT_FALSE(named->bind_source);
  // DeviceAllowed: the RC target's check of the device its address is on.
  EXPECT_TRUE(DeviceAllowed("", "mlx5_3"));
  EXPECT_TRUE(DeviceAllowed("mlx5_0,mlx5_1", "mlx5_1"));
  EXPECT_FALSE(DeviceAllowed("mlx5_0,mlx5_1", "mlx5_10"));
  EXPECT_FALSE(DeviceAllowed("mlx5_0", "mlx5_1"));
}

TEST(VerbsPlanTest, QueuesAreClampedToDeviceLimitsAndCqsHoldWhatCanBeOutstanding) {
  // MINIO_RDMA_CQ_DEPTH=65536 on a ConnectX (max_qp_wr 32768, max_cqe 4194303): the RC QP.
  auto rc = ClampQueues(65536, 0, 1, {32768, 4194303});
  EXPECT_EQ(rc.send_wr, 32768u);
  EXPECT_EQ(rc.cqe, 32769);
  // A DCI needs no more than 1024 send requests.
  auto dci = ClampQueues(65536, 1024, 0, {32768, 4194303});
  EXPECT_EQ(dci.send_wr, 1024u);
  EXPECT_EQ(dci.cqe, 1024);
  // A small device: the CQ limit bounds the send queue too.
  auto small = ClampQueues(4096, 0, 1, {16384, 2048});
  EXPECT_EQ(small.cqe, 2048);
  EXPECT_EQ(small.send_wr, 2047u);
  // Unknown limits: what was asked.
  auto unknown = ClampQueues(1024, 0, 1, {});
  EXPECT_EQ(unknown.send_wr, 1024u);
  EXPECT_EQ(unknown.cqe, 1025);
}

TEST(VerbsPlanTest, GidTableQueryHasRoomForEveryPortsEntries) {
  // A dual-port ConnectX: 255 entries per port; the query fills both ports' entries.
  EXPECT_EQ(GidTableEntries({255, 255}), 510u);
  EXPECT_EQ(GidTableEntries({128, 0, 16}), 144u);
  EXPECT_EQ(GidTableEntries({}), 1u);
  EXPECT_EQ(GidTableEntries({-1}), 1u);
}

TEST(VerbsPlanTest, RegistrationEnomemNamesTheMemlockLimit) {
  std::string hint = RegistrationHint(ENOMEM);
  EXPECT_NE(hint.find("LimitMEMLOCK"), std::string::npos);
  EXPECT_NE(hint.find("ulimit -l"), std::string::npos);
  EXPECT_EQ(RegistrationHint(EINVAL), "");
  EXPECT_EQ(RegistrationHint(EFAULT), "");
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

TEST(VerbsPlanTest, DciIsHeldOnlyWhileRequestsAreInFlight) {
  // Posted, nothing polled yet: keep.
  EXPECT_EQ(DciAfterPoll({/*signaled=*/1, /*tail=*/0, false}, false), DciDisposition::kKeep);
  // Everything signalled completed and nothing unsignalled after the last: back to the pool
  // (between transfer pieces, across a drive read).
  EXPECT_EQ(DciAfterPoll({0, 0, false}, false), DciDisposition::kReturn);
  // Unsignalled requests after the last signalled one may still be in flight.
  EXPECT_EQ(DciAfterPoll({0, 3, false}, false), DciDisposition::kKeep);
  // Closing with those: their success would leave no completion; the DCI is replaced.
  EXPECT_EQ(DciAfterPoll({0, 3, false}, true), DciDisposition::kReplace);
  EXPECT_EQ(DciAfterPoll({2, 0, false}, true), DciDisposition::kReplace);
  EXPECT_EQ(DciAfterPoll({0, 0, false}, true), DciDisposition::kReturn);
  // An error completion puts the QP in the error state: never reused.
  EXPECT_EQ(DciAfterPoll({0, 0, true}, false), DciDisposition::kReplace);
  EXPECT_EQ(DciAfterPoll({5, 1, true}, false), DciDisposition::kReplace);
}

TEST(VerbsPlanTest, DciPoolRefillsAfterAFailedReplacementWithBackoff) {
  using namespace std::chrono_literals;
  DciPoolLedger pool(64);
  auto t0 = DciPoolLedger::Clock::now();
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(pool.ReserveCreate(t0));
    pool.Created();
  }
  EXPECT_EQ(pool.live(), 64);
  EXPECT_FALSE(pool.ReserveCreate(t0));  // full: never more than the target
  // A DCI fails; its replacement cannot be created (device busy): the pool is one short...
  pool.Destroyed();
  EXPECT_EQ(pool.missing(), 1);
  ASSERT_TRUE(pool.ReserveCreate(t0));
  EXPECT_FALSE(pool.ReserveCreate(t0));  // one creation per hole at a time
  pool.CreateFailed(t0);
  EXPECT_EQ(pool.live(), 63);
  // ...not for good: after the backoff a later acquire fills it again.
  EXPECT_FALSE(pool.ReserveCreate(t0 + 50ms));
  EXPECT_TRUE(pool.ReserveCreate(t0 + 100ms));
  pool.CreateFailed(t0 + 100ms);  // fails again: the wait doubles
  EXPECT_FALSE(pool.ReserveCreate(t0 + 250ms));
  EXPECT_TRUE(pool.ReserveCreate(t0 + 300ms));
  pool.Created();
  EXPECT_EQ(pool.live(), 64);
  EXPECT_EQ(pool.missing(), 0);
  // The backoff is reset by a success and capped at 5 s.
  pool.Destroyed();
  auto t = t0 + 1s;
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(pool.ReserveCreate(t)) << i;
    pool.CreateFailed(t);
    EXPECT_LE(pool.next_try() - t, 5000ms);
    t = pool.next_try();
  }
  ASSERT_TRUE(pool.ReserveCreate(t));
  pool.CreateFailed(t);
  EXPECT_EQ(pool.next_try() - t, 5000ms);
  ASSERT_TRUE(pool.ReserveCreate(pool.next_try()));
  pool.Created();
  pool.Destroyed();
  ASSERT_TRUE(pool.ReserveCreate(pool.next_try()));
  pool.CreateFailed(t);
  EXPECT_EQ(pool.next_try() - t, 100ms);
}

TEST(VerbsPlanTest, DciPoolTargetIsAtLeastOne) {
  DciPoolLedger pool(0);
  EXPECT_EQ(pool.target(), 1);
  EXPECT_TRUE(pool.ReserveCreate(DciPoolLedger::Clock::now()));
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

TEST(VerbsPlanTest, CompletionWaitSpinsThenSleepsThenGivesUp) {
  using us = std::chrono::microseconds;
  EXPECT_EQ(NextWaitStep(us(0), us(50), us(100000)), WaitStep::kPoll);
  EXPECT_EQ(NextWaitStep(us(49), us(50), us(100000)), WaitStep::kPoll);
  EXPECT_EQ(NextWaitStep(us(50), us(50), us(100000)), WaitStep::kSleep);
  EXPECT_EQ(NextWaitStep(us(99999), us(50), us(100000)), WaitStep::kSleep);
  EXPECT_EQ(NextWaitStep(us(100000), us(50), us(100000)), WaitStep::kGiveUp);
  // A zero wait polls nothing more than once (the caller's first poll).
  EXPECT_EQ(NextWaitStep(us(0), us(50), us(0)), WaitStep::kGiveUp);
  // No spin: straight to the completion channel.
  EXPECT_EQ(NextWaitStep(us(0), us(0), us(10)), WaitStep::kSleep);
}

TEST(VerbsPlanTest, AddressHandleKeys) {
  std::array<uint8_t, 16> a{}, b{};
  a[15] = 1;
  b[15] = 2;
  EXPECT_EQ(AhKeyFor(true, a, 0), AhKeyFor(true, a, 0));
  EXPECT_NE(AhKeyFor(true, a, 0), AhKeyFor(true, b, 0));
  EXPECT_NE(AhKeyFor(true, a, 3), AhKeyFor(true, a, 4));  // IB: DLID routes inside the subnet
  EXPECT_NE(AhKeyFor(true, a, 3), AhKeyFor(false, a, 3));
  // Without has_gid the GID bytes are not part of the handle.
  EXPECT_EQ(AhKeyFor(false, a, 7), AhKeyFor(false, b, 7));
  EXPECT_NE(AhKeyFor(false, a, 7), AhKeyFor(false, a, 8));
}

TEST(VerbsPlanTest, BoundedLruEvictsTheLeastRecentlyUsed) {
  BoundedLru<int, std::string> cache(3);
  EXPECT_EQ(cache.Put(1, std::make_shared<std::string>("one")), 0u);
  EXPECT_EQ(cache.Put(2, std::make_shared<std::string>("two")), 0u);
  EXPECT_EQ(cache.Put(3, std::make_shared<std::string>("three")), 0u);
  ASSERT_NE(cache.Find(1), nullptr);  // 1 is now the most recent; 2 the least
  auto held = cache.Find(2);
  ASSERT_NE(held, nullptr);
  ASSERT_NE(cache.Find(1), nullptr);  // order: 1, 2, 3 -> 3 least recent
  EXPECT_EQ(cache.Put(4, std::make_shared<std::string>("four")), 1u);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Find(3), nullptr);
  EXPECT_NE(cache.Find(4), nullptr);
  // Replacing a key neither grows nor evicts.
  EXPECT_EQ(cache.Put(4, std::make_shared<std::string>("FOUR")), 0u);
  EXPECT_EQ(*cache.Find(4), "FOUR");
  EXPECT_EQ(cache.size(), 3u);
  // An evicted value stays alive while someone holds it (an endpoint using the handle).
  cache.Put(5, std::make_shared<std::string>("five"));
  cache.Put(6, std::make_shared<std::string>("six"));
  cache.Put(7, std::make_shared<std::string>("seven"));
  EXPECT_EQ(cache.Find(2), nullptr);
  EXPECT_EQ(*held, "two");
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
  BoundedLru<int, int> one(0);  // capacity at least 1
  one.Put(1, std::make_shared<int>(1));
  EXPECT_EQ(one.size(), 1u);
}

TEST(VerbsPlanTest, RelaxedOrderingIsDroppedOnlyWhenItWasTheProblem) {
  EXPECT_TRUE(RetryWithoutRelaxedOrdering(true, EINVAL));
  EXPECT_TRUE(RetryWithoutRelaxedOrdering(true, EOPNOTSUPP));
  EXPECT_FALSE(RetryWithoutRelaxedOrdering(true, ENOMEM));  // memlock: the hint, not a retry
  EXPECT_FALSE(RetryWithoutRelaxedOrdering(false, EINVAL));
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

TEST(VerbsPlanTest, AsyncEventsDriveTheFabricState) {
  const FabricState ready;
  // Our port goes down: degraded (501 meanwhile), logged as an error.
  auto down = OnAsyncEvent(AsyncEvent::kPortError, 1, 1, ready);
  EXPECT_EQ(down.next.health, FabricHealth::kDegraded);
  EXPECT_NE(down.next.reason.find("port 1"), std::string::npos);
  EXPECT_TRUE(down.log_error);
  EXPECT_FALSE(down.reopen);
  // Another port of the same device: nothing changes.
  auto other = OnAsyncEvent(AsyncEvent::kPortError, 2, 1, ready);
  EXPECT_EQ(other.next.health, FabricHealth::kReady);
  EXPECT_FALSE(other.requery_port);
  // It comes back: ready again, and the port is read again (GID, MTU may differ).
  auto up = OnAsyncEvent(AsyncEvent::kPortActive, 1, 1, down.next);
  EXPECT_EQ(up.next.health, FabricHealth::kReady);
  EXPECT_EQ(up.next.reason, "");
  EXPECT_TRUE(up.requery_port);
  // A GID change (an address added/removed on the netdev) re-reads the port, health unchanged.
  auto gid = OnAsyncEvent(AsyncEvent::kGidChange, 1, 1, ready);
  EXPECT_EQ(gid.next.health, FabricHealth::kReady);
  EXPECT_TRUE(gid.requery_port);
  EXPECT_FALSE(OnAsyncEvent(AsyncEvent::kGidChange, 2, 1, ready).requery_port);
  EXPECT_TRUE(OnAsyncEvent(AsyncEvent::kLidChange, 1, 1, ready).requery_port);
  // A fatal device error: down and reopen, whatever the port.
  auto fatal = OnAsyncEvent(AsyncEvent::kDeviceFatal, 0, 1, ready);
  EXPECT_EQ(fatal.next.health, FabricHealth::kDown);
  EXPECT_TRUE(fatal.reopen);
  // While down, port events do not bring it back: only a reopen does.
  auto still = OnAsyncEvent(AsyncEvent::kPortActive, 1, 1, fatal.next);
  EXPECT_EQ(still.next.health, FabricHealth::kDown);
  EXPECT_EQ(OnAsyncEvent(AsyncEvent::kPortError, 1, 1, fatal.next).next.health,
            FabricHealth::kDown);
  // One QP in error: logged, the fabric stays ready (the DCI is replaced by its owner).
  auto qp = OnAsyncEvent(AsyncEvent::kQueueError, 0, 1, ready);
  EXPECT_EQ(qp.next.health, FabricHealth::kReady);
  EXPECT_TRUE(qp.log_error);
  EXPECT_EQ(OnAsyncEvent(AsyncEvent::kOther, 1, 1, down.next).next.health, FabricHealth::kDegraded);
  EXPECT_EQ(FabricHealthName(FabricHealth::kDegraded), "degraded");
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

std::array<uint8_t, 16> V4Gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

TEST(VerbsPlanTest, OriginCheckOnRoceV2Tokens) {
  const std::vector<soft::Cidr> none;
  // The requester's own address (plain or IPv4-mapped as the HTTP layer may report it).
  EXPECT_EQ(VerbsOriginRefusal(true, V4Gid(10, 0, 0, 7), "10.0.0.7", none, true), "");
  EXPECT_EQ(VerbsOriginRefusal(true, V4Gid(10, 0, 0, 7), "::ffff:10.0.0.7", none, true), "");
  // Another host: refused, naming both and the setting.
  auto why = VerbsOriginRefusal(true, V4Gid(10, 0, 0, 9), "10.0.0.7", none, true);
  EXPECT_NE(why.find("10.0.0.9"), std::string::npos) << why;
  EXPECT_NE(why.find("10.0.0.7"), std::string::npos) << why;
  EXPECT_NE(why.find("MINIO_RDMA_ALLOW"), std::string::npos) << why;
  // An IPv6 requester cannot own an IPv4 GID.
  EXPECT_NE(VerbsOriginRefusal(true, V4Gid(10, 0, 0, 9), "2001:db8::1", none, true), "");
  // An allowed network (the data network when HTTP arrives over another NIC).
  auto allow = soft::ParseCidrList("192.168.50.0/24");
  ASSERT_TRUE(allow.ok());
  EXPECT_EQ(VerbsOriginRefusal(true, V4Gid(192, 168, 50, 3), "10.0.0.7", *allow, true), "");
  EXPECT_NE(VerbsOriginRefusal(true, V4Gid(192, 168, 51, 3), "10.0.0.7", *allow, true), "");
  // Not decidable: InfiniBand GID (link-local prefix + GUID), LID-only token: allowed.
  std::array<uint8_t, 16> ib{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0c, 0x42, 0xa1, 3, 0, 0x5e, 0x11, 2};
  EXPECT_EQ(VerbsOriginRefusal(true, ib, "10.0.0.7", none, true), "");
  EXPECT_EQ(VerbsOriginRefusal(false, V4Gid(10, 0, 0, 9), "10.0.0.7", none, true), "");
  // MINIO_RDMA_ALLOW=any: off.
  EXPECT_EQ(VerbsOriginRefusal(true, V4Gid(10, 0, 0, 9), "10.0.0.7", none, false), "");
}

TEST(VerbsPlanTest, OriginRefusalIsADeclineNotAccessDenied) {
  // Issue 37 item 1: behind an L4 load balancer the requester's address is the balancer's, so
  // honest clients fail the check too; they fall back to TCP on 501 only, never on 403.
  const std::vector<soft::Cidr> none;
  EXPECT_TRUE(VerbsOriginCheck(true, V4Gid(10, 0, 0, 7), "10.0.0.7", none, true).ok());
  auto st = VerbsOriginCheck(true, V4Gid(10, 0, 0, 9), "10.0.0.7", none, true);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(st.error().message.find("MINIO_RDMA_ALLOW"), std::string::npos);
  EXPECT_TRUE(IsOriginDecline(st.error()));
  EXPECT_FALSE(IsOriginDecline(MakeError(ErrorCode::kRDMANotSupported, "no device")));
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

DeviceInfo RoceDevice(std::string name, PortState state, bool dc = true) {
  DeviceInfo d;
  d.name = std::move(name);
  d.dc_capable = dc;
  PortInfo p;
  p.port = 1;
  p.state = state;
  p.link_layer = "Ethernet";
  p.gids = {{3, "::ffff:10.0.0.1", "RoCE v2", "eth0"}};
  d.ports = {p};
  return d;
}

TEST(VerbsPlanTest, DeviceListsAndRails) {
  EXPECT_EQ(SplitDeviceList("mlx5_0, mlx5_1,,mlx5_2 "),
            (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2"}));
  EXPECT_TRUE(SplitDeviceList("").empty());
  std::vector<DeviceInfo> devs = {RoceDevice("mlx5_0", PortState::kActive), RoceDevice("mlx5_1", PortState::kDown),
                                  RoceDevice("mlx5_2", PortState::kActive),
                                  RoceDevice("rxe0", PortState::kActive, /*dc=*/false)};
  // Unset: every usable DC device.
  auto all = SelectRails(devs, "", 1, true);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].device, "mlx5_0");
  EXPECT_EQ((*all)[1].device, "mlx5_2");
  // Listed: each must be usable; duplicates collapse.
  auto listed = SelectRails(devs, "mlx5_2,mlx5_0,mlx5_2", 1, true);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].device, "mlx5_2");
  auto down = SelectRails(devs, "mlx5_0,mlx5_1", 1, true);
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message.find("mlx5_1"), std::string::npos);
  EXPECT_FALSE(SelectRails({RoceDevice("mlx5_0", PortState::kDown)}, "", 1, true).ok());
}

std::array<uint8_t, 16> Gid4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

TEST(VerbsPlanTest, RailChosenByTheTokensSubnetThenTheArrivalInterface) {
  std::vector<Rail> rails = {
      {"mlx5_0", {{Ip(10, 0, 0, 1), 24}}},
      {"mlx5_1", {{Ip(10, 0, 1, 1), 24}, {Ip(172, 16, 0, 1), 16}}},
      {"mlx5_2", {{Ip(10, 0, 1, 129), 25}}},  // a narrower subnet inside mlx5_1's
  };
  std::array<uint8_t, 16> none{};
  EXPECT_EQ(SelectRail(rails, true, Gid4(10, 0, 0, 77), ""), 0u);
  EXPECT_EQ(SelectRail(rails, true, Gid4(10, 0, 1, 7), ""), 1u);
  EXPECT_EQ(SelectRail(rails, true, Gid4(172, 16, 9, 9), ""), 1u);
  EXPECT_EQ(SelectRail(rails, true, Gid4(10, 0, 1, 200), ""), 2u);  // longest prefix wins
  // No subnet matches (routed RoCE): the interface the HTTP request arrived on.
  EXPECT_EQ(SelectRail(rails, true, Gid4(192, 168, 3, 3), "10.0.1.129"), 2u);
  EXPECT_EQ(SelectRail(rails, true, Gid4(192, 168, 3, 3), "::ffff:172.16.0.1"), 1u);
  // InfiniBand GID / LID-only token: the arrival interface, else rail 0.
  EXPECT_EQ(SelectRail(rails, false, none, "10.0.1.1"), 1u);
  EXPECT_EQ(SelectRail(rails, false, none, "192.168.0.1"), 0u);
  EXPECT_EQ(SelectRail(rails, false, none, ""), 0u);
  EXPECT_EQ(SelectRail({}, true, Gid4(10, 0, 0, 1), ""), 0u);
}

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

TEST(VerbsPlanTest, LooksAtTheDeviceDriveTheRcFabricState) {
  const FabricState ready;
  // The port goes down and comes back: degraded, then ready.
  DeviceObservation down;
  down.port_active = false;
  auto degraded = ObserveDevice(down, 1, ready);
  EXPECT_EQ(degraded.health, FabricHealth::kDegraded);
  EXPECT_NE(degraded.reason.find("port 1 is down"), std::string::npos);
  EXPECT_EQ(ObserveDevice({}, 1, degraded).health, FabricHealth::kReady);
  // Removed (rdma link delete): down, from ready or degraded, and it stays down whatever is seen
  // after (the fabric is replaced, never revived).
  DeviceObservation removed;
  removed.removed = true;
  auto gone = ObserveDevice(removed, 1, degraded);
  EXPECT_EQ(gone.health, FabricHealth::kDown);
  EXPECT_NE(gone.reason.find("removed"), std::string::npos);
  EXPECT_EQ(ObserveDevice({}, 1, gone).health, FabricHealth::kDown);
  EXPECT_EQ(ObserveDevice(down, 1, gone).reason, gone.reason);
  // A port query that fails: the context is dead.
  DeviceObservation failed;
  failed.query_failed = true;
  EXPECT_EQ(ObserveDevice(failed, 1, ready).health, FabricHealth::kDown);
}

TEST(VerbsPlanTest, ReopenAttemptsBackOffToACap) {
  using std::chrono::milliseconds;
  ReopenBackoff b(milliseconds(250), milliseconds(4000));
  std::vector<int64_t> seen;
  for (int i = 0; i < 8; ++i) seen.push_back(b.Next().count());
  EXPECT_EQ(seen, (std::vector<int64_t>{250, 500, 1000, 2000, 4000, 4000, 4000, 4000}));
  b.Reset();
  EXPECT_EQ(b.Next().count(), 250);
}

}  // namespace
}  // namespace rdmastor::rdma
