// rdma_bench: S3 over RDMA (soft fabric) against plain HTTP on the SAME server in the SAME run.
//
// For every object size and concurrency it runs PUT and GET cells over both transports, each cell
// against the one server process, and reports per cell: throughput (MiB/s) and the RDMA/HTTP
// ratio, the server's CPU time per GiB moved (utime+stime from /proc/<pid>/stat before and after
// the cell) and the bytes the server copied in user space per byte moved (the
// minio_api_rdma_copied_bytes_total counter scraped from /minio/v2/metrics/node before and after).
// Every PUT's ETag is checked against the MD5 of the buffer and every GET buffer is compared with
// the object after its cell, so a fast wrong answer cannot pass. See bench/README.md.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "common/cli11_support.h"
#include "common/hash.h"
#include "common/result.h"
#include "rdma_e2e/server_process.h"  // the server launcher the e2e tests use
#include "rdmastor/rdma_client.h"

namespace rdmastor::bench {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr double kGiB = 1024.0 * 1024 * 1024;

struct Options {
  std::string server_bin;  // launch this server (soft fabric, public metrics) ...
  std::string endpoint;    // ... or use a running one (needs --server-pid)
  pid_t server_pid = -1;
  std::string access_key, secret_key;
  std::vector<uint64_t> sizes_mib{1, 8, 64};
  std::vector<int> concurrency{1, 8, 32};
  double cell_s = 1.0;   // no op starts later than this into a cell; every thread does >= 1 op
  std::string markdown;  // also write the table here
  // How the RDMA cells move their payload: the fabric (soft: TCP emulation; verbs: the NIC, e.g.
  // Soft-RoCE in the guest) and the transport (dc: the server reaches the client's target, DC on
  // verbs; rc: the client's persistent RC connection). Named in the output.
  std::string fabric = "soft";
  std::string transport = "dc";
  uint16_t rc_port = 0;  // --endpoint with --transport rc: the server's MINIO_RDMA_RC_PORT
};

constexpr const char* kAbout = R"(--server-bin starts that rdmastor binary on a free 127.0.0.1 port with a temporary drive,
MINIO_RDMA_FABRIC=soft and MINIO_PROMETHEUS_AUTH_TYPE=public, and stops it at the end. With
--endpoint the server must run the soft fabric with public metrics; --server-pid is its process
id (CPU time is read from /proc/PID/stat). Keys default to $MINIO_ROOT_USER/$MINIO_ROOT_PASSWORD.
)";

template <typename T>
bool ParseList(std::string_view s, std::vector<T>* out) {
  out->clear();
  std::stringstream in{std::string(s)};
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0 || v > 4096) return false;
    out->push_back(static_cast<T>(v));
  }
  return !out->empty();
}

