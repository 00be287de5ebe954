// The RC connection table (rdma/rc_sessions.h): admission limits, the checks that tie a request
// to its connection, one transfer at a time, and closing idle, dead and dirty connections.
#include "rdma/rc_sessions.h"

#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "rdma/token.h"

namespace rdmastor::rdma {
namespace {

// A backend endpoint that completes what it is told to (the table only needs its completion
// stream and Alive()).
struct ScriptedEndpoint : Endpoint {
  std::deque<Completion> pending;
  bool alive = true;
  bool* destroyed = nullptr;
  ~ScriptedEndpoint() override {
    if (destroyed) *destroyed = true;
  }
  Status PostSend(const WorkRequest& wr) override {
    if (wr.signaled) pending.push_back({wr.wr_id, WcStatus::kSuccess, wr.opcode, wr.length});
    return {};
  }
  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds) override {
    int n = 0;
    while (n < max && !pending.empty()) {
      out[n++] = pending.front();
      pending.pop_front();
    }
    return n;
  }
  bool Alive() override { return alive; }
};

constexpr uint32_t kClientIp = 0x7f000002;  // 127.0.0.2
RcPeer Peer(uint32_t ip = kClientIp, uint32_t qpn = 0x1234) { return {ip, qpn, Ipv4ToGid(ip)}; }
RemoteAddress TokenAddr(uint32_t ip = kClientIp, uint32_t qpn = 0x1234) {
  RemoteAddress a;
  a.qpn = qpn;
  a.has_gid = true;
  a.gid = Ipv4ToGid(ip);
  return a;
}
RequestOrigin From(std::string ip = "127.0.0.2") { return RequestOrigin{std::move(ip)}; }

TEST(RcConnectionId, StrictSixteenLowerHexDigitsNotZero) {
  auto id = ParseRcConnectionId("00000000deadbeef");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 0xdeadbeefu);
  EXPECT_EQ(FormatRcConnectionId(*id), "00000000deadbeef");
  for (const char* bad : {"", "deadbeef", "00000000DEADBEEF", "0000000000000000",
                          "00000000deadbeef0", "00000000deadbeeg", " 0000000deadbeef"}) {
    auto r = ParseRcConnectionId(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidRDMAToken) << bad;
  }
}

TEST(RcSessions, CapsConnectionsPerSourceAndInTotal) {
  RcLimits limits;
  limits.per_source = 2;
  limits.total = 3;
  RcSessions table(limits);
  auto a = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  auto b = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_NE(*a, 0u);
  EXPECT_FALSE(table.CanAdmit(kClientIp).ok());
  bool destroyed = false;
  auto ep = std::make_unique<ScriptedEndpoint>();
  ep->destroyed = &destroyed;
  auto c = table.Admit(Peer(), std::move(ep));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kSlowDown);
  EXPECT_NE(c.error().message.find("RDMASTOR_RDMA_RC_PER_SOURCE"), std::string::npos);
  EXPECT_TRUE(destroyed) << "a refused connection keeps nothing";
  // Another source still gets one, until the total is reached.
  ASSERT_TRUE(table.Admit(Peer(0x7f000003), std::make_unique<ScriptedEndpoint>()).ok());
  auto d = table.Admit(Peer(0x7f000004), std::make_unique<ScriptedEndpoint>());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("RDMASTOR_RDMA_RC_MAX"), std::string::npos);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.CountFrom(kClientIp), 2u);
  EXPECT_EQ(table.stats().refused, 3u);  // one CanAdmit, two Admit
}

