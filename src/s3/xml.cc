#include "s3/xml.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <optional>
#include <pugixml.hpp>
#include <type_traits>

#include "common/checksum.h"
#include "common/hash.h"
#include "common/text.h"
#include "common/uri.h"

namespace rdmastor::s3 {

namespace {

constexpr const char* kS3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/";
constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr int kMaxDeleteObjects = 1000;
constexpr int kMaxPartNumber = 10000;

constexpr const char* kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kLongWeekdays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// ---------------------------------------------------------------------------------------------
// Time.

struct Civil {
  int year;
  unsigned month, day, hour, minute, second, millis;
  unsigned weekday;  // 0 = Sunday
};

Civil ToCivil(int64_t unix_ns) {
  using namespace std::chrono;
  // Floor division so pre-1970 instants land in the right second.
  int64_t secs = unix_ns / kNsPerSec;
  int64_t rem = unix_ns % kNsPerSec;
  if (rem < 0) {
    rem += kNsPerSec;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  const sys_days sd{std::chrono::days{days}};
  const year_month_day ymd{sd};
  const weekday wd{sd};
  Civil c;
  c.year = static_cast<int>(ymd.year());
  c.month = static_cast<unsigned>(ymd.month());
  c.day = static_cast<unsigned>(ymd.day());
  c.hour = static_cast<unsigned>(sod / 3600);
  c.minute = static_cast<unsigned>(sod % 3600 / 60);
  c.second = static_cast<unsigned>(sod % 60);
  c.millis = static_cast<unsigned>(rem / 1'000'000);
  c.weekday = wd.c_encoding();
  return c;
}

// Minimal cursor over a date string; every accessor fails softly so malformed input is just
// "no date".
class Cursor : public text::Cursor {
 public:
  using text::Cursor::Cursor;
  bool EatSpaces() {  // one or more
    size_t start = i_;
    while (i_ < t_.size() && t_[i_] == ' ') ++i_;
    return i_ > start;
  }
  std::string_view Word() {
    size_t start = i_;
    while (i_ < t_.size() && ((t_[i_] >= 'A' && t_[i_] <= 'Z') || (t_[i_] >= 'a' && t_[i_] <= 'z')))
      ++i_;
    return t_.substr(start, i_ - start);
  }
  // Exactly min..max digits.
  std::optional<int> Number(size_t min, size_t max) {
    size_t start = i_;
    int v = 0;
    while (i_ < t_.size() && i_ - start < max && t_[i_] >= '0' && t_[i_] <= '9') {
      v = v * 10 + (t_[i_] - '0');
      ++i_;
    }
    if (i_ - start < min) return std::nullopt;
    if (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') return std::nullopt;  // too many
    return v;
  }
};

std::optional<unsigned> MonthIndex(std::string_view w) {
  for (unsigned m = 0; m < 12; ++m)
    if (w == kMonths[m]) return m + 1;
  return std::nullopt;
}

bool IsWeekday(std::string_view w, bool long_form) {
  for (int d = 0; d < 7; ++d)
    if (w == (long_form ? kLongWeekdays[d] : kWeekdays[d])) return true;
  return false;
}

struct Hms {
  int h, m, s;
};
std::optional<Hms> ParseTime(Cursor& c) {
  auto h = c.Number(2, 2);
  if (!h || !c.Eat(':')) return std::nullopt;
  auto m = c.Number(2, 2);
  if (!m || !c.Eat(':')) return std::nullopt;
  auto s = c.Number(2, 2);
  if (!s) return std::nullopt;
  if (*h > 23 || *m > 59 || *s > 60) return std::nullopt;  // 60: leap second
  return Hms{*h, *m, *s};
}

bool EatZone(Cursor& c) {
  std::string_view z = c.Word();
  return z == "GMT" || z == "UTC";
}

std::optional<int64_t> ToUnix(int year, unsigned month, int day, const Hms& t) {
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year{year}, std::chrono::month{month},
                           std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  const int64_t days = sys_days{ymd}.time_since_epoch().count();
  return days * 86400 + t.h * 3600 + t.m * 60 + t.s;
}

// RFC 7231 7.1.1.1: a two-digit year that would be more than 50 years in the future is in the
// past century.
int ExpandTwoDigitYear(int yy) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  const int this_year = tm.tm_year + 1900;
  int year = this_year / 100 * 100 + yy;
  if (year > this_year + 50) year -= 100;
  return year;
}

// ---------------------------------------------------------------------------------------------
// XML generation.

// Collects pugixml output into a std::string. pugixml writes a CR inside text as a raw byte, which
// every XML parser turns into LF (end-of-line normalisation), so a key containing CR would come
// back altered; S3 sends it as a character reference, and so do we. Compact output has no CR of
// its own, so each one met here belongs to a value.
class StringWriter : public pugi::xml_writer {
 public:
  explicit StringWriter(std::string& out) : out_(out) {}
  void write(const void* data, size_t size) override {
    std::string_view chunk(static_cast<const char*>(data), size);
    for (size_t cr; (cr = chunk.find('\r')) != std::string_view::npos;) {
      out_.append(chunk.substr(0, cr));
      out_ += "&#13;";
      chunk.remove_prefix(cr + 1);
    }
    out_.append(chunk);
  }

 private:
  std::string& out_;
};

// A response document: declaration plus one root element.
class Doc {
 public:
  Doc(const char* root_name, bool with_namespace = true) {
    pugi::xml_node decl = doc_.append_child(pugi::node_declaration);
    decl.append_attribute("version") = "1.0";
    decl.append_attribute("encoding") = "UTF-8";
    root_ = doc_.append_child(root_name);
    if (with_namespace) root_.append_attribute("xmlns") = kS3Namespace;
  }
  pugi::xml_node root() { return root_; }
  std::string str() {
    std::string out;
    StringWriter w(out);
    // Compact output as S3 sends; the declaration node above is printed as is.
    doc_.save(w, "", pugi::format_raw, pugi::encoding_utf8);
    return out;
  }

 private:
  pugi::xml_document doc_;
  pugi::xml_node root_;
};

pugi::xml_node Add(pugi::xml_node parent, const char* name, std::string_view text) {
  pugi::xml_node n = parent.append_child(name);
  n.text().set(text.data(), text.size());
  return n;
}
pugi::xml_node Add(pugi::xml_node parent, const char* name, const char* text) {
  return Add(parent, name, std::string_view(text));
}
pugi::xml_node Add(pugi::xml_node parent, const char* name, const std::string& text) {
  return Add(parent, name, std::string_view(text));
}
template <class Int, class = std::enable_if_t<std::is_integral_v<Int>>>
pugi::xml_node Add(pugi::xml_node parent, const char* name, Int v) {
  return Add(parent, name, std::to_string(v));
}
pugi::xml_node AddBool(pugi::xml_node parent, const char* name, bool v) {
  return Add(parent, name, v ? "true" : "false");
}

std::string Quote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') return std::string(etag);
  std::string q;
  q.reserve(etag.size() + 2);
  q += '"';
  q += etag;
  q += '"';
  return q;
}

void AddOwner(pugi::xml_node parent, const char* name, const Owner& owner) {
  pugi::xml_node o = parent.append_child(name);
  Add(o, "ID", owner.id);
  Add(o, "DisplayName", owner.display_name);
}

// An entry's owner: the listing's default for "" (the bucket owner), else as `names` shows it.
Owner EntryOwner(const Owner& dflt, const OwnerNames* names, const std::string& owner_key) {
  return owner_key.empty() || !names ? dflt : (*names)(owner_key);
}

// The value as written in a listing: S3's encoding-type=url keeps '/' readable.
std::string MaybeEncode(std::string_view s, bool encode_url) {
  return encode_url ? uri::Encode(s, /*encode_slash=*/false) : std::string(s);
}

// What every listing opens with, in S3's order: Name, Prefix, `own` (the listing's own markers),
// MaxKeys, Delimiter, IsTruncated.
// ListObjects (v1) writes its top-level Prefix as sent even with encoding-type=url (AWS; SDKs
// decode only the fields AWS encodes there).
template <class Params>
void AddListStart(pugi::xml_node root, const Params& p, bool truncated,
                  const std::function<void()>& own) {
  Add(root, "Name", p.bucket);
  Add(root, "Prefix",
      MaybeEncode(p.prefix, p.encode_url && !std::is_same_v<Params, ListV1Params>));
  own();
  Add(root, "MaxKeys", p.max_keys);
  if (!p.delimiter.empty()) Add(root, "Delimiter", MaybeEncode(p.delimiter, p.encode_url));
  AddBool(root, "IsTruncated", truncated);
}

// What every listing ends with: CommonPrefixes, and EncodingType when names are encoded.
void AddListEnd(pugi::xml_node root, const std::vector<std::string>& prefixes, bool encode_url) {
  for (const std::string& p : prefixes) {
    Add(root.append_child("CommonPrefixes"), "Prefix", MaybeEncode(p, encode_url));
  }
  if (encode_url) Add(root, "EncodingType", "url");
}

std::string_view ChecksumElement(std::string_view algo) {
  if (algo == "crc32") return "ChecksumCRC32";
  if (algo == "crc32c") return "ChecksumCRC32C";
  if (algo == "crc64nvme") return "ChecksumCRC64NVME";
  if (algo == "sha1") return "ChecksumSHA1";
  if (algo == "sha256") return "ChecksumSHA256";
  return {};
}

// ChecksumCRC32 etc., one element per stored checksum.
void AddChecksumValues(pugi::xml_node parent, const std::map<std::string, std::string>& sums) {
  for (const auto& [algo, value] : sums) {
    const std::string_view el = ChecksumElement(algo);
    if (!el.empty()) Add(parent, std::string(el).c_str(), value);
  }
}

// The values and the ChecksumType their form tells (a composite value ends in "-N").
void AddChecksumsWithType(pugi::xml_node parent, const std::map<std::string, std::string>& sums) {
  AddChecksumValues(parent, sums);
  if (!sums.empty())
    Add(parent, "ChecksumType", checksum::TypeName(checksum::TypeOfValue(sums.begin()->second)));
}

void AddListedMetadata(pugi::xml_node c, const ListedMetadata* extra) {
  if (!extra) return;
  if (!extra->metadata.empty()) {
    pugi::xml_node m = c.append_child("UserMetadata");
    for (const auto& [name, value] : extra->metadata) Add(m, name.c_str(), value);
  }
  if (!extra->tags.empty()) Add(c, "UserTags", extra->tags);
}

void AddContents(pugi::xml_node root, const char* element, const storage::ObjectInfo& o,
                 bool encode_url, const Owner* owner, bool version_fields,
                 const ListedMetadata* extra = nullptr) {
  pugi::xml_node c = root.append_child(element);
  Add(c, "Key", MaybeEncode(o.key, encode_url));
  if (version_fields) {
    Add(c, "VersionId", "null");
    AddBool(c, "IsLatest", true);
  }
  Add(c, "LastModified", Iso8601(o.mtime_ns));
  Add(c, "ETag", Quote(o.etag));
  // As AWS lists an object stored with a checksum: its algorithm and type.
  for (const auto& [algo, value] : o.checksums) {
    if (auto a = hash::ChecksumAlgoFromName(algo)) {
      Add(c, "ChecksumAlgorithm", checksum::UpperName(*a));
      Add(c, "ChecksumType", checksum::TypeName(checksum::TypeOfValue(value)));
      break;
    }
  }
  Add(c, "Size", o.size);
  if (owner) AddOwner(c, "Owner", *owner);
  Add(c, "StorageClass", o.storage_class.empty() ? "STANDARD" : o.storage_class);
  AddListedMetadata(c, extra);
}

// Identifies this server in error documents (S3's HostId); stable per host, reveals nothing.
const std::string& HostId() {
  static const std::string id = [] {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (const char* p = name; *p; ++p) {
      h ^= static_cast<unsigned char>(*p);
      h *= 1099511628211ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return std::string(buf);
  }();
  return id;
}

// ---------------------------------------------------------------------------------------------
// XML parsing.

std::string_view LocalName(const pugi::xml_node& n) {
  std::string_view name = n.name();
  const size_t colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Parses a request body into `doc` and returns its single root element, or null on anything that
// is not a plain well-formed document. pugixml never expands DTD entities; a DOCTYPE is refused
// outright so entity tricks (XXE, billion laughs) cannot even be attempted.
pugi::xml_node LoadBody(std::string_view body, pugi::xml_document& doc) {
  const unsigned opts = pugi::parse_default | pugi::parse_ws_pcdata_single | pugi::parse_doctype;
  const pugi::xml_parse_result res =
      doc.load_buffer(body.data(), body.size(), opts, pugi::encoding_utf8);
  if (!res) return {};
  pugi::xml_node root;
  for (pugi::xml_node c = doc.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_doctype) return {};
    if (c.type() == pugi::node_element) {
      if (root) return {};  // more than one root element
      root = c;
    }
  }
  return root;
}

// Non-negative decimal integer, surrounding whitespace allowed; saturates instead of overflowing.
std::optional<int64_t> ParseUint(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v > (std::numeric_limits<int64_t>::max() - 9) / 10 ? std::numeric_limits<int64_t>::max()
                                                           : v * 10 + (c - '0');
  }
  return v;
}

// A decimal integer that may be negative (a period of -1 days is a number, just not a valid one).
std::optional<int64_t> ParseInt(std::string_view s) {
  s = Trim(s);
  const bool negative = s.starts_with('-');
  auto n = ParseUint(negative ? s.substr(1) : s);
  if (!n) return std::nullopt;
  return negative ? -*n : *n;
}

Error Malformed(std::string detail = {}) {
  return MakeError(ErrorCode::kMalformedXML, std::move(detail));
}

// What an error document echoes of the request is cut to this many bytes (at a UTF-8 character
// boundary): the longest real resource is /bucket(63)/key(1024), and a 16 KiB request path must
// not buy a 16 KiB answer (amplification, and a client that never reads fills our socket faster).
constexpr size_t kMaxEchoBytes = 1100;

std::string_view CapEcho(std::string_view s) {
  if (s.size() <= kMaxEchoBytes) return s;
  size_t n = kMaxEchoBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // continuation byte
  return s.substr(0, n);
}

}  // namespace

std::optional<std::string> LeafText(const pugi::xml_node& n) {
  std::string out;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
      out += c.value();
    } else if (c.type() == pugi::node_element) {
      return std::nullopt;
    }
  }
  return out;
}

