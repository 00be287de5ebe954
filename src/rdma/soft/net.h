// Blocking socket helpers for the soft fabric. Every call is bounded by the socket's
// SO_RCVTIMEO / SO_SNDTIMEO (set with SetTimeouts), so a frozen peer cannot hang a thread; with a
// Pace, also by the rate at which the peer moves bytes (a trickle resets no timer).
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "common/result.h"

namespace rdmastor::rdma::soft::net {

// Progress of one connection measured on bytes moved: the time spent waiting on the peer is cut
// into windows of `interval`; a window in which fewer than max(1, min_rate × interval) bytes moved
// fails with kRequestTimeout. Only waiting counts (time the owner spends elsewhere, e.g. writing to
// a drive, is not the peer's), so a peer at or above min_rate is never cut off and a trickling one
// is cut off after `interval` of waiting on it, however often it sends a byte.
class Pace {
 public:
  Pace(std::chrono::milliseconds interval, uint64_t min_rate);
  // How long the next wait may block before the current window closes (>= 1 ms).
  int WaitBudgetMs() const;
  // Records `waited` spent blocked on the peer and `bytes` moved; an error when a window closed
  // with too few bytes.
  Status Account(std::chrono::nanoseconds waited, size_t bytes);

 private:
  std::chrono::nanoseconds interval_;
  uint64_t required_;
  std::chrono::nanoseconds waited_{0};
  uint64_t bytes_ = 0;
};

void SetTimeouts(int fd, std::chrono::milliseconds io_timeout);
// IP_TOS on the socket (MINIO_RDMA_INTERNODE_TRAFFIC_CLASS); tos < 0 leaves the default.
void SetTos(int fd, int tos);
// TCP keepalive probes so a connection whose peer vanished without a FIN or RST ends within about
// a minute even while it idles (a long-lived channel).
void SetKeepAlive(int fd);
// Sends every byte of the iovec array (modified in place). Error message names what failed.
// With `pace`, every wait is bounded by it (and by the socket timeout).
Status SendAll(int fd, iovec* iov, int iovcnt, Pace* pace = nullptr);
Status SendAll(int fd, const void* data, size_t len, Pace* pace = nullptr);
// Receives exactly len bytes; an orderly close before that is an error.
Status RecvAll(int fd, void* data, size_t len, Pace* pace = nullptr);
// Waits until fd is readable, at most `timeout` (and what `pace` allows); true when readable.
Result<bool> WaitReadable(int fd, std::chrono::milliseconds timeout, Pace* pace = nullptr);
// Reads and drops len bytes.
Status Discard(int fd, size_t len);
// Connects to ip:port (host order IPv4) within `timeout`, from source_ip when not 0; returns the
// socket.
Result<int> ConnectTcp(uint32_t ip, uint16_t port, std::chrono::milliseconds timeout,
                       uint32_t source_ip = 0);
std::string Ipv4String(uint32_t ip);

}  // namespace rdmastor::rdma::soft::net
