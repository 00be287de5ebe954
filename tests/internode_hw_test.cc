// Inter-node keys bound to the authenticated peer on a real RDMA device (ctest label `hw`, issue 37
// item 9): the caller node's RC target, the serving nodes' RC fabrics, librdmacm and the kernel's
// protection-domain checks. Runs in the guest of rxe.hw_validate (`ctest -L hw` there); skips
// without a device or RDMASTOR_HW_RC_IP.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/internode_rdma.h"
#include "rdma/build_info.h"
#include "rdma/rc.h"
#include "rdma/token.h"

namespace rdmastor::cluster {
namespace {

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) ^ (i >> 11));
  return v;
}

std::unique_ptr<InternodeRdma> Node(const std::string& ip, const std::string& self,
                                    std::shared_ptr<const PeerAuth> auth) {
  InternodeRdmaSettings s;
  s.enabled = true;
  s.fabric = rdma::FabricKind::kVerbs;
  s.bind_ip = ip;
  s.auth = std::move(auth);
  s.self = self;
  s.max_buffers = 2;
  s.inflight_bytes = 8 << 20;
  s.transfer.timeout = std::chrono::milliseconds(3000);
  auto r = InternodeRdma::Create(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : nullptr;
}

// The rdma_cm event type a raw connect to the token's target with `data` as private data ends in
// (ESTABLISHED or REJECTED), or -1. A process that is no node of the cluster: it knows the
// target's address, port and endpoint id, and nothing else.
int RawConnect(const rdma::RdmaToken& t, const std::vector<uint8_t>& data) {
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return -1;
  auto next = [&]() {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev) != 0) return -1;
    int type = ev->event;
    rdma_ack_cm_event(ev);
    return type;
  };
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(t.lid);
  dst.sin_addr.s_addr = htonl(*rdma::GidToIpv4(t.gid));
  int result = -1;
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  rdma_conn_param cp{};
  cp.private_data = data.data();
  cp.private_data_len = static_cast<uint8_t>(data.size());
  cp.initiator_depth = 1;
  cp.retry_count = 7;
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 3000) == 0 &&
      next() == RDMA_CM_EVENT_ADDR_RESOLVED && rdma_resolve_route(id, 3000) == 0 &&
      next() == RDMA_CM_EVENT_ROUTE_RESOLVED && rdma_create_qp(id, nullptr, &qa) == 0 &&
      rdma_connect(id, &cp) == 0)
    result = next();
  if (result == RDMA_CM_EVENT_ESTABLISHED) rdma_disconnect(id);
  if (id->qp) rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return result;
}

TEST(InternodeVerbsRc, KeysAreBoundToTheAuthenticatedPeer) {
  auto probe = rdma::ProbeDevices();
  if (!probe.available) GTEST_SKIP() << "no RDMA device on this host: " << probe.error;
  const char* env = std::getenv("RDMASTOR_HW_RC_IP");
  if (!env || !*env) GTEST_SKIP() << "set RDMASTOR_HW_RC_IP to a local RDMA interface address";
  const std::string ip = env;
  auto key = std::make_shared<const PeerAuth>("minioadmin", "minioadmin");
  auto caller = Node(ip, "node-a:9000", key);
  auto b = Node(ip, "node-b:9000", key);
  auto c = Node(ip, "node-c:9000", key);
  ASSERT_TRUE(caller && b && c);
  ASSERT_TRUE(caller->available()) << caller->status().unavailable_reason;

  // The bound peer moves the bytes, both ways.
  auto shard = Pattern(1 << 20, 1);
  auto to_b = caller->Expose("node-b:9000", shard.data(), shard.size(), false);
  ASSERT_TRUE(to_b.ok()) << to_b.error().message;
  std::vector<char> landed(shard.size(), 'x');
  auto st = b->Pull("node-a:9000", to_b->token(), ip, landed.data(), landed.size());
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(landed, shard);

  // Another node of the cluster with node-b's token and address: a remote access error from the
  // device (its QP is in node-c's protection domain), not the bytes.
  auto mine = Pattern(4096, 2);
  auto to_c = caller->Expose("node-c:9000", mine.data(), mine.size(), false);
  ASSERT_TRUE(to_c.ok());
  std::vector<char> got(mine.size());
  st = c->Pull("node-a:9000", to_c->token(), ip, got.data(), got.size());
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(got, mine);
  std::vector<char> stolen(shard.size(), 'x');
  st = c->Pull("node-a:9000", to_b->token(), ip, stolen.data(), stolen.size());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("remote access error"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(stolen, std::vector<char>(shard.size(), 'x'));
  std::vector<char> into(1 << 20, 'G');
  auto recv_b = caller->Expose("node-b:9000", into.data(), into.size(), true);
  ASSERT_TRUE(recv_b.ok());
  auto junk = Pattern(1 << 20, 3);
  st = c->Push("node-a:9000", recv_b->token(), ip, junk.data(), junk.size());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("remote access error"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(into, std::vector<char>(1 << 20, 'G'));
  EXPECT_EQ(caller->connects_refused(), 0u);

  // A forged connect: the right address, port and endpoint id, no proof or a made-up one.
  auto t = *rdma::ParseToken(to_b->token());
  EXPECT_EQ(RawConnect(t, rdma::EncodeRcConnectData(t.qpn)), RDMA_CM_EVENT_REJECTED);
  std::vector<uint8_t> made_up(kConnectProofBytes, 0x5a);
  EXPECT_EQ(RawConnect(t, rdma::EncodeRcConnectData(t.qpn, made_up)), RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(caller->connects_refused(), 2u);
  // The bound peer still gets through after all that.
  st = b->Push("node-a:9000", recv_b->token(), ip, shard.data(), shard.size());
  ASSERT_TRUE(st.ok()) << st.error().message;
  recv_b->Answered();
  recv_b->CopyOut(shard.size());
  EXPECT_EQ(into, shard);
}

}  // namespace
}  // namespace rdmastor::cluster