// -----------------------------------------------------------------------------------------------
// Dates.

std::string Iso8601(int64_t unix_ns) {
  const Civil c = ToCivil(unix_ns);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ", c.year, c.month, c.day,
                c.hour, c.minute, c.second, c.millis);
  return buf;
}

std::string HttpDate(int64_t unix_ns) {
  const Civil c = ToCivil(unix_ns);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s, %02u %s %04d %02u:%02u:%02u GMT", kWeekdays[c.weekday],
                c.day, kMonths[c.month - 1], c.year, c.hour, c.minute, c.second);
  return buf;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  s = Trim(s);
  Cursor c(s);
  const std::string_view wd = c.Word();
  if (c.Eat(',')) {
    if (!c.EatSpaces()) return std::nullopt;
    const auto day = c.Number(1, 2);
    if (!day) return std::nullopt;
    if (c.Eat(' ')) {
      // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
      if (!IsWeekday(wd, false)) return std::nullopt;
      const auto mon = MonthIndex(c.Word());
      if (!mon || !c.Eat(' ')) return std::nullopt;
      const auto year = c.Number(4, 4);
      if (!year || !c.Eat(' ')) return std::nullopt;
      const auto t = ParseTime(c);
      if (!t || !c.Eat(' ') || !EatZone(c) || !c.AtEnd()) return std::nullopt;
      return ToUnix(*year, *mon, *day, *t);
    }
    if (c.Eat('-')) {
      // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
      if (!IsWeekday(wd, true)) return std::nullopt;
      const auto mon = MonthIndex(c.Word());
      if (!mon || !c.Eat('-')) return std::nullopt;
      const auto yy = c.Number(2, 2);
      if (!yy || !c.Eat(' ')) return std::nullopt;
      const auto t = ParseTime(c);
      if (!t || !c.Eat(' ') || !EatZone(c) || !c.AtEnd()) return std::nullopt;
      return ToUnix(ExpandTwoDigitYear(*yy), *mon, *day, *t);
    }
    return std::nullopt;
  }
  // asctime: Sun Nov  6 08:49:37 1994
  if (!IsWeekday(wd, false) || !c.Eat(' ')) return std::nullopt;
  const auto mon = MonthIndex(c.Word());
  if (!mon || !c.EatSpaces()) return std::nullopt;
  const auto day = c.Number(1, 2);
  if (!day || !c.Eat(' ')) return std::nullopt;
  const auto t = ParseTime(c);
  if (!t || !c.Eat(' ')) return std::nullopt;
  const auto year = c.Number(4, 4);
  if (!year || !c.AtEnd()) return std::nullopt;
  return ToUnix(*year, *mon, *day, *t);
}

