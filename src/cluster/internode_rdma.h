// Inter-node shard transport over RDMA (DESIGN.md §2, §5; issue 5), on the data plane of
// src/rdma: the same one-sided semantics and token as S3 over RDMA, with these roles:
//
//   CALLER of a peer RPC (the node that owns the shard buffer): Expose() registers the buffer with
//   its local Target and returns a token (the cuObject format) to send in a request header.
//   SERVING peer: Pull() connects its Fabric to the caller's target and RDMA-READs the shard (a
//   shard write: caller → server); Push() RDMA-WRITEs a shard into the caller's buffer (a shard
//   read: server → caller). Both run through a registered staging pool (bounded memory) with the
//   shared Transfer engine, and fail within the transfer timeout when the caller vanished.
//
// Transport choice per shard: ShouldUse(peer, size) — RDMA when enabled, the fabric is up, the
// shard is at least min_size and the peer is not in fallback; TCP otherwise. When an RDMA
// transfer with a peer fails, the caller resends the shard over TCP and calls ReportFailure(): the
// peer falls back to TCP loudly (one warning per transition, a metric, degraded status) and RDMA
// is tried again after retry_after; the first RDMA shard that then succeeds (RecordShard with
// kRdma) restores it (an info line). Counters per peer feed src/admin/metrics.
//
// Device removal (verbs): a device monitor (rdma/device_monitor.h, the one S3 over RDMA uses)
// looks at the fabric and target every 500 ms; when their device is removed or failed it frees
// everything made on it (channels, QPs, CQs, registrations, PDs, rdma_cm ids: the kernel finishes
// `rdma link delete` only then; what a running transfer still holds goes when it ends), pieces go
// over TCP meanwhile (fallbacks, reason "fabric_unavailable"), and it opens the device of the
// node's address again (250 ms doubling to 4 s) and goes back to RDMA when it is back. A port
// that is down keeps the fabric; pieces go over TCP until it is active again.
//
// Soft fabric: the serving side only connects to the HTTP requester's own address (the caller
// node) unless MINIO_RDMA_SOFT_ALLOW lists more, so the caller's target must listen on the
// address its peer RPCs come from (bind_ip).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "admin/metrics.h"
#include "cluster/channel_pool.h"
#include "cluster/peer_auth.h"
#include "common/result.h"
#include "rdma/device_monitor.h"
#include "rdma/fabric.h"
#include "rdma/memory.h"
#include "rdma/settings.h"
#include "rdma/transfer.h"

