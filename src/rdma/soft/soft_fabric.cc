// The soft fabric's initiator side (the server): endpoints that post one-sided requests to a
// SoftTarget over TCP and turn its replies into completions.
#include "rdma/soft/soft_fabric.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "rdma/soft/net.h"
#include "rdma/soft/soft_wire.h"

namespace rdmastor::rdma::soft {

bool Cidr::Contains(uint32_t ip) const {
  uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
  return (ip & mask) == (network & mask);
}

std::optional<uint32_t> ParseIpv4(std::string_view text) {
  if (text.rfind("::ffff:", 0) == 0) text.remove_prefix(7);
  if (text.size() > 15) return std::nullopt;
  in_addr addr{};
  if (inet_pton(AF_INET, std::string(text).c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

Result<std::vector<Cidr>> ParseCidrList(std::string_view text) {
  std::vector<Cidr> out;
  std::string s(text);
  for (auto& c : s)
    if (c == ',') c = ' ';
  std::istringstream in(s);
  std::string item;
  while (in >> item) {
    Cidr cidr;
    auto slash = item.find('/');
    auto ip = ParseIpv4(std::string_view(item).substr(0, slash));
    bool ok = ip.has_value();
    if (ok && slash != std::string::npos) {
      std::string len = item.substr(slash + 1);
      ok = !len.empty() && len.size() <= 2 &&
           len.find_first_not_of("0123456789") == std::string::npos && std::stoi(len) <= 32;
      if (ok) cidr.prefix = std::stoi(len);
    }
    if (!ok)
      return MakeError(ErrorCode::kInvalidArgument,
                       "'" + item + "' is not an IPv4 address or CIDR (a.b.c.d or a.b.c.d/len)");
    cidr.network = *ip;
    out.push_back(cidr);
  }
  return out;
}

// Local regions of this fabric, for the lkey and bounds check every post makes.
struct SoftFabric::Registry {
  std::mutex mu;
  std::map<uint32_t, std::pair<char*, size_t>> regions;
  uint32_t next_key = 1;

  bool Check(uint32_t lkey, const char* p, size_t len) {
    std::lock_guard lock(mu);
    auto it = regions.find(lkey);
    if (it == regions.end()) return false;
    auto [base, size] = it->second;
    return p >= base && len <= size && static_cast<size_t>(p - base) <= size - len;
  }
};

// Idle connections, each already past Hello with one target endpoint. Keyed by everything the
// connection was opened for (host, port, endpoint id), so a reused connection reaches exactly
// what a new one would; Connect applies the origin policy before it looks here.
struct SoftFabric::Pool {
  struct Key {
    uint32_t ip = 0;
    uint16_t port = 0;
    uint32_t qpn = 0;
    bool operator==(const Key&) const = default;
  };
  struct Idle {
    Key key;
    int fd;
    std::chrono::steady_clock::time_point since;
  };

  std::mutex mu;
  std::deque<Idle> idle;  // oldest first
  size_t max_idle = 0;
  std::chrono::milliseconds idle_timeout{0};
  std::atomic<uint64_t> opened{0}, reused{0};

  ~Pool() {
    for (const auto& i : idle) close(i.fd);
  }

  // An idle connection to `key` that is still open, or -1.
  int Take(const Key& key) {
    std::vector<int> stale;
    int fd = -1;
    {
      std::lock_guard lock(mu);
      auto now = std::chrono::steady_clock::now();
      while (!idle.empty() && now - idle.front().since > idle_timeout) {
        stale.push_back(idle.front().fd);
        idle.pop_front();
      }
      for (auto it = idle.rbegin(); it != idle.rend(); ++it) {
        if (!(it->key == key)) continue;
        int cand = it->fd;
        idle.erase(std::next(it).base());
        // Nothing may be pending on an idle connection: readable means the target closed it (or
        // broke the protocol). Either way it is not reused.
        pollfd pfd{cand, POLLIN, 0};
        if (poll(&pfd, 1, 0) != 0) {
          stale.push_back(cand);
          break;  // at most one probe per call; the caller opens a fresh connection
        }
        fd = cand;
        break;
      }
    }
    for (int s : stale) close(s);
    if (fd >= 0) reused.fetch_add(1, std::memory_order_relaxed);
    return fd;
  }

  void Give(const Key& key, int fd) {
    int evicted = -1;
    {
      std::lock_guard lock(mu);
      if (max_idle == 0) {
        evicted = fd;
      } else {
        if (idle.size() >= max_idle) {
          evicted = idle.front().fd;
          idle.pop_front();
        }
        idle.push_back({key, fd, std::chrono::steady_clock::now()});
      }
    }
    if (evicted >= 0) close(evicted);
  }
};

namespace {

class SoftLocalMr final : public MemoryRegion {
 public:
  SoftLocalMr(std::shared_ptr<SoftFabric::Registry> reg, char* addr, size_t len, uint32_t key)
      : MemoryRegion(addr, len, key, key), reg_(std::move(reg)) {}
  ~SoftLocalMr() override {
    std::lock_guard lock(reg_->mu);
    reg_->regions.erase(lkey());
  }

 private:
  std::shared_ptr<SoftFabric::Registry> reg_;
};

class SoftEndpoint final : public Endpoint {
 public:
  SoftEndpoint(int fd, std::shared_ptr<SoftFabric::Registry> reg,
               std::shared_ptr<SoftFabric::Pool> pool, SoftFabric::Pool::Key key, net::Pace pace)
      : fd_(fd), reg_(std::move(reg)), pool_(std::move(pool)), key_(key), pace_(pace) {}
  ~SoftEndpoint() override {
    if (fd_ < 0) return;
    // Clean: every posted request answered, never in error. Then the connection is in the same
    // state as right after Hello and can serve the next request to this target.
    if (pool_ && !error_ && outstanding_.empty() && ready_.empty())
      pool_->Give(key_, fd_);
    else
      close(fd_);
  }

  Status PostSend(const WorkRequest& wr) override {
    if (error_) {
      ready_.push_back({wr.wr_id, WcStatus::kFlushed, wr.opcode, 0});
      return {};
    }
    Pending p{wr, !reg_->Check(wr.lkey, wr.local_addr, wr.length)};
    if (!p.local_error) {
      wire::Request req;
      req.op = wr.opcode == Opcode::kWrite ? wire::kOpWrite : wire::kOpRead;
      req.rkey = wr.rkey;
      req.wr_id = wr.wr_id;
      req.remote_addr = wr.remote_addr;
      req.length = wr.length;
      iovec iov[2] = {{&req, sizeof(req)}, {wr.local_addr, wr.length}};
      // A WRITE's payload leaves straight from the registered region (no user-space copy).
      auto st = net::SendAll(fd_, iov, wr.opcode == Opcode::kWrite ? 2 : 1, &pace_);
      if (!st.ok()) {
        outstanding_.push_back(p);
        EnterError(WcStatus::kRetryExceeded, st.error().message);
        return {};
      }
    }
    outstanding_.push_back(p);
    return {};
  }

  bool Alive() override {
    if (error_ || fd_ < 0) return false;
    if (!outstanding_.empty() || !ready_.empty()) return true;
    // Nothing is owed on an idle connection: readable means the target closed it (EOF), reset
    // it, or broke the protocol.
    pollfd pfd{fd_, POLLIN, 0};
    return poll(&pfd, 1, 0) == 0;
  }

  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) override {
    int n = 0;
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (n < max) {
      if (!ready_.empty()) {
        out[n++] = ready_.front();
        ready_.pop_front();
        continue;
      }
      if (outstanding_.empty()) break;
      Pending& front = outstanding_.front();
      if (front.local_error) {
        EnterError(WcStatus::kLocalProtectionError);
        continue;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto timeout = std::chrono::milliseconds(n > 0 ? 0 : std::max<int64_t>(0, left.count()));
      auto readable = net::WaitReadable(fd_, timeout, &pace_);
      if (!readable.ok()) {
        EnterError(WcStatus::kRetryExceeded, readable.error().message);
        continue;
      }
      if (!*readable) break;
      wire::Reply reply;
      auto st = net::RecvAll(fd_, &reply, sizeof(reply), &pace_);
      if (!st.ok() || reply.wr_id != front.wr.wr_id ||
          reply.status > static_cast<uint32_t>(WcStatus::kGeneralError)) {
        EnterError(st.ok() ? WcStatus::kGeneralError : WcStatus::kRetryExceeded,
                   st.ok() ? "malformed reply" : st.error().message);
        continue;
      }
      auto status = static_cast<WcStatus>(reply.status);
      if (status != WcStatus::kSuccess) {
        EnterError(status);
        continue;
      }
      if (front.wr.opcode == Opcode::kRead) {
        // The payload lands straight in the registered region.
        if (reply.length != front.wr.length) {
          EnterError(WcStatus::kGeneralError, "reply length differs from the request's");
          continue;
        }
        if (auto rd = net::RecvAll(fd_, front.wr.local_addr, front.wr.length, &pace_); !rd.ok()) {
          EnterError(WcStatus::kRetryExceeded, rd.error().message);
          continue;
        }
      }
      if (front.wr.signaled)
        out[n++] = {front.wr.wr_id, WcStatus::kSuccess, front.wr.opcode, front.wr.length};
      outstanding_.pop_front();
    }
    return n;
  }

  std::string error_detail() const override { return error_detail_; }

 private:
  struct Pending {
    WorkRequest wr;
    bool local_error;
  };

  // The endpoint goes to the error state as a QP does: the front request fails with `status`,
  // everything behind it is flushed, and the connection is dropped.
  void EnterError(WcStatus status, std::string detail = {}) {
    if (!error_) error_detail_ = std::move(detail);
    error_ = true;
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
    bool first = true;
    for (const auto& p : outstanding_) {
      ready_.push_back({p.wr.wr_id, first ? status : WcStatus::kFlushed, p.wr.opcode, 0});
      first = false;
    }
    outstanding_.clear();
  }

  int fd_;
  std::shared_ptr<SoftFabric::Registry> reg_;
  std::shared_ptr<SoftFabric::Pool> pool_;
  SoftFabric::Pool::Key key_;
  net::Pace pace_;  // progress of this endpoint's transfer, from Connect on
  bool error_ = false;
  std::string error_detail_;
  std::deque<Pending> outstanding_;  // posted, reply not yet read (replies come in order)
  std::deque<Completion> ready_;
};

// Accepts the RC connections clients open (S3 over RDMA on RC). One thread polls the listening
// socket and the connections still owing their Hello; a Hello has kHelloTimeout to arrive and at
// most kMaxPending wait at once, so connections that send nothing cannot stall the listener.
class SoftRcListener final : public RcListener {
 public:
  static constexpr size_t kMaxPending = 64;
  static constexpr auto kHelloTimeout = std::chrono::seconds(3);

  SoftRcListener(int listen_fd, uint16_t port, RcAdmission admission,
                 std::shared_ptr<SoftFabric::Registry> registry, SoftFabricOptions options)
      : listen_fd_(listen_fd),
        port_(port),
        admission_(std::move(admission)),
        registry_(std::move(registry)),
        options_(std::move(options)) {
    if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Loop(); });
  }
  ~SoftRcListener() override {
    char c = 1;
    if (wake_[1] >= 0) (void)!write(wake_[1], &c, 1);
    thread_.join();
    for (auto& p : pending_) close(p.fd);
    for (int fd : {listen_fd_, wake_[0], wake_[1]})
      if (fd >= 0) close(fd);
  }
  uint16_t port() const override { return port_; }

 private:
  struct Pending {
    int fd;
    uint32_t ip;
    std::chrono::steady_clock::time_point deadline;
    wire::Hello hello;
    size_t got = 0;
    bool refused = false;  // over the limits at accept: answered kRcRefused
  };

  void Loop() {
    for (;;) {
      std::vector<pollfd> pfds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (const auto& p : pending_) pfds.push_back({p.fd, POLLIN, 0});
      int rc = poll(pfds.data(), pfds.size(), pending_.empty() ? -1 : 200);
      if (rc < 0 && errno != EINTR) return;
      if (pfds[1].revents) return;
      auto now = std::chrono::steady_clock::now();
      // Handshakes first (their indexes match pfds from 2 on), then new connections.
      std::vector<Pending> still;
      for (size_t i = 0; i < pending_.size(); ++i) {
        Pending& p = pending_[i];
        if (rc > 0 && pfds[i + 2].revents) {
          ssize_t n = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(p.hello) - p.got,
                           MSG_DONTWAIT);
          if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
            close(p.fd);
            continue;
          }
          if (n > 0) p.got += static_cast<size_t>(n);
          if (p.got == sizeof(p.hello)) {
            Welcome(p);
            continue;
          }
        }
        if (now >= p.deadline) {
          close(p.fd);
          continue;
        }
        still.push_back(p);
      }
      pending_.swap(still);
      if (rc > 0 && pfds[0].revents) Accept();
    }
  }

  void Accept() {
    sockaddr_in sa{};
    socklen_t len = sizeof(sa);
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC);
    if (fd < 0) return;
    uint32_t ip = ntohl(sa.sin_addr.s_addr);
    if (pending_.size() >= kMaxPending) {
      close(fd);
      return;
    }
    // The limits first: a source at its cap gets its refusal after its Hello (answering before
    // it would reset the connection under the unread Hello) and no endpoint is made for it.
    bool refused = !admission_.can_admit(ip).ok();
    pending_.push_back({fd, ip, std::chrono::steady_clock::now() + kHelloTimeout, {}, 0, refused});
  }

