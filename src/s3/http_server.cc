#include "s3/http_server.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <future>
#include <limits>
#include <thread>
#include <unordered_map>

#include "admin/logging.h"
#include "admin/metrics.h"
#include "common/no_block.h"
#include "common/splice.h"
#include "common/thread_pool.h"

namespace rdmastor::s3 {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Read buffer while a request body streams in; between requests a connection keeps none, so an
// idle or half-sent connection costs a few KiB, not this.
constexpr size_t kReadBufferBytes = 64 * 1024;
// Responses whose body is at most this are buffered and written by the I/O side after the
// handler returned (error documents, HEAD, small listings and objects): a peer that does not read
// them holds a connection, never a worker.
constexpr uint64_t kBufferedResponseBytes = 64 * 1024;
// Accept back-off while the process is out of file descriptors, and how often that is logged.
constexpr auto kAcceptBackoffMin = std::chrono::milliseconds(50);
constexpr auto kAcceptBackoffMax = std::chrono::milliseconds(1000);
constexpr auto kAcceptReportEvery = std::chrono::seconds(60);
// After a burst of connections closed (live count at most half its peak, peak at least this),
// free heap memory goes back to the kernel. Memory follows what connections do, not how many
// there are (a GET its client does not read holds its read-ahead stripes, ~4 MiB on 4 drives),
// so a few dozen are a burst worth trimming after; at most once per kTrimMinInterval, since a
// trim makes the next requests fault their pages back in.
constexpr size_t kTrimAfterPeak = 32;
constexpr auto kTrimDelay = std::chrono::milliseconds(500);
constexpr auto kTrimMinInterval = std::chrono::seconds(5);
// Handlers waiting on their client (a body byte, room to send) without a worker slot, per slot.
constexpr size_t kWaitingHandlersPerWorker = 4;
// One client address may hold 1/kConnectionShares of the connection limit (at least the minimum);
// its further connections are closed at once.
constexpr size_t kConnectionShares = 4;
constexpr size_t kMinConnectionsPerClient = 16;
// At the connection limit, a connection waiting this long for a request header gives way.
constexpr auto kHeaderGrace = std::chrono::milliseconds(1000);
// How long a stopping server lets requests in flight finish before closing their connections.
constexpr auto kShutdownGrace = std::chrono::seconds(10);

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The response head as Beast would serialize it (status line, the handler's headers in order,
// Content-Length, "Connection: close" when the connection ends after it), built in one string
// without Beast's field container or a stream: this runs once per request.
// Appends to `out`, with room reserved for `body_bytes` more.
void RenderHead(const HttpResponseHead& head, bool keep_alive, size_t body_bytes,
                std::string& out) {
  const auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(head.status)));
  size_t size = out.size() + 64 + reason.size() + body_bytes;
  for (const auto& [name, value] : head.headers) size += name.size() + value.size() + 4;
  out.reserve(size);
  out += "HTTP/1.1 ";
  out += std::to_string(head.status);
  out += ' ';
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& [name, value] : head.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(head.content_length);
  out += "\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
}

// Bounds the workers one client address holds at once. Requests over the bound wait, in order,
// without a worker: their connection is simply not read further until their turn.
class ClientGate {
 public:
  explicit ClientGate(size_t per_client) : per_client_(std::max<size_t>(1, per_client)) {}

  // Runs `start` now, or later from Leave() once `ip` holds fewer than the bound.
  void Enter(const std::string& ip, std::function<void()> start) {
    {
      std::lock_guard lock(mu_);
      auto& c = clients_[ip];
      if (c.active >= per_client_) {
        c.waiting.push_back(std::move(start));
        return;
      }
      ++c.active;
    }
    start();
  }

  void Leave(const std::string& ip) {
    std::function<void()> next;
    {
      std::lock_guard lock(mu_);
      auto it = clients_.find(ip);
      if (it == clients_.end()) return;
      auto& c = it->second;
      if (!c.waiting.empty()) {  // the slot passes to the client's next request
        next = std::move(c.waiting.front());
        c.waiting.pop_front();
      } else if (--c.active == 0) {
        clients_.erase(it);
      }
    }
    if (next) next();
  }

 private:
  struct Client {
    size_t active = 0;
    std::deque<std::function<void()>> waiting;
  };
  const size_t per_client_;
  std::mutex mu_;
  std::unordered_map<std::string, Client> clients_;
};

// The worker slots: at most `limit` handlers run at once (MINIO_API_REQUESTS_MAX), but a handler
// waiting for its client (a body byte, room to send) gives its slot up while it waits, so clients
// that trickle — from however many addresses — hold threads, not the workers everyone else
// needs. Waiting handlers are bounded too (`park_limit`; past it a handler keeps its slot while
// it waits, as before). A handler whose client moved on gets a slot back before any new request.
// The pool has limit + park_limit threads, so every admitted or waiting handler has one.
class WorkerSlots {
 public:
  WorkerSlots(ThreadPool& pool, size_t limit, size_t park_limit)
      : pool_(pool), limit_(std::max<size_t>(1, limit)), park_limit_(park_limit) {}

  // Runs `task` on a pool thread once a slot is free; the slot is freed when it returns.
  void Submit(std::function<void()> task) {
    auto run = [this, task = std::move(task)] {
      task();
      Release();
    };
    std::lock_guard lock(mu_);
    if (stopping_ || (active_ < limit_ && resuming_ == 0 && queue_.empty())) {
      ++active_;
      pool_.Submit(std::move(run));
    } else {
      queue_.push_back(std::move(run));
    }
  }