TEST(RcSessions, RefusesUnknownConnectionForeignSourceForeignTokenAndOtherPrincipal) {
  RcLimits limits;
  limits.allow = *soft::ParseCidrList("10.9.0.0/16");
  RcSessions table(limits);
  auto id = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  ASSERT_TRUE(id.ok());

  auto unknown = table.Lend(*id ^ 1, TokenAddr(), From(), "ak");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(unknown.error().message.find("connect again"), std::string::npos);

  auto other_host = table.Lend(*id, TokenAddr(), From("127.0.0.9"), "ak");
  ASSERT_FALSE(other_host.ok());
  EXPECT_EQ(other_host.error().code, ErrorCode::kAccessDenied);

  auto other_qp = table.Lend(*id, TokenAddr(kClientIp, 0x999), From(), "ak");
  ASSERT_FALSE(other_qp.ok());
  EXPECT_EQ(other_qp.error().code, ErrorCode::kAccessDenied);
  auto other_gid = table.Lend(*id, TokenAddr(0x7f000009), From(), "ak");
  ASSERT_FALSE(other_gid.ok());
  EXPECT_EQ(other_gid.error().code, ErrorCode::kAccessDenied);
  RemoteAddress no_gid = TokenAddr();
  no_gid.has_gid = false;
  EXPECT_FALSE(table.Lend(*id, no_gid, From(), "ak").ok());
  EXPECT_EQ(table.stats().foreign, 4u);

  // The first use pins the access key; the IPv4-mapped form of the source is the same source; a
  // network in the allow list may use it too.
  ASSERT_TRUE(table.Lend(*id, TokenAddr(), From("::ffff:127.0.0.2"), "ak").ok());
  auto other_key = table.Lend(*id, TokenAddr(), From(), "someone-else");
  ASSERT_FALSE(other_key.ok());
  EXPECT_EQ(other_key.error().code, ErrorCode::kAccessDenied);
  EXPECT_TRUE(table.Lend(*id, TokenAddr(), From("10.9.3.4"), "ak").ok());
}

TEST(RcSessions, OneTransferAtATimeThenSlowDown) {
  RcLimits limits;
  limits.lend_wait = std::chrono::milliseconds(50);
  RcSessions table(limits);
  auto id = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  auto first = table.Lend(*id, TokenAddr(), From(), "ak");
  ASSERT_TRUE(first.ok());
  auto second = table.Lend(*id, TokenAddr(), From(), "ak");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kSlowDown);
  first->reset();  // given back clean (nothing posted)
  EXPECT_TRUE(table.Lend(*id, TokenAddr(), From(), "ak").ok());
  EXPECT_EQ(table.size(), 1u);
}

// A client may send its first request before the listener has seen its handshake end (rdma_cm
// delivers ESTABLISHED to both sides at about the same time): a request naming a connection the
// listener accepted waits for its admission instead of failing with "not open"; one the
// listener forgot (never established) fails at once.
TEST(RcSessions, ARequestWaitsForAConnectionAcceptedButNotYetAdmitted) {
  RcSessions table(RcLimits{});
  const uint64_t id = RcSessions::NewId();
  table.Expect(id);
  std::thread listener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(table.Admit(Peer(), std::make_unique<ScriptedEndpoint>(), id).ok());
  });
  auto lent = table.Lend(id, TokenAddr(), From(), "ak");
  listener.join();
  ASSERT_TRUE(lent.ok()) << lent.error().message;

  const uint64_t never = RcSessions::NewId();
  table.Expect(never);
  std::thread forget([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    table.Forget(never);
  });
  auto start = std::chrono::steady_clock::now();
  auto refused = table.Lend(never, TokenAddr(), From(), "ak");
  forget.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_LT(std::chrono::steady_clock::now() - start, RcLimits{}.lend_wait);  // not the full wait
  EXPECT_FALSE(table.Lend(RcSessions::NewId(), TokenAddr(), From(), "ak").ok());  // unknown
}

WorkRequest Wr(uint64_t id, bool signaled) {
  WorkRequest wr;
  wr.wr_id = id;
  wr.signaled = signaled;
  return wr;
}

TEST(RcSessions, AConnectionStaysOnlyWhenItsTransferEndedClean) {
  RcSessions table(RcLimits{});
  auto id = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  {
    // Every posted request completed (the last signaled one covers those before it).
    auto ep = table.Lend(*id, TokenAddr(), From(), "ak");
    ASSERT_TRUE(ep.ok());
    ASSERT_TRUE((*ep)->PostSend(Wr(1, false)).ok());
    ASSERT_TRUE((*ep)->PostSend(Wr(2, true)).ok());
    Completion c[4];
    auto n = (*ep)->PollCompletions(c, 4, std::chrono::milliseconds(0));
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1);
  }
  EXPECT_EQ(table.size(), 1u);
  {
    // A request gave up with work requests in flight: the QP may still touch memory, so the
    // connection is closed rather than lent to the next request.
    auto ep = table.Lend(*id, TokenAddr(), From(), "ak");
    ASSERT_TRUE(ep.ok());
    ASSERT_TRUE((*ep)->PostSend(Wr(1, true)).ok());
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.stats().closed_dirty, 1u);
  auto gone = table.Lend(*id, TokenAddr(), From(), "ak");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kRDMANotSupported);
}

