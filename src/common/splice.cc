#include "common/splice.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace rdmastor {

namespace {

constexpr int kMainPipeBytes = 1 << 20;  // the default fs.pipe-max-size
// At most this many pipe sets exist (each ~1.06 MiB of pipe capacity, charged to the user
// against fs.pipe-user-pages-soft, 64 MiB by default): enough for the GETs one node streams at
// once, far below the limit.
constexpr size_t kMaxSets = 32;

size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

struct Pool {
  std::mutex mu;
  std::vector<SplicePipe*> idle;
  size_t live = 0;
  // After a failure to make a pipe set (a system limit), none is tried for a while.
  std::chrono::steady_clock::time_point retry_after{};
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: released pipes may come back at exit
  return *pool;
}

void ClosePipe(int& rd, int& wr) {
  if (rd >= 0) ::close(rd);
  if (wr >= 0) ::close(wr);
  rd = wr = -1;
}

}  // namespace

SplicePipe::~SplicePipe() {
  for (auto& p : pipes_) ClosePipe(p.rd, p.wr);
}

size_t SplicePipe::PagesOf(const void* p, size_t n) {
  const size_t page = PageSize();
  const size_t lead = reinterpret_cast<uintptr_t>(p) % page;
  return (lead + n + page - 1) / page;
}

Status SplicePipe::Hold(const char* p, size_t n) {
  if (held_ == 0) used_pages_ = 0;
  // vmsplice gives every page its own slot (pages are not merged across calls), and a pipe that
  // fills up ends at a page boundary, so the region takes exactly PagesOf slots.
  used_pages_ += PagesOf(p, n);
  size_t done = 0;
  for (auto& pipe : pipes_) {
    while (done < n) {
      struct iovec iov = {const_cast<char*>(p + done), n - done};
      ssize_t k = ::vmsplice(pipe.wr, &iov, 1, SPLICE_F_NONBLOCK);
      if (k > 0) {
        done += static_cast<size_t>(k);
        pipe.held += static_cast<size_t>(k);
        held_ += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) break;  // this pipe is full: on to the next
      return MakeError(ErrorCode::kInternalError,
                       std::string("vmsplice: ") + (k < 0 ? std::strerror(errno) : "no progress"));
    }
  }
  if (done < n) return MakeError(ErrorCode::kInternalError, "vmsplice: the pipes are full");
  return {};
}

Result<size_t> SplicePipe::SendTo(int fd) {
  size_t sent = 0;
  for (size_t i = 0; i < 2; ++i) {
    auto& pipe = pipes_[i];
    while (pipe.held > 0) {
      const bool more = i == 0 && pipes_[1].held > 0;
      ssize_t k = ::splice(pipe.rd, nullptr, fd, nullptr, pipe.held,
                           SPLICE_F_NONBLOCK | SPLICE_F_MOVE | (more ? SPLICE_F_MORE : 0));
      if (k > 0) {
        pipe.held -= static_cast<size_t>(k);
        held_ -= static_cast<size_t>(k);
        sent += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return sent;
      return MakeError(ErrorCode::kInternalError,
                       std::string("splice: ") + (k < 0 ? std::strerror(errno) : "socket closed"));
    }
  }
  return sent;
}

void SplicePipe::Release::operator()(SplicePipe* p) const {
  if (!p) return;
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mu);
  if (p->held_ == 0) {
    pool.idle.push_back(p);
    return;
  }
  --pool.live;  // still pins pages of a request that failed: closed, not reused
  delete p;
}

SplicePipe::Ptr SplicePipe::Acquire() {
  Pool& pool = ThePool();
  {
    std::lock_guard lock(pool.mu);
    if (!pool.idle.empty()) {
      SplicePipe* p = pool.idle.back();
      pool.idle.pop_back();
      return Ptr(p);
    }
    if (pool.live >= kMaxSets || std::chrono::steady_clock::now() < pool.retry_after)
      return nullptr;
    ++pool.live;
  }
  std::unique_ptr<SplicePipe> set(new SplicePipe);
  bool ok = true;
  for (size_t i = 0; i < 2 && ok; ++i) {
    int fds[2];
    ok = ::pipe2(fds, O_CLOEXEC) == 0;
    if (!ok) break;
    set->pipes_[i].rd = fds[0];
    set->pipes_[i].wr = fds[1];
    // The second pipe keeps its default size (16 pages): it takes the pages past the first's.
    if (i == 0) ok = ::fcntl(fds[1], F_SETPIPE_SZ, kMainPipeBytes) >= 0;
    const int bytes = ok ? ::fcntl(fds[1], F_GETPIPE_SZ) : -1;
    ok = ok && bytes > 0;
    if (ok) set->pipes_[i].slots = static_cast<size_t>(bytes) / PageSize();
  }
  std::lock_guard lock(pool.mu);
  if (!ok) {
    --pool.live;
    pool.retry_after = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    return nullptr;
  }
  return Ptr(set.release());
}

}  // namespace rdmastor
