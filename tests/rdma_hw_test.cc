// Device tests (ctest label `hw`): need an RDMA NIC; skip with a message when none is present.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
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

// QPs this process holds, as the kernel lists them (`rdma -j resource show qp`); -1 when the
// rdma tool (iproute2) cannot say. The kernel names the thread that created a QP ("pid" is its
// id): the RC target's are created on its event thread, so every thread of this process counts.
int OwnQps() {
  std::set<long> tids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    tids.insert(std::strtol(e.path().filename().c_str(), nullptr, 10));
  FILE* f = popen("rdma -j resource show qp 2>/dev/null", "r");
  if (!f) return -1;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  if (pclose(f) != 0 || out.empty()) return -1;
  const std::string key = "\"pid\":";
  int count = 0;
  for (size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + 1))
    count += tids.count(std::strtol(out.c_str() + at + key.size(), nullptr, 10)) ? 1 : 0;
  return count;
}

// The type of the next event on ch (rdma_cm ends each step within its own timeouts), or -1.
int NextEventType(rdma_event_channel* ch) {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return -1;
  int type = ev->event;
  rdma_ack_cm_event(ev);
  return type;
}

// A peer that vanishes without a word (a crashed host, a cut link: no disconnect ever arrives)
// leaves a passive connection on the RC target; its keep-alive must find it and free the QP
// (issue 37, item 8). The peer here is a raw rdma_cm connection whose QP is destroyed while its
// id stays, so nothing tells the target.
TEST(VerbsRc, TargetFreesTheConnectionOfAPeerThatVanished) {
  auto probe = ProbeDevices();
  if (!probe.available) GTEST_SKIP() << "no RDMA device on this host: " << probe.error;
  const char* ip = std::getenv("RDMASTOR_HW_RC_IP");
  if (!ip || !*ip) GTEST_SKIP() << "set RDMASTOR_HW_RC_IP to a local RDMA interface address";
  const int baseline = OwnQps();
  if (baseline < 0) GTEST_SKIP() << "the rdma tool (iproute2) cannot list QPs here";
  auto target = StartVerbsRcTarget(ip, {});
  ASSERT_TRUE(target.ok()) << target.error().message;
  RemoteAddress addr = (*target)->address();

  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(addr.lid));
  ASSERT_EQ(inet_pton(AF_INET, ip, &dst.sin_addr), 1);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 5000), 0);
  ASSERT_EQ(NextEventType(ch), RDMA_CM_EVENT_ADDR_RESOLVED);
  ASSERT_EQ(rdma_resolve_route(id, 5000), 0);
  ASSERT_EQ(NextEventType(ch), RDMA_CM_EVENT_ROUTE_RESOLVED);
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  ASSERT_EQ(rdma_create_qp(id, nullptr, &qa), 0);
  auto data = EncodeRcConnectData(addr.qpn);
  rdma_conn_param cp{};
  cp.private_data = data.data();
  cp.private_data_len = static_cast<uint8_t>(data.size());
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  ASSERT_EQ(rdma_connect(id, &cp), 0);
  ASSERT_EQ(NextEventType(ch), RDMA_CM_EVENT_ESTABLISHED);
  EXPECT_EQ(OwnQps(), baseline + 2);  // this end's and the target's
  // A live peer acknowledges the keep-alives (zero-byte writes): two rounds keep it.
  std::this_thread::sleep_for(std::chrono::seconds(11));
  EXPECT_EQ(OwnQps(), baseline + 2) << "the keep-alive dropped a live connection";

  rdma_destroy_qp(id);  // the peer's QP is gone; no disconnect is sent
  int now = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((now = OwnQps()) > baseline && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(now, baseline) << "the target still holds the connection of a vanished peer";
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
}

}  // namespace
}  // namespace rdmastor::rdma
