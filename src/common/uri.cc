#include "common/uri.h"

#include "common/text.h"

namespace rdmastor::uri {

namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

}  // namespace

std::optional<std::string> Decode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = text::HexDigit(s[i + 1]);
      int lo = text::HexDigit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>((hi << 4) | lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Encode(std::string_view s, bool encode_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (c == '/' && !encode_slash)) {
      out += ch;
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    }
  }
  return out;
}

std::vector<RawQueryParam> SplitRawQuery(std::string_view raw) {
  std::vector<RawQueryParam> out;
  size_t pos = 0;
  while (pos <= raw.size()) {
    size_t amp = raw.find('&', pos);
    if (amp == std::string_view::npos) amp = raw.size();
    std::string_view part = raw.substr(pos, amp - pos);
    pos = amp + 1;
    if (part.empty()) continue;  // "a=1&&b" and a trailing '&' carry no parameter
    size_t eq = part.find('=');
    RawQueryParam p;
    p.name = part.substr(0, eq);
    if (eq != std::string_view::npos) {
      p.value = part.substr(eq + 1);
      p.has_equals = true;
    }
    out.push_back(p);
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RawQueryParam& p : SplitRawQuery(raw)) {
    // '+' means space in query strings, as S3 (and Go's url.ParseQuery in MinIO) treat it.
    auto n = Decode(p.name, /*plus_as_space=*/true);
    auto v = Decode(p.value, /*plus_as_space=*/true);
    if (!n || !v) return std::nullopt;
    out.emplace_back(std::move(*n), std::move(*v));
  }
  return out;
}

}  // namespace rdmastor::uri
