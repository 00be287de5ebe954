#include "rdma/device_monitor.h"

#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

DeviceMonitor::DeviceMonitor(DeviceMonitorOptions options, Hooks hooks)
    : options_(options), hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { Run(); });
}

DeviceMonitor::~DeviceMonitor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeviceMonitor::Run() {
  ReopenBackoff backoff(options_.reopen_first, options_.reopen_cap);
  bool released = false;
  auto wait = options_.look;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
    }
    if (!released) {
      wait = options_.look;
      std::string why = hooks_.gone();
      if (why.empty()) continue;
      hooks_.release(why);
      released = true;
      backoff.Reset();
      wait = backoff.Next();
      continue;
    }
    released = !hooks_.reopen();
    wait = released ? backoff.Next() : options_.look;
  }
}

}  // namespace rdmastor::rdma