TEST(RcSessions, CloseAllFreesIdleConnectionsNowAndLentOnesWhenGivenBack) {
  RcSessions table(RcLimits{});
  bool idle_gone = false, lent_gone = false;
  auto idle_ep = std::make_unique<ScriptedEndpoint>();
  idle_ep->destroyed = &idle_gone;
  auto lent_ep = std::make_unique<ScriptedEndpoint>();
  lent_ep->destroyed = &lent_gone;
  auto idle = table.Admit(Peer(), std::move(idle_ep));
  auto lent = table.Admit(Peer(0x7f000003, 0x99), std::move(lent_ep));
  ASSERT_TRUE(idle.ok() && lent.ok());
  auto ep = table.Lend(*lent, TokenAddr(0x7f000003, 0x99), From("127.0.0.3"), "ak");
  ASSERT_TRUE(ep.ok());
  // The device went away: both leave the table; the idle one's QP is freed at once, the lent
  // one's when its transfer ends (it may still have work requests on the wire).
  EXPECT_EQ(table.CloseAll(), 2u);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(idle_gone);
  EXPECT_FALSE(lent_gone);
  ep->reset();
  EXPECT_TRUE(lent_gone);
  // A client naming either is told to connect again.
  auto again = table.Lend(*idle, TokenAddr(), From(), "ak");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("connect again"), std::string::npos);
}

TEST(RcSessions, AnErrorCompletionClosesTheConnection) {
  RcSessions table(RcLimits{});
  auto raw = std::make_unique<ScriptedEndpoint>();
  raw->pending.push_back({1, WcStatus::kRemoteAccessError, Opcode::kWrite, 0});
  auto id = table.Admit(Peer(), std::move(raw));
  {
    auto ep = table.Lend(*id, TokenAddr(), From(), "ak");
    ASSERT_TRUE(ep.ok());
    Completion c[1];
    ASSERT_TRUE((*ep)->PollCompletions(c, 1, std::chrono::milliseconds(0)).ok());
    EXPECT_FALSE((*ep)->Alive());
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST(RcSessions, ReapsIdleAndDeadConnectionsButNotLentOnes) {
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  RcLimits limits;
  limits.idle = std::chrono::seconds(60);
  RcSessions table(limits, [&] { return now; });
  auto idle = table.Admit(Peer(), std::make_unique<ScriptedEndpoint>());
  auto dead_raw = std::make_unique<ScriptedEndpoint>();
  ScriptedEndpoint* dead = dead_raw.get();
  bool dead_destroyed = false;
  dead->destroyed = &dead_destroyed;
  ASSERT_TRUE(table.Admit(Peer(), std::move(dead_raw)).ok());
  auto busy = table.Admit(Peer(0x7f000003, 7), std::make_unique<ScriptedEndpoint>());
  auto lent = table.Lend(*busy, TokenAddr(0x7f000003, 7), From("127.0.0.3"), "ak");
  ASSERT_TRUE(lent.ok());

  EXPECT_EQ(table.Reap(), 0u);
  dead->alive = false;  // its peer went away
  EXPECT_EQ(table.Reap(), 1u);
  EXPECT_TRUE(dead_destroyed) << "the endpoint (QP) is freed when its client dies";
  now += std::chrono::seconds(61);
  EXPECT_EQ(table.Reap(), 1u);  // the idle one; the lent one is in use
  EXPECT_EQ(table.size(), 1u);
  auto gone = table.Lend(*idle, TokenAddr(), From(), "ak");
  EXPECT_FALSE(gone.ok());
  auto s = table.stats();
  EXPECT_EQ(s.closed_idle, 1u);
  EXPECT_EQ(s.closed_dead, 1u);
}

}  // namespace
}  // namespace rdmastor::rdma
