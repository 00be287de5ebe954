// Distributed locking over several real in-process lock servers. A node that is down is simulated
// by UnreachableLockerClient (every call fails, as an RPC to a dead host does); a slow node by
// SlowLockerClient (a real lock server answering late).
#include "cluster/dsync.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "cluster/namespace_lock.h"

namespace rdmastor::cluster {
namespace {

using namespace std::chrono_literals;

// Test simulation of a node that is down: every call fails like an RPC to a dead host.
class UnreachableLockerClient final : public LockerClient {
 public:
  Result<bool> Lock(const LockArgs&) override { return Down(); }
  Result<bool> RLock(const LockArgs&) override { return Down(); }
  Result<bool> Unlock(const LockArgs&) override { return Down(); }
  Result<bool> RUnlock(const LockArgs&) override { return Down(); }
  Result<bool> Refresh(const LockArgs&) override { return Down(); }
  Result<bool> ForceUnlock(const LockArgs&) override { return Down(); }
  std::string endpoint() const override { return "http://127.0.0.9:9000 (down)"; }

 private:
  static Result<bool> Down() {
    return MakeError(ErrorCode::kServiceUnavailable, "connection refused (node down)");
  }
};

// Test simulation of a slow node: a real lock server whose answers arrive after `delay`.
class SlowLockerClient final : public LockerClient {
 public:
  SlowLockerClient(std::shared_ptr<LockServer> s, std::chrono::milliseconds delay)
      : inner_(std::move(s)), delay_(delay) {}
  Result<bool> Lock(const LockArgs& a) override {
    return Late([&] {
      auto r = inner_.Lock(a);
      if (r.ok() && *r) grants.fetch_add(1);
      return r;
    });
  }
  Result<bool> RLock(const LockArgs& a) override {
    return Late([&] { return inner_.RLock(a); });
  }
  Result<bool> Unlock(const LockArgs& a) override { return inner_.Unlock(a); }
  Result<bool> RUnlock(const LockArgs& a) override { return inner_.RUnlock(a); }
  Result<bool> Refresh(const LockArgs& a) override { return inner_.Refresh(a); }
  Result<bool> ForceUnlock(const LockArgs& a) override { return inner_.ForceUnlock(a); }
  std::string endpoint() const override { return "slow"; }
  std::atomic<int> grants{0};

