// A small blocking HTTP/1.1 client over POSIX sockets, and an S3 client on top of it.
//
// Built for the benchmark harness first and for the client library later, so the transport is
// kept separate from S3: HttpClient moves bytes (one keep-alive connection, no hidden threads),
// S3Client adds path-style addressing, SigV4 signing and S3 error decoding. A future RDMA path
// reuses S3Client's request building (it sends the same signed request with an empty body and an
// x-amz-rdma-token header) and only swaps where the payload lands.
//
// Not thread-safe: use one HttpClient / S3Client per thread (each owns one connection).
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

#include "common/result.h"
#include "s3/http_types.h"

// OpenSSL's SSL_CTX / SSL and POSIX iovec, declared here so that callers need neither header.
struct ssl_ctx_st;
struct ssl_st;
struct iovec;

namespace rdmastor::client {

using s3::HeaderList;

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
// every *.crt / *.pem in <certs_dir>/CAs. certs_dir "" = <home>/.rdmastor/certs, the server's
// default, so a tool run on a node trusts what the node trusts.
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

// --- S3 -------------------------------------------------------------------------------------

struct S3ClientConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 9000;
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  HttpClientOptions http;
};

// Builds a config from "http://host:port" or "https://host:port" plus credentials; https sets
// http.tls to a context trusting `tls` (default: the system store).
Result<S3ClientConfig> S3ConfigFromEndpoint(std::string_view endpoint_url, std::string access_key,
                                            std::string secret_key,
                                            std::string region = "us-east-1",
                                            const TlsClientOptions& tls = {});

// Inclusive byte range as in "Range: bytes=first-last"; last unset means "to the end".
struct ByteRange {
  uint64_t first = 0;
  std::optional<uint64_t> last;
};

struct PutObjectResult {
  std::string etag;  // as sent by the server, quotes included
  HeaderList headers;
};

struct GetObjectResult {
  int status = 0;      // 200, or 206 for a ranged read
  uint64_t bytes = 0;  // body bytes received (checked against Content-Length)
  std::string etag;
  std::optional<uint64_t> object_size;  // from Content-Range (206) or Content-Length (200)
  HeaderList headers;
};

// One S3 request before signing. Path-style: "/bucket/key" (the key is percent-encoded here).
struct S3Request {
  std::string method = "GET";
  std::string bucket;     // empty: the service ("/")
  std::string key;        // empty: the bucket itself
  std::string raw_query;  // already encoded, without '?'
  HeaderList headers;     // lower-case names; all of them are signed
  // Body as in HttpRequest.
  std::string_view body;
  BodyPull body_pull;
  uint64_t body_size = 0;
  // x-amz-content-sha256; empty = SHA-256 of `body`, or UNSIGNED-PAYLOAD for pulled bodies.
  std::string payload_sha256;
};

// Maps an S3 error response (status + XML body) to an Error: the code is the ErrorCode whose S3
// code text matches <Code> (kInternalError when unknown); the message always names the S3 code
// text, the HTTP status, the server's message and the request id, e.g.
// "S3 NoSuchKey (HTTP 404): The specified key does not exist. [GET /b/k, request-id 17A...]".
Error S3ErrorFromResponse(const HttpResponse& resp, std::string_view what);

// A path-style S3 client over one keep-alive connection. Requests are signed with SigV4 header
// auth (s3::SignRequest). PUT bodies are sent with x-amz-content-sha256: UNSIGNED-PAYLOAD: the
// server does not hash the body to check a signed digest and the client does not hash it up
// front, so a PUT is as cheap as the transport allows (integrity comes from the ETag, which is
// the body's MD5 for single PUTs, and optional x-amz-checksum-* headers). All other requests sign
// the SHA-256 of their (empty or small) body.
class S3Client {
 public:
  explicit S3Client(S3ClientConfig config);

  Status Connect() { return http_.Connect(); }

  Status CreateBucket(std::string_view bucket);
  Status DeleteBucket(std::string_view bucket);
  Status DeleteObject(std::string_view bucket, std::string_view key);

  // PutObject from a buffer, or size bytes pulled from `pull` (streamed, never held whole).
  // extra_headers (lower-case names) are sent and signed, e.g. content-type, x-amz-meta-*.
  Result<PutObjectResult> PutObject(std::string_view bucket, std::string_view key,
                                    std::string_view data, const HeaderList& extra_headers = {});
  Result<PutObjectResult> PutObject(std::string_view bucket, std::string_view key, uint64_t size,
                                    BodyPull pull, const HeaderList& extra_headers = {});

  // GetObject streaming the body into `sink`, or straight into dst[0, capacity) (a larger body is
  // an error). The byte count is checked against Content-Length; with a range, the status must be
  // 206 unless the server chose to send the whole object (200, allowed by HTTP).
  Result<GetObjectResult> GetObject(std::string_view bucket, std::string_view key,
                                    std::optional<ByteRange> range, const BodySink& sink);
  Result<GetObjectResult> GetObjectInto(std::string_view bucket, std::string_view key,
                                        std::optional<ByteRange> range, char* dst, size_t capacity);

  // Signs and sends any request. Transport errors only: check the response status yourself (see
  // S3ErrorFromResponse).
  Result<HttpResponse> Execute(const S3Request& request, const ResponseTarget& target);

  HttpClient& http() { return http_; }
  const S3ClientConfig& config() const { return config_; }

 private:
  Result<GetObjectResult> DoGet(std::string_view bucket, std::string_view key,
                                std::optional<ByteRange> range, const ResponseTarget& target);
  Result<PutObjectResult> DoPut(S3Request request);

  S3ClientConfig config_;
  HttpClient http_;
};

// "/bucket/key" with the key percent-encoded the way SigV4 canonicalises it ('/' kept).
std::string S3ObjectPath(std::string_view bucket, std::string_view key);

}  // namespace rdmastor::client