namespace rdmastor::cluster {

struct InternodeRdmaSettings {
  bool enabled = false;                               // MINIO_RDMA_INTERNODE=on
  uint64_t min_size = 1 << 20;                        // MINIO_RDMA_MIN_SIZE
  rdma::FabricKind fabric = rdma::FabricKind::kSoft;  // MINIO_RDMA_FABRIC (verbs | soft)
  rdma::VerbsSettings verbs;                          // the verbs knobs (MINIO_RDMA_DEVICE, ...)
  std::vector<rdma::soft::Cidr> soft_allow;           // MINIO_RDMA_SOFT_ALLOW
  // The address this node's target listens on and advertises in its tokens: the address its
  // peer RPCs come from (soft fabric: the peer connects only to the requester's address).
  std::string bind_ip = "127.0.0.1";
  // Serving side staging: max_buffers registered buffers of staging_bytes (bounded memory),
  // moved in slots of slot_bytes. max_buffers: MINIO_RDMA_INTERNODE_STAGING_BUFFERS (staging_set
  // when set), else sized at start (rdma::SizeCeilings).
  size_t staging_bytes = 4u << 20;
  size_t slot_bytes = 1u << 20;
  size_t max_buffers = 16;
  bool staging_set = false;
  // Transfers in flight per peer, each role (exposed buffers on the caller, Pull/Push on the
  // server); more wait up to inflight_wait, then get kSlowDown (send that shard over TCP).
  int inflight_per_peer = 8;  // MINIO_RDMA_INTERNODE_INFLIGHT
  // MINIO_RDMA_INTERNODE_WAIT: how long a piece waits at any ceiling (in-flight slot, buffer,
  // channel) before it goes over TCP; inflight_wait and channel_wait.
  std::chrono::milliseconds inflight_wait{5000};
  std::chrono::milliseconds retry_after{30000};  // MINIO_RDMA_INTERNODE_RETRY
  // Persistent channels (channel_pool.h): per peer target, at most `channels` long-lived
  // endpoints (MINIO_RDMA_CHANNELS); a piece waits channel_wait for a busy one, then goes over
  // TCP; idle ones close after channel_idle_close; the sweep runs every channel_sweep.
  int channels = 4;
  bool channels_set = false;  // MINIO_RDMA_CHANNELS was set (else sized: rdma::SizeCeilings)
  std::chrono::milliseconds channel_wait{5000};
  std::chrono::milliseconds channel_idle_close{300000};
  std::chrono::milliseconds channel_sweep{1000};
  // MINIO_RDMA_INTERNODE_TRAFFIC_CLASS: rdma_cm ToS on verbs, IP_TOS on the soft fabric's
  // sockets; -1 leaves the default.
  int traffic_class = -1;
  // Caller side: shard pieces move through buffers registered once, when first allocated (send:
  // remote-read; receive: remote-write), never per RPC. Together they hold at most
  // inflight_bytes (MINIO_RDMA_INTERNODE_INFLIGHT_BYTES), half for each direction; a piece that
  // finds them all busy for inflight_wait goes over TCP (counted as a fallback).
  uint64_t inflight_bytes = uint64_t{256} << 20;
  rdma::TransferOptions transfer;  // transfer.timeout bounds a vanished peer
  std::chrono::milliseconds connect_timeout{3000};
  // Keys bound to the authenticated peer (issue 37 item 9; docs/s3-over-rdma.md, "Threat model
  // of the inter-node keys"): this node's connections prove with `auth` (the cluster's peer key)
  // that `self` (this node's address, as its peers name it) opens them, its target refuses any
  // connection without such a proof, and a buffer exposed to a peer is reachable only through
  // connections that peer opened (a protection domain per peer). Required when enabled.
  std::shared_ptr<const PeerAuth> auth;
  std::string self;
  // The device monitor (verbs): how often it looks, and the first and longest wait between
  // attempts to open a removed device again (as S3 over RDMA's).
  std::chrono::milliseconds device_look{500};
  std::chrono::milliseconds reopen_first{250};
  std::chrono::milliseconds reopen_cap{4000};
};

// Reads MINIO_RDMA_INTERNODE_INFLIGHT (1..1024), MINIO_RDMA_INTERNODE_RETRY (a duration: "30s",
// "500ms", "2m", or seconds), MINIO_RDMA_CHANNELS (1..64), MINIO_RDMA_INTERNODE_TRAFFIC_CLASS
// (0..255), MINIO_RDMA_INTERNODE_STAGING_BUFFERS (1..65536) and MINIO_RDMA_INTERNODE_WAIT (a
// duration, 100ms..10m) into `s`; an invalid value is an error naming the variable. The
// other fields come from the server configuration (MINIO_RDMA_INTERNODE, MINIO_RDMA_MIN_SIZE,
// MINIO_RDMA_FABRIC, ...).
Status ApplyInternodeRdmaEnv(const std::map<std::string, std::string>& env,
                             InternodeRdmaSettings& s);

// Per-peer counters (monotonic), as this node saw them.
struct InternodePeerCounters {
  uint64_t rdma_bytes_sent = 0, rdma_bytes_received = 0, rdma_shards = 0;
  uint64_t tcp_bytes_sent = 0, tcp_bytes_received = 0, tcp_shards = 0;
  uint64_t fallbacks = 0;    // shards that should have used RDMA but went over TCP
  uint64_t errors = 0;       // failed RDMA transfers (either role)
  uint64_t transitions = 0;  // times the peer fell back to TCP
};

// What health and metrics show about inter-node RDMA.
struct InternodeRdmaStatus {
  bool enabled = false;
  bool available = false;          // the fabric and target are up
  std::string fabric;              // "soft" | "verbs" | "off"
  std::string unavailable_reason;  // why not available (enabled but no device, ...)
  struct Peer {
    std::string peer;
    std::string last_error;
    std::chrono::milliseconds retry_in{0};  // until RDMA is tried again
  };
  std::vector<Peer> degraded;  // peers falling back to TCP now
  // "ok", "degraded" (some peer on TCP), "unavailable" (enabled, fabric down), "off".
  std::string state() const;
};

class InternodeRdma {
 public:
  // Fails only on unusable settings. An enabled transport whose fabric cannot start (no device)
  // yields an instance that is not available(): the reason is logged once as a warning, shown in
  // status(), and every shard goes over TCP.
  static Result<std::unique_ptr<InternodeRdma>> Create(const InternodeRdmaSettings& settings);
  ~InternodeRdma();
  InternodeRdma(const InternodeRdma&) = delete;
  InternodeRdma& operator=(const InternodeRdma&) = delete;

