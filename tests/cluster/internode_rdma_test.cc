// Inter-node shard transport: two InternodeRdma instances (the caller node and the serving node)
// in one process over the real soft fabric on 127.0.0.1.
#include "cluster/internode_rdma.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "rdma/soft/soft_fabric.h"
#include "rdma/soft/soft_wire.h"
#include "rdma/token.h"

namespace rdmastor::cluster {
namespace {

using namespace std::chrono_literals;

// The cluster's peer key (both instances are nodes of one cluster).
std::shared_ptr<const PeerAuth> ClusterKey() {
  static auto key = std::make_shared<const PeerAuth>("minioadmin", "minioadmin");
  return key;
}

// `self`: the node's address, the name its peers expose buffers to (keys are bound to it).
InternodeRdmaSettings Soft(uint64_t min_size = 1 << 20, std::string self = "node-test") {
  InternodeRdmaSettings s;
  s.enabled = true;
  s.auth = ClusterKey();
  s.self = std::move(self);
  s.min_size = min_size;
  s.fabric = rdma::FabricKind::kSoft;
  s.bind_ip = "127.0.0.1";
  s.staging_bytes = 1 << 20;  // small slots: several per shard, so the pipeline wraps around
  s.slot_bytes = 256 << 10;
  s.max_buffers = 4;
  s.retry_after = 200ms;
  s.transfer.timeout = 2000ms;
  return s;
}

std::unique_ptr<InternodeRdma> Make(const InternodeRdmaSettings& s) {
  auto r = InternodeRdma::Create(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : nullptr;
}

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) ^ (i >> 11));
  return v;
}

// The value of one Prometheus sample ("name{labels}") on the node endpoint; -1 when absent.
double Sample(const std::string& series) {
  std::string text = admin::GlobalRegistry().Render(admin::Scope::kNode);
  std::string key = "\n" + series + " ";
  auto pos = text.find(key);
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + key.size()));
}

// The caller node and a serving node named `self` (the caller exposes buffers to that name).
struct Pair : ::testing::Test {
  void SetUp() override {
    caller = Make(Soft(1 << 20, "node-a"));
    ASSERT_TRUE(caller);
    ASSERT_TRUE(caller->available()) << caller->status().unavailable_reason;
  }
  void Serve(const std::string& self) {
    server = Make(Soft(1 << 20, self));
    ASSERT_TRUE(server && server->available());
  }
  std::unique_ptr<InternodeRdma> caller, server;
};

TEST(InternodeRdmaSettingsTest, ShouldUseFollowsEnabledAndMinSize) {
  auto off = Soft();
  off.enabled = false;
  auto disabled = Make(off);
  EXPECT_FALSE(disabled->ShouldUse("p", 64 << 20));
  EXPECT_EQ(disabled->status().state(), "off");

  auto one_mib = Make(Soft(1 << 20));
  EXPECT_FALSE(one_mib->ShouldUse("p", 0));
  EXPECT_FALSE(one_mib->ShouldUse("p", (1 << 20) - 1));
  EXPECT_TRUE(one_mib->ShouldUse("p", 1 << 20));
  EXPECT_TRUE(one_mib->ShouldUse("p", 8 << 20));

  auto zero = Make(Soft(0));  // MINIO_RDMA_MIN_SIZE=0: every non-empty shard
  EXPECT_TRUE(zero->ShouldUse("p", 1));
  EXPECT_FALSE(zero->ShouldUse("p", 0));

  auto huge = Make(Soft(UINT64_MAX));  // a huge minimum: nothing qualifies
  EXPECT_FALSE(huge->ShouldUse("p", uint64_t{1} << 40));
  EXPECT_EQ(huge->counters("p").fallbacks, 0u);  // below the minimum is not a fallback
}

TEST(InternodeRdmaSettingsTest, EnvKnobsAreValidated) {
  InternodeRdmaSettings s;
  ASSERT_TRUE(
      ApplyInternodeRdmaEnv(
          {{"MINIO_RDMA_INTERNODE_INFLIGHT", "4"}, {"MINIO_RDMA_INTERNODE_RETRY", "500ms"}}, s)
          .ok());
  EXPECT_EQ(s.inflight_per_peer, 4);
  EXPECT_EQ(s.retry_after, 500ms);
  ASSERT_TRUE(ApplyInternodeRdmaEnv({{"MINIO_RDMA_INTERNODE_RETRY", "2m"}}, s).ok());
  EXPECT_EQ(s.retry_after, 120000ms);
  ASSERT_TRUE(ApplyInternodeRdmaEnv({{"MINIO_RDMA_INTERNODE_RETRY", "45"}}, s).ok());
  EXPECT_EQ(s.retry_after, 45000ms);
  for (auto [name, value] : {std::pair{"MINIO_RDMA_INTERNODE_INFLIGHT", "0"},
                             {"MINIO_RDMA_INTERNODE_INFLIGHT", "x"},
                             {"MINIO_RDMA_INTERNODE_INFLIGHT", "2000"},
                             {"MINIO_RDMA_INTERNODE_RETRY", "10ms"},
                             {"MINIO_RDMA_INTERNODE_RETRY", "5h30"},
                             {"MINIO_RDMA_INTERNODE_RETRY", "s"}}) {
    auto st = ApplyInternodeRdmaEnv({{name, value}}, s);
    ASSERT_FALSE(st.ok()) << name << "=" << value;
    EXPECT_NE(st.error().message.find(name), std::string::npos);
  }
}