// -----------------------------------------------------------------------------------------------
// Response documents.

std::string ErrorXml(std::string_view code, std::string_view message, std::string_view resource,
                     std::string_view request_id,
                     const std::vector<std::pair<std::string, std::string>>& details) {
  Doc d("Error", /*with_namespace=*/false);  // S3 error documents carry no namespace
  pugi::xml_node r = d.root();
  Add(r, "Code", code);
  Add(r, "Message", CapEcho(message));
  for (const auto& [name, value] : details) Add(r, name.c_str(), value);
  Add(r, "Resource", CapEcho(resource));
  Add(r, "RequestId", request_id);
  Add(r, "HostId", HostId());
  return d.str();
}

std::string ListBucketsXml(const std::vector<storage::BucketInfo>& buckets, const Owner& owner,
                           const ListBucketsParams& p) {
  Doc d("ListAllMyBucketsResult");
  AddOwner(d.root(), "Owner", owner);
  pugi::xml_node list = d.root().append_child("Buckets");
  for (const auto& b : buckets) {
    pugi::xml_node n = list.append_child("Bucket");
    Add(n, "Name", b.name);
    Add(n, "CreationDate", Iso8601(b.created_ns));
    if (!p.region.empty()) Add(n, "BucketRegion", p.region);
  }
  if (!p.continuation_token.empty()) Add(d.root(), "ContinuationToken", p.continuation_token);
  if (p.prefix) Add(d.root(), "Prefix", *p.prefix);
  return d.str();
}

std::string LocationXml(std::string_view region) {
  Doc d("LocationConstraint");
  // S3 reports the default region as an empty constraint.
  if (region != "us-east-1") d.root().text().set(region.data(), region.size());
  return d.str();
}

std::string ListObjectsV1Xml(const ListV1Params& p, const storage::ListResult& r,
                             const Owner& owner, const OwnerNames* names) {
  Doc d("ListBucketResult");
  pugi::xml_node root = d.root();
  const bool enc = p.encode_url;
  AddListStart(root, p, r.truncated, [&] { Add(root, "Marker", MaybeEncode(p.marker, enc)); });
  // As S3: NextMarker only with a delimiter; without one clients continue from the last Key.
  if (r.truncated && !p.delimiter.empty()) Add(root, "NextMarker", MaybeEncode(r.next_marker, enc));
  for (const auto& o : r.objects) {
    const Owner shown = EntryOwner(owner, names, o.owner);
    AddContents(root, "Contents", o, enc, &shown, false);
  }
  AddListEnd(root, r.common_prefixes, enc);
  return d.str();
}

std::string ListObjectsV2Xml(const ListV2Params& p, const storage::ListResult& r,
                             const Owner& owner, const OwnerNames* names) {
  Doc d("ListBucketResult");
  pugi::xml_node root = d.root();
  const bool enc = p.encode_url;
  AddListStart(root, p, r.truncated,
               [&] { Add(root, "KeyCount", r.objects.size() + r.common_prefixes.size()); });
  if (p.continuation_token_sent || !p.continuation_token.empty())
    Add(root, "ContinuationToken", p.continuation_token);
  if (r.truncated) Add(root, "NextContinuationToken", p.next_continuation_token);
  if (!p.start_after.empty()) Add(root, "StartAfter", MaybeEncode(p.start_after, enc));
  for (size_t i = 0; i < r.objects.size(); ++i) {
    const Owner shown = EntryOwner(owner, names, r.objects[i].owner);
    AddContents(root, "Contents", r.objects[i], enc, p.fetch_owner ? &shown : nullptr, false,
                i < p.extras.size() ? &p.extras[i] : nullptr);
  }
  AddListEnd(root, r.common_prefixes, enc);
  return d.str();
}

std::string ListObjectVersionsXml(const ListVersionsParams& p, const storage::ListResult& r,
                                  const Owner& owner, const OwnerNames* names) {
  Doc d("ListVersionsResult");
  pugi::xml_node root = d.root();
  const bool enc = p.encode_url;
  AddListStart(root, p, r.truncated, [&] {
    Add(root, "KeyMarker", MaybeEncode(p.key_marker, enc));
    Add(root, "VersionIdMarker", p.version_id_marker);
  });
  if (r.truncated) {
    Add(root, "NextKeyMarker", MaybeEncode(p.next_key_marker, enc));
    Add(root, "NextVersionIdMarker", p.next_version_id_marker);
  }
  for (size_t i = 0; i < r.objects.size(); ++i) {
    const storage::ObjectInfo& o = r.objects[i];
    const std::string vid = o.version_id.empty() ? "null" : o.version_id;
    // A delete marker has what a version opens with, then its owner.
    pugi::xml_node c = root.append_child(o.delete_marker ? "DeleteMarker" : "Version");
    Add(c, "Key", MaybeEncode(o.key, enc));
    Add(c, "VersionId", vid);
    AddBool(c, "IsLatest", o.is_latest);
    Add(c, "LastModified", Iso8601(o.mtime_ns));
    const Owner shown = EntryOwner(owner, names, o.owner);
    if (o.delete_marker) {
      AddOwner(c, "Owner", shown);
      continue;
    }
    Add(c, "ETag", Quote(o.etag));
    Add(c, "Size", o.size);
    AddOwner(c, "Owner", shown);
    Add(c, "StorageClass", o.storage_class.empty() ? "STANDARD" : o.storage_class);
    AddListedMetadata(c, i < p.extras.size() ? &p.extras[i] : nullptr);
  }
  AddListEnd(root, r.common_prefixes, enc);
  return d.str();
}

std::string CopyObjectResultXml(std::string_view etag, int64_t mtime_ns,
                                const std::map<std::string, std::string>& checksums) {
  Doc d("CopyObjectResult");
  Add(d.root(), "ETag", Quote(etag));
  Add(d.root(), "LastModified", Iso8601(mtime_ns));
  AddChecksumsWithType(d.root(), checksums);
  return d.str();
}

std::string CopyPartResultXml(std::string_view etag, int64_t mtime_ns,
                              const std::map<std::string, std::string>& checksums) {
  Doc d("CopyPartResult");
  Add(d.root(), "ETag", Quote(etag));
  Add(d.root(), "LastModified", Iso8601(mtime_ns));
  AddChecksumValues(d.root(), checksums);
  return d.str();
}

std::string InitiateMultipartUploadXml(std::string_view bucket, std::string_view key,
                                       std::string_view upload_id) {
  Doc d("InitiateMultipartUploadResult");
  Add(d.root(), "Bucket", bucket);
  Add(d.root(), "Key", key);
  Add(d.root(), "UploadId", upload_id);
  return d.str();
}

std::string CompleteMultipartUploadXml(std::string_view location, std::string_view bucket,
                                       std::string_view key, std::string_view etag,
                                       const std::map<std::string, std::string>& checksums) {
  Doc d("CompleteMultipartUploadResult");
  Add(d.root(), "Location", location);
  Add(d.root(), "Bucket", bucket);
  Add(d.root(), "Key", key);
  Add(d.root(), "ETag", Quote(etag));
  AddChecksumsWithType(d.root(), checksums);
  return d.str();
}

std::string PostResponseXml(std::string_view location, std::string_view bucket,
                            std::string_view key, std::string_view etag) {
  Doc d("PostResponse", false);  // AWS sends it without a namespace
  Add(d.root(), "Location", location);
  Add(d.root(), "Bucket", bucket);
  Add(d.root(), "Key", key);
  Add(d.root(), "ETag", Quote(etag));
  return d.str();
}

