// Calls from one node to another (peer RPC over HTTP on the S3 port): request authentication
// derived from the root credentials, and a small pool of keep-alive connections per peer with
// timeouts on every call.
//
// Health: a node cut off the network without a reset leaves the kept-alive connections to it
// waiting out their I/O timeout. So every peer is pinged (a signed GET /minio/peer/v1/ping, which
// touches no drive) every ping_interval; a ping not answered within ping_timeout marks the peer
// offline at once: calls in flight to it are aborted and new ones fail at once until a ping is
// answered again. Quick metadata calls (no payload, no fsync) also carry a deadline of their own
// (quick_timeout), for a peer that answers pings but not its drive calls.
//
// Authentication: every request is signed (PeerAuth, cluster/peer_auth.h) over its method, the
// peer it is meant for, target, time, a fresh nonce, its body and the RDMA-steering headers. On an
// untrusted network run the nodes with https:// endpoints as well: the signature authenticates
// requests but encrypts nothing, and replies are not signed; with them every peer call goes over
// TLS with the peer's certificate verified (PeerClientOptions::tls).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "cluster/peer_auth.h"
#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::cluster {

// The health check's call (served by PeerServer).
inline constexpr const char* kPeerPingTarget = "/minio/peer/v1/ping";

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
  // Health check (StartHealthCheck): one ping this often (0: none), failing after ping_timeout.
  // The timeout must cover a busy peer: the ping waits for one of its 64 request workers (which
  // may all be in fsync on a loaded machine). See docs/settings.md.
  std::chrono::milliseconds ping_interval{1000};
  std::chrono::milliseconds ping_timeout{2000};
  // The I/O deadline of quick metadata calls (RemoteDrive says which): reads of small files and
  // directory entries, no payload, no fsync.
  std::chrono::milliseconds quick_timeout{5000};
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
  // False inside the window after a transport failure, and while the health check finds the
  // peer offline.
  bool reachable() const;
  // False while the health check finds the peer offline (true before it started).
  bool online() const;
  std::chrono::milliseconds quick_timeout() const { return options_.quick_timeout; }

  // Starts pinging the peer in the background (once; no-op when ping_interval is 0). Stopped by
  // the destructor.
  void StartHealthCheck();

 private:
  std::unique_ptr<client::HttpClient> Acquire(std::chrono::milliseconds timeout);
  void Release(std::unique_ptr<client::HttpClient> c, std::chrono::milliseconds timeout);
  // One exchange, not refused while the peer is down: an error only for a transport failure
  // (which opens the down window).
  Result<client::HttpResponse> Exchange(std::string_view method, const std::string& target,
                                        std::string_view body,
                                        const client::ResponseTarget& response,
                                        const s3::HeaderList& headers,
                                        std::chrono::milliseconds timeout);
  void HealthLoop();
  // Marks the peer offline: aborts the calls in flight and drops the idle connections.
  void MarkOfflineLocked(const std::string& why);

  std::string host_;
  uint16_t port_;
  std::string address_;
  std::shared_ptr<const PeerAuth> auth_;
  PeerClientOptions options_;
  mutable std::mutex mu_;
  // Kept-alive connections by the per-call timeout they were made with (0: the options').
  std::map<int64_t, std::vector<std::unique_ptr<client::HttpClient>>> idle_;
  std::chrono::steady_clock::time_point down_until_{};
  bool offline_ = false;                     // the health check's verdict
  std::set<client::HttpClient*> in_flight_;  // connections with a call in progress
  std::thread health_;
  std::condition_variable health_cv_;
  bool stopping_ = false;
};

// "name=value&..." with percent-encoded values.
std::string QueryParam(std::string_view name, std::string_view value);

}  // namespace rdmastor::cluster
