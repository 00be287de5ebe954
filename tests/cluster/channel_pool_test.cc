// Persistent inter-node RDMA channels: the pool's decisions as pure functions, and the pool over
// the real soft fabric (a SoftTarget on 127.0.0.1) for reuse, the bound, the busy wait, dropping
// failed and dead channels and the idle sweep.
#include "cluster/channel_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "cluster/internode_rdma.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/transfer.h"

namespace rdmastor::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = ChannelClock;

TEST(ChannelPoolDecisions, ParseChannelCount) {
  EXPECT_EQ(ParseChannelCount("1"), 1);
  EXPECT_EQ(ParseChannelCount("4"), 4);
  EXPECT_EQ(ParseChannelCount("64"), 64);
  for (const char* bad : {"", "0", "65", "-1", "4x", " 4", "100", "1.5", "abc"})
    EXPECT_FALSE(ParseChannelCount(bad).has_value()) << bad;
}

TEST(ChannelPoolDecisions, AcquirePrefersIdleThenOpensThenWaitsThenGivesUp) {
  const auto now = Clock::now();
  const auto later = now + 5s;
  // An idle channel is always taken first, even below the bound (no connection is opened).
  EXPECT_EQ(DecideAcquire({1, 0, 0, 4}, now, later), ChannelAction::kReuseIdle);
  EXPECT_EQ(DecideAcquire({1, 3, 0, 4}, now, later), ChannelAction::kReuseIdle);
  // Below the bound: open one. Connections being opened count against it.
  EXPECT_EQ(DecideAcquire({0, 0, 0, 4}, now, later), ChannelAction::kOpenNew);
  EXPECT_EQ(DecideAcquire({0, 2, 1, 4}, now, later), ChannelAction::kOpenNew);
  EXPECT_EQ(DecideAcquire({0, 2, 2, 4}, now, later), ChannelAction::kWait);
  EXPECT_EQ(DecideAcquire({0, 4, 0, 4}, now, later), ChannelAction::kWait);
  // At the deadline, all busy: give up (the piece goes over TCP).
  EXPECT_EQ(DecideAcquire({0, 4, 0, 4}, later, later), ChannelAction::kGiveUp);
  EXPECT_EQ(DecideAcquire({0, 1, 0, 1}, later + 1ms, later), ChannelAction::kGiveUp);
  // ... but not when a channel is free by then.
  EXPECT_EQ(DecideAcquire({0, 3, 0, 4}, later + 1ms, later), ChannelAction::kOpenNew);
}

TEST(ChannelPoolDecisions, KeepOnlyCleanLiveChannels) {
  EXPECT_TRUE(KeepAfterTransfer(true, true));
  EXPECT_FALSE(KeepAfterTransfer(false, true));  // failed transfer: QP in error, drop
  EXPECT_FALSE(KeepAfterTransfer(true, false));  // the peer closed it meanwhile
  EXPECT_FALSE(KeepAfterTransfer(false, false));
}

TEST(ChannelPoolDecisions, SweepClosesDeadAndLongIdle) {
  const auto t0 = Clock::now();
  EXPECT_FALSE(ShouldCloseIdle(t0, t0 + 4min, 5min, true));
  EXPECT_TRUE(ShouldCloseIdle(t0, t0 + 5min, 5min, true));
  EXPECT_TRUE(ShouldCloseIdle(t0, t0 + 1ms, 5min, false));  // dead: closed at once
}

// A pool over the real soft fabric toward one SoftTarget.
struct SoftPool : ::testing::Test {
  void SetUp() override {
    auto t = rdma::soft::SoftTarget::Start({});
    ASSERT_TRUE(t.ok()) << t.error().message;
    target = std::move(t).value();
    rdma::soft::SoftFabricOptions fo;
    fo.max_idle_connections = 0;  // the channel pool keeps the connections, not the fabric
    fo.io_timeout = 2000ms;
    fabric = std::make_unique<rdma::soft::SoftFabric>(fo);
    region.assign(1 << 20, 'r');
    auto mr = target->RegisterMemory(region.data(), region.size(), rdma::kRemoteRead);
    ASSERT_TRUE(mr.ok());
    remote_mr = std::move(mr).value();
    local.assign(1 << 20, 0);
    auto lmr = fabric->RegisterMemory(local.data(), local.size(), rdma::kLocalWrite);
    ASSERT_TRUE(lmr.ok());
    local_mr = std::move(lmr).value();
  }
  std::unique_ptr<ChannelPool> MakePool(ChannelPoolOptions o) {
    return std::make_unique<ChannelPool>(
        [this](const rdma::RemoteAddress& r, const rdma::RequestOrigin& origin) {
          return fabric->Connect(r, origin);
        },
        o, [this](std::string_view) { ++opened_callbacks; });
  }
  // One RDMA READ of 64 KiB over the leased channel.
  Status Read(ChannelPool::Lease& l) {
    rdma::Transfer tr(l.endpoint(), rdma::Opcode::kRead,
                      {reinterpret_cast<uint64_t>(region.data()), region.size(), remote_mr->rkey()},
                      {});
    auto tk = tr.Post(*local_mr, local.data(), 64 << 10, 0);
    if (!tk.ok()) return tk.error();
    return tr.Finish();
  }
  std::unique_ptr<rdma::soft::SoftTarget> target;
  std::unique_ptr<rdma::soft::SoftFabric> fabric;
  std::vector<char> region, local;
  std::unique_ptr<rdma::MemoryRegion> remote_mr, local_mr;
  std::atomic<int> opened_callbacks{0};
  const rdma::RequestOrigin origin{"127.0.0.1"};
};