  // Before waiting on the client: gives the slot up (false: too many wait already; kept).
  bool Park() {
    std::lock_guard lock(mu_);
    if (parked_ >= park_limit_) return false;
    ++parked_;
    --active_;
    PromoteLocked();
    return true;
  }

  // After the wait: takes a slot again, ahead of queued requests.
  void Resume() {
    std::unique_lock lock(mu_);
    ++resuming_;
    cv_.wait(lock, [this] { return active_ < limit_ || stopping_; });
    --resuming_;
    --parked_;
    ++active_;
    PromoteLocked();  // another resumer, or queued requests, may fit too
  }

  // Shutdown: queued requests run at once (their connections close), nobody waits for a slot.
  void Stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& t : queue_) {
      ++active_;
      pool_.Submit(std::move(t));
    }
    queue_.clear();
    cv_.notify_all();
  }

 private:
  void Release() {
    std::lock_guard lock(mu_);
    --active_;
    PromoteLocked();
  }

  void PromoteLocked() {
    if (active_ >= limit_) return;
    if (resuming_ > 0) {
      cv_.notify_one();
      return;
    }
    while (active_ < limit_ && !queue_.empty()) {
      ++active_;
      pool_.Submit(std::move(queue_.front()));
      queue_.pop_front();
    }
  }

  ThreadPool& pool_;
  const size_t limit_, park_limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t active_ = 0, parked_ = 0, resuming_ = 0;
  bool stopping_ = false;
};

// What every session shares with the server.
struct Shared {
  const HttpServerOptions& opts;
  RequestHandler& handler;
  WorkerSlots& workers;
  const std::atomic<bool>& stopping;
  ClientGate& gate;
  std::atomic<size_t> live{0};              // open client connections
  std::function<void()> connection_closed;  // after `live` dropped
  std::mutex per_client_mu;
  std::unordered_map<std::string, size_t> per_client;  // open connections by client address
};

// How long moving `bytes` may take: `base` plus the time at the minimum rate.
std::chrono::milliseconds TransferDeadline(std::chrono::milliseconds base, uint64_t bytes,
                                           uint64_t min_rate) {
  if (min_rate == 0) return base;
  return base + std::chrono::milliseconds(bytes * 1000 / min_rate);
}

// What the server needs of any connection, plain or TLS.
class Connection {
 public:
  virtual ~Connection() = default;
  // Server shutdown: an idle connection closes now; one running a handler closes when the
  // handler is done (or when `force`, failing the handler's next socket operation).
  virtual void Shutdown(bool force) = 0;
  virtual void Start() = 0;
  // Between requests, waiting for (the rest of) a request header since before `since`.
  virtual bool WaitingForHeaderSince(std::chrono::steady_clock::time_point since) const = 0;
};

