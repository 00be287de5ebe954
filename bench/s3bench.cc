// s3bench: PUT/GET throughput of an S3 endpoint, against two references measured in the same run
// with the same concurrency and op count: reading the same bytes from a local file (pread; the
// machine's ceiling) and GETting them from nginx over loopback with the same HTTP client code.
// Every operation is verified (status, byte count, ETag = MD5 for S3, sampled or full content);
// any failure stops the run with a non-zero exit. See bench/README.md.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "common/cli11_support.h"
#include "common/hash.h"
#include "common/result.h"

namespace rdmastor::bench {
namespace {

using client::HttpClient;
using client::S3Client;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
// Bodies move in pieces of at most this size (PUT sends views of the shared pattern, GET and
// pread receive into per-thread buffers of this size), so memory does not grow with size * conc.
constexpr size_t kPiece = 1 * kMiB;

// ----------------------------------------------------------------------------------------------
// Options

struct Options {
  std::string endpoint;
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  std::vector<uint64_t> sizes = {4 * kKiB, 1 * kMiB, 64 * kMiB};
  std::vector<int> concurrency = {1, 8, 32};
  double duration_s = 3.0;            // per phase: no op starts after this
  std::optional<double> max_phase_s;  // hard limit: in-flight ops are cut; default max(2d, 60)
  std::optional<uint64_t> ops;        // per phase; default: see DefaultOps
  std::string ref_file_dir;
  std::string nginx_url;
  std::string json_file;
  std::string bucket;
  bool verify_full = false;
  int io_timeout_s = 30;
  std::vector<std::string> endpoints;  // --endpoint A,B,...: thread t uses endpoints[t % n]
  std::vector<int> server_pids;        // CPU time (utime+stime) per PUT/GET phase
  bool file_ref = true;                // --no-file-ref: no local-file phase
  bool syncs = false;                  // --syncs: storage syncs per PUT from the server metric
  // --sse: server-side encryption modes measured per cell: "none", "s3" (SSE-S3), "c" (SSE-C).
  std::vector<std::string> sse = {"none"};
  // --rounds: the GET phase (and, where it runs, the nginx phase right after it) is repeated this
  // many times; the table shows the median round and the median of the per-round GET/nginx ratios.
  int rounds = 1;
};

constexpr const char* kAbout = R"(For each size and concurrency: a PUT phase (one connection per thread), a GET phase over the
objects written, a local-file phase (pread of the same bytes) and, with --nginx-url, a GET phase
against nginx. Each phase is bounded by an op count (--ops, default
max(conc, min(64*conc, 256MiB/size))) and a time limit (--duration-s, default 3: no op
starts later); ops still running at --max-phase-s (default max(2 x duration, 60)) are cut and
count only the bytes they moved.
--ref-file-dir: where the reference files s3bench-<bytes>.bin are written (nginx must serve
this directory at the --nginx-url prefix); default a temporary directory.
--endpoint may list several endpoints (comma-separated, e.g. the nodes of a cluster): thread t
of a phase uses endpoint t mod n.
--server-pids: server processes whose CPU time (utime+stime, /proc/PID/stat) is measured over
each PUT and GET phase (JSON: server_cpu_s per pid; table: CPU s/GiB summed over them).
--no-file-ref: skip the local-file reference phase (no reference file is written).
--syncs: read rdmastor_storage_syncs_total (every endpoint's /minio/v2/metrics/node, which needs
MINIO_PROMETHEUS_AUTH_TYPE=public) before and after each PUT phase; the table shows syncs per PUT.
--sse: server-side encryption modes, each measured for every size and concurrency in the same run:
none (plain), s3 (x-amz-server-side-encryption: AES256; the server needs MINIO_KMS_SECRET_KEY),
c (SSE-C, a fixed customer key on every PUT and GET; over plain HTTP the server needs
RDMASTOR_SSE_C_ALLOW_HTTP=on). SSE-C ETags are not MD5s, so they are not checked. The table adds
each mode's throughput relative to none.
--rounds N: the GET phase runs N times over the same objects, each time followed by the nginx
phase (GET, nginx, GET, nginx, ...), so that both see the same moments of a noisy machine. The
table shows the round with the median GET (and nginx) rate and, as GET/nginx, the median of the
per-round ratios; every round is printed as it ends and kept in the JSON.
--access-key/--secret-key default to $MINIO_ROOT_USER/$MINIO_ROOT_PASSWORD.
Exit status: 0 all verified, 1 an operation failed or returned wrong data, 2 bad usage.
)";

std::optional<uint64_t> ParseSize(std::string_view s) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string unit(s.substr(i));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kib" || unit == "k")
    mult = kKiB;
  else if (unit == "mib" || unit == "m")
    mult = kMiB;
  else if (unit == "gib" || unit == "g")
    mult = kGiB;
  else if (unit == "kb")
    mult = 1000;
  else if (unit == "mb")
    mult = 1000 * 1000;
  else if (unit == "gb")
    mult = 1000 * 1000 * 1000;
  else
    return std::nullopt;
  if (n > UINT64_MAX / mult) return std::nullopt;
  return n * mult;
}