TEST_F(SoftPool, PiecesReuseTheSameChannels) {
  auto pool = MakePool({.channels = 2, .wait = 2000ms, .sweep_interval = 0ms});
  for (int i = 0; i < 50; ++i) {
    auto l = pool->Acquire("node-b", target->address(), origin);
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE(Read(*l).ok());
    EXPECT_EQ(l->reused(), i > 0);
  }
  EXPECT_EQ(pool->opened(), 1u);
  EXPECT_EQ(pool->reused(), 49u);
  EXPECT_EQ(opened_callbacks.load(), 1);
  EXPECT_EQ(target->connections_accepted(), 1u);
  EXPECT_EQ(fabric->connections_opened(), 1u);

  // Concurrent pieces: never more than the bound.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto l = pool->Acquire("node-b", target->address(), origin);
        if (!l.ok() || !Read(*l).ok()) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(pool->opened(), 2u);
  EXPECT_LE(target->connections_accepted(), 2u);
  EXPECT_LE(pool->open_channels(), 2u);
}

TEST_F(SoftPool, BusyChannelsMakeTheCallerWaitThenGiveUp) {
  // The ceiling's metric hook hears of every lease that found the channels busy.
  std::vector<bool> hits;
  std::mutex hits_mu;
  auto pool = MakePool({.channels = 1, .wait = 200ms, .sweep_interval = 0ms,
                        .on_ceiling = [&](bool refused) {
                          std::lock_guard lock(hits_mu);
                          hits.push_back(refused);
                        }});
  auto first = pool->Acquire("node-b", target->address(), origin);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(hits.empty());  // a free channel is no ceiling hit
  auto held = std::move(first).value();
  auto t0 = Clock::now();
  auto second = pool->Acquire("node-b", target->address(), origin);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kSlowDown);
  EXPECT_GE(Clock::now() - t0, 200ms);
  EXPECT_EQ(pool->gave_up(), 1u);
  // A waiter gets the channel as soon as it comes back.
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    auto done = std::move(held);  // returns the channel
  });
  auto third = pool->Acquire("node-b", target->address(), origin);
  release.join();
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_TRUE(third->reused());
  EXPECT_EQ(pool->opened(), 1u);
  std::lock_guard lock(hits_mu);
  EXPECT_EQ(hits, (std::vector<bool>{true, false}));  // refused, then waited and got it
}

TEST_F(SoftPool, FailedChannelIsDroppedAndReconnected) {
  auto pool = MakePool({.channels = 2, .wait = 500ms, .sweep_interval = 0ms});
  {
    auto l = pool->Acquire("node-b", target->address(), origin);
    ASSERT_TRUE(l.ok());
    l->Fail();  // its transfer failed: the QP is in the error state
  }
  EXPECT_EQ(pool->open_channels(), 0u);
  auto l = pool->Acquire("node-b", target->address(), origin);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->reused());
  EXPECT_TRUE(Read(*l).ok());
  EXPECT_EQ(pool->opened(), 2u);
}

TEST_F(SoftPool, DeadPeerChannelsAreClosedBySweepAndNotReused) {
  auto pool = MakePool({.channels = 2, .wait = 500ms, .sweep_interval = 0ms});
  {
    auto a = pool->Acquire("node-b", target->address(), origin);
    auto b = pool->Acquire("node-b", target->address(), origin);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(Read(*a).ok() && Read(*b).ok());
  }
  EXPECT_EQ(pool->open_channels(), 2u);
  auto addr = target->address();
  remote_mr.reset();
  target.reset();  // the peer is gone: its end of every channel closed
  // The dead channels are found (EOF pending) and closed: nothing stays open toward the peer.
  auto deadline = Clock::now() + 3s;
  while (pool->open_channels() > 0 && Clock::now() < deadline) {
    pool->Sweep();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(pool->open_channels(), 0u);
  // A lease toward the dead peer opens a fresh connection, which fails: no stale channel is used.
  auto l = pool->Acquire("node-b", addr, origin);
  EXPECT_FALSE(l.ok());
}

TEST_F(SoftPool, IdleChannelsCloseAfterTheIdleLimit) {
  auto pool = MakePool({.channels = 2, .wait = 500ms, .idle_close = 100ms, .sweep_interval = 20ms});
  {
    auto l = pool->Acquire("node-b", target->address(), origin);
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE(Read(*l).ok());
  }
  EXPECT_EQ(pool->open_channels(), 1u);
  auto deadline = Clock::now() + 3s;
  while (pool->open_channels() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(pool->open_channels(), 0u);
}

TEST(ChannelPoolSettings, ChannelsAndTrafficClassAreValidated) {
  InternodeRdmaSettings s;
  EXPECT_EQ(s.channels, 4);
  EXPECT_TRUE(ApplyInternodeRdmaEnv(
                  {{"MINIO_RDMA_CHANNELS", "2"}, {"MINIO_RDMA_INTERNODE_TRAFFIC_CLASS", "106"}}, s)
                  .ok());
  EXPECT_EQ(s.channels, 2);
  EXPECT_EQ(s.traffic_class, 106);
  for (const char* bad : {"0", "65", "x", "-3"}) {
    auto st = ApplyInternodeRdmaEnv({{"MINIO_RDMA_CHANNELS", bad}}, s);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("MINIO_RDMA_CHANNELS"), std::string::npos);
  }
  for (const char* bad : {"256", "-1", "0x10", "abc"}) {
    auto st = ApplyInternodeRdmaEnv({{"MINIO_RDMA_INTERNODE_TRAFFIC_CLASS", bad}}, s);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("MINIO_RDMA_INTERNODE_TRAFFIC_CLASS"), std::string::npos);
  }
}

}  // namespace
}  // namespace rdmastor::cluster
