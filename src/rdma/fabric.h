// The RDMA backend boundary (DESIGN.md §4), drawn low and verbs-shaped: memory regions with
// lkey/rkey, a remote buffer, an endpoint (queue pair) toward one remote, one-sided WRITE/READ
// work requests and their completions. Two backends implement it: `verbs` (rdma-core, RDMA build)
// and `soft` (a user-space emulation over TCP, both builds). Everything above it — chunking,
// flow control, signalling, error handling, MR caching, buffer pools — is shared (transfer.h,
// memory.h) and therefore tested on `soft`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "rdma/token.h"

namespace rdmastor::rdma {

// Access rights of a memory region (ibv_access_flags).
enum Access : unsigned {
  kLocalWrite = 1u << 0,
  kRemoteWrite = 1u << 1,
  kRemoteRead = 1u << 2,
};

// A registered memory region. Destroying it deregisters (ibv_dereg_mr): callers keep it alive
// while any work request or remote peer may touch it.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  char* addr() const { return addr_; }
  size_t length() const { return length_; }
  uint32_t lkey() const { return lkey_; }
  uint32_t rkey() const { return rkey_; }
  bool Contains(const void* p, size_t len) const {
    auto* c = static_cast<const char*>(p);
    return c >= addr_ && len <= length_ && static_cast<size_t>(c - addr_) <= length_ - len;
  }

 protected:
  MemoryRegion(char* addr, size_t length, uint32_t lkey, uint32_t rkey)
      : addr_(addr), length_(length), lkey_(lkey), rkey_(rkey) {}

 private:
  char* addr_;
  size_t length_;
  uint32_t lkey_, rkey_;
};

// How to reach a remote endpoint: the token's lid/qpn/gid.
struct RemoteAddress {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  bool has_gid = false;
  std::array<uint8_t, 16> gid{};

  static RemoteAddress FromToken(const RdmaToken& t) { return {t.lid, t.qpn, t.has_gid, t.gid}; }
  // The token naming [raddr, raddr + rsize), registered with rkey, at this target.
  RdmaToken TokenFor(uint64_t raddr, uint32_t rsize, uint32_t rkey) const {
    return {raddr, rsize, rkey, lid, qpn, has_gid, gid};
  }
};

// A remote buffer: the token's raddr/rsize/rkey.
struct RemoteBuffer {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t rkey = 0;

  static RemoteBuffer FromToken(const RdmaToken& t) { return {t.raddr, t.rsize, t.rkey}; }
};

enum class Opcode { kWrite, kRead };  // IBV_WR_RDMA_WRITE / IBV_WR_RDMA_READ

// One one-sided work request: a single scatter/gather element (local) and a remote address.
struct WorkRequest {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kWrite;
  char* local_addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  bool signaled = true;  // IBV_SEND_SIGNALED: unsignaled requests complete silently on success
};

// Mirrors enum ibv_wc_status (the subset a one-sided initiator can see).
enum class WcStatus {
  kSuccess,
  kLocalLengthError,      // IBV_WC_LOC_LEN_ERR
  kLocalQpOpError,        // IBV_WC_LOC_QP_OP_ERR
  kLocalProtectionError,  // IBV_WC_LOC_PROT_ERR (bad lkey / local bounds)
  kFlushed,               // IBV_WC_WR_FLUSH_ERR: the endpoint was in error when this ran
  kRemoteInvalidRequest,  // IBV_WC_REM_INV_REQ_ERR
  kRemoteAccessError,     // IBV_WC_REM_ACCESS_ERR: bad rkey, out of bounds, no permission
  kRemoteOperationError,  // IBV_WC_REM_OP_ERR
  kRetryExceeded,         // IBV_WC_RETRY_EXC_ERR: the peer stopped answering
  kRnrRetryExceeded,      // IBV_WC_RNR_RETRY_EXC_ERR
  kGeneralError,          // IBV_WC_GENERAL_ERR and anything else
};
std::string_view WcStatusName(WcStatus s);

struct Completion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  Opcode opcode = Opcode::kWrite;
  uint32_t byte_len = 0;
};

// An initiator endpoint toward one remote (an RC QP, or a DC initiator bound to one DC target),
// with its own completion queue. After an error completion the endpoint is in the error state:
// later work requests complete with kFlushed. Destroying it guarantees no work request touches
// local memory any more. Not thread-safe: one transfer at a time.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Queues one work request (ibv_post_send). An error here means nothing was queued.
  virtual Status PostSend(const WorkRequest& wr) = 0;
  // Returns up to `max` completions, waiting up to `wait` for the first (ibv_poll_cq + a
  // completion channel or busy poll). 0 when none arrived in time.
  virtual Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) = 0;
  // Whether the endpoint can still carry work requests, as far as it can tell without posting
  // one: false once it is in the error state or the remote closed, reset or disconnected it.
  // Meant for an idle endpoint (nothing outstanding) that is kept for reuse. Never blocks.
  virtual bool Alive() { return true; }
  // Why the endpoint entered the error state, when the backend knows more than the completion
  // status (the soft fabric: "the peer moved 3 bytes in 10000 ms ..."); empty otherwise.
  virtual std::string error_detail() const { return {}; }
};