std::string ListPartsXml(const ListPartsParams& p, const std::vector<storage::PartInfo>& parts,
                         const Owner& owner) {
  std::vector<const storage::PartInfo*> sorted;
  sorted.reserve(parts.size());
  for (const auto& part : parts)
    if (part.number > p.part_number_marker) sorted.push_back(&part);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->number < b->number; });
  const size_t limit = p.max_parts > 0 ? static_cast<size_t>(p.max_parts) : 0;
  // max-parts=0 lists nothing and must not claim more follows (a client would loop forever).
  const bool truncated = limit > 0 && sorted.size() > limit;
  if (sorted.size() > limit) sorted.resize(limit);

  Doc d("ListPartsResult");
  pugi::xml_node root = d.root();
  Add(root, "Bucket", p.bucket);
  Add(root, "Key", p.key);
  Add(root, "UploadId", p.upload_id);
  AddOwner(root, "Initiator", owner);
  AddOwner(root, "Owner", owner);
  Add(root, "StorageClass", p.storage_class.empty() ? "STANDARD" : p.storage_class);
  if (!p.checksum_algorithm.empty()) {
    Add(root, "ChecksumAlgorithm", p.checksum_algorithm);
    Add(root, "ChecksumType", p.checksum_type);
  }
  Add(root, "PartNumberMarker", p.part_number_marker);
  Add(root, "NextPartNumberMarker", sorted.empty() ? p.part_number_marker : sorted.back()->number);
  Add(root, "MaxParts", p.max_parts);
  AddBool(root, "IsTruncated", truncated);
  for (const auto* part : sorted) {
    pugi::xml_node n = root.append_child("Part");
    Add(n, "PartNumber", part->number);
    Add(n, "LastModified", Iso8601(part->mtime_ns));
    Add(n, "ETag", Quote(part->etag));
    Add(n, "Size", part->size);
    AddChecksumValues(n, part->checksums);
  }
  return d.str();
}

std::string GetObjectAttributesXml(const ObjectAttributesParams& p,
                                   const storage::ObjectInfo& info) {
  Doc d("GetObjectAttributesResponse");
  pugi::xml_node root = d.root();
  if (p.etag) Add(root, "ETag", info.etag);  // unquoted, as AWS writes it here
  if (p.checksum && !info.checksums.empty())
    AddChecksumsWithType(root.append_child("Checksum"), info.checksums);
  if (p.object_parts && info.part_count > 0) {
    pugi::xml_node parts = root.append_child("ObjectParts");
    const int total = info.part_count;
    const int first = std::max(p.part_number_marker, 0) + 1;
    const int last = std::min(total, first + std::max(p.max_parts, 0) - 1);
    const bool truncated = p.max_parts > 0 && last < total;
    Add(parts, "PartsCount", total);
    Add(parts, "PartNumberMarker", p.part_number_marker);
    Add(parts, "NextPartNumberMarker", last >= first ? last : p.part_number_marker);
    Add(parts, "MaxParts", p.max_parts);
    AddBool(parts, "IsTruncated", truncated);
    for (int n = first; n <= last; ++n) {
      pugi::xml_node part = parts.append_child("Part");
      Add(part, "PartNumber", n);
      Add(part, "Size", info.part_sizes[static_cast<size_t>(n - 1)]);
      if (info.part_checksums.size() == info.part_sizes.size())
        AddChecksumValues(part, info.part_checksums[static_cast<size_t>(n - 1)]);
    }
  }
  if (p.storage_class) Add(root, "StorageClass", p.storage_class_name);
  if (p.object_size) Add(root, "ObjectSize", info.size);
  return d.str();
}

std::string ListMultipartUploadsXml(const ListUploadsParams& p,
                                    const std::vector<storage::UploadInfo>& uploads,
                                    const Owner& owner, const OwnerNames* names) {
  // The object layer hands over every upload under the prefix; marker, delimiter and max-uploads
  // are applied here, in S3's (key, upload id) order.
  std::vector<const storage::UploadInfo*> sorted;
  sorted.reserve(uploads.size());
  for (const auto& u : uploads) {
    if (u.key.compare(0, p.prefix.size(), p.prefix) != 0) continue;
    if (!p.key_marker.empty()) {
      if (p.upload_id_marker.empty()) {
        if (u.key <= p.key_marker) continue;
      } else if (u.key < p.key_marker ||
                 (u.key == p.key_marker && u.upload_id <= p.upload_id_marker)) {
        continue;
      }
    }
    sorted.push_back(&u);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->key != b->key ? a->key < b->key : a->upload_id < b->upload_id;
  });

  const size_t limit = p.max_uploads > 0 ? static_cast<size_t>(p.max_uploads) : 0;
  std::vector<const storage::UploadInfo*> listed;
  std::vector<std::string> prefixes;
  bool truncated = false;
  std::string next_key, next_upload_id;
  for (const auto* u : sorted) {
    std::string common;
    if (!p.delimiter.empty()) {
      const size_t pos = u->key.find(p.delimiter, p.prefix.size());
      if (pos != std::string::npos) common = u->key.substr(0, pos + p.delimiter.size());
    }
    // Uploads rolled into a prefix that was already returned (on this page or as the marker that
    // ended the previous one) are not entries of their own.
    if (!common.empty() &&
        ((!prefixes.empty() && prefixes.back() == common) || common == p.key_marker)) {
      continue;
    }
    if (listed.size() + prefixes.size() >= limit) {
      truncated = limit > 0;
      break;
    }
    if (!common.empty()) {
      prefixes.push_back(common);
      next_key = common;
      next_upload_id.clear();
    } else {
      listed.push_back(u);
      next_key = u->key;
      next_upload_id = u->upload_id;
    }
  }

  const bool enc = p.encode_url;
  Doc d("ListMultipartUploadsResult");
  pugi::xml_node root = d.root();
  Add(root, "Bucket", p.bucket);
  Add(root, "KeyMarker", MaybeEncode(p.key_marker, enc));
  Add(root, "UploadIdMarker", p.upload_id_marker);
  if (truncated) {
    Add(root, "NextKeyMarker", MaybeEncode(next_key, enc));
    Add(root, "NextUploadIdMarker", next_upload_id);
  }
  Add(root, "Prefix", MaybeEncode(p.prefix, enc));
  if (!p.delimiter.empty()) Add(root, "Delimiter", MaybeEncode(p.delimiter, enc));
  Add(root, "MaxUploads", p.max_uploads);
  AddBool(root, "IsTruncated", truncated);
  for (const auto* u : listed) {
    pugi::xml_node n = root.append_child("Upload");
    Add(n, "Key", MaybeEncode(u->key, enc));
    Add(n, "UploadId", u->upload_id);
    const Owner shown = EntryOwner(owner, names, u->owner);
    AddOwner(n, "Initiator", shown);
    AddOwner(n, "Owner", shown);
    Add(n, "StorageClass", u->storage_class.empty() ? "STANDARD" : u->storage_class);
    Add(n, "Initiated", Iso8601(u->initiated_ns));
    if (auto algo = hash::ChecksumAlgoFromName(u->checksum_algorithm)) {
      Add(n, "ChecksumAlgorithm", checksum::UpperName(*algo));
      Add(n, "ChecksumType", u->checksum_type);
    }
  }
  AddListEnd(root, prefixes, enc);
  return d.str();
}

std::string DeleteResultXml(const std::vector<DeleteOutcome>& outcomes, bool quiet) {
  Doc d("DeleteResult");
  for (const auto& o : outcomes) {
    if (o.deleted) {
      if (quiet) continue;
      pugi::xml_node e = d.root().append_child("Deleted");
      Add(e, "Key", o.key);
      if (!o.version_id.empty()) Add(e, "VersionId", o.version_id);
      if (o.delete_marker) AddBool(e, "DeleteMarker", true);
      if (!o.delete_marker_version_id.empty())
        Add(e, "DeleteMarkerVersionId", o.delete_marker_version_id);
      continue;
    }
    pugi::xml_node e = d.root().append_child("Error");
    Add(e, "Key", o.key);
    if (!o.version_id.empty()) Add(e, "VersionId", o.version_id);
    Add(e, "Code", o.code);
    Add(e, "Message", o.message);
  }
  return d.str();
}

std::string VersioningConfigurationXml(storage::Versioning state,
                                       const storage::VersioningExclusions& excluded) {
  Doc d("VersioningConfiguration");
  if (state == storage::Versioning::kEnabled) Add(d.root(), "Status", "Enabled");
  if (state == storage::Versioning::kSuspended) Add(d.root(), "Status", "Suspended");
  for (const auto& p : excluded.prefixes)
    Add(d.root().append_child("ExcludedPrefixes"), "Prefix", p);
  if (excluded.folders) Add(d.root(), "ExcludeFolders", "true");
  return d.str();
}

