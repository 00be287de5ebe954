// The shared transfer engine, MR cache and buffer pool, end to end over the soft fabric.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

#include "rdma/memory.h"
#include "rdma/soft/net.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/soft/soft_wire.h"
#include "rdma/transfer.h"

namespace rdmastor::rdma {
namespace {

using namespace std::chrono_literals;

struct Fixture : ::testing::Test {
  void SetUp() override {
    auto t = soft::SoftTarget::Start();
    ASSERT_TRUE(t.ok()) << t.error().message;
    target = std::move(t).value();
  }
  Result<std::unique_ptr<Endpoint>> Connect(std::string origin = "127.0.0.1") {
    return fabric.Connect(target->address(), RequestOrigin{origin});
  }
  soft::SoftFabric fabric;
  std::unique_ptr<soft::SoftTarget> target;
};

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) ^ (i >> 9));
  return v;
}

TEST_F(Fixture, WriteThenReadManyWorkRequests) {
  const size_t n = 3 * 1024 * 1024 + 17;
  std::vector<char> remote(n + 64, 'G');  // guard bytes after the registered part
  auto rmr = target->RegisterMemory(remote.data(), n, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(rmr.ok());
  auto src = Pattern(n, 1);
  auto lmr = fabric.RegisterMemory(src.data(), n, kLocalWrite);
  ASSERT_TRUE(lmr.ok());
  auto ep = Connect();
  ASSERT_TRUE(ep.ok()) << ep.error().message;

  TransferOptions opt;
  opt.max_wr_bytes = 64 * 1024;
  opt.max_outstanding = 8;
  opt.signal_interval = 4;
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), n, (*rmr)->rkey()};
  {
    Transfer w(**ep, Opcode::kWrite, rb, opt);
    // Two posts: the second starts at an odd offset.
    ASSERT_TRUE(w.Post(**lmr, src.data(), 1000001, 0).ok());
    ASSERT_TRUE(w.Post(**lmr, src.data() + 1000001, n - 1000001, 1000001).ok());
    ASSERT_TRUE(w.Finish().ok());
    EXPECT_EQ(w.bytes_completed(), n);
    EXPECT_GT(w.work_requests(), 40u);
    EXPECT_LT(w.signaled_requests(), w.work_requests());  // selective signalling
  }
  EXPECT_EQ(std::memcmp(remote.data(), src.data(), n), 0);
  EXPECT_EQ(std::string(remote.data() + n, 64), std::string(64, 'G'));

  std::vector<char> back(n, 0);
  auto bmr = fabric.RegisterMemory(back.data(), n, kLocalWrite);
  Transfer r(**ep, Opcode::kRead, rb, opt);
  ASSERT_TRUE(r.Post(**bmr, back.data(), n, 0).ok());
  ASSERT_TRUE(r.Finish().ok());
  EXPECT_EQ(back, src);
}

TEST_F(Fixture, WrongRkeyIsRemoteAccessErrorAndEndpointStaysInError) {
  std::vector<char> remote(4096, 'G');
  auto rmr = target->RegisterMemory(remote.data(), remote.size(), kRemoteWrite);
  auto src = Pattern(4096, 2);
  auto lmr = fabric.RegisterMemory(src.data(), src.size(), kLocalWrite);
  auto ep = Connect();
  ASSERT_TRUE(ep.ok());
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), 4096, (*rmr)->rkey() ^ 1};
  Transfer w(**ep, Opcode::kWrite, rb);
  (void)w.Post(**lmr, src.data(), 4096, 0);
  auto st = w.Finish();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  EXPECT_NE(st.error().message.find("remote access error"), std::string::npos);
  EXPECT_EQ(std::string(remote.data(), 4096), std::string(4096, 'G'));

  // Later requests on the same endpoint are flushed, as on a QP in the error state.
  rb.rkey = (*rmr)->rkey();
  Transfer again(**ep, Opcode::kWrite, rb);
  (void)again.Post(**lmr, src.data(), 4096, 0);
  auto st2 = again.Finish();
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.error().message.find("flushed"), std::string::npos);
}