 private:
  template <class F>
  Result<bool> Late(F f) {
    std::this_thread::sleep_for(delay_);
    return f();
  }
  LocalLockerClient inner_;
  std::chrono::milliseconds delay_;
};

LockArgs Args(std::string uid, std::vector<std::string> resources, std::string owner = "node1") {
  LockArgs a;
  a.uid = std::move(uid);
  a.resources = std::move(resources);
  a.owner = std::move(owner);
  return a;
}

// A fake clock for expiry tests of one lock server.
struct ManualClock {
  std::shared_ptr<std::chrono::steady_clock::time_point> t =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  std::function<std::chrono::steady_clock::time_point()> fn() const {
    return [t = t] { return *t; };
  }
  void Advance(std::chrono::milliseconds d) const { *t += d; }
};

TEST(LockQuorum, MatchesMinioDsync) {
  // N: tolerance, read quorum, write quorum.
  struct Row {
    int n, tol, read, write;
  };
  for (auto r : {Row{1, 0, 1, 1}, Row{2, 1, 1, 2}, Row{3, 1, 2, 2}, Row{4, 2, 2, 3},
                 Row{5, 2, 3, 3}, Row{8, 4, 4, 5}, Row{16, 8, 8, 9}}) {
    EXPECT_EQ(LockTolerance(r.n), r.tol) << r.n;
    EXPECT_EQ(ReadLockQuorum(r.n), r.read) << r.n;
    EXPECT_EQ(WriteLockQuorum(r.n), r.write) << r.n;
    // Two writers, and a writer and a reader, can never both reach quorum.
    EXPECT_GT(2 * WriteLockQuorum(r.n), r.n);
    EXPECT_GT(WriteLockQuorum(r.n) + ReadLockQuorum(r.n), r.n);
  }
}

TEST(LockServerTest, WriterExcludesEveryoneReadersShare) {
  LockServer s;
  EXPECT_TRUE(*s.Lock(Args("w1", {"b/k"})));
  EXPECT_FALSE(*s.Lock(Args("w2", {"b/k"})));
  EXPECT_FALSE(*s.RLock(Args("r1", {"b/k"})));
  EXPECT_TRUE(*s.Lock(Args("w2", {"b/other"})));
  // The same acquisition asking again (a retried RPC) is granted, not duplicated.
  EXPECT_TRUE(*s.Lock(Args("w1", {"b/k"})));
  EXPECT_FALSE(*s.Unlock(Args("w2", {"b/k"})));   // not its lock
  EXPECT_FALSE(*s.RUnlock(Args("w1", {"b/k"})));  // wrong mode
  EXPECT_TRUE(*s.Unlock(Args("w1", {"b/k"})));
  EXPECT_FALSE(*s.Unlock(Args("w1", {"b/k"})));  // already released

  EXPECT_TRUE(*s.RLock(Args("r1", {"b/k"})));
  EXPECT_TRUE(*s.RLock(Args("r2", {"b/k"})));
  EXPECT_FALSE(*s.Lock(Args("w3", {"b/k"})));
  EXPECT_TRUE(*s.RUnlock(Args("r1", {"b/k"})));
  EXPECT_FALSE(*s.Lock(Args("w3", {"b/k"})));
  EXPECT_TRUE(*s.RUnlock(Args("r2", {"b/k"})));
  EXPECT_TRUE(*s.Lock(Args("w3", {"b/k"})));
  EXPECT_EQ(s.Snapshot().size(), 2u);  // w2 on b/other, w3 on b/k
}

TEST(LockServerTest, MultipleResourcesAllOrNothing) {
  LockServer s;
  ASSERT_TRUE(*s.Lock(Args("a", {"x"})));
  EXPECT_FALSE(*s.Lock(Args("b", {"w", "x", "y"})));
  EXPECT_EQ(s.Snapshot().size(), 1u);  // nothing of b's was granted
  ASSERT_TRUE(*s.Unlock(Args("a", {"x"})));
  EXPECT_TRUE(*s.Lock(Args("b", {"w", "x", "y"})));
  EXPECT_EQ(s.Snapshot().size(), 3u);
  EXPECT_TRUE(*s.Unlock(Args("b", {"w", "x", "y"})));
  EXPECT_TRUE(s.Snapshot().empty());
}

TEST(LockServerTest, MalformedArgumentsAreErrors) {
  LockServer s;
  EXPECT_FALSE(s.Lock(Args("", {"x"})).ok());
  EXPECT_FALSE(s.Lock(Args("u", {})).ok());
  EXPECT_FALSE(s.RLock(Args("u", {""})).ok());
  EXPECT_FALSE(s.ForceUnlock(Args("", {})).ok());
  EXPECT_EQ(s.Lock(Args("", {"x"})).error().code, ErrorCode::kInvalidArgument);
}

TEST(LockServerTest, UnrefreshedEntriesExpire) {
  ManualClock clock;
  LockServer s({.ttl = 30000ms, .now = clock.fn()});
  ASSERT_TRUE(*s.Lock(Args("dead-node", {"b/k"}, "node4")));
  ASSERT_TRUE(*s.RLock(Args("reader", {"b/r"})));
  clock.Advance(20000ms);
  EXPECT_FALSE(*s.Lock(Args("w", {"b/k"})));
  EXPECT_TRUE(*s.Refresh(Args("reader", {"b/r"})));  // the live reader keeps its lock
  clock.Advance(15000ms);                            // 35 s since the writer's last refresh
  EXPECT_FALSE(*s.Refresh(Args("dead-node", {"b/k"})));
  EXPECT_TRUE(*s.Lock(Args("w", {"b/k"})));
  EXPECT_FALSE(*s.Lock(Args("w2", {"b/r"})));  // refreshed 15 s ago: still held
  clock.Advance(31000ms);
  EXPECT_EQ(s.Expire(), 2u);  // w and reader, neither refreshed
  EXPECT_TRUE(s.Snapshot().empty());
}

TEST(LockServerTest, ForceUnlockByResourceOrUid) {
  LockServer s;
  ASSERT_TRUE(*s.RLock(Args("r1", {"a"})));
  ASSERT_TRUE(*s.RLock(Args("r2", {"a"})));
  ASSERT_TRUE(*s.Lock(Args("w", {"b", "c"})));
  EXPECT_TRUE(*s.ForceUnlock(Args("", {"a"})));
  EXPECT_TRUE(*s.ForceUnlock(Args("w", {})));
  EXPECT_FALSE(*s.ForceUnlock(Args("w", {})));
  EXPECT_TRUE(s.Snapshot().empty());
}

LockArgs Of(std::string uid, std::vector<std::string> resources, std::string owner,
            std::string instance) {
  LockArgs a = Args(std::move(uid), std::move(resources), std::move(owner));
  a.instance = std::move(instance);
  return a;
}

TEST(LockInstanceTest, NewInstancesSortByStartTime) {
  const std::string a = NewLockInstance();
  std::this_thread::sleep_for(2ms);
  const std::string b = NewLockInstance();
  EXPECT_EQ(a.size(), 16u + 1 + 16);
  EXPECT_LT(a, b);
  EXPECT_NE(a.substr(17), b.substr(17));
}

TEST(LockServerTest, RestartedOwnersLocksAreDroppedByHandshake) {
  LockServer s;
  const std::string old_process = "0000000000000001-aa", new_process = "0000000000000002-bb";
  ASSERT_TRUE(*s.Lock(Of("w", {"b/k", "b/k2"}, "node4", old_process)));
  ASSERT_TRUE(*s.RLock(Of("r", {"b/r"}, "node4", old_process)));
  ASSERT_TRUE(*s.Lock(Of("other", {"b/o"}, "node2", "0000000000000001-cc")));
  EXPECT_FALSE(*s.Lock(Of("w2", {"b/k"}, "node1", "0000000000000001-dd")));
  size_t dropped = 0;
  EXPECT_TRUE(s.ObserveInstance("node4", new_process, &dropped));
  EXPECT_EQ(dropped, 3u);  // two resources of the writer, one reader; node2's stays
  ASSERT_EQ(s.Snapshot().size(), 1u);
  EXPECT_EQ(s.Snapshot()[0].owner, "node2");
  EXPECT_TRUE(*s.Lock(Of("w2", {"b/k"}, "node1", "0000000000000001-dd")));
  // The same instance again drops nothing.
  EXPECT_TRUE(s.ObserveInstance("node4", new_process, &dropped));
  EXPECT_EQ(dropped, 0u);
}

TEST(LockServerTest, RestartedOwnersFirstLockCallDropsItsOldLocks) {
  LockServer s;
  ASSERT_TRUE(*s.Lock(Of("w", {"b/k"}, "node4", "0000000000000001-aa")));
  // node4 came back (this server missed its handshake) and locks another key: its old entry goes.
  ASSERT_TRUE(*s.Lock(Of("w-new", {"b/other"}, "node4", "0000000000000002-bb")));
  EXPECT_TRUE(*s.Lock(Of("w2", {"b/k"}, "node1", "0000000000000001-dd")));
}

TEST(LockServerTest, LateCallOfReplacedProcessIsRefused) {
  ManualClock clock;
  LockServer s({.ttl = 30000ms, .now = clock.fn()});
  ASSERT_TRUE(s.ObserveInstance("node4", "0000000000000002-bb"));
  ASSERT_TRUE(*s.Lock(Of("new", {"b/n"}, "node4", "0000000000000002-bb")));
  // A request of the process it replaced, arriving late: refused, and the new one's lock stays.
  EXPECT_FALSE(*s.Lock(Of("late", {"b/k"}, "node4", "0000000000000001-aa")));
  EXPECT_FALSE(s.ObserveInstance("node4", "0000000000000001-aa"));
  EXPECT_EQ(s.Snapshot().size(), 1u);
  // Unheard of for over the TTL (a clock that stepped back on restart): the earlier id is taken.
  clock.Advance(31000ms);
  EXPECT_TRUE(*s.Lock(Of("again", {"b/k"}, "node4", "0000000000000001-aa")));
}

TEST(LockServerTest, UntrackedOwnersAreLeftAlone) {
  LockServer s;
  ASSERT_TRUE(*s.Lock(Args("w", {"b/k"}, "node4")));  // no instance
  EXPECT_TRUE(s.ObserveInstance("node4", "0000000000000002-bb"));
  EXPECT_FALSE(*s.Lock(Args("w2", {"b/k"}, "node1")));  // still held (expires by TTL only)
  EXPECT_TRUE(s.ObserveInstance("", "x"));
}

struct Cluster {
  explicit Cluster(int live, int down = 0, DsyncOptions opt = Fast(),
                   std::chrono::milliseconds ttl = 30000ms) {
    for (int i = 0; i < live; ++i) {
      LockServerOptions so;
      so.ttl = ttl;
      servers.push_back(std::make_shared<LockServer>(so));
      lockers.push_back(std::make_shared<LocalLockerClient>(servers.back()));
    }
    for (int i = 0; i < down; ++i) lockers.push_back(std::make_shared<UnreachableLockerClient>());
    dsync = std::make_shared<Dsync>(lockers, "node1", opt);
  }
  static DsyncOptions Fast() {
    DsyncOptions o;
    o.call_timeout = 500ms;
    o.retry_min = 2ms;
    o.retry_max = 20ms;
    return o;
  }
  // Whether the lock tables hold `n` entries in all within a bounded wait (late grants of a failed
  // attempt are released asynchronously).
  bool Settles(size_t n) const {
    for (int i = 0; i < 200 && Entries() != n; ++i) std::this_thread::sleep_for(5ms);
    return Entries() == n;
  }
  size_t Entries() const {
    size_t n = 0;
    for (const auto& s : servers) n += s->Snapshot().size();
    return n;
  }
  std::vector<std::shared_ptr<LockServer>> servers;
  std::vector<std::shared_ptr<LockerClient>> lockers;
  std::shared_ptr<Dsync> dsync;
};

TEST(DistributedLockTest, WriterExcludesWritersAndReaders) {
  Cluster c(4);
  DistributedLock a(c.dsync, {"bucket/key"}, "PutObject");
  ASSERT_TRUE(a.Lock(1s).ok());
  EXPECT_TRUE(a.held());
  EXPECT_EQ(c.Entries(), 4u);  // granted on every live server

  DistributedLock b(c.dsync, {"bucket/key"});
  auto st = b.Lock(100ms);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kSlowDown);
  EXPECT_NE(st.error().message.find("bucket/key"), std::string::npos) << st.error().message;
  EXPECT_GT(b.attempts(), 1);  // it retried until the deadline
  DistributedLock r(c.dsync, {"bucket/key"});
  EXPECT_FALSE(r.RLock(50ms).ok());
  EXPECT_EQ(c.Entries(), 4u);  // the failed attempts left nothing behind

