// Peer RPC authentication: every request one node sends another carries
//   x-rdmastor-peer-auth: v2 <unix ms> <nonce> <body sha256> <mac>
// nonce: 16 random bytes (32 hex digits), fresh per request; body sha256: hex SHA-256 of the exact
// request body; mac: hex HMAC-SHA256(K, PeerAuthMessage(...)) with
// K = HMAC-SHA256("rdmastor-peer-v1", access key "\n" secret key). The MAC covers the method, the
// node the request is meant for (its endpoint address: a request captured on its way to one node
// is refused by every other), the target (path and query), the time, the nonce, the body hash and
// the request headers that steer an inter-node RDMA transfer (kPeerSignedHeaders), each as present
// or absent, so that none can be added, removed or changed.
//
// The serving node (PeerServer) checks, in order: the header and MAC (Verify), the time (within
// kPeerAuthSkew of its clock), the nonce (PeerReplayCache: never seen within the window), and,
// once it has read the body and before it acts on it, the body hash (CheckBody). Any failure is
// 403 AccessDenied and nothing is done. docs/architecture.md has the threat model: the MAC
// authenticates requests, not replies, and encrypts nothing (use https:// endpoints for that).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/result.h"
#include "rdma/fabric.h"
#include "s3/http_types.h"

namespace rdmastor::cluster {

inline constexpr const char* kPeerAuthHeader = "x-rdmastor-peer-auth";
inline constexpr std::chrono::milliseconds kPeerAuthSkew{5 * 60 * 1000};
// Shard pieces over inter-node RDMA: the caller's token and the piece length (request), and the
// calling node (both transports: the RDMA side connects back to it; per-peer counters).
inline constexpr const char* kInternodeTokenHeader = "x-rdmastor-rdma-token";
inline constexpr const char* kInternodeLengthHeader = "x-rdmastor-rdma-length";
inline constexpr const char* kPeerNodeHeader = "x-rdmastor-node";
// The request headers the MAC covers (present with their value, or absent).
inline constexpr std::array<const char*, 3> kPeerSignedHeaders{
    kInternodeTokenHeader, kInternodeLengthHeader, kPeerNodeHeader};
// The reason a node gives for refusing a request signed before it started (see PeerReplayCache);
// a peer starting at the same time retries it instead of taking it for a credential mismatch.
inline constexpr const char* kPeerSignedBeforeStart = "request signed before this node started";

// What a verified header says about its request.
struct PeerSignature {
  int64_t time_ms = 0;
  std::string nonce;        // 32 lower-case hex digits
  std::string body_sha256;  // 64 lower-case hex digits
};

// The bytes the MAC is computed over, for the signing and the verifying side alike.
// `destination`: the serving node's endpoint address ("host:port", Node::address()).
std::string PeerAuthMessage(std::string_view method, std::string_view destination,
                            std::string_view target, std::string_view time_ms,
                            std::string_view nonce, std::string_view body_sha256,
                            const s3::HeaderList& headers);

// Inter-node RDMA connections (issue 37 item 9; docs/s3-over-rdma.md, "Threat model of the
// inter-node keys"): the node that opens one (the serving side of a shard RPC) proves with the
// same key K that it is a node of this cluster and which one. The proof, kConnectProofBytes:
//   node id (8, NodeId of its address) | unix ms (8) | nonce (8) | MAC (16)
// MAC: the first 16 bytes of HMAC-SHA256(K, ConnectAuthMessage(...)), which names the node id,
// time, nonce, the target (IPv4, port, endpoint id) and the source IPv4 the target sees: a proof
// is good for one connect, to one target, from one address, within kPeerAuthSkew.
inline constexpr size_t kConnectProofBytes = 40;
static_assert(kConnectProofBytes <= rdma::kMaxConnectProof);
// The 8-byte id a node's address ("host:port", Node::address()) goes by in a proof.
uint64_t NodeId(std::string_view node_address);
std::string ConnectAuthMessage(uint64_t node, int64_t time_ms, uint64_t nonce,
                               const rdma::ConnectContext& c);
// What a verified connect proof says: the node it names and, for PeerReplayCache, its time and
// a nonce (node id and nonce, 32 hex digits).
struct ConnectClaim {
  uint64_t node = 0;
  PeerSignature signature;
};

class PeerAuth {
 public:
  PeerAuth(const std::string& access_key, const std::string& secret_key);
  // The header value for a request sent now with a fresh nonce. `headers`: the request's other
  // headers (the kPeerSignedHeaders among them are covered).
  std::string Sign(std::string_view method, std::string_view destination, std::string_view target,
                   std::string_view body, const s3::HeaderList& headers = {}) const;
  // The same with the time and nonce given (tests).
  std::string SignWith(std::string_view method, std::string_view destination,
                       std::string_view target, std::string_view body,
                       const s3::HeaderList& headers, int64_t time_ms,
                       std::string_view nonce) const;
  // Checks the header of `req` (meant for `destination`): format, time within kPeerAuthSkew of
  // `now_ms`, MAC. Neither the nonce (PeerReplayCache) nor the body (CheckBody) is checked here.
  // kAccessDenied with a message saying why.
  Result<PeerSignature> Verify(const s3::HttpRequest& req, std::string_view destination,
                               int64_t now_ms) const;
  // A proof for an inter-node RDMA connect by node `node` (its address) now, with a fresh nonce.
  std::vector<uint8_t> SignConnect(std::string_view node, const rdma::ConnectContext& c) const;
  std::vector<uint8_t> SignConnectWith(uint64_t node, const rdma::ConnectContext& c,
                                       int64_t time_ms, uint64_t nonce) const;
  // Checks a connect proof: length, time within kPeerAuthSkew of now_ms, MAC over `c` (what the
  // target saw). The nonce is left to a PeerReplayCache. kAccessDenied saying why.
  Result<ConnectClaim> VerifyConnect(const rdma::ConnectContext& c, const uint8_t* proof,
                                     size_t len, int64_t now_ms) const;
  // A hash of the credentials that nodes compare (differs when the root credentials differ).
  const std::string& credential_hash() const { return credential_hash_; }