  bool enabled() const { return settings_.enabled; }
  // The fabric and target are up and their device serves (not removed, port active).
  bool available() const;
  const InternodeRdmaSettings& settings() const { return settings_; }

  // Whether a shard of `size` bytes to/from `peer` should go over RDMA: enabled, size > 0 and
  // ≥ min_size, and the peer not in fallback (after retry_after it is tried again). A shard that
  // qualifies but is refused (peer in fallback, or the fabric unavailable) counts as a fallback.
  bool ShouldUse(std::string_view peer, uint64_t size);
  // The size of the pieces a shard moves in between nodes: 1 MiB, or MINIO_RDMA_MIN_SIZE when
  // RDMA is on and that is larger (at most kMaxPieceBytes), so that a shard of at least
  // MIN_SIZE moves in pieces that qualify. Bounds the memory of a remote shard writer / reader.
  static constexpr size_t kMinPieceBytes = 1 << 20;
  static constexpr size_t kMaxPieceBytes = 4 << 20;
  size_t piece_bytes() const;
  // A piece that qualified for RDMA went over TCP for a reason other than a failure (the peer's
  // in-flight bound stayed full): counted as a fallback (reason "busy"), the peer is not
  // degraded.
  void RecordFallback(std::string_view peer);

  // ----- caller side
  // A buffer exposed to one peer for one RPC. Keep it alive until the RPC returned (and the
  // buffer alive while it is); destroying it deregisters the buffer (the peer can no longer reach
  // it) and frees the in-flight slot. Must not outlive the InternodeRdma that made it.
  class Exposed {
   public:
    Exposed() = default;
    Exposed(Exposed&&) noexcept = default;
    Exposed& operator=(Exposed&& o) noexcept;
    ~Exposed() { Reset(); }
    const std::string& token() const { return token_; }  // for the request header
    explicit operator bool() const { return mr_ != nullptr || static_cast<bool>(buffer_); }
    // The peer answered the RPC (success or an RDMA error it reported): it no longer touches
    // the buffer, which may go back to the pool. Without it the pooled buffer is discarded
    // (deregistered) instead: a peer that did not answer might still be moving bytes.
    void Answered() { answered_ = true; }
    // A receive exposure: copies the first n bytes the peer wrote into the caller's buffer
    // (a pooled buffer holds them until then; a per-RPC registration already has them there).
    void CopyOut(size_t n);
    // A receive exposure the peer answered: hands over the pooled buffer the peer wrote into, to
    // be read in place (no copy out), while at least half of the receive pool is still free;
    // otherwise (or for a per-RPC registration) an empty buffer: use CopyOut. A held buffer is
    // out of the pool until dropped (a GET's window lives as long as its slow client), hence the
    // bound: pieces never wait for windows.
    rdma::BufferPool::Buffer TakeReceived();

