#include "cli/systemd_notify.h"

#include <netdb.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace rdmastor::cli {

namespace {

struct Probe {
  std::mutex mu;
  std::string host;  // empty: not serving yet
  uint16_t port = 0;
  bool tls = false;
};

Probe& TheProbe() {
  static Probe p;
  return p;
}

// One GET /minio/health/live on the server's own listening address: true on a 200 within
// `timeout`. TLS without verification: this process probes itself and sends nothing secret.
bool HealthAnswers(const std::string& host, uint16_t port, bool tls, std::chrono::seconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{static_cast<time_t>(timeout.count()), 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));  // bounds connect() too
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return false;
  const std::string request = "GET /minio/health/live HTTP/1.1\r\nHost: " + host +
                              "\r\nUser-Agent: rdmastor-watchdog\r\nConnection: close\r\n\r\n";
  char buf[64] = {};
  int got = 0;
  if (!tls) {
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size()))
      got = static_cast<int>(::recv(fd, buf, sizeof(buf) - 1, 0));
  } else {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = ctx ? SSL_new(ctx) : nullptr;
    if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1 &&
        SSL_write(ssl, request.data(), static_cast<int>(request.size())) ==
            static_cast<int>(request.size()))
      got = SSL_read(ssl, buf, sizeof(buf) - 1);
    if (ssl) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
    if (ctx) SSL_CTX_free(ctx);
  }
  ::close(fd);
  return got > 12 && std::strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

}  // namespace

void StartWatchdog() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  const auto tick = std::chrono::microseconds(usec / 3);
  const auto probe_timeout =
      std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(usec / 3 / 1000000)));
  std::thread([tick, probe_timeout] {
    bool failing = false;
    for (;;) {
      std::string host;
      uint16_t port;
      bool tls;
      {
        std::lock_guard lock(TheProbe().mu);
        host = TheProbe().host;
        port = TheProbe().port;
        tls = TheProbe().tls;
      }
      const bool alive = host.empty() || HealthAnswers(host, port, tls, probe_timeout);
      if (alive) sd_notify(0, "WATCHDOG=1");
      if (alive == failing) {  // log the changes only
        failing = !alive;
        if (failing)
          spdlog::warn(
              "watchdog: GET /minio/health/live on {}:{} did not answer 200; systemd "
              "restarts the server if this lasts for WatchdogSec",
              host, port);
        else
          spdlog::info("watchdog: the server answers again");
      }
      std::this_thread::sleep_for(tick);
    }
  }).detach();
}

void NotifyServing(const std::string& listen_host, uint16_t port, bool tls,
                   const std::string& status) {
  {
    std::lock_guard lock(TheProbe().mu);
    TheProbe().port = port;
    TheProbe().tls = tls;
    // All interfaces are probed on loopback; a named address on itself.
    TheProbe().host = listen_host.empty() || listen_host == "0.0.0.0" ? "127.0.0.1"
                      : listen_host == "::"                           ? "::1"
                                                                      : listen_host;
  }
  sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void NotifyStatus(const std::string& status) { sd_notifyf(0, "STATUS=%s", status.c_str()); }

void NotifyStopping() { sd_notify(0, "STOPPING=1"); }

}  // namespace rdmastor::cli