TEST_F(Fixture, OutOfBoundsAndMissingPermissionAreRemoteAccessErrors) {
  std::vector<char> remote(8192, 'G');
  // Only the first half is registered, and only for reading.
  auto rmr = target->RegisterMemory(remote.data(), 4096, kRemoteRead);
  auto src = Pattern(8192, 3);
  auto lmr = fabric.RegisterMemory(src.data(), src.size(), kLocalWrite);
  for (auto [op, len] : {std::pair{Opcode::kRead, 8192}, std::pair{Opcode::kWrite, 4096}}) {
    auto ep = Connect();
    ASSERT_TRUE(ep.ok());
    RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), 8192, (*rmr)->rkey()};
    Transfer t(**ep, op, rb);
    (void)t.Post(**lmr, src.data(), static_cast<size_t>(len), 0);
    auto st = t.Finish();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidRDMAToken);
  }
  EXPECT_EQ(std::string(remote.data(), 8192), std::string(8192, 'G'));
}

TEST_F(Fixture, BadLkeyIsLocalProtectionError) {
  std::vector<char> remote(4096);
  auto rmr = target->RegisterMemory(remote.data(), remote.size(), kRemoteWrite);
  auto ep = Connect();
  ASSERT_TRUE(ep.ok());
  WorkRequest wr;
  wr.wr_id = 1;
  std::vector<char> unregistered(16);
  wr.local_addr = unregistered.data();
  wr.length = 16;
  wr.lkey = 999999;
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  wr.rkey = (*rmr)->rkey();
  ASSERT_TRUE((*ep)->PostSend(wr).ok());
  Completion wc[4];
  auto n = (*ep)->PollCompletions(wc, 4, 1000ms);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1);
  EXPECT_EQ(wc[0].status, WcStatus::kLocalProtectionError);
}

TEST_F(Fixture, RefusesTargetsOtherThanTheRequester) {
  auto ep = Connect("127.0.0.2");
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.error().code, ErrorCode::kAccessDenied);
  EXPECT_NE(ep.error().message.find("MINIO_RDMA_SOFT_ALLOW"), std::string::npos);
  // Unless the operator allows it; IPv4-mapped requester addresses count as the same host.
  soft::SoftFabricOptions opt;
  opt.allow = *soft::ParseCidrList("10.0.0.0/8, 127.0.0.0/30");
  soft::SoftFabric allowed(opt);
  EXPECT_TRUE(allowed.Connect(target->address(), {"127.0.0.2"}).ok());
  EXPECT_TRUE(fabric.Connect(target->address(), {"::ffff:127.0.0.1"}).ok());
}

TEST_F(Fixture, WrongEndpointIdOrDeadTargetIsNotSupported) {
  auto addr = target->address();
  addr.qpn ^= 0x5a;
  auto ep = fabric.Connect(addr, {"127.0.0.1"});
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.error().code, ErrorCode::kRDMANotSupported);
  auto dead = target->address();
  target.reset();
  auto ep2 = fabric.Connect(dead, {"127.0.0.1"});
  ASSERT_FALSE(ep2.ok());
  EXPECT_EQ(ep2.error().code, ErrorCode::kRDMANotSupported);
  RemoteAddress no_gid;
  EXPECT_EQ(fabric.Connect(no_gid, {"127.0.0.1"}).error().code, ErrorCode::kRDMANotSupported);
}

// One write and one read of `data` through `ep`; false when either failed.
bool RoundTrip(soft::SoftFabric& fabric, Endpoint& ep, const MemoryRegion& remote,
               std::vector<char>& data) {
  auto lmr = fabric.RegisterMemory(data.data(), data.size(), kLocalWrite);
  if (!lmr.ok()) return false;
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.addr()), remote.length(), remote.rkey()};
  Transfer w(ep, Opcode::kWrite, rb);
  if (!w.Post(**lmr, data.data(), data.size(), 0).ok() || !w.Finish().ok()) return false;
  std::vector<char> back(data.size());
  auto bmr = fabric.RegisterMemory(back.data(), back.size(), kLocalWrite);
  Transfer r(ep, Opcode::kRead, rb);
  if (!r.Post(**bmr, back.data(), back.size(), 0).ok() || !r.Finish().ok()) return false;
  return back == data;
}