std::string AccessControlPolicyXml(const iam::AclOwner& owner,
                                   const std::vector<iam::Grant>& grants) {
  Doc d("AccessControlPolicy");
  AddOwner(d.root(), "Owner", Owner{owner.id, owner.display_name});
  pugi::xml_node list = d.root().append_child("AccessControlList");
  for (const auto& g : grants) {
    pugi::xml_node grant = list.append_child("Grant");
    pugi::xml_node grantee = grant.append_child("Grantee");
    grantee.append_attribute("xmlns:xsi") = "http://www.w3.org/2001/XMLSchema-instance";
    grantee.append_attribute("xsi:type") = g.group ? "Group" : "CanonicalUser";
    if (g.group) {
      Add(grantee, "URI", g.uri);
    } else {
      Add(grantee, "ID", g.id);
      Add(grantee, "DisplayName", g.display_name);
    }
    Add(grant, "Permission", g.permission);
  }
  return d.str();
}

// -----------------------------------------------------------------------------------------------
// Request documents.

Result<AclRequest> ParseAccessControlPolicyXml(std::string_view body) {
  constexpr size_t kMaxGrants = 100;
  const Error malformed = MakeError(ErrorCode::kMalformedACLError);
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "AccessControlPolicy") return malformed;
  AclRequest out;
  // The text of the one child element `name` of `n` (nullopt: absent; malformed: structure).
  auto child_text = [](pugi::xml_node n, std::string_view name,
                       std::optional<std::string>& slot) -> bool {
    for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element || LocalName(c) != name) continue;
      auto v = LeafText(c);
      if (!v || slot) return false;
      slot = std::string(Trim(*v));
    }
    return true;
  };
  bool seen_list = false, seen_owner = false;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    if (name == "Owner") {
      if (seen_owner || !child_text(c, "ID", out.owner_id)) return malformed;
      seen_owner = true;
      if (!out.owner_id) out.owner_id.emplace();  // an Owner without ID: an invalid id
    } else if (name == "AccessControlList") {
      if (seen_list) return malformed;
      seen_list = true;
      for (pugi::xml_node g = c.first_child(); g; g = g.next_sibling()) {
        if (g.type() != pugi::node_element) continue;
        if (LocalName(g) != "Grant" || out.grants.size() == kMaxGrants) return malformed;
        pugi::xml_node grantee;
        std::optional<std::string> permission;
        for (pugi::xml_node f = g.first_child(); f; f = f.next_sibling()) {
          if (f.type() != pugi::node_element) continue;
          if (LocalName(f) == "Grantee" && !grantee) {
            grantee = f;
          } else if (LocalName(f) == "Permission" && !permission) {
            auto v = LeafText(f);
            if (!v) return malformed;
            permission = std::string(Trim(*v));
          } else {
            return malformed;
          }
        }
        if (!grantee || !permission) return malformed;
        if (*permission != "FULL_CONTROL" && *permission != "READ" && *permission != "WRITE" &&
            *permission != "READ_ACP" && *permission != "WRITE_ACP")
          return malformed;
        std::string_view type;
        for (pugi::xml_attribute a = grantee.first_attribute(); a; a = a.next_attribute()) {
          std::string_view an = a.name();
          if (an == "type" || (an.ends_with(":type") && !an.starts_with("xmlns"))) type = a.value();
        }
        std::optional<std::string> id, uri, email, display;
        if (!child_text(grantee, "ID", id) || !child_text(grantee, "URI", uri) ||
            !child_text(grantee, "EmailAddress", email) ||
            !child_text(grantee, "DisplayName", display))
          return malformed;
        iam::Grant grant;
        grant.permission = std::move(*permission);
        if (type == "CanonicalUser" && id) {
          grant.id = std::move(*id);
          grant.display_name = display.value_or("");
        } else if (type == "Group" && uri) {
          grant.group = true;
          grant.uri = std::move(*uri);
        } else if (type == "AmazonCustomerByEmail" && email) {
          grant.id = "email:" + *email;
        } else {
          return malformed;
        }
        out.grants.push_back(std::move(grant));
      }
    } else {
      return malformed;
    }
  }
  if (!seen_list || !seen_owner) return malformed;
  return out;
}

Result<DeleteRequest> ParseDeleteXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "Delete") return Malformed();
  DeleteRequest req;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    if (name == "Quiet") {
      const auto v = LeafText(c);
      if (!v) return Malformed();
      const std::string_view t = Trim(*v);
      if (t == "true") {
        req.quiet = true;
      } else if (t == "false") {
        req.quiet = false;
      } else {
        return Malformed();
      }
    } else if (name == "Object") {
      if (req.objects.size() >= static_cast<size_t>(kMaxDeleteObjects)) {
        return Malformed("The request must contain no more than 1000 objects.");
      }
      std::optional<std::string> key, version, etag;
      for (pugi::xml_node f = c.first_child(); f; f = f.next_sibling()) {
        if (f.type() != pugi::node_element) continue;
        const std::string_view fname = LocalName(f);
        if (fname == "Key") {
          if (key) return Malformed();  // two keys: ambiguous
          key = LeafText(f);
          if (!key) return Malformed();
        } else if (fname == "VersionId") {
          version = LeafText(f);
          if (!version) return Malformed();
        } else if (fname == "ETag") {
          etag = LeafText(f);
          if (!etag || etag->empty()) return Malformed();
        }
      }
      // Keys are taken verbatim (no trimming): whitespace is a legal part of a key.
      if (!key || key->empty()) return Malformed();
      req.objects.push_back(
          DeleteEntry{std::move(*key), version ? std::move(*version) : "", std::move(etag)});
    }
  }
  if (req.objects.empty()) return Malformed();
  return req;
}

Result<std::vector<storage::CompletePart>> ParseCompleteMultipartXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "CompleteMultipartUpload") return Malformed();
  std::vector<storage::CompletePart> parts;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element || LocalName(c) != "Part") continue;
    std::optional<std::string> number_text, etag_text;
    std::multimap<std::string, std::string> sums;
    for (pugi::xml_node f = c.first_child(); f; f = f.next_sibling()) {
      if (f.type() != pugi::node_element) continue;
      const std::string_view fname = LocalName(f);
      if (fname == "PartNumber") {
        number_text = LeafText(f);
        if (!number_text) return Malformed();
      } else if (fname == "ETag") {
        etag_text = LeafText(f);
        if (!etag_text) return Malformed();
      } else if (fname.rfind("Checksum", 0) == 0 && fname.size() > 8) {
        // ChecksumCRC32 etc.: kept as sent, checked against the stored part at Complete.
        const auto value = LeafText(f);
        if (!value) return Malformed();
        std::string algo(fname.substr(8));
        for (auto& ch : algo) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        sums.emplace(std::move(algo), std::string(Trim(*value)));
      }
    }
    if (!number_text || !etag_text) return Malformed();
    const auto number = ParseUint(*number_text);
    if (!number) return Malformed();
    if (*number < 1 || *number > kMaxPartNumber) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Part number must be an integer between 1 and 10000, inclusive");
    }
    std::string_view etag = Trim(*etag_text);
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
      etag = etag.substr(1, etag.size() - 2);
    }
    if (etag.empty()) return Malformed();
    parts.push_back(
        storage::CompletePart{static_cast<int>(*number), std::string(etag), std::move(sums)});
  }
  if (parts.empty()) return Malformed();
  return parts;
}

Result<std::string> ParseCreateBucketXml(std::string_view body) {
  if (Trim(body).empty()) return std::string();
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "CreateBucketConfiguration") return Malformed();
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element || LocalName(c) != "LocationConstraint") continue;
    const auto v = LeafText(c);
    if (!v) return Malformed();
    return std::string(Trim(*v));
  }
  return std::string();
}