// A plain count (digits only, no unit) from 1 to max.
std::optional<uint64_t> ParseCount(std::string_view s, uint64_t max) {
  if (s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  auto n = ParseSize(s);
  if (!n || *n == 0 || *n > max) return std::nullopt;
  return n;
}

std::string FormatSize(uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "KiB";
  return std::to_string(bytes) + "B";
}

std::vector<std::string> SplitComma(std::string_view s) {
  std::vector<std::string> out;
  while (true) {
    size_t c = s.find(',');
    out.emplace_back(s.substr(0, c));
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
  }
  return out;
}

Result<Options> ParseArgs(int argc, char** argv) {
  Options o;
  if (const char* v = std::getenv("MINIO_ROOT_USER")) o.access_key = v;
  if (const char* v = std::getenv("MINIO_ROOT_PASSWORD")) o.secret_key = v;
  auto bad = [](std::string msg) { return MakeError(ErrorCode::kInvalidArgument, std::move(msg)); };
  CLI::App app{"S3 throughput: PUT, GET, a local-file reference and nginx (bench/README.md)",
               "s3bench"};
  app.footer(kAbout);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  bool no_file_ref = false;
  app.add_flag("--no-file-ref", no_file_ref, "skip the local-file reference phase");
  app.add_flag("--syncs", o.syncs, "storage syncs per PUT from the server's metrics");
  // The flags with a value, checked below in the order given (a repeated flag: the last counts).
  for (auto [name, type] : {std::pair{"--endpoint", "URL[,URL...]"}, {"--access-key", "KEY"},
                            {"--secret-key", "SECRET"}, {"--region", "REGION"},
                            {"--sizes", "4KiB,1MiB,64MiB"}, {"--concurrency", "1,8,32"},
                            {"--duration-s", "SECONDS"}, {"--max-phase-s", "SECONDS"},
                            {"--ops", "N"}, {"--ref-file-dir", "DIR"},
                            {"--nginx-url", "http://HOST:PORT/PREFIX"}, {"--json", "FILE"},
                            {"--bucket", "NAME"}, {"--verify", "sample|full"},
                            {"--io-timeout-s", "S"}, {"--server-pids", "PID,..."},
                            {"--sse", "none,s3,c"}, {"--rounds", "N"}})
    app.add_option(name)->type_name(type);
  if (auto why = cli11::ParseOrHelp(app, argc, argv)) return bad(*why);
  o.file_ref = !no_file_ref;
  for (const CLI::Option* opt : app.parse_order()) {
    if (opt->get_type_size() == 0) continue;  // a flag
    const std::string arg = opt->get_name();
    const std::string& value = opt->results().back();
    if (arg == "--endpoint") {
      o.endpoint = value;
      o.endpoints = SplitComma(value);
      for (const auto& e : o.endpoints) {
        if (e.empty()) return bad("--endpoint: empty item in '" + std::string(value) + "'");
      }
    } else if (arg == "--server-pids") {
      o.server_pids.clear();
      for (const auto& item : SplitComma(value)) {
        char* end = nullptr;
        long pid = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || pid <= 0 || pid > 1 << 30) {
          return bad("--server-pids: '" + item + "' is not a process id");
        }
        o.server_pids.push_back(static_cast<int>(pid));
      }
    } else if (arg == "--access-key") {
      o.access_key = value;
    } else if (arg == "--secret-key") {
      o.secret_key = value;
    } else if (arg == "--region") {
      o.region = value;
    } else if (arg == "--sizes") {
      o.sizes.clear();
      for (const auto& item : SplitComma(value)) {
        auto n = ParseSize(item);
        if (!n || *n == 0 || *n > 64 * kGiB) {
          return bad("--sizes: '" + item + "' is not a size between 1B and 64GiB (e.g. 4KiB)");
        }
        o.sizes.push_back(*n);
      }
    } else if (arg == "--concurrency") {
      o.concurrency.clear();
      for (const auto& item : SplitComma(value)) {
        auto n = ParseCount(item, 1024);
        if (!n) return bad("--concurrency: '" + item + "' is not a thread count 1-1024");
        o.concurrency.push_back(static_cast<int>(*n));
      }
    } else if (arg == "--duration-s") {
      char* end = nullptr;
      std::string v(value);
      o.duration_s = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.duration_s > 0) || o.duration_s > 3600) {
        return bad("--duration-s: '" + v + "' is not a number of seconds in (0, 3600]");
      }
    } else if (arg == "--max-phase-s") {
      char* end = nullptr;
      std::string v(value);
      double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(d > 0) || d > 7200) {
        return bad("--max-phase-s: '" + v + "' is not a number of seconds in (0, 7200]");
      }
      o.max_phase_s = d;
    } else if (arg == "--ops") {
      auto n = ParseCount(value, UINT64_MAX);
      if (!n) return bad("--ops: '" + std::string(value) + "' is not a positive count");
      o.ops = *n;
    } else if (arg == "--ref-file-dir") {
      o.ref_file_dir = value;
    } else if (arg == "--nginx-url") {
      o.nginx_url = value;
    } else if (arg == "--json") {
      o.json_file = value;
    } else if (arg == "--bucket") {
      o.bucket = value;
    } else if (arg == "--verify") {
      if (value != "sample" && value != "full") return bad("--verify: sample or full");
      o.verify_full = value == "full";
    } else if (arg == "--sse") {
      o.sse = SplitComma(value);
      for (const auto& m : o.sse)
        if (m != "none" && m != "s3" && m != "c") return bad("--sse: none, s3 or c");
      if (o.sse.empty()) return bad("--sse: none, s3 or c");
    } else if (arg == "--rounds") {
      auto n = ParseCount(value, 100);
      if (!n) return bad("--rounds: '" + std::string(value) + "' is not a count 1-100");
      o.rounds = static_cast<int>(*n);
    } else if (arg == "--io-timeout-s") {
      auto n = ParseSize(value);
      if (!n || *n == 0 || *n > 3600) return bad("--io-timeout-s: 1-3600");
      o.io_timeout_s = static_cast<int>(*n);
    }
  }
  if (o.endpoint.empty()) return bad("--endpoint is required");
  if (o.access_key.empty() || o.secret_key.empty()) {
    return bad("--access-key and --secret-key are required (or MINIO_ROOT_USER/PASSWORD)");
  }
  if (!o.nginx_url.empty() && o.ref_file_dir.empty()) {
    return bad(
        "--nginx-url needs --ref-file-dir: the directory nginx serves at that URL, where "
        "s3bench writes the reference files");
  }
  if (o.sizes.empty() || o.concurrency.empty()) return bad("empty --sizes or --concurrency");
  return o;
}

uint64_t DefaultOps(uint64_t size, int conc) {
  uint64_t c = static_cast<uint64_t>(conc);
  return std::max<uint64_t>(c,
                            std::min<uint64_t>(64 * c, std::max<uint64_t>(1, 256 * kMiB / size)));
}

// ----------------------------------------------------------------------------------------------
// Content: every object is a window of one shared pseudo-random pattern, so PUT bodies are sent
// straight from it and any received piece can be checked at its absolute offset without keeping
// objects in memory. A size has a few variants (different windows) with precomputed MD5s, so
// every PUT's ETag is checked and a GET that returns another object's bytes is caught.

class Pattern {
 public:
  // Period not a multiple of the piece size, so consecutive pieces never repeat.
  static constexpr size_t kPeriod = kMiB + 4099;

  Pattern() : data_(kPeriod + kPiece) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < kPeriod; i += 8) {
      // splitmix64
      x += 0x9e3779b97f4a7c15ULL;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      std::memcpy(data_.data() + i, &z, std::min<size_t>(8, kPeriod - i));
    }
    std::memcpy(data_.data() + kPeriod, data_.data(), kPiece);
  }

  // n <= kPiece bytes of the stream that starts at `offset`, from position pos.
  const char* At(uint64_t offset, uint64_t pos) const {
    return data_.data() + (offset + pos) % kPeriod;
  }

 private:
  std::vector<char> data_;
};

