// ec_bench: isa-l Reed-Solomon throughput of the server's codec (erasure/codec.h) per core, beside
// a plain memcpy of the same bytes measured in the same run. See bench/README.md.
//
// For each geometry (EC 4+2, 8+4, 12+4 by default) and one thread:
//   memcpy       copy the stripes' data bytes (1 MiB per stripe) to another buffer
//   encode       Codec::Encode: parity blocks from the data blocks (ec_encode_data)
//   encode+frame EncodeStripe: what a PUT does per stripe: split, encode, XXH3-frame every block
//   decode-2     Codec::Reconstruct with 2 data shards lost (what a degraded GET does per stripe:
//                invert the surviving rows, rebuild the lost data blocks)
// Rates are data bytes (the object bytes a stripe holds) per second, in GiB/s, over a working set
// of --stripes stripes (default 64 = 64 MiB of data, larger than the caches, so memory bandwidth
// counts as it does on a server). Each figure is the best of --reps runs of at least --min-ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cli11_support.h"
#include "erasure/codec.h"

namespace {

using rdmastor::erasure::Codec;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::pair<int, int>> geometries{{4, 2}, {8, 4}, {12, 4}};
  size_t stripes = 64;
  int reps = 5;
  int min_ms = 300;
};

// Runs `body` (one pass over the working set) until min_ms elapsed; returns passes per second.
template <class F>
double PassesPerSecond(const Options& o, F&& body) {
  double best = 0;
  for (int r = 0; r < o.reps; ++r) {
    int passes = 0;
    const auto start = Clock::now();
    double secs = 0;
    do {
      body();
      ++passes;
      secs = std::chrono::duration<double>(Clock::now() - start).count();
    } while (secs * 1000 < o.min_ms);
    best = std::max(best, passes / secs);
  }
  return best;
}

// "4+2,8+4": data+parity pairs; nullopt when malformed.
std::optional<std::vector<std::pair<int, int>>> ParseGeometries(const std::string& v) {
  std::vector<std::pair<int, int>> out;
  for (size_t pos = 0; pos < v.size();) {
    const size_t comma = std::min(v.find(',', pos), v.size());
    int d = 0, p = 0;
    if (std::sscanf(v.substr(pos, comma - pos).c_str(), "%d+%d", &d, &p) != 2 || d < 1 || p < 0)
      return std::nullopt;
    out.emplace_back(d, p);
    pos = comma + 1;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string geometries = "4+2,8+4,12+4";
  CLI::App app{"isa-l Reed-Solomon throughput per core beside memcpy (bench/README.md)",
               "ec_bench"};
  app.add_option("--geometries", geometries, "erasure geometries DATA+PARITY, comma separated")
      ->capture_default_str();
  app.add_option("--stripes", o.stripes, "stripes (1 MiB of data each) in the working set")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--reps", o.reps, "runs per figure (the best counts)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--min-ms", o.min_ms, "each run lasts at least this long")
      ->type_name("MS")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  if (auto rc = rdmastor::cli11::ParseOrExit(app, argc, argv)) return *rc;
  auto parsed = ParseGeometries(geometries);
  if (!parsed) {
    std::fprintf(stderr, "ec_bench: --geometries '%s': use DATA+PARITY pairs such as 4+2,8+4\n",
                 geometries.c_str());
    return 2;
  }
  o.geometries = std::move(*parsed);

  const size_t stripe = rdmastor::erasure::kStripeSize;
  std::printf(
      "ec_bench: 1 thread, %zu stripes of %zu KiB data per pass, best of %d runs of >= %d "
      "ms; GiB/s of data bytes\n",
      o.stripes, stripe >> 10, o.reps, o.min_ms);
  std::printf("%-8s %9s %9s %9s %13s %9s %9s %9s %11s\n", "EC", "memcpy", "encode", "enc/mcpy",
              "encode+frame", "ef/mcpy", "decode-2", "dec/mcpy", "check");
  int rc = 0;
  for (auto [d, p] : o.geometries) {
    auto codec = Codec::Create(d, p);
    if (!codec.ok()) {
      std::fprintf(stderr, "EC %d+%d: %s\n", d, p, codec.error().message.c_str());
      return 2;
    }
    const Codec& c = **codec;
    const size_t block = (stripe + d - 1) / d;
    const size_t n = static_cast<size_t>(d + p);
    // Per stripe: n blocks of `block` bytes, contiguous (data first), as EncodeStripe lays them.
    std::vector<uint8_t> shards(o.stripes * n * block);
    std::vector<uint8_t> copy(o.stripes * stripe);
    std::vector<uint8_t> source(o.stripes * stripe);
    for (size_t i = 0; i < source.size(); ++i)
      source[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    std::vector<std::vector<uint8_t*>> ptrs(o.stripes, std::vector<uint8_t*>(n));
    for (size_t s = 0; s < o.stripes; ++s) {
      std::memcpy(&shards[s * n * block], &source[s * stripe], stripe);
      for (size_t i = 0; i < n; ++i) ptrs[s][i] = &shards[(s * n + i) * block];
    }
    const double bytes = static_cast<double>(o.stripes * stripe);
    const double gib = 1024.0 * 1024 * 1024;

    const double mcpy = PassesPerSecond(o, [&] {
      for (size_t s = 0; s < o.stripes; ++s)
        std::memcpy(&copy[s * stripe], &source[s * stripe], stripe);
    });
    const double enc = PassesPerSecond(o, [&] {
      for (size_t s = 0; s < o.stripes; ++s) c.Encode(ptrs[s].data(), block);
    });
    std::vector<std::string> out(n);
    std::vector<uint8_t> scratch;
    for (auto& x : out) x.reserve((block + 8) * o.stripes);
    const double encf = PassesPerSecond(o, [&] {
      for (auto& x : out) x.clear();
      for (size_t s = 0; s < o.stripes; ++s)
        rdmastor::erasure::EncodeStripe(c, reinterpret_cast<const char*>(&source[s * stripe]),
                                        stripe, out, scratch);
    });
    // Decode: data shards 0 and 1 lost, rebuilt from the rest.
    std::vector<bool> present(n, true);
    present[0] = present[1] = false;
    const std::vector<uint8_t> expect = shards;  // encoded above: data + parity
    for (size_t s = 0; s < o.stripes; ++s) {
      std::memset(ptrs[s][0], 0xAB, block);
      std::memset(ptrs[s][1], 0xAB, block);
    }
    bool ok = true;
    const double dec = PassesPerSecond(o, [&] {
      for (size_t s = 0; s < o.stripes; ++s) {
        if (!c.Reconstruct(ptrs[s].data(), present, block, /*data_only=*/true).ok()) ok = false;
      }
    });
    // The rebuilt blocks must equal the originals (the bench measures real decodes).
    ok = ok && expect == shards;
    if (!ok) rc = 1;
    std::printf("%2d+%-5d %9.2f %9.2f %9.2f %13.2f %9.2f %9.2f %9.2f %11s\n", d, p,
                mcpy * bytes / gib, enc * bytes / gib, enc / mcpy, encf * bytes / gib, encf / mcpy,
                dec * bytes / gib, dec / mcpy, ok ? "decode ok" : "MISMATCH");
  }
  return rc;
}