// One client connection. The I/O side (header reads, keep-alive, draining) runs as callbacks on
// the connection's strand; while a handler runs on a worker thread, the worker drives body reads
// and response writes by posting operations to the strand and waiting for their completion, so a
// slow disk never stalls an I/O thread and a slow client never spins one.
//
// One code path for both transports: Stream is beast::tcp_stream (HTTP) or
// beast::ssl_stream<beast::tcp_stream> (HTTPS, which first runs the TLS handshake).
template <class Stream>
class Session final : public Connection,
                      public std::enable_shared_from_this<Session<Stream>>,
                      public BodySource,
                      public ResponseSink {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  // `stream_args`: the accepted socket, plus the TLS context for HTTPS.
  template <class... StreamArgs>
  Session(Shared& shared, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        shared_(shared),
        opts_(shared.opts),
        handler_(shared.handler),
        workers_(shared.workers),
        stopping_(shared.stopping) {
    shared_.live.fetch_add(1);
  }

  ~Session() override {
    if (!client_.empty()) {
      std::lock_guard lock(shared_.per_client_mu);
      if (auto it = shared_.per_client.find(client_);
          it != shared_.per_client.end() && --it->second == 0)
        shared_.per_client.erase(it);
    }
    shared_.live.fetch_sub(1);
    if (shared_.connection_closed) shared_.connection_closed();
  }

  void Shutdown(bool force) override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this(), force] {
      // Under io_mu_: a worker finishing a request on its own thread (FinishInPlace) either saw
      // `stopping_` or has handed the connection back (in_handler_ false) by now.
      std::lock_guard lock(self->io_mu_);
      if (force || !self->in_handler_) self->Close();
    });
  }

  // The address this connection counts against (BeastHttpServer::Accept).
  void CountAgainst(std::string client) { client_ = std::move(client); }

  bool WaitingForHeaderSince(std::chrono::steady_clock::time_point since) const override {
    return waiting_header_ &&
           header_wait_started_.load() < since.time_since_epoch().count();
  }

  void Start() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Lowest().expires_after(self->opts_.handshake_timeout);
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          // A plain-HTTP client or a failed certificate check on the client side: just close.
          if (ec) {
            spdlog::debug("TLS handshake with {} failed: {}", self->RemoteIp(), ec.message());
            return self->Close();
          }
          self->ReadHeader();
        });
      } else {
        self->ReadHeader();
      }
    });
  }

  // --- BodySource (worker thread) ---
  Result<size_t> Read(char* buf, size_t len) override {
    if (len == 0) return size_t{0};
    if (parser_->is_done()) return size_t{0};
    if (expect_continue_ && !sent_continue_) {
      sent_continue_ = true;
      auto ec = Blocking(opts_.send_timeout, [this](auto done) {
        asio::async_write(stream_, asio::buffer(kContinue),
                          [done](beast::error_code e, size_t) { done(e, 0); });
      });
      if (ec.first) return MakeError(ErrorCode::kIncompleteBody, ec.first.message());
    }
    // Beast sizes each socket read by the buffer's spare capacity (at least 512 bytes); without
    // room reserved, request bodies would arrive 512 bytes per system call.
    if (buffer_.capacity() < kReadBufferBytes) buffer_.reserve(kReadBufferBytes);
    // A trickling client is cut off: this read must finish at the minimum rate (plus the
    // timeout), counting only the bytes the body still owes when its length is known.
    uint64_t want = len;
    if (request_.content_length)
      want = std::min<uint64_t>(want, *request_.content_length - body_bytes_read_);
    auto deadline = TransferDeadline(opts_.body_timeout, want, opts_.min_rate);
    auto [ec, n] = Blocking(
        deadline,
        [this, buf, len](auto done) {
          auto& body = parser_->get().body();
          body.data = buf;
          body.size = len;
          http::async_read(stream_, buffer_, *parser_,
                           [this, done, len](beast::error_code e, size_t) {
                             if (e == http::error::need_buffer) e = {};
                             done(e, len - parser_->get().body().size);
                           });
        },
        /*answer_on_timeout=*/true);
    if (ec) {
      if (ec == beast::error::timeout) {
        keep_alive_ = false;  // as S3: answer 400 RequestTimeout, then close
        return MakeError(ErrorCode::kRequestTimeout);
      }
      if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension)
        return MakeError(ErrorCode::kMalformedChunkedEncoding, ec.message());
      return MakeError(ErrorCode::kIncompleteBody, "reading request body: " + ec.message());
    }
    body_bytes_read_ += n;
    return n;
  }

  // --- ResponseSink (worker thread) ---
  bool SendHead(const HttpResponseHead& head) override {
    if (head_sent_) return false;
    head_sent_ = true;
    response_length_ = head.content_length;
    // Answering before the client was told to continue: it may or may not send its body next, so
    // the connection cannot be reused; AfterHandler lingers before closing.
    const bool body_pending = request_.chunked || request_.content_length.value_or(0) > 0;
    response_close_ = head.close_connection || (expect_continue_ && !sent_continue_ && body_pending);
    // A client that sent "Expect: 100-continue" with an empty body may still wait for the interim
    // response (botocore reuses the first status line it sees on the connection); sending it
    // before the final response is always valid.
    bool interim = expect_continue_ && !sent_continue_ && request_.content_length &&
                   *request_.content_length == 0;
    sent_continue_ = sent_continue_ || interim;
    const bool buffered = is_head_request_ || head.content_length <= kBufferedResponseBytes;
    out_ = interim ? kContinue : std::string();
    RenderHead(head, keep_alive_ && !response_close_,
               buffered && !is_head_request_ ? head.content_length : 0, out_);
    if (is_head_request_) response_length_ = 0;
    // Buffered: written once the handler returned (FinishInPlace or AfterHandler).
    if (buffered) return true;
    auto ec = Blocking(opts_.send_timeout, [this](auto done) {
      asio::async_write(stream_, asio::buffer(out_),
                        [done](beast::error_code e, size_t) { done(e, 0); });
    });
    std::string().swap(out_);  // a streamed body is written straight from the handler's buffer
    if (ec.first) {
      client_gone_ = true;
      return false;
    }
    return true;
  }

  bool Write(const char* data, size_t len) override {
    if (!head_sent_ || client_gone_) return false;
    if (len == 0) return true;
    if (response_written_ + len > response_length_) return false;  // would corrupt framing
    if (!out_.empty()) {                                           // a buffered response (SendHead)
      out_.append(data, len);
      response_written_ += len;
      return true;
    }
    auto deadline = TransferDeadline(opts_.send_timeout, len, opts_.min_rate);
    auto ec = Blocking(deadline, [this, data, len](auto done) {
      asio::async_write(stream_, asio::buffer(data, len),
                        [done](beast::error_code e, size_t n) { done(e, n); });
    });
    if (ec.first) {
      client_gone_ = true;
      return false;
    }
    response_written_ += len;
    return true;
  }

  bool head_sent() const override { return head_sent_; }

  // A streamed (not buffered) response over plain TCP.
  bool CanWritePipe() const override {
    return !kTls && head_sent_ && !client_gone_ && !is_head_request_ && out_.empty();
  }

  // Splices the pipe's pages to the socket from this worker thread (no copy, no hand-off to the
  // strand while the socket takes them); only a full socket waits, on the strand, for it to be
  // writable (the worker's slot parked, as for Write), within Write's deadline. The strand does
  // nothing with the socket meanwhile but Shutdown, which io_mu_ orders against the splices.
  bool WritePipe(SplicePipe& pipe) override {
    if constexpr (kTls) {
      return false;
    } else {
      if (!CanWritePipe() || !noblock::MayWait()) return false;
      const size_t len = pipe.held();
      if (response_written_ + len > response_length_) return false;  // would corrupt framing
      const auto deadline = std::chrono::steady_clock::now() +
                            TransferDeadline(opts_.send_timeout, len, opts_.min_rate);
      while (pipe.held() > 0) {
        Result<size_t> n = size_t{0};
        {
          std::lock_guard lock(io_mu_);
          if (stopping_ || !Lowest().socket().is_open()) {
            client_gone_ = true;
            return false;
          }
          n = pipe.SendTo(Lowest().socket().native_handle());
        }
        if (!n.ok()) {
          client_gone_ = true;
          return false;
        }
        response_written_ += *n;
        if (*n > 0 || pipe.held() == 0) continue;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        auto ec = left.count() <= 0
                      ? std::pair<beast::error_code, size_t>{beast::error::timeout, 0}
                      : Blocking(
                            left,
                            [this](auto done) {
                              Lowest().socket().async_wait(
                                  tcp::socket::wait_write,
                                  [done](beast::error_code e) { done(e, 0); });
                            },
                            /*answer_on_timeout=*/true);
        if (ec.first) {
          client_gone_ = true;  // the connection closes (FinishRequest: incomplete response)
          return false;
        }
      }
      return true;
    }
  }

 private:
  using Done = std::function<void(beast::error_code, size_t)>;

  // Runs `start(done)` on the strand with a timeout and waits for `done` on this thread. A timeout
  // closes the socket (Beast's stream timeout), or with `answer_on_timeout` only cancels the
  // operation (beast::error::timeout) so the handler can still send its error response.
  template <class Start>
  std::pair<beast::error_code, size_t> Blocking(std::chrono::milliseconds timeout, Start start,
                                                bool answer_on_timeout = false) {
    // An inline attempt on the I/O thread (TryInline) never waits for the strand it runs on.
    if (!noblock::MayWait()) return {asio::error::would_block, 0};
    std::promise<std::pair<beast::error_code, size_t>> promise;
    auto future = promise.get_future();
    // Waiting on the client holds this thread, not a worker slot (WorkerSlots).
    const bool parked = workers_.Park();
    struct Unpark {
      WorkerSlots* slots;
      ~Unpark() {
        if (slots) slots->Resume();
      }
    } unpark{parked ? &workers_ : nullptr};
    asio::post(stream_.get_executor(), [this, &promise, &start, timeout, answer_on_timeout] {
      if (!answer_on_timeout) {
        Lowest().expires_after(timeout);
        start(Done([&promise](beast::error_code e, size_t n) { promise.set_value({e, n}); }));
        return;
      }
      Lowest().expires_never();
      op_timed_out_ = false;
      op_timer_.expires_after(timeout);
      op_timer_.async_wait([self = this->shared_from_this()](beast::error_code e) {
        if (e) return;  // the operation finished first
        self->op_timed_out_ = true;
        self->Lowest().socket().cancel(e);
      });
      start(Done([this, &promise](beast::error_code e, size_t n) {
        op_timer_.cancel();
        if (op_timed_out_ && e == asio::error::operation_aborted) e = beast::error::timeout;
        promise.set_value({e, n});
      }));
    });
    return future.get();
  }

  void ReadHeader() {
    // Between requests a connection keeps no large buffer (pipelined bytes stay).
    if (buffer_.size() == 0 && buffer_.capacity() > 0) buffer_.shrink_to_fit();
    std::vector<char>().swap(drain_buf_);
    std::string().swap(out_);
    parser_.emplace();
    parser_->header_limit(opts_.header_limit);
    // Not boost::none: Boost 1.74 compares the length against the empty optional and always fails.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    ResetResponse();
    body_bytes_read_ = 0;
    Lowest().expires_after(opts_.header_timeout);
    header_wait_started_ = std::chrono::steady_clock::now().time_since_epoch().count();
    waiting_header_ = true;
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // No response begun: how each request starts, and what a dropped inline attempt leaves.
  void ResetResponse() {
    out_.clear();
    head_sent_ = false;
    client_gone_ = false;
    sent_continue_ = false;
    response_close_ = false;
    response_written_ = 0;
    response_length_ = 0;
  }

  void OnHeader(beast::error_code ec) {
    waiting_header_ = false;
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    if (ec) {
      ErrorCode code = ec == http::error::header_limit ? ErrorCode::kRequestHeaderSectionTooLarge
                                                       : ErrorCode::kInvalidRequest;
      spdlog::info("rejecting request from {}: {}", RemoteIp(), ec.message());
      return SendFrontEndErrorAndClose(code);
    }
    auto& msg = parser_->get();
    request_ = HttpRequest{};
    request_.method = std::string(msg.method_string());
    request_.target = std::string(msg.target());
    auto q = request_.target.find('?');
    request_.raw_path = request_.target.substr(0, q);
    request_.raw_query = q == std::string::npos ? "" : request_.target.substr(q + 1);
    for (const auto& field : msg) {
      request_.headers.emplace_back(ToLower(field.name_string()), std::string(field.value()));
    }
    // A connection's addresses do not change: asked once (two system calls), not per request.
    if (!endpoints_known_) {
      endpoints_known_ = true;
      beast::error_code ep_ec;
      auto ep = Lowest().socket().remote_endpoint(ep_ec);
      if (!ep_ec) {
        auto addr = ep.address();
        if (addr.is_v6() && addr.to_v6().is_v4_mapped())
          addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
        remote_ip_ = addr.to_string();
        remote_port_ = ep.port();
      }
      if (auto local = Lowest().socket().local_endpoint(ep_ec); !ep_ec) {
        auto addr = local.address();
        if (addr.is_v6() && addr.to_v6().is_v4_mapped())
          addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
        local_ip_ = addr.to_string();
      }
    }
    request_.remote_ip = remote_ip_;
    request_.remote_port = remote_port_;
    request_.local_ip = local_ip_;
    request_.chunked = parser_->chunked();
    if (auto cl = parser_->content_length()) request_.content_length = *cl;
    keep_alive_ = msg.keep_alive();
    is_head_request_ = msg.method() == http::verb::head;
    auto expect = msg[http::field::expect];
    expect_continue_ = beast::iequals(expect, "100-continue");

    in_handler_ = true;
    if (TryInline()) return;
    // Hand the request to a worker (once its client holds fewer than its share); the strand stays
    // idle until the worker posts back.
    gated_ = !(opts_.uncapped && opts_.uncapped(request_));
    admin::RequestQueued();  // minio_s3_requests_waiting_total until a worker runs it
    auto run = [self = this->shared_from_this()] {
      self->workers_.Submit([self] { self->RunHandler(); });
    };
    if (gated_)
      shared_.gate.Enter(request_.remote_ip, std::move(run));
    else
      run();
  }

  // A request without a body that the handler can answer with what is at hand (the object's
  // metadata cached, its lock free, a response small enough to buffer) is answered here, on the
  // I/O thread that parsed it: no worker wake-up and no switch back (about a quarter of a 4 KiB
  // GET's CPU went to those). The attempt runs under a no-block scope (common/no_block.h): a step
  // that would wait drops it, and the request goes to a worker as usual. The buffered response
  // leaves with one non-blocking send, or asynchronously from the strand (AfterHandler), so a
  // client that does not read holds neither this thread nor a worker.
  bool TryInline() {
    if (!parser_->is_done() || expect_continue_ || stopping_ || !handler_.MayServeInline(request_))
      return false;
    admin::RequestQueued();
    admin::RequestStarted();
    bool served = false;
    try {
      served = handler_.HandleInline(request_, *this, *this);
    } catch (const std::exception&) {
      served = false;  // the worker runs it again and reports what it throws
    }
    admin::RequestFinished();
    if (!served) {
      ResetResponse();
      return false;
    }
    if (!FinishInPlace()) AfterHandler();
    return true;
  }

  void RunHandler() {
    admin::RequestStarted();
    try {
      handler_.Handle(request_, *this, *this);
    } catch (const std::exception& e) {
      spdlog::error("handler threw for {} {}: {}", request_.method,
                    admin::RedactTarget(request_.target), e.what());
      if (!head_sent_) {
        HttpResponseHead head;
        std::string body;
        handler_.RenderFrontEndError(ErrorCode::kInternalError, head, body);
        head.close_connection = true;
        head.content_length = body.size();
        if (SendHead(head)) Write(body.data(), body.size());
      }
    }
    admin::RequestFinished();
    if (gated_) shared_.gate.Leave(request_.remote_ip);
    if (FinishInPlace()) return;  // the connection may already be serving its next request
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->AfterHandler(); });
  }

  // The common end of a small request, done where it ran (the worker, or the I/O thread for an
  // inline one) instead of handing the connection back to an I/O thread (a thread switch each
  // way, costly on 2 cores and on paravirtualised guests): send the buffered response with one
  // non-blocking send and start the read of the next request header from here; the reactor
  // completes it on the strand. Anything else — a response the socket does not take at once, TLS,
  // a connection to close, linger or drain, shutdown — goes to the strand as before
  // (AfterHandler), so a slow reader still holds no worker. While in_handler_, nothing on the
  // strand touches the session but Shutdown, which io_mu_ orders against this. Returns false when
  // the strand has to finish the request.
  bool FinishInPlace() {
    if constexpr (kTls) {
      return false;
    } else {
      if (out_.empty() || client_gone_ || response_close_ || !keep_alive_ ||
          response_written_ != response_length_ || !parser_->is_done()) {
        return false;
      }
      std::lock_guard lock(io_mu_);
      if (stopping_ || !Lowest().socket().is_open()) return false;
      const int fd = Lowest().socket().native_handle();
      size_t sent = 0;
      while (sent < out_.size()) {
        ssize_t n = ::send(fd, out_.data() + sent, out_.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          break;  // the peer's window is full, or the connection failed: the strand finds out
        }
      }
      if (sent < out_.size()) {
        out_.erase(0, sent);
        return false;
      }
      // A Shutdown queued after this sees in_handler_ false and closes the connection.
      in_handler_ = false;
      ReadHeader();
      return true;
    }
  }

  // On the strand: writes a buffered response (no worker waits for it), then goes on.
  void AfterHandler() {
    if (out_.empty()) return FinishRequest();
    Lowest().expires_after(TransferDeadline(opts_.send_timeout, out_.size(), opts_.min_rate));
    asio::async_write(stream_, asio::buffer(out_),
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        std::string().swap(self->out_);
                        if (ec) self->client_gone_ = true;
                        self->FinishRequest();
                      });
  }

  void FinishRequest() {
    in_handler_ = false;
    if (stopping_) return Close();
    bool complete_response = head_sent_ && !client_gone_ && response_written_ == response_length_;
    const bool body_unread = !parser_->is_done();
    if (!complete_response || response_close_ || !keep_alive_) {
      return body_unread && complete_response ? LingerClose() : Close();
    }
    if (!body_unread) return ReadHeader();
    // The handler answered without consuming the body (an early error). Swallow a bounded amount
    // so the connection can be reused. A client that was never told to continue may still send its
    // body (botocore does after 1 s): close, but linger so it reads our reply instead of a reset.
    if (expect_continue_ && !sent_continue_) return LingerClose();
    Drain();
  }

  // Half-closes and discards what the client still sends (bounded in time and bytes), so closing
  // with unread data does not reset the connection before the client has read the response.
  void LingerClose() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    drain_buf_.resize(64 * 1024);
    linger_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    LingerRead();
  }

  void LingerRead() {
    if (stopping_ || drained_ > opts_.drain_limit ||
        std::chrono::steady_clock::now() >= linger_deadline_) {
      return Close();
    }
    Lowest().expires_at(linger_deadline_);
    Lowest().async_read_some(asio::buffer(drain_buf_),
                             [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                               if (ec) return self->Close();
                               self->drained_ += n;
                               self->LingerRead();
                             });
  }

  void Drain() {
    if (parser_->is_done()) return ReadHeader();
    if (drained_ > opts_.drain_limit) return Close();
    drain_buf_.resize(64 * 1024);
    auto& body = parser_->get().body();
    body.data = drain_buf_.data();
    body.size = drain_buf_.size();
    Lowest().expires_after(std::chrono::seconds(5));
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec == http::error::need_buffer) ec = {};
                       if (ec) return self->Close();
                       self->drained_ += self->drain_buf_.size() - self->parser_->get().body().size;
                       self->Drain();
                     });
  }

  void SendFrontEndErrorAndClose(ErrorCode code) {
    auto head = std::make_shared<HttpResponseHead>();
    auto body = std::make_shared<std::string>();
    handler_.RenderFrontEndError(code, *head, *body);
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<unsigned>(head->status));
    for (const auto& [name, value] : head->headers) res->insert(name, value);
    res->body() = *body;
    res->prepare_payload();
    res->keep_alive(false);
    Lowest().expires_after(std::chrono::seconds(10));
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res](beast::error_code, size_t) { self->Close(); });
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().socket().close(ec);
  }

  auto& Lowest() { return beast::get_lowest_layer(stream_); }

  std::string RemoteIp() {
    beast::error_code ec;
    auto ep = Lowest().socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string();
  }

  Stream stream_;
  asio::steady_timer op_timer_{stream_.get_executor()};  // Blocking(..., answer_on_timeout)
  bool op_timed_out_ = false;                            // strand-only
  Shared& shared_;
  const HttpServerOptions& opts_;
  RequestHandler& handler_;
  WorkerSlots& workers_;
  const std::atomic<bool>& stopping_;
  // A handler (or the worker finishing it) owns the session; read by Shutdown on the strand.
  std::atomic<bool> in_handler_{false};
  std::atomic<bool> waiting_header_{false};
  std::atomic<std::chrono::steady_clock::rep> header_wait_started_{0};
  std::string client_;  // counted in shared_.per_client
  std::mutex io_mu_;  // Shutdown's Close() against FinishInPlace's socket use
  bool gated_ = false;       // the request counts against its client's share of workers
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  HttpRequest request_;
  bool endpoints_known_ = false;  // remote_ip_, remote_port_, local_ip_ (strand-only)
  std::string remote_ip_, local_ip_;
  uint16_t remote_port_ = 0;
  std::vector<char> drain_buf_;
  std::string out_;  // a buffered response: head (+ interim 100 Continue) and body
  size_t drained_ = 0;
  std::chrono::steady_clock::time_point linger_deadline_;
  bool keep_alive_ = true;
  bool is_head_request_ = false;
  bool expect_continue_ = false;
  bool sent_continue_ = false;
  bool head_sent_ = false;
  bool client_gone_ = false;
  bool response_close_ = false;
  uint64_t response_length_ = 0;
  uint64_t response_written_ = 0;
  uint64_t body_bytes_read_ = 0;
};

