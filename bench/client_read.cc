// client_read: the C++ client library reading a list of objects, the baseline bench/python_loader.py
// sets the Python client against. Keys come on stdin, one per line; --threads threads each take
// every Nth key and read it into one reused buffer of --size bytes (its registration cached, as a
// C++ application keeps it) with RdmaS3Client (--via rdma, soft fabric) or S3Client (--via http).
// Each object's first and last 4 bytes must be its index (little endian), as the loader checks.
// Prints one line of JSON: seconds, bytes, objects, cpu_s (user + system of this process).
//
//   printf 'k1\nk2\n' | AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. build/bench/client_read
//       --endpoint http://127.0.0.1:9000 --bucket b --size 131072      (one command line)
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/cli11_support.h"
#include "rdmastor/rdma_client.h"
#include "rdmastor/s3_client.h"

namespace client = rdmastor::client;

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint, bucket, via = "rdma";
  size_t size = 0;
  int threads = 4;
  CLI::App app{"the C++ client library reading the keys on stdin (bench/python_loader.py's "
               "baseline)",
               "client_read"};
  app.add_option("--endpoint", endpoint, "the server")->type_name("URL")->required();
  app.add_option("--bucket", bucket, "the bucket holding the keys")->required();
  app.add_option("--size", size, "bytes per object (the buffer each thread reuses)")
      ->type_name("BYTES")
      ->check(CLI::Range(size_t{8}, size_t{1} << 40))
      ->required();
  app.add_option("--threads", threads, "reading threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--via", via, "S3 over RDMA (soft fabric) or plain HTTP")
      ->check(CLI::IsMember({"rdma", "http"}))
      ->capture_default_str();
  if (auto rc = rdmastor::cli11::ParseOrExit(app, argc, argv)) return *rc;
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (!ak || !sk) {
    std::fprintf(stderr, "client_read: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n");
    return 2;
  }
  std::vector<std::string> keys;
  for (std::string line; std::getline(std::cin, line);)
    if (!line.empty()) keys.push_back(line);
  auto cfg = client::S3ConfigFromEndpoint(endpoint, ak, sk);
  if (!cfg.ok()) {
    std::fprintf(stderr, "client_read: %s\n", cfg.error().message.c_str());
    return 2;
  }
  cfg->max_attempts = 1;  // a refusal is counted as an error, not hidden by a retry

  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> failed{false};
  auto work = [&](int t) {
    std::vector<char> buf(size);
    std::unique_ptr<client::RdmaS3Client> rdma;
    std::unique_ptr<client::S3Client> http;
    if (via == "rdma") {
      client::RdmaClientConfig rc;
      rc.s3 = *cfg;
      auto c = client::RdmaS3Client::Create(rc);
      if (!c.ok()) {
        std::fprintf(stderr, "client_read: %s\n", c.error().message.c_str());
        failed = true;
        return;
      }
      rdma = std::move(c).value();
    } else {
      http = std::make_unique<client::S3Client>(*cfg);
    }
    for (size_t i = t; i < keys.size() && !failed; i += threads) {
      uint64_t n = 0;
      if (rdma) {
        auto r = rdma->Get(bucket, keys[i], buf.data(), size, std::nullopt);
        if (!r.ok() || r->transport != client::Transport::kRdma) {
          std::fprintf(stderr, "client_read: %s: %s\n", keys[i].c_str(),
                       r.ok() ? "went over HTTP" : r.error().message.c_str());
          failed = true;
          return;
        }
        n = r->bytes;
      } else {
        auto r = http->GetObjectInto(bucket, keys[i], std::nullopt, buf.data(), size);
        if (!r.ok()) {
          std::fprintf(stderr, "client_read: %s: %s\n", keys[i].c_str(),
                       r.error().message.c_str());
          failed = true;
          return;
        }
        n = r->bytes;
      }
      const uint32_t tag = static_cast<uint32_t>(i);
      uint32_t head = 0, tail = 0;
      if (n == size) {
        std::memcpy(&head, buf.data(), 4);
        std::memcpy(&tail, buf.data() + n - 4, 4);
      }
      if (n != size || head != tag || tail != tag) {
        std::fprintf(stderr, "client_read: wrong bytes for %s\n", keys[i].c_str());
        failed = true;
        return;
      }
      bytes += n;
    }
  };

  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed) return 1;
  std::printf("{\"seconds\": %.6f, \"bytes\": %llu, \"objects\": %zu, \"cpu_s\": %.6f}\n", secs,
              static_cast<unsigned long long>(bytes.load()), keys.size(), CpuSeconds() - cpu0);
  return 0;
}
