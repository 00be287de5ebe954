// The GPU path's driver logic (src/client/cuda_export.h) over a table of stub driver entry points
// that model what the real driver requires: a thread has no current context until one is set,
// and export, flush and stream calls fail without the owning device's context current (the
// failure of issue 37 item 3: parts of a large tensor ran on pool threads that never touched
// CUDA). No GPU here; the Python GPU round trip is a kit step (scripts/hw-validate.sh).
#include "client/cuda_export.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace rdmastor::client::cuda {
namespace {

constexpr CuResult kInvalidValue = 1;     // CUDA_ERROR_INVALID_VALUE
constexpr CuResult kInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT

// The stub driver: two devices; device d's memory is [0x1000'0000 * (d+1), +64 MiB), one
// allocation per device, and its primary context is the address of primaries[d].
struct Fake {
  int primaries[2] = {};
  int ordering[2] = {0, 100};  // device 0 needs flushes, device 1 orders natively
  int options[2] = {1, 1};
  unsigned long long buffer_id[2] = {11, 22};
  std::atomic<int> retained[2] = {0, 0};
  std::atomic<int> exports{0}, flushes{0}, attribute_reads{0}, syncs{0};
  std::mutex mu;
  std::vector<std::string> log;  // "thread:call" (thread: a per-test number)
  DevicePtr last_export_start = 0;
  size_t last_export_len = 0;
};
Fake* fake = nullptr;
thread_local Context current = nullptr;
thread_local int thread_no = 0;

constexpr DevicePtr kAllocLen = 64ull << 20;
DevicePtr Base(int d) { return 0x1000'0000ull * (d + 1); }
int DeviceOf(DevicePtr p) {
  for (int d = 0; d < 2; ++d)
    if (p >= Base(d) && p < Base(d) + kAllocLen) return d;
  return -1;
}
Context Primary(int d) { return &fake->primaries[d]; }
void Log(const std::string& call) {
  std::lock_guard lock(fake->mu);
  fake->log.push_back(std::to_string(thread_no) + ":" + call);
}
// The device whose context is current on this thread, or -1.
int CurrentDevice() {
  for (int d = 0; d < 2; ++d)
    if (current == Primary(d)) return d;
  return -1;
}

DriverTable Table() {
  DriverTable t;
  t.pointer_get_attribute = [](void* data, int attr, DevicePtr p) -> CuResult {
    const int d = DeviceOf(p);
    if (d < 0) return kInvalidValue;
    if (attr == kPointerAttributeDeviceOrdinal) {
      Log("ordinal");
      *static_cast<int*>(data) = d;
    } else if (attr == kPointerAttributeBufferId) {
      *static_cast<unsigned long long*>(data) = fake->buffer_id[d];
    } else {
      return kInvalidValue;
    }
    return kCudaSuccess;
  };
  t.device_get = [](Device* dev, int ordinal) -> CuResult {
    Log("device_get");
    if (ordinal < 0 || ordinal > 1) return kInvalidValue;
    *dev = ordinal;
    return kCudaSuccess;
  };
  t.primary_ctx_retain = [](Context* ctx, Device dev) -> CuResult {
    Log("retain");
    ++fake->retained[dev];
    *ctx = Primary(dev);
    return kCudaSuccess;
  };
  t.primary_ctx_release = [](Device dev) -> CuResult {
    Log("release");
    --fake->retained[dev];
    return kCudaSuccess;
  };
  t.ctx_get_current = [](Context* ctx) -> CuResult {
    Log("get_current");
    *ctx = current;
    return kCudaSuccess;
  };
  t.ctx_set_current = [](Context ctx) -> CuResult {
    Log(ctx == nullptr ? "set_current(none)" : "set_current(" + std::to_string(
                                                   ctx == Primary(0) ? 0 : 1) + ")");
    current = ctx;
    return kCudaSuccess;
  };
  t.get_address_range = [](DevicePtr* base, size_t* size, DevicePtr p) -> CuResult {
    const int d = DeviceOf(p);
    if (d < 0) return kInvalidValue;
    if (CurrentDevice() != d) return kInvalidContext;
    *base = Base(d);
    *size = kAllocLen;
    return kCudaSuccess;
  };
  t.get_handle_for_address_range = [](void* handle, DevicePtr p, size_t size, int type,
                                      unsigned long long) -> CuResult {
    Log("export");
    const int d = DeviceOf(p);
    if (d < 0 || type != kRangeHandleDmaBufFd || p % 4096 != 0 || size % 4096 != 0 ||
        p + size > Base(d) + kAllocLen)
      return kInvalidValue;
    if (CurrentDevice() != d) return kInvalidContext;
    ++fake->exports;
    {
      std::lock_guard lock(fake->mu);
      fake->last_export_start = p;
      fake->last_export_len = size;
    }
    *static_cast<int*>(handle) = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return kCudaSuccess;
  };
  t.device_get_attribute = [](int* value, int attr, Device dev) -> CuResult {
    ++fake->attribute_reads;
    if (attr == kDeviceAttributeWritesOrdering) *value = fake->ordering[dev];
    else if (attr == kDeviceAttributeFlushWritesOptions) *value = fake->options[dev];
    else return kInvalidValue;
    return kCudaSuccess;
  };
  t.flush_gpudirect_rdma_writes = [](int target, int scope) -> CuResult {
    Log("flush");
    if (target != kFlushTargetCurrentCtx || scope != kFlushToOwner) return kInvalidValue;
    if (CurrentDevice() < 0) return kInvalidContext;
    ++fake->flushes;
    return kCudaSuccess;
  };
  t.stream_synchronize = [](Stream) -> CuResult {
    if (CurrentDevice() < 0) return kInvalidContext;
    ++fake->syncs;
    return kCudaSuccess;
  };
  t.get_error_name = [](CuResult r, const char** name) -> CuResult {
    *name = r == kInvalidContext ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_INVALID_VALUE";
    return kCudaSuccess;
  };
  return t;
}

class CudaExport : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = &f;
    current = nullptr;
    thread_no = 0;
  }
  void TearDown() override { fake = nullptr; }
  Fake f;
  DriverTable table = Table();
  Driver drv{table, 4096};
};

