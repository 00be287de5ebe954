// Zero-copy sending of file pages: a GET over plain HTTP puts the pages of a mapped shard file
// into a pipe by reference (vmsplice), checks them (the bitrot hash) while the pipe pins them,
// and only then splices them to the socket, so the bytes a client gets are the bytes that were
// checked and none of them is copied in user space (docs/architecture.md, "what is copied where").
#pragma once

#include <cstddef>
#include <memory>

#include "common/result.h"

namespace rdmastor {

class SplicePipe {
 public:
  ~SplicePipe();
  SplicePipe(const SplicePipe&) = delete;
  SplicePipe& operator=(const SplicePipe&) = delete;

  // The pipe slots [p, p + n) takes (one per page it touches, any alignment), and how many are
  // free: a caller holding several regions checks their sum first.
  static size_t PagesOf(const void* p, size_t n);
  size_t free_pages() const {
    return pipes_[0].slots + pipes_[1].slots - (held_ == 0 ? 0 : used_pages_);
  }
  // Adds [p, p + n) to the pipe by reference: the pipe holds the pages themselves (for a file
  // mapping, the page-cache pages, which stay in the page cache while it holds them). All or an
  // error; the caller checks free_pages first.
  Status Hold(const char* p, size_t n);
  size_t held() const { return held_; }
  // Moves held bytes to `fd` (a non-blocking socket) without copying. Returns the count (0: the
  // socket takes nothing now; wait until it is writable), or the socket's error.
  Result<size_t> SendTo(int fd);

  // Hands out an idle pipe set, or makes one while fewer than a bounded number exist. nullptr
  // when none can be had (the bound, or a system limit such as fs.pipe-user-pages-soft): the
  // caller copies instead. A pipe set still holding bytes when released is closed, not reused.
  struct Release {
    void operator()(SplicePipe* p) const;
  };
  using Ptr = std::unique_ptr<SplicePipe, Release>;
  static Ptr Acquire();

 private:
  SplicePipe() = default;
  // Two pipes: a 1 MiB stripe at an odd offset spans 257 pages, one more than the largest pipe an
  // unprivileged process may have (fs.pipe-max-size, 1 MiB).
  struct Pipe {
    int rd = -1, wr = -1;
    size_t slots = 0;  // capacity in pages
    size_t held = 0;   // bytes in it
  };
  Pipe pipes_[2];
  size_t held_ = 0;
  size_t used_pages_ = 0;  // slots taken since the pipes were last empty
};

}  // namespace rdmastor