// Authenticated connections to a Target (inter-node RDMA, issue 37 item 9; docs/s3-over-rdma.md
// "Threat model of the inter-node keys"). The initiator sends a proof with its connect (rdma_cm
// private data on RC, the soft fabric's Hello); the target hands it to its verifier before it
// creates anything for the connection, and the verifier answers the protection domain the
// connection belongs to, or refuses. Memory registered in one domain (Target::RegisterMemoryIn)
// is reachable only through connections of that domain: another domain's connection gets a
// remote access error (verbs: separate protection domains). Domain 0 is the target's default
// (RegisterMemory). The fabric layer knows nothing of what a proof contains (cluster/peer_auth.h).
struct ConnectContext {
  uint32_t target_ip = 0;  // host order: the target's address, as the token names it
  uint16_t target_port = 0;
  uint32_t endpoint = 0;   // the token's endpoint id (qpn)
  uint32_t source_ip = 0;  // host order: the initiator's address, as the target sees it
};
// What fits beside the endpoint id in an RC connect's private data (56 bytes on IB/RoCE).
inline constexpr size_t kMaxConnectProof = 44;
// Initiator side: the proof for a connection (at most kMaxConnectProof bytes).
using ConnectProver = std::function<std::vector<uint8_t>(const ConnectContext&)>;
// Target side: the connection's domain, or why it is refused (the proof may be empty: none came).
using ConnectVerifier =
    std::function<Result<uint32_t>(const ConnectContext&, const uint8_t* proof, size_t len)>;

// What the server knows about the request a token arrived with.
struct RequestOrigin {
  RequestOrigin() = default;
  RequestOrigin(std::string remote, std::string local = {})  // NOLINT: implicit from {ip}
      : remote_ip(std::move(remote)), local_ip(std::move(local)) {}
  std::string remote_ip;  // the HTTP peer address ("127.0.0.1", "::ffff:127.0.0.1", "::1")
  std::string local_ip;   // the address it arrived on ("" when unknown): multi-rail choice
  // The RC connection the request named (signed x-amz-rdma-connection); 0: none, the fabric
  // reaches the token's address itself (DC, soft). See rc_sessions.h.
  uint64_t rc_connection = 0;
  std::string principal;  // the access key that signed the request (RC connections pin it)
};

// Who opened an RC connection (S3 over RDMA on RC, rc_sessions.h), as the listener saw it.
struct RcPeer {
  uint32_t ip = 0;                // source IPv4 of the connection, host order
  uint32_t qpn = 0;               // the peer's QP number (soft: its target endpoint id)
  std::array<uint8_t, 16> gid{};  // the peer's GID (soft / RoCE v2: IPv4-mapped source)
};

// What a listener does with the connections clients open: `can_admit` is asked first, before
// anything is created for the connection (the limits); `admit` takes the connection's endpoint
// and answers the connection id sent back to the client: `proposed` when not 0 (a listener that
// must send the id before the connection is established, as rdma_cm's accept does), else one it
// chooses.
struct RcAdmission {
  std::function<Status(uint32_t ip)> can_admit;
  std::function<Result<uint64_t>(const RcPeer&, std::unique_ptr<Endpoint>, uint64_t proposed)>
      admit;
  // Optional, for a listener that accepts before the connection is established (rdma_cm): the
  // id it proposed is coming (a request naming it waits for admit instead of failing), or is not
  // coming after all.
  std::function<void(uint64_t id)> expect;
  std::function<void(uint64_t id)> forget;
};

// A listener for RC connections; destroying it stops accepting (admitted endpoints live on).
class RcListener {
 public:
  virtual ~RcListener() = default;
  virtual uint16_t port() const = 0;
};

