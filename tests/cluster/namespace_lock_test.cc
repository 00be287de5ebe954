// The erasure layer's namespace locks over dsync: exclusion across "nodes" (one in-process lock
// server each), timeouts as 503 SlowDown, loss of quorum reported through lost(), and a hung
// node that does not slow every lock down.
#include "cluster/namespace_lock.h"

#include <gtest/gtest.h>

#include <thread>

namespace rdmastor::cluster {
namespace {

using namespace std::chrono_literals;
using storage::LockMode;

// A node that accepted the connection and never answers (until the test ends).
class HungLockerClient final : public LockerClient {
 public:
  explicit HungLockerClient(std::chrono::milliseconds hang) : hang_(hang) {}
  Result<bool> Lock(const LockArgs&) override { return Hang(); }
  Result<bool> RLock(const LockArgs&) override { return Hang(); }
  Result<bool> Unlock(const LockArgs&) override { return Hang(); }
  Result<bool> RUnlock(const LockArgs&) override { return Hang(); }
  Result<bool> Refresh(const LockArgs&) override { return Hang(); }
  Result<bool> ForceUnlock(const LockArgs&) override { return Hang(); }
  std::string endpoint() const override { return "hung"; }

 private:
  Result<bool> Hang() {
    std::this_thread::sleep_for(hang_);
    return MakeError(ErrorCode::kServiceUnavailable, "timed out");
  }
  std::chrono::milliseconds hang_;
};

struct Nodes {
  explicit Nodes(int live, DsyncOptions opt = {}, int hung = 0) {
    for (int i = 0; i < live; ++i) {
      servers.push_back(std::make_shared<LockServer>());
      lockers.push_back(std::make_shared<LocalLockerClient>(servers.back()));
    }
    for (int i = 0; i < hung; ++i) lockers.push_back(std::make_shared<HungLockerClient>(400ms));
    opt.retry_min = 2ms;
    opt.retry_max = 20ms;
    dsync = std::make_shared<Dsync>(lockers, "node1", opt);
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

TEST(DsyncNamespaceLockerTest, ExcludesAcrossNodesAndTimesOutAsSlowDown) {
  Nodes n(4);
  // Two nodes' lockers over the same lock servers (each node has its own Dsync, same lockers).
  DsyncNamespaceLocker node1(n.dsync), node2(std::make_shared<Dsync>(n.lockers, "node2"));
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
  EXPECT_EQ(n.Entries(), 0u);
  auto r1 = node1.Lock({"bkt/key"}, LockMode::kShared, 1s, "GetObject");
  auto r2 = node2.Lock({"bkt/key"}, LockMode::kShared, 1s, "GetObject");
  EXPECT_TRUE(r1.ok() && r2.ok());
}

TEST(DsyncNamespaceLockerTest, LossOfQuorumShowsInLost) {
  DsyncOptions opt;
  opt.refresh_interval = 20ms;
  opt.call_timeout = 200ms;
  Nodes n(3, opt);
  DsyncNamespaceLocker locker(n.dsync);
  auto w = locker.Lock({"bkt/key"}, LockMode::kExclusive, 1s, "PutObject");
  ASSERT_TRUE(w.ok());
  // Two of three lock servers forget the lock (restarted nodes, an operator's force-unlock).
  LockArgs all;
  all.resources = {"bkt/key"};
  ASSERT_TRUE(*n.servers[0]->ForceUnlock(all));
  ASSERT_TRUE(*n.servers[1]->ForceUnlock(all));
  for (int i = 0; i < 200 && !(*w)->lost(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE((*w)->lost());
}

TEST(DsyncNamespaceLockerTest, HungNodeDoesNotHoldEveryLock) {
  DsyncOptions opt;  // call_timeout 1 s, straggler_wait 50 ms
  Nodes n(3, opt, /*hung=*/1);
  DsyncNamespaceLocker locker(n.dsync);
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto w = locker.Lock({"bkt/key"}, LockMode::kExclusive, 5s, "PutObject");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms);  // not the 1 s call timeout
    auto r = std::chrono::steady_clock::now();
    w->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - r, 300ms);  // the hung node never granted
  }
}

}  // namespace
}  // namespace rdmastor::cluster
