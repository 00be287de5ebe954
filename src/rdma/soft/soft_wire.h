// Soft fabric wire format (host byte order; both ends run on the same kind of host). A
// connection starts with Hello/HelloReply; then the initiator sends Requests (a WRITE carries
// `length` payload bytes after the header) and the target answers each, in order, with a Reply
// (a successful READ carries `length` payload bytes after it).
#pragma once

#include <cstdint>

namespace rdmastor::rdma::soft::wire {

inline constexpr uint32_t kMagic = 0x31465352;  // "RSF1"

struct Hello {
  uint32_t magic = kMagic;
  uint32_t qpn = 0;  // the endpoint id from the token; the target refuses a mismatch
};
struct HelloReply {
  uint32_t magic = kMagic;
  uint32_t status = 0;  // 0 = accepted
};

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
