// Namespace locks: the in-process locker itself, and how the erasure layer uses a locker (writers
// of one key serialise their commits, a lock that does not come in time is 503 SlowDown and
// publishes nothing, a lost lock aborts before the commit, GET/HEAD take the shared lock).
#include "storage/namespace_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/no_block.h"
#include "storage/erasure_store.h"
#include "storage/object_meta.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using namespace std::chrono_literals;
using testing::Get;
using testing::Pattern;
using testing::Put;
using testing::TempDir;
using testing::Tree;

// A thread that must not wait (an I/O thread serving a GET itself) takes a free lock, and is
// refused at once, its scope tripped, where a writer holds or waits for it.
TEST(LocalNamespaceLockerTest, NoBlockScopeTakesOnlyAFreeLock) {
  LocalNamespaceLocker l;
  {
    noblock::Scope scope;
    EXPECT_TRUE(l.Lock({"b/k"}, LockMode::kShared, 10s, "test").ok());
    EXPECT_FALSE(scope.tripped());
  }
  auto w = l.Lock({"b/k"}, LockMode::kExclusive, 1s, "test");
  ASSERT_TRUE(w.ok());
  {
    noblock::Scope scope;
    const auto started = std::chrono::steady_clock::now();
    EXPECT_FALSE(l.Lock({"b/k"}, LockMode::kShared, 10s, "test").ok());
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
    EXPECT_TRUE(scope.tripped());
  }
  w->reset();
  EXPECT_EQ(l.active(), 0u);
}

TEST(LocalNamespaceLockerTest, WriterExcludesWritersAndReadersReadersShare) {
  LocalNamespaceLocker l;
  auto w = l.Lock({"b/k"}, LockMode::kExclusive, 1s, "test");
  ASSERT_TRUE(w.ok());
  auto w2 = l.Lock({"b/k"}, LockMode::kExclusive, 30ms, "test");
  ASSERT_FALSE(w2.ok());
  EXPECT_EQ(w2.error().code, ErrorCode::kSlowDown);
  EXPECT_NE(w2.error().message.find("b/k"), std::string::npos) << w2.error().message;
  EXPECT_FALSE(l.Lock({"b/k"}, LockMode::kShared, 30ms, "test").ok());
  EXPECT_TRUE(l.Lock({"b/other"}, LockMode::kExclusive, 30ms, "test").ok());
  w->reset();
  auto r1 = l.Lock({"b/k"}, LockMode::kShared, 1s, "test");
  auto r2 = l.Lock({"b/k"}, LockMode::kShared, 1s, "test");
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_FALSE(l.Lock({"b/k"}, LockMode::kExclusive, 30ms, "test").ok());
  r1->reset();
  r2->reset();
  EXPECT_EQ(l.active(), 0u);  // released and timed-out requests leave nothing behind
}

TEST(LocalNamespaceLockerTest, WaitingWriterKeepsNewReadersOut) {
  LocalNamespaceLocker l;
  auto r = l.Lock({"k"}, LockMode::kShared, 1s, "test");
  ASSERT_TRUE(r.ok());
  std::atomic<bool> writer_got{false};
  std::thread writer([&] {
    auto w = l.Lock({"k"}, LockMode::kExclusive, 5s, "test");
    writer_got = w.ok();
  });
  for (int i = 0; i < 200 && l.active() == 1; ++i) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);  // the writer is waiting now
  EXPECT_FALSE(l.Lock({"k"}, LockMode::kShared, 30ms, "test").ok());
  r->reset();
  writer.join();
  EXPECT_TRUE(writer_got);
  EXPECT_TRUE(l.Lock({"k"}, LockMode::kShared, 1s, "test").ok());
}

TEST(LocalNamespaceLockerTest, WaiterGetsTheLockWhenReleased) {
  LocalNamespaceLocker l;
  auto w = l.Lock({"k"}, LockMode::kExclusive, 1s, "test");
  ASSERT_TRUE(w.ok());
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    w->reset();
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(l.Lock({"k"}, LockMode::kExclusive, 5s, "test").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 40ms);
  release.join();
}

// ---- the erasure layer with a locker ----------------------------------------------------------

// Wraps a LocalNamespaceLocker: counts holders per resource and records the most exclusive holders
// seen at once, and can mark the locks it hands out as lost.
class RecordingLocker final : public NamespaceLocker {
 public:
  Result<std::unique_ptr<NamespaceLock>> Lock(const std::vector<std::string>& resources,
                                              LockMode mode, std::chrono::milliseconds timeout,
                                              std::string_view source) override {
    auto inner = inner_.Lock(resources, mode, timeout, source);
    if (!inner.ok()) return inner.error();
    sources_.Add(std::string(source));
    return std::unique_ptr<NamespaceLock>(new Held(this, std::move(*inner), mode));
  }