TEST(InternodeRdmaSettingsTest, EnabledWithoutFabricIsUnavailableAndLoud) {
  auto s = Soft();
  s.fabric = rdma::FabricKind::kOff;
  auto t = Make(s);
  EXPECT_FALSE(t->available());
  EXPECT_EQ(t->status().state(), "unavailable");
  EXPECT_FALSE(t->ShouldUse("peer-nofabric", 8 << 20));
  EXPECT_EQ(t->counters("peer-nofabric").fallbacks, 1u);
  char buf[16];
  EXPECT_EQ(t->Expose("peer-nofabric", buf, sizeof(buf), false).error().code,
            ErrorCode::kRDMANotSupported);

  s.fabric = rdma::FabricKind::kVerbs;  // no RC endpoints / no device here
  auto v = Make(s);
  EXPECT_FALSE(v->available());
  EXPECT_FALSE(v->status().unavailable_reason.empty());

  s.fabric = rdma::FabricKind::kSoft;
  s.bind_ip = "not-an-ip";
  auto bad = Make(s);
  EXPECT_FALSE(bad->available());
}

// Caller sends a shard (the peer pulls it) and receives one (the peer pushes it), byte-exact.
TEST_F(Pair, ShardWriteAndReadRoundTripOddSizes) {
  const std::string peer_of_server = "node-a-roundtrip", peer_of_caller = "node-b-roundtrip";
  Serve(peer_of_caller);
  const std::string shards_sent =
      "minio_system_network_internode_peer_shards_sent_total{peer=\"node-b-roundtrip\","
      "transport=\"rdma\"}";
  const double shards_before = std::max(0.0, Sample(shards_sent));
  double before = Sample(
      "minio_system_network_internode_peer_recv_bytes_total{peer=\"node-a-roundtrip\","
      "transport=\"rdma\"}");
  uint64_t total = 0;
  for (size_t n : {size_t{1} << 20, (size_t{1} << 20) + 1, (size_t{8} << 20) + 13, size_t{4097}}) {
    SCOPED_TRACE(n);
    ASSERT_EQ(caller->ShouldUse(peer_of_caller, n), n >= (1u << 20));
    auto shard = Pattern(n, static_cast<int>(n));
    auto exposed = caller->Expose(peer_of_caller, shard.data(), n, /*for_remote_write=*/false);
    ASSERT_TRUE(exposed.ok()) << exposed.error().message;
    EXPECT_EQ(exposed->token().size(), rdma::kTokenLength);
    std::vector<char> landed(n, 'x');
    auto st = server->Pull(peer_of_server, exposed->token(), "127.0.0.1", landed.data(), n);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_TRUE(landed == shard);
    caller->RecordShard(peer_of_caller, admin::Transport::kRdma, n, 0);
    total += n;

    // The other direction: the caller exposes an empty buffer, the peer pushes a shard into it.
    auto stored = Pattern(n, static_cast<int>(n) + 7);
    std::vector<char> into(n + 64, 'G');  // guard bytes after the exposed part
    auto dst = caller->Expose(peer_of_caller, into.data(), n, /*for_remote_write=*/true);
    ASSERT_TRUE(dst.ok()) << dst.error().message;
    st = server->Push(peer_of_server, dst->token(), "127.0.0.1", stored.data(), n);
    ASSERT_TRUE(st.ok()) << st.error().message;
    dst->Answered();
    dst->CopyOut(n);
    EXPECT_EQ(0, std::memcmp(into.data(), stored.data(), n));
    EXPECT_EQ(std::string(into.data() + n, 64), std::string(64, 'G'));
  }
  auto c = server->counters(peer_of_server);
  EXPECT_EQ(c.rdma_bytes_received, total);
  EXPECT_EQ(c.rdma_bytes_sent, total);
  EXPECT_EQ(c.rdma_shards, 8u);
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(caller->counters(peer_of_caller).rdma_bytes_sent, total);
  EXPECT_EQ(Sample("minio_system_network_internode_peer_recv_bytes_total{peer=\"node-a-roundtrip\","
                   "transport=\"rdma\"}"),
            std::max(0.0, before) + static_cast<double>(total));
  EXPECT_EQ(Sample(shards_sent), shards_before + 4);
}

