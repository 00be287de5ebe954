#include "rdmastor/http_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>

#include "common/hash.h"
#include "common/text.h"
#include "common/uri.h"

namespace rdmastor::client {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (text::LowerAscii(a[i]) != text::LowerAscii(b[i])) return false;
  return true;
}

// True when the comma-separated header value lists `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = text::TrimBlanks(value.substr(0, comma));
    if (EqualsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

template <class T>
std::optional<T> ParseUnsigned(std::string_view s, int base = 10) {
  if (s.empty()) return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool HasCrLf(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

const std::string* FindIn(const HeaderList& headers, std::string_view lower_name) {
  for (const auto& [k, v] : headers)
    if (k == lower_name) return &v;
  return nullptr;
}

bool HasHeaderIgnoreCase(const HeaderList& headers, std::string_view name) {
  for (const auto& [k, v] : headers)
    if (EqualsIgnoreCase(k, name)) return true;
  return false;
}

}  // namespace

// --- URLs -----------------------------------------------------------------------------------

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "bad URL '" + std::string(url) + "': " + std::string(why));
  };
  auto has_scheme = [&](std::string_view scheme) {
    return url.size() >= scheme.size() && EqualsIgnoreCase(url.substr(0, scheme.size()), scheme);
  };
  HttpUrl out;
  std::string_view rest;
  if (has_scheme("http://")) {
    rest = url.substr(7);
  } else if (has_scheme("https://")) {
    rest = url.substr(8);
    out.tls = true;
    out.port = 443;
  } else {
    return bad("only http:// and https:// URLs are supported");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) return bad("query or fragment given");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);

  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated '[' in host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("junk after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      if (authority.find(':') != colon)
        return bad("IPv6 literals need brackets: http://[::1]:9000");
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
      authority = authority.substr(0, colon);
    }
    out.host = std::string(authority);
  }
  if (out.host.empty()) return bad("no host");
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");
  if (!port_text.empty()) {
    auto port = ParseUnsigned<uint32_t>(port_text);
    if (!port || *port == 0 || *port > 65535) return bad("port must be 1-65535");
    out.port = static_cast<uint16_t>(*port);
    out.has_port = true;
  }
  out.path = std::string(path);
  return out;
}

std::string HostHeaderValue(std::string_view host, uint16_t port, bool tls) {
  std::string out =
      host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  if (port != (tls ? 443 : 80)) out += ":" + std::to_string(port);
  return out;
}

const std::string* HttpResponse::FindHeader(std::string_view lower_name) const {
  return FindIn(headers, lower_name);
}

// --- TLS ------------------------------------------------------------------------------------

namespace {

// Drains OpenSSL's (thread-local) error queue into one line, so that a stale entry never
// confuses a later call on this thread.
std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown TLS error" : out;
}

// TLS runs over a BIO of our own rather than SSL_set_fd: OpenSSL's socket BIO write()s, which
// raises SIGPIPE in a process that did not ignore it (rdmastor-cli, library users), and it would
// lose errno (timeouts) on the way up. `nonblock` lets Close and the idle check take one
// non-blocking look without touching the socket's flags.
struct BioState {
  int fd = -1;
  int err = 0;  // errno of the last failed send/recv
  bool nonblock = false;
  std::string rejected;  // the certificate verification refused, for the message
};

BioState* StateOf(SSL* ssl) { return static_cast<BioState*>(BIO_get_data(SSL_get_rbio(ssl))); }

int BioWrite(BIO* b, const char* data, int len) {
  auto* st = static_cast<BioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t n = ::send(st->fd, data, static_cast<size_t>(len),
                       MSG_NOSIGNAL | (st->nonblock ? MSG_DONTWAIT : 0));
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    st->err = errno;
    if (st->nonblock && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
    return -1;
  }
}