// One fabric: memory registration and endpoints.
// A fabric declining a token by its origin policy: 501 RDMANotSupported (the client retries over
// TCP) with the reason, marked by the error document element RDMADeclineReason = "origin" so
// that the service counts and logs it (S3RdmaService, RdmaStats::origin_declined).
inline constexpr const char* kDeclineReasonDetail = "RDMADeclineReason";
inline Error OriginDecline(std::string why) {
  Error e = MakeError(ErrorCode::kRDMANotSupported, std::move(why));
  e.details.emplace_back(kDeclineReasonDetail, "origin");
  return e;
}
// A fabric that cannot serve for now (port down, device removed or failed and not reopened yet):
// 501 RDMANotSupported with RDMADeclineReason = "degraded", so that a client retries RDMA soon
// instead of remembering the decline as long as a server-wide one.
inline Error DegradedDecline(std::string why) {
  Error e = MakeError(ErrorCode::kRDMANotSupported, std::move(why));
  e.details.emplace_back(kDeclineReasonDetail, "degraded");
  return e;
}
inline bool IsOriginDecline(const Error& e) {
  for (const auto& [name, value] : e.details)
    if (name == kDeclineReasonDetail && value == "origin") return true;
  return false;
}

// A failure of the client's own RDMA transport (its device, its RC connection), before the
// request reached the server: the error document element RDMAStep names the step that failed
// ("open device", "resolve address", "resolve route", "connect", "register memory"). The Python
// package raises RDMATransportError for it, and rdma="auto" redoes that call over HTTP.
inline constexpr const char* kRdmaStepDetail = "RDMAStep";
inline Error ClientTransportError(std::string_view step, Error e) {
  for (const auto& [name, value] : e.details)
    if (name == kRdmaStepDetail) return e;
  e.details.emplace_back(kRdmaStepDetail, std::string(step));
  return e;
}

class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual std::string_view name() const = 0;  // "verbs" | "soft"
  virtual Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                               unsigned access) = 0;
  // An endpoint toward `remote`. May refuse by policy (kAccessDenied) or fail to reach it
  // (kRDMANotSupported: nothing moved yet).
  virtual Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& remote,
                                                    const RequestOrigin& origin) = 0;
  // Why the fabric cannot serve right now ("" when it can): its port is down, its device failed.
  // Requests get 501 with it meanwhile (verbs: from the device's asynchronous events).
  virtual std::string Unavailable() const { return {}; }
  // The device failed for good: this fabric (and every registration made with it) must be
  // replaced by a freshly created one.
  virtual bool NeedsReopen() const { return false; }
  // Accepts RC connections that clients open to bind_ip:port (0: any free port) and hands each to
  // `admission` as an initiator endpoint of this fabric (its work requests use this fabric's
  // registrations). kRDMANotSupported where the backend has no RC listener.
  virtual Result<std::unique_ptr<RcListener>> ListenRc(const std::string& bind_ip, uint16_t port,
                                                       RcAdmission admission);
};

// A target that remote initiators write into / read from: what the client side runs. Memory
// regions registered with its fabric become reachable through address().
class Target {
 public:
  virtual ~Target() = default;
  virtual RemoteAddress address() const = 0;
  virtual Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                               unsigned access) = 0;
  // Registers memory reachable only through connections whose verifier answered `domain`
  // (ConnectVerifier; 0: the same as RegisterMemory). kRDMANotSupported where the target has no
  // domains.
  virtual Result<std::unique_ptr<MemoryRegion>> RegisterMemoryIn(uint32_t domain, void* addr,
                                                                 size_t length, unsigned access);
  // Registers device (GPU) memory exported as a dma-buf (ibv_reg_dmabuf_mr): `length` bytes at
  // `offset` of the dma-buf `fd`, addressed by initiators as [iova, iova + length) (the device
  // pointer): the region's addr() is the iova, whatever the registration reports as its address
  // (DmabufRegionSpan). The verbs target can; the soft one maps CPU-mappable dma-bufs; the others
  // answer kRDMANotSupported.
  virtual Result<std::unique_ptr<MemoryRegion>> RegisterDmabuf(int fd, uint64_t offset,
                                                               size_t length, uint64_t iova,
                                                               unsigned access);
  // The persistent RC connection to the server listening at server_ip:port (host order IPv4):
  // opened on first use, then reused; `fresh` opens a new one (the server said the old one is
  // closed). The target serves the server's one-sided requests on it. kRDMANotSupported where
  // the backend cannot.
  struct RcConnectionInfo {
    uint64_t id = 0;     // the connection id the server gave it (x-amz-rdma-connection)
    RemoteAddress self;  // what a token on it carries: lid, qpn (its QP number) and GID
  };
  virtual Result<RcConnectionInfo> RcConnection(uint32_t server_ip, uint16_t port, bool fresh);
  // Why the device behind this target is gone ("" while it is there): removed (rdma link delete,
  // a driver unbind) or failed. Its owner then drops the target and every registration made
  // with it (the kernel finishes removing the device only once they are freed) and starts a new
  // one when the device is back. Never blocks.
  virtual std::string Lost() { return {}; }
};

// The S3 error a failed completion becomes (before any byte moved: 501; midway: 500).
Error CompletionError(WcStatus status, bool bytes_moved, std::string_view detail);

}  // namespace rdmastor::rdma
