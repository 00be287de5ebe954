// Calls from one node to another (peer RPC over HTTP on the S3 port): request authentication
// derived from the root credentials, and a small pool of keep-alive connections per peer with
// timeouts on every call.
//
// Authentication: every peer request carries
//   x-rdmastor-peer-auth: v1 <unix ms> <hex HMAC-SHA256(K, method "\n" target "\n" unix ms)>
// with K = HMAC-SHA256("rdmastor-peer-v1", access key "\n" secret key). A request whose time is
// more than kPeerAuthSkew away from the server's clock is refused, which bounds replay; bodies are
// not signed: on an untrusted network run the nodes with https:// endpoints, and every peer call
// goes over TLS with the peer's certificate verified (PeerClientOptions::tls). The credential hash
// nodes compare at start-up is derived from K, never the secret itself.
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
#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::cluster {

inline constexpr const char* kPeerAuthHeader = "x-rdmastor-peer-auth";
inline constexpr std::chrono::milliseconds kPeerAuthSkew{5 * 60 * 1000};

class PeerAuth {
 public:
  PeerAuth(const std::string& access_key, const std::string& secret_key);
  // The header value for a request (now).
  std::string Sign(std::string_view method, std::string_view target) const;
  // kAccessDenied with a message saying why (missing, malformed, stale, wrong signature).
  Status Verify(const s3::HttpRequest& req) const;
  // A hash of the credentials that nodes compare (differs when the root credentials differ).
  const std::string& credential_hash() const { return credential_hash_; }

 private:
  std::string Mac(std::string_view method, std::string_view target, std::string_view ts) const;
  std::string key_;
  std::string credential_hash_;
};

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
