#include "erasure/layout.h"

#include <algorithm>
#include <charconv>

#include "erasure/codec.h"

namespace rdmastor::erasure {

namespace {

constexpr int kDefaultRrsParity = 1;  // MinIO's: the least parity that still survives a drive

// "EC:N" with N a decimal count of parity shards in [0, max]; the error names `setting`.
Result<int> ParseParity(const char* setting, const std::string& value, int max,
                        const std::string& accepted) {
  const std::string bad = std::string(setting) + "='" + value + "' is invalid: " + accepted;
  if (value.size() < 4 || value.compare(0, 3, "EC:") != 0) {
    return MakeError(ErrorCode::kInvalidArgument, bad);
  }
  int n = -1;
  const char* begin = value.data() + 3;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(begin, end, n);
  if (ec != std::errc() || ptr != end || n < 0 || n > max) {
    return MakeError(ErrorCode::kInvalidArgument, bad);
  }
  return n;
}

}  // namespace

int DefaultParity(int set_size) {
  if (set_size <= 3) return 1;
  if (set_size <= 5) return 2;
  if (set_size <= 7) return 3;
  return 4;
}

Result<SetLayout> PlanLayout(int drives, const StorageClassSettings& classes) {
  if (drives < 1) return MakeError(ErrorCode::kInvalidArgument, "no drive given");
  SetLayout l;
  l.inline_block = classes.inline_block;
  if (drives == 1) {
    // One drive is a one-drive set without parity (MinIO's single-drive mode): the same object
    // layer, bitrot-checked, nothing to heal from.
    const std::string none = "a single drive has no parity (leave it unset or EC:0)";
    if (!classes.standard.empty()) {
      auto p = ParseParity("MINIO_STORAGE_CLASS_STANDARD", classes.standard, 0, none);
      if (!p.ok()) return p.error();
    }
    if (!classes.rrs.empty()) {
      auto p = ParseParity("MINIO_STORAGE_CLASS_RRS", classes.rrs, 0, none);
      if (!p.ok()) return p.error();
    }
    return l;
  }
  for (int size = kMaxShards; size >= 2; --size) {
    if (drives % size == 0) {
      l.set_size = size;
      break;
    }
  }
  if (l.set_size < 2) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::to_string(drives) +
                         " drives cannot be split into equal erasure sets of 2 to 16 drives; "
                         "use a drive count with such a divisor (e.g. 4, 8, 12, 16, 24, 32)");
  }
  l.set_count = drives / l.set_size;
  const int max = l.set_size / 2;
  const std::string accepted = "use EC:N with 0 <= N <= " + std::to_string(max) +
                               " for erasure sets of " + std::to_string(l.set_size) + " drives";
  l.parity = DefaultParity(l.set_size);
  if (!classes.standard.empty()) {
    auto p = ParseParity("MINIO_STORAGE_CLASS_STANDARD", classes.standard, max, accepted);
    if (!p.ok()) return p.error();
    l.parity = *p;
  }
  // Reduced redundancy means no more parity than standard: the default follows a lower standard.
  l.rrs_parity = std::min(kDefaultRrsParity, l.parity);
  if (!classes.rrs.empty()) {
    auto p = ParseParity("MINIO_STORAGE_CLASS_RRS", classes.rrs, max, accepted);
    if (!p.ok()) return p.error();
    l.rrs_parity = *p;
    if (l.rrs_parity > l.parity) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_STORAGE_CLASS_RRS='" + classes.rrs +
                           "' is invalid: reduced redundancy parity must not exceed the standard "
                           "parity EC:" + std::to_string(l.parity) +
                           " (MINIO_STORAGE_CLASS_STANDARD)");
    }
  }
  return l;
}

}  // namespace rdmastor::erasure
