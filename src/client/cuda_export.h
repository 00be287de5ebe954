// CUDA device memory for RDMA (the Python binding's GPU path, python/native.cc): the driver calls
// that make a range of device memory a dma-buf the NIC can register, and the bookkeeping of the
// ranges a caller registered for good. Pure over a table of driver entry points: the binding
// fills it from libcuda.so.1 (dlsym), tests/client/cuda_export_test.cc from stubs, so the logic
// (which context is current, what is exported, when writes are flushed) is tested without a GPU.
//
// Rules this encodes (docs/python.md "GPU memory"):
//  - Context: part transfers run on pool threads that never touched CUDA, so every use of the
//    driver first makes the primary context of the pointer's device current on the calling
//    thread (ContextScope), and puts back whatever was current before.
//  - Export: per call, only the page-aligned span of the buffer (cuMemGetHandleForAddressRange
//    wants page-aligned ends), not the whole allocation around it; that also covers tensors of
//    PyTorch's expandable segments, whose span may cross several mapped chunks.
//  - Registered for good (DeviceRegistry, rdmastor.register_device): the whole allocation holding
//    the buffer (cuMemGetAddressRange), exported once and registered once per client. The driver
//    tells nobody when that memory is freed, so the caller deregisters before freeing it; a
//    freed-and-reallocated range is still caught (CU_POINTER_ATTRIBUTE_BUFFER_ID is never reused)
//    and dropped instead of moving bytes into memory it no longer names.
//  - GET into device memory: the NIC's writes are flushed (cuFlushGPUDirectRDMAWrites) before
//    the call returns on devices that do not order them natively for their owner.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmastor/result.h"

namespace rdmastor::client::cuda {

// The driver API's types on LP64 (CUresult, CUdeviceptr, CUdevice, CUcontext, CUstream).
using CuResult = int;
using DevicePtr = unsigned long long;
using Device = int;
using Context = void*;
using Stream = void*;

// cuda.h's enum values this needs (python/native.cc checks them against cuda.h).
inline constexpr CuResult kCudaSuccess = 0;
inline constexpr int kPointerAttributeBufferId = 7;        // CU_POINTER_ATTRIBUTE_BUFFER_ID
inline constexpr int kPointerAttributeDeviceOrdinal = 9;   // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
inline constexpr int kDeviceAttributeFlushWritesOptions = 117;  // ..._GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS
inline constexpr int kDeviceAttributeWritesOrdering = 118;  // ..._GPU_DIRECT_RDMA_WRITES_ORDERING
inline constexpr int kFlushWritesOptionHost = 1;           // CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST
inline constexpr int kWritesOrderingOwner = 100;           // CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER
inline constexpr int kFlushTargetCurrentCtx = 0;  // CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX
inline constexpr int kFlushToOwner = 100;         // CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER
inline constexpr int kRangeHandleDmaBufFd = 1;    // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD

// The driver entry points used (libcuda.so.1's exported names in the comments). All are needed
// but flush_gpudirect_rdma_writes (CUDA 11.3+: without it, no flush is possible).
struct DriverTable {
  CuResult (*pointer_get_attribute)(void* data, int attribute, DevicePtr ptr) = nullptr;  // cuPointerGetAttribute
  CuResult (*device_get)(Device* dev, int ordinal) = nullptr;                             // cuDeviceGet
  CuResult (*primary_ctx_retain)(Context* ctx, Device dev) = nullptr;  // cuDevicePrimaryCtxRetain
  CuResult (*primary_ctx_release)(Device dev) = nullptr;               // cuDevicePrimaryCtxRelease_v2
  CuResult (*ctx_get_current)(Context* ctx) = nullptr;                 // cuCtxGetCurrent
  CuResult (*ctx_set_current)(Context ctx) = nullptr;                  // cuCtxSetCurrent
  CuResult (*get_address_range)(DevicePtr* base, size_t* size, DevicePtr ptr) = nullptr;  // cuMemGetAddressRange_v2
  CuResult (*get_handle_for_address_range)(void* handle, DevicePtr ptr, size_t size, int type,
                                           unsigned long long flags) = nullptr;  // cuMemGetHandleForAddressRange
  CuResult (*device_get_attribute)(int* value, int attribute, Device dev) = nullptr;  // cuDeviceGetAttribute
  CuResult (*flush_gpudirect_rdma_writes)(int target, int scope) = nullptr;  // cuFlushGPUDirectRDMAWrites
  CuResult (*stream_synchronize)(Stream stream) = nullptr;                   // cuStreamSynchronize
  CuResult (*get_error_name)(CuResult r, const char** name) = nullptr;       // cuGetErrorName