class BeastHttpServer final : public HttpServer {
 public:
  BeastHttpServer(const HttpServerOptions& opts, RequestHandler& handler)
      : opts_(opts),
        handler_(handler),
        io_threads_(opts.io_threads > 0 ? opts.io_threads
                                        : std::max(1u, std::thread::hardware_concurrency())),
        gate_(opts.requests_per_client > 0 ? size_t(opts.requests_per_client)
                                           : size_t(std::max(1, opts.worker_threads / 2))),
        max_connections_(opts.max_connections > 0 ? opts.max_connections : DefaultMaxConnections()),
        per_client_connections_(std::max<size_t>(kMinConnectionsPerClient,
                                                 max_connections_ / kConnectionShares)),
        shared_{opts_, handler_, workers_, stopped_, gate_, {}, {}, {}, {}},
        ioc_(io_threads_),
        acceptor_(asio::make_strand(ioc_)),
        pool_(opts.worker_threads + ParkLimit(opts)),
        workers_(pool_, opts.worker_threads, ParkLimit(opts)),
        accept_timer_(acceptor_.get_executor()) {
    // Runs wherever the last reference to a session drops; the accept strand does the rest.
    shared_.connection_closed = [this] {
      asio::post(acceptor_.get_executor(), [this] { OnConnectionClosed(); });
    };
  }