 private:
  std::string key_;
  std::string credential_hash_;
};

// kAccessDenied unless `body` is the body the signature was made over.
Status CheckBody(const PeerSignature& sig, std::string_view body);

// Milliseconds since the Unix epoch (the signatures' clock).
int64_t PeerAuthNowMs();

// The nonces a node has accepted, each kept until its request's time falls out of the skew
// window (time + kPeerAuthSkew), so that a replay within the window is refused.
//
// Memory is bounded: at most `capacity` nonces (67 bytes each, measured: 2^20 ~ 67 MiB). At the cap
// the nonce expiring first is dropped and the cache stops covering requests that old: every request
// whose time + skew is at or before the last dropped one's is refused from then on (it could be a
// replay of a dropped one). So the cap never lets a replay in; what it costs is the accepted clock
// skew, which shrinks to about capacity / (requests per second): 2^20 at 3,500 peer requests/s
// keeps the full 5 minutes, at 35,000/s 30 s. Legitimate requests arrive within milliseconds of
// being signed, so only a peer whose clock lags by more than that is refused; a flood that narrows
// it needs the root credentials (an authenticated peer's denial of service, accepted).
//
// A restarted node has an empty cache, so it starts with the floor at its start time: a request
// signed before it started is refused (kPeerSignedBeforeStart), and a request captured before a
// restart cannot be replayed after it. Thread-safe.
class PeerReplayCache {
 public:
  explicit PeerReplayCache(size_t capacity = 1 << 20, int64_t start_ms = PeerAuthNowMs(),
                           std::chrono::milliseconds window = kPeerAuthSkew);
  // Records sig's nonce; kAccessDenied when it was seen already (a replay), or when the request is
  // older than what the cache covers (see above).
  Status Admit(const PeerSignature& sig, int64_t now_ms);
  size_t size() const;

 private:
  using Nonce = std::pair<uint64_t, uint64_t>;
  struct NonceHash {
    size_t operator()(const Nonce& n) const noexcept {
      return n.first ^ (n.second * 0x9e3779b97f4a7c15ULL);
    }
  };
  using Entry = std::pair<int64_t, Nonce>;  // (expiry ms, nonce)

  const size_t capacity_;
  const int64_t window_ms_;
  mutable std::mutex mu_;
  std::unordered_set<Nonce, NonceHash> seen_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> by_expiry_;
  int64_t floor_;           // requests expiring at or before this are refused
  const int64_t start_ms_;  // for the message only
};

}  // namespace rdmastor::cluster