  // Why the table cannot be used (a required entry missing), or empty.
  std::string Missing() const;
};

// A dma-buf of device memory [start, start + len), closed with this object.
class DmaBuf {
 public:
  DmaBuf() = default;
  DmaBuf(int fd, DevicePtr start, size_t len) : fd_(fd), start_(start), len_(len) {}
  ~DmaBuf() {
    if (fd_ >= 0) ::close(fd_);
  }
  DmaBuf(DmaBuf&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), start_(o.start_), len_(o.len_) {}
  DmaBuf& operator=(DmaBuf&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(o.fd_, -1);
      start_ = o.start_;
      len_ = o.len_;
    }
    return *this;
  }
  int fd() const { return fd_; }
  DevicePtr start() const { return start_; }
  size_t len() const { return len_; }
  // ptr's offset into the dma-buf (ptr must lie inside it).
  uint64_t offset_of(DevicePtr ptr) const { return ptr - start_; }

 private:
  int fd_ = -1;
  DevicePtr start_ = 0;
  size_t len_ = 0;
};

// [ptr, ptr+len) widened to whole host pages: what cuMemGetHandleForAddressRange accepts.
std::pair<DevicePtr, size_t> PageSpan(DevicePtr ptr, size_t len, size_t page);

class Driver;

// The primary context of one device, current on this thread while the scope lives (what was
// current before is current again afterwards; the retain is released).
class ContextScope {
 public:
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  int ordinal() const { return ordinal_; }

 private:
  friend class Driver;
  ContextScope(const DriverTable& t, int ordinal, Device dev, Context previous)
      : t_(t), ordinal_(ordinal), dev_(dev), previous_(previous) {}
  const DriverTable& t_;
  int ordinal_;
  Device dev_;
  Context previous_;
};

class Driver {
 public:
  explicit Driver(const DriverTable& table, size_t page_size = static_cast<size_t>(::sysconf(_SC_PAGESIZE)))
      : t_(table), page_(page_size) {}

  // Makes the primary context of the device that holds ptr current on this thread.
  Result<std::unique_ptr<ContextScope>> Enter(DevicePtr ptr) const;

  // The page-aligned span of [ptr, ptr+len) as a dma-buf (inside a ContextScope).
  Result<DmaBuf> ExportSpan(DevicePtr ptr, size_t len) const;
  // The range rdmastor.register_device pins for [ptr, ptr+len): the whole allocation holding
  // it, or, where the buffer runs past that allocation (expandable segments: several mapped
  // chunks), its own page-aligned span.
  Result<std::pair<DevicePtr, size_t>> AllocationOf(DevicePtr ptr, size_t len) const;
  Result<DmaBuf> ExportRange(DevicePtr start, size_t len) const;
  // The process-unique id of the allocation holding ptr (never reused after a free).
  Result<uint64_t> BufferId(DevicePtr ptr) const;

  // After the NIC wrote into device memory of `scope`'s device: blocks until the writes are
  // visible to that device's kernels, unless the device orders them natively for its owner
  // (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, read once per device).
  Status FlushRdmaWrites(const ContextScope& scope) const;

  // Waits for `stream` (a CUstream, or 1/2: the legacy / per-thread default stream).
  Status SynchronizeStream(const ContextScope& scope, Stream stream) const;

 private:
  Status Check(CuResult r, std::string_view what) const;
  const DriverTable& t_;
  size_t page_;
  mutable std::mutex mu_;
  mutable std::map<int, bool> needs_flush_;  // by device ordinal; guarded by mu_
};