TEST_F(Fixture, ReusesCleanConnectionsOnly) {
  std::vector<char> remote(256 * 1024);
  auto rmr = target->RegisterMemory(remote.data(), remote.size(), kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(rmr.ok());
  auto data = Pattern(remote.size(), 3);
  for (int i = 0; i < 3; ++i) {  // clean endpoints hand their connection to the next Connect
    auto ep = Connect();
    ASSERT_TRUE(ep.ok()) << ep.error().message;
    ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
  }
  EXPECT_EQ(target->connections_accepted(), 1u);
  EXPECT_EQ(fabric.connections_opened(), 1u);
  EXPECT_EQ(fabric.connections_reused(), 2u);

  // Two endpoints at once need two connections.
  {
    auto a = Connect(), b = Connect();
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(RoundTrip(fabric, **a, **rmr, data));
    ASSERT_TRUE(RoundTrip(fabric, **b, **rmr, data));
  }
  EXPECT_EQ(target->connections_accepted(), 2u);

  // An endpoint that saw an error (wrong rkey) is not reused: the next one opens afresh and works.
  {
    auto ep = Connect();
    ASSERT_TRUE(ep.ok());
    std::vector<char> src(4096);
    auto lmr = fabric.RegisterMemory(src.data(), src.size(), kLocalWrite);
    Transfer t(**ep, Opcode::kWrite,
               RemoteBuffer{reinterpret_cast<uint64_t>(remote.data()), 4096, (*rmr)->rkey() ^ 1});
    ASSERT_TRUE(t.Post(**lmr, src.data(), src.size(), 0).ok());
    ASSERT_FALSE(t.Finish().ok());
  }
  {
    auto ep = Connect();
    ASSERT_TRUE(ep.ok());
    ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
  }
  // One idle connection was left from the pair above; the errored one was dropped.
  EXPECT_EQ(target->connections_accepted(), 2u);

  // An endpoint released with requests still in flight is not reused either.
  {
    auto ep = Connect();
    ASSERT_TRUE(ep.ok());
    auto lmr = fabric.RegisterMemory(data.data(), data.size(), kLocalWrite);
    Transfer t(
        **ep, Opcode::kWrite,
        RemoteBuffer{reinterpret_cast<uint64_t>(remote.data()), remote.size(), (*rmr)->rkey()});
    ASSERT_TRUE(t.Post(**lmr, data.data(), data.size(), 0).ok());
  }  // destroyed without Finish
  uint64_t before = target->connections_accepted();
  {
    auto ep = Connect();
    ASSERT_TRUE(ep.ok());
    ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
  }
  EXPECT_EQ(target->connections_accepted(), before + 1);
  EXPECT_EQ(remote, data);
}

TEST(SoftFabricTest, ConnectionClosedByTheTargetWhileIdleIsReplaced) {
  soft::SoftTargetOptions to;
  to.idle_timeout = 200ms;  // the target drops connections idle this long
  auto target = soft::SoftTarget::Start(to);
  ASSERT_TRUE(target.ok());
  soft::SoftFabric fabric;
  std::vector<char> remote(64 * 1024);
  auto rmr = (*target)->RegisterMemory(remote.data(), remote.size(), kRemoteWrite | kRemoteRead);
  auto data = Pattern(remote.size(), 4);
  {
    auto ep = fabric.Connect((*target)->address(), {"127.0.0.1"});
    ASSERT_TRUE(ep.ok());
    ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
  }
  std::this_thread::sleep_for(600ms);  // the target has closed its end by now
  auto ep = fabric.Connect((*target)->address(), {"127.0.0.1"});
  ASSERT_TRUE(ep.ok());
  ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
  EXPECT_EQ((*target)->connections_accepted(), 2u);
  EXPECT_EQ(fabric.connections_reused(), 0u);

  // Reuse off: every Connect opens a connection.
  soft::SoftFabricOptions fo;
  fo.max_idle_connections = 0;
  soft::SoftFabric no_reuse(fo);
  for (int i = 0; i < 2; ++i) {
    auto e = no_reuse.Connect((*target)->address(), {"127.0.0.1"});
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(RoundTrip(no_reuse, **e, **rmr, data));
  }
  EXPECT_EQ(no_reuse.connections_opened(), 2u);
  EXPECT_EQ(no_reuse.connections_reused(), 0u);
}

// A connection that ends (its initiator closed it, or died) is closed by the target at once, not
// when the next connection is accepted: a survivor of a dead peer keeps no descriptor of it.
TEST(SoftFabricTest, TargetClosesEndedConnectionsAtOnce) {
  auto open_fds = [] {
    size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  auto target = soft::SoftTarget::Start({});
  ASSERT_TRUE(target.ok());
  std::vector<char> remote(64 * 1024);
  auto rmr = (*target)->RegisterMemory(remote.data(), remote.size(), kRemoteWrite | kRemoteRead);
  auto data = Pattern(remote.size(), 5);
  soft::SoftFabricOptions fo;
  fo.max_idle_connections = 0;
  soft::SoftFabric fabric(fo);
  const size_t before = open_fds();
  {
    std::vector<std::unique_ptr<Endpoint>> eps;
    for (int i = 0; i < 5; ++i) {
      auto ep = fabric.Connect((*target)->address(), {"127.0.0.1"});
      ASSERT_TRUE(ep.ok());
      ASSERT_TRUE(RoundTrip(fabric, **ep, **rmr, data));
      eps.push_back(std::move(ep).value());
    }
    EXPECT_GE(open_fds(), before + 10);  // both ends of 5 connections live in this process
  }
  // The initiator ends are closed; the target's follow without another accept (bounded wait).
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (open_fds() > before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(open_fds(), before);
  EXPECT_EQ((*target)->connections_accepted(), 5u);
}

// A peer that accepts the endpoint and then stops answering: the transfer fails within its
// timeout instead of hanging.
TEST(SoftFabricTest, FrozenPeerFailsWithinTimeout) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(0x7f000001);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len);
  int conn = -1;
  std::thread peer([&] {
    conn = accept(ls, nullptr, nullptr);
    soft::wire::Hello h;
    (void)!read(conn, &h, sizeof(h));
    soft::wire::HelloReply r;
    (void)!write(conn, &r, sizeof(r));
    // ... and never reads or answers again.
  });
  soft::SoftFabricOptions fo;
  fo.io_timeout = 300ms;
  soft::SoftFabric fabric(fo);
  RemoteAddress addr;
  addr.has_gid = true;
  addr.gid = Ipv4ToGid(0x7f000001);
  addr.lid = ntohs(sa.sin_port);
  auto ep = fabric.Connect(addr, {"127.0.0.1"});
  peer.join();
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  std::vector<char> buf(1 << 20);
  auto mr = fabric.RegisterMemory(buf.data(), buf.size(), kLocalWrite);
  TransferOptions opt;
  opt.timeout = 500ms;
  opt.max_wr_bytes = 256 * 1024;
  Transfer t(**ep, Opcode::kRead, RemoteBuffer{0x1000, buf.size(), 1}, opt);
  auto start = std::chrono::steady_clock::now();
  (void)t.Post(**mr, buf.data(), buf.size(), 0);
  auto st = t.Finish();
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kRDMANotSupported);  // nothing moved
  EXPECT_LT(took, 3s);
  close(conn);
  close(ls);
}