Result<VersioningRequest> ParseVersioningXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "VersioningConfiguration") return Malformed();
  VersioningRequest out;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    if (name == "ExcludedPrefixes") {
      // MinIO's: one <Prefix> per <ExcludedPrefixes>.
      int prefixes = 0;
      for (pugi::xml_node p = c.first_child(); p; p = p.next_sibling()) {
        if (p.type() != pugi::node_element) continue;
        const auto v = LeafText(p);
        if (LocalName(p) != "Prefix" || !v || ++prefixes > 1) return Malformed();
        out.excluded.prefixes.push_back(*v);
      }
      if (prefixes == 0) return Malformed();
      continue;
    }
    const auto v = LeafText(c);
    if (!v) return Malformed();
    const std::string_view value = Trim(*v);
    if (name == "Status") {
      if (out.status) return Malformed();
      if (value == "Enabled") {
        out.status = storage::Versioning::kEnabled;
      } else if (value == "Suspended") {
        out.status = storage::Versioning::kSuspended;
      } else {
        return Malformed();
      }
    } else if (name == "MfaDelete" || name == "MFADelete") {
      if (out.mfa_delete) return Malformed();
      if (value != "Enabled" && value != "Disabled") return Malformed();
      out.mfa_delete = value == "Enabled";
    } else if (name == "ExcludeFolders") {
      // A Go bool, as MinIO decodes it (strconv.ParseBool).
      static constexpr std::string_view kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
      static constexpr std::string_view kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
      const bool yes = std::find(std::begin(kTrue), std::end(kTrue), value) != std::end(kTrue);
      if (!yes && std::find(std::begin(kFalse), std::end(kFalse), value) == std::end(kFalse))
        return Malformed();
      out.excluded.folders = yes;
    } else {
      return Malformed();
    }
  }
  return out;
}


// ---------------------------------------------------------------------------------------------
// Object Lock.

std::optional<int64_t> ParseIso8601Ms(std::string_view s) {
  s = Trim(s);
  Cursor c(s);
  const auto year = c.Number(4, 4);
  if (!year || !c.Eat('-')) return std::nullopt;
  const auto month = c.Number(2, 2);
  if (!month || !c.Eat('-')) return std::nullopt;
  const auto day = c.Number(2, 2);
  if (!day || !(c.Eat('T') || c.Eat('t'))) return std::nullopt;
  const auto hour = c.Number(2, 2);
  if (!hour || !c.Eat(':')) return std::nullopt;
  const auto minute = c.Number(2, 2);
  if (!minute || !c.Eat(':')) return std::nullopt;
  const auto second = c.Number(2, 2);
  if (!second) return std::nullopt;
  int64_t millis = 0;
  if (c.Eat('.')) {
    // Any number of digits; the first three are the milliseconds.
    const std::string_view rest = s.substr(20);
    size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    if (n == 0) return std::nullopt;
    for (size_t i = 0; i < 3; ++i) millis = millis * 10 + (i < n ? rest[i] - '0' : 0);
    c = Cursor(rest.substr(n));
  }
  int64_t offset_min = 0;
  if (!c.Eat('Z') && !c.Eat('z')) {
    const bool plus = c.Eat('+');
    if (!plus && !c.Eat('-')) return std::nullopt;
    const auto oh = c.Number(2, 2);
    if (!oh || !c.Eat(':')) return std::nullopt;
    const auto om = c.Number(2, 2);
    if (!om) return std::nullopt;
    offset_min = (*oh * 60 + *om) * (plus ? 1 : -1);
  }
  if (!c.AtEnd()) return std::nullopt;
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year{*year}, std::chrono::month{static_cast<unsigned>(*month)},
                           std::chrono::day{static_cast<unsigned>(*day)}};
  if (!ymd.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  const int64_t days = sys_days(ymd).time_since_epoch().count();
  return ((days * 86400 + *hour * 3600 + *minute * 60 + *second) - offset_min * 60) * 1000 +
         millis;
}

namespace {

// The longest default retention AWS accepts (as MinIO checks it).
constexpr int64_t kMaxRetentionDays = 36500;
constexpr int64_t kMaxRetentionYears = 100;

bool IsLockMode(std::string_view m) { return m == "GOVERNANCE" || m == "COMPLIANCE"; }

}  // namespace

Result<ObjectLockConfigDoc> ParseObjectLockConfigXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "ObjectLockConfiguration") return Malformed();
  ObjectLockConfigDoc out;
  bool enabled = false, rule = false;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    if (name == "ObjectLockEnabled") {
      const auto v = LeafText(c);
      if (enabled || !v || Trim(*v) != "Enabled") return Malformed();
      enabled = true;
    } else if (name == "Rule") {
      if (rule) return Malformed();
      rule = true;
      bool retention = false;
      for (pugi::xml_node r = c.first_child(); r; r = r.next_sibling()) {
        if (r.type() != pugi::node_element) continue;
        if (LocalName(r) != "DefaultRetention" || retention) return Malformed();
        retention = true;
        std::optional<int64_t> days, years;
        bool has_days = false, has_years = false;
        for (pugi::xml_node f = r.first_child(); f; f = f.next_sibling()) {
          if (f.type() != pugi::node_element) continue;
          const std::string_view field = LocalName(f);
          const auto v = LeafText(f);
          if (!v) return Malformed();
          const std::string_view value = Trim(*v);
          if (field == "Mode") {
            if (!out.mode.empty() || !IsLockMode(value)) return Malformed();
            out.mode = std::string(value);
          } else if (field == "Days" || field == "Years") {
            bool& seen = field == "Days" ? has_days : has_years;
            if (seen) return Malformed();
            seen = true;
            auto n = ParseInt(value);
            if (!n) return Malformed();
            (field == "Days" ? days : years) = *n;
          } else {
            return Malformed();
          }
        }
        if (out.mode.empty() || has_days == has_years) return Malformed();
        const int64_t n = has_days ? *days : *years;
        if (n <= 0 || n > (has_days ? kMaxRetentionDays : kMaxRetentionYears))
          return MakeError(ErrorCode::kInvalidRetentionPeriod,
                           n <= 0 ? "Default retention period must be a positive integer value."
                                  : "Default retention period is too large.");
        (has_days ? out.days : out.years) = n;
      }
      if (!retention) return Malformed();
    } else {
      return Malformed();
    }
  }
  if (!enabled) return Malformed();
  return out;
}

std::string ObjectLockConfigXml(const ObjectLockConfigDoc& c) {
  Doc d("ObjectLockConfiguration");
  Add(d.root(), "ObjectLockEnabled", "Enabled");
  if (!c.mode.empty()) {
    pugi::xml_node r = d.root().append_child("Rule").append_child("DefaultRetention");
    Add(r, "Mode", c.mode);
    if (c.days > 0) Add(r, "Days", std::to_string(c.days));
    if (c.years > 0) Add(r, "Years", std::to_string(c.years));
  }
  return d.str();
}

Result<RetentionDoc> ParseRetentionXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "Retention") return Malformed();
  RetentionDoc out;
  bool mode = false, date = false;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    const auto v = LeafText(c);
    if (!v) return Malformed();
    const std::string_view value = Trim(*v);
    if (name == "Mode") {
      if (mode || !IsLockMode(value)) return Malformed();
      mode = true;
      out.mode = std::string(value);
    } else if (name == "RetainUntilDate") {
      if (date) return Malformed();
      date = true;
      out.until_ms = ParseIso8601Ms(value);
      if (!out.until_ms) return Malformed("The retain until date must be provided in ISO 8601 format");
    } else {
      return Malformed();
    }
  }
  if (mode != date) return Malformed();
  return out;
}

std::string Iso8601Ms(int64_t unix_ms) {
  // By days first: a retain-until date may lie beyond what ns since the epoch can hold (2262).
  int64_t days = unix_ms / 86'400'000, rem = unix_ms % 86'400'000;
  if (rem < 0) {
    rem += 86'400'000;
    --days;
  }
  const Civil c = ToCivil(rem * 1'000'000);
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), c.hour, c.minute, c.second, c.millis);
  return buf;
}

std::string RetentionXml(std::string_view mode, int64_t until_ms) {
  Doc d("Retention");
  Add(d.root(), "Mode", mode);
  Add(d.root(), "RetainUntilDate", Iso8601Ms(until_ms));
  return d.str();
}

Result<std::string> ParseLegalHoldXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "LegalHold") return Malformed();
  std::optional<std::string> status;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const auto v = LeafText(c);
    if (LocalName(c) != "Status" || status || !v) return Malformed();
    const std::string_view value = Trim(*v);
    if (value != "ON" && value != "OFF") return Malformed();
    status = std::string(value);
  }
  if (!status) return Malformed();
  return *status;
}

std::string LegalHoldXml(std::string_view status) {
  Doc d("LegalHold");
  Add(d.root(), "Status", status);
  return d.str();
}

// ---------------------------------------------------------------------------------------------
// CORS.