struct Variant {
  uint64_t offset = 0;
  std::string md5_hex;
};

struct SizeContent {
  uint64_t size = 0;
  std::vector<Variant> variants;
};

SizeContent MakeContent(const Pattern& pattern, uint64_t size) {
  SizeContent c;
  c.size = size;
  size_t n = static_cast<size_t>(std::clamp<uint64_t>(256 * kMiB / size, 2, 8));
  c.variants.resize(n);
  std::vector<std::thread> threads;
  for (size_t v = 0; v < n; ++v) {
    c.variants[v].offset = (v * 7919 * 131) % Pattern::kPeriod;
    threads.emplace_back([&, v] {
      auto h = hash::NewHasher(hash::Algo::kMD5);
      for (uint64_t pos = 0; pos < size; pos += kPiece) {
        h->Update(pattern.At(c.variants[v].offset, pos), std::min<uint64_t>(kPiece, size - pos));
      }
      c.variants[v].md5_hex = hash::HexEncode(h->Final());
    });
    if (threads.size() == 2) {  // bounded: the machine may have 2 cores
      for (auto& t : threads) t.join();
      threads.clear();
    }
  }
  for (auto& t : threads) t.join();
  return c;
}

// Checks bytes received at absolute position pos of a stream with the given pattern offset.
bool ContentMatches(const Pattern& pattern, uint64_t offset, uint64_t pos, const char* data,
                    size_t n, bool full) {
  if (full) {
    for (size_t done = 0; done < n; done += kPiece) {
      size_t len = std::min<size_t>(kPiece, n - done);
      if (std::memcmp(data + done, pattern.At(offset, pos + done), len) != 0) return false;
    }
    return true;
  }
  size_t len = std::min<size_t>(n, 64);
  if (std::memcmp(data, pattern.At(offset, pos), len) != 0) return false;
  return std::memcmp(data + n - len, pattern.At(offset, pos + n - len), len) == 0;
}

std::string StripQuotes(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

// ----------------------------------------------------------------------------------------------
// Phases

struct PhaseResult {
  bool ran = false;
  uint64_t ops = 0;      // completed
  uint64_t started = 0;  // indices handed out: 0..started-1 were attempted
  uint64_t target_ops = 0;
  uint64_t bytes = 0;    // completed ops' bytes plus the part cut ops moved
  uint64_t cut_ops = 0;  // in flight at the hard limit and abandoned
  double seconds = 0;
  bool time_limited = false;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  std::optional<std::string> error;

  std::vector<double> server_cpu_s;  // per --server-pids entry, over the phase
  double syncs = -1;                 // --syncs: storage syncs on all endpoints over the phase

  double MiBps() const { return seconds > 0 ? static_cast<double>(bytes) / kMiB / seconds : 0; }
  double OpsPerSec() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  // Server CPU seconds (all --server-pids) per GiB moved; < 0 when not measured.
  double CpuPerGiB() const {
    if (server_cpu_s.empty() || bytes == 0) return -1;
    double sum = 0;
    for (double v : server_cpu_s) sum += v;
    return sum / (static_cast<double>(bytes) / kGiB);
  }
};

// utime + stime of a process in seconds (-1 when it cannot be read).
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  // Fields after the command: state(3) ... utime(14) stime(15).
  size_t pos = close + 2;
  unsigned long long utime = 0, stime = 0;
  for (int field = 3; field <= 15 && pos < stat.size(); ++field) {
    size_t end = stat.find(' ', pos);
    if (end == std::string::npos) end = stat.size();
    if (field == 14) utime = std::strtoull(stat.c_str() + pos, nullptr, 10);
    if (field == 15) stime = std::strtoull(stat.c_str() + pos, nullptr, 10);
    pos = end + 1;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Sum of rdmastor_storage_syncs_total over the endpoints' node metrics; -1 when unreadable.
double ScrapeSyncs(const std::vector<client::S3ClientConfig>& endpoints) {
  double sum = 0;
  for (const auto& e : endpoints) {
    client::HttpClient http(e.host, e.port, e.http);
    client::HttpRequest req;
    req.target = "/minio/v2/metrics/node";
    auto r = http.Send(req);
    if (!r.ok() || !r->success()) return -1;
    bool found = false;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("rdmastor_storage_syncs_total")) continue;
      size_t sp = line.rfind(' ');
      if (sp == std::string::npos) continue;
      sum += std::strtod(line.c_str() + sp + 1, nullptr);
      found = true;
    }
    if (!found) return -1;
  }
  return sum;
}

// Runs `phase` and records the CPU time each pid used meanwhile into the result.
template <typename F>
PhaseResult WithServerCpu(const std::vector<int>& pids, F&& phase) {
  std::vector<double> before;
  for (int pid : pids) before.push_back(ProcessCpuSeconds(pid));
  PhaseResult r = phase();
  for (size_t i = 0; i < pids.size(); ++i) {
    double after = ProcessCpuSeconds(pids[i]);
    r.server_cpu_s.push_back(after >= 0 && before[i] >= 0 ? after - before[i] : -1);
  }
  return r;
}

// What an op sees of the phase: the hard deadline, checked between pieces of a transfer. An op
// that passes it stops (returns any error) after setting `cut` and the bytes it moved.
struct OpCtx {
  Clock::time_point hard_deadline;
  bool cut = false;
  uint64_t partial_bytes = 0;

  bool Expired() const { return Clock::now() >= hard_deadline; }
  Error Cut(uint64_t moved) {
    cut = true;
    partial_bytes = moved;
    return MakeError(ErrorCode::kRequestTimeout, "cut at the phase's hard time limit");
  }
};

// Runs op(thread, index, ctx) for indices 0.. on `conc` threads until `target_ops` were started,
// the time limit passed (checked before each op) or an op failed. Ops in flight at the time limit
// finish, unless they are still running at the hard limit: those are cut and only the bytes they
// moved are counted. op returns the bytes it moved or an error.
using OpFn = std::function<Result<uint64_t>(int thread, uint64_t index, OpCtx& ctx)>;