// Persistent channels: every piece between two nodes reuses the serving node's channels toward
// the caller's target instead of connecting per piece (issue 10 item 4).
// PushFrom fills the staging slots straight from its source (a shard read lands there from the
// file): a source that ends early ends the piece there, and a source that fails comes back as its
// own error, not as a fabric failure (the caller would resend over TCP and demote the peer).
TEST_F(Pair, PushFromFillsSlotsEndsWithTheSourceAndKeepsItsErrors) {
  const std::string peer = "node-a-pushfrom";
  Serve("node-b-pushfrom");
  const size_t n = (900 << 10) + 5;  // four 256 KiB slots, the last one short
  auto stored = Pattern(n, 3);
  std::vector<char> into(n, 'x');
  std::vector<std::pair<size_t, size_t>> asked;
  auto dst = caller->Expose("node-b-pushfrom", into.data(), n, /*for_remote_write=*/true);
  ASSERT_TRUE(dst.ok()) << dst.error().message;
  auto pushed = server->PushFrom(peer, dst->token(), "127.0.0.1", n,
                                 [&](char* to, size_t at, size_t len) -> Result<size_t> {
                                   asked.emplace_back(at, len);
                                   std::memcpy(to, stored.data() + at, len);
                                   return len;
                                 });
  ASSERT_TRUE(pushed.ok()) << pushed.error().message;
  EXPECT_EQ(*pushed, n);
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[3], std::make_pair(size_t{768} << 10, n - (768 << 10)));
  dst->Answered();
  dst->CopyOut(n);
  EXPECT_EQ(into, stored);

  // The source ends 100 bytes into the second slot: 256 KiB + 100 bytes arrive, no more asked.
  std::fill(into.begin(), into.end(), 'x');
  asked.clear();
  dst = caller->Expose("node-b-pushfrom", into.data(), n, /*for_remote_write=*/true);
  ASSERT_TRUE(dst.ok());
  const size_t ends = (256 << 10) + 100;
  pushed = server->PushFrom(peer, dst->token(), "127.0.0.1", n,
                            [&](char* to, size_t at, size_t len) -> Result<size_t> {
                              asked.emplace_back(at, len);
                              size_t k = at >= ends ? 0 : std::min(len, ends - at);
                              std::memcpy(to, stored.data() + at, k);
                              return k;
                            });
  ASSERT_TRUE(pushed.ok()) << pushed.error().message;
  EXPECT_EQ(*pushed, ends);
  EXPECT_EQ(asked.size(), 2u);
  dst->Answered();
  dst->CopyOut(*pushed);
  EXPECT_EQ(0, std::memcmp(into.data(), stored.data(), ends));
  EXPECT_EQ(into[ends], 'x');

  // The source fails on the third slot: its error, the fabric not blamed; the next piece works.
  const uint64_t errors_before = server->counters(peer).errors;
  dst = caller->Expose("node-b-pushfrom", into.data(), n, /*for_remote_write=*/true);
  ASSERT_TRUE(dst.ok());
  pushed = server->PushFrom(peer, dst->token(), "127.0.0.1", n,
                            [&](char* to, size_t at, size_t len) -> Result<size_t> {
                              if (at >= (512 << 10))
                                return MakeError(ErrorCode::kNoSuchKey, "gone");
                              std::memcpy(to, stored.data() + at, len);
                              return len;
                            });
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.error().code, ErrorCode::kNoSuchKey);
  EXPECT_EQ(pushed.error().message, "gone");
  EXPECT_EQ(server->counters(peer).errors, errors_before);
  dst->Answered();
  dst = caller->Expose("node-b-pushfrom", into.data(), n, /*for_remote_write=*/true);
  ASSERT_TRUE(dst.ok());
  auto st = server->Push(peer, dst->token(), "127.0.0.1", stored.data(), n);
  ASSERT_TRUE(st.ok()) << st.error().message;
  dst->Answered();
  dst->CopyOut(n);
  EXPECT_EQ(into, stored);
}

// A received piece can be read in place from its pooled buffer (TakeReceived) while at least half
// of the receive pool is free; past that the caller copies it out and the buffer goes back.
TEST(InternodeRdmaWindows, ReceiveBuffersAreLentWhileHalfThePoolIsFree) {
  auto s = Soft(1 << 20, "node-b-windows");
  s.inflight_bytes = 4 << 20;  // 1 MiB pieces: two receive buffers, one may be lent
  auto caller = Make(s), server = Make(s);
  ASSERT_TRUE(caller && server && caller->available());
  const size_t n = 1 << 20;
  auto stored = Pattern(n, 11);
  std::vector<char> into(n, 'x');
  auto receive = [&](int seed) {
    auto piece = Pattern(n, seed);
    auto dst = caller->Expose("node-b-windows", into.data(), n, /*for_remote_write=*/true);
    EXPECT_TRUE(dst.ok());
    EXPECT_TRUE(server->Push("node-a-windows", dst->token(), "127.0.0.1", piece.data(), n).ok());
    dst->Answered();
    return std::move(dst).value();
  };
  auto first = receive(1);
  rdma::BufferPool::Buffer lent = first.TakeReceived();
  ASSERT_TRUE(lent);
  EXPECT_EQ(0, std::memcmp(lent.data(), Pattern(n, 1).data(), n));
  EXPECT_EQ(into[0], 'x');  // nothing copied out
  // Not answered: never lent (the peer may still be writing into it).
  auto unanswered = caller->Expose("node-b-windows", into.data(), n, /*for_remote_write=*/true);
  ASSERT_TRUE(unanswered.ok());
  EXPECT_FALSE(unanswered->TakeReceived());
  unanswered = InternodeRdma::Exposed();
  // With one buffer lent out of two, the second piece is copied out, not lent.
  auto second = receive(2);
  EXPECT_FALSE(second.TakeReceived());
  second.CopyOut(n);
  EXPECT_EQ(into, Pattern(n, 2));
  second = InternodeRdma::Exposed();
  lent = rdma::BufferPool::Buffer();  // back to the pool: the next piece may be lent again
  auto third = receive(3);
  EXPECT_TRUE(third.TakeReceived());
}

