// ThreadPool: tasks go straight to an idle worker or, when all are busy, wait in FIFO order;
// Shutdown runs what is queued, then joins.
#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace rdmastor {
namespace {

using namespace std::chrono_literals;

// Blocks its callers until Open(); bounded so a broken pool fails instead of hanging.
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 10s, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(ThreadPool, RunsEveryTaskOnceOnPoolThreads) {
  std::atomic<int> ran{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
  {
    ThreadPool pool(4);
    for (int i = 0; i < 1000; ++i) {
      pool.Submit([&] {
        ran.fetch_add(1);
        std::lock_guard lock(mu);
        threads.insert(std::this_thread::get_id());
      });
    }
  }  // the destructor finishes queued work
  EXPECT_EQ(ran.load(), 1000);
  EXPECT_LE(threads.size(), 4u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(ThreadPool, QueuedTasksRunInSubmitOrderWhenEveryWorkerIsBusy) {
  ThreadPool pool(1);
  Gate gate;
  std::mutex mu;
  std::vector<int> order;
  pool.Submit([&] { gate.Wait(); });  // holds the only worker
  for (int i = 0; i < 50; ++i) {
    pool.Submit([&, i] {
      std::lock_guard lock(mu);
      order.push_back(i);
    });
  }
  gate.Open();
  pool.Shutdown();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

TEST(ThreadPool, TasksRunConcurrentlyUpToThePoolSize) {
  ThreadPool pool(3);
  Gate gate;
  std::atomic<int> inside{0};
  for (int i = 0; i < 3; ++i) {
    pool.Submit([&] {
      inside.fetch_add(1);
      gate.Wait();
    });
  }
  for (int i = 0; i < 500 && inside.load() < 3; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(inside.load(), 3);  // three blocked tasks each hold their own worker
  gate.Open();
}

TEST(ThreadPool, TasksMaySubmitTasksAndShutdownRunsThem) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 20; ++i) {
      pool.Submit([&] {
        ran.fetch_add(1);
        pool.Submit([&] { ran.fetch_add(1); });
      });
    }
    // Let the first wave finish so the nested submissions are queued or handed out before
    // Shutdown stops accepting work.
    for (int i = 0; i < 500 && ran.load() < 40; ++i) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(ran.load(), 40);
}

TEST(ThreadPool, IdleWorkersExitOnShutdown) {
  ThreadPool pool(8);
  std::this_thread::sleep_for(20ms);  // every worker is idle, waiting on its own wake-up
  auto t0 = std::chrono::steady_clock::now();
  pool.Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  pool.Shutdown();  // a second call is harmless
}

}  // namespace
}  // namespace rdmastor
