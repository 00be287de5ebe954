#include "client/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <pugixml.hpp>
#include <utility>

#include "common/hash.h"
#include "common/uri.h"
#include "s3/sigv4.h"

namespace rdmastor::client {
namespace {

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerAscii(c);
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated header value lists `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
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
  constexpr std::string_view kScheme = "http://";
  if (url.size() < kScheme.size() || !EqualsIgnoreCase(url.substr(0, kScheme.size()), kScheme)) {
    return bad("only http:// URLs are supported");
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) return bad("query or fragment given");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);

  HttpUrl out;
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
  }
  out.path = std::string(path);
  return out;
}

std::string HostHeaderValue(std::string_view host, uint16_t port) {
  std::string out =
      host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  if (port != 80) out += ":" + std::to_string(port);
  return out;
}

const std::string* HttpResponse::FindHeader(std::string_view lower_name) const {
  return FindIn(headers, lower_name);
}

// --- HttpClient -----------------------------------------------------------------------------

HttpClient::HttpClient(std::string host, uint16_t port, HttpClientOptions options)
    : host_(std::move(host)),
      port_(port),
      host_header_(HostHeaderValue(host_, port_)),
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
    connects_ = other.connects_;
    buf_ = std::move(other.buf_);
    buf_begin_ = std::exchange(other.buf_begin_, 0);
    buf_end_ = std::exchange(other.buf_end_, 0);
  }
  return *this;
}

void HttpClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_begin_ = buf_end_ = 0;
}

Error HttpClient::TransportError(std::string_view what, int err) const {
  std::string msg = "http://" + host_header_ + ": " + std::string(what);
  if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT) {
    return MakeError(
        ErrorCode::kRequestTimeout,
        msg + ": timed out (io timeout " + std::to_string(options_.io_timeout.count()) + " ms)");
  }
  if (err != 0) msg += std::string(": ") + std::strerror(err);
  return MakeError(ErrorCode::kInternalError, std::move(msg));
}

namespace {
// Binds fd (of `family`) to local_ip, port 0. An address of the other family is an error.
Status BindSource(int fd, int family, const std::string& local_ip) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    if (::inet_pton(AF_INET, local_ip.c_str(), &a->sin_addr) != 1)
      len = 0;
    else
      len = sizeof(sockaddr_in);
  } else if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, local_ip.c_str(), &a->sin6_addr) != 1)
      len = 0;
    else
      len = sizeof(sockaddr_in6);
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
    return MakeError(ErrorCode::kInternalError, "http://" + host_header_ + ": cannot resolve '" +
                                                    host_ + "': " + ::gai_strerror(gai));
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
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(options_.io_timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((options_.io_timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fd_ = fd;
    ++connects_;
    ::freeaddrinfo(list);
    return {};
  }
  ::freeaddrinfo(list);
  if (last_err == ETIMEDOUT) {
    return MakeError(ErrorCode::kRequestTimeout,
                     "http://" + host_header_ + ": connect timed out after " +
                         std::to_string(options_.connect_timeout.count()) + " ms");
  }
  return TransportError(last_step, last_err);
}

bool HttpClient::PeerClosedWhileIdle() const {
  if (buf_end_ != buf_begin_) return true;  // unsolicited bytes: the stream is out of step
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  return true;  // 0 = orderly close; > 0 = unsolicited data
}

Status HttpClient::SendAll(const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::send(fd_, data, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return TransportError("send", errno);
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return {};
}

Status HttpClient::SendHeadAndBody(std::string_view head, std::string_view body) {
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body.data()), body.size()}};
  int idx = 0;
  int count = body.empty() ? 1 : 2;
  while (idx < count) {
    msghdr msg{};
    msg.msg_iov = iov + idx;
    msg.msg_iovlen = static_cast<size_t>(count - idx);
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return TransportError("send", errno);
    }
    auto left = static_cast<size_t>(n);
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
      return MakeError(ErrorCode::kInternalError,
                       "http://" + host_header_ + ": response line or header too long");
    }
    std::memmove(buf_.data(), buf_.data() + buf_begin_, buf_end_ - buf_begin_);
    buf_end_ -= buf_begin_;
    buf_begin_ = 0;
  }
  auto n = RecvSome(buf_.data() + buf_end_, buf_.size() - buf_end_);
  if (!n.ok()) return n.error();
  if (*n == 0) {
    return MakeError(ErrorCode::kInternalError,
                     "http://" + host_header_ + ": connection closed by the server");
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
      return MakeError(ErrorCode::kInternalError,
                       "http://" + host_header_ + ": response head exceeds " +
                           std::to_string(options_.max_header_bytes) + " bytes");
    }
    searched = avail.size();
    RS_RETURN_IF_ERROR(FillBuffer());
  }
  std::string_view head(buf_.data() + buf_begin_, end_of_head - 2);  // keep one CRLF per line
  *head_len = end_of_head;
  auto malformed = [&](std::string_view why) {
    return MakeError(ErrorCode::kInternalError,
                     "http://" + host_header_ + ": malformed response: " + std::string(why));
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
    resp->headers.emplace_back(ToLower(line.substr(0, colon)),
                               std::string(Trim(line.substr(colon + 1))));
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
        return MakeError(ErrorCode::kInternalError,
                         "http://" + host_header_ + ": response body larger than the " +
                             std::to_string(target.capacity) + "-byte buffer");
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
                     "http://" + host_header_ + ": malformed response: " + std::string(why));
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
      std::string_view size_text = Trim(line.substr(0, line.find(';')));
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
      return MakeError(ErrorCode::kInternalError,
                       "http://" + host_header_ + ": response body of " + std::to_string(total) +
                           " bytes does not fit the " + std::to_string(target.capacity) +
                           "-byte buffer");
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
        return MakeError(ErrorCode::kInternalError, "http://" + host_header_ +
                                                        ": connection closed after " +
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
  RS_RETURN_IF_ERROR(Connect());
  bool retryable = false;
  auto resp = SendOnce(request, target, &retryable);
  if (!resp.ok() && reused && retryable && !request.body_pull) {
    // The server closed the idle connection just as we reused it: one fresh attempt.
    RS_RETURN_IF_ERROR(Connect());
    resp = SendOnce(request, target, &retryable);
  }
  return resp;
}

// --- S3 -------------------------------------------------------------------------------------

Result<S3ClientConfig> S3ConfigFromEndpoint(std::string_view endpoint_url, std::string access_key,
                                            std::string secret_key, std::string region) {
  auto url = ParseHttpUrl(endpoint_url);
  if (!url.ok()) return url.error();
  if (!url->path.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "S3 endpoint '" + std::string(endpoint_url) + "' must not have a path");
  }
  S3ClientConfig c;
  c.host = url->host;
  c.port = url->port;
  c.access_key = std::move(access_key);
  c.secret_key = std::move(secret_key);
  c.region = std::move(region);
  return c;
}

std::string S3ObjectPath(std::string_view bucket, std::string_view key) {
  if (bucket.empty()) return "/";
  std::string path = "/" + uri::Encode(bucket);
  if (!key.empty()) path += "/" + uri::Encode(key, /*encode_slash=*/false);
  return path;
}

Error S3ErrorFromResponse(const HttpResponse& resp, std::string_view what) {
  std::string code_text, message, request_id;
  if (!resp.body.empty()) {
    pugi::xml_document doc;
    if (doc.load_buffer(resp.body.data(), resp.body.size())) {
      pugi::xml_node err = doc.child("Error");
      code_text = err.child_value("Code");
      message = err.child_value("Message");
      request_id = err.child_value("RequestId");
    }
  }
  if (request_id.empty()) {
    if (const std::string* id = resp.FindHeader("x-amz-request-id")) request_id = *id;
  }
  ErrorCode code = ErrorCode::kInternalError;
  if (!code_text.empty()) {
    static const std::pair<std::string_view, ErrorCode> kCodes[] = {
#define RDMASTOR_CODE_ENTRY(name, text, status, msg) {text, ErrorCode::name},
        RDMASTOR_ERROR_CODES(RDMASTOR_CODE_ENTRY)
#undef RDMASTOR_CODE_ENTRY
    };
    for (const auto& [text, c] : kCodes) {
      if (text == code_text) {
        code = c;
        break;
      }
    }
  } else {
    // No error document (HEAD, or not an S3 server): fall back on the status.
    switch (resp.status) {
      case 403:
        code = ErrorCode::kAccessDenied;
        code_text = "AccessDenied";
        break;
      case 404:
        code = ErrorCode::kNoSuchKey;
        code_text = "NotFound";
        break;
      case 412:
        code = ErrorCode::kPreconditionFailed;
        code_text = "PreconditionFailed";
        break;
      case 416:
        code = ErrorCode::kInvalidRange;
        code_text = "InvalidRange";
        break;
      case 503:
        code = ErrorCode::kSlowDown;
        code_text = "SlowDown";
        break;
      default:
        code_text = "UnknownError";
        break;
    }
    if (message.empty()) {
      message = resp.body.empty() ? resp.reason : resp.body.substr(0, 200);
    }
  }
  std::string msg = "S3 " + code_text + " (HTTP " + std::to_string(resp.status) + "): " + message +
                    " [" + std::string(what);
  if (!request_id.empty()) msg += ", request-id " + request_id;
  msg += "]";
  return MakeError(code, std::move(msg));
}

S3Client::S3Client(S3ClientConfig config)
    : config_(std::move(config)), http_(config_.host, config_.port, config_.http) {}

Result<HttpResponse> S3Client::Execute(const S3Request& request, const ResponseTarget& target) {
  std::string path = S3ObjectPath(request.bucket, request.key);
  s3::SignInput in;
  in.method = request.method;
  in.raw_path = path;
  in.raw_query = request.raw_query;
  in.headers.reserve(request.headers.size() + 1);
  in.headers.emplace_back("host", http_.host_header());
  for (const auto& [k, v] : request.headers) in.headers.emplace_back(ToLower(k), v);
  if (!request.payload_sha256.empty()) {
    in.payload_sha256 = request.payload_sha256;
  } else if (request.body_pull) {
    in.payload_sha256 = std::string(kUnsignedPayload);
  } else {
    in.payload_sha256 = hash::Sha256Hex(request.body);
  }
  in.access_key = config_.access_key;
  in.secret_key = config_.secret_key;
  in.region = config_.region;
  in.now_unix = static_cast<int64_t>(::time(nullptr));

  HttpRequest http;
  http.method = request.method;
  http.target = request.raw_query.empty() ? path : path + "?" + request.raw_query;
  http.headers = s3::SignRequest(in);
  http.body = request.body;
  http.body_pull = request.body_pull;
  http.body_size = request.body_size;
  return http_.Send(http, target);
}

Status S3Client::CreateBucket(std::string_view bucket) {
  S3Request req;
  req.method = "PUT";
  req.bucket = std::string(bucket);
  std::string body;
  if (config_.region != "us-east-1") {
    body =
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>" +
        config_.region +
        "</LocationConstraint>"
        "</CreateBucketConfiguration>";
  }
  req.body = body;
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "PUT /" + std::string(bucket));
  return {};
}

Status S3Client::DeleteBucket(std::string_view bucket) {
  S3Request req;
  req.method = "DELETE";
  req.bucket = std::string(bucket);
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "DELETE /" + std::string(bucket));
  return {};
}

Status S3Client::DeleteObject(std::string_view bucket, std::string_view key) {
  S3Request req;
  req.method = "DELETE";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "DELETE " + S3ObjectPath(bucket, key));
  return {};
}

Result<PutObjectResult> S3Client::DoPut(S3Request request) {
  request.method = "PUT";
  auto resp = Execute(request, ResponseTarget::Discard());
  std::string what = "PUT " + S3ObjectPath(request.bucket, request.key);
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  const std::string* etag = resp->FindHeader("etag");
  if (etag == nullptr || etag->empty()) {
    return MakeError(ErrorCode::kInternalError,
                     what + ": HTTP " + std::to_string(resp->status) + " without an ETag");
  }
  return PutObjectResult{*etag, std::move(resp->headers)};
}

Result<PutObjectResult> S3Client::PutObject(std::string_view bucket, std::string_view key,
                                            std::string_view data,
                                            const HeaderList& extra_headers) {
  S3Request req;
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.headers = extra_headers;
  req.body = data;
  req.payload_sha256 = std::string(kUnsignedPayload);
  return DoPut(std::move(req));
}

Result<PutObjectResult> S3Client::PutObject(std::string_view bucket, std::string_view key,
                                            uint64_t size, BodyPull pull,
                                            const HeaderList& extra_headers) {
  S3Request req;
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.headers = extra_headers;
  req.body_pull = std::move(pull);
  req.body_size = size;
  req.payload_sha256 = std::string(kUnsignedPayload);
  return DoPut(std::move(req));
}

Result<GetObjectResult> S3Client::DoGet(std::string_view bucket, std::string_view key,
                                        std::optional<ByteRange> range,
                                        const ResponseTarget& target) {
  S3Request req;
  req.method = "GET";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  if (range) {
    std::string value = "bytes=" + std::to_string(range->first) + "-";
    if (range->last) value += std::to_string(*range->last);
    req.headers.emplace_back("range", std::move(value));
  }
  std::string what = "GET " + S3ObjectPath(bucket, key);
  auto resp = Execute(req, target);
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  if (resp->status != 200 && resp->status != 206) {
    return MakeError(ErrorCode::kInternalError,
                     what + ": unexpected HTTP " + std::to_string(resp->status));
  }
  GetObjectResult out;
  out.status = resp->status;
  out.bytes = resp->body_bytes;
  if (resp->content_length && *resp->content_length != out.bytes) {
    return MakeError(ErrorCode::kInternalError, what + ": received " + std::to_string(out.bytes) +
                                                    " bytes, Content-Length " +
                                                    std::to_string(*resp->content_length));
  }
  if (const std::string* etag = resp->FindHeader("etag")) out.etag = *etag;
  if (resp->status == 206) {
    const std::string* cr = resp->FindHeader("content-range");
    if (cr == nullptr)
      return MakeError(ErrorCode::kInternalError, what + ": 206 without Content-Range");
    size_t slash = cr->rfind('/');
    if (slash != std::string::npos) {
      out.object_size = ParseUnsigned<uint64_t>(std::string_view(*cr).substr(slash + 1));
    }
  } else {
    out.object_size = out.bytes;
  }
  out.headers = std::move(resp->headers);
  return out;
}

Result<GetObjectResult> S3Client::GetObject(std::string_view bucket, std::string_view key,
                                            std::optional<ByteRange> range, const BodySink& sink) {
  return DoGet(bucket, key, range, ResponseTarget::Sink(sink));
}

Result<GetObjectResult> S3Client::GetObjectInto(std::string_view bucket, std::string_view key,
                                                std::optional<ByteRange> range, char* dst,
                                                size_t capacity) {
  return DoGet(bucket, key, range, ResponseTarget::Buffer(dst, capacity));
}

}  // namespace rdmastor::client