int BioRead(BIO* b, char* dst, int len) {
  auto* st = static_cast<BioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t n = ::recv(st->fd, dst, static_cast<size_t>(len), st->nonblock ? MSG_DONTWAIT : 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    st->err = errno;
    if (st->nonblock && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
    return -1;
  }
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int BioDestroy(BIO* b) {
  delete static_cast<BioState*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rdmastor socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_destroy(m, BioDestroy);
    return m;
  }();
  return method;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char addr[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

std::string NameLine(const X509_NAME* name) {
  if (name == nullptr) return "?";
  char buf[256];
  X509_NAME_oneline(name, buf, sizeof(buf));
  return buf;
}

// Notes which certificate failed, so that the error names it (after a failed handshake OpenSSL
// no longer hands out the peer's certificate). Verification itself is OpenSSL's.
int VerifyCallback(int ok, X509_STORE_CTX* store) {
  if (ok) return ok;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  X509* cert = X509_STORE_CTX_get_current_cert(store);
  if (ssl != nullptr && cert != nullptr && SSL_get_rbio(ssl) != nullptr) {
    BioState* st = StateOf(ssl);
    if (st->rejected.empty()) {
      st->rejected = "certificate " + NameLine(X509_get_subject_name(cert)) + ", issuer " +
                     NameLine(X509_get_issuer_name(cert));
    }
  }
  return ok;
}

}  // namespace

TlsClientOptions CertsDirTrust(const std::string& certs_dir, const std::string& home) {
  TlsClientOptions o;
  if (!certs_dir.empty()) {
    o.ca_dirs.push_back(certs_dir + "/CAs");
  } else if (!home.empty()) {
    // Every place a MinIO host or an mc user keeps its CAs (absent directories are skipped).
    for (const char* dir : {"/.rdmastor/certs/CAs", "/.minio/certs/CAs", "/.mc/certs/CAs"})
      o.ca_dirs.push_back(home + dir);
  }
  return o;
}

Result<std::shared_ptr<const TlsContext>> TlsContext::Create(const TlsClientOptions& options) {
  std::shared_ptr<TlsContext> c(new TlsContext());
  ERR_clear_error();
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (c->ctx_ == nullptr) {
    return MakeError(ErrorCode::kInternalError,
                     "TLS: cannot create a client context: " + SslErrors());
  }
  SSL_CTX_set_min_proto_version(c->ctx_, TLS1_2_VERSION);
  SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, VerifyCallback);
  // Servers may end a keep-alive connection (or a body delimited by the close) without a
  // close_notify; that is an orderly end here, as it is for plain HTTP.
  SSL_CTX_set_options(c->ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  std::vector<std::string> trust;
  if (options.system_store) {
    if (SSL_CTX_set_default_verify_paths(c->ctx_) != 1) {
      return MakeError(ErrorCode::kInternalError,
                       "TLS: cannot load the system CA store: " + SslErrors());
    }
    trust.push_back("system store");
  }
  auto load = [&](const std::string& file) -> Status {
    if (SSL_CTX_load_verify_locations(c->ctx_, file.c_str(), nullptr) != 1) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "TLS: cannot load CA certificate " + file + ": " + SslErrors());
    }
    return {};
  };
  for (const auto& f : options.ca_files) {
    RS_RETURN_IF_ERROR(load(f));
    trust.push_back(f);
  }
  for (const auto& dir : options.ca_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string ext = text::ToLower(entry.path().extension().string());
      if ((ext == ".crt" || ext == ".pem") && entry.is_regular_file(ec)) {
        files.push_back(entry.path().string());
      }
    }
    if (ec) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "TLS: cannot read CA directory " + dir + ": " + ec.message());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) RS_RETURN_IF_ERROR(load(f));
    trust.push_back(dir + " (" + std::to_string(files.size()) + " file(s))");
  }
  for (const auto& t : trust) c->trust_ += (c->trust_.empty() ? "" : " + ") + t;
  if (c->trust_.empty()) c->trust_ = "no CA at all";
  return std::shared_ptr<const TlsContext>(std::move(c));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

// --- HttpClient -----------------------------------------------------------------------------

HttpClient::HttpClient(std::string host, uint16_t port, HttpClientOptions options)
    : host_(std::move(host)),
      port_(port),
      host_header_(HostHeaderValue(host_, port_, options.tls != nullptr)),
      options_(options) {
  options_.read_buffer_size = std::max<size_t>(options_.read_buffer_size, 4096);
  options_.max_header_bytes = std::min(options_.max_header_bytes, options_.read_buffer_size);
}

HttpClient::~HttpClient() { Close(); }

HttpClient::HttpClient(HttpClient&& other) noexcept
    : host_(std::move(other.host_)),
      port_(other.port_),
      host_header_(std::move(other.host_header_)),
      options_(other.options_),
      fd_(std::exchange(other.fd_, -1)),
      aborted_(other.aborted_.load()),
      ssl_(std::exchange(other.ssl_, nullptr)),
      connects_(other.connects_),
      buf_(std::move(other.buf_)),
      buf_begin_(std::exchange(other.buf_begin_, 0)),
      buf_end_(std::exchange(other.buf_end_, 0)) {}