   private:
    friend class InternodeRdma;
    void Reset();
    std::shared_ptr<void> plane_;  // the fabric generation the buffer is registered in
    std::string token_;
    std::unique_ptr<rdma::MemoryRegion> mr_;  // per-RPC registration (pieces above the pool's)
    rdma::BufferPool::Buffer buffer_;         // or a pooled pre-registered buffer
    rdma::BufferPool* pool_ = nullptr;        // buffer_'s pool
    char* dst_ = nullptr;                     // receive: where CopyOut puts the bytes
    size_t len_ = 0;
    bool answered_ = false;
    std::shared_ptr<void> slot_;  // releases the peer's in-flight slot
  };
  // Exposes [buf, buf+len) to `peer`: for_remote_write = false lets the peer read it (the caller
  // sends a shard: the peer Pulls), true lets it write (the caller reads a shard: the peer Pushes).
  // len < 4 GiB (one token). kSlowDown when the peer's in-flight bound stayed full.
  Result<Exposed> Expose(std::string_view peer, void* buf, size_t len, bool for_remote_write);

  // ----- serving side. `peer`: the calling node (for counters); origin_ip: the address its
  // request came from (the soft fabric connects only there, or to MINIO_RDMA_SOFT_ALLOW).
  // Reads exactly len (≤ the token's size) bytes of the caller's exposed buffer into dst.
  Status Pull(std::string_view peer, std::string_view token, std::string_view origin_ip, char* dst,
              size_t len);
  // Writes src[0, len) into the caller's exposed buffer.
  Status Push(std::string_view peer, std::string_view token, std::string_view origin_ip,
              const char* src, size_t len);
  // Fills `dst` with up to `n` bytes of the piece from offset `at`; returns how many it wrote
  // (fewer: the piece's source ended there). An error is the source's, not the fabric's.
  using PieceFill = std::function<Result<size_t>(char* dst, size_t at, size_t n)>;
  // Push whose bytes come from `fill`, straight into the registered staging slots (a shard read
  // lands there from the file: no piece-sized buffer, no copy). Returns the bytes written into
  // the caller's buffer: len, or fewer when fill ended early. A fill error comes back as it was
  // (the channel is dropped, the fabric is not blamed).
  Result<size_t> PushFrom(std::string_view peer, std::string_view token, std::string_view origin_ip,
                          size_t len, const PieceFill& fill);

  // ----- outcome reporting (caller side)
  // One shard moved with `peer`: bytes and shards per transport, this node's view. Each side
  // counts its own: Pull/Push record the serving side's RDMA shards themselves; call this for
  // everything else (the caller's shards over either transport, the serving side's TCP shards).
  // An RDMA shard restores a peer that had fallen back (its retry probe succeeded).
  void RecordShard(std::string_view peer, admin::Transport t, uint64_t sent, uint64_t received);
  // An RDMA transfer with `peer` failed (the caller resends it over TCP, counted as a fallback):
  // the peer falls back to TCP until retry_after has passed.
  void ReportFailure(std::string_view peer, const Error& error);

  // The inter-node RDMA address `peer` advertised (its MINIO_RDMA_INTERNODE_ADDRESS, or its own
  // address), learned from its configuration at start over authenticated peer RPC. A token from
  // that peer naming this address is reached although its RPCs come from another (its HTTP
  // address): the cluster's node list is the policy, not MINIO_RDMA_SOFT_ALLOW.
  void SetPeerRdmaAddress(std::string_view peer, const std::string& ip);