TEST_F(Pair, PiecesReuseThePeersChannels) {
  const std::string series =
      "rdmastor_rdma_internode_connections_opened_total{peer=\"node-a-channels\"}";
  Serve("node-b-channels");
  const double before = std::max(0.0, Sample(series));
  auto shard = Pattern(1 << 20, 5);
  std::vector<char> landed(shard.size());
  for (int i = 0; i < 40; ++i) {
    auto exposed = caller->Expose("node-b-channels", shard.data(), shard.size(), i % 2 == 1);
    ASSERT_TRUE(exposed.ok()) << exposed.error().message;
    auto st = i % 2 == 0 ? server->Pull("node-a-channels", exposed->token(), "127.0.0.1",
                                        landed.data(), landed.size())
                         : server->Push("node-a-channels", exposed->token(), "127.0.0.1",
                                        landed.data(), landed.size());
    ASSERT_TRUE(st.ok()) << st.error().message;
    exposed->Answered();  // the RPC's reply came: the buffer goes back to the pool
  }
  EXPECT_TRUE(landed == shard);
  // The caller's buffers were registered once (one per direction), not per piece.
  EXPECT_EQ(caller->buffer_registrations(), 2u);
  // Sequential pieces: one channel, opened once, counted once on the metric.
  EXPECT_EQ(server->channels_opened(), 1u);
  EXPECT_EQ(server->channels_open(), 1u);
  EXPECT_EQ(Sample(series), before + 1);
}

TEST_F(Pair, TokenOnlyGrantsTheExposedDirectionAndSize) {
  Serve("node-b-access");
  auto shard = Pattern(1 << 20, 3);
  auto ro = caller->Expose("node-b-access", shard.data(), shard.size(), false);
  ASSERT_TRUE(ro.ok());
  auto junk = Pattern(1 << 20, 9);
  auto st = server->Push("node-a-access", ro->token(), "127.0.0.1", junk.data(), junk.size());
  ASSERT_FALSE(st.ok());  // exposed for reading only: the peer may not write it
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  EXPECT_TRUE(shard == Pattern(1 << 20, 3));
  std::vector<char> big((1 << 20) + 1);
  st = server->Pull("node-a-access", ro->token(), "127.0.0.1", big.data(), big.size());
  ASSERT_FALSE(st.ok());  // more than the token describes
  EXPECT_EQ(server->counters("node-a-access").errors, 2u);
  st = server->Pull("node-a-access", "not-a-token", "127.0.0.1", big.data(), 10);
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
}