Result<Options> ParseArgs(int argc, char** argv) {
  Options o;
  if (const char* u = std::getenv("MINIO_ROOT_USER")) o.access_key = u;
  if (const char* p = std::getenv("MINIO_ROOT_PASSWORD")) o.secret_key = p;
  auto bad = [](const std::string& m) { return MakeError(ErrorCode::kInvalidArgument, m); };
  std::string sizes, concurrency;
  CLI::App app{"S3 over RDMA (soft fabric) against HTTP on the same server (bench/README.md)",
               "rdma_bench"};
  app.footer(kAbout);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--server-bin", o.server_bin, "start this rdmastor binary")->type_name("PATH");
  app.add_option("--endpoint", o.endpoint, "or use the server running there")->type_name("URL");
  app.add_option("--server-pid", o.server_pid, "with --endpoint: the server's process id")
      ->type_name("PID");
  app.add_option("--access-key", o.access_key)->type_name("K");
  app.add_option("--secret-key", o.secret_key)->type_name("S");
  app.add_option("--sizes-mib", sizes, "object sizes in MiB (default 1,8,64)")->type_name("LIST");
  app.add_option("--concurrency", concurrency, "client threads per cell (default 1,8,32)")
      ->type_name("LIST");
  app.add_option("--cell-s", o.cell_s, "no op starts later than this into a cell (default 1.0)")
      ->type_name("SECONDS");
  app.add_option("--markdown", o.markdown, "also write the table here")->type_name("FILE");
  app.add_option("--fabric", o.fabric, "how the RDMA cells move their payload (default soft)")
      ->check(CLI::IsMember({"soft", "verbs"}));
  app.add_option("--transport", o.transport, "dc: the server reaches the client's target; rc: "
                                              "the client's RC connection (default dc)")
      ->check(CLI::IsMember({"dc", "rc"}));
  app.add_option("--rc-port", o.rc_port, "with --endpoint and --transport rc: the server's "
                                          "MINIO_RDMA_RC_PORT")
      ->type_name("N")
      ->check(CLI::Range(1, 65535));
  if (auto why = cli11::ParseOrHelp(app, argc, argv)) return bad(*why);
  if (!sizes.empty() && !ParseList(sizes, &o.sizes_mib))
    return bad("--sizes-mib: comma-separated MiB counts");
  if (!concurrency.empty() && !ParseList(concurrency, &o.concurrency))
    return bad("--concurrency: comma-separated counts");
  if (!(o.cell_s > 0 && o.cell_s <= 600)) return bad("--cell-s: seconds in (0, 600]");
  if (o.server_bin.empty() == o.endpoint.empty())
    return bad("give exactly one of --server-bin and --endpoint");
  if (!o.endpoint.empty() && o.server_pid <= 0)
    return bad("--endpoint needs --server-pid (the server's CPU time is read from /proc)");
  if (!o.server_bin.empty()) {
    if (o.access_key.empty()) o.access_key = "rdmabench";
    if (o.secret_key.empty()) o.secret_key = "rdmabench-secret";
  }
  if (o.access_key.empty() || o.secret_key.empty())
    return bad("credentials: --access-key/--secret-key or MINIO_ROOT_USER/MINIO_ROOT_PASSWORD");
  return o;
}

