// The soft fabric's target side (the client): a listener whose connections carry one-sided
// requests against the regions registered here. Every request is checked (rkey, permission,
// bounds) before a byte moves; payloads go straight between the socket and the region.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "rdma/soft/net.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/soft/soft_wire.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma::soft {

static_assert(wire::kHelloProofBytes == kMaxConnectProof);

struct SoftTarget::Impl {
  struct Region {
    uint64_t base;  // the address initiators name it by (the iova of a dma-buf region)
    char* local;    // where its bytes are here
    size_t length;
    unsigned access;
    uint32_t domain = 0;  // reachable only from connections of this domain (ConnectVerifier)
  };
  struct Conn {
    // The serving thread closes fd (under conns_mu, setting it to -1) as soon as the connection
    // ends, so a connection whose initiator died does not keep a descriptor until the next accept.
    std::shared_ptr<int> fd;
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  SoftTargetOptions options;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  uint32_t ip = 0;
  uint16_t port = 0;
  uint32_t qpn = 0;
  std::mt19937 rng{std::random_device{}()};

  std::shared_mutex regions_mu;  // shared while a request touches a region; unique to change
  std::unordered_map<uint32_t, Region> regions;

  std::mutex conns_mu;
  std::list<Conn> conns;
  std::thread acceptor;
  std::atomic<uint64_t> served{0};
  std::atomic<uint64_t> accepted{0};

  void AcceptLoop();
  void Serve(int fd);          // a connection the server opened: Hello, then requests
  // Requests until the connection ends; they reach the regions of `domain` only.
  void ServeRequests(int fd, uint32_t domain = 0);
  // Runs `serve(fd)` on its own thread; the connection is closed when it returns.
  void Spawn(int fd, std::function<void(int)> serve, std::shared_ptr<std::atomic<bool>> done);
  // RC connections this target opened, by server (ip << 16 | port): id and whether it ended.
  struct RcConn {
    uint64_t id = 0;
    std::shared_ptr<std::atomic<bool>> done;
    std::shared_ptr<int> fd;
  };
  std::mutex rc_mu;  // one dial at a time; guards rc
  std::map<uint64_t, RcConn> rc;
  // The local bytes for [addr, addr+len) of region `rkey`, or nullptr (kRemoteAccessError).
  char* Check(uint32_t rkey, uint64_t addr, uint32_t len, unsigned need, uint32_t domain);
  void Stop();
};

char* SoftTarget::Impl::Check(uint32_t rkey, uint64_t addr, uint32_t len, unsigned need,
                              uint32_t domain) {
  auto it = regions.find(rkey);
  // Another domain's region answers as an unknown key does (verbs: another PD's MR).
  if (it == regions.end() || it->second.domain != domain || (it->second.access & need) != need)
    return nullptr;
  const Region& r = it->second;
  if (addr < r.base || len > r.length || addr - r.base > r.length - len) return nullptr;
  return r.local + (addr - r.base);
}

void SoftTarget::Impl::Serve(int fd) {
  net::SetTimeouts(fd, options.io_timeout);
  net::SetKeepAlive(fd);
  net::SetTos(fd, options.tos);
  wire::HelloAuth hello;
  if (!net::RecvAll(fd, &hello, sizeof(wire::Hello)).ok()) return;
  if (hello.magic == wire::kAuthMagic) {
    if (!net::RecvAll(fd, &hello.proof_len, sizeof(hello) - sizeof(wire::Hello)).ok()) return;
  } else {
    hello.proof_len = 0;
  }
  wire::HelloReply hr;
  bool ours = (hello.magic == wire::kMagic || hello.magic == wire::kAuthMagic) && hello.qpn == qpn;
  uint32_t domain = 0;
  if (ours && options.verify) {
    // The proof is checked before anything is served: a connection that cannot prove who it
    // is never reaches a region (the verifier logs and counts the refusal).
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len);
    auto d = options.verify({ip, port, qpn, ntohl(peer.sin_addr.s_addr)}, hello.proof,
                            std::min<size_t>(hello.proof_len, sizeof(hello.proof)));
    ours = d.ok();
    if (d.ok()) domain = *d;
  }
  hr.status = ours ? 0 : 1;
  if (!net::SendAll(fd, &hr, sizeof(hr)).ok() || hr.status != 0) return;
  ServeRequests(fd, domain);
}