  a.Unlock();
  EXPECT_EQ(c.Entries(), 0u);
  ASSERT_TRUE(b.Lock(1s).ok());
  b.Unlock();
}

TEST(DistributedLockTest, ReadersShare) {
  Cluster c(3);
  DistributedLock r1(c.dsync, {"k"}), r2(c.dsync, {"k"}), w(c.dsync, {"k"});
  ASSERT_TRUE(r1.RLock(1s).ok());
  ASSERT_TRUE(r2.RLock(1s).ok());
  EXPECT_FALSE(w.Lock(50ms).ok());
  r1.RUnlock();
  EXPECT_FALSE(w.Lock(50ms).ok());
  r2.RUnlock();
  EXPECT_TRUE(w.Lock(1s).ok());
  EXPECT_FALSE(w.Lock(1s).ok());  // already holding
}

TEST(DistributedLockTest, ToleratesDownNodesUpToQuorum) {
  {
    Cluster c(3, 1);  // 4 nodes, one down: write quorum 3
    DistributedLock l(c.dsync, {"k"});
    EXPECT_TRUE(l.Lock(1s).ok());
  }
  {
    Cluster c(2, 2);  // 4 nodes, two down: no write quorum, read quorum 2 still reachable
    DistributedLock l(c.dsync, {"k"});
    auto st = l.Lock(300ms);
    ASSERT_FALSE(st.ok());
    // How many of the two down nodes have answered "unreachable" by the deadline depends on the
    // machine's load; that quorum was the reason does not.
    EXPECT_NE(st.error().message.find("quorum 3"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("of 4 lock servers granted"), std::string::npos)
        << st.error().message;
    // Partial grants on the two live nodes are released (one that arrived after the attempt gave
    // up is released by the worker thread that received it).
    EXPECT_TRUE(c.Settles(0));
    DistributedLock r(c.dsync, {"k"});
    EXPECT_TRUE(r.RLock(1s).ok());
  }
  {
    Cluster c(2, 3);  // 5 nodes, three down: neither quorum
    DistributedLock r(c.dsync, {"k"});
    EXPECT_FALSE(r.RLock(50ms).ok());
    EXPECT_TRUE(c.Settles(0));
  }
}

TEST(DistributedLockTest, ReleasesPartialGrantsWhenAnotherHolderBlocksQuorum) {
  Cluster c(4);
  // Another node holds the resource on two of the four servers (e.g. its own partial attempt).
  ASSERT_TRUE(*c.servers[0]->Lock(Args("other", {"k"}, "node2")));
  ASSERT_TRUE(*c.servers[1]->Lock(Args("other", {"k"}, "node2")));
  DistributedLock l(c.dsync, {"k"});
  EXPECT_FALSE(l.Lock(100ms).ok());
  EXPECT_TRUE(c.Settles(2));  // only "other"'s entries remain
  for (const auto& s : c.servers)
    for (const auto& e : s->Snapshot()) EXPECT_EQ(e.uid, "other");
}

TEST(DistributedLockTest, LateGrantFromSlowNodeIsUndone) {
  DsyncOptions opt = Cluster::Fast();
  opt.call_timeout = 50ms;
  auto fast1 = std::make_shared<LockServer>(), fast2 = std::make_shared<LockServer>();
  auto slow = std::make_shared<LockServer>();
  auto slow_client = std::make_shared<SlowLockerClient>(slow, 300ms);
  auto ds = std::make_shared<Dsync>(
      std::vector<std::shared_ptr<LockerClient>>{std::make_shared<LocalLockerClient>(fast1),
                                                 std::make_shared<LocalLockerClient>(fast2),
                                                 slow_client},
      "node1", opt);
  DistributedLock l(ds, {"k"});
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(l.Lock(2s).ok());  // quorum 2 of 3 without waiting for the slow node
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  // The slow node's grant arrives after the attempt stopped waiting and is given back.
  for (int i = 0; i < 200 && slow_client->grants.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(slow_client->grants.load(), 1);  // the slow node did grant, late
  bool undone = false;
  for (int i = 0; i < 200 && !undone; ++i) {
    undone = slow->Snapshot().empty();
    if (!undone) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(undone);
  EXPECT_EQ(fast1->Snapshot().size(), 1u);
  l.Unlock();
  EXPECT_TRUE(fast1->Snapshot().empty());
}

TEST(DistributedLockTest, DeadHoldersLockExpires) {
  Cluster c(3, 0, Cluster::Fast(), 150ms);
  // A node took the lock everywhere and died: nobody refreshes it.
  for (auto& s : c.servers) ASSERT_TRUE(*s->Lock(Args("dead", {"k"}, "node3")));
  DistributedLock l(c.dsync, {"k"});
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(l.Lock(5s).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 140ms);
}

TEST(DistributedLockTest, RefreshKeepsHeldLockPastTtl) {
  DsyncOptions opt = Cluster::Fast();
  opt.refresh_interval = 30ms;
  // A TTL of 13 refresh intervals: a loaded 2-core machine can stall the refresher for 150 ms.
  Cluster c(3, 0, opt, 400ms);
  DistributedLock l(c.dsync, {"k"});
  ASSERT_TRUE(l.Lock(1s).ok());
  std::this_thread::sleep_for(1300ms);  // more than three TTLs
  DistributedLock other(c.dsync, {"k"});
  EXPECT_FALSE(other.Lock(50ms).ok());
  EXPECT_FALSE(l.lost());
  l.Unlock();
  EXPECT_TRUE(other.Lock(1s).ok());
}

TEST(DistributedLockTest, ReportsLossOfQuorum) {
  DsyncOptions opt = Cluster::Fast();
  opt.refresh_interval = 20ms;
  Cluster c(3, 0, opt);
  DistributedLock l(c.dsync, {"k"});
  std::atomic<int> callbacks{0};
  l.OnLost([&] { callbacks.fetch_add(1); });
  ASSERT_TRUE(l.Lock(1s).ok());
  // An operator force-unlocks on two of three servers: only one confirms the next refresh.
  ASSERT_TRUE(*c.servers[0]->ForceUnlock(Args("", {"k"})));
  std::this_thread::sleep_for(60ms);
  EXPECT_FALSE(l.lost());  // one of three gone: quorum 2 still confirms
  ASSERT_TRUE(*c.servers[1]->ForceUnlock(Args("", {"k"})));
  for (int i = 0; i < 200 && !l.lost(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(l.lost());
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(callbacks.load(), 1);
  l.Unlock();
  EXPECT_EQ(c.Entries(), 0u);
}

TEST(DistributedLockTest, ConcurrentWritersExactlyOneHolds) {
  Cluster c(3, 1);  // 4 nodes, one down
  constexpr int kThreads = 4, kIterations = 25;
  std::atomic<int> inside{0}, max_inside{0}, done{0}, failures{0};
  int64_t shared_counter = 0;  // touched only under the distributed lock
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        DistributedLock l(c.dsync, {"bucket/hot-key"});
        if (!l.Lock(20s).ok()) {
          failures.fetch_add(1);
          continue;
        }
        int now = inside.fetch_add(1) + 1;
        int prev = max_inside.load();
        while (now > prev && !max_inside.compare_exchange_weak(prev, now)) {
        }
        int64_t v = shared_counter;
        std::this_thread::sleep_for(200us);
        shared_counter = v + 1;
        inside.fetch_sub(1);
        l.Unlock();
        done.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(done.load(), kThreads * kIterations);
  EXPECT_EQ(shared_counter, kThreads * kIterations);
  EXPECT_EQ(c.Entries(), 0u);
}

// ---- DsyncNamespaceLocker: the erasure layer's namespace locks over dsync ----------------------

TEST(DsyncNamespaceLockerTest, ExcludesAcrossNodesAndTimesOutAsSlowDown) {
  Cluster c(4);
  // Two nodes' lockers over the same lock servers (each node has its own Dsync).
  DsyncNamespaceLocker node1(c.dsync),
      node2(std::make_shared<Dsync>(c.lockers, "node2", Cluster::Fast()));
  using storage::LockMode;
  auto w = node1.Lock({"bkt/key"}, LockMode::kExclusive, 1s, "PutObject");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_FALSE((*w)->lost());
  auto w2 = node2.Lock({"bkt/key"}, LockMode::kExclusive, 100ms, "PutObject");
  ASSERT_FALSE(w2.ok());
  EXPECT_EQ(w2.error().code, ErrorCode::kSlowDown);
  auto r = node2.Lock({"bkt/key"}, LockMode::kShared, 50ms, "GetObject");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kSlowDown);
  EXPECT_TRUE(node2.Lock({"bkt/other"}, LockMode::kExclusive, 1s, "PutObject").ok());
  w->reset();  // released on every lock server
  EXPECT_TRUE(c.Settles(0));
  auto r1 = node1.Lock({"bkt/key"}, LockMode::kShared, 1s, "GetObject");
  auto r2 = node2.Lock({"bkt/key"}, LockMode::kShared, 1s, "GetObject");
  EXPECT_TRUE(r1.ok() && r2.ok());
}

TEST(DsyncNamespaceLockerTest, LossOfQuorumShowsInLost) {
  DsyncOptions opt = Cluster::Fast();
  opt.refresh_interval = 20ms;
  Cluster c(3, 0, opt);
  DsyncNamespaceLocker locker(c.dsync);
  auto w = locker.Lock({"bkt/key"}, storage::LockMode::kExclusive, 1s, "PutObject");
  ASSERT_TRUE(w.ok());
  // Two of three lock servers forget the lock (restarted nodes, an operator's force-unlock).
  ASSERT_TRUE(*c.servers[0]->ForceUnlock(Args("", {"bkt/key"})));
  ASSERT_TRUE(*c.servers[1]->ForceUnlock(Args("", {"bkt/key"})));
  for (int i = 0; i < 200 && !(*w)->lost(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE((*w)->lost());
}

TEST(DsyncNamespaceLockerTest, HungNodeDoesNotHoldEveryLock) {
  DsyncOptions opt = Cluster::Fast();
  opt.call_timeout = 1s;  // the default; straggler_wait stays 50 ms
  Cluster c(3);
  auto lockers = c.lockers;
  lockers.push_back(std::make_shared<SlowLockerClient>(std::make_shared<LockServer>(), 600ms));
  DsyncNamespaceLocker locker(std::make_shared<Dsync>(lockers, "node1", opt));
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto w = locker.Lock({"bkt/key"}, storage::LockMode::kExclusive, 5s, "PutObject");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms);  // not the 1 s call timeout
  }
}

TEST(DistributedLockTest, RestartedHolderFreesItsKeysAtOnce) {
  std::vector<std::shared_ptr<LockServer>> servers;
  std::vector<std::shared_ptr<LockerClient>> lockers;
  for (int i = 0; i < 4; ++i) {
    servers.push_back(std::make_shared<LockServer>());
    lockers.push_back(std::make_shared<LocalLockerClient>(servers.back()));
  }
  // node4's first process takes the lock and "dies" holding it (not released, and not refreshed
  // within the test: the refresh interval is 10 s).
  auto first = std::make_shared<Dsync>(lockers, "node4", Cluster::Fast());
  DistributedLock dead(first, {"bucket/key"}, "PutObject");
  ASSERT_TRUE(dead.Lock(1000ms).ok());
  auto other = std::make_shared<Dsync>(lockers, "node1", Cluster::Fast());
  DistributedLock blocked(other, {"bucket/key"});
  EXPECT_EQ(blocked.Lock(100ms).error().code, ErrorCode::kSlowDown);
  // node4 restarts: a new process (a later instance) greets every lock server.
  std::this_thread::sleep_for(2ms);
  auto second = std::make_shared<Dsync>(lockers, "node4", Cluster::Fast());
  ASSERT_NE(first->instance(), second->instance());
  for (auto& s : servers) EXPECT_TRUE(s->ObserveInstance("node4", second->instance()));
  DistributedLock writer(other, {"bucket/key"});
  EXPECT_TRUE(writer.Lock(100ms).ok());
}

}  // namespace
}  // namespace rdmastor::cluster
