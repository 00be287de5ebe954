#include "s3/names.h"

#include <cstdint>

#include "common/utf8.h"

namespace rdmastor::s3 {

namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// "Formatted like an IPv4 address": four dot-separated groups of 1-3 digits. The value of each
// group does not matter (S3 rejects "999.1.1.1" too; it would confuse virtual-host addressing).
bool LooksLikeIpv4(std::string_view s) {
  int groups = 0;
  size_t i = 0;
  while (true) {
    size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
      ++digits;
    }
    if (digits == 0 || digits > 3) return false;
    ++groups;
    if (i == s.size()) return groups == 4;
    if (s[i] != '.') return false;
    ++i;
  }
}

constexpr std::string_view kReservedPrefix = ".rdmastor.";

}  // namespace

bool IsValidBucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!IsLowerAlnum(c) && c != '.' && c != '-') return false;
    if (i > 0) {
      const char prev = name[i - 1];
      if (prev == '.' && (c == '.' || c == '-')) return false;
      if (prev == '-' && c == '.') return false;
    }
  }
  return !LooksLikeIpv4(name);
}

Status ValidateObjectKey(std::string_view key) {
  if (key.empty()) return MakeError(ErrorCode::kInvalidObjectName, "Object name cannot be empty.");
  if (key.size() > 1024) return ErrorCode::kKeyTooLong;
  if (key.find('\0') != std::string_view::npos) return ErrorCode::kInvalidObjectName;
  if (!IsValidUtf8(key)) return ErrorCode::kInvalidObjectName;
  // C1 control characters (U+0080..U+009F, UTF-8 C2 80..C2 9F): AWS cannot parse such a URI.
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    if (static_cast<unsigned char>(key[i]) == 0xC2 && static_cast<unsigned char>(key[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(key[i + 1]) <= 0x9F)
      return ErrorCode::kInvalidURI;
  }
  if (key.front() == '/') return ErrorCode::kInvalidObjectName;
  // Keys map onto paths below a drive directory: every segment must be a plain, non-empty name so
  // a key can never climb out of (or alias inside) the bucket, nor name our internal files. A
  // single trailing '/' is fine: that is a "folder" marker object.
  size_t pos = 0;
  while (pos < key.size()) {
    size_t slash = key.find('/', pos);
    if (slash == std::string_view::npos) slash = key.size();
    const std::string_view seg = key.substr(pos, slash - pos);
    if (seg.empty() || seg == "." || seg == "..") return ErrorCode::kInvalidObjectName;
    if (seg.substr(0, kReservedPrefix.size()) == kReservedPrefix) {
      return ErrorCode::kInvalidObjectName;
    }
    pos = slash + 1;
  }
  return {};
}

}  // namespace rdmastor::s3