HttpClient& HttpClient::operator=(HttpClient&& other) noexcept {
  if (this != &other) {
    Close();
    host_ = std::move(other.host_);
    port_ = other.port_;
    host_header_ = std::move(other.host_header_);
    options_ = other.options_;
    fd_ = std::exchange(other.fd_, -1);
    aborted_ = other.aborted_.load();
    ssl_ = std::exchange(other.ssl_, nullptr);
    connects_ = other.connects_;
    buf_ = std::move(other.buf_);
    buf_begin_ = std::exchange(other.buf_begin_, 0);
    buf_end_ = std::exchange(other.buf_end_, 0);
  }
  return *this;
}

std::string HttpClient::Where() const {
  return (options_.tls ? "https://" : "http://") + host_header_;
}

void HttpClient::Close() {
  if (ssl_ != nullptr) {
    if (SSL_is_init_finished(ssl_)) {
      // A courtesy close_notify, sent only if the socket takes it at once: Close also runs after
      // a timed-out send, and must never wait.
      StateOf(ssl_)->nonblock = true;
      SSL_shutdown(ssl_);
    }
    SSL_free(ssl_);  // frees the BIO and its state, not the socket
    ERR_clear_error();
    ssl_ = nullptr;
  }
  if (fd_ >= 0) {
    std::lock_guard lock(fd_mu_);
    ::close(fd_);
    fd_ = -1;
  }
  buf_begin_ = buf_end_ = 0;
}

void HttpClient::Abort() {
  std::lock_guard lock(fd_mu_);
  aborted_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Error HttpClient::TransportError(std::string_view what, int err) const {
  std::string msg = Where() + ": " + std::string(what);
  if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT) {
    return ConnectionFailure(MakeError(
        ErrorCode::kRequestTimeout,
        msg + ": timed out (io timeout " + std::to_string(options_.io_timeout.count()) + " ms)"));
  }
  if (err != 0) msg += std::string(": ") + std::strerror(err);
  return ConnectionFailure(MakeError(ErrorCode::kInternalError, std::move(msg)));
}

Error ConnectionFailure(Error e, std::string_view stage) {
  for (auto& [name, value] : e.details) {
    if (name == kClientFailure) {
      value = std::string(stage);
      return e;
    }
  }
  e.details.emplace_back(std::string(kClientFailure), std::string(stage));
  return e;
}

namespace {
// Binds fd (of `family`) to local_ip, port 0. An address of the other family is an error.
Status BindSource(int fd, int family, const std::string& local_ip) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    len = ::inet_pton(AF_INET, local_ip.c_str(), &a->sin_addr) == 1 ? sizeof(sockaddr_in) : 0;
  } else if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    len = ::inet_pton(AF_INET6, local_ip.c_str(), &a->sin6_addr) == 1 ? sizeof(sockaddr_in6) : 0;
  }
  if (len == 0)
    return MakeError(ErrorCode::kInvalidArgument,
                     "source address '" + local_ip + "' does not match the peer's address family");
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return MakeError(ErrorCode::kInternalError,
                     "cannot bind source address " + local_ip + ": " + std::strerror(errno));
  return {};
}
}  // namespace

