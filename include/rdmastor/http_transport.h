// A small blocking HTTP/1.1 client over POSIX sockets (the client library's transport).
//
// HttpClient moves bytes (one keep-alive connection, no hidden threads); S3Client
// (rdmastor/s3_client.h) adds path-style addressing, SigV4 signing and S3 error decoding on top.
//
// Not thread-safe: use one HttpClient per thread (each owns one connection).
// Optional TLS (https://, OpenSSL, see TlsContext); OpenSSL stays out of this header so the many
// files that include it compile fast. No Boost: this compiles in well under a second.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmastor/header_list.h"
#include "rdmastor/result.h"

// OpenSSL's SSL_CTX / SSL and POSIX iovec, declared here so that callers need neither header.
struct ssl_ctx_st;
struct ssl_st;
struct iovec;

namespace rdmastor::client {

using rdmastor::HeaderList;

// --- URLs -----------------------------------------------------------------------------------

// "http://host:port/prefix" or "https://..." split up. host carries no brackets ("::1" for
// "[::1]").
struct HttpUrl {
  bool tls = false;  // https://
  std::string host;
  uint16_t port = 80;     // the given port, else 80 (http) or 443 (https)
  bool has_port = false;  // the URL named a port
  std::string path;       // "" or starting with '/', without a trailing '/'
};
// Accepts http:// and https:// URLs (scheme case-insensitive); IPv4 / bracketed IPv6 literals or
// names; default port 80 or 443.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

// The Host header value for host:port ("[::1]:9000" for IPv6 literals; port omitted when it is
// the scheme's default: 80, or 443 with tls).
std::string HostHeaderValue(std::string_view host, uint16_t port, bool tls = false);

// --- TLS ------------------------------------------------------------------------------------

// Which servers a TLS client trusts. Certificates are always verified, and the server's name
// (or IP literal) must match the certificate; there is deliberately no "skip verification".
struct TlsClientOptions {
  // OpenSSL's default store (the system's CA bundle; SSL_CERT_FILE / SSL_CERT_DIR override it).
  bool system_store = true;
  // PEM files of extra trusted CAs (each may hold several certificates).
  std::vector<std::string> ca_files;
  // Directories whose *.crt and *.pem files are trusted CAs (MinIO's <certs-dir>/CAs). A
  // directory that does not exist is skipped; an unreadable certificate file is an error.
  std::vector<std::string> ca_dirs;
};

// What the command-line tools trust for https:// endpoints, as MinIO's do: the system store plus
// every *.crt / *.pem in <certs_dir>/CAs. certs_dir "": the CAs directories of
// <home>/.rdmastor/certs (the server's default), <home>/.minio/certs (MinIO's) and <home>/.mc/certs
// (mc's), those that exist, so a tool run on a node or by an mc user trusts what they trust.
TlsClientOptions CertsDirTrust(const std::string& certs_dir, const std::string& home);

// A shared client TLS configuration (an OpenSSL SSL_CTX with the trust store loaded once). Build
// it at start-up, where a bad CA file is a clear error, and share it between connections and
// threads (it is immutable after Create).
class TlsContext {
 public:
  static Result<std::shared_ptr<const TlsContext>> Create(const TlsClientOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // For messages: "system store + /etc/rdmastor/certs/CAs/ca.crt".
  const std::string& trust_description() const { return trust_; }

 private:
  friend class HttpClient;
  TlsContext() = default;
  ::ssl_ctx_st* ctx_ = nullptr;  // OpenSSL's SSL_CTX
  std::string trust_;
};

// --- Transport ------------------------------------------------------------------------------

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // Applied as SO_RCVTIMEO / SO_SNDTIMEO: the longest a single recv/send may block.
  std::chrono::milliseconds io_timeout{30000};
  // Receive buffer of the connection; response bodies are handed to sinks in pieces of at most
  // this size, so it bounds memory per connection for any object size.
  size_t read_buffer_size = 256 * 1024;
  // Error (non-2xx) response bodies are kept up to this many bytes; the rest is discarded.
  size_t max_error_body = 64 * 1024;
  size_t max_header_bytes = 64 * 1024;
  // Source address for the connection ("" = the kernel's choice). A cluster node binds its own
  // address so that peers see requests come from where its RDMA target listens.
  std::string local_ip;
  // Set: speak HTTPS (the TLS handshake is part of Connect and bounded by connect_timeout; the
  // server's certificate must chain to the context's trust store and name the host). Null: HTTP.
  std::shared_ptr<const TlsContext> tls;
};

// Pulls the next piece of a request body. Returns a view of bytes that stay valid until the next
// call (usually caller-owned memory: nothing is copied before send()), or an error. An empty view
// before Content-Length bytes were produced is an error (the request is abandoned and the
// connection closed).
using BodyPull = std::function<Result<std::string_view>()>;

// Receives the response body of a 2xx response in order, in pieces of any size. Returning an
// error aborts the request (the connection is closed since the rest of the body is unread).
using BodySink = std::function<Status(const char* data, size_t len)>;

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";  // origin-form, already percent-encoded: "/bucket/key?uploads"
  // Extra headers. Host and Content-Length are added when absent (never set Transfer-Encoding).
  HeaderList headers;
  // The body: `body` when body_pull is empty, otherwise body_size bytes pulled from body_pull.
  std::string_view body;
  BodyPull body_pull;
  uint64_t body_size = 0;
};