  void Welcome(Pending& p) {
    wire::RcWelcome w;
    if (p.hello.magic != wire::kRcMagic || p.hello.qpn == 0 || p.hello.qpn > 0xffffff) {
      w.status = wire::kRcMalformed;
    } else if (p.refused) {
      w.status = wire::kRcRefused;
    } else {
      net::SetTimeouts(p.fd, options_.io_timeout);
      net::SetKeepAlive(p.fd);
      net::SetTos(p.fd, options_.tos);
      RcPeer peer{p.ip, p.hello.qpn, Ipv4ToGid(p.ip)};
      net::Pace pace(std::min(options_.progress_interval, options_.io_timeout), options_.min_rate);
      // The endpoint owns the socket from here; admit closes it on refusal. The socket is
      // duplicated so the welcome can still be sent on it whatever admit decided.
      int ep_fd = dup(p.fd);
      if (ep_fd < 0) {
        close(p.fd);
        return;
      }
      auto admitted =
          admission_.admit(peer,
                           std::unique_ptr<Endpoint>(new SoftEndpoint(
                               ep_fd, registry_, nullptr, SoftFabric::Pool::Key{}, pace)),
                           0);
      if (admitted.ok()) {
        w.connection = *admitted;
      } else {
        w.status = wire::kRcRefused;
        spdlog::info("soft RC: refused a connection from {}: {}", net::Ipv4String(p.ip),
                     admitted.error().message);
      }
    }
    (void)net::SendAll(p.fd, &w, sizeof(w));
    close(p.fd);  // an admitted connection lives on in its endpoint's descriptor
  }

