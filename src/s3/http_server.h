// HTTP/1.1 front end on Boost.Beast. Sockets are served asynchronously by a small io_context pool
// (one thread per core); each parsed request header is handed to a blocking RequestHandler on a
// worker pool, whose body reads and response writes are bridged back onto the connection's strand.
// A small GET whose every step is at hand (metadata cached, no lock held by a writer) is served on
// the I/O thread itself instead (HandleInline). Small responses are buffered and written after the
// handler returned, so a client that does not read never holds a worker (nor an I/O thread) for
// them. Only http_server.cc includes Beast/Asio.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::s3 {

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Runs on a worker thread; may block. Must send a complete response through `sink` (or leave it
  // unsent only when the client went away).
  virtual void Handle(const HttpRequest& req, BodySource& body, ResponseSink& sink) = 0;
  // Whether a request without a body is worth trying on the I/O thread that parsed it
  // (HandleInline). Looks at the request only: no I/O, no locks.
  virtual bool MayServeInline(const HttpRequest& /*req*/) { return false; }
  // As Handle, on the I/O thread itself, which must not wait (common/no_block.h). Returns false
  // when a step would have waited (a read past the metadata cache, a lock a writer holds, a
  // response too large to buffer, ...): nothing was recorded, whatever went into `sink` is
  // dropped, and the request is handed to a worker as if never tried.
  virtual bool HandleInline(const HttpRequest& /*req*/, BodySource& /*body*/,
                            ResponseSink& /*sink*/) {
    return false;
  }
  // Called (on the I/O thread) for requests the front end rejects before a handler sees them, e.g.
  // an oversized header section. Must produce a complete response head and body.
  virtual void RenderFrontEndError(ErrorCode code, HttpResponseHead& head, std::string& body) = 0;
};

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 9000;
  int io_threads = 0;                     // 0 = one per core
  int worker_threads = 64;                // blocking request handlers (MINIO_API_REQUESTS_MAX)
  uint32_t header_limit = 32 * 1024;      // bytes of request line + headers
  // Keep-alive wait for the next request and its complete header (RDMASTOR_API_HEADER_TIMEOUT).
  std::chrono::milliseconds header_timeout{90000};
  std::chrono::milliseconds handshake_timeout{120000};  // RDMASTOR_API_TLS_HANDSHAKE_TIMEOUT
  size_t drain_limit = 8 << 20;           // unread body bytes we swallow to keep a connection alive
  // Abuse limits (docs/runbook.md, "Limits and abuse"). A handler's body read of N bytes must
  // finish within body_timeout + N / min_rate, a blocking response write within
  // send_timeout + N / min_rate (min_rate 0: the timeouts alone), else 400 RequestTimeout / close.
  std::chrono::milliseconds body_timeout{30000};  // RDMASTOR_API_BODY_TIMEOUT
  std::chrono::milliseconds send_timeout{30000};  // RDMASTOR_API_SEND_TIMEOUT
  uint64_t min_rate = 64 << 10;                   // RDMASTOR_API_MIN_RATE, bytes per second
  // Open client connections at most (RDMASTOR_API_CONNECTIONS_MAX); more wait in the listen
  // backlog. 0 = derived from the open-file limit.
  size_t max_connections = 0;
  // Workers one client address may hold at once (RDMASTOR_API_REQUESTS_PER_CLIENT); its further
  // requests wait without a worker. 0 = half of worker_threads (at least 1).
  int requests_per_client = 0;
  // Requests that the per-client bound does not count (peer RPC between cluster nodes carrying a
  // valid peer signature; run on the I/O thread, before any body is read). Empty: all are counted.
  std::function<bool(const HttpRequest& req)> uncapped;
  // HTTPS: PEM certificate chain and private key; both empty = plain HTTP. Never both protocols
  // on one port (as MinIO).
  std::string tls_cert_file, tls_key_file;
};

class HttpServer {
 public:
  // Binds and listens; fails with a clear message for a bad address or a port in use.
  static Result<std::unique_ptr<HttpServer>> Create(const HttpServerOptions& opts,
                                                    RequestHandler& handler);
  virtual ~HttpServer() = default;
  virtual uint16_t port() const = 0;
  virtual void Run() = 0;   // serves until Stop(); blocks the caller
  virtual void Stop() = 0;  // thread-safe, async-signal-unsafe
};

}  // namespace rdmastor::s3
