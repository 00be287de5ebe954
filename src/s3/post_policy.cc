#include "s3/post_policy.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/hash.h"

namespace rdmastor::s3 {

namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxBoundary = 70;  // RFC 2046

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Error Malformed(std::string_view why = {}) {
  return why.empty() ? MakeError(ErrorCode::kMalformedPOSTRequest)
                     : MakeError(ErrorCode::kMalformedPOSTRequest,
                                 "The body of your POST request is not well-formed "
                                 "multipart/form-data. " +
                                     std::string(why));
}

// Parameters of a header value: `type; a=b; c="d"`. Names lower-cased; quoted values unquoted
// (a backslash escapes the next character).
std::map<std::string, std::string> HeaderParams(std::string_view v) {
  std::map<std::string, std::string> out;
  size_t semi = v.find(';');
  if (semi == std::string_view::npos) return out;
  size_t pos = semi + 1;
  while (pos < v.size()) {
    while (pos < v.size() && (v[pos] == ' ' || v[pos] == '\t' || v[pos] == ';')) ++pos;
    size_t eq = v.find('=', pos);
    if (eq == std::string_view::npos) break;
    std::string name = ToLower(Trim(v.substr(pos, eq - pos)));
    pos = eq + 1;
    while (pos < v.size() && (v[pos] == ' ' || v[pos] == '\t')) ++pos;
    std::string value;
    if (pos < v.size() && v[pos] == '"') {
      ++pos;
      while (pos < v.size() && v[pos] != '"') {
        if (v[pos] == '\\' && pos + 1 < v.size()) ++pos;
        value += v[pos++];
      }
      ++pos;  // closing quote
    } else {
      size_t end = std::min(v.find(';', pos), v.size());
      value = std::string(Trim(v.substr(pos, end - pos)));
      pos = end;
    }
    out.emplace(std::move(name), std::move(value));
  }
  return out;
}

// ISO 8601 as policies write it: 2024-01-02T03:04:05Z, optionally with fractional seconds.
std::optional<int64_t> ParseIso8601(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s.back() != 'Z')
    return std::nullopt;
  auto num = [&](size_t at, size_t len) -> std::optional<int> {
    int v = 0;
    for (size_t i = at; i < at + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
       se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *h > 23 || *mi > 59 || *se > 60) return std::nullopt;
  std::string_view frac = s.substr(19, s.size() - 20);
  if (!frac.empty()) {
    if (frac[0] != '.' || frac.size() < 2 ||
        !std::all_of(frac.begin() + 1, frac.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
  if (!ymd.ok()) return std::nullopt;
  return sys_days{ymd}.time_since_epoch().count() * 86400LL + *h * 3600 + *mi * 60 + *se;
}

Error BadPolicy(const std::string& why) {
  return MakeError(ErrorCode::kInvalidPolicyDocument, "Invalid Policy: " + why);
}

std::optional<int64_t> JsonInt(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    int64_t out = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && p == s.data() + s.size()) return out;
  }
  return std::nullopt;
}

std::string Quoted(std::string_view s) {
  // As the condition appeared: a JSON string (escapes as JSON writes them).
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Error Denied(const std::string& why) {
  return MakeError(ErrorCode::kAccessDenied, "Invalid according to Policy: " + why);
}

}  // namespace

Result<std::string> FormBoundary(std::string_view content_type) {
  std::string_view type = Trim(content_type.substr(0, content_type.find(';')));
  if (ToLower(type) != "multipart/form-data")
    return Malformed("Content-Type is not multipart/form-data.");
  auto params = HeaderParams(content_type);
  auto it = params.find("boundary");
  if (it == params.end() || it->second.empty() || it->second.size() > kMaxBoundary)
    return Malformed("The boundary parameter is missing or invalid.");
  for (char c : it->second)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Malformed("The boundary parameter is missing or invalid.");
  return it->second;
}

FormReader::FormReader(BodySource& body, std::string boundary)
    // The body starts with "--boundary" without a line break in front; a virtual CRLF lets
    // every boundary be found as "\r\n--boundary".
    : body_(body), delimiter_("\r\n--" + boundary), buf_("\r\n") {}

Result<bool> FormReader::Fill() {
  if (eof_) return false;
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  size_t old = buf_.size();
  buf_.resize(old + kReadChunk);
  auto n = body_.Read(buf_.data() + old, kReadChunk);
  if (!n.ok()) {
    buf_.resize(old);
    return n.error();
  }
  buf_.resize(old + *n);
  if (*n == 0) eof_ = true;
  return *n > 0;
}

Result<size_t> FormReader::ReadContent(char* out, size_t len) {
  if (!in_part_ || len == 0) return size_t{0};
  for (;;) {
    std::string_view avail(buf_.data() + pos_, buf_.size() - pos_);
    size_t at = avail.find(delimiter_);
    if (at != std::string_view::npos) {
      if (at == 0) {
        in_part_ = false;
        return size_t{0};
      }
      size_t n = std::min(len, at);
      std::memcpy(out, avail.data(), n);
      pos_ += n;
      return n;
    }
    // Everything but a possible start of the delimiter at the end is content.
    size_t safe = avail.size() >= delimiter_.size() ? avail.size() - delimiter_.size() + 1 : 0;
    if (safe > 0) {
      size_t n = std::min(len, safe);
      std::memcpy(out, avail.data(), n);
      pos_ += n;
      return n;
    }
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return Malformed("The body ended inside a part.");
  }
}

Result<std::optional<FormReader::Part>> FormReader::Next(size_t& budget) {
  if (done_) return std::optional<Part>();
  // Skip the preamble or the rest of the current part (both end at the delimiter); what is
  // skipped is charged like field data.
  in_part_ = true;
  for (;;) {
    char sink[4096];
    auto n = ReadContent(sink, sizeof(sink));
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    if (*n > budget) return MakeError(ErrorCode::kMaxPostPreDataLengthExceeded);
    budget -= *n;
  }
  // Consume the delimiter, then "--" (the end) or the line break before the part's headers.
  while (buf_.size() - pos_ < delimiter_.size() + 2) {
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return Malformed("The body ended inside a boundary.");
  }
  pos_ += delimiter_.size();
  if (buf_.compare(pos_, 2, "--") == 0) {
    done_ = true;
    return std::optional<Part>();
  }
  // Transport padding (blanks) may follow a boundary before its line break; then come the
  // part's headers, which a blank line ends (a part without headers has no name: malformed).
  for (;;) {
    while (pos_ < buf_.size() && (buf_[pos_] == ' ' || buf_[pos_] == '\t')) {
      ++pos_;
      if (budget-- == 0) return MakeError(ErrorCode::kMaxPostPreDataLengthExceeded);
    }
    if (pos_ + 4 <= buf_.size()) break;
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return Malformed("The body ended inside a boundary.");
  }
  if (buf_.compare(pos_, 2, "\r\n") != 0) return Malformed("A boundary is not followed by CRLF.");
  pos_ += 2;
  if (buf_.compare(pos_, 2, "\r\n") == 0) return Malformed("A part has no Content-Disposition.");

  // Headers up to the blank line, charged against the budget.
  size_t end;
  for (;;) {
    end = buf_.find("\r\n\r\n", pos_);
    if (end != std::string::npos) break;
    if (buf_.size() - pos_ > budget) return MakeError(ErrorCode::kMaxPostPreDataLengthExceeded);
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return Malformed("The body ended inside part headers.");
  }
  std::string_view block(buf_.data() + pos_, end + 2 - pos_);
  size_t consumed = (end + 4) - pos_;
  if (consumed > budget) return MakeError(ErrorCode::kMaxPostPreDataLengthExceeded);
  budget -= consumed;

  Part part;
  bool have_disposition = false;
  size_t line_start = 0;
  while (line_start < block.size()) {
    size_t eol = block.find("\r\n", line_start);
    if (eol == std::string_view::npos) eol = block.size();
    std::string_view line = block.substr(line_start, eol - line_start);
    line_start = eol + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Malformed("A part header has no ':'.");
    std::string name = ToLower(Trim(line.substr(0, colon)));
    std::string_view value = Trim(line.substr(colon + 1));
    if (name == "content-disposition") {
      if (ToLower(Trim(value.substr(0, value.find(';')))) != "form-data")
        return Malformed("A part is not form-data.");
      auto params = HeaderParams(value);
      auto n = params.find("name");
      if (n == params.end()) return Malformed("A part has no name.");
      part.name = n->second;
      if (auto f = params.find("filename"); f != params.end()) part.filename = f->second;
      have_disposition = true;
    } else if (name == "content-type") {
      part.content_type = std::string(value);
    }
  }
  if (!have_disposition) return Malformed("A part has no Content-Disposition.");
  pos_ = end + 4;
  in_part_ = true;
  return std::optional<Part>(std::move(part));
}

Result<std::string> FormReader::ReadValue(size_t& budget) {
  std::string out;
  char chunk[4096];
  for (;;) {
    auto n = ReadContent(chunk, sizeof(chunk));
    if (!n.ok()) return n.error();
    if (*n == 0) return out;
    if (*n > budget) return MakeError(ErrorCode::kMaxPostPreDataLengthExceeded);
    budget -= *n;
    out.append(chunk, *n);
  }
}

Result<PostPolicy> ParsePostPolicy(std::string_view policy_b64) {
  auto raw = hash::Base64Decode(Trim(policy_b64));
  if (!raw) return BadPolicy("Invalid Base64 encoding.");
  auto doc = nlohmann::json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return BadPolicy("Invalid JSON.");
  PostPolicy p;
  auto exp = doc.find("expiration");
  if (exp == doc.end()) return BadPolicy("Policy missing expiration.");
  if (!exp->is_string()) return BadPolicy("Invalid 'expiration' value.");
  auto t = ParseIso8601(exp->get_ref<const std::string&>());
  if (!t) return BadPolicy("Invalid 'expiration' value: '" + exp->get<std::string>() + "'");
  p.expiration_unix = *t;
  auto conds = doc.find("conditions");
  if (conds == doc.end()) return BadPolicy("Policy missing conditions.");
  if (!conds->is_array()) return BadPolicy("Invalid 'conditions' value.");
  for (const auto& c : *conds) {
    if (c.is_object()) {
      // {"field": "value"}: an exact match.
      for (const auto& [k, v] : c.items()) {
        if (!v.is_string()) return BadPolicy("Invalid Condition: " + c.dump());
        PolicyCondition pc;
        pc.field = ToLower(k);
        pc.value = v.get<std::string>();
        pc.text = "[\"eq\", " + Quoted("$" + k) + ", " + Quoted(pc.value) + "]";
        p.conditions.push_back(std::move(pc));
      }
      continue;
    }
    if (!c.is_array() || c.size() != 3 || !c[0].is_string())
      return BadPolicy("Invalid Condition: " + c.dump());
    std::string op = ToLower(c[0].get<std::string>());
    PolicyCondition pc;
    if (op == "content-length-range") {
      auto lo = JsonInt(c[1]), hi = JsonInt(c[2]);
      if (!lo || !hi || *lo < 0 || *hi < *lo)
        return BadPolicy("Invalid content-length-range: " + c.dump());
      pc.op = PolicyCondition::Op::kContentLengthRange;
      pc.min = *lo;
      pc.max = *hi;
      p.length_range = std::make_pair(*lo, *hi);
    } else if (op == "eq" || op == "starts-with") {
      if (!c[1].is_string() || !c[2].is_string())
        return BadPolicy("Invalid Condition: " + c.dump());
      std::string field = c[1].get<std::string>();
      if (field.empty() || field[0] != '$')
        return BadPolicy("Invalid Condition: field must start with '$': " + c.dump());
      pc.op = op == "eq" ? PolicyCondition::Op::kEq : PolicyCondition::Op::kStartsWith;
      pc.field = ToLower(std::string_view(field).substr(1));
      pc.value = c[2].get<std::string>();
      pc.text = "[" + Quoted(c[0].get<std::string>()) + ", " + Quoted(field) + ", " +
                Quoted(pc.value) + "]";
    } else {
      return BadPolicy("Invalid Condition: unknown operation " + Quoted(c[0].get<std::string>()));
    }
    p.conditions.push_back(std::move(pc));
  }
  return p;
}

Status CheckPostPolicy(const PostPolicy& policy, const std::map<std::string, std::string>& fields,
                       int64_t now_unix, std::string_view key_as_sent) {
  if (now_unix > policy.expiration_unix) return Denied("Policy expired.");
  auto value_of = [&](const std::string& name) -> std::string {
    auto it = fields.find(name);
    return it == fields.end() ? std::string() : it->second;
  };
  for (const auto& c : policy.conditions) {
    if (c.op == PolicyCondition::Op::kContentLengthRange) continue;
    std::string v = value_of(c.field);
    auto holds = [&](std::string_view x) {
      return c.op == PolicyCondition::Op::kEq ? x == c.value : x.starts_with(c.value);
    };
    bool ok = holds(v) || (c.field == "key" && !key_as_sent.empty() && holds(key_as_sent));
    if (!ok) return Denied("Policy Condition failed: " + c.text);
  }
  // Every field must be covered by a condition, except the signature's own and x-ignore-*.
  for (const auto& [name, value] : fields) {
    if (name == "policy" || name == "x-amz-signature" || name == "signature" ||
        name == "awsaccesskeyid" || name == "file" || name == "bucket" ||
        name.starts_with("x-ignore-"))
      continue;
    bool covered = std::any_of(policy.conditions.begin(), policy.conditions.end(),
                               [&](const PolicyCondition& c) { return c.field == name; });
    if (!covered) return Denied("Extra input fields: " + name);
  }
  return {};
}

}  // namespace rdmastor::s3