  int listen_fd_;
  uint16_t port_;
  RcAdmission admission_;
  std::shared_ptr<SoftFabric::Registry> registry_;
  SoftFabricOptions options_;
  int wake_[2] = {-1, -1};
  std::vector<Pending> pending_;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<RcListener>> SoftFabric::ListenRc(const std::string& bind_ip, uint16_t port,
                                                         RcAdmission admission) {
  auto ip = ParseIpv4(bind_ip);
  if (!ip)
    return MakeError(ErrorCode::kInvalidArgument,
                     "soft RC: '" + bind_ip + "' is not an IPv4 address to listen on");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(*ip);
  sa.sin_port = htons(port);
  socklen_t len = sizeof(sa);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    std::string err = std::strerror(errno);
    if (fd >= 0) close(fd);
    return MakeError(ErrorCode::kRDMANotSupported, "soft RC: cannot listen on " + bind_ip + ":" +
                                                       std::to_string(port) + ": " + err);
  }
  return std::unique_ptr<RcListener>(
      new SoftRcListener(fd, ntohs(sa.sin_port), std::move(admission), registry_, options_));
}

SoftFabric::SoftFabric(SoftFabricOptions options)
    : options_(std::move(options)),
      registry_(std::make_shared<Registry>()),
      pool_(std::make_shared<Pool>()) {
  pool_->max_idle = options_.max_idle_connections;
  pool_->idle_timeout = options_.idle_timeout;
}
SoftFabric::~SoftFabric() = default;