Status HttpClient::Connect() {
  if (fd_ >= 0) return {};
  if (aborted_) return MakeError(ErrorCode::kInternalError, Where() + ": connection aborted");
  if (buf_.size() != options_.read_buffer_size) buf_.assign(options_.read_buffer_size, 0);
  buf_begin_ = buf_end_ = 0;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  std::string port_text = std::to_string(port_);
  int gai = ::getaddrinfo(host_.c_str(), port_text.c_str(), &hints, &list);
  if (gai != 0) {
    return MakeError(ErrorCode::kInternalError,
                     Where() + ": cannot resolve '" + host_ + "': " + ::gai_strerror(gai));
  }
  int last_err = ECONNREFUSED;
  const char* last_step = "connect";
  auto deadline = std::chrono::steady_clock::now() + options_.connect_timeout;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      last_err = errno;
      last_step = "socket";
      continue;
    }
    if (!options_.local_ip.empty()) {
      Status bound = BindSource(fd, ai->ai_family, options_.local_ip);
      if (!bound.ok()) {
        ::close(fd);
        ::freeaddrinfo(list);
        return bound;
      }
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        int pr = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) {
          rc = -1;
          errno = ETIMEDOUT;
        } else if (pr < 0) {
          rc = -1;
        } else {
          int soerr = 0;
          socklen_t len = sizeof(soerr);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
          rc = soerr == 0 ? 0 : -1;
          if (soerr != 0) errno = soerr;
        }
        break;
      }
    }
    if (rc != 0) {
      last_err = errno;
      last_step = "connect";
      ::close(fd);
      continue;
    }
    int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto set_timeouts = [fd](std::chrono::milliseconds t) {
      timeval tv{};
      tv.tv_sec = static_cast<time_t>(t.count() / 1000);
      tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    };
    ::freeaddrinfo(list);
    {
      std::lock_guard lock(fd_mu_);
      if (aborted_) {  // Abort ran while connecting
        ::close(fd);
        return MakeError(ErrorCode::kInternalError, Where() + ": connection aborted");
      }
      fd_ = fd;
    }
    if (options_.tls) {
      // The handshake is part of connecting: a peer that accepts TCP but never answers TLS (a
      // stopped process: the kernel still accepts) costs connect_timeout, not io_timeout.
      set_timeouts(options_.connect_timeout);
      Status tls = StartTls();
      if (!tls.ok()) {
        Close();
        return tls;
      }
    }
    set_timeouts(options_.io_timeout);
    ++connects_;
    return {};
  }
  ::freeaddrinfo(list);
  if (last_err == ETIMEDOUT) {
    return MakeError(ErrorCode::kRequestTimeout,
                     Where() + ": connect timed out after " +
                         std::to_string(options_.connect_timeout.count()) + " ms");
  }
  return TransportError(last_step, last_err);
}

Status HttpClient::StartTls() {
  ERR_clear_error();
  SSL* ssl = SSL_new(options_.tls->ctx_);
  BIO* bio = ssl == nullptr ? nullptr : BIO_new(SocketBioMethod());
  if (bio == nullptr) {
    SSL_free(ssl);
    return MakeError(ErrorCode::kInternalError, Where() + ": TLS setup: " + SslErrors());
  }
  BIO_set_data(bio, new BioState{fd_, 0, false});
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);
  ssl_ = ssl;  // Close() frees it from here on
  // The certificate must name what we connect to: an IP SAN for an IP literal, else the DNS name,
  // which also goes out as SNI (RFC 6066 has no SNI for addresses).
  if (IsIpLiteral(host_)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host_.c_str());
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, host_.c_str());
    SSL_set_tlsext_host_name(ssl, host_.c_str());
  }
  const int rc = SSL_connect(ssl);
  if (rc == 1) return {};
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    std::string msg =
        Where() + ": TLS certificate verification failed: " + X509_verify_cert_error_string(verify);
    if (const std::string& which = StateOf(ssl)->rejected; !which.empty()) {
      msg += " (" + which + ")";
    }
    msg += "; trusted CAs: " + options_.tls->trust_description();
    ERR_clear_error();
    return MakeError(ErrorCode::kInternalError, std::move(msg));
  }
  const int err = SSL_get_error(ssl, rc);
  if (err == SSL_ERROR_SSL) {
    return MakeError(ErrorCode::kInternalError, Where() + ": TLS handshake failed: " + SslErrors() +
                                                    " (is the server speaking HTTPS?)");
  }
  ERR_clear_error();
  const int sys = StateOf(ssl)->err;
  if (sys == EAGAIN || sys == EWOULDBLOCK || sys == ETIMEDOUT) {
    return MakeError(ErrorCode::kRequestTimeout,
                     Where() + ": TLS handshake timed out after " +
                         std::to_string(options_.connect_timeout.count()) + " ms");
  }
  if (sys == 0) {
    return MakeError(ErrorCode::kInternalError,
                     Where() +
                         ": connection closed during the TLS handshake (is the server "
                         "speaking HTTPS?)");
  }
  return TransportError("TLS handshake", sys);
}

bool HttpClient::PeerClosedWhileIdle() const {
  if (buf_end_ != buf_begin_) return true;  // unsolicited bytes: the stream is out of step
  if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return true;
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  if (n == 0 || ssl_ == nullptr) return true;  // 0 = orderly close; > 0 = unsolicited data
  // TLS: bytes may be handshake messages sent after the handshake (TLS 1.3 session tickets are
  // read with the first response, so a connection opened by Connect() and not used yet has them
  // pending). Let OpenSSL consume them without blocking; only application data or an alert
  // (close_notify) means the connection is out of step or gone.
  BioState* st = StateOf(ssl_);
  st->nonblock = true;
  ERR_clear_error();
  int r = SSL_peek(ssl_, &c, 1);
  st->nonblock = false;
  const bool idle = r <= 0 && SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ;
  ERR_clear_error();
  return !idle;
}