  LocalNamespaceLocker& inner() { return inner_; }
  int max_writers() const { return max_writers_.load(); }
  std::atomic<bool> lose{false};  // locks report lost() while set
  std::set<std::string> sources() { return sources_.Get(); }

 private:
  class Held final : public NamespaceLock {
   public:
    Held(RecordingLocker* owner, std::unique_ptr<NamespaceLock> inner, LockMode mode)
        : owner_(owner), inner_(std::move(inner)), mode_(mode) {
      if (mode_ != LockMode::kExclusive) return;
      int now = owner_->writers_.fetch_add(1) + 1;
      int prev = owner_->max_writers_.load();
      while (now > prev && !owner_->max_writers_.compare_exchange_weak(prev, now)) {
      }
      std::this_thread::sleep_for(1ms);  // widen the window a second writer would slip into
    }
    ~Held() override {
      if (mode_ == LockMode::kExclusive) owner_->writers_.fetch_sub(1);
    }
    bool lost() const override { return owner_->lose.load(); }

   private:
    RecordingLocker* owner_;
    std::unique_ptr<NamespaceLock> inner_;
    LockMode mode_;
  };
  struct Sources {
    std::mutex mu;
    std::set<std::string> s;
    void Add(std::string v) {
      std::lock_guard l(mu);
      s.insert(std::move(v));
    }
    std::set<std::string> Get() {
      std::lock_guard l(mu);
      return s;
    }
  };

  LocalNamespaceLocker inner_;
  std::atomic<int> writers_{0}, max_writers_{0};
  Sources sources_;
};

class ErasureLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4; ++i) {
      drives_.push_back(dir_.path() + "/d" + std::to_string(i));
      std::filesystem::create_directories(drives_.back());
    }
    auto s = ErasureStore::Open(drives_, {});
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    locker_ = std::make_shared<RecordingLocker>();
    store_->SetNamespaceLocker(locker_, 200ms);
    auto made = store_->MakeBucket("bkt");
    ASSERT_TRUE(made.ok()) << made.error().message;
  }

  // The metadata of b/<key> as each drive holds it (nullopt where absent).
  std::vector<std::optional<ObjectMeta>> DriveMetas(const std::string& key) {
    std::vector<std::optional<ObjectMeta>> out;
    for (const auto& d : drives_) {
      const std::string path = d + "/bkt/" + key + "/.rdmastor.meta";
      std::ifstream f(path);
      if (!f) {
        out.emplace_back();
        continue;
      }
      std::stringstream ss;
      ss << f.rdbuf();
      auto m = ParseObjectMeta(ss.str(), path);
      EXPECT_TRUE(m.ok()) << path;
      out.push_back(m.ok() ? std::optional<ObjectMeta>(*m) : std::nullopt);
    }
    return out;
  }

  // Nothing left in any drive's staging area (but clean staging directories kept for reuse).
  void ExpectNoStaging() {
    for (const auto& d : drives_)
      EXPECT_EQ(testing::StagingLeftovers(d + "/.rdmastor.sys/tmp"), std::vector<std::string>{})
          << d;
  }

  TempDir dir_;
  std::vector<std::string> drives_;
  std::unique_ptr<ErasureStore> store_;
  std::shared_ptr<RecordingLocker> locker_;
};

TEST_F(ErasureLockTest, ConcurrentWritersOfOneKeySerialiseAndLeaveOneVersion) {
  constexpr int kThreads = 8, kPuts = 4;
  std::vector<std::string> bodies;
  for (int i = 0; i < kThreads * kPuts; ++i) {
    // Inline, one stripe and several stripes.
    const size_t sizes[] = {1000, 100 << 10, (1 << 20) + 7, (2 << 20) + 3};
    bodies.push_back(Pattern(sizes[i % 4] + static_cast<size_t>(i), static_cast<uint32_t>(i)));
  }
  store_->SetNamespaceLocker(locker_, 20s);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        if (!Put(*store_, "bkt", "hot", bodies[static_cast<size_t>(t * kPuts + i)]).ok())
          ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(locker_->max_writers(), 1);
  const std::string got = Get(*store_, "bkt", "hot");
  EXPECT_NE(std::find(bodies.begin(), bodies.end(), got), bodies.end()) << got.size();
  auto metas = DriveMetas("hot");
  for (const auto& m : metas) {
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->data_dir, metas[0]->data_dir);
    EXPECT_EQ(m->etag, hash::Md5Hex(got));
  }
  ExpectNoStaging();
  EXPECT_EQ(locker_->inner().active(), 0u);
}

