// Small ASCII text helpers shared by the HTTP, SigV2/V4 and aws-chunked parsers (header names and
// values are ASCII by protocol; locale-dependent std::tolower is not wanted there).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rdmastor::text {

inline char LowerAscii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerAscii(c);
  return out;
}

// Strips spaces and tabs (HTTP's optional whitespace) from both ends.
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of one hex digit; -1 for anything else (upper case too when lower_only: formats written
// with printf's %x, such as RDMA tokens, take only lower case).
inline int HexDigit(char c, bool lower_only = false) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (!lower_only && c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A position in a text being parsed, for the hand-written parsers (s3/xml.cc's HTTP dates, the
// canonical metadata reader of storage/object_meta.cc): they add their own tokens on t_ and i_.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : t_(text) {}
  bool AtEnd() const { return i_ == t_.size(); }
  // Takes `c` when it comes next.
  bool Eat(char c) {
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

 protected:
  std::string_view t_;
  size_t i_ = 0;
};

// The inside of a JSON string literal for `s` (quotes, backslashes and control characters escaped;
// other bytes, UTF-8 included, as they are).
std::string JsonEscape(std::string_view s);

}  // namespace rdmastor::text