// One step of the transport. Plain: sendmsg of the whole vector. TLS: SSL_write writes whole
// records; a head and a small body are joined so that they go out as one record (and segment).
Result<size_t> HttpClient::WriteSome(const iovec* iov, int count) {
  if (ssl_ == nullptr) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(count);
    for (;;) {
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return TransportError("send", errno);
    }
  }
  char joined[16 * 1024];
  const void* data = iov[0].iov_base;
  size_t len = iov[0].iov_len;
  if (count > 1 && len + iov[1].iov_len <= sizeof(joined)) {
    std::memcpy(joined, iov[0].iov_base, len);
    std::memcpy(joined + len, iov[1].iov_base, iov[1].iov_len);
    data = joined;
    len += iov[1].iov_len;
  }
  len = std::min<size_t>(len, INT_MAX / 2);
  ERR_clear_error();
  StateOf(ssl_)->err = 0;
  int n = SSL_write(ssl_, data, static_cast<int>(len));
  if (n > 0) return static_cast<size_t>(n);
  if (SSL_get_error(ssl_, n) == SSL_ERROR_SSL) {
    return MakeError(ErrorCode::kInternalError, Where() + ": send: TLS error: " + SslErrors());
  }
  ERR_clear_error();
  const int sys = StateOf(ssl_)->err;
  return TransportError("send", sys != 0 ? sys : EPIPE);
}

Status HttpClient::SendAll(const char* data, size_t len) {
  return SendHeadAndBody(std::string_view(data, len), {});
}

Status HttpClient::SendHeadAndBody(std::string_view head, std::string_view body) {
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body.data()), body.size()}};
  int idx = 0;
  int count = body.empty() ? 1 : 2;
  while (idx < count) {
    auto n = WriteSome(iov + idx, count - idx);
    if (!n.ok()) return n.error();
    size_t left = *n;
    while (idx < count && left >= iov[idx].iov_len) {
      left -= iov[idx].iov_len;
      ++idx;
    }
    if (idx < count) {
      iov[idx].iov_base = static_cast<char*>(iov[idx].iov_base) + left;
      iov[idx].iov_len -= left;
    }
  }
  return {};
}

Result<size_t> HttpClient::RecvSome(char* dst, size_t len) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    StateOf(ssl_)->err = 0;
    int n = SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(len, INT_MAX / 2)));
    if (n > 0) return static_cast<size_t>(n);
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};  // close_notify, or EOF (see Create)
    if (err == SSL_ERROR_SSL) {
      return MakeError(ErrorCode::kInternalError, Where() + ": recv: TLS error: " + SslErrors());
    }
    ERR_clear_error();
    const int sys = StateOf(ssl_)->err;
    return TransportError("recv", sys != 0 ? sys : ECONNRESET);
  }
  for (;;) {
    ssize_t n = ::recv(fd_, dst, len, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    return TransportError("recv", errno);
  }
}

Status HttpClient::FillBuffer() {
  if (buf_begin_ == buf_end_) {
    buf_begin_ = buf_end_ = 0;
  } else if (buf_end_ == buf_.size()) {
    if (buf_begin_ == 0) {
      return MakeError(ErrorCode::kInternalError, Where() + ": response line or header too long");
    }
    std::memmove(buf_.data(), buf_.data() + buf_begin_, buf_end_ - buf_begin_);
    buf_end_ -= buf_begin_;
    buf_begin_ = 0;
  }
  auto n = RecvSome(buf_.data() + buf_end_, buf_.size() - buf_end_);
  if (!n.ok()) return n.error();
  if (*n == 0) {
    return ConnectionFailure(
        MakeError(ErrorCode::kInternalError, Where() + ": connection closed by the server"));
  }
  buf_end_ += *n;
  return {};
}