  InternodePeerCounters counters(std::string_view peer) const;
  // Caller-side buffer registrations so far (send + receive pools) of the fabric generation in
  // use: grows with the pools, not with the pieces moved.
  uint64_t buffer_registrations() const;
  // Channels opened so far (serving side) and channels open now, of the generation in use; 0
  // when unavailable.
  uint64_t channels_opened() const;
  size_t channels_open() const;
  // Connections this node's target refused (no proof, a bad or replayed one, an unknown node), in
  // every generation of the transport.
  uint64_t connects_refused() const { return connects_refused_.load(); }
  InternodeRdmaStatus status() const;

  // One generation of the transport: fabric and target, the buffers registered with them and
  // the channels the fabric opened. Requests hold it while they run; a device removal drops it.
  struct Plane;
  using OpenFn = std::function<Result<std::shared_ptr<Plane>>(bool reopening)>;
  // Create, with the fabric and target made by `open` instead of from settings.fabric (tests:
  // a fabric whose device can be removed), watched by the device monitor.
  static Result<std::unique_ptr<InternodeRdma>> CreateWith(const InternodeRdmaSettings& settings,
                                                           OpenFn open);
  // A plane over `fabric` and `target` (the buffers and channels made here; the buffers are
  // registered per peer domain, Target::RegisterMemoryIn).
  static std::shared_ptr<Plane> MakePlane(const InternodeRdmaSettings& s,
                                          std::unique_ptr<rdma::Fabric> fabric,
                                          std::unique_ptr<rdma::Target> target);

 private:
  struct Peer;
  explicit InternodeRdma(InternodeRdmaSettings settings);
  Peer& GetPeer(std::string_view peer);
  // The target's ConnectVerifier: the domain of the peer a connect proof names, or a refusal
  // (counted, logged by the target).
  Result<uint32_t> VerifyConnect(const rdma::ConnectContext& c, const uint8_t* proof, size_t len);
  std::shared_ptr<Plane> plane() const;
  // The fabric and target from settings.fabric (reopening: the device of bind_ip only).
  Result<std::shared_ptr<Plane>> OpenFromSettings(bool reopening) const;
  // Starts with `open`'s plane; a monitor when `watch`.
  static Result<std::unique_ptr<InternodeRdma>> Start(const InternodeRdmaSettings& s, OpenFn open,
                                                      bool watch);
  // The device monitor's hooks.
  std::string Gone() const;
  void Release(const std::string& why);
  bool Reopen();
  // Why not available() ("" when it is).
  std::string UnavailableReason() const;
  void CountFallback(Peer& p, std::string_view peer, std::string_view reason);
  // kRead: into `local`, exactly len bytes; kWrite: from `fill`, up to len (returns how many).
  Result<size_t> Move(std::string_view peer, rdma::Opcode op, std::string_view token,
                      std::string_view origin_ip, size_t len, char* local, const PieceFill* fill);

  InternodeRdmaSettings settings_;
  std::string unavailable_reason_;  // why it never started (fixed at start)
  bool started_ = false;            // a plane came up at start (piece sizes follow from it)
  OpenFn open_;
  mutable std::mutex plane_mu_;     // guards plane_ and gone_reason_
  std::shared_ptr<Plane> plane_;    // null: never started, or released (device gone)
  std::string gone_reason_;         // why plane_ was released ("" while it was not)
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Peer>, std::less<>> peers_;
  // What every fabric / target of this node proves and checks at connect (Start sets them):
  // OpenFromSettings hands them to the fabric and target of every generation, first or reopened.
  rdma::ConnectProver prove_;
  rdma::ConnectVerifier verify_;
  uint32_t next_domain_ = 0;             // guarded by mu_: the last peer domain handed out
  PeerReplayCache connect_nonces_;       // connect proofs seen (replays refused)
  std::atomic<uint64_t> connects_refused_{0};
  std::unique_ptr<rdma::DeviceMonitor> monitor_;  // last: stopped first
};

}  // namespace rdmastor::cluster