// Server CPU time (user + system) in seconds.
Result<double> ServerCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  auto paren = stat.rfind(')');
  if (stat.empty() || paren == std::string::npos)
    return MakeError(ErrorCode::kInternalError,
                     "cannot read /proc/" + std::to_string(pid) + "/stat");
  // Fields after the command: state(3) ... utime(14) stime(15).
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int field = 3; field <= 15 && fields >> f; ++field) {
    if (field == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (field == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A counter's value from the server's node metrics (sum over its label sets); nullopt when the
// family is absent.
Result<std::optional<double>> ScrapeCounter(const client::S3ClientConfig& cfg,
                                            std::string_view name) {
  client::HttpClient http(cfg.host, cfg.port);
  client::HttpRequest req;
  req.target = "/minio/v2/metrics/node";
  auto r = http.Send(req);
  if (!r.ok()) return r.error();
  if (r->status != 200)
    return MakeError(ErrorCode::kInternalError,
                     "GET /minio/v2/metrics/node: HTTP " + std::to_string(r->status) +
                         " (the server needs MINIO_PROMETHEUS_AUTH_TYPE=public)");
  std::optional<double> sum;
  std::istringstream lines(r->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name, 0) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    auto space = line.rfind(' ');
    sum = sum.value_or(0) + std::strtod(line.c_str() + space + 1, nullptr);
  }
  return sum;
}

// ---- cells --------------------------------------------------------------------------------

enum class Op { kPut, kGet };
enum class Via { kRdma, kHttp };

struct Worker {
  std::unique_ptr<client::RdmaS3Client> client;
  char* buf = nullptr;
  size_t size = 0;
  ~Worker() {
    if (client && buf) client->Forget(buf, size);
    client.reset();
    if (buf) munmap(buf, size);
  }
};

struct CellResult {
  uint64_t ops = 0, bytes = 0;
  double seconds = 0, cpu_s = 0;
  std::optional<double> copied;  // bytes copied by the server during the cell (RDMA metric)
  std::string error;
  double MiBps() const { return seconds > 0 ? static_cast<double>(bytes) / kMiB / seconds : 0; }
  double CpuPerGiB() const { return bytes ? cpu_s / (static_cast<double>(bytes) / kGiB) : 0; }
};

constexpr std::string_view kCopiedMetric = "minio_api_rdma_copied_bytes_total";

class Bench {
 public:
  Bench(Options o, client::S3ClientConfig cfg, pid_t pid)
      : o_(std::move(o)), cfg_(std::move(cfg)), pid_(pid) {}

  int Run();

 private:
  struct Row {
    Op op;
    uint64_t size;
    int conc;
    CellResult rdma, http;
  };

  CellResult RunCell(Op op, Via via, std::vector<std::unique_ptr<Worker>>& workers,
                     const std::string& expect_etag);
  void PrintTable(FILE* out) const;

  Options o_;
  client::S3ClientConfig cfg_;
  pid_t pid_;
  std::string bucket_ = "rdma-bench";
  std::vector<Row> rows_;
  bool metric_seen_ = false;
};

CellResult Bench::RunCell(Op op, Via via, std::vector<std::unique_ptr<Worker>>& workers,
                          const std::string& expect_etag) {
  CellResult res;
  const int conc = static_cast<int>(workers.size());
  const uint64_t size = workers[0]->size;
  const std::string get_key = "obj-" + std::to_string(size);
  auto copied_before = ScrapeCounter(cfg_, kCopiedMetric);
  auto cpu_before = ServerCpuSeconds(pid_);
  if (!copied_before.ok() || !cpu_before.ok()) {
    res.error = !cpu_before.ok() ? cpu_before.error().message : copied_before.error().message;
    return res;
  }
  std::atomic<uint64_t> ops{0};
  std::vector<std::string> errors(static_cast<size_t>(conc));
  std::latch start(conc + 1);
  std::vector<std::thread> threads;
  auto t0 = std::chrono::steady_clock::now();
  auto deadline = t0;
  for (int t = 0; t < conc; ++t) {
    threads.emplace_back([&, t] {
      Worker& w = *workers[static_cast<size_t>(t)];
      std::string put_key = "put-" + std::to_string(size) + "-" + std::to_string(t);
      start.arrive_and_wait();
      // Bounded: no op starts after the deadline; every thread does at least one.
      for (uint64_t n = 0; n == 0 || std::chrono::steady_clock::now() < deadline; ++n) {
        std::string err;
        if (op == Op::kPut) {
          std::string etag;
          if (via == Via::kRdma) {
            auto r = w.client->Put(bucket_, put_key, w.buf, size);
            if (!r.ok())
              err = r.error().message;
            else if (r->transport != client::Transport::kRdma)
              err = "PUT went over HTTP";
            else
              etag = r->etag;
          } else {
            auto r = w.client->http().PutObject(bucket_, put_key, std::string_view(w.buf, size));
            if (!r.ok())
              err = r.error().message;
            else
              etag = r->etag;
          }
          if (err.empty() && etag != expect_etag)
            err = "PUT ETag " + etag + " != MD5 of the buffer " + expect_etag;
        } else {
          if (via == Via::kRdma) {
            auto r = w.client->Get(bucket_, get_key, w.buf, size);
            if (!r.ok())
              err = r.error().message;
            else if (r->transport != client::Transport::kRdma || r->bytes != size)
              err = "GET did not move the object over RDMA";
          } else {
            auto r = w.client->http().GetObjectInto(bucket_, get_key, std::nullopt, w.buf, size);
            if (!r.ok())
              err = r.error().message;
            else if (r->bytes != size)
              err = "short GET";
          }
        }
        if (!err.empty()) {
          errors[static_cast<size_t>(t)] = err;
          return;
        }
        ops.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  t0 = std::chrono::steady_clock::now();
  deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(o_.cell_s));
  start.arrive_and_wait();
  for (auto& th : threads) th.join();
  auto t1 = std::chrono::steady_clock::now();
  auto cpu_after = ServerCpuSeconds(pid_);
  auto copied_after = ScrapeCounter(cfg_, kCopiedMetric);
  for (const auto& e : errors)
    if (!e.empty() && res.error.empty()) res.error = e;
  if (!cpu_after.ok()) res.error = cpu_after.error().message;
  if (!copied_after.ok()) res.error = copied_after.error().message;
  if (!res.error.empty()) return res;
  res.ops = ops.load();
  res.bytes = res.ops * size;
  res.seconds = std::chrono::duration<double>(t1 - t0).count();
  res.cpu_s = *cpu_after - *cpu_before;
  if (*copied_before && *copied_after) {
    metric_seen_ = true;
    res.copied = **copied_after - **copied_before;
  }
  return res;
}

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

void Bench::PrintTable(FILE* out) const {
  std::fprintf(out,
               "| op | size | conc | RDMA MiB/s | HTTP MiB/s | RDMA/HTTP | server CPU s/GiB RDMA "
               "| server CPU s/GiB HTTP | copies/byte RDMA |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows_) {
    auto cell = [](const CellResult& c, const std::string& v) {
      return c.error.empty() ? v : std::string("FAILED");
    };
    std::string copies = r.rdma.copied && r.rdma.bytes
                             ? Fmt("%.3f", *r.rdma.copied / static_cast<double>(r.rdma.bytes))
                             : "n/a";
    std::string ratio = r.rdma.error.empty() && r.http.error.empty() && r.http.MiBps() > 0
                            ? Fmt("%.2f", r.rdma.MiBps() / r.http.MiBps())
                            : "-";
    std::fprintf(out, "| %s | %" PRIu64 " MiB | %d | %s | %s | %s | %s | %s | %s |\n",
                 r.op == Op::kPut ? "PUT" : "GET", r.size / kMiB, r.conc,
                 cell(r.rdma, Fmt("%.0f", r.rdma.MiBps())).c_str(),
                 cell(r.http, Fmt("%.0f", r.http.MiBps())).c_str(), ratio.c_str(),
                 cell(r.rdma, Fmt("%.2f", r.rdma.CpuPerGiB())).c_str(),
                 cell(r.http, Fmt("%.2f", r.http.CpuPerGiB())).c_str(),
                 cell(r.rdma, copies).c_str());
  }
}

std::string Md5Etag(const char* p, size_t n) {
  auto h = hash::NewHasher(hash::Algo::kMD5);
  h->Update(p, n);
  return "\"" + hash::HexEncode(h->Final()) + "\"";
}

int Bench::Run() {
  auto begin = std::chrono::steady_clock::now();
  {
    client::S3Client s3(cfg_);
    auto st = s3.CreateBucket(bucket_);
    if (!st.ok() && st.error().code != ErrorCode::kBucketAlreadyOwnedByYou) {
      std::fprintf(stderr, "rdma_bench: create bucket: %s\n", st.error().message.c_str());
      return 1;
    }
  }
  bool failed = false;
  for (uint64_t mib : o_.sizes_mib) {
    const size_t size = mib * kMiB;
    // The object content: a deterministic pattern; every GET must return exactly it.
    std::vector<char> content(size);
    uint64_t x = 0x9e3779b97f4a7c15ULL * (mib + 1);
    for (size_t i = 0; i + 8 <= size; i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(content.data() + i, &x, 8);
    }
    const std::string etag = Md5Etag(content.data(), size);
    {
      client::S3Client s3(cfg_);
      auto put = s3.PutObject(bucket_, "obj-" + std::to_string(size),
                              std::string_view(content.data(), size));
      if (!put.ok() || put->etag != etag) {
        std::fprintf(stderr, "rdma_bench: seeding the %" PRIu64 " MiB object failed: %s\n", mib,
                     put.ok() ? "wrong ETag" : put.error().message.c_str());
        return 1;
      }
    }
    for (int conc : o_.concurrency) {
      std::vector<std::unique_ptr<Worker>> workers;
      for (int t = 0; t < conc; ++t) {
        auto w = std::make_unique<Worker>();
        client::RdmaClientConfig rc;
        rc.s3 = cfg_;
        if (o_.fabric == "verbs") rc.fabric = client::ClientFabric::kVerbs;
        if (o_.transport == "rc") rc.transport = client::RdmaTransport::kRc;
        if (o_.rc_port) rc.rc_port = o_.rc_port;
        auto c = client::RdmaS3Client::Create(rc);
        if (!c.ok()) {
          std::fprintf(stderr, "rdma_bench: client: %s\n", c.error().message.c_str());
          return 1;
        }
        w->client = std::move(c).value();
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
          std::fprintf(stderr, "rdma_bench: cannot map %" PRIu64 " MiB\n", mib);
          return 1;
        }
        w->buf = static_cast<char*>(p);
        w->size = size;
        std::memcpy(w->buf, content.data(), size);
        workers.push_back(std::move(w));
      }
      for (Op op : {Op::kPut, Op::kGet}) {
        Row row{op, size, conc, {}, {}};
        // RDMA first, then HTTP, back to back against the same server.
        for (Via via : {Via::kRdma, Via::kHttp}) {
          if (op == Op::kGet)
            for (auto& w : workers) std::memset(w->buf, 0, size);  // GET must fill it
          CellResult r = RunCell(op, via, workers, etag);
          if (r.error.empty() && op == Op::kGet) {
            for (auto& w : workers)
              if (std::memcmp(w->buf, content.data(), size) != 0) {
                r.error = "GET buffer differs from the object";
                break;
              }
          }
          if (!r.error.empty()) {
            failed = true;
            std::fprintf(stderr, "rdma_bench: %s %s %" PRIu64 " MiB x%d: %s\n",
                         op == Op::kPut ? "PUT" : "GET", via == Via::kRdma ? "rdma" : "http", mib,
                         conc, r.error.c_str());
          } else {
            std::fprintf(stderr,
                         "%-3s %-4s %3" PRIu64 " MiB x%-2d  %4" PRIu64
                         " ops  %7.0f MiB/s  server CPU %.2f s/GiB\n",
                         op == Op::kPut ? "PUT" : "GET", via == Via::kRdma ? "rdma" : "http", mib,
                         conc, r.ops, r.MiBps(), r.CpuPerGiB());
          }
          (via == Via::kRdma ? row.rdma : row.http) = std::move(r);
        }
        rows_.push_back(std::move(row));
      }
    }
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  PrintTable(stdout);
  std::printf(
      "\nRDMA = S3 over RDMA, %s fabric%s, transport %s; HTTP = same requests with "
      "the payload in the HTTP body. copies/byte from %s%s. Run time %.0f s.\n",
      o_.fabric.c_str(), o_.fabric == "soft" ? " (loopback TCP)" : " (the NIC)",
      o_.transport == "rc" ? "RC (one persistent connection per client)"
                           : (o_.fabric == "verbs" ? "DC" : "server-dialled"),
      std::string(kCopiedMetric).c_str(),
      metric_seen_ ? "" : " (ABSENT from /minio/v2/metrics/node)", total);
  if (!o_.markdown.empty()) {
    FILE* f = std::fopen(o_.markdown.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "rdma_bench: cannot write %s\n", o_.markdown.c_str());
      return 1;
    }
    PrintTable(f);
    std::fclose(f);
  }
  return failed || !metric_seen_ ? 1 : 0;
}

}  // namespace
}  // namespace rdmastor::bench

int main(int argc, char** argv) {
  using namespace rdmastor;
  auto opts = bench::ParseArgs(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "rdma_bench: %s\n(rdma_bench --help for every flag)\n",
                 opts.error().message.c_str());
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  // The server under test: started here on a free loopback port with a temporary drive, or given.
  testing::ServerProcess launched;
  std::string endpoint = opts->endpoint;
  pid_t pid = opts->server_pid;
  if (!opts->server_bin.empty()) {
    testing::ServerProcess::LaunchOptions launch;
    launch.binary = opts->server_bin;
    launch.user = opts->access_key;
    launch.password = opts->secret_key;
    if (opts->transport == "rc" && !opts->rc_port) opts->rc_port = testing::FreePort();
    launch.env = {{"MINIO_RDMA_FABRIC", opts->fabric},
                  {"MINIO_PROMETHEUS_AUTH_TYPE", "public"},
                  {"MINIO_RDMA_RC_PORT", std::to_string(opts->rc_port ? opts->rc_port : 9100)}};
    if (!launched.StartWith(launch)) {
      std::fprintf(stderr, "rdma_bench: the server did not come up; its log:\n%s",
                   launched.log().c_str());
      return 1;
    }
    endpoint = launched.endpoint();
    pid = launched.pid();
  }
  auto cfg = client::S3ConfigFromEndpoint(endpoint, opts->access_key, opts->secret_key);
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdma_bench: %s\n", cfg.error().message.c_str());
    return 2;
  }
  cfg->max_attempts = 1;  // a refusal is counted as an error, not hidden by a retry
  bench::Bench b(*opts, *cfg, pid);
  const int rc = b.Run();
  launched.Stop(std::chrono::seconds(10));  // a clean shutdown when it was started here
  return rc;
}