TEST_F(Pair, WrongTokenFallsBackLoudlyThenRecovers) {
  const std::string peer = "node-b-wrongtoken";
  Serve(peer);
  const std::string degraded =
      "minio_system_network_internode_rdma_degraded{peer=\"" + peer + "\"}";
  const std::string fallbacks =
      "minio_system_network_internode_rdma_peer_fallbacks_total{peer=\"" + peer + "\"}";
  double node_fallbacks_before = Sample("minio_system_network_internode_rdma_fallbacks_total");
  const std::string errors =
      "minio_system_network_internode_rdma_errors_total{peer=\"" + peer + "\"}";
  const double fallbacks_before = std::max(0.0, Sample(fallbacks));
  const double errors_before = std::max(0.0, Sample(errors));

  auto shard = Pattern(2 << 20, 5);
  ASSERT_TRUE(caller->ShouldUse(peer, shard.size()));
  auto exposed = caller->Expose(peer, shard.data(), shard.size(), false);
  ASSERT_TRUE(exposed.ok());
  auto tok = *rdma::ParseToken(exposed->token());
  tok.rkey ^= 0x55;  // a token that does not match the registration
  std::vector<char> landed(shard.size());
  auto st = server->Pull("node-a-wrongtoken", rdma::FormatToken(tok), "127.0.0.1", landed.data(),
                         landed.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  EXPECT_NE(st.error().message.find("node-a-wrongtoken"), std::string::npos);

  // The caller learns it from the RPC's answer, resends over TCP and reports it.
  caller->ReportFailure(peer, st.error());
  caller->RecordShard(peer, admin::Transport::kTcp, shard.size(), 0);
  EXPECT_FALSE(caller->ShouldUse(peer, shard.size()));  // TCP until the retry interval passed
  caller->ReportFailure(peer, st.error());              // a second failure: no new transition
  auto c = caller->counters(peer);
  EXPECT_EQ(c.transitions, 1u);
  EXPECT_EQ(c.errors, 2u);
  EXPECT_EQ(c.fallbacks, 3u);  // two resent shards and one refused by ShouldUse
  EXPECT_EQ(c.tcp_bytes_sent, shard.size());
  auto status = caller->status();
  EXPECT_EQ(status.state(), "degraded");
  ASSERT_EQ(status.degraded.size(), 1u);
  EXPECT_EQ(status.degraded[0].peer, peer);
  EXPECT_NE(status.degraded[0].last_error.find("rkey"), std::string::npos);
  EXPECT_EQ(Sample(degraded), 1);
  EXPECT_EQ(Sample(fallbacks), fallbacks_before + 3);
  EXPECT_GE(Sample("minio_system_network_internode_rdma_degraded_peers"), 1);
  EXPECT_EQ(Sample("minio_system_network_internode_rdma_fallbacks_total"),
            node_fallbacks_before + 3);
  EXPECT_EQ(Sample(errors), errors_before + 2);

  // After the retry interval RDMA is tried again; a successful shard restores the peer.
  bool retried = false;
  for (int i = 0; i < 100 && !retried; ++i) {
    std::this_thread::sleep_for(10ms);
    retried = caller->ShouldUse(peer, shard.size());
  }
  ASSERT_TRUE(retried);
  auto again = caller->Expose(peer, shard.data(), shard.size(), false);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(
      server->Pull("node-a-wrongtoken", again->token(), "127.0.0.1", landed.data(), landed.size())
          .ok());
  EXPECT_TRUE(landed == shard);
  caller->RecordShard(peer, admin::Transport::kRdma, shard.size(), 0);
  EXPECT_EQ(caller->status().state(), "ok");
  EXPECT_EQ(Sample(degraded), 0);
  EXPECT_TRUE(caller->ShouldUse(peer, shard.size()));
}

TEST_F(Pair, SoftFabricReachesOnlyTheRequester) {
  Serve("node-b-policy");
  auto shard = Pattern(1 << 20, 11);
  auto exposed = caller->Expose("node-b-policy", shard.data(), shard.size(), false);
  ASSERT_TRUE(exposed.ok());
  std::vector<char> landed(shard.size());
  // The token names 127.0.0.1 but the RPC came from elsewhere: refused (no relay).
  auto st =
      server->Pull("node-a-policy", exposed->token(), "127.0.0.2", landed.data(), landed.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kAccessDenied);
  // Unless MINIO_RDMA_SOFT_ALLOW lists it.
  auto s = Soft(1 << 20, "node-b-policy");
  s.soft_allow = *rdma::soft::ParseCidrList("127.0.0.0/8");
  auto relaxed = Make(s);
  ASSERT_TRUE(
      relaxed->Pull("node-a-policy", exposed->token(), "127.0.0.2", landed.data(), landed.size())
          .ok());
  EXPECT_TRUE(landed == shard);
}

TEST_F(Pair, VanishedCallerFailsWithinTimeout) {
  Serve("node-b-gone");
  auto shard = Pattern(1 << 20, 13);
  std::string token;
  {
    auto exposed = caller->Expose("node-b-gone", shard.data(), shard.size(), false);
    ASSERT_TRUE(exposed.ok());
    token = exposed->token();
  }
  caller.reset();  // the calling node died: its target is gone
  std::vector<char> landed(shard.size());
  auto t0 = std::chrono::steady_clock::now();
  auto st = server->Pull("node-a-gone", token, "127.0.0.1", landed.data(), landed.size());
  EXPECT_FALSE(st.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);

  // A caller that accepts the connection but never answers (frozen): bounded by the timeout.
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  socklen_t alen = sizeof(a);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen), 0);
  auto tok = *rdma::ParseToken(token);
  tok.lid = ntohs(a.sin_port);
  auto s = Soft();
  s.transfer.timeout = 300ms;
  auto quick = Make(s);
  t0 = std::chrono::steady_clock::now();
  st = quick->Pull("node-a-frozen", rdma::FormatToken(tok), "127.0.0.1", landed.data(),
                   landed.size());
  auto took = std::chrono::steady_clock::now() - t0;
  close(lfd);
  ASSERT_FALSE(st.ok());
  EXPECT_LT(took, 3s);
  EXPECT_EQ(quick->counters("node-a-frozen").errors, 1u);
}

