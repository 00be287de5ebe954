// PeerClient's health check against a real socket on loopback: a peer whose kernel accepts
// connections but whose process answers nothing (a stopped process, or a link that vanished with
// the connection already open) is found offline within the ping interval + timeout, the call that
// was waiting on it fails then (not after the 30 s I/O timeout), later calls fail at once, and the
// peer is online again once it answers a ping.
#include "cluster/peer_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cluster/remote_drive.h"

namespace rdmastor::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A loopback HTTP peer that accepts every connection and, while `answer` is false, never replies;
// once it is true, answers every request head with an empty 200.
class SilentPeer {
 public:
  SilentPeer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~SilentPeer() {
    stop_ = true;
    thread_.join();
    for (int c : conns_) ::close(c);
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  std::atomic<bool> answer{false};

 private:
  void Run() {
    std::vector<std::string> pending;
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : conns_) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          conns_.push_back(c);
          pending.emplace_back();
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        char buf[4096];
        ssize_t n = ::recv(fds[i].fd, buf, sizeof(buf), 0);
        if (n > 0) pending[i - 1].append(buf, static_cast<size_t>(n));
      }
      if (!answer) continue;
      for (size_t i = 0; i < conns_.size(); ++i) {
        // Requests here carry no body: each head ends a request.
        for (size_t end; (end = pending[i].find("\r\n\r\n")) != std::string::npos;) {
          pending[i].erase(0, end + 4);
          static const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
          (void)::send(conns_[i], kOk, sizeof(kOk) - 1, MSG_NOSIGNAL);
        }
      }
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> conns_;
  std::thread thread_;
};

PeerClientOptions Fast() {
  PeerClientOptions o;
  o.ping_interval = 100ms;
  o.ping_timeout = 300ms;
  o.io_timeout = 30000ms;  // what an unaborted call would wait
  return o;
}

TEST(PeerClientHealthTest, SilentPeerGoesOfflineAndItsCallsFailFast) {
  SilentPeer peer;
  auto auth = std::make_shared<PeerAuth>("access", "secret-key");
  PeerClient client("127.0.0.1", peer.port(), auth, Fast());
  EXPECT_TRUE(client.online());

  // A call already waiting on the peer when it goes silent.
  std::optional<Result<client::HttpResponse>> waiting;
  Clock::duration waited{};
  std::thread caller([&] {
    const auto t0 = Clock::now();
    waiting = client.Call("POST", "/minio/storage/v1/readfile?disk=x&path=y");
    waited = Clock::now() - t0;
  });
  std::this_thread::sleep_for(50ms);
  client.StartHealthCheck();
  caller.join();
  ASSERT_TRUE(waiting.has_value());
  ASSERT_FALSE(waiting->ok());
  EXPECT_EQ(waiting->error().code, ErrorCode::kServiceUnavailable);
  // ping interval + timeout + scheduling slack, far below the 30 s I/O timeout.
  EXPECT_LT(waited, 3s) << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
  EXPECT_FALSE(client.online());
  EXPECT_FALSE(client.reachable());

  // Later calls fail at once, naming the health check.
  const auto t0 = Clock::now();
  auto r = client.Call("POST", "/minio/lock/v1/lock", "{}");
  EXPECT_LT(Clock::now() - t0, 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("offline"), std::string::npos) << r.error().message;

  // The peer answers again: online at the next ping, and calls go through.
  peer.answer = true;
  for (int i = 0; i < 100 && !client.online(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(client.online());
  EXPECT_TRUE(client.reachable());
  auto ok = client.Call("POST", "/minio/lock/v1/lock", "{}");
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

TEST(PeerClientHealthTest, QuickDriveCallsHaveTheirOwnDeadline) {
  SilentPeer peer;
  auto auth = std::make_shared<PeerAuth>("access", "secret-key");
  PeerClientOptions o = Fast();
  o.ping_interval = 0ms;  // no health check: the quick calls' deadline alone
  o.quick_timeout = 300ms;
  auto client = std::make_shared<PeerClient>("127.0.0.1", peer.port(), auth, o);
  RemoteDrive drive(client, "/d1", "http://127.0.0.1/d1");
  const auto t0 = Clock::now();
  auto info = drive.GetDiskInfo();
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(info.ok());
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);  // not the 30 s I/O timeout
}

}  // namespace
}  // namespace rdmastor::cluster