TEST_F(ErasureLockTest, WriteThatCannotGetItsLockIsSlowDownAndPublishesNothing) {
  const std::string before = Pattern(300 << 10, 1);
  ASSERT_TRUE(Put(*store_, "bkt", "k", before).ok());
  auto held = locker_->inner().Lock({ObjectResource("bkt", "k")}, LockMode::kExclusive, 1s, "test");
  ASSERT_TRUE(held.ok());
  auto start = std::chrono::steady_clock::now();
  auto put = Put(*store_, "bkt", "k", Pattern(2 << 20, 2));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code, ErrorCode::kSlowDown) << put.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);  // it waited for the lock
  auto del = store_->DeleteObject("bkt", "k");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, ErrorCode::kSlowDown);
  // Readers take the shared lock: a writer holding the key keeps them out too.
  auto get = store_->OpenObject("bkt", "k");
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.error().code, ErrorCode::kSlowDown);
  EXPECT_FALSE(store_->StatObject("bkt", "k").ok());
  held->reset();
  EXPECT_EQ(Get(*store_, "bkt", "k"), before);
  EXPECT_TRUE(store_->StatObject("bkt", "k").ok());
  ExpectNoStaging();
  auto sources = locker_->sources();
  for (const char* s : {"PutObject", "GetObject", "HeadObject"}) EXPECT_TRUE(sources.count(s)) << s;
}

TEST_F(ErasureLockTest, ReadersShareTheLock) {
  ASSERT_TRUE(Put(*store_, "bkt", "k", "hello").ok());
  auto reader = locker_->inner().Lock({ObjectResource("bkt", "k")}, LockMode::kShared, 1s, "test");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(Get(*store_, "bkt", "k"), "hello");
  EXPECT_TRUE(store_->StatObject("bkt", "k").ok());
}

TEST_F(ErasureLockTest, LostLockAbortsBeforeTheCommit) {
  const std::string before = Pattern(200 << 10, 3);
  ASSERT_TRUE(Put(*store_, "bkt", "k", before).ok());
  locker_->lose = true;
  auto put = Put(*store_, "bkt", "k", Pattern(1 << 20, 4));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code, ErrorCode::kSlowDown) << put.error().message;
  auto put_new = Put(*store_, "bkt", "new", "x");
  ASSERT_FALSE(put_new.ok());
  locker_->lose = false;
  EXPECT_EQ(Get(*store_, "bkt", "k"), before);
  EXPECT_FALSE(store_->StatObject("bkt", "new").ok());
  for (const auto& m : DriveMetas("new")) EXPECT_FALSE(m.has_value());
  ExpectNoStaging();
}

TEST_F(ErasureLockTest, ConcurrentPutAndDeleteEndWithAWholeObjectOrNone) {
  store_->SetNamespaceLocker(locker_, 20s);
  const std::string body = Pattern((1 << 20) + 5, 9);
  std::atomic<int> failures{0};
  std::thread putter([&] {
    for (int i = 0; i < 10; ++i) failures += Put(*store_, "bkt", "pd", body).ok() ? 0 : 1;
  });
  std::thread deleter([&] {
    for (int i = 0; i < 10; ++i) {
      auto st = store_->DeleteObject("bkt", "pd");
      failures += st.ok() || st.error().code == ErrorCode::kNoSuchKey ? 0 : 1;
    }
  });
  putter.join();
  deleter.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(locker_->max_writers(), 1);
  auto metas = DriveMetas("pd");
  const bool exists = metas[0].has_value();
  for (const auto& m : metas) EXPECT_EQ(m.has_value(), exists);  // every drive agrees
  if (exists) {
    EXPECT_EQ(Get(*store_, "bkt", "pd"), body);
  }
  ExpectNoStaging();
}

TEST_F(ErasureLockTest, HealLocksOnlyWhenItHasSomethingToWrite) {
  const std::string body = Pattern(300 << 10, 5);
  ASSERT_TRUE(Put(*store_, "bkt", "k", body).ok());
  auto held = locker_->inner().Lock({ObjectResource("bkt", "k")}, LockMode::kExclusive, 1s, "test");
  ASSERT_TRUE(held.ok());
  // A healthy object is verified without the lock: a heal walk never waits for writers.
  auto start = std::chrono::steady_clock::now();
  auto healthy = store_->HealObject("bkt", "k");
  ASSERT_TRUE(healthy.ok()) << healthy.error().message;
  EXPECT_FALSE(*healthy);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 150ms);
  // A drive lost its copy: rewriting it needs the lock.
  std::filesystem::remove_all(drives_[0] + "/bkt/k");
  auto blocked = store_->HealObject("bkt", "k");
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().code, ErrorCode::kSlowDown);
  held->reset();
  auto healed = store_->HealObject("bkt", "k");
  ASSERT_TRUE(healed.ok()) << healed.error().message;
  EXPECT_TRUE(*healed);
  EXPECT_TRUE(DriveMetas("k")[0].has_value());
  EXPECT_EQ(Get(*store_, "bkt", "k"), body);
}

}  // namespace
}  // namespace rdmastor::storage