// A soft-fabric peer that completes the handshake, then answers each READ request with its reply
// and payload in pieces of `piece` bytes every `every`.
struct PacedPeer {
  PacedPeer(size_t piece, std::chrono::milliseconds every) : piece_(piece), every_(every) {
    ls_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t len = sizeof(sa);
    EXPECT_EQ(bind(ls_, reinterpret_cast<sockaddr*>(&sa), len), 0);
    EXPECT_EQ(listen(ls_, 4), 0);
    getsockname(ls_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~PacedPeer() {
    stop_ = true;
    shutdown(ls_, SHUT_RDWR);
    if (conn_ >= 0) shutdown(conn_, SHUT_RDWR);
    thread_.join();
    if (conn_ >= 0) close(conn_);
    close(ls_);
  }
  void Serve() {
    conn_ = accept(ls_, nullptr, nullptr);
    if (conn_ < 0) return;
    soft::wire::Hello h;
    if (recv(conn_, &h, sizeof(h), MSG_WAITALL) != sizeof(h)) return;
    soft::wire::HelloReply r;
    if (send(conn_, &r, sizeof(r), MSG_NOSIGNAL) != sizeof(r)) return;
    while (!stop_) {
      soft::wire::Request req;
      if (recv(conn_, &req, sizeof(req), MSG_WAITALL) != sizeof(req)) return;
      soft::wire::Reply reply;
      reply.wr_id = req.wr_id;
      reply.length = req.length;
      std::string out(reinterpret_cast<const char*>(&reply), sizeof(reply));
      out.append(req.length, 'p');
      for (size_t i = 0; i < out.size() && !stop_; i += piece_) {
        size_t n = std::min(piece_, out.size() - i);
        if (send(conn_, out.data() + i, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) return;
        std::this_thread::sleep_for(every_);
      }
    }
  }
  RemoteAddress address() const {
    RemoteAddress a;
    a.has_gid = true;
    a.gid = Ipv4ToGid(0x7f000001);
    a.lid = port_;
    return a;
  }
  size_t piece_;
  std::chrono::milliseconds every_;
  int ls_ = -1, conn_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Reads `len` bytes through a fabric paced at 64 KiB/s over `interval`; returns the status and
// how long it took.
std::pair<Status, std::chrono::steady_clock::duration> PacedRead(const PacedPeer& peer, size_t len,
                                                                 std::chrono::milliseconds interval) {
  soft::SoftFabricOptions fo;
  fo.progress_interval = interval;
  fo.min_rate = 64 << 10;
  soft::SoftFabric fabric(fo);
  auto ep = fabric.Connect(peer.address(), {"127.0.0.1"});
  EXPECT_TRUE(ep.ok());
  if (!ep.ok()) return {ep.error(), {}};
  std::vector<char> buf(len);
  auto mr = fabric.RegisterMemory(buf.data(), buf.size(), kLocalWrite);
  TransferOptions opt;
  opt.timeout = interval;
  opt.min_rate = 64 << 10;
  Transfer t(**ep, Opcode::kRead, RemoteBuffer{0x1000, buf.size(), 1}, opt);
  auto start = std::chrono::steady_clock::now();
  (void)t.Post(**mr, buf.data(), buf.size(), 0);
  Status st = t.Finish();
  return {st, std::chrono::steady_clock::now() - start};
}

TEST(SoftFabricTest, TricklingPeerIsCutOffAfterOneProgressWindow) {
  // One byte every 50 ms resets no timer: before, each byte restarted the 10 s socket timeout.
  PacedPeer peer(1, 50ms);
  auto [st, took] = PacedRead(peer, 256 << 10, 400ms);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kRDMANotSupported) << st.error().message;
  EXPECT_NE(st.error().message.find("ms of waiting"), std::string::npos) << st.error().message;
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 2s);
}

TEST(SoftFabricTest, SlowButSteadyPeerIsNotCutOff) {
  // 16 KiB every 50 ms (320 KiB/s, five times the minimum rate) over several windows.
  PacedPeer peer(16 << 10, 50ms);
  auto [st, took] = PacedRead(peer, 320 << 10, 200ms);
  EXPECT_TRUE(st.ok()) << st.error().message;
  EXPECT_GE(took, 600ms);  // spanned several progress windows
}

TEST(PaceTest, WindowsCountOnlyWaiting) {
  soft::net::Pace pace(100ms, 1000);  // 100 bytes per 100 ms of waiting
  EXPECT_EQ(pace.WaitBudgetMs(), 100);
  EXPECT_TRUE(pace.Account(60ms, 50).ok());
  EXPECT_EQ(pace.WaitBudgetMs(), 40);
  EXPECT_TRUE(pace.Account(0ms, 50).ok());    // bytes without waiting close no window
  EXPECT_TRUE(pace.Account(40ms, 0).ok());    // 100 bytes in 100 ms: enough; a new window
  EXPECT_EQ(pace.WaitBudgetMs(), 100);
  EXPECT_TRUE(pace.Account(99ms, 99).ok());
  auto st = pace.Account(1ms, 0);             // 99 < 100
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kRequestTimeout);
}

TEST(SoftFabricTest, DmabufThatTheCpuCannotMapIsRefusedClearly) {
  auto target = soft::SoftTarget::Start();
  ASSERT_TRUE(target.ok()) << target.error().message;
  int p[2];
  ASSERT_EQ(pipe(p), 0);  // not mappable, like a GPU dma-buf without CPU access
  auto mr = (*target)->RegisterDmabuf(p[0], 0, 4096, 0x7f0000000000, kRemoteWrite);
  close(p[0]);
  close(p[1]);
  ASSERT_FALSE(mr.ok());
  EXPECT_EQ(mr.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(mr.error().message.find("verbs"), std::string::npos) << mr.error().message;
}

TEST_F(Fixture, DmabufRegionIsAddressedByItsIovaAndReleasedOnDeregistration) {
  // A memfd stands in for a dma-buf; the "device pointer" is an address range the CPU cannot
  // touch (PROT_NONE), so a byte written through it rather than through the dma-buf would crash.
  const size_t len = 256 * 1024 + 100, offset = 3 * 4096 + 8;
  int fd = memfd_create("dmabuf", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(offset + len)), 0);
  void* device = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(device, MAP_FAILED);
  const uint64_t iova = reinterpret_cast<uint64_t>(device);
  auto rmr = target->RegisterDmabuf(fd, offset, len, iova, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(rmr.ok()) << rmr.error().message;
  // What libibverbs reports as the address is the offset; the region is where initiators aim.
  EXPECT_EQ(reinterpret_cast<uint64_t>((*rmr)->addr()), iova);
  EXPECT_EQ((*rmr)->length(), len);
  EXPECT_TRUE((*rmr)->Contains(static_cast<char*>(device) + 100, 10));

  auto src = Pattern(len, 5);
  auto lmr = fabric.RegisterMemory(src.data(), len, kLocalWrite);
  auto ep = Connect();
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  RemoteBuffer rb{iova, len, (*rmr)->rkey()};
  {
    Transfer w(**ep, Opcode::kWrite, rb);
    ASSERT_TRUE(w.Post(**lmr, src.data(), len, 0).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  std::vector<char> seen(len);
  ASSERT_EQ(pread(fd, seen.data(), len, static_cast<off_t>(offset)), static_cast<ssize_t>(len));
  EXPECT_EQ(seen, src);
  // Addressing it by the reported offset (the old VerbsMr's view) is out of bounds.
  {
    auto ep2 = Connect();
    Transfer w(**ep2, Opcode::kWrite, RemoteBuffer{offset, len, (*rmr)->rkey()});
    (void)w.Post(**lmr, src.data(), 4096, 0);
    auto st = w.Finish();
    ASSERT_FALSE(st.ok());
  }
  // Deregistered: the rkey is dead.
  rmr->reset();
  auto ep3 = Connect();
  Transfer late(**ep3, Opcode::kWrite, rb);
  (void)late.Post(**lmr, src.data(), 4096, 0);
  EXPECT_FALSE(late.Finish().ok());
  munmap(device, len);
  close(fd);
}

TEST(MrCacheTest, HitsContainedRangesAndEvicts) {
  soft::SoftFabric fabric;
  MrCache cache([&](void* a, size_t l, unsigned acc) { return fabric.RegisterMemory(a, l, acc); },
                2);
  std::vector<char> a(4096), b(4096), c(4096);
  auto m1 = cache.Get(a.data(), 4096, kLocalWrite);
  auto m2 = cache.Get(a.data() + 100, 50, kLocalWrite);
  ASSERT_TRUE(m1.ok() && m2.ok());
  EXPECT_EQ(m1->get(), m2->get());
  EXPECT_EQ(cache.hits(), 1u);
  (void)cache.Get(b.data(), 4096, kLocalWrite);
  (void)cache.Get(c.data(), 4096, kLocalWrite);
  EXPECT_EQ(cache.size(), 2u);
  cache.Invalidate(c.data() + 10, 1);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ((*m1)->length(), 4096u);  // still registered while held
}

TEST(BufferPoolTest, BoundedAndReused) {
  soft::SoftFabric fabric;
  BufferPool pool(fabric, 64 * 1024, 2);
  auto b1 = pool.Acquire(10ms);
  auto b2 = pool.Acquire(10ms);
  ASSERT_TRUE(b1.ok() && b2.ok());
  EXPECT_EQ(b1->size(), 64u * 1024);
  EXPECT_TRUE(b1->mr().Contains(b1->data(), b1->size()));
  auto b3 = pool.Acquire(20ms);
  ASSERT_FALSE(b3.ok());
  EXPECT_EQ(b3.error().code, ErrorCode::kSlowDown);
  char* first = b1->data();
  { auto drop = std::move(*b1); }
  auto b4 = pool.Acquire(10ms);
  ASSERT_TRUE(b4.ok());
  EXPECT_EQ(b4->data(), first);
  EXPECT_EQ(pool.allocated(), 2u);
}

// A pool of domains (inter-node caller side, issue 37 item 9): a buffer is registered in a domain
// when first handed to it and kept there; each domain gets its own key; a discarded buffer loses
// every registration (its keys stop working) and comes back registered afresh.
TEST(BufferPoolTest, DomainsRegisterOncePerBufferAndDomain) {
  auto target = soft::SoftTarget::Start();
  ASSERT_TRUE(target.ok());
  soft::SoftTarget* t = target->get();
  BufferPool pool(
      [t](uint32_t d, void* a, size_t n, unsigned acc) { return t->RegisterMemoryIn(d, a, n, acc); },
      64 * 1024, 1, kRemoteRead);
  uint32_t key_a = 0;
  {
    auto b = pool.Acquire(10ms);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(pool.registrations(), 0u);  // nothing until a domain asks
    auto a1 = b->RegisteredIn(1), a2 = b->RegisteredIn(1), c = b->RegisteredIn(2);
    ASSERT_TRUE(a1.ok() && a2.ok() && c.ok());
    EXPECT_EQ(*a1, *a2);
    EXPECT_NE((*a1)->rkey(), (*c)->rkey());
    EXPECT_TRUE((*c)->Contains(b->data(), b->size()));
    key_a = (*a1)->rkey();
    EXPECT_EQ(pool.registrations(), 2u);
  }
  auto b = pool.Acquire(10ms);  // the same buffer, still registered in both domains
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b->RegisteredIn(1))->rkey(), key_a);
  EXPECT_EQ(pool.registrations(), 2u);
  b->Discard();
  auto fresh = pool.Acquire(10ms);
  ASSERT_TRUE(fresh.ok());
  auto again = fresh->RegisteredIn(1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(pool.registrations(), 3u);
}

TEST(CidrTest, Parses) {
  auto l = soft::ParseCidrList("127.0.0.1 10.1.0.0/16,0.0.0.0/0");
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 3u);
  EXPECT_TRUE((*l)[0].Contains(0x7f000001));
  EXPECT_FALSE((*l)[0].Contains(0x7f000002));
  EXPECT_TRUE((*l)[1].Contains(0x0a01ffff));
  EXPECT_TRUE((*l)[2].Contains(0xc0a80001));
  for (const char* bad : {"1.2.3", "1.2.3.4/33", "300.1.1.1", "::1", "1.2.3.4/", "a.b.c.d"})
    EXPECT_FALSE(soft::ParseCidrList(bad).ok()) << bad;
}

}  // namespace
}  // namespace rdmastor::rdma
