#include "cli/ellipsis.h"

#include <cctype>
#include <filesystem>
#include <set>

namespace rdmastor::cli {

namespace {

constexpr size_t kMaxExpansion = 1 << 16;  // far beyond any real drive count; stops typos early

struct Pattern {
  size_t begin = 0, end = 0;  // [begin, end) of "{x...y}" in the argument
  std::vector<std::string> values;
};

Error Bad(const std::string& arg, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument, "invalid drive argument '" + arg + "': " + why);
}

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Result<std::vector<std::string>> RangeValues(const std::string& arg, const std::string& lo,
                                             const std::string& hi) {
  std::vector<std::string> out;
  if (AllDigits(lo) && AllDigits(hi)) {
    if (lo.size() > 9 || hi.size() > 9) return Bad(arg, "range bound too large");
    const bool padded = lo.size() > 1 && lo[0] == '0';
    if (padded && hi.size() != lo.size())
      return Bad(arg, "zero-padded range {" + lo + "..." + hi + "} needs bounds of equal width");
    long a = std::stol(lo), b = std::stol(hi);
    if (a > b) return Bad(arg, "range {" + lo + "..." + hi + "} starts after it ends");
    if (static_cast<size_t>(b - a) >= kMaxExpansion) return Bad(arg, "range too large");
    for (long v = a; v <= b; ++v) {
      std::string s = std::to_string(v);
      if (padded && s.size() < lo.size()) s.insert(0, lo.size() - s.size(), '0');
      out.push_back(std::move(s));
    }
    return out;
  }
  auto letter = [](const std::string& s) {
    return s.size() == 1 && std::isalpha(static_cast<unsigned char>(s[0]));
  };
  if (letter(lo) && letter(hi)) {
    if (std::islower(static_cast<unsigned char>(lo[0])) !=
        std::islower(static_cast<unsigned char>(hi[0])))
      return Bad(arg, "letter range {" + lo + "..." + hi + "} mixes upper and lower case");
    if (lo[0] > hi[0]) return Bad(arg, "range {" + lo + "..." + hi + "} starts after it ends");
    for (char c = lo[0]; c <= hi[0]; ++c) out.emplace_back(1, c);
    return out;
  }
  return Bad(arg, "range {" + lo + "..." + hi +
                      "} must have two numbers ({1...4}, {01...16}) or two letters ({a...f})");
}

Result<std::vector<Pattern>> FindPatterns(const std::string& arg) {
  std::vector<Pattern> out;
  size_t pos = 0;
  while ((pos = arg.find('{', pos)) != std::string::npos) {
    size_t close = arg.find('}', pos);
    size_t next_open = arg.find('{', pos + 1);
    std::string inner =
        arg.substr(pos + 1, (close == std::string::npos ? arg.size() : close) - pos - 1);
    size_t dots = inner.find("...");
    if (close == std::string::npos || (next_open != std::string::npos && next_open < close)) {
      // An unbalanced brace is literal unless it was meant as an ellipsis.
      if (dots != std::string::npos) return Bad(arg, "unbalanced '{' in ellipsis");
      ++pos;
      continue;
    }
    if (dots == std::string::npos) {
      // "{1..4}" is shell brace syntax, which MinIO does not expand either: as a literal it would
      // be one drive named "data{1..4}", so it is refused, pointing at the ellipsis.
      if (auto two = inner.find(".."); two != std::string::npos && two > 0 &&
                                       two + 2 < inner.size() &&
                                       inner.find("..", two + 2) == std::string::npos) {
        const std::string meant = arg.substr(0, pos + 1) + inner.substr(0, two) + "..." +
                                  inner.substr(two + 2) + arg.substr(close);
        return Bad(arg, "{" + inner + "} has two dots; MinIO's ellipsis has three: " + meant);
      }
      pos = close + 1;  // "{abc}": literal
      continue;
    }
    auto values = RangeValues(arg, inner.substr(0, dots), inner.substr(dots + 3));
    if (!values.ok()) return values.error();
    out.push_back(Pattern{pos, close + 1, std::move(values).value()});
    pos = close + 1;
  }
  return out;
}

}  // namespace

bool HasEllipses(const std::string& arg) {
  auto p = FindPatterns(arg);
  return !p.ok() || !p->empty();  // a malformed ellipsis still counts (and fails on expansion)
}

Result<std::vector<std::string>> ExpandEllipses(const std::string& arg) {
  auto patterns = FindPatterns(arg);
  if (!patterns.ok()) return patterns.error();
  std::vector<std::string> out{""};
  size_t literal_from = 0;
  for (const auto& p : *patterns) {
    const std::string literal = arg.substr(literal_from, p.begin - literal_from);
    if (out.size() * p.values.size() > kMaxExpansion) return Bad(arg, "expands to too many drives");
    std::vector<std::string> next;
    next.reserve(out.size() * p.values.size());
    for (const auto& prefix : out)
      for (const auto& v : p.values) next.push_back(prefix + literal + v);
    out = std::move(next);
    literal_from = p.end;
  }
  for (auto& s : out) s += arg.substr(literal_from);
  return out;
}

Result<std::vector<std::string>> ExpandDriveArgs(const std::vector<std::string>& args) {
  if (args.empty()) return MakeError(ErrorCode::kInvalidArgument, "no drive directory given");
  size_t with_ellipses = 0, urls = 0;
  for (const auto& a : args) {
    if (a.find("://") != std::string::npos) ++urls;
    if (HasEllipses(a)) ++with_ellipses;
  }
  if (urls > 0 && urls < args.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "drive URLs (distributed mode) and plain directories cannot be mixed: give "
                     "every drive as http://HOST:PORT/PATH, or only local directories");
  }
  if (with_ellipses > 0 && args.size() > 1) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "several drive arguments with ellipses (or ellipses mixed with plain "
                     "directories) describe several server pools, which are not supported yet: "
                     "give one argument such as /mnt/disk{1...8}, or plain directories");
  }
  std::vector<std::string> drives;
  for (const auto& a : args) {
    auto expanded = ExpandEllipses(a);
    if (!expanded.ok()) return expanded.error();
    for (auto& d : *expanded) drives.push_back(std::move(d));
  }
  std::set<std::string> seen;
  for (const auto& d : drives) {
    if (d.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty drive path");
    std::string norm = std::filesystem::path(d).lexically_normal().string();
    while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
    if (!seen.insert(norm).second)
      return MakeError(ErrorCode::kInvalidArgument, "drive '" + d + "' is given more than once");
  }
  return drives;
}

}  // namespace rdmastor::cli
