#include "rdma/soft/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmastor::rdma::soft::net {

namespace {
Error SocketError(std::string_view what, int err) {
  return MakeError(
      err == EAGAIN || err == EWOULDBLOCK ? ErrorCode::kRequestTimeout : ErrorCode::kInternalError,
      std::string(what) + ": " +
          (err == EAGAIN || err == EWOULDBLOCK ? "timed out" : std::strerror(err)));
}
// Blocks until fd has `events` or the pace's window closes; accounts the time waited.
Status PacedWait(int fd, short events, Pace& pace, int limit_ms = -1) {
  int budget = pace.WaitBudgetMs();
  if (limit_ms >= 0) budget = std::min(budget, limit_ms);
  auto t0 = std::chrono::steady_clock::now();
  pollfd pfd{fd, events, 0};
  if (poll(&pfd, 1, budget) < 0 && errno != EINTR) return SocketError("poll", errno);
  return pace.Account(std::chrono::steady_clock::now() - t0, 0);
}

// After a send or recv that failed with errno: OK to try again (interrupted, or paced and the
// socket not ready yet: waited for it), else the socket's error.
Status AgainAfter(const char* what, int fd, short events, Pace* pace) {
  if (errno == EINTR) return {};
  if (pace && (errno == EAGAIN || errno == EWOULDBLOCK)) return PacedWait(fd, events, *pace);
  return SocketError(what, errno);
}

}  // namespace

Pace::Pace(std::chrono::milliseconds interval, uint64_t min_rate)
    : interval_(std::max(interval, std::chrono::milliseconds(1))),
      required_(std::max<uint64_t>(
          1, min_rate * static_cast<uint64_t>(interval_.count() / 1000000) / 1000)) {}

int Pace::WaitBudgetMs() const {
  auto left = interval_ - waited_;
  return static_cast<int>(
      std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
}

Status Pace::Account(std::chrono::nanoseconds waited, size_t bytes) {
  bytes_ += bytes;
  waited_ += waited;
  if (waited_ < interval_) return {};
  if (bytes_ < required_) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited_).count();
    return MakeError(ErrorCode::kRequestTimeout,
                     "the peer moved " + std::to_string(bytes_) + " bytes in " +
                         std::to_string(ms) + " ms of waiting on it (at least " +
                         std::to_string(required_) + " required)");
  }
  waited_ = std::chrono::nanoseconds(0);
  bytes_ = 0;
  return {};
}

void SetTimeouts(int fd, std::chrono::milliseconds io_timeout) {
  timeval tv{};
  tv.tv_sec = io_timeout.count() / 1000;
  tv.tv_usec = (io_timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetTos(int fd, int tos) {
  if (tos < 0) return;
  int v = tos;
  setsockopt(fd, IPPROTO_IP, IP_TOS, &v, sizeof(v));
}

void SetKeepAlive(int fd) {
  int one = 1, idle = 30, interval = 10, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

Status SendAll(int fd, iovec* iov, int iovcnt, Pace* pace) {
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | (pace ? MSG_DONTWAIT : 0));
    if (n < 0) {
      RS_RETURN_IF_ERROR(AgainAfter("send", fd, POLLOUT, pace));
      continue;
    }
    if (pace) RS_RETURN_IF_ERROR(pace->Account(std::chrono::nanoseconds(0), static_cast<size_t>(n)));
    auto left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return {};
}

Status SendAll(int fd, const void* data, size_t len, Pace* pace) {
  iovec iov{const_cast<void*>(data), len};
  return SendAll(fd, &iov, 1, pace);
}

Status RecvAll(int fd, void* data, size_t len, Pace* pace) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, pace ? MSG_DONTWAIT : MSG_WAITALL);
    if (n < 0) {
      RS_RETURN_IF_ERROR(AgainAfter("recv", fd, POLLIN, pace));
      continue;
    }
    if (n == 0) return MakeError(ErrorCode::kInternalError, "recv: peer closed the connection");
    if (pace) RS_RETURN_IF_ERROR(pace->Account(std::chrono::nanoseconds(0), static_cast<size_t>(n)));
    p += n;
    len -= static_cast<size_t>(n);
  }
  return {};
}

Result<bool> WaitReadable(int fd, std::chrono::milliseconds timeout, Pace* pace) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int rc = poll(&pfd, 1, 0);
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return SocketError("poll", errno);
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline -
                                                             std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!pace) {
      rc = poll(&pfd, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno != EINTR) return SocketError("poll", errno);
      if (rc > 0) return true;
      continue;
    }
    RS_RETURN_IF_ERROR(PacedWait(fd, POLLIN, *pace, static_cast<int>(left.count())));
  }
}

Status Discard(int fd, size_t len) {
  char scratch[64 * 1024];
  while (len > 0) {
    size_t want = std::min(len, sizeof(scratch));
    RS_RETURN_IF_ERROR(RecvAll(fd, scratch, want));
    len -= want;
  }
  return {};
}

Result<int> ConnectTcp(uint32_t ip, uint16_t port, std::chrono::milliseconds timeout,
                       uint32_t source_ip) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SocketError("socket", errno);
  if (source_ip) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(source_ip);
    if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      int err = errno;
      close(fd);
      return SocketError("bind", err);
    }
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(ip);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  if (rc < 0 && errno == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
    if (rc == 0) {
      close(fd);
      return MakeError(ErrorCode::kRequestTimeout, "connect: timed out");
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err ? -1 : 0;
    errno = err;
  }
  if (rc < 0) {
    int err = errno;
    close(fd);
    return SocketError("connect", err);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string Ipv4String(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

}  // namespace rdmastor::rdma::soft::net
