// Blocking socket helpers for the soft fabric. Every call is bounded by the socket's
// SO_RCVTIMEO / SO_SNDTIMEO (set with SetTimeouts), so a frozen peer cannot hang a thread.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "common/result.h"

namespace rdmastor::rdma::soft::net {

void SetTimeouts(int fd, std::chrono::milliseconds io_timeout);
// IP_TOS on the socket (MINIO_RDMA_INTERNODE_TRAFFIC_CLASS); tos < 0 leaves the default.
void SetTos(int fd, int tos);
// TCP keepalive probes so a connection whose peer vanished without a FIN or RST ends within about
// a minute even while it idles (a long-lived channel).
void SetKeepAlive(int fd);
// Sends every byte of the iovec array (modified in place). Error message names what failed.
Status SendAll(int fd, iovec* iov, int iovcnt);
Status SendAll(int fd, const void* data, size_t len);
// Receives exactly len bytes; an orderly close before that is an error.
Status RecvAll(int fd, void* data, size_t len);
// Reads and drops len bytes.
Status Discard(int fd, size_t len);
// Connects to ip:port (host order IPv4) within `timeout`; returns the socket.
Result<int> ConnectTcp(uint32_t ip, uint16_t port, std::chrono::milliseconds timeout);
std::string Ipv4String(uint32_t ip);

}  // namespace rdmastor::rdma::soft::net
