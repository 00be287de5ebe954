// Registered memory above the backend boundary: a cache of memory regions for caller-owned
// buffers (registration is expensive on hardware: pinning, NIC translation tables) and a pool of
// registered staging buffers (the server's drive → fabric path).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "rdma/fabric.h"

namespace rdmastor::rdma {

// Registers caller memory on demand and keeps up to `capacity` regions, least recently used
// evicted first. A region stays registered while a caller holds its shared_ptr, even if evicted.
// The registration function is the fabric's or a target's. Thread-safe.
class MrCache {
 public:
  using RegisterFn = std::function<Result<std::unique_ptr<MemoryRegion>>(void*, size_t, unsigned)>;
  MrCache(RegisterFn reg, size_t capacity) : register_(std::move(reg)), capacity_(capacity) {}

  // A region covering [addr, addr+len) with at least `access`; registers one when none is cached.
  Result<std::shared_ptr<MemoryRegion>> Get(void* addr, size_t len, unsigned access);
  // Drops cached regions overlapping [addr, addr+len): call before freeing that memory.
  void Invalidate(void* addr, size_t len);
  size_t size() const;
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::shared_ptr<MemoryRegion> mr;
    unsigned access;
  };
  RegisterFn register_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recently used
  uint64_t hits_ = 0, misses_ = 0;
};

// A fixed number of page-aligned buffers of one size, registered once with a fabric and handed
// out whole. Buffers are allocated lazily up to `max_buffers`; Acquire waits (bounded) when all
// are in use, so memory stays bounded under any load.
class BufferPool {
 public:
  class Buffer {
   public:
    Buffer() = default;
    Buffer(Buffer&& o) noexcept : pool_(o.pool_), index_(o.index_), owner_(std::move(o.owner_)) {
      o.pool_ = nullptr;
    }
    Buffer& operator=(Buffer&& o) noexcept;
    ~Buffer() { Release(); }
    char* data() const;
    size_t size() const;
    const MemoryRegion& mr() const;  // not in a pool of domains (see RegisteredIn)
    // A pool of domains: the buffer's registration in `domain`, made the first time and kept
    // with the buffer (deregistered when it is discarded or the pool goes).
    Result<const MemoryRegion*> RegisteredIn(uint32_t domain);
    explicit operator bool() const { return pool_ != nullptr; }
    // Gives the buffer back deregistered and freed instead of for reuse: for a buffer a remote
    // peer may still be reaching (its RPC ended without an answer). The pool allocates and
    // registers a new one in its place when needed.
    void Discard();
    // Keeps `owner` (what owns the pool) alive until this buffer went back: a buffer handed out
    // of its owner's reach (an inter-node receive window) outlives a device released meanwhile.
    void KeepOwner(std::shared_ptr<void> owner) { owner_ = std::move(owner); }

   private:
    friend class BufferPool;
    Buffer(BufferPool* pool, size_t index) : pool_(pool), index_(index) {}
    void Release();
    BufferPool* pool_ = nullptr;
    size_t index_ = 0;
    std::shared_ptr<void> owner_;
  };

  using RegisterFn = MrCache::RegisterFn;
  // Staging buffers of a fabric (local access only).
  BufferPool(Fabric& fabric, size_t buffer_size, size_t max_buffers)
      : BufferPool(
            [&fabric](void* a, size_t n, unsigned acc) { return fabric.RegisterMemory(a, n, acc); },
            buffer_size, max_buffers, kLocalWrite) {}
  // Buffers registered once, at allocation, with `reg` (a fabric's or a target's) for `access`:
  // the 3FS RDMABuf model, for buffers a peer reaches remotely (inter-node caller side).
  BufferPool(RegisterFn reg, size_t buffer_size, size_t max_buffers, unsigned access)
      : register_(std::move(reg)),
        access_(access),
        buffer_size_(buffer_size),
        max_buffers_(max_buffers) {}
  // Buffers reachable per domain (Target::RegisterMemoryIn: a protection domain per peer, issue
  // 37 item 9): nothing is registered at allocation; Buffer::RegisteredIn registers a buffer in
  // a domain when it is first handed to that domain's peer, so the memory stays one pool shared
  // by every peer while each peer's keys reach only through its own connections.
  using DomainRegisterFn =
      std::function<Result<std::unique_ptr<MemoryRegion>>(uint32_t, void*, size_t, unsigned)>;
  BufferPool(DomainRegisterFn reg, size_t buffer_size, size_t max_buffers, unsigned access)
      : domain_register_(std::move(reg)),
        access_(access),
        buffer_size_(buffer_size),
        max_buffers_(max_buffers) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // kSlowDown when none became free within `wait`.
  Result<Buffer> Acquire(std::chrono::milliseconds wait);
  size_t buffer_size() const { return buffer_size_; }
  size_t max_buffers() const { return max_buffers_; }
  size_t allocated() const;
  size_t in_use() const;           // buffers handed out and not yet given back
  // Registrations so far (allocations and replacements; with domains, one per buffer and domain).
  uint64_t registrations() const;

 private:
  struct Slot {
    char* mem = nullptr;
    std::unique_ptr<MemoryRegion> mr;
    std::vector<std::pair<uint32_t, std::unique_ptr<MemoryRegion>>> domains;  // RegisteredIn
  };
  // A fresh buffer's registration: register_'s, or none in a pool of domains.
  Result<std::unique_ptr<MemoryRegion>> RegisterNew(void* mem);
  void Put(size_t index, bool discard = false);

  RegisterFn register_;
  DomainRegisterFn domain_register_;  // set instead of register_ in a pool of domains
  const unsigned access_;
  const size_t buffer_size_, max_buffers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;   // grows up to max_buffers_; never shrinks while the pool lives
  std::vector<size_t> free_;  // indices into slots_
  uint64_t registrations_ = 0;
};

}  // namespace rdmastor::rdma