Status HttpClient::ReadHead(HttpResponse* resp, size_t* head_len) {
  // Find the blank line that ends the head (offsets relative to buf_begin_, which FillBuffer
  // keeps pointing at the same byte even when it compacts the buffer).
  size_t searched = 0;
  size_t end_of_head = 0;
  for (;;) {
    std::string_view avail(buf_.data() + buf_begin_, buf_end_ - buf_begin_);
    size_t pos = avail.find("\r\n\r\n", searched > 3 ? searched - 3 : 0);
    if (pos != std::string_view::npos) {
      end_of_head = pos + 4;
      break;
    }
    if (avail.size() >= options_.max_header_bytes) {
      return MakeError(ErrorCode::kInternalError, Where() + ": response head exceeds " +
                                                      std::to_string(options_.max_header_bytes) +
                                                      " bytes");
    }
    searched = avail.size();
    RS_RETURN_IF_ERROR(FillBuffer());
  }
  std::string_view head(buf_.data() + buf_begin_, end_of_head - 2);  // keep one CRLF per line
  *head_len = end_of_head;
  auto malformed = [&](std::string_view why) {
    return MakeError(ErrorCode::kInternalError,
                     Where() + ": malformed response: " + std::string(why));
  };

  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  head.remove_prefix(eol + 2);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return malformed("status line '" + std::string(status_line.substr(0, 80)) + "'");
  }
  auto status = ParseUnsigned<int>(status_line.substr(9, 3));
  if (!status || *status < 100 || *status > 999 ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return malformed("status line '" + std::string(status_line.substr(0, 80)) + "'");
  }
  resp->status = *status;
  resp->reason = std::string(status_line.size() > 13 ? status_line.substr(13) : "");
  resp->headers.clear();
  // Minor version in status_line[7]: HTTP/1.0 closes unless it says keep-alive.
  resp->headers.reserve(16);
  while (!head.empty()) {
    eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    if (line.front() == ' ' || line.front() == '\t') return malformed("folded header line");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return malformed("header line '" + std::string(line.substr(0, 80)) + "'");
    }
    resp->headers.emplace_back(text::ToLower(line.substr(0, colon)),
                               std::string(text::TrimBlanks(line.substr(colon + 1))));
  }
  if (status_line[7] == '0') {
    const std::string* conn = resp->FindHeader("connection");
    if (conn == nullptr || !HasToken(*conn, "keep-alive")) {
      resp->headers.emplace_back("connection", "close");
    }
  }
  return {};
}

Status HttpClient::Deliver(const ResponseTarget& target, bool to_target, HttpResponse* resp,
                           const char* data, size_t len) {
  if (len == 0) return {};
  if (!to_target) {
    size_t room = options_.max_error_body > resp->body.size()
                      ? options_.max_error_body - resp->body.size()
                      : 0;
    resp->body.append(data, std::min(room, len));
    resp->body_bytes += len;
    return {};
  }
  switch (target.kind) {
    case ResponseTarget::Kind::kString:
      resp->body.append(data, len);
      break;
    case ResponseTarget::Kind::kSink:
      if (target.sink) RS_RETURN_IF_ERROR(target.sink(data, len));
      break;
    case ResponseTarget::Kind::kBuffer:
      if (len > target.capacity - resp->body_bytes) {
        Error e = MakeError(ErrorCode::kInternalError,
                            Where() + ": response body larger than the " +
                                std::to_string(target.capacity) + "-byte buffer");
        e.details.emplace_back(std::string(kBufferBytes), std::to_string(target.capacity));
        return e;
      }
      std::memcpy(target.buffer + resp->body_bytes, data, len);
      break;
    case ResponseTarget::Kind::kDiscard:
      break;
  }
  resp->body_bytes += len;
  return {};
}

