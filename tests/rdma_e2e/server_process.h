// Starts the real rdmastor binary on a loopback port with temporary drives and kills it at the end:
// the end-to-end tests (RDMASTOR_SERVER_BIN, fixed credentials) and bench/rdma_bench (any binary
// and credentials) share it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/http_client.h"

namespace rdmastor::testing {

// n bytes of a xorshift sequence from `seed`: payloads whose every offset differs, so a transfer
// landing at the wrong place or length shows.
inline std::vector<char> Pattern(size_t n, uint32_t seed) {
  std::vector<char> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<char>(x);
  }
  return v;
}

// The first value of header `name` in `h`, or nullptr.
inline const std::string* Header(const client::HeaderList& h, std::string_view name) {
  for (const auto& [k, v] : h)
    if (k == name) return &v;
  return nullptr;
}

inline uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  bind(fd, reinterpret_cast<sockaddr*>(&sa), len);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

class ServerProcess {
 public:
  static constexpr const char* kUser = "rdmatest";
  static constexpr const char* kPassword = "rdmatest-secret";

  struct LaunchOptions {
    std::string binary;  // the rdmastor executable
    std::string user = kUser, password = kPassword;
    std::map<std::string, std::string> env;  // e.g. {"MINIO_RDMA_FABRIC", "soft"}
    int drives = 1;                          // > 1: an erasure-coded server
  };

#ifdef RDMASTOR_SERVER_BIN
  // The tests' server: this build's binary with kUser / kPassword.
  bool Start(const std::map<std::string, std::string>& extra_env, int drives = 1) {
    return StartWith(LaunchOptions{RDMASTOR_SERVER_BIN, kUser, kPassword, extra_env, drives});
  }
#endif

  // Returns false when it did not come up within 20 s (log() says why).
  bool StartWith(const LaunchOptions& launch) {
    const int drives = launch.drives;
    dir_ = std::filesystem::temp_directory_path() /
           ("rdmastor-e2e-" + std::to_string(getpid()) + "-" + std::to_string(FreePort()));
    std::vector<std::string> drive_dirs;
    for (int i = 0; i < drives; ++i) {
      auto d = dir_ / (drives == 1 ? std::string("drive") : "drive" + std::to_string(i + 1));
      std::filesystem::create_directories(d);
      drive_dirs.push_back(d.string());
    }
    port_ = FreePort();
    log_ = (dir_ / "server.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      setenv("MINIO_ROOT_USER", launch.user.c_str(), 1);
      setenv("MINIO_ROOT_PASSWORD", launch.password.c_str(), 1);
      for (const auto& [k, v] : launch.env) setenv(k.c_str(), v.c_str(), 1);
      if (!std::freopen(log_.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout))
        _exit(126);
      std::string addr = "127.0.0.1:" + std::to_string(port_);
      std::string binary = launch.binary;
      std::vector<char*> argv{binary.data(), const_cast<char*>("server"),
                              const_cast<char*>("--address"), addr.data()};
      for (auto& d : drive_dirs) argv.push_back(d.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      client::HttpClient http("127.0.0.1", port_);
      client::HttpRequest req;
      req.target = "/minio/health/live";
      auto r = http.Send(req);
      if (r.ok() && r->status == 200) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  ~ServerProcess() { Stop(std::chrono::milliseconds(0)); }

  // SIGTERM and up to `grace` for a clean exit (0: none), then SIGKILL; removes the drives.
  void Stop(std::chrono::milliseconds grace) {
    if (pid_ > 0) {
      if (grace.count() > 0) {
        kill(pid_, SIGTERM);
        auto deadline = std::chrono::steady_clock::now() + grace;
        while (waitpid(pid_, nullptr, WNOHANG) != pid_ &&
               std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (kill(pid_, 0) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
      pid_ = -1;
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }

  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  pid_t pid() const { return pid_; }
  uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Peak resident memory of the server (VmHWM), in KiB.
  uint64_t PeakRssKiB() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
    return 0;
  }

 private:
  std::filesystem::path dir_;
  std::string log_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rdmastor::testing