PhaseResult RunPhase(int conc, uint64_t target_ops, double limit_s, double hard_limit_s,
                     const OpFn& op) {
  PhaseResult r;
  r.ran = true;
  r.target_ops = target_ops;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> limited{false};
  std::atomic<uint64_t> done_ops{0}, done_bytes{0}, cut_ops{0};
  std::mutex mu;
  std::vector<std::vector<double>> lat(static_cast<size_t>(conc));
  std::latch start(1);
  Clock::time_point t0;
  Clock::time_point deadline;
  Clock::time_point hard_deadline;

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(conc));
  for (int t = 0; t < conc; ++t) {
    threads.emplace_back([&, t] {
      lat[static_cast<size_t>(t)].reserve(static_cast<size_t>(target_ops / conc + 2));
      start.wait();
      while (!stop.load(std::memory_order_relaxed)) {
        auto begin = Clock::now();
        if (begin >= deadline) {
          limited = true;
          break;
        }
        uint64_t i = next.fetch_add(1);
        if (i >= target_ops) break;
        OpCtx ctx{hard_deadline};
        auto res = op(t, i, ctx);
        auto end = Clock::now();
        if (ctx.cut) {
          cut_ops.fetch_add(1);
          done_bytes.fetch_add(ctx.partial_bytes);
          limited = true;
          continue;  // the next iteration sees the deadline and stops
        }
        if (!res.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (!r.error) r.error = res.error().message;
          stop = true;
          break;
        }
        done_ops.fetch_add(1);
        done_bytes.fetch_add(*res);
        lat[static_cast<size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(end - begin).count());
      }
    });
  }
  t0 = Clock::now();
  deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
  hard_deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(limit_s, hard_limit_s)));
  start.count_down();
  for (auto& th : threads) th.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.ops = done_ops;
  r.started = std::min(next.load(), target_ops);
  r.bytes = done_bytes;
  r.cut_ops = cut_ops;
  r.time_limited = limited && r.ops < target_ops;
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  if (!all.empty()) {
    std::sort(all.begin(), all.end());
    r.p50_ms = all[all.size() / 2];
    r.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    r.max_ms = all.back();
  }
  return r;
}

// ----------------------------------------------------------------------------------------------
// Reference files

std::string RefFileName(uint64_t size) { return "s3bench-" + std::to_string(size) + ".bin"; }

Status WriteRefFile(const std::string& dir, const Pattern& pattern, const SizeContent& content) {
  std::string path = dir + "/" + RefFileName(content.size);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return MakeError(ErrorCode::kInternalError, "create " + tmp + ": " + std::strerror(errno));
  }
  uint64_t offset = content.variants[0].offset;
  for (uint64_t pos = 0; pos < content.size;) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(kPiece, content.size - pos));
    ssize_t n = ::pwrite(fd, pattern.At(offset, pos), len, static_cast<off_t>(pos));
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      return MakeError(ErrorCode::kInternalError, "write " + tmp + ": " + std::strerror(err));
    }
    pos += static_cast<uint64_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return MakeError(ErrorCode::kInternalError, "write " + path + ": " + std::strerror(errno));
  }
  return {};
}

// ----------------------------------------------------------------------------------------------
// The run

// The headers of an object request in an --sse mode (a fixed SSE-C key: the bench measures
// cost, not key handling).
client::HeaderList SseHeaders(const std::string& mode) {
  if (mode == "s3") return {{"x-amz-server-side-encryption", "AES256"}};
  if (mode != "c") return {};
  const std::string key(32, 'k');
  return {{"x-amz-server-side-encryption-customer-algorithm", "AES256"},
          {"x-amz-server-side-encryption-customer-key", hash::Base64Encode(key)},
          {"x-amz-server-side-encryption-customer-key-md5",
           hash::Base64Encode(hash::Digest(hash::Algo::kMD5, key))}};
}

struct CellResult {
  uint64_t size = 0;
  int conc = 0;
  std::string sse = "none";
  PhaseResult put, get, file, nginx;  // get, nginx: the median round (--rounds)
  std::vector<PhaseResult> get_rounds, nginx_rounds;
  uint64_t reconnects = 0;  // connections opened beyond one per thread (keep-alive broken)

  // GET/nginx per round (paired: each nginx round ran right after its GET round).
  std::vector<double> GetOverNginxRounds() const {
    std::vector<double> out;
    for (size_t r = 0; r < get_rounds.size() && r < nginx_rounds.size(); ++r) {
      if (get_rounds[r].ran && nginx_rounds[r].ran && nginx_rounds[r].MiBps() > 0)
        out.push_back(get_rounds[r].MiBps() / nginx_rounds[r].MiBps());
    }
    return out;
  }
};

// The median of values (the lower middle one of an even count); NaN for none.
double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// The round with the median rate (the lower middle one of an even count).
PhaseResult MedianRound(const std::vector<PhaseResult>& rounds) {
  std::vector<size_t> order(rounds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return rounds[a].MiBps() < rounds[b].MiBps(); });
  return rounds[order[(order.size() - 1) / 2]];
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Run();

 private:
  Status Setup();
  // `refs`: also run the reference phases (file, nginx); once per size and concurrency.
  Status RunCell(const SizeContent& content, int conc, bool refs, CellResult* cell);
  void Cleanup();
  void PrintProgress(const CellResult& cell, std::string_view phase, const PhaseResult& p) const;
  void PrintTable() const;
  Status WriteJson() const;

  double HardLimit() const {
    return o_.max_phase_s ? *o_.max_phase_s : std::max(2 * o_.duration_s, 60.0);
  }

  // The client configuration for thread t (endpoint t mod the number of endpoints).
  client::S3ClientConfig S3Config(size_t t = 0) const {
    client::S3ClientConfig c = s3_configs_[t % s3_configs_.size()];
    c.http.read_buffer_size = kPiece;
    c.http.io_timeout = std::chrono::seconds(o_.io_timeout_s);
    c.max_attempts = 1;  // a refusal is counted as an error, not hidden by a retry
    return c;
  }

  Options o_;
  Pattern pattern_;
  std::vector<client::S3ClientConfig> s3_configs_;
  std::optional<client::HttpUrl> nginx_;
  std::string ref_dir_;
  bool ref_dir_is_temp_ = false;
  std::vector<CellResult> cells_;
  std::vector<std::string> ref_files_written_;
  bool bucket_created_ = false;
  std::optional<std::string> failure_;
};

