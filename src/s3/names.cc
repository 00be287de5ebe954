#include "s3/names.h"

#include <cstdint>

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

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    uint32_t min;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;  // continuation byte without a lead, or 0xF8..0xFF
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
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