uint64_t SoftFabric::connections_opened() const { return pool_->opened.load(); }
uint64_t SoftFabric::connections_reused() const { return pool_->reused.load(); }

Result<std::unique_ptr<MemoryRegion>> SoftFabric::RegisterMemory(void* addr, size_t length,
                                                                 unsigned access) {
  std::lock_guard lock(registry_->mu);
  uint32_t key = registry_->next_key++;
  registry_->regions[key] = {static_cast<char*>(addr), length};
  return std::unique_ptr<MemoryRegion>(
      new SoftLocalMr(registry_, static_cast<char*>(addr), length, key));
}

Result<std::unique_ptr<Endpoint>> SoftFabric::Connect(const RemoteAddress& remote,
                                                      const RequestOrigin& origin) {
  auto ip = remote.has_gid ? GidToIpv4(remote.gid) : std::nullopt;
  if (!ip)
    return MakeError(ErrorCode::kRDMANotSupported,
                     "soft fabric: the token has no IPv4-mapped GID (::ffff:a.b.c.d) to reach");
  // A token must not turn the server into a connection relay: only the requester's own address
  // (or networks the operator allowed) may be targeted.
  auto from = ParseIpv4(origin.remote_ip);
  bool allowed = from && *from == *ip;
  for (const auto& c : options_.allow) allowed = allowed || c.Contains(*ip);
  if (!allowed)
    return MakeError(ErrorCode::kAccessDenied,
                     "soft fabric: the token names host " + net::Ipv4String(*ip) +
                         " but the request came from " + origin.remote_ip +
                         "; only the requester's address is reached unless "
                         "MINIO_RDMA_SOFT_ALLOW lists it");
  Pool::Key key{*ip, remote.lid, remote.qpn};
  net::Pace pace(std::min(options_.progress_interval, options_.io_timeout), options_.min_rate);
  if (int idle = pool_->Take(key); idle >= 0)
    return std::unique_ptr<Endpoint>(new SoftEndpoint(idle, registry_, pool_, key, pace));
  // One answer for every way of failing (refused, timed out, answered but not a soft-fabric
  // target): telling them apart would make a token a port scanner of the requester's network. The
  // detail goes to the server log only.
  std::string where = net::Ipv4String(*ip) + ":" + std::to_string(remote.lid);
  auto unreachable = [&](const std::string& why) {
    spdlog::debug("soft fabric: {} endpoint {}: {}", where, remote.qpn, why);
    return MakeError(ErrorCode::kRDMANotSupported,
                     "soft fabric: cannot reach the target the token names");
  };
  auto fd = net::ConnectTcp(*ip, remote.lid, options_.connect_timeout);
  if (!fd.ok()) return unreachable(fd.error().message);
  net::SetTimeouts(*fd, options_.io_timeout);
  net::SetTos(*fd, options_.tos);
  wire::Hello hello;
  hello.qpn = remote.qpn;
  wire::HelloAuth auth;
  if (options_.prove) {
    sockaddr_in self{};
    socklen_t len = sizeof(self);
    getsockname(*fd, reinterpret_cast<sockaddr*>(&self), &len);
    auto proof = options_.prove({*ip, remote.lid, remote.qpn, ntohl(self.sin_addr.s_addr)});
    auth.qpn = remote.qpn;
    auth.proof_len = static_cast<uint32_t>(std::min(proof.size(), sizeof(auth.proof)));
    std::memcpy(auth.proof, proof.data(), auth.proof_len);
  }
  wire::HelloReply reply;
  auto st = options_.prove ? net::SendAll(*fd, &auth, sizeof(auth), &pace)
                           : net::SendAll(*fd, &hello, sizeof(hello), &pace);
  if (st.ok()) st = net::RecvAll(*fd, &reply, sizeof(reply), &pace);
  if (!st.ok() || reply.magic != wire::kMagic || reply.status != 0) {
    close(*fd);
    return unreachable(st.ok() ? "endpoint refused" : st.error().message);
  }
  pool_->opened.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<Endpoint>(new SoftEndpoint(*fd, registry_, pool_, key, pace));
}

}  // namespace rdmastor::rdma::soft