  ~BeastHttpServer() override {
    Stop();
    workers_.Stop();
    pool_.Shutdown();
    shared_.connection_closed = nullptr;  // sessions still in the io_context die with it
  }

  // HTTPS when the options name a certificate and key (PEM); TLS 1.2 or newer.
  Status LoadTls() {
    if (opts_.tls_cert_file.empty() && opts_.tls_key_file.empty()) return {};
    tls_.emplace(ssl::context::tls_server);
    beast::error_code ec;
    tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                          ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                          ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                      ec);
    if (!ec) tls_->use_certificate_chain_file(opts_.tls_cert_file, ec);
    if (ec)
      return MakeError(ErrorCode::kInvalidArgument,
                       "cannot load TLS certificate " + opts_.tls_cert_file + ": " + ec.message());
    tls_->use_private_key_file(opts_.tls_key_file, ssl::context::pem, ec);
    if (!ec && SSL_CTX_check_private_key(tls_->native_handle()) != 1)
      ec = beast::error_code(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
    if (ec)
      return MakeError(ErrorCode::kInvalidArgument,
                       "cannot use TLS private key " + opts_.tls_key_file + ": " + ec.message());
    return {};
  }

  Status Listen() {
    beast::error_code ec;
    auto addr = asio::ip::make_address(opts_.host.empty() ? "0.0.0.0" : opts_.host, ec);
    if (ec) {
      // A host name: resolve it once.
      tcp::resolver resolver(ioc_);
      auto results = resolver.resolve(opts_.host, std::to_string(opts_.port), ec);
      if (ec || results.empty())
        return MakeError(ErrorCode::kInvalidArgument,
                         "cannot resolve listen address '" + opts_.host + "': " + ec.message());
      addr = results.begin()->endpoint().address();
    }
    tcp::endpoint ep(addr, opts_.port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      std::string where = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
      return MakeError(
          ErrorCode::kInvalidArgument,
          "cannot listen on " + where + ":" + std::to_string(opts_.port) + ": " + ec.message());
    }
    return {};
  }

