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
}  // namespace

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

Status SendAll(int fd, iovec* iov, int iovcnt) {
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError("send", errno);
    }
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

Status SendAll(int fd, const void* data, size_t len) {
  iovec iov{const_cast<void*>(data), len};
  return SendAll(fd, &iov, 1);
}

Status RecvAll(int fd, void* data, size_t len) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_WAITALL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError("recv", errno);
    }
    if (n == 0) return MakeError(ErrorCode::kInternalError, "recv: peer closed the connection");
    p += n;
    len -= static_cast<size_t>(n);
  }
  return {};
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

Result<int> ConnectTcp(uint32_t ip, uint16_t port, std::chrono::milliseconds timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SocketError("socket", errno);
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