Result<std::vector<CorsRule>> ParseCorsXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "CORSConfiguration") return Malformed();
  std::vector<CorsRule> rules;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (LocalName(c) != "CORSRule" || rules.size() == kMaxCorsRules) return Malformed();
    CorsRule rule;
    bool id = false;
    for (pugi::xml_node f = c.first_child(); f; f = f.next_sibling()) {
      if (f.type() != pugi::node_element) continue;
      const std::string_view name = LocalName(f);
      const auto v = LeafText(f);
      if (!v) return Malformed();
      std::string value(Trim(*v));
      auto one_wildcard = [&](const char* what) -> Status {
        if (std::count(value.begin(), value.end(), '*') > 1)
          return MakeError(ErrorCode::kInvalidRequest, std::string(what) + " \"" + value +
                                                           "\" can not have more than one "
                                                           "wildcard.");
        return {};
      };
      if (name == "AllowedMethod") {
        static constexpr std::string_view kMethods[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};
        if (std::find(std::begin(kMethods), std::end(kMethods), value) == std::end(kMethods))
          return MakeError(ErrorCode::kInvalidRequest,
                           "Found unsupported HTTP method in CORS config. Unsupported method is " +
                               value);
        rule.methods.push_back(std::move(value));
      } else if (name == "AllowedOrigin") {
        RS_RETURN_IF_ERROR(one_wildcard("AllowedOrigin"));
        rule.origins.push_back(std::move(value));
      } else if (name == "AllowedHeader") {
        RS_RETURN_IF_ERROR(one_wildcard("AllowedHeader"));
        rule.headers.push_back(std::move(value));
      } else if (name == "ExposeHeader") {
        rule.expose.push_back(std::move(value));
      } else if (name == "MaxAgeSeconds") {
        auto n = ParseUint(value);
        if (!n || rule.max_age) return Malformed();
        rule.max_age = *n;
      } else if (name == "ID") {
        if (id || value.size() > 255) return Malformed();
        id = true;
        rule.id = std::move(value);
      } else {
        return Malformed();
      }
    }
    if (rule.methods.empty() || rule.origins.empty()) return Malformed();
    rules.push_back(std::move(rule));
  }
  if (rules.empty()) return Malformed();
  return rules;
}

std::string CorsXml(const std::vector<CorsRule>& rules) {
  Doc d("CORSConfiguration");
  for (const auto& r : rules) {
    pugi::xml_node n = d.root().append_child("CORSRule");
    if (!r.id.empty()) Add(n, "ID", r.id);
    for (const auto& h : r.headers) Add(n, "AllowedHeader", h);
    for (const auto& m : r.methods) Add(n, "AllowedMethod", m);
    for (const auto& o : r.origins) Add(n, "AllowedOrigin", o);
    for (const auto& e : r.expose) Add(n, "ExposeHeader", e);
    if (r.max_age) Add(n, "MaxAgeSeconds", std::to_string(*r.max_age));
  }
  return d.str();
}

// ---------------------------------------------------------------------------------------------
// Lifecycle.