Status HttpClient::ReadBody(const HttpRequest& request, const ResponseTarget& target,
                            HttpResponse* resp, bool* keep_alive) {
  const std::string* conn = resp->FindHeader("connection");
  *keep_alive = conn == nullptr || !HasToken(*conn, "close");
  resp->body.clear();
  resp->body_bytes = 0;
  resp->content_length.reset();
  bool to_target = resp->success();
  auto malformed = [&](std::string_view why) {
    return MakeError(ErrorCode::kInternalError,
                     Where() + ": malformed response: " + std::string(why));
  };

  const std::string* te = resp->FindHeader("transfer-encoding");
  bool chunked = te != nullptr && HasToken(*te, "chunked");
  if (te != nullptr && !chunked) return malformed("unsupported transfer-encoding " + *te);
  for (const auto& [k, v] : resp->headers) {
    if (k != "content-length") continue;
    auto n = ParseUnsigned<uint64_t>(v);
    if (!n || (resp->content_length && *resp->content_length != *n)) {
      return malformed("bad content-length '" + v + "'");
    }
    resp->content_length = n;
  }
  bool no_body =
      request.method == "HEAD" || resp->status == 204 || resp->status == 304 || resp->status < 200;
  if (no_body) return {};

  if (chunked) {
    resp->content_length.reset();
    for (;;) {
      // Chunk-size line.
      std::string_view line;
      for (;;) {
        std::string_view avail(buf_.data() + buf_begin_, buf_end_ - buf_begin_);
        size_t eol = avail.find("\r\n");
        if (eol != std::string_view::npos) {
          line = avail.substr(0, eol);
          buf_begin_ += eol + 2;
          break;
        }
        if (avail.size() > 1024) return malformed("chunk size line too long");
        RS_RETURN_IF_ERROR(FillBuffer());
      }
      std::string_view size_text = text::TrimBlanks(line.substr(0, line.find(';')));
      auto size = ParseUnsigned<uint64_t>(size_text, 16);
      if (!size || size_text.size() > 15) {
        return malformed("chunk size '" + std::string(line.substr(0, 40)) + "'");
      }
      if (*size == 0) {
        // Trailer section: header lines until an empty line.
        for (;;) {
          std::string_view avail(buf_.data() + buf_begin_, buf_end_ - buf_begin_);
          size_t eol = avail.find("\r\n");
          if (eol == std::string_view::npos) {
            if (avail.size() > options_.max_header_bytes) return malformed("trailer too long");
            RS_RETURN_IF_ERROR(FillBuffer());
            continue;
          }
          buf_begin_ += eol + 2;
          if (eol == 0) return {};
        }
      }
      uint64_t left = *size;
      while (left > 0) {
        if (buf_begin_ == buf_end_) RS_RETURN_IF_ERROR(FillBuffer());
        size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf_end_ - buf_begin_));
        RS_RETURN_IF_ERROR(Deliver(target, to_target, resp, buf_.data() + buf_begin_, take));
        buf_begin_ += take;
        left -= take;
      }
      while (buf_end_ - buf_begin_ < 2) RS_RETURN_IF_ERROR(FillBuffer());
      if (buf_[buf_begin_] != '\r' || buf_[buf_begin_ + 1] != '\n') {
        return malformed("missing CRLF after chunk data");
      }
      buf_begin_ += 2;
    }
  }

  if (resp->content_length) {
    uint64_t total = *resp->content_length;
    bool direct = to_target && target.kind == ResponseTarget::Kind::kBuffer;
    if (direct && total > target.capacity) {
      Error e = MakeError(ErrorCode::kInternalError,
                          Where() + ": response body of " + std::to_string(total) +
                              " bytes does not fit the " + std::to_string(target.capacity) +
                              "-byte buffer");
      e.details.emplace_back(std::string(kBufferBytes), std::to_string(target.capacity));
      e.details.emplace_back(std::string(kResponseBytes), std::to_string(total));
      return e;
    }
    // Bytes that arrived with the head.
    size_t take = static_cast<size_t>(std::min<uint64_t>(total, buf_end_ - buf_begin_));
    RS_RETURN_IF_ERROR(Deliver(target, to_target, resp, buf_.data() + buf_begin_, take));
    buf_begin_ += take;
    while (resp->body_bytes < total) {
      uint64_t left = total - resp->body_bytes;
      Result<size_t> n = size_t{0};
      if (direct) {
        // Straight into the caller's buffer: no intermediate copy.
        n = RecvSome(target.buffer + resp->body_bytes, static_cast<size_t>(left));
        if (n.ok() && *n > 0) resp->body_bytes += *n;
      } else {
        buf_begin_ = buf_end_ = 0;
        n = RecvSome(buf_.data(), static_cast<size_t>(std::min<uint64_t>(left, buf_.size())));
        if (n.ok()) {
          buf_end_ = *n;
          take = *n;
          RS_RETURN_IF_ERROR(Deliver(target, to_target, resp, buf_.data(), take));
          buf_begin_ = buf_end_ = 0;
        }
      }
      if (!n.ok()) return n.error();
      if (*n == 0) {
        return MakeError(ErrorCode::kInternalError, Where() + ": connection closed after " +
                                                        std::to_string(resp->body_bytes) + " of " +
                                                        std::to_string(total) + " body bytes");
      }
    }
    return {};
  }

  // No length: the body runs until the server closes the connection.
  *keep_alive = false;
  for (;;) {
    if (buf_begin_ < buf_end_) {
      RS_RETURN_IF_ERROR(
          Deliver(target, to_target, resp, buf_.data() + buf_begin_, buf_end_ - buf_begin_));
    }
    buf_begin_ = buf_end_ = 0;
    auto n = RecvSome(buf_.data(), buf_.size());
    if (!n.ok()) return n.error();
    if (*n == 0) return {};
    buf_end_ = *n;
  }
}