// Issue 37 item 9: a buffer exposed to one peer is reachable only through connections that
// peer opened. Another node of the cluster (same key) holding the token gets a remote access
// error and not the bytes, once this node knows it (its own domain), and is refused at connect
// while it does not (no domain at all).
TEST_F(Pair, KeysAreBoundToThePeerTheyWereExposedTo) {
  Serve("node-b-bound");
  auto other = Make(Soft(1 << 20, "node-c-bound"));
  ASSERT_TRUE(other && other->available());
  const double unknown_before = std::max(
      0.0, Sample("rdmastor_internode_rdma_connects_refused_total{reason=\"unknown_node\"}"));
  auto shard = Pattern(1 << 20, 21);
  auto to_b = caller->Expose("node-b-bound", shard.data(), shard.size(), false);
  ASSERT_TRUE(to_b.ok());
  std::vector<char> landed(shard.size(), 'x');
  auto st = other->Pull("node-a", to_b->token(), "127.0.0.1", landed.data(), landed.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(caller->connects_refused(), 1u);
  EXPECT_EQ(Sample("rdmastor_internode_rdma_connects_refused_total{reason=\"unknown_node\"}"),
            unknown_before + 1);
  EXPECT_EQ(landed, std::vector<char>(shard.size(), 'x'));

  // node-c becomes a peer (something is exposed to it): its connections are accepted, in its
  // own domain, and node-b's keys are not valid there, in either direction.
  auto mine = Pattern(4096, 5);
  auto to_c = caller->Expose("node-c-bound", mine.data(), mine.size(), false);
  ASSERT_TRUE(to_c.ok());
  std::vector<char> got(mine.size());
  st = other->Pull("node-a", to_c->token(), "127.0.0.1", got.data(), got.size());
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(got, mine);
  st = other->Pull("node-a", to_b->token(), "127.0.0.1", landed.data(), landed.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  EXPECT_NE(st.error().message.find("remote access error"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(landed, std::vector<char>(shard.size(), 'x'));
  std::vector<char> into(1 << 20, 'G');
  auto recv_b = caller->Expose("node-b-bound", into.data(), into.size(), true);
  ASSERT_TRUE(recv_b.ok());
  auto junk = Pattern(1 << 20, 99);
  st = other->Push("node-a", recv_b->token(), "127.0.0.1", junk.data(), junk.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  // The bound peer still reaches both.
  ASSERT_TRUE(server->Pull("node-a", to_b->token(), "127.0.0.1", landed.data(), landed.size()).ok());
  EXPECT_EQ(landed, shard);
  ASSERT_TRUE(server->Push("node-a", recv_b->token(), "127.0.0.1", shard.data(), shard.size()).ok());
  recv_b->Answered();
  recv_b->CopyOut(shard.size());
  EXPECT_EQ(into, shard);
  EXPECT_EQ(caller->connects_refused(), 1u);
}

// What a forged connect to a node's inter-node target gets: a plain Hello (the endpoint id
// alone), a proof that does not verify, a valid proof sent again or from another address, and a
// node of another cluster: each refused before anything is served, and counted by reason.
TEST_F(Pair, ConnectsWithoutAValidProofAreRefusedAndCounted) {
  auto shard = Pattern(4096, 1);
  auto exposed = caller->Expose("node-b-forged", shard.data(), shard.size(), false);
  ASSERT_TRUE(exposed.ok());
  auto tok = *rdma::ParseToken(exposed->token());
  const uint16_t port = tok.lid;
  auto count = [](const char* reason) {
    return std::max(0.0, Sample(std::string("rdmastor_internode_rdma_connects_refused_total{"
                                            "reason=\"") + reason + "\"}"));
  };
  const double no_proof = count("no_proof"), bad_proof = count("bad_proof"),
               replay = count("replay");
  // Sends `hello` raw to the target; the HelloReply status (0: served), -1 when none came.
  auto knock = [&](const void* hello, size_t len) -> int {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    rdma::soft::wire::HelloReply r{};
    int status = -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        send(fd, hello, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len) &&
        recv(fd, &r, sizeof(r), MSG_WAITALL) == static_cast<ssize_t>(sizeof(r)))
      status = static_cast<int>(r.status);
    close(fd);
    return status;
  };
  rdma::soft::wire::Hello plain;
  plain.qpn = tok.qpn;
  EXPECT_EQ(knock(&plain, sizeof(plain)), 1);
  const rdma::ConnectContext ctx{0x7f000001, port, tok.qpn, 0x7f000001};
  auto with = [&](const std::vector<uint8_t>& proof) {
    rdma::soft::wire::HelloAuth h;
    h.qpn = tok.qpn;
    h.proof_len = static_cast<uint32_t>(proof.size());
    std::memcpy(h.proof, proof.data(), proof.size());
    return knock(&h, sizeof(h));
  };
  auto good = ClusterKey()->SignConnect("node-b-forged", ctx);
  auto garbage = good;
  garbage[30] ^= 0x40;
  EXPECT_EQ(with(garbage), 1);
  PeerAuth stranger("another", "cluster-entirely");
  EXPECT_EQ(with(stranger.SignConnect("node-b-forged", ctx)), 1);
  auto elsewhere = ctx;
  elsewhere.source_ip = 0x7f000002;  // made for another source address
  EXPECT_EQ(with(ClusterKey()->SignConnect("node-b-forged", elsewhere)), 1);
  EXPECT_EQ(with(good), 0);  // the real thing, once
  EXPECT_EQ(with(good), 1);  // replayed
  EXPECT_EQ(caller->connects_refused(), 5u);
  EXPECT_EQ(count("no_proof"), no_proof + 1);
  EXPECT_EQ(count("bad_proof"), bad_proof + 3);
  EXPECT_EQ(count("replay"), replay + 1);
  // A serving node of another cluster (other credentials) cannot pull the piece.
  auto s = Soft(1 << 20, "node-b-forged");
  s.auth = std::make_shared<const PeerAuth>("another", "cluster-entirely");
  auto foreign = Make(s);
  std::vector<char> landed(shard.size(), 'x');
  EXPECT_FALSE(
      foreign->Pull("node-a", exposed->token(), "127.0.0.1", landed.data(), landed.size()).ok());
  EXPECT_EQ(landed, std::vector<char>(shard.size(), 'x'));
  EXPECT_EQ(caller->connects_refused(), 6u);
}

TEST(InternodeRdmaSettingsTest, EnabledNeedsThePeerKeyAndTheNodeName) {
  auto s = Soft();
  s.auth = nullptr;
  EXPECT_EQ(InternodeRdma::Create(s).error().code, ErrorCode::kInvalidArgument);
  s = Soft(1 << 20, "");
  EXPECT_EQ(InternodeRdma::Create(s).error().code, ErrorCode::kInvalidArgument);
}

TEST(InternodeRdmaInflight, BoundedPerPeer) {
  auto s = Soft();
  s.inflight_per_peer = 2;
  s.inflight_wait = 50ms;
  auto t = Make(s);
  std::vector<char> a(4096), b(4096), c(4096);
  auto e1 = t->Expose("node-x", a.data(), a.size(), false);
  auto e2 = t->Expose("node-x", b.data(), b.size(), true);
  ASSERT_TRUE(e1.ok() && e2.ok());
  // The ceiling's metric counts the refusal (issue 37 item 10).
  auto hits = [] {
    auto text = admin::GlobalRegistry().Render(admin::Scope::kNode);
    const std::string name =
        "rdmastor_rdma_ceiling_hits_total{ceiling=\"internode_inflight\",outcome=\"refused\"} ";
    auto at = text.find(name);
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + name.size()));
  };
  const double before = hits();
  auto e3 = t->Expose("node-x", c.data(), c.size(), false);
  ASSERT_FALSE(e3.ok());
  EXPECT_EQ(e3.error().code, ErrorCode::kSlowDown);
  EXPECT_EQ(hits(), before + 1);
  EXPECT_TRUE(t->Expose("node-y", c.data(), c.size(), false).ok());  // another peer: own bound
  { auto drop = std::move(e1).value(); }                             // the first RPC finished
  EXPECT_TRUE(t->Expose("node-x", c.data(), c.size(), false).ok());
}

// The soft fabric's endpoints behave as RC queue pairs: requests execute and complete in order,
// and after an error every later request is flushed.
TEST(SoftEndpointRcSemantics, OrderedExecutionAndCompletions) {
  auto target = rdma::soft::SoftTarget::Start();
  ASSERT_TRUE(target.ok());
  rdma::soft::SoftFabric fabric;
  uint64_t cell = 0;
  auto rmr = (*target)->RegisterMemory(&cell, sizeof(cell), rdma::kRemoteWrite);
  ASSERT_TRUE(rmr.ok());
  std::vector<uint64_t> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = i + 1;
  auto lmr = fabric.RegisterMemory(values.data(), values.size() * 8, rdma::kLocalWrite);
  auto ep = fabric.Connect((*target)->address(), {"127.0.0.1"});
  ASSERT_TRUE(ep.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    rdma::WorkRequest wr;
    wr.wr_id = i + 1;
    wr.local_addr = reinterpret_cast<char*>(&values[i]);
    wr.length = 8;
    wr.lkey = (*lmr)->lkey();
    wr.remote_addr = reinterpret_cast<uint64_t>(&cell);
    wr.rkey = (*rmr)->rkey();
    wr.signaled = i % 2 == 1;
    // Every write lands on the same cell: only in-order execution leaves the last value there.
    ASSERT_TRUE((*ep)->PostSend(wr).ok());
  }
  uint64_t last = 0;
  int seen = 0;
  rdma::Completion wc[8];
  for (int round = 0; round < 100 && seen < 32; ++round) {
    auto n = (*ep)->PollCompletions(wc, 8, 100ms);
    ASSERT_TRUE(n.ok());
    for (int i = 0; i < *n; ++i) {
      EXPECT_EQ(wc[i].status, rdma::WcStatus::kSuccess);
      EXPECT_GT(wc[i].wr_id, last);
      last = wc[i].wr_id;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 32);  // the signaled half
  EXPECT_EQ(cell, values.size());

  // A bad rkey fails that request; the ones behind it are flushed, none executes.
  cell = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    rdma::WorkRequest wr;
    wr.wr_id = 100 + i;
    wr.local_addr = reinterpret_cast<char*>(&values[i]);
    wr.length = 8;
    wr.lkey = (*lmr)->lkey();
    wr.remote_addr = reinterpret_cast<uint64_t>(&cell);
    wr.rkey = i == 0 ? (*rmr)->rkey() ^ 1 : (*rmr)->rkey();
    ASSERT_TRUE((*ep)->PostSend(wr).ok());
  }
  std::vector<rdma::WcStatus> statuses;
  for (int round = 0; round < 100 && statuses.size() < 3; ++round) {
    auto n = (*ep)->PollCompletions(wc, 8, 100ms);
    ASSERT_TRUE(n.ok());
    for (int i = 0; i < *n; ++i) statuses.push_back(wc[i].status);
  }
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_EQ(statuses[0], rdma::WcStatus::kRemoteAccessError);
  EXPECT_EQ(statuses[1], rdma::WcStatus::kFlushed);
  EXPECT_EQ(statuses[2], rdma::WcStatus::kFlushed);
  EXPECT_EQ(cell, 0u);
}

// A soft target whose device can be made to go away: Lost() as the verbs RC target answers it
// once its device was removed (rdma link delete).
class LosableTarget final : public rdma::Target {
 public:
  LosableTarget(std::unique_ptr<rdma::Target> t, std::atomic<bool>* gone)
      : t_(std::move(t)), gone_(gone) {}
  rdma::RemoteAddress address() const override { return t_->address(); }
  Result<std::unique_ptr<rdma::MemoryRegion>> RegisterMemory(void* a, size_t n,
                                                             unsigned acc) override {
    return t_->RegisterMemory(a, n, acc);
  }
  // Buffers exposed to a peer are registered in its domain (issue 37 item 9).
  Result<std::unique_ptr<rdma::MemoryRegion>> RegisterMemoryIn(uint32_t domain, void* a, size_t n,
                                                               unsigned acc) override {
    return t_->RegisterMemoryIn(domain, a, n, acc);
  }
  std::string Lost() override {
    return *gone_ ? "the RDMA device rxe0 was removed (rdma_cm reported DEVICE_REMOVAL)" : "";
  }

 private:
  std::unique_ptr<rdma::Target> t_;
  std::atomic<bool>* gone_;
};

template <class F>
bool Eventually(F cond) {
  for (int i = 0; i < 500 && !cond(); ++i) std::this_thread::sleep_for(10ms);
  return cond();
}

// The device monitor (the S3 service's) on inter-node RDMA: a removed device's generation is
// dropped (an exposure taken before keeps its own until it ends), pieces are refused and counted
// as fallbacks with the reason, the device is opened again once it is back, and a peer that failed
// meanwhile is tried over RDMA at once instead of after MINIO_RDMA_INTERNODE_RETRY.
TEST(InternodeDeviceRemoval, ReleasedWhileGoneAndReopenedWhenBack) {
  std::atomic<bool> gone{false};
  std::atomic<int> opens{0};
  auto s = Soft();
  s.retry_after = 1h;
  s.device_look = 10ms;
  s.reopen_first = 10ms;
  s.reopen_cap = 40ms;
  auto open = [&](bool reopening) -> Result<std::shared_ptr<InternodeRdma::Plane>> {
    ++opens;
    if (reopening && gone) return MakeError(ErrorCode::kRDMANotSupported, "no device yet");
    auto t = rdma::soft::SoftTarget::Start();
    if (!t.ok()) return t.error();
    return InternodeRdma::MakePlane(s, std::make_unique<rdma::soft::SoftFabric>(),
                                    std::make_unique<LosableTarget>(std::move(t).value(), &gone));
  };
  auto made = InternodeRdma::CreateWith(s, open);
  ASSERT_TRUE(made.ok()) << made.error().message;
  InternodeRdma& n = **made;
  ASSERT_TRUE(n.available());
  EXPECT_TRUE(n.ShouldUse("peer", 2 << 20));
  auto buf = Pattern(1 << 20, 5);
  auto held = n.Expose("peer", buf.data(), buf.size(), /*for_remote_write=*/false);
  ASSERT_TRUE(held.ok()) << held.error().message;
  const std::string series = "rdmastor_rdma_internode_fallbacks_total{reason=\"fabric_unavailable\"}";
  const double before = std::max(0.0, Sample(series));

  gone = true;
  ASSERT_TRUE(Eventually([&] { return !n.available(); }));
  EXPECT_EQ(n.status().state(), "unavailable");
  EXPECT_EQ(n.status().unavailable_reason,
            "the soft fabric is degraded: the RDMA device rxe0 was removed (rdma_cm reported "
            "DEVICE_REMOVAL)");
  EXPECT_FALSE(n.ShouldUse("peer", 2 << 20));
  EXPECT_EQ(n.counters("peer").fallbacks, 1u);
  EXPECT_EQ(Sample(series), before + 1);
  auto refused = n.Expose("peer", buf.data(), buf.size(), false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kRDMANotSupported);
  n.ReportFailure("peer", MakeError(ErrorCode::kRDMATransferFailed, "the device went away"));
  held->Answered();
  *held = InternodeRdma::Exposed();  // the old generation goes with its last exposure
  std::this_thread::sleep_for(100ms);  // attempts back off while the device is away
  EXPECT_LE(opens.load(), 8);

  gone = false;
  ASSERT_TRUE(Eventually([&] { return n.available(); }));
  EXPECT_EQ(n.status().unavailable_reason, "");
  EXPECT_TRUE(n.ShouldUse("peer", 2 << 20));  // not an hour later: the failure was the device's
  auto again = n.Expose("peer", buf.data(), buf.size(), false);
  EXPECT_TRUE(again.ok());
}

}  // namespace
}  // namespace rdmastor::cluster
