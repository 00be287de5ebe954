#include "s3/range.h"

#include <algorithm>
#include <limits>

namespace rdmastor::s3 {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a non-empty run of decimal digits. Values that do not fit saturate at UINT64_MAX: a huge
// position is still syntactically valid (RFC 9110) and behaves like "past the end" below.
std::optional<uint64_t> ParseDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    v = (v > (kMax - d) / 10) ? kMax : v * 10 + d;
  }
  return v;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

Result<std::optional<ByteRange>> ParseRange(std::string_view header, uint64_t size) {
  const std::optional<ByteRange> ignore;
  header = TrimWs(header);
  const size_t eq = header.find('=');
  if (eq == std::string_view::npos) return ignore;
  // The range unit is case-insensitive (RFC 9110 14.1).
  if (!EqualsIgnoreCase(TrimWs(header.substr(0, eq)), "bytes")) return ignore;
  std::string_view spec = TrimWs(header.substr(eq + 1));
  // S3 serves only one range; a multi-range request gets the whole object, like an unknown header.
  if (spec.find(',') != std::string_view::npos) return ignore;
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return ignore;
  const std::string_view first = TrimWs(spec.substr(0, dash));
  const std::string_view last = TrimWs(spec.substr(dash + 1));

  if (first.empty()) {
    // Suffix form "-n": the last n bytes.
    const auto n = ParseDigits(last);
    if (!n) return ignore;
    if (*n == 0 || size == 0) return MakeError(ErrorCode::kInvalidRange);
    const uint64_t len = *n < size ? *n : size;
    return std::optional<ByteRange>(ByteRange{size - len, len});
  }

  const auto start = ParseDigits(first);
  if (!start) return ignore;
  uint64_t end = kMax;  // "a-" runs to the end of the object
  if (!last.empty()) {
    const auto b = ParseDigits(last);
    if (!b) return ignore;
    // last-pos < first-pos makes the range invalid, which means ignored, not unsatisfiable.
    if (*b < *start) return ignore;
    end = *b;
  }
  if (*start >= size) return MakeError(ErrorCode::kInvalidRange);
  if (end > size - 1) end = size - 1;
  return std::optional<ByteRange>(ByteRange{*start, end - *start + 1});
}

Result<std::optional<ByteRange>> PartNumberRange(std::string_view part_number, uint64_t size,
                                                 int part_count,
                                                 const std::vector<uint64_t>& part_sizes) {
  // 1..10000 in plain decimal (no sign, no spaces; leading zeros allowed), saturating above.
  uint64_t pn = 0;
  bool ok = !part_number.empty() && part_number.size() <= 18;
  for (char c : part_number) {
    ok = ok && IsDigit(c);
    if (ok) pn = std::min<uint64_t>(pn * 10 + static_cast<uint64_t>(c - '0'), 10001);
  }
  if (!ok || pn < 1 || pn > 10000)
    return MakeError(ErrorCode::kInvalidArgument,
                     "Part number must be an integer between 1 and 10000, inclusive");
  // A part the object does not have is 400 InvalidPartNumber (AWS); a single-part object is its
  // own part 1.
  if (pn > static_cast<uint64_t>(std::max(part_count, 1)))
    return MakeError(ErrorCode::kInvalidPartNumber);
  if (part_count <= 0) {
    if (size == 0) return std::optional<ByteRange>();
    return std::optional<ByteRange>(ByteRange{0, size});
  }
  // Metadata read from a drive: never index past what it lists or beyond the object.
  if (part_sizes.size() < static_cast<size_t>(part_count))
    return MakeError(ErrorCode::kInternalError, "object metadata lists fewer part sizes than parts");
  uint64_t start = 0;
  for (uint64_t i = 0; i + 1 < pn; ++i) {
    if (part_sizes[i] > size - start)
      return MakeError(ErrorCode::kInternalError, "object part sizes exceed the object size");
    start += part_sizes[i];
  }
  if (part_sizes[pn - 1] > size - start)
    return MakeError(ErrorCode::kInternalError, "object part sizes exceed the object size");
  return std::optional<ByteRange>(ByteRange{start, part_sizes[pn - 1]});
}

}  // namespace rdmastor::s3
