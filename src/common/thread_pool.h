// A fixed pool of threads draining one FIFO queue: the place where blocking work (disk I/O,
// hashing, later erasure coding) runs, off the network I/O threads.
//
// A task submitted while a worker is idle goes straight to that worker (the one that went idle
// last: its cache is warm, and a few busy threads share fewer malloc arenas), which waits on its
// own condition variable: one wake-up per task, and no herd of idle workers contending for the
// queue's lock, which on a 2-core or paravirtualised machine costs more than the task itself.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rdmastor {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Loop(); });
  }
  ~ThreadPool() { Shutdown(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task) {
    if (!task) return;  // an empty task is how Shutdown tells an idle worker to exit
    Idle* idle = nullptr;
    {
      std::lock_guard lock(mu_);
      if (idle_.empty()) {  // every worker is busy: the first to finish takes it from the queue
        queue_.push_back(std::move(task));
        return;
      }
      idle = idle_.back();
      idle_.pop_back();
    }
    {
      std::lock_guard lock(idle->mu);
      idle->task = std::move(task);
      idle->woken = true;
    }
    idle->cv.notify_one();
  }

  // Finishes queued work, then joins.
  void Shutdown() {
    std::vector<Idle*> idle;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      idle.swap(idle_);  // the queue is empty whenever a worker is idle
    }
    for (Idle* w : idle) {
      {
        std::lock_guard lock(w->mu);
        w->woken = true;  // with no task: exit
      }
      w->cv.notify_one();
    }
    for (auto& t : workers_)
      if (t.joinable()) t.join();
  }

 private:
  // A worker waiting for a task; lives on the worker's stack.
  struct Idle {
    std::mutex mu;
    std::condition_variable cv;
    std::function<void()> task;
    bool woken = false;
  };

  void Loop() {
    Idle self;
    for (;;) {
      std::function<void()> task;
      {
        std::lock_guard lock(mu_);
        if (!queue_.empty()) {
          task = std::move(queue_.front());
          queue_.pop_front();
        } else if (stopping_) {
          return;
        } else {
          idle_.push_back(&self);
        }
      }
      if (!task) {
        std::unique_lock lock(self.mu);
        self.cv.wait(lock, [&self] { return self.woken; });
        self.woken = false;
        if (!self.task) return;  // Shutdown
        task = std::move(self.task);
        self.task = nullptr;
      }
      task();
    }
  }

  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
  std::vector<Idle*> idle_;  // LIFO: the worker idle the shortest time is woken first
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

}  // namespace rdmastor
