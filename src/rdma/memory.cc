#include "rdma/memory.h"

#include <sys/mman.h>

#include <cstdlib>

namespace rdmastor::rdma {

namespace {

constexpr size_t kHugePage = 2u << 20;

// A staging buffer. One of 2 MiB or more is 2 MiB-aligned and asks for transparent huge pages
// (THP "madvise" mode, Debian's default; "always" gives them anyway, "never" or a kernel without
// THP leaves 4 KiB pages, the fallback): a registered 4 MiB buffer is then 2 translation entries
// for the NIC and the CPU instead of 1024. nullptr when out of memory.
void* AllocStaging(size_t size) {
  void* mem = nullptr;
  const bool huge = size >= kHugePage;
  if (posix_memalign(&mem, huge ? kHugePage : 4096, size) != 0) return nullptr;
  if (huge) (void)::madvise(mem, size / kHugePage * kHugePage, MADV_HUGEPAGE);
  return mem;
}

}  // namespace

Result<std::shared_ptr<MemoryRegion>> MrCache::Get(void* addr, size_t len, unsigned access) {
  {
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if ((it->access & access) == access && it->mr->Contains(addr, len)) {
        lru_.splice(lru_.begin(), lru_, it);
        ++hits_;
        return lru_.front().mr;
      }
    }
  }
  // Register outside the lock: it can take milliseconds on hardware.
  auto mr = register_(addr, len, access);
  if (!mr.ok()) return mr.error();
  std::shared_ptr<MemoryRegion> shared(std::move(mr).value());
  std::lock_guard lock(mu_);
  ++misses_;
  lru_.push_front({shared, access});
  while (lru_.size() > capacity_) lru_.pop_back();
  return shared;
}

void MrCache::Invalidate(void* addr, size_t len) {
  auto* lo = static_cast<char*>(addr);
  std::lock_guard lock(mu_);
  lru_.remove_if([&](const Entry& e) {
    return e.mr->addr() < lo + len && lo < e.mr->addr() + e.mr->length();
  });
}

size_t MrCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

BufferPool::Buffer& BufferPool::Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    Release();
    pool_ = o.pool_;
    index_ = o.index_;
    owner_ = std::move(o.owner_);
    o.pool_ = nullptr;
  }
  return *this;
}

void BufferPool::Buffer::Release() {
  if (pool_) pool_->Put(index_);
  pool_ = nullptr;
  owner_.reset();  // after the buffer went back: this may destroy the pool
}

void BufferPool::Buffer::Discard() {
  if (pool_) pool_->Put(index_, /*discard=*/true);
  pool_ = nullptr;
  owner_.reset();
}

char* BufferPool::Buffer::data() const {
  std::lock_guard lock(pool_->mu_);  // slots_ may reallocate while another thread grows it
  return pool_->slots_[index_].mem;
}
size_t BufferPool::Buffer::size() const { return pool_->buffer_size_; }
const MemoryRegion& BufferPool::Buffer::mr() const {
  std::lock_guard lock(pool_->mu_);
  return *pool_->slots_[index_].mr;
}

Result<const MemoryRegion*> BufferPool::Buffer::RegisteredIn(uint32_t domain) {
  // Under the pool's lock (slots_ may reallocate): a registration is made once per buffer and
  // domain, so the wait it causes others is bounded by buffers x peers.
  std::lock_guard lock(pool_->mu_);
  Slot& slot = pool_->slots_[index_];
  for (auto& [d, mr] : slot.domains)
    if (d == domain) return mr.get();
  if (!pool_->domain_register_)
    return MakeError(ErrorCode::kInternalError, "RDMA buffer pool: not a pool of domains");
  ++pool_->registrations_;
  auto mr = pool_->domain_register_(domain, slot.mem, pool_->buffer_size_, pool_->access_);
  if (!mr.ok()) return mr.error();
  slot.domains.emplace_back(domain, std::move(mr).value());
  return slot.domains.back().second.get();
}

Result<std::unique_ptr<MemoryRegion>> BufferPool::RegisterNew(void* mem) {
  if (domain_register_) return std::unique_ptr<MemoryRegion>();  // per domain, on first use
  ++registrations_;
  return register_(mem, buffer_size_, access_);
}

BufferPool::~BufferPool() {
  for (auto& s : slots_) {
    s.domains.clear();
    s.mr.reset();
    std::free(s.mem);
  }
}

Result<BufferPool::Buffer> BufferPool::Acquire(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  if (free_.empty() && slots_.size() < max_buffers_) {
    void* mem = nullptr;
    if ((mem = AllocStaging(buffer_size_)) == nullptr)
      return MakeError(ErrorCode::kSlowDown, "cannot allocate an RDMA staging buffer");
    auto mr = RegisterNew(mem);
    if (!mr.ok()) {
      std::free(mem);
      return mr.error();
    }
    slots_.push_back({static_cast<char*>(mem), std::move(mr).value(), {}});
    return Buffer(this, slots_.size() - 1);
  }
  if (!cv_.wait_for(lock, wait, [&] { return !free_.empty(); }))
    return MakeError(ErrorCode::kSlowDown, "all RDMA staging buffers are busy");
  size_t index = free_.back();
  free_.pop_back();
  Slot& slot = slots_[index];
  if (slot.mem == nullptr) {  // discarded: allocate and register a fresh one in its place
    void* mem = nullptr;
    if ((mem = AllocStaging(buffer_size_)) == nullptr) {
      free_.push_back(index);
      return MakeError(ErrorCode::kSlowDown, "cannot allocate an RDMA staging buffer");
    }
    auto mr = RegisterNew(mem);
    if (!mr.ok()) {
      std::free(mem);
      free_.push_back(index);
      return mr.error();
    }
    slot.mem = static_cast<char*>(mem);
    slot.mr = std::move(mr).value();
  }
  return Buffer(this, index);
}

void BufferPool::Put(size_t index, bool discard) {
  std::unique_ptr<MemoryRegion> mr;
  std::vector<std::pair<uint32_t, std::unique_ptr<MemoryRegion>>> domains;
  char* mem = nullptr;
  {
    std::lock_guard lock(mu_);
    if (discard) {
      mr = std::move(slots_[index].mr);
      domains = std::move(slots_[index].domains);
      slots_[index].domains.clear();
      mem = slots_[index].mem;
      slots_[index].mem = nullptr;
    }
    free_.push_back(index);
  }
  cv_.notify_one();
  mr.reset();  // deregistered before the memory goes: nobody reaches it any more
  domains.clear();
  std::free(mem);
}

uint64_t BufferPool::registrations() const {
  std::lock_guard lock(mu_);
  return registrations_;
}

size_t BufferPool::allocated() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

size_t BufferPool::in_use() const {
  std::lock_guard lock(mu_);
  return slots_.size() - free_.size();
}

}  // namespace rdmastor::rdma