Status Bench::Setup() {
  for (const auto& endpoint : o_.endpoints) {
    auto cfg = client::S3ConfigFromEndpoint(endpoint, o_.access_key, o_.secret_key, o_.region);
    if (!cfg.ok()) return cfg.error();
    s3_configs_.push_back(*cfg);
  }
  if (!o_.nginx_url.empty()) {
    auto url = client::ParseHttpUrl(o_.nginx_url);
    if (!url.ok()) return url.error();
    nginx_ = *url;
  }
  if (o_.ref_file_dir.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string templ = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/s3bench-ref-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return MakeError(ErrorCode::kInternalError, "mkdtemp " + templ + ": " + std::strerror(errno));
    }
    ref_dir_ = templ;
    ref_dir_is_temp_ = true;
  } else {
    ref_dir_ = o_.ref_file_dir;
    std::error_code ec;
    std::filesystem::create_directories(ref_dir_, ec);
    if (ec) {
      return MakeError(ErrorCode::kInternalError,
                       "--ref-file-dir " + ref_dir_ + ": " + ec.message());
    }
  }
  if (o_.bucket.empty()) {
    o_.bucket = "s3bench-" + hash::RandomHex(6);
  }
  S3Client s3(S3Config());
  RS_RETURN_IF_ERROR(s3.CreateBucket(o_.bucket));
  bucket_created_ = true;
  return {};
}

void Bench::PrintProgress(const CellResult& cell, std::string_view phase,
                          const PhaseResult& p) const {
  std::fprintf(
      stderr,
      "  %-6s %7s c=%-3d %6" PRIu64 "/%-6" PRIu64
      " ops %9.1f MiB/s %9.1f ops/s  "
      "p50 %7.2f ms  p99 %7.2f ms  %5.2f s%s%s\n",
      std::string(phase).c_str(), FormatSize(cell.size).c_str(), cell.conc, p.ops, p.target_ops,
      p.MiBps(), p.OpsPerSec(), p.p50_ms, p.p99_ms, p.seconds,
      p.time_limited ? "  (time limit)" : "",
      p.cut_ops ? (" (" + std::to_string(p.cut_ops) + " cut at the hard limit)").c_str() : "");
}