bool FdOpen(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) != -1; }

TEST_F(CudaExport, TableNamesTheMissingEntryPoint) {
  EXPECT_EQ(table.Missing(), "");
  DriverTable t = table;
  t.primary_ctx_retain = nullptr;
  EXPECT_NE(t.Missing().find("cuDevicePrimaryCtxRetain"), std::string::npos);
  t = table;
  t.flush_gpudirect_rdma_writes = nullptr;  // optional (CUDA < 11.3)
  EXPECT_EQ(t.Missing(), "");
}

TEST_F(CudaExport, PageSpanWidensToWholePages) {
  EXPECT_EQ(PageSpan(0x10000, 1, 4096), (std::pair<DevicePtr, size_t>{0x10000, 4096}));
  EXPECT_EQ(PageSpan(0x10001, 4096, 4096), (std::pair<DevicePtr, size_t>{0x10000, 8192}));
  EXPECT_EQ(PageSpan(0x10fff, 2, 4096), (std::pair<DevicePtr, size_t>{0x10000, 8192}));
  EXPECT_EQ(PageSpan(0x20000, 16 << 20, 4096), (std::pair<DevicePtr, size_t>{0x20000, 16 << 20}));
}

// Issue 37 item 3: a pool thread with no current context exports after Enter, in this order,
// and leaves the thread as it found it.
TEST_F(CudaExport, PoolThreadsExportUnderTheDevicesPrimaryContext) {
  // What the binding did before: export on a thread that never touched CUDA fails.
  std::thread([&] {
    thread_no = 9;
    EXPECT_FALSE(drv.ExportSpan(Base(0) + 4096, 4096).ok());
  }).join();

  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 1; i <= kThreads; ++i) {
    threads.emplace_back([&, i] {
      thread_no = i;
      const int d = i % 2;
      const DevicePtr part = Base(d) + static_cast<DevicePtr>(i) * (16 << 20) % kAllocLen + 100;
      auto scope = drv.Enter(part);
      ASSERT_TRUE(scope.ok()) << scope.error().message;
      EXPECT_EQ((*scope)->ordinal(), d);
      auto buf = drv.ExportSpan(part, 1 << 20);
      ASSERT_TRUE(buf.ok()) << buf.error().message;
      EXPECT_TRUE(FdOpen(buf->fd()));
      EXPECT_EQ(buf->offset_of(part), 100u);
      scope->reset();
      EXPECT_EQ(current, nullptr);  // the thread's own (none) is current again
      ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads);
  EXPECT_EQ(f.retained[0].load() + f.retained[1].load(), 0);
  for (int i = 1; i <= kThreads; ++i) {
    const std::string p = std::to_string(i) + ":";
    const std::string d = std::to_string(i % 2);
    std::vector<std::string> mine;
    for (const auto& e : f.log)
      if (e.rfind(p, 0) == 0) mine.push_back(e.substr(p.size()));
    EXPECT_EQ(mine, (std::vector<std::string>{"ordinal", "device_get", "get_current", "retain",
                                              "set_current(" + d + ")", "export",
                                              "set_current(none)", "release"}))
        << "thread " << i;
  }
}

TEST_F(CudaExport, EnterPutsBackAnotherContextThatWasCurrent) {
  current = Primary(1);  // e.g. the main thread working on device 1
  {
    auto scope = drv.Enter(Base(0));
    ASSERT_TRUE(scope.ok());
    EXPECT_EQ(current, Primary(0));
  }
  EXPECT_EQ(current, Primary(1));
  EXPECT_FALSE(drv.Enter(0x42).ok());  // not device memory
  EXPECT_EQ(current, Primary(1));
}

// Issue 37 item 4: a GET into device memory is flushed where the device does not order the
// NIC's writes; the attributes are read once per device.
TEST_F(CudaExport, FlushesOnlyWhereWritesAreNotOrderedNatively) {
  for (int i = 0; i < 3; ++i) {
    auto scope = drv.Enter(Base(0));
    ASSERT_TRUE(scope.ok());
    ASSERT_TRUE(drv.FlushRdmaWrites(**scope).ok());
  }
  EXPECT_EQ(f.flushes.load(), 3);
  EXPECT_EQ(f.attribute_reads.load(), 2);
  for (int i = 0; i < 3; ++i) {
    auto scope = drv.Enter(Base(1));
    ASSERT_TRUE(scope.ok());
    ASSERT_TRUE(drv.FlushRdmaWrites(**scope).ok());
  }
  EXPECT_EQ(f.flushes.load(), 3);  // device 1: ordering OWNER, no flush
  EXPECT_EQ(f.attribute_reads.load(), 4);

  // A device without host-side flush support, and a driver without the entry point: nothing
  // to call.
  Fake g;
  g.options[0] = 0;
  fake = &g;
  Driver d2(table, 4096);
  {
    auto scope = d2.Enter(Base(0));
    ASSERT_TRUE(scope.ok());
    EXPECT_TRUE(d2.FlushRdmaWrites(**scope).ok());
  }
  EXPECT_EQ(g.flushes.load(), 0);
  DriverTable old = table;
  old.flush_gpudirect_rdma_writes = nullptr;
  Driver d3(old, 4096);
  g.options[0] = 1;
  {
    auto scope = d3.Enter(Base(0));
    ASSERT_TRUE(scope.ok());
    EXPECT_TRUE(d3.FlushRdmaWrites(**scope).ok());
  }
  EXPECT_EQ(g.flushes.load(), 0);
  fake = &f;
}

TEST_F(CudaExport, SynchronizesTheStreamUnderTheContext) {
  auto scope = drv.Enter(Base(1));
  ASSERT_TRUE(scope.ok());
  EXPECT_TRUE(drv.SynchronizeStream(**scope, reinterpret_cast<Stream>(2)).ok());
  EXPECT_EQ(f.syncs.load(), 1);
}

// Issue 37 item 5: per call only the buffer's pages are exported.
TEST_F(CudaExport, PerCallExportCoversOnlyTheBuffersPages) {
  auto scope = drv.Enter(Base(0));
  ASSERT_TRUE(scope.ok());
  auto buf = drv.ExportSpan(Base(0) + (8 << 20) + 12, 16 << 20);
  ASSERT_TRUE(buf.ok()) << buf.error().message;
  EXPECT_EQ(f.last_export_start, Base(0) + (8 << 20));
  EXPECT_EQ(f.last_export_len, (16u << 20) + 4096);
  EXPECT_EQ(buf->offset_of(Base(0) + (8 << 20) + 12), 12u);
}

struct FakeClient {
  struct Call {
    std::string what;
    uintptr_t p;
    size_t len;
  };
  std::vector<Call> calls;
  Status RegisterDeviceMemory(void* p, size_t len, int fd, uint64_t offset) {
    EXPECT_TRUE(FdOpen(fd));
    EXPECT_EQ(offset, 0u);
    calls.push_back({"register", reinterpret_cast<uintptr_t>(p), len});
    return {};
  }
  void Forget(const void* p, size_t len) {
    calls.push_back({"forget", reinterpret_cast<uintptr_t>(p), len});
  }
};

TEST_F(CudaExport, RegisteredAllocationIsExportedOnceAndRegisteredOncePerClient) {
  auto scope = drv.Enter(Base(0));
  ASSERT_TRUE(scope.ok());
  DeviceRegistry<FakeClient> reg;
  ASSERT_TRUE(reg.Register(drv, Base(0) + 4096, 1 << 20).ok());
  ASSERT_TRUE(reg.Register(drv, Base(0) + (32 << 20), 1 << 20).ok());  // same allocation
  EXPECT_EQ(f.exports.load(), 1);
  EXPECT_EQ(f.last_export_start, Base(0));
  EXPECT_EQ(f.last_export_len, kAllocLen);
  EXPECT_EQ(reg.size(), 1u);

  auto a = std::make_shared<FakeClient>(), b = std::make_shared<FakeClient>();
  for (int i = 0; i < 4; ++i) {  // 16 MiB parts
    EXPECT_TRUE(reg.Use(drv, Base(0) + static_cast<DevicePtr>(i) * (16 << 20), 16 << 20, a));
    EXPECT_TRUE(reg.Use(drv, Base(0) + static_cast<DevicePtr>(i) * (16 << 20), 16 << 20, b));
  }
  EXPECT_FALSE(reg.Use(drv, Base(0) + kAllocLen - 4096, 8192, a));  // runs past it
  EXPECT_FALSE(reg.Use(drv, Base(1), 4096, a));                    // another allocation
  ASSERT_EQ(a->calls.size(), 1u);
  EXPECT_EQ(a->calls[0].what, "register");
  EXPECT_EQ(a->calls[0].p, Base(0));
  EXPECT_EQ(a->calls[0].len, kAllocLen);
  EXPECT_EQ(b->calls.size(), 1u);
  EXPECT_EQ(f.exports.load(), 1);

  EXPECT_TRUE(reg.Deregister(Base(0) + 4096));  // one of two registrations
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(a->calls.size(), 1u);
  EXPECT_TRUE(reg.Deregister(Base(0)));
  EXPECT_EQ(reg.size(), 0u);
  ASSERT_EQ(a->calls.size(), 2u);
  EXPECT_EQ(a->calls[1].what, "forget");
  EXPECT_EQ(a->calls[1].p, Base(0));
  EXPECT_EQ(b->calls.back().what, "forget");
  EXPECT_FALSE(reg.Deregister(Base(0)));
  EXPECT_FALSE(reg.Use(drv, Base(0), 4096, a));
}

TEST_F(CudaExport, FreedAndReallocatedRangeIsDroppedNotUsed) {
  auto scope = drv.Enter(Base(0));
  ASSERT_TRUE(scope.ok());
  DeviceRegistry<FakeClient> reg;
  ASSERT_TRUE(reg.Register(drv, Base(0), 4096).ok());
  auto a = std::make_shared<FakeClient>();
  EXPECT_TRUE(reg.Use(drv, Base(0), 4096, a));
  f.buffer_id[0] = 12;  // freed without deregister_device, and the range allocated again
  EXPECT_FALSE(reg.Use(drv, Base(0), 4096, a));
  EXPECT_EQ(reg.size(), 0u);
  ASSERT_EQ(a->calls.size(), 2u);
  EXPECT_EQ(a->calls[1].what, "forget");
  // Registering the new allocation replaces nothing stale and exports it again.
  ASSERT_TRUE(reg.Register(drv, Base(0), 4096).ok());
  EXPECT_EQ(f.exports.load(), 2);
}

// A tensor of PyTorch's expandable segments may run past the mapped chunk cuMemGetAddressRange
// names: register_device then pins the tensor's own pages.
TEST_F(CudaExport, BufferPastItsAllocationRegistersItsOwnPages) {
  auto scope = drv.Enter(Base(0));
  ASSERT_TRUE(scope.ok());
  auto whole = drv.AllocationOf(Base(0) + 5, 100);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->first, Base(0));
  EXPECT_EQ(whole->second, kAllocLen);
  auto r = drv.AllocationOf(Base(0) + kAllocLen - 100, 200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, Base(0) + kAllocLen - 4096);
  EXPECT_EQ(r->second, 8192u);
}

}  // namespace
}  // namespace rdmastor::client::cuda
