// Soft fabric wire format (host byte order; both ends run on the same kind of host). A
// connection starts with Hello/HelloReply; then the initiator sends Requests (a WRITE carries
// `length` payload bytes after the header) and the target answers each, in order, with a Reply
// (a successful READ carries `length` payload bytes after it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmastor::rdma::soft::wire {

inline constexpr uint32_t kMagic = 0x31465352;  // "RSF1"

struct Hello {
  uint32_t magic = kMagic;
  uint32_t qpn = 0;  // the endpoint id from the token; the target refuses a mismatch
};
// A Hello that proves who connects (SoftFabricOptions::prove): proof_len bytes of proof. A target
// with a verifier (SoftTargetOptions::verify) hands it the proof (none for a plain Hello) before
// it serves the connection, which then reaches only the regions of the domain it answered.
inline constexpr uint32_t kAuthMagic = 0x32465352;  // "RSF2"
inline constexpr size_t kHelloProofBytes = 44;      // rdma::kMaxConnectProof (fabric.h)
struct HelloAuth {
  uint32_t magic = kAuthMagic;
  uint32_t qpn = 0;
  uint32_t proof_len = 0;
  uint8_t proof[kHelloProofBytes] = {};
};
static_assert(sizeof(HelloAuth) == 12 + kHelloProofBytes);
struct HelloReply {
  uint32_t magic = kMagic;
  uint32_t status = 0;  // 0 = accepted
};

// S3 over RDMA on RC (rc_sessions.h): the client opens the connection and says Hello with
// kRcMagic and its target's endpoint id; the server answers RcWelcome (status 0 and the
// connection id, or a refusal) and from then on is the initiator on it, exactly as on a
// connection it opened itself.
inline constexpr uint32_t kRcMagic = 0x31525352;  // "RSR1"
enum : uint32_t { kRcAccepted = 0, kRcRefused = 1, kRcMalformed = 2 };
struct RcWelcome {
  uint32_t magic = kRcMagic;
  uint32_t status = kRcAccepted;
  uint64_t connection = 0;
};
static_assert(sizeof(RcWelcome) == 16);

enum : uint8_t { kOpWrite = 1, kOpRead = 2 };

struct Request {
  uint8_t op = 0;
  uint8_t pad[3] = {};
  uint32_t rkey = 0;
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint32_t length = 0;
  uint32_t pad2 = 0;
};
static_assert(sizeof(Request) == 32);

struct Reply {
  uint64_t wr_id = 0;
  uint32_t status = 0;  // a WcStatus value
  uint32_t length = 0;
};
static_assert(sizeof(Reply) == 16);

}  // namespace rdmastor::rdma::soft::wire