namespace {

Error InvalidArgument(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

// A positive number of days in `action`'s `field` (InvalidArgument otherwise, as AWS words it).
Result<int64_t> PositiveDays(std::string_view text, std::string_view field,
                             std::string_view action) {
  auto n = ParseInt(text);
  if (!n) return Malformed();
  if (*n <= 0)
    return InvalidArgument("'" + std::string(field) + "' for " + std::string(action) +
                           " action must be a positive integer");
  return *n;
}

// <Tag><Key/><Value/></Tag>.
Result<std::pair<std::string, std::string>> ParseLifecycleTag(const pugi::xml_node& t) {
  std::optional<std::string> key, value;
  for (pugi::xml_node f = t.first_child(); f; f = f.next_sibling()) {
    if (f.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(f);
    auto v = LeafText(f);
    if (!v) return Malformed();
    auto& slot = name == "Key" ? key : name == "Value" ? value : key;
    if ((name != "Key" && name != "Value") || slot) return Malformed();
    slot = std::move(*v);
  }
  if (!key || key->empty()) return Malformed();
  return std::pair{std::move(*key), value.value_or("")};
}

// The predicates of a <Filter> (one at most) or of its <And> (any number) into `rule`.
Status ParseLifecyclePredicates(const pugi::xml_node& parent, LifecycleRule& rule, bool in_and) {
  int predicates = 0;
  for (pugi::xml_node p = parent.first_child(); p; p = p.next_sibling()) {
    if (p.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(p);
    ++predicates;
    if (name == "And" && !in_and) {
      rule.form = LifecycleRule::Form::kAnd;
      RS_RETURN_IF_ERROR(ParseLifecyclePredicates(p, rule, /*in_and=*/true));
    } else if (name == "Tag") {
      auto tag = ParseLifecycleTag(p);
      if (!tag.ok()) return tag.error();
      for (const auto& t : rule.tags)
        if (t.first == tag->first)
          return MakeError(ErrorCode::kInvalidRequest, "Duplicate Tag Keys are not allowed.");
      rule.tags.push_back(std::move(*tag));
    } else {
      auto v = LeafText(p);
      if (!v) return Malformed();
      if (name == "Prefix") {
        if (rule.prefix) return Malformed();
        rule.prefix = std::move(*v);
      } else if (name == "ObjectSizeGreaterThan" || name == "ObjectSizeLessThan") {
        auto& slot = name == "ObjectSizeGreaterThan" ? rule.size_gt : rule.size_lt;
        auto n = ParseInt(*v);
        if (!n || slot) return Malformed();
        if (*n < 0) return InvalidArgument(std::string(name) + " must be a non-negative integer");
        slot = *n;
      } else {
        return Malformed();
      }
    }
  }
  if (!in_and && predicates > 1) return Malformed();  // more than one needs <And>
  return {};
}

Status ParseLifecycleExpiration(const pugi::xml_node& e, LifecycleRule& rule) {
  for (pugi::xml_node f = e.first_child(); f; f = f.next_sibling()) {
    if (f.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(f);
    auto v = LeafText(f);
    if (!v) return Malformed();
    if (name == "Days" && !rule.days) {
      auto d = PositiveDays(*v, "Days", "Expiration");
      if (!d.ok()) return d.error();
      rule.days = *d;
    } else if (name == "Date" && !rule.date_ms) {
      auto ms = ParseIso8601Ms(*v);
      if (!ms) return Malformed();
      if (*ms % 86'400'000 != 0) return InvalidArgument("'Date' must be at midnight GMT");
      rule.date_ms = *ms;
    } else if (name == "ExpiredObjectDeleteMarker" && !rule.expired_object_delete_marker) {
      const std::string_view b = Trim(*v);
      if (b != "true" && b != "false") return Malformed();
      rule.expired_object_delete_marker = b == "true";
    } else {
      return Malformed();
    }
  }
  // Exactly one of the three.
  if ((rule.days ? 1 : 0) + (rule.date_ms ? 1 : 0) + (rule.expired_object_delete_marker ? 1 : 0) !=
      1)
    return Malformed();
  return {};
}

// NoncurrentVersionExpiration and AbortIncompleteMultipartUpload: named positive counts.
Status ParseLifecycleCounts(
    const pugi::xml_node& e, std::string_view action,
    std::initializer_list<std::pair<std::string_view, std::optional<int64_t>*>> fields) {
  for (pugi::xml_node f = e.first_child(); f; f = f.next_sibling()) {
    if (f.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(f);
    auto v = LeafText(f);
    const auto* field = std::find_if(fields.begin(), fields.end(),
                                     [&](const auto& p) { return p.first == name; });
    if (!v || field == fields.end() || field->second->has_value()) return Malformed();
    auto n = PositiveDays(*v, name, action);
    if (!n.ok()) return n.error();
    *field->second = *n;
  }
  if (!fields.begin()->second->has_value()) return Malformed();  // the first one is required
  return {};
}

Result<LifecycleRule> ParseLifecycleRule(const pugi::xml_node& r) {
  LifecycleRule rule;
  bool id = false, status = false, filter = false, legacy_prefix = false, action = false;
  for (pugi::xml_node c = r.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(c);
    if (name == "ID" || name == "Status" || name == "Prefix") {
      auto v = LeafText(c);
      if (!v) return Malformed();
      if (name == "ID") {
        if (id) return Malformed();
        id = true;
        if (v->size() > kMaxLifecycleIdBytes)
          return InvalidArgument("ID length should not exceed allowed limit of 255");
        rule.id = std::move(*v);
      } else if (name == "Status") {
        const std::string_view s = Trim(*v);
        if (status || (s != "Enabled" && s != "Disabled")) return Malformed();
        status = true;
        rule.enabled = s == "Enabled";
      } else {
        if (legacy_prefix) return Malformed();
        legacy_prefix = true;
        rule.form = LifecycleRule::Form::kPrefix;
        rule.prefix = std::move(*v);
      }
    } else if (name == "Filter") {
      if (filter) return Malformed();
      filter = true;
      RS_RETURN_IF_ERROR(ParseLifecyclePredicates(c, rule, /*in_and=*/false));
    } else if (name == "Expiration") {
      if (rule.days || rule.date_ms || rule.expired_object_delete_marker) return Malformed();
      RS_RETURN_IF_ERROR(ParseLifecycleExpiration(c, rule));
      action = true;
    } else if (name == "NoncurrentVersionExpiration") {
      if (rule.noncurrent_days) return Malformed();
      RS_RETURN_IF_ERROR(ParseLifecycleCounts(c, "NoncurrentVersionExpiration",
                                              {{"NoncurrentDays", &rule.noncurrent_days},
                                               {"NewerNoncurrentVersions",
                                                &rule.newer_noncurrent}}));
      action = true;
    } else if (name == "AbortIncompleteMultipartUpload") {
      if (rule.abort_days) return Malformed();
      RS_RETURN_IF_ERROR(ParseLifecycleCounts(c, "AbortIncompleteMultipartUpload",
                                              {{"DaysAfterInitiation", &rule.abort_days}}));
      action = true;
    } else if (name == "Transition" || name == "NoncurrentVersionTransition") {
      return MakeError(ErrorCode::kNotImplemented,
                       "Lifecycle transitions are not supported: this server has no storage "
                       "tiers to move objects to.");
    } else {
      return Malformed();
    }
  }
  if (!status || filter == legacy_prefix) return Malformed();
  if (!action)
    return MakeError(ErrorCode::kInvalidRequest,
                     "At least one action needs to be specified in a rule");
  if (rule.size_gt && rule.size_lt && *rule.size_gt >= *rule.size_lt)
    return InvalidArgument("ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
  if (!rule.tags.empty() && rule.abort_days)
    return MakeError(ErrorCode::kInvalidRequest,
                     "AbortIncompleteMultipartUpload cannot be specified with Tags.");
  if (!rule.tags.empty() && rule.expired_object_delete_marker)
    return MakeError(ErrorCode::kInvalidRequest,
                     "ExpiredObjectDeleteMarker cannot be specified with Tags.");
  return rule;
}

}  // namespace

Result<std::vector<LifecycleRule>> ParseLifecycleXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "LifecycleConfiguration") return Malformed();
  std::vector<LifecycleRule> rules;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (LocalName(c) != "Rule" || rules.size() == kMaxLifecycleRules) return Malformed();
    auto rule = ParseLifecycleRule(c);
    if (!rule.ok()) return rule.error();
    for (const auto& other : rules)
      if (!rule->id.empty() && other.id == rule->id)
        return InvalidArgument("Rule ID must be unique. Found same ID for more than one rule");
    rules.push_back(std::move(*rule));
  }
  if (rules.empty()) return Malformed();
  for (auto& r : rules)
    if (r.id.empty()) r.id = hash::RandomHex(16);
  return rules;
}

std::string LifecycleXml(const std::vector<LifecycleRule>& rules) {
  Doc d("LifecycleConfiguration");
  for (const auto& r : rules) {
    pugi::xml_node n = d.root().append_child("Rule");
    Add(n, "ID", r.id);
    if (r.form == LifecycleRule::Form::kPrefix) {
      Add(n, "Prefix", r.prefix.value_or(""));
    } else {
      pugi::xml_node f = n.append_child("Filter");
      if (r.form == LifecycleRule::Form::kAnd) f = f.append_child("And");
      if (r.prefix) Add(f, "Prefix", *r.prefix);
      for (const auto& [k, v] : r.tags) {
        pugi::xml_node t = f.append_child("Tag");
        Add(t, "Key", k);
        Add(t, "Value", v);
      }
      if (r.size_gt) Add(f, "ObjectSizeGreaterThan", std::to_string(*r.size_gt));
      if (r.size_lt) Add(f, "ObjectSizeLessThan", std::to_string(*r.size_lt));
    }
    Add(n, "Status", r.enabled ? "Enabled" : "Disabled");
    if (r.days || r.date_ms || r.expired_object_delete_marker) {
      pugi::xml_node e = n.append_child("Expiration");
      if (r.days) Add(e, "Days", std::to_string(*r.days));
      if (r.date_ms) Add(e, "Date", Iso8601Ms(*r.date_ms));
      if (r.expired_object_delete_marker)
        Add(e, "ExpiredObjectDeleteMarker", *r.expired_object_delete_marker ? "true" : "false");
    }
    if (r.noncurrent_days) {
      pugi::xml_node e = n.append_child("NoncurrentVersionExpiration");
      Add(e, "NoncurrentDays", std::to_string(*r.noncurrent_days));
      if (r.newer_noncurrent)
        Add(e, "NewerNoncurrentVersions", std::to_string(*r.newer_noncurrent));
    }
    if (r.abort_days)
      Add(n.append_child("AbortIncompleteMultipartUpload"), "DaysAfterInitiation",
          std::to_string(*r.abort_days));
  }
  return d.str();
}

// ---------------------------------------------------------------------------------------------
// OwnershipControls and PublicAccessBlock.

Result<std::string> ParseOwnershipControlsXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "OwnershipControls") return Malformed();
  std::optional<std::string> ownership;
  for (pugi::xml_node rule = root.first_child(); rule; rule = rule.next_sibling()) {
    if (rule.type() != pugi::node_element) continue;
    if (LocalName(rule) != "Rule" || ownership) return Malformed();
    for (pugi::xml_node f = rule.first_child(); f; f = f.next_sibling()) {
      if (f.type() != pugi::node_element) continue;
      const auto v = LeafText(f);
      if (LocalName(f) != "ObjectOwnership" || !v || ownership) return Malformed();
      ownership = std::string(Trim(*v));
    }
    if (!ownership) return Malformed();
  }
  if (!ownership || (*ownership != "BucketOwnerEnforced" && *ownership != "BucketOwnerPreferred" &&
                     *ownership != "ObjectWriter"))
    return Malformed();
  return *ownership;
}

std::string OwnershipControlsXml(std::string_view object_ownership) {
  Doc d("OwnershipControls");
  Add(d.root().append_child("Rule"), "ObjectOwnership", object_ownership);
  return d.str();
}

Result<PublicAccessBlock> ParsePublicAccessBlockXml(std::string_view body) {
  pugi::xml_document doc;
  const pugi::xml_node root = LoadBody(body, doc);
  if (!root || LocalName(root) != "PublicAccessBlockConfiguration") return Malformed();
  PublicAccessBlock out;
  for (pugi::xml_node f = root.first_child(); f; f = f.next_sibling()) {
    if (f.type() != pugi::node_element) continue;
    const auto v = LeafText(f);
    if (!v) return Malformed();
    const std::string_view value = Trim(*v);
    if (value != "true" && value != "false") return Malformed();
    const std::string_view name = LocalName(f);
    bool* field = name == "BlockPublicAcls"         ? &out.block_public_acls
                  : name == "IgnorePublicAcls"      ? &out.ignore_public_acls
                  : name == "BlockPublicPolicy"     ? &out.block_public_policy
                  : name == "RestrictPublicBuckets" ? &out.restrict_public_buckets
                                                    : nullptr;
    if (!field) return Malformed();
    *field = value == "true";
  }
  return out;
}

std::string PublicAccessBlockXml(const PublicAccessBlock& b) {
  Doc d("PublicAccessBlockConfiguration");
  AddBool(d.root(), "BlockPublicAcls", b.block_public_acls);
  AddBool(d.root(), "IgnorePublicAcls", b.ignore_public_acls);
  AddBool(d.root(), "BlockPublicPolicy", b.block_public_policy);
  AddBool(d.root(), "RestrictPublicBuckets", b.restrict_public_buckets);
  return d.str();
}

}  // namespace rdmastor::s3