  uint16_t port() const override { return acceptor_.local_endpoint().port(); }

  void Run() override {
    // Keeps run() going while handlers may still post socket operations; released at shutdown
    // once every session is gone.
    work_guard_.emplace(ioc_.get_executor());
    Accept();
    std::vector<std::thread> threads;
    for (int i = 1; i < io_threads_; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
  }

  // Graceful: stop accepting, close idle connections, give requests in flight kShutdownGrace to
  // finish, then close their connections so blocked handlers fail fast; run() returns once every
  // session is gone.
  void Stop() override {
    if (stopped_.exchange(true)) return;
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
      accept_timer_.cancel();
      limit_timer_.cancel();
      trim_timer_.cancel();
      ForEachSession([](Connection& s) { s.Shutdown(false); });
      shutdown_deadline_ = std::chrono::steady_clock::now() + kShutdownGrace;
      PollShutdown();
    });
  }

 private:
  void PollShutdown() {
    if (LiveSessions() == 0) {
      work_guard_.reset();
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= shutdown_deadline_ && !forced_) {
      forced_ = true;
      spdlog::warn("closing {} connection(s) still busy after {} s", LiveSessions(),
                   kShutdownGrace.count());
      ForEachSession([](Connection& s) { s.Shutdown(true); });
    } else if (now >= shutdown_deadline_ + std::chrono::seconds(5)) {
      spdlog::error("{} request(s) did not finish; stopping anyway", LiveSessions());
      work_guard_.reset();
      ioc_.stop();
      return;
    }
    shutdown_timer_.expires_after(std::chrono::milliseconds(100));
    shutdown_timer_.async_wait([this](beast::error_code) { PollShutdown(); });
  }

  size_t LiveSessions() {
    std::lock_guard lock(sessions_mu_);
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    return sessions_.size();
  }

  template <class F>
  void ForEachSession(F f) {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard lock(sessions_mu_);
      for (auto& w : sessions_)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) f(*s);
  }

  // Handlers that may wait on their client without holding a worker slot (WorkerSlots).
  static size_t ParkLimit(const HttpServerOptions& o) {
    return kWaitingHandlersPerWorker * size_t(std::max(1, o.worker_threads));
  }

  // 0 = auto: most of the open-file limit, keeping room for drives, peers and logs.
  static size_t DefaultMaxConnections() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 65536;
    const size_t fds = rl.rlim_cur;
    return std::max<size_t>(16, fds - std::min<size_t>(fds / 4, 1024));
  }

  // Accept strand from here on.
  void Accept() {
    if (stopped_) return;
    if (shared_.live >= max_connections_) DropWaitingForHeader();
    if (shared_.live >= max_connections_) {
      // New connections wait in the listen backlog until one closes (OnConnectionClosed), or
      // until connections waiting for a header have waited long enough to give way.
      accept_state_ = AcceptState::kAtLimit;
      if (!limit_timer_armed_) {
        limit_timer_armed_ = true;
        limit_timer_.expires_after(kHeaderGrace / 4);
        limit_timer_.async_wait([this](beast::error_code e) {
          limit_timer_armed_ = false;
          if (!e && accept_state_ == AcceptState::kAtLimit) Accept();
        });
      }
      if (std::chrono::steady_clock::now() >= next_limit_report_) {
        next_limit_report_ = std::chrono::steady_clock::now() + kAcceptReportEvery;
        spdlog::warn(
            "{} connections open, the limit (RDMASTOR_API_CONNECTIONS_MAX): new connections wait",
            max_connections_);
      }
      return;
    }
    accept_state_ = AcceptState::kAccepting;
    acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket s) {
      accept_state_ = AcceptState::kIdle;
      if (ec == asio::error::operation_aborted || stopped_) return;
      if (ec) return AcceptFailed(ec);
      accept_backoff_ = {};
      // One address gets its share of the connections: past it, its new ones close at once.
      std::string client;
      if (auto ep = s.remote_endpoint(ec); !ec) {
        auto addr = ep.address();
        if (addr.is_v6() && addr.to_v6().is_v4_mapped())
          addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
        client = addr.to_string();
        std::lock_guard lock(shared_.per_client_mu);
        auto& open = shared_.per_client[client];
        if (open >= per_client_connections_) {
          if (open == per_client_connections_) ReportClientAtLimit(client);
          beast::error_code ignored;
          s.close(ignored);
          return Accept();
        }
        ++open;
      }
      s.set_option(tcp::no_delay(true), ec);
      std::shared_ptr<Connection> session;
      if (tls_) {
        auto ts = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            shared_, std::move(s), *tls_);
        if (!client.empty()) ts->CountAgainst(client);
        session = std::move(ts);
      } else {
        auto ps = std::make_shared<Session<beast::tcp_stream>>(shared_, std::move(s));
        if (!client.empty()) ps->CountAgainst(client);
        session = std::move(ps);
      }
      peak_connections_ = std::max<size_t>(peak_connections_, shared_.live);
      {
        std::lock_guard lock(sessions_mu_);
        if (sessions_.size() > 64 && sessions_.size() % 64 == 0)
          std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
        sessions_.push_back(session);
      }
      session->Start();
      Accept();
    });
  }

  // At the connection limit: connections waiting for a request header (idle keep-alive, or a
  // header sent halfway) give way to new ones, oldest first, a few at a time; connections with a
  // request in progress are kept.
  void DropWaitingForHeader() {
    constexpr size_t kDropAtOnce = 8;
    std::vector<std::shared_ptr<Connection>> drop;
    // A connection just accepted is about to send its header: not before it had time to.
    const auto since = std::chrono::steady_clock::now() - kHeaderGrace;
    {
      std::lock_guard lock(sessions_mu_);
      for (auto& w : sessions_) {
        auto s = w.lock();
        if (s && s->WaitingForHeaderSince(since)) drop.push_back(std::move(s));
        if (drop.size() == kDropAtOnce) break;
      }
    }
    for (auto& s : drop) s->Shutdown(false);
  }

  void ReportClientAtLimit(const std::string& client) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_client_limit_report_) return;
    next_client_limit_report_ = now + kAcceptReportEvery;
    spdlog::warn("{} holds {} connections, its share of RDMASTOR_API_CONNECTIONS_MAX: its new "
                 "connections are closed", client, per_client_connections_);
  }

  // Out of descriptors (EMFILE/ENFILE) or memory: the pending connection stays in the backlog, so
  // retrying at once would spin. Back off, and say so at most once a minute.
  void AcceptFailed(beast::error_code ec) {
    const bool exhausted = ec == asio::error::no_descriptors || ec.value() == ENFILE ||
                           ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
    if (!exhausted) {
      spdlog::debug("accept failed: {}", ec.message());  // e.g. a connection reset in the backlog
      return Accept();
    }
    ++accept_failures_;
    auto now = std::chrono::steady_clock::now();
    if (now >= next_accept_report_) {
      next_accept_report_ = now + kAcceptReportEvery;
      spdlog::warn(
          "accept failed: {} ({} time(s) since the last report, {} connections open); retrying "
          "with back-off. Raise the open-file limit (LimitNOFILE, ulimit -n) or lower "
          "RDMASTOR_API_CONNECTIONS_MAX",
          ec.message(), accept_failures_, shared_.live.load());
      accept_failures_ = 0;
    }
    accept_backoff_ = std::clamp(accept_backoff_ * 2, std::chrono::milliseconds(kAcceptBackoffMin),
                                 std::chrono::milliseconds(kAcceptBackoffMax));
    accept_state_ = AcceptState::kBackingOff;
    accept_timer_.expires_after(accept_backoff_);
    accept_timer_.async_wait([this](beast::error_code e) {
      if (e || accept_state_ != AcceptState::kBackingOff) return;
      Accept();
    });
  }

  void OnConnectionClosed() {
    const size_t live = shared_.live;
    if (accept_state_ == AcceptState::kAtLimit && live < max_connections_) Accept();
    {
      // A session's memory (make_shared: one block with its control block) is freed only when
      // its weak_ptr here goes too; prune once half the entries are dead (amortised O(1)).
      std::lock_guard lock(sessions_mu_);
      if (sessions_.size() > 2 * live + 64)
        std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    }
    // A burst of connections closed: hand the freed heap back (glibc keeps it otherwise), once,
    // a moment later, when the rest of the burst has closed too.
    if (peak_connections_ >= kTrimAfterPeak && live <= peak_connections_ / 2 && !trim_pending_) {
      trim_pending_ = true;
      const auto now = std::chrono::steady_clock::now();
      trim_timer_.expires_at(std::max(now + kTrimDelay, last_trim_ + kTrimMinInterval));
      trim_timer_.async_wait([this](beast::error_code ec) {
        trim_pending_ = false;
        if (ec || stopped_) return;
        peak_connections_ = shared_.live;
        last_trim_ = std::chrono::steady_clock::now();
        malloc_trim(0);
      });
    }
  }

  HttpServerOptions opts_;
  RequestHandler& handler_;
  int io_threads_;
  ClientGate gate_;
  const size_t max_connections_;
  const size_t per_client_connections_;
  Shared shared_;  // outlives the io_context, whose pending handlers may hold the last sessions
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  ThreadPool pool_;
  WorkerSlots workers_;
  std::atomic<bool> stopped_{false};
  std::optional<ssl::context> tls_;  // set: HTTPS only
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_guard_;
  asio::steady_timer shutdown_timer_{ioc_};
  std::chrono::steady_clock::time_point shutdown_deadline_;
  bool forced_ = false;
  std::mutex sessions_mu_;
  std::vector<std::weak_ptr<Connection>> sessions_;
  // Accept strand only.
  enum class AcceptState { kIdle, kAccepting, kAtLimit, kBackingOff };
  AcceptState accept_state_ = AcceptState::kIdle;
  asio::steady_timer accept_timer_;
  asio::steady_timer limit_timer_{acceptor_.get_executor()};  // re-checks while at the limit
  bool limit_timer_armed_ = false;
  std::chrono::milliseconds accept_backoff_{0};
  size_t accept_failures_ = 0;
  std::chrono::steady_clock::time_point next_accept_report_, next_limit_report_,
      next_client_limit_report_;
  size_t peak_connections_ = 0;
  bool trim_pending_ = false;
  std::chrono::steady_clock::time_point last_trim_{};
  asio::steady_timer trim_timer_{acceptor_.get_executor()};
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& opts,
                                                       RequestHandler& handler) {
  auto server = std::make_unique<BeastHttpServer>(opts, handler);
  auto st = server->LoadTls();
  if (st.ok()) st = server->Listen();
  if (!st.ok()) return st.error();
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace rdmastor::s3
