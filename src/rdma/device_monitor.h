// The one device monitor of a verbs fabric's owner (S3 over RDMA, inter-node shards): a thread
// that looks at the fabric every `look`; when its device is gone (removed, failed: the fabric
// says NeedsReopen, a target says Lost) it has the owner free everything made on the device at
// once — on drivers that cannot disassociate a context (rxe, siw) `rdma link delete` waits for
// that — and then asks the owner to open the device again, after `reopen_first` doubling to at
// most `reopen_cap` (ReopenBackoff), until it is back. The owner keeps its own state; the
// monitor only decides when to call which hook.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace rdmastor::rdma {

struct DeviceMonitorOptions {
  std::chrono::milliseconds look{500};
  std::chrono::milliseconds reopen_first{250};
  std::chrono::milliseconds reopen_cap{4000};
};

class DeviceMonitor {
 public:
  struct Hooks {
    // While the owner holds its fabric: "" when it can stay (serving, or only its port is
    // down), else why its device is gone.
    std::function<std::string()> gone;
    // Frees everything made on the device (`why`: what gone() said).
    std::function<void(const std::string& why)> release;
    // Opens the device again and makes everything anew; false while it is not back.
    std::function<bool()> reopen;
  };
  // Starts the thread: the hooks run on it, never two at once.
  DeviceMonitor(DeviceMonitorOptions options, Hooks hooks);
  // Stops the thread (a hook that runs ends first); call before what the hooks touch goes away.
  ~DeviceMonitor();
  DeviceMonitor(const DeviceMonitor&) = delete;
  DeviceMonitor& operator=(const DeviceMonitor&) = delete;

 private:
  void Run();

  const DeviceMonitorOptions options_;
  const Hooks hooks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rdmastor::rdma
