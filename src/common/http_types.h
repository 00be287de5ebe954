// The boundary between the HTTP front end (Beast, asynchronous, in s3/http_server.cc) and the
// request handlers (plain blocking C++ running on worker threads). Nothing here includes Beast or
// Asio, so handlers and their tests compile fast. In common/ because storage (BodySource), the RDMA
// service and SigV4 use these types without depending on the S3 layer; s3/http_types.h re-exports
// them into rdmastor::s3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmastor/header_list.h"
#include "rdmastor/result.h"

namespace rdmastor {

class SplicePipe;  // common/splice.h

struct HttpRequest {
  std::string method;        // "GET", "PUT", ...
  std::string target;        // raw request target as received: "/bucket/key?x=y"
  std::string raw_path;      // target up to '?', still percent-encoded
  std::string raw_query;     // after '?', still percent-encoded ("" when none)
  HeaderList headers;        // lower-case names, in arrival order
  std::string remote_ip;     // textual peer address
  std::string local_ip;      // the local address the connection arrived on (multi-rail RDMA)
  uint16_t remote_port = 0;
  bool chunked = false;      // Transfer-Encoding: chunked (already de-chunked by the front end)
  std::optional<uint64_t> content_length;  // Content-Length when sent

  // First header with this lower-case name, or nullptr.
  const std::string* FindHeader(std::string_view lower_name) const {
    for (const auto& [k, v] : headers)
      if (k == lower_name) return &v;
    return nullptr;
  }
  std::string HeaderOr(std::string_view lower_name, std::string_view fallback = {}) const {
    const std::string* v = FindHeader(lower_name);
    return v ? *v : std::string(fallback);
  }
};

// A blocking stream of request-body bytes (HTTP framing already removed). Read() returns the number
// of bytes stored, 0 at end of body, or an error (client went away, timeout, malformed chunking).
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual Result<size_t> Read(char* buf, size_t len) = 0;

  // Reads until `len` bytes or end of body; returns the count.
  Result<size_t> ReadFull(char* buf, size_t len) {
    size_t got = 0;
    while (got < len) {
      auto n = Read(buf + got, len - got);
      if (!n.ok()) return n.error();
      if (*n == 0) break;
      got += *n;
    }
    return got;
  }

  // One destination of a scatter read.
  struct Segment {
    char* data;
    size_t len;
  };
  // Reads into the segments in order until every one is full or the body ends; returns the
  // count. The erasure write path reads a stripe straight into its data shards' frames this way.
  // Sources that can fill several buffers per operation override it (the HTTP front end: one
  // hand-off to its I/O thread per stripe, not one per shard).
  virtual Result<size_t> ReadFullV(const Segment* segs, size_t count) {
    size_t got = 0;
    for (size_t i = 0; i < count; ++i) {
      auto n = ReadFull(segs[i].data, segs[i].len);
      if (!n.ok()) return n.error();
      got += *n;
      if (*n < segs[i].len) break;
    }
    return got;
  }
};

struct HttpResponseHead {
  int status = 200;
  HeaderList headers;                // names as they should appear on the wire
  uint64_t content_length = 0;       // always known: handlers size every body up front
  bool close_connection = false;

  void Set(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// Where a handler writes its response. SendHead() exactly once, then Write() until
// content_length bytes went out. Write() blocks until the bytes are handed to the socket and
// returns false when the client went away (the handler should stop).
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  virtual bool SendHead(const HttpResponseHead& head) = 0;
  virtual bool Write(const char* data, size_t len) = 0;
  virtual bool head_sent() const = 0;
  // Zero-copy body bytes (common/splice.h): whether WritePipe can be used now (after SendHead;
  // plain TCP only, not TLS), and sending everything `pipe` holds, counted as Write counts.
  virtual bool CanWritePipe() const { return false; }
  virtual bool WritePipe(SplicePipe& /*pipe*/) { return false; }
};

}  // namespace rdmastor