// Device ranges registered for good (rdmastor.register_device), process-wide: each exported once
// and registered with each client that moves bytes through it (Client: RdmaS3Client, or a test's
// stand-in with RegisterDeviceMemory and Forget). Thread-safe.
template <class Client>
class DeviceRegistry {
 public:
  // Registers the allocation holding [ptr, ptr+len) (inside a ContextScope). Registering one
  // allocation again counts: it stays until deregistered as often.
  Status Register(const Driver& drv, DevicePtr ptr, size_t len) {
    auto range = drv.AllocationOf(ptr, len);
    if (!range.ok()) return range.error();
    auto id = drv.BufferId(ptr);
    if (!id.ok()) return id.error();
    std::vector<std::shared_ptr<Entry>> stale;
    {
      std::lock_guard lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        const auto& e = *it;
        if (e->buf.start() == range->first && e->buf.len() == range->second) {
          if (e->buffer_id == *id) {
            ++e->refs;
            return {};
          }
          stale.push_back(e);  // freed without deregistering; the range holds new memory now
          it = entries_.erase(it);
          continue;
        }
        ++it;
      }
    }
    for (auto& e : stale) Release(*e);
    auto buf = drv.ExportRange(range->first, range->second);
    if (!buf.ok()) return buf.error();
    auto e = std::make_shared<Entry>();
    e->buf = std::move(buf).value();
    e->buffer_id = *id;
    std::lock_guard lock(mu_);
    entries_.push_back(std::move(e));
    return {};
  }

  // Drops one registration of the allocation holding ptr; the last one forgets it in every
  // client and closes its dma-buf. False when ptr lies in no registered range.
  bool Deregister(DevicePtr ptr) {
    std::shared_ptr<Entry> gone;
    {
      std::lock_guard lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (!Holds(**it, ptr, 1)) continue;
        if (--(*it)->refs > 0) return true;
        gone = *it;
        entries_.erase(it);
        break;
      }
    }
    if (!gone) return false;
    Release(*gone);
    return true;
  }

  // Whether [ptr, ptr+len) lies in a registered range that `client` can now use (registered with
  // it here unless it already was). A range whose memory was freed and allocated again since
  // (another buffer id) is dropped: false, and the caller exports the span for the call.
  bool Use(const Driver& drv, DevicePtr ptr, size_t len, const std::shared_ptr<Client>& client) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(mu_);
      for (const auto& x : entries_)
        if (Holds(*x, ptr, len)) e = x;
      if (!e) return false;
    }
    auto id = drv.BufferId(ptr);
    if (!id.ok() || *id != e->buffer_id) {
      {
        std::lock_guard lock(mu_);
        std::erase(entries_, e);
      }
      Release(*e);
      return false;
    }
    {
      std::lock_guard lock(mu_);
      for (const auto& u : e->users)
        if (u.lock() == client) return true;
    }
    // Outside the lock: a registration can take milliseconds.
    if (!client->RegisterDeviceMemory(reinterpret_cast<void*>(e->buf.start()), e->buf.len(),
                                      e->buf.fd(), 0)
             .ok())
      return false;
    std::lock_guard lock(mu_);
    std::erase_if(e->users, [](const std::weak_ptr<Client>& u) { return u.expired(); });
    e->users.push_back(client);
    return true;
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    DmaBuf buf;
    uint64_t buffer_id = 0;
    int refs = 1;
    std::vector<std::weak_ptr<Client>> users;  // guarded by mu_
  };
  static bool Holds(const Entry& e, DevicePtr ptr, size_t len) {
    return ptr >= e.buf.start() && ptr - e.buf.start() <= e.buf.len() &&
           len <= e.buf.len() - (ptr - e.buf.start());
  }
  // Forgets the range in its clients (the dma-buf closes with the last reference to the entry;
  // an MR holds its own reference to the dma-buf, so closing never pulls memory from under one).
  void Release(Entry& e) {
    std::vector<std::shared_ptr<Client>> users;
    {
      std::lock_guard lock(mu_);
      for (auto& u : e.users)
        if (auto c = u.lock()) users.push_back(std::move(c));
      e.users.clear();
    }
    for (auto& c : users) c->Forget(reinterpret_cast<const void*>(e.buf.start()), e.buf.len());
  }

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Entry>> entries_;
};

}  // namespace rdmastor::client::cuda