// Where a response body goes. Bodies of non-2xx responses always go to HttpResponse::body
// (capped by max_error_body) so that callers can decode error documents.
struct ResponseTarget {
  enum class Kind { kString, kSink, kBuffer, kDiscard };
  Kind kind = Kind::kString;
  BodySink sink;           // kSink
  char* buffer = nullptr;  // kBuffer: bytes are received straight into buffer[0, capacity)
  size_t capacity = 0;     // kBuffer: a longer body is an error

  static ResponseTarget String() { return {}; }
  static ResponseTarget Sink(BodySink s) { return {Kind::kSink, std::move(s), nullptr, 0}; }
  static ResponseTarget Buffer(char* buf, size_t cap) { return {Kind::kBuffer, {}, buf, cap}; }
  static ResponseTarget Discard() { return {Kind::kDiscard, {}, nullptr, 0}; }
};

struct HttpResponse {
  int status = 0;
  std::string reason;
  HeaderList headers;  // lower-case names, in arrival order
  std::optional<uint64_t> content_length;
  uint64_t body_bytes = 0;  // body bytes received (whatever the target)
  std::string body;         // kString target, or the (capped) body of a non-2xx response

  bool success() const { return status >= 200 && status < 300; }
  // First header with this lower-case name, or nullptr.
  const std::string* FindHeader(std::string_view lower_name) const;
};

// Fields in Error::details that say what kind of failure a request met, for callers that tell
// them apart without reading messages (the Python binding's exception classes):
// kClientFailure: "connect" (no connection was made: nothing was sent) or "connection" (the
// connection failed or timed out after it was made: the server may have acted on the request);
// kBufferBytes / kResponseBytes: a response body that does not fit the caller's buffer (the
// buffer's size; the body's, when the response said it).
inline constexpr std::string_view kClientFailure = "ClientFailure";
inline constexpr std::string_view kBufferBytes = "BufferBytes";
inline constexpr std::string_view kResponseBytes = "ResponseBytes";
// e with kClientFailure set to `stage`.
Error ConnectionFailure(Error e, std::string_view stage = "connection");

// One HTTP/1.1 connection to host:port, opened on first use and kept alive between requests.
// A request that fails on the transport returns kInternalError (connection refused, reset,
// malformed response, ...) or kRequestTimeout (connect or I/O timeout), with a message naming the
// peer and what failed; the connection is then closed and the next request reconnects.
// A reused connection that the server closed while idle is detected and re-opened; a request
// whose body is a plain buffer is retried once when a reused connection fails before any
// response byte arrived (pulled bodies cannot be replayed and are not retried).
class HttpClient {
 public:
  HttpClient(std::string host, uint16_t port, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  HttpClient(HttpClient&& other) noexcept;
  HttpClient& operator=(HttpClient&& other) noexcept;

  // Opens the connection now (no-op when one is open); lets callers keep connect time out of
  // measurements.
  Status Connect();
  void Close();
  // Thread-safe (the one call that is): fails the request in progress on this connection now (the
  // socket is shut down, so a blocked send/recv returns) and every later Connect. For a caller
  // that gave up on the server from another thread (a cluster peer found offline).
  void Abort();
  bool aborted() const { return aborted_.load(); }
  bool connected() const { return fd_ >= 0; }
  bool tls() const { return options_.tls != nullptr; }

  Result<HttpResponse> Send(const HttpRequest& request,
                            const ResponseTarget& target = ResponseTarget::String());

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  const std::string& host_header() const { return host_header_; }
  // Connections opened so far (1 for a client whose keep-alive always held).
  uint64_t connects() const { return connects_; }

 private:
  Result<HttpResponse> SendOnce(const HttpRequest& request, const ResponseTarget& target,
                                bool* retryable);
  // The transport: every byte goes through WriteSome / RecvSome, over the socket or TLS.
  Result<size_t> WriteSome(const ::iovec* iov, int count);  // > 0 bytes written
  Status StartTls();                                        // the handshake on a fresh socket
  Status SendAll(const char* data, size_t len);
  Status SendHeadAndBody(std::string_view head, std::string_view body);
  Result<size_t> RecvSome(char* dst, size_t len);  // 0 = orderly close
  Status FillBuffer();                             // at least one more byte into buf_
  Status ReadHead(HttpResponse* resp, size_t* head_len);
  Status ReadBody(const HttpRequest& request, const ResponseTarget& target, HttpResponse* resp,
                  bool* keep_alive);
  Status Deliver(const ResponseTarget& target, bool to_target, HttpResponse* resp, const char* data,
                 size_t len);
  Error TransportError(std::string_view what, int err) const;
  bool PeerClosedWhileIdle() const;
  std::string Where() const;  // "http://host:port" / "https://host:port", for messages

  std::string host_;
  uint16_t port_;
  std::string host_header_;
  HttpClientOptions options_;
  int fd_ = -1;
  // Held while fd_ changes and by Abort: Abort never shuts down a descriptor number that was
  // closed and reused meanwhile.
  std::mutex fd_mu_;
  std::atomic<bool> aborted_{false};
  ::ssl_st* ssl_ = nullptr;  // OpenSSL's SSL on fd_ when options_.tls is set
  uint64_t connects_ = 0;
  std::vector<char> buf_;  // read buffer; [buf_begin_, buf_end_) holds unconsumed bytes
  size_t buf_begin_ = 0;
  size_t buf_end_ = 0;
};

}  // namespace rdmastor::client