Status Bench::RunCell(const SizeContent& content, int conc, bool refs, CellResult* cell) {
  const uint64_t size = content.size;
  const uint64_t ops = o_.ops ? *o_.ops : DefaultOps(size, conc);
  const bool full = o_.verify_full;
  const std::string prefix =
      "s3bench/" + FormatSize(size) + "/c" + std::to_string(conc) + "/" + cell->sse + "/";
  const client::HeaderList sse_headers = SseHeaders(cell->sse);
  const bool etag_is_md5 = cell->sse != "c";  // SSE-C ETags are not the body's MD5 (AWS)
  auto key_of = [&](uint64_t i) { return prefix + std::to_string(i); };
  auto variant_of = [&](uint64_t i) -> const Variant& {
    return content.variants[i % content.variants.size()];
  };

  // One client (connection) per thread, connected before the clock starts.
  std::vector<std::unique_ptr<S3Client>> clients;
  for (int t = 0; t < conc; ++t) {
    clients.push_back(std::make_unique<S3Client>(S3Config(static_cast<size_t>(t))));
    RS_RETURN_IF_ERROR(clients.back()->Connect());
  }

  // PUT.
  std::vector<uint8_t> stored(ops, 0);  // by index; each written by one thread, read after join
  const double syncs_before = o_.syncs ? ScrapeSyncs(s3_configs_) : -1;
  cell->put = WithServerCpu(o_.server_pids, [&] {
    return RunPhase(
        conc, ops, o_.duration_s, HardLimit(),
        [&](int t, uint64_t i, OpCtx& ctx) -> Result<uint64_t> {
          S3Client& s3 = *clients[static_cast<size_t>(t)];
          const Variant& v = variant_of(i);
          Result<client::PutObjectResult> put = MakeError(ErrorCode::kInternalError);
          if (size <= kPiece) {
            put = s3.PutObject(
                o_.bucket, key_of(i),
                std::string_view(pattern_.At(v.offset, 0), static_cast<size_t>(size)), sse_headers);
          } else {
            uint64_t pos = 0;
            put = s3.PutObject(
                o_.bucket, key_of(i), size,
                [&]() -> Result<std::string_view> {
                  if (pos > 0 && ctx.Expired()) return ctx.Cut(pos);
                  size_t len = static_cast<size_t>(std::min<uint64_t>(kPiece, size - pos));
                  std::string_view piece(pattern_.At(v.offset, pos), len);
                  pos += len;
                  return piece;
                },
                sse_headers);
          }
          if (!put.ok()) return put.error();
          if (etag_is_md5 && StripQuotes(put->etag) != v.md5_hex) {
            return MakeError(ErrorCode::kBadDigest, "PUT " + key_of(i) + ": ETag " + put->etag +
                                                        ", expected the body's MD5 \"" + v.md5_hex +
                                                        "\"");
          }
          stored[i] = 1;
          return size;
        });
  });
  if (o_.syncs) {
    const double after = ScrapeSyncs(s3_configs_);
    if (syncs_before >= 0 && after >= 0) cell->put.syncs = after - syncs_before;
  }
  PrintProgress(*cell, "PUT", cell->put);
  std::vector<uint64_t> written;
  for (uint64_t i = 0; i < ops; ++i)
    if (stored[i]) written.push_back(i);
  Status cell_status;
  if (cell->put.error) {
    cell_status = MakeError(ErrorCode::kInternalError, *cell->put.error);
  } else if (written.empty()) {
    std::fprintf(stderr,
                 "s3bench: warning: no PUT of %s at c=%d completed within --max-phase-s %.0f; "
                 "no GET phase for this cell (raise --max-phase-s)\n",
                 FormatSize(size).c_str(), conc, HardLimit());
  }

  // nginx: the same file over loopback HTTP with the same client code, connected before the first
  // GET round so that its rounds can alternate with the GET rounds.
  const bool nginx_rounds = refs && nginx_.has_value();
  std::vector<std::unique_ptr<HttpClient>> http;
  client::HttpRequest nginx_req;
  if (nginx_rounds) {
    client::HttpClientOptions hopt;
    hopt.read_buffer_size = kPiece;
    hopt.io_timeout = std::chrono::seconds(o_.io_timeout_s);
    for (int t = 0; t < conc; ++t) {
      http.push_back(std::make_unique<HttpClient>(nginx_->host, nginx_->port, hopt));
      RS_RETURN_IF_ERROR(http.back()->Connect());
    }
    nginx_req.method = "GET";
    nginx_req.target = nginx_->path + "/" + RefFileName(size);
  }
  const uint64_t nginx_offset = content.variants[0].offset;
  auto nginx_phase = [&] {
    return RunPhase(
        conc, ops, o_.duration_s, HardLimit(),
        [&](int t, uint64_t, OpCtx& ctx) -> Result<uint64_t> {
          uint64_t pos = 0;
          auto resp = http[static_cast<size_t>(t)]->Send(
              nginx_req, client::ResponseTarget::Sink([&](const char* data, size_t n) -> Status {
                if (pos + n > size || !ContentMatches(pattern_, nginx_offset, pos, data, n, full)) {
                  return MakeError(ErrorCode::kInternalError, "nginx GET " + nginx_req.target +
                                                                  ": wrong content at " +
                                                                  std::to_string(pos));
                }
                pos += n;
                if (pos < size && ctx.Expired()) return ctx.Cut(pos);
                return {};
              }));
          if (!resp.ok()) return resp.error();
          if (resp->status != 200) {
            return MakeError(ErrorCode::kInternalError,
                             "nginx GET " + nginx_req.target + ": HTTP " +
                                 std::to_string(resp->status) + " " + resp->reason +
                                 " (does nginx serve --ref-file-dir at " + o_.nginx_url + "?)");
          }
          if (pos != size) {
            return MakeError(ErrorCode::kIncompleteBody,
                             "nginx GET " + nginx_req.target + ": " + std::to_string(pos) +
                                 " bytes, expected " + std::to_string(size));
          }
          return size;
        });
  };
  // GET, over the objects written.
  auto get_phase = [&] {
    return WithServerCpu(o_.server_pids, [&] {
      return RunPhase(
          conc, ops, o_.duration_s, HardLimit(),
          [&](int t, uint64_t i, OpCtx& ctx) -> Result<uint64_t> {
            S3Client& s3 = *clients[static_cast<size_t>(t)];
            uint64_t obj = written[i % written.size()];
            const Variant& v = variant_of(obj);
            uint64_t pos = 0;
            std::string key = key_of(obj);
            client::BodySink sink = [&](const char* data, size_t n) -> Status {
              if (pos + n > size || !ContentMatches(pattern_, v.offset, pos, data, n, full)) {
                return MakeError(ErrorCode::kInternalError,
                                 "GET " + key + ": wrong content at byte " + std::to_string(pos));
              }
              pos += n;
              if (pos < size && ctx.Expired()) return ctx.Cut(pos);
              return {};
            };
            Result<client::GetObjectResult> get = MakeError(ErrorCode::kInternalError);
            if (cell->sse == "c") {
              // SSE-C: the key on the GET too (the client's GetObject sends no extra headers).
              client::S3Request req;
              req.bucket = o_.bucket;
              req.key = key;
              req.headers = sse_headers;
              auto resp = s3.Execute(req, client::ResponseTarget::Sink(sink));
              if (!resp.ok()) return resp.error();
              if (resp->status != 200) return client::S3ErrorFromResponse(*resp, "GET " + key);
              client::GetObjectResult g;
              g.status = resp->status;
              g.bytes = resp->body_bytes;
              if (const auto* e = resp->FindHeader("etag")) g.etag = *e;
              get = g;
            } else {
              get = s3.GetObject(o_.bucket, key, std::nullopt, sink);
            }
            if (!get.ok()) return get.error();
            if (get->bytes != size || pos != size) {
              return MakeError(ErrorCode::kIncompleteBody,
                               "GET " + key + ": " + std::to_string(get->bytes) +
                                   " bytes, expected " + std::to_string(size));
            }
            if (etag_is_md5 && StripQuotes(get->etag) != v.md5_hex) {
              return MakeError(ErrorCode::kBadDigest, "GET " + key + ": ETag " + get->etag +
                                                          ", PUT returned \"" + v.md5_hex + "\"");
            }
            return size;
          });
    });
  };
  // Rounds: GET, nginx, GET, nginx, ... (without objects to GET, nginx once).
  const bool can_get = cell_status.ok() && !written.empty();
  const int rounds = can_get ? o_.rounds : cell_status.ok() ? 1 : 0;
  // One round of `phase` into `into`; false (cell_status set) when it failed.
  auto one_round = [&](std::vector<PhaseResult>& into, std::string_view name, auto&& phase) {
    into.push_back(phase());
    PrintProgress(*cell, name, into.back());
    if (!into.back().error) return true;
    cell_status = MakeError(ErrorCode::kInternalError, *into.back().error);
    return false;
  };
  for (int r = 0; r < rounds; ++r) {
    if (can_get && !one_round(cell->get_rounds, "GET", get_phase)) break;
    if (nginx_rounds && !one_round(cell->nginx_rounds, "nginx", nginx_phase)) break;
  }
  if (!cell->get_rounds.empty()) cell->get = MedianRound(cell->get_rounds);
  if (!cell->nginx_rounds.empty()) cell->nginx = MedianRound(cell->nginx_rounds);
  uint64_t get_cut_ops = 0;
  for (const auto& g : cell->get_rounds) get_cut_ops += g.cut_ops;
  // Connections opened beyond one per thread, less those that cut ops forced.
  uint64_t connects = 0;
  for (auto& c : clients) connects += c->http().connects();
  uint64_t expected = static_cast<uint64_t>(conc) + cell->put.cut_ops + get_cut_ops;
  cell->reconnects = connects > expected ? connects - expected : 0;

  // Delete what was written (not timed), one share per connection.
  {
    std::vector<std::thread> threads;
    std::mutex mu;
    std::optional<std::string> del_error;
    for (int t = 0; t < conc; ++t) {
      threads.emplace_back([&, t] {
        for (uint64_t i = static_cast<uint64_t>(t); i < cell->put.started;
             i += static_cast<uint64_t>(conc)) {
          auto st = clients[static_cast<size_t>(t)]->DeleteObject(o_.bucket, key_of(i));
          if (!st.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            if (!del_error) del_error = st.error().message;
            return;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    if (del_error && cell_status.ok()) {
      cell_status = MakeError(ErrorCode::kInternalError, "cleanup: " + *del_error);
    }
  }
  clients.clear();
  if (!cell_status.ok()) return cell_status;

  // Local file: the same bytes with pread, same concurrency and op count.
  if (refs && o_.file_ref) {
    std::string path = ref_dir_ + "/" + RefFileName(size);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return MakeError(ErrorCode::kInternalError, "open " + path + ": " + std::strerror(errno));
    }
    std::vector<std::vector<char>> bufs(static_cast<size_t>(conc), std::vector<char>(kPiece));
    const uint64_t offset = content.variants[0].offset;
    cell->file = RunPhase(
        conc, ops, o_.duration_s, HardLimit(),
        [&](int t, uint64_t, OpCtx& ctx) -> Result<uint64_t> {
          char* buf = bufs[static_cast<size_t>(t)].data();
          for (uint64_t pos = 0; pos < size;) {
            if (pos > 0 && ctx.Expired()) return ctx.Cut(pos);
            size_t want = static_cast<size_t>(std::min<uint64_t>(kPiece, size - pos));
            ssize_t n = ::pread(fd, buf, want, static_cast<off_t>(pos));
            if (n <= 0) {
              return MakeError(
                  ErrorCode::kInternalError,
                  "pread " + path + ": " + (n == 0 ? "short file" : std::strerror(errno)));
            }
            if (!ContentMatches(pattern_, offset, pos, buf, static_cast<size_t>(n), full)) {
              return MakeError(ErrorCode::kInternalError,
                               path + ": wrong content at " + std::to_string(pos));
            }
            pos += static_cast<uint64_t>(n);
          }
          return size;
        });
    ::close(fd);
    PrintProgress(*cell, "file", cell->file);
    if (cell->file.error) return MakeError(ErrorCode::kInternalError, *cell->file.error);
  }

  return {};
}

void Bench::Cleanup() {
  if (bucket_created_) {
    client::S3ClientConfig cfg = S3Config();
    if (failure_) cfg.http.io_timeout = std::chrono::seconds(5);  // the server may be wedged
    S3Client s3(cfg);
    auto st = s3.DeleteBucket(o_.bucket);
    if (!st.ok()) std::fprintf(stderr, "s3bench: cleanup: %s\n", st.error().message.c_str());
  }
  for (const auto& f : ref_files_written_) ::unlink(f.c_str());
  if (ref_dir_is_temp_) ::rmdir(ref_dir_.c_str());
}

std::string Ratio(const PhaseResult& a, const PhaseResult& b) {
  if (!a.ran || !b.ran || b.MiBps() <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", a.MiBps() / b.MiBps());
  return buf;
}

// GET/nginx of a cell: with several rounds the median of the per-round ratios.
std::string GetOverNginx(const CellResult& c) {
  const auto rounds = c.GetOverNginxRounds();
  if (rounds.size() < 2) return Ratio(c.get, c.nginx);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", Median(rounds));
  return buf;
}

std::string Num(const PhaseResult& p, double v) {
  if (!p.ran) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 100 ? "%.0f" : "%.1f", v);
  return std::string(buf) + (p.time_limited ? "*" : "");
}

void Bench::PrintTable() const {
  std::printf("\n%-7s %5s %4s %11s %10s %11s %10s %11s %11s %9s %10s\n", "size", "conc", "sse",
              "PUT MiB/s", "PUT ops/s", "GET MiB/s", "GET ops/s", "file MiB/s", "nginx MiB/s",
              "GET/file", "GET/nginx");
  bool any_limited = false;
  for (const auto& c : cells_) {
    std::printf("%-7s %5d %4s %11s %10s %11s %10s %11s %11s %9s %10s\n", FormatSize(c.size).c_str(),
                c.conc, c.sse.c_str(), Num(c.put, c.put.MiBps()).c_str(),
                Num(c.put, c.put.OpsPerSec()).c_str(), Num(c.get, c.get.MiBps()).c_str(),
                Num(c.get, c.get.OpsPerSec()).c_str(), Num(c.file, c.file.MiBps()).c_str(),
                Num(c.nginx, c.nginx.MiBps()).c_str(), Ratio(c.get, c.file).c_str(),
                GetOverNginx(c).c_str());
    for (const PhaseResult* p : {&c.put, &c.get, &c.file, &c.nginx}) any_limited |= p->time_limited;
  }
  if (o_.rounds > 1) {
    std::printf(
        "\nGET rounds (--rounds %d): GET columns show the median round; GET/nginx the "
        "median of the per-round ratios, each nginx round right after its GET round:\n",
        o_.rounds);
    for (const auto& c : cells_) {
      std::printf("%-7s %5d %4s  GET ops/s", FormatSize(c.size).c_str(), c.conc, c.sse.c_str());
      for (const auto& g : c.get_rounds) std::printf(" %.0f", g.OpsPerSec());
      const auto ratios = c.GetOverNginxRounds();
      if (!ratios.empty()) {
        std::printf("  nginx ops/s");
        for (const auto& n : c.nginx_rounds) std::printf(" %.0f", n.OpsPerSec());
        std::printf("  GET/nginx");
        for (double r : ratios) std::printf(" %.2f", r);
      }
      std::printf("\n");
    }
  }
  if (!o_.server_pids.empty() || o_.syncs) {
    std::printf(
        "\nserver CPU seconds per GiB moved (utime+stime of %zu process(es), summed);"
        " storage syncs per PUT (rdmastor_storage_syncs_total, all kinds):\n",
        o_.server_pids.size());
    std::printf("%-7s %5s %4s %13s %13s %10s\n", "size", "conc", "sse", "PUT cpu s/GiB",
                "GET cpu s/GiB", "syncs/PUT");
    auto cpu = [](const PhaseResult& p) -> std::string {
      if (!p.ran || p.CpuPerGiB() < 0) return "-";
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", p.CpuPerGiB());
      return buf;
    };
    auto syncs = [](const PhaseResult& p) -> std::string {
      if (!p.ran || p.syncs < 0 || p.ops == 0) return "-";
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", p.syncs / static_cast<double>(p.ops));
      return buf;
    };
    for (const auto& c : cells_) {
      std::printf("%-7s %5d %4s %13s %13s %10s\n", FormatSize(c.size).c_str(), c.conc,
                  c.sse.c_str(), cpu(c.put).c_str(), cpu(c.get).c_str(), syncs(c.put).c_str());
    }
  }
  if (o_.sse.size() > 1) {
    std::printf("\nencrypted throughput relative to plain (same size and concurrency):\n");
    std::printf("%-7s %5s %4s %9s %9s\n", "size", "conc", "sse", "PUT/none", "GET/none");
    for (const auto& c : cells_) {
      if (c.sse == "none") continue;
      for (const auto& plain : cells_) {
        if (plain.sse != "none" || plain.size != c.size || plain.conc != c.conc) continue;
        std::printf("%-7s %5d %4s %9s %9s\n", FormatSize(c.size).c_str(), c.conc, c.sse.c_str(),
                    Ratio(c.put, plain.put).c_str(), Ratio(c.get, plain.get).c_str());
      }
    }
  }
  if (any_limited) {
    std::printf(
        "* the phase hit its time limit (%.1f s) before its op count: the rate is bytes "
        "(ops) completed / elapsed; ops still in flight at %.1f s were cut and count only "
        "the bytes they moved.\n",
        o_.duration_s, HardLimit());
  }
  uint64_t reconnects = 0;
  for (const auto& c : cells_) reconnects += c.reconnects;
  if (reconnects > 0) {
    std::printf("note: %" PRIu64
                " S3 connections had to be re-opened (keep-alive not held by the "
                "server)\n",
                reconnects);
  }
}

nlohmann::json PhaseJson(const PhaseResult& p) {
  if (!p.ran) return nullptr;
  nlohmann::json j = {{"ops", p.ops},           {"target_ops", p.target_ops},
                      {"bytes", p.bytes},       {"seconds", p.seconds},
                      {"mib_per_s", p.MiBps()}, {"ops_per_s", p.OpsPerSec()},
                      {"p50_ms", p.p50_ms},     {"p99_ms", p.p99_ms},
                      {"max_ms", p.max_ms},     {"time_limited", p.time_limited},
                      {"cut_ops", p.cut_ops}};
  if (p.error) j["error"] = *p.error;
  if (!p.server_cpu_s.empty()) {
    j["server_cpu_s"] = p.server_cpu_s;
    j["server_cpu_s_per_gib"] = p.CpuPerGiB();
  }
  if (p.syncs >= 0) {
    j["storage_syncs"] = p.syncs;
    if (p.ops > 0) j["storage_syncs_per_op"] = p.syncs / static_cast<double>(p.ops);
  }
  return j;
}

Status Bench::WriteJson() const {
  nlohmann::json j;
  j["endpoint"] = o_.endpoint;
  j["endpoints"] = o_.endpoints;
  j["server_pids"] = o_.server_pids;
  j["nginx_url"] = o_.nginx_url.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.nginx_url);
  j["duration_s"] = o_.duration_s;
  j["max_phase_s"] = HardLimit();
  j["verify"] = o_.verify_full ? "full" : "sample";
  j["piece_bytes"] = kPiece;
  j["ok"] = !failure_.has_value();
  if (failure_) j["error"] = *failure_;
  j["results"] = nlohmann::json::array();
  for (const auto& c : cells_) {
    nlohmann::json r = {{"size", c.size},
                        {"size_text", FormatSize(c.size)},
                        {"concurrency", c.conc},
                        {"sse", c.sse},
                        {"put", PhaseJson(c.put)},
                        {"get", PhaseJson(c.get)},
                        {"file", PhaseJson(c.file)},
                        {"nginx", PhaseJson(c.nginx)},
                        {"reconnects", c.reconnects}};
    auto ratio = [](const PhaseResult& a, const PhaseResult& b) -> nlohmann::json {
      if (!a.ran || !b.ran || b.MiBps() <= 0) return nullptr;
      return a.MiBps() / b.MiBps();
    };
    r["get_over_file"] = ratio(c.get, c.file);
    r["get_over_nginx"] = ratio(c.get, c.nginx);
    if (c.get_rounds.size() > 1) {
      nlohmann::json gets = nlohmann::json::array(), nginxes = nlohmann::json::array();
      for (const auto& g : c.get_rounds) gets.push_back(PhaseJson(g));
      for (const auto& n : c.nginx_rounds) nginxes.push_back(PhaseJson(n));
      r["get_rounds"] = std::move(gets);
      r["nginx_rounds"] = std::move(nginxes);
      const auto ratios = c.GetOverNginxRounds();
      if (!ratios.empty()) {
        r["get_over_nginx_rounds"] = ratios;
        r["get_over_nginx"] = Median(ratios);  // the table's figure
      }
    }
    r["put_over_file"] = ratio(c.put, c.file);
    j["results"].push_back(std::move(r));
  }
  std::ofstream out(o_.json_file);
  out << j.dump(2) << "\n";
  out.close();
  if (!out) {
    return MakeError(ErrorCode::kInternalError, "cannot write --json " + o_.json_file);
  }
  return {};
}

int Bench::Run() {
  auto started = Clock::now();
  if (auto st = Setup(); !st.ok()) {
    std::fprintf(stderr, "s3bench: setup failed: %s\n", st.error().message.c_str());
    Cleanup();
    return 1;
  }
  std::fprintf(stderr, "s3bench: endpoint %s, bucket %s, ref files in %s%s%s, verify %s\n",
               o_.endpoint.c_str(), o_.bucket.c_str(), ref_dir_.c_str(), nginx_ ? ", nginx " : "",
               nginx_ ? o_.nginx_url.c_str() : "", o_.verify_full ? "full" : "sampled");
  for (uint64_t size : o_.sizes) {
    if (failure_) break;
    SizeContent content = MakeContent(pattern_, size);
    if (o_.file_ref) {
      if (auto st = WriteRefFile(ref_dir_, pattern_, content); !st.ok()) {
        failure_ = st.error().message;
        break;
      }
      ref_files_written_.push_back(ref_dir_ + "/" + RefFileName(size));
    }
    for (int conc : o_.concurrency) {
      for (const auto& mode : o_.sse) {
        CellResult cell;
        cell.size = size;
        cell.conc = conc;
        cell.sse = mode;
        Status st = RunCell(content, conc, /*refs=*/mode == o_.sse.front(), &cell);
        cells_.push_back(cell);
        if (!st.ok()) {
          failure_ = st.error().message;
          break;
        }
      }
      if (failure_) break;
    }
  }
  Cleanup();
  PrintTable();
  std::printf("total %.1f s\n", std::chrono::duration<double>(Clock::now() - started).count());
  if (!o_.json_file.empty()) {
    if (auto st = WriteJson(); !st.ok()) {
      std::fprintf(stderr, "s3bench: %s\n", st.error().message.c_str());
      if (!failure_) failure_ = st.error().message;
    }
  }
  if (failure_) {
    std::fprintf(stderr, "s3bench: FAILED: %s\n", failure_->c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rdmastor::bench

int main(int argc, char** argv) {
  auto opts = rdmastor::bench::ParseArgs(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "s3bench: %s\n(s3bench --help for every flag)\n",
                 opts.error().message.c_str());
    return 2;
  }
  rdmastor::bench::Bench bench(std::move(*opts));
  return bench.Run();
}