Result<HttpResponse> HttpClient::SendOnce(const HttpRequest& request, const ResponseTarget& target,
                                          bool* retryable) {
  *retryable = false;
  // The head.
  std::string head;
  head.reserve(512);
  head.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\n");
  if (!HasHeaderIgnoreCase(request.headers, "host")) {
    head.append("Host: ").append(host_header_).append("\r\n");
  }
  uint64_t body_size = request.body_pull ? request.body_size : request.body.size();
  bool method_has_body =
      request.method == "PUT" || request.method == "POST" || request.method == "PATCH";
  if (!HasHeaderIgnoreCase(request.headers, "content-length") &&
      (body_size > 0 || method_has_body)) {
    head.append("Content-Length: ").append(std::to_string(body_size)).append("\r\n");
  }
  for (const auto& [k, v] : request.headers) {
    head.append(k).append(": ").append(v).append("\r\n");
  }
  head.append("\r\n");

  // The body.
  Status sent;
  if (!request.body_pull) {
    sent = SendHeadAndBody(head, request.body);
  } else {
    uint64_t done = 0;
    bool head_sent = false;
    while (sent.ok() && (done < body_size || !head_sent)) {
      std::string_view piece;
      if (done < body_size) {
        auto p = request.body_pull();
        if (!p.ok()) {
          Close();
          return p.error();
        }
        piece = *p;
        if (piece.empty() || piece.size() > body_size - done) {
          Close();
          return MakeError(ErrorCode::kInternalError,
                           "request body source produced " + std::to_string(done + piece.size()) +
                               " bytes, Content-Length is " + std::to_string(body_size));
        }
      }
      sent = head_sent ? SendAll(piece.data(), piece.size()) : SendHeadAndBody(head, piece);
      head_sent = true;
      done += piece.size();
    }
  }
  if (!sent.ok() && sent.error().code == ErrorCode::kRequestTimeout) {
    Close();
    return sent.error();
  }
  // Even when sending failed, the server may have answered (an early error response before it
  // stopped reading); prefer that answer.
  HttpResponse resp;
  size_t head_len = 0;
  for (;;) {
    Status h = ReadHead(&resp, &head_len);
    if (!h.ok()) {
      bool nothing_received = buf_end_ == buf_begin_;
      Close();
      if (!sent.ok()) {
        *retryable = true;
        return sent.error();
      }
      *retryable = nothing_received && h.error().code != ErrorCode::kRequestTimeout;
      return h.error();
    }
    buf_begin_ += head_len;
    if (resp.status >= 100 && resp.status < 200 && resp.status != 101) continue;  // 100-continue
    break;
  }
  bool keep_alive = true;
  Status body = ReadBody(request, target, &resp, &keep_alive);
  if (!body.ok()) {
    Close();
    return body.error();
  }
  if (!keep_alive || !sent.ok()) Close();
  return resp;
}

Result<HttpResponse> HttpClient::Send(const HttpRequest& request, const ResponseTarget& target) {
  if (HasCrLf(request.method) || HasCrLf(request.target) || request.target.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "bad request line");
  }
  for (const auto& [k, v] : request.headers) {
    if (k.empty() || HasCrLf(k) || HasCrLf(v) || k.find(':') != std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "bad header '" + k + "'");
    }
  }
  bool reused = fd_ >= 0;
  if (reused && PeerClosedWhileIdle()) {
    Close();
    reused = false;
  }
  if (Status st = Connect(); !st.ok()) return ConnectionFailure(st.error(), "connect");
  bool retryable = false;
  auto resp = SendOnce(request, target, &retryable);
  if (!resp.ok() && reused && retryable && !request.body_pull) {
    // The server closed the idle connection just as we reused it: one fresh attempt.
    if (Status st = Connect(); !st.ok()) return ConnectionFailure(st.error(), "connect");
    resp = SendOnce(request, target, &retryable);
  }
  return resp;
}

}  // namespace rdmastor::client
