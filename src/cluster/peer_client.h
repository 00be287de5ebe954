// Calls from one node to another (peer RPC over HTTP on the S3 port): request authentication
// derived from the root credentials, and a small pool of keep-alive connections per peer with
// timeouts on every call.
//
// Authentication: every request is signed (PeerAuth, cluster/peer_auth.h) over its method, the
// peer it is meant for, target, time, a fresh nonce, its body and the RDMA-steering headers. On an
// untrusted network run the nodes with https:// endpoints as well: the signature authenticates
// requests but encrypts nothing, and replies are not signed; with them every peer call goes over
// TLS with the peer's certificate verified (PeerClientOptions::tls).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "client/http_client.h"
#include "cluster/peer_auth.h"
#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::cluster {

struct PeerClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds io_timeout{30000};  // one recv/send (peer RPC calls are small)
  // Kept-alive connections per peer. The erasure layer calls a peer's drives in parallel (one call
  // per drive, per concurrent request), so a small pool would close and reopen connections under
  // load (measured: 8 lost up to half the PUT throughput at 8 clients on 4 x 4 drives).
  size_t max_idle = 64;
  // After a transport failure, calls fail at once for this long (a dead node costs one connect
  // attempt per window, not one per drive call).
  std::chrono::milliseconds down_for{1000};
  // This node's own address as the source of every connection ("" = the kernel's choice): the
  // soft RDMA fabric of a peer only connects back to the address a request came from.
  std::string local_ip;
  // Set (https:// endpoints): every connection is TLS, verified against this trust store and the
  // peer's host. Null: plain HTTP.
  std::shared_ptr<const client::TlsContext> tls;
};

class PeerClient {
 public:
  PeerClient(std::string host, uint16_t port, std::shared_ptr<const PeerAuth> auth,
             PeerClientOptions options = {});
  ~PeerClient();

  // Sends one request; a non-2xx answer is decoded into its Error (x-rdmastor-error), a transport
  // failure is kServiceUnavailable naming the peer. `timeout` > 0: this call's connect and I/O
  // limit instead of the options' (lock RPCs: a hung peer costs that long, not io_timeout); such
  // calls keep connections of their own.
  Result<client::HttpResponse> Call(
      std::string_view method, const std::string& target, std::string_view body = {},
      const client::ResponseTarget& response = client::ResponseTarget::String(),
      const s3::HeaderList& headers = {}, std::chrono::milliseconds timeout = {});

  // "host:port" as the topology names the peer (Node::address()): what requests are signed for.
  const std::string& address() const { return address_; }
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  // False inside the window after a transport failure.
  bool reachable() const;

 private:
  std::unique_ptr<client::HttpClient> Acquire(std::chrono::milliseconds timeout);
  void Release(std::unique_ptr<client::HttpClient> c, std::chrono::milliseconds timeout);

  std::string host_;
  uint16_t port_;
  std::string address_;
  std::shared_ptr<const PeerAuth> auth_;
  PeerClientOptions options_;
  mutable std::mutex mu_;
  // Kept-alive connections by the per-call timeout they were made with (0: the options').
  std::map<int64_t, std::vector<std::unique_ptr<client::HttpClient>>> idle_;
  std::chrono::steady_clock::time_point down_until_{};
};

// "name=value&..." with percent-encoded values.
std::string QueryParam(std::string_view name, std::string_view value);

}  // namespace rdmastor::cluster