void SoftTarget::Impl::ServeRequests(int fd, uint32_t domain) {
  // Like an RC responder QP after an access error, the connection is in the error state once a
  // request failed: later requests are read (payloads discarded) but neither executed nor
  // answered; the initiator has flushed them and closes. Closing here instead would reset the
  // connection and could destroy the error reply before the initiator read it.
  bool errored = false;
  for (;;) {
    // Between requests a kept connection may idle far longer than io_timeout; Stop() shuts the
    // socket down, which wakes this poll.
    pollfd pfd{fd, POLLIN, 0};
    int rc = poll(&pfd, 1, static_cast<int>(options.idle_timeout.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return;
    wire::Request req;
    if (!net::RecvAll(fd, &req, sizeof(req)).ok()) return;
    wire::Reply reply;
    reply.wr_id = req.wr_id;
    std::shared_lock lock(regions_mu);
    if (req.op == wire::kOpWrite) {
      char* local = errored ? nullptr : Check(req.rkey, req.remote_addr, req.length, kRemoteWrite, domain);
      auto st = errored ? WcStatus::kFlushed
                        : (local ? WcStatus::kSuccess : WcStatus::kRemoteAccessError);
      reply.status = static_cast<uint32_t>(st);
      Status io = local ? net::RecvAll(fd, local, req.length) : net::Discard(fd, req.length);
      lock.unlock();
      if (!io.ok() || (!errored && !net::SendAll(fd, &reply, sizeof(reply)).ok())) return;
      errored = errored || st != WcStatus::kSuccess;
    } else if (req.op == wire::kOpRead) {
      char* local = errored ? nullptr : Check(req.rkey, req.remote_addr, req.length, kRemoteRead, domain);
      auto st = errored ? WcStatus::kFlushed
                        : (local ? WcStatus::kSuccess : WcStatus::kRemoteAccessError);
      reply.status = static_cast<uint32_t>(st);
      reply.length = local ? req.length : 0;
      iovec iov[2] = {{&reply, sizeof(reply)}, {local, reply.length}};
      if (!errored && !net::SendAll(fd, iov, reply.length ? 2 : 1).ok()) return;
      errored = errored || st != WcStatus::kSuccess;
    } else {
      lock.unlock();
      reply.status = static_cast<uint32_t>(WcStatus::kRemoteInvalidRequest);
      (void)net::SendAll(fd, &reply, sizeof(reply));
      return;
    }
    served.fetch_add(1, std::memory_order_relaxed);
  }
}

void SoftTarget::Impl::AcceptLoop() {
  for (;;) {
    pollfd pfds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
    if (poll(pfds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pfds[1].revents) return;
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    accepted.fetch_add(1, std::memory_order_relaxed);
    Spawn(
        fd, [this](int f) { Serve(f); }, std::make_shared<std::atomic<bool>>(false));
  }
}

void SoftTarget::Impl::Spawn(int fd, std::function<void(int)> serve,
                             std::shared_ptr<std::atomic<bool>> done) {
  std::lock_guard lock(conns_mu);
  // Reap finished connections so threads do not pile up on a long-lived client.
  for (auto it = conns.begin(); it != conns.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = conns.erase(it);
    } else {
      ++it;
    }
  }
  auto shared_fd = std::make_shared<int>(fd);
  conns.push_back({shared_fd, std::thread([this, fd, shared_fd, done, serve = std::move(serve)] {
                     serve(fd);
                     {
                       // Closed here, when the connection ends: the initiator sees the end
                       // now and no descriptor is left in CLOSE_WAIT.
                       std::lock_guard l(conns_mu);
                       close(fd);
                       *shared_fd = -1;
                     }
                     done->store(true);
                   }),
                   done});
}

void SoftTarget::Impl::Stop() {
  if (wake[1] >= 0) {
    char c = 1;
    (void)!write(wake[1], &c, 1);
  }
  if (acceptor.joinable()) acceptor.join();
  std::list<Conn> ending;
  {
    // Shut down (not closed: the serving thread closes its own descriptor) under the lock, so a
    // descriptor number is never touched after its thread closed it.
    std::lock_guard lock(conns_mu);
    for (auto& c : conns)
      if (*c.fd >= 0) shutdown(*c.fd, SHUT_RDWR);
    ending.swap(conns);
  }
  for (auto& c : ending) c.thread.join();
  for (int fd : {listen_fd, wake[0], wake[1]})
    if (fd >= 0) close(fd);
}

namespace {
class SoftTargetMr final : public MemoryRegion {
 public:
  SoftTargetMr(std::shared_ptr<SoftTarget::Impl> impl, RegionSpan span, uint32_t key,
               void* mapping = nullptr, size_t mapping_len = 0)
      : MemoryRegion(reinterpret_cast<char*>(span.addr), span.length, key, key),
        impl_(std::move(impl)),
        mapping_(mapping),
        mapping_len_(mapping_len) {}
  ~SoftTargetMr() override {
    {
      // Waits for any request touching the region to finish: after this no byte moves.
      std::unique_lock lock(impl_->regions_mu);
      impl_->regions.erase(rkey());
    }
    if (mapping_) munmap(mapping_, mapping_len_);
  }

 private:
  std::shared_ptr<SoftTarget::Impl> impl_;
  void* mapping_;  // a dma-buf region's mapping, unmapped after deregistration
  size_t mapping_len_;
};

uint32_t NewKey(SoftTarget::Impl& impl) {
  uint32_t key = 0;
  do {
    key = impl.rng();
  } while (key == 0 || impl.regions.count(key));
  return key;
}
}  // namespace

Result<std::unique_ptr<SoftTarget>> SoftTarget::Start(SoftTargetOptions options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  in_addr addr{};
  if (inet_pton(AF_INET, options.bind_ip.c_str(), &addr) != 1)
    return MakeError(ErrorCode::kInvalidArgument,
                     "soft target: '" + options.bind_ip + "' is not an IPv4 address");
  impl->ip = ntohl(addr.s_addr);
  impl->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  socklen_t len = sizeof(sa);
  if (impl->listen_fd < 0 || bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
      listen(impl->listen_fd, 128) != 0 ||
      getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 ||
      pipe2(impl->wake, O_CLOEXEC) != 0) {
    std::string err = std::strerror(errno);
    impl->Stop();
    return MakeError(ErrorCode::kInternalError,
                     "soft target: cannot listen on " + options.bind_ip + ": " + err);
  }
  impl->port = ntohs(sa.sin_port);
  impl->qpn = std::uniform_int_distribution<uint32_t>(1, 0xffffff)(impl->rng);
  impl->acceptor = std::thread([raw = impl.get()] { raw->AcceptLoop(); });
  return std::unique_ptr<SoftTarget>(new SoftTarget(std::move(impl)));
}

SoftTarget::~SoftTarget() { impl_->Stop(); }

RemoteAddress SoftTarget::address() const {
  RemoteAddress a;
  a.lid = impl_->port;
  a.qpn = impl_->qpn;
  a.has_gid = true;
  a.gid = Ipv4ToGid(impl_->ip);
  return a;
}

Result<std::unique_ptr<MemoryRegion>> SoftTarget::RegisterMemory(void* addr, size_t length,
                                                                 unsigned access) {
  return RegisterMemoryIn(0, addr, length, access);
}

Result<std::unique_ptr<MemoryRegion>> SoftTarget::RegisterMemoryIn(uint32_t domain, void* addr,
                                                                   size_t length,
                                                                   unsigned access) {
  std::unique_lock lock(impl_->regions_mu);
  uint32_t key = NewKey(*impl_);
  impl_->regions[key] = {reinterpret_cast<uint64_t>(addr), static_cast<char*>(addr), length,
                         access, domain};
  Registration reg{reinterpret_cast<uint64_t>(addr), length, key, key};
  return std::unique_ptr<MemoryRegion>(new SoftTargetMr(impl_, HostRegionSpan(reg), key));
}

Result<std::unique_ptr<MemoryRegion>> SoftTarget::RegisterDmabuf(int fd, uint64_t offset,
                                                                 size_t length, uint64_t iova,
                                                                 unsigned access) {
  // Where the NIC reaches the dma-buf's pages through its own translation, the emulation maps
  // them: exporters that allow CPU mappings (udmabuf; a memfd stands in for one in tests) work,
  // others are refused like a NIC without dma-buf support.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const size_t map_len = static_cast<size_t>(offset - start) + length;
  void* map = length ? mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                            static_cast<off_t>(start))
                     : MAP_FAILED;
  if (map == MAP_FAILED)
    return MakeError(ErrorCode::kRDMANotSupported,
                     std::string("soft target: cannot map dma-buf fd ") + std::to_string(fd) +
                         ": " + std::strerror(length ? errno : EINVAL) +
                         " (GPU memory that the CPU cannot map needs the verbs target)");
  std::unique_lock lock(impl_->regions_mu);
  uint32_t key = NewKey(*impl_);
  char* local = static_cast<char*>(map) + (offset - start);
  impl_->regions[key] = {iova, local, length, access};
  // Reported as ibv_reg_dmabuf_mr reports it: addr = the offset into the dma-buf.
  Registration reg{offset, length, key, key};
  return std::unique_ptr<MemoryRegion>(
      new SoftTargetMr(impl_, DmabufRegionSpan(reg, iova), key, map, map_len));
}

Result<Target::RcConnectionInfo> SoftTarget::RcConnection(uint32_t server_ip, uint16_t port,
                                                          bool fresh) {
  Impl& im = *impl_;
  std::lock_guard lock(im.rc_mu);
  const uint64_t key = static_cast<uint64_t>(server_ip) << 16 | port;
  if (auto it = im.rc.find(key); it != im.rc.end()) {
    if (!fresh && !it->second.done->load()) return RcConnectionInfo{it->second.id, address()};
    {
      // The server closed it or says so: end our side too (the serving thread closes it).
      std::lock_guard l(im.conns_mu);
      if (*it->second.fd >= 0) shutdown(*it->second.fd, SHUT_RDWR);
    }
    im.rc.erase(it);
  }
  std::string where = net::Ipv4String(server_ip) + ":" + std::to_string(port);
  // From the address the tokens name (the GID): the server checks the connection against it.
  auto conn = net::ConnectTcp(server_ip, port, std::chrono::milliseconds(3000), im.ip);
  if (!conn.ok())
    return MakeError(ErrorCode::kRDMANotSupported,
                     "soft RC: cannot connect to " + where + ": " + conn.error().message);
  int fd = *conn;
  net::SetTimeouts(fd, im.options.io_timeout);
  net::SetKeepAlive(fd);
  net::SetTos(fd, im.options.tos);
  wire::Hello hello;
  hello.magic = wire::kRcMagic;
  hello.qpn = im.qpn;
  wire::RcWelcome w;
  auto st = net::SendAll(fd, &hello, sizeof(hello));
  if (st.ok()) st = net::RecvAll(fd, &w, sizeof(w));
  if (!st.ok() || w.magic != wire::kRcMagic || w.status != wire::kRcAccepted || w.connection == 0) {
    close(fd);
    return MakeError(
        ErrorCode::kRDMANotSupported,
        "soft RC: " + where +
            (!st.ok()                       ? " did not answer: " + st.error().message
             : w.status == wire::kRcRefused ? " refused the connection (its RC connection limits)"
                                            : " is not a soft RC listener"));
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  im.Spawn(
      fd, [raw = &im](int f) { raw->ServeRequests(f); }, done);
  std::shared_ptr<int> shared_fd;
  {
    std::lock_guard l(im.conns_mu);
    shared_fd = im.conns.back().fd;
  }
  im.rc[key] = {w.connection, done, shared_fd};
  return RcConnectionInfo{w.connection, address()};
}

uint64_t SoftTarget::requests_served() const { return impl_->served.load(); }
uint64_t SoftTarget::connections_accepted() const { return impl_->accepted.load(); }

}  // namespace rdmastor::rdma::soft
