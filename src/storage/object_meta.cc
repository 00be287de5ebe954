#include "storage/object_meta.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/hash.h"
#include "common/text.h"
#include "common/json_int.h"
#include "common/utf8.h"
#include "crypto/dare.h"
#include "storage/paths.h"

namespace rdmastor::storage {

std::string MultipartEtag(const std::vector<std::string>& part_etags) {
  std::string md5s;
  for (const auto& etag : part_etags) {
    auto bin = hash::HexDecode(etag);
    md5s += bin ? *bin : etag;
  }
  return hash::Md5Hex(md5s) + "-" + std::to_string(part_etags.size());
}

namespace {

using nlohmann::json;

// Header values are not guaranteed to be UTF-8; replace invalid bytes rather than throw.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::map<std::string, std::string> MapAt(const json& j, const char* name) {
  std::map<std::string, std::string> out;
  if (auto it = j.find(name); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) out[k] = v.get<std::string>();
  }
  return out;
}

// User metadata values are bytes as the client sent them; JSON strings hold only UTF-8, so a value
// that is not valid UTF-8 (e.g. ISO-8859-1 from an HTTP library) is kept base64-encoded under
// "<name>_b64" and comes back byte for byte.
void PutMetadata(json& j, const char* name, const std::map<std::string, std::string>& values) {
  json plain = json::object(), b64 = json::object();
  for (const auto& [k, v] : values) {
    if (IsValidUtf8(k) && IsValidUtf8(v))
      plain[k] = v;
    else
      b64[hash::Base64Encode(k)] = hash::Base64Encode(v);
  }
  j[name] = std::move(plain);
  if (!b64.empty()) j[std::string(name) + "_b64"] = std::move(b64);
}

std::map<std::string, std::string> GetMetadata(const json& j, const char* name) {
  auto out = MapAt(j, name);
  for (const auto& [k, v] : MapAt(j, (std::string(name) + "_b64").c_str())) {
    auto key = hash::Base64Decode(k);
    auto value = hash::Base64Decode(v);
    if (!key || !value) throw std::runtime_error("bad base64 in " + std::string(name) + "_b64");
    out[*key] = *value;
  }
  return out;
}

std::string MetaChecksum(std::string_view canonical) {
  return hash::HexEncode(hash::Digest(hash::Algo::kCRC32C, canonical));
}

// `{"checksum":"<8 hex>",<rest>`, the layout SerializeObjectVersions writes, whose checksum is
// that of `{<rest>`: checked on the bytes, with no parse and no re-dump (a small GET reads one
// such file per drive). False for any other layout, and for a mismatch.
bool CanonicalChecksumMatches(std::string_view text) {
  constexpr std::string_view kHead = "{\"checksum\":\"";
  constexpr size_t kHexLen = 8;  // CRC32C
  const size_t rest_at = kHead.size() + kHexLen + 2;
  if (text.size() <= rest_at || !text.starts_with(kHead) ||
      text.substr(kHead.size() + kHexLen, 2) != "\",")
    return false;
  const uint32_t crc =
      hash::Crc32c(text.data() + rest_at, text.size() - rest_at, hash::Crc32c("{", 1));
  char hex[kHexLen];  // HexEncode of the big-endian digest (snprintf cost 0.4% of a small GET)
  for (size_t i = 0; i < kHexLen; ++i) hex[i] = "0123456789abcdef"[(crc >> (28 - 4 * i)) & 0xf];
  return text.substr(kHead.size(), kHexLen) == std::string_view(hex, kHexLen);
}

// Inline shards cut out of a file before its parse (CutInlineShards), handed out in file order.
struct CutShards {
  std::vector<std::string_view> b64;
  size_t next = 0;
};

// In a file laid out by SerializeObjectVersions (keys sorted), an inline shard's base64 follows
// `"inline":true,"inline_shard":"` and runs to the next quote (base64 has none). No other place
// can hold those bytes: a `true` under the key "inline" is an erasure record's (every other
// object of the file maps names to strings, numbers or `parts`), and a quote inside a string is
// escaped. The JSON parser would copy such a shard byte by byte, so it is cut out of the text
// parsed (left as "") and decoded from the file's bytes. nullopt: no inline shard.
constexpr std::string_view kInlineShardKey = "\"inline\":true,\"inline_shard\":\"";

std::optional<std::string> CutInlineShards(std::string_view text, CutShards& cut) {
  size_t at = text.find(kInlineShardKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  while (at != std::string_view::npos) {
    const size_t start = at + kInlineShardKey.size();
    const size_t end = text.find('"', start);
    if (end == std::string_view::npos) return std::nullopt;  // not JSON: the parse says so
    out.append(text.substr(copied, start - copied));
    cut.b64.push_back(text.substr(start, end - start));
    copied = end;
    at = text.find(kInlineShardKey, end);
  }
  out.append(text.substr(copied));
  return out;
}

// The inverse of CutInlineShards for a dump whose inline shards were left "" (VersionJson):
// each shard's base64 goes where the dump would have put it. The JSON dumper escapes a string
// byte by byte (most of a PUT's CPU once shards reach ~100 KiB per drive); base64 needs no
// escaping, so the result is byte for byte the dump with the shards in it.
// A shard still held as the text it was read as (inline_b64) goes back as that text.
std::string SpliceInlineShards(std::string dump, const std::vector<const ErasureMeta*>& shards) {
  if (shards.empty()) return dump;
  std::string out;
  size_t room = dump.size();
  for (const auto* e : shards)
    room += e->inline_b64.empty() ? (e->inline_shard.size() + 2) / 3 * 4 : e->inline_b64.size();
  out.reserve(room);
  size_t copied = 0, at = 0;
  for (const auto* e : shards) {
    at = dump.find(kInlineShardKey, at);
    if (at == std::string::npos) break;  // cannot happen: VersionJson wrote one per shard
    at += kInlineShardKey.size();
    out.append(dump, copied, at - copied);
    if (e->inline_b64.empty())
      out.append(hash::Base64Encode(e->inline_shard));
    else
      out.append(e->inline_b64);
    copied = at;
  }
  out.append(dump, copied);
  return out;
}

Error Malformed(const std::string& path, const std::exception& e) {
  return MakeError(ErrorCode::kInternalError,
                   "malformed metadata " + path + ": " + std::string(e.what()));
}

}  // namespace

bool ErasureMeta::DecodeInline() {
  if (inline_b64.empty()) return true;
  auto raw = hash::Base64Decode(inline_b64);
  if (!raw) return false;
  SetInline(std::move(*raw));
  return true;
}

bool ErasureMeta::operator==(const ErasureMeta& o) const {
  auto bytes = [](const ErasureMeta& e) -> std::optional<std::string> {
    if (e.inline_b64.empty()) return e.inline_shard;
    return hash::Base64Decode(e.inline_b64);
  };
  return data == o.data && parity == o.parity && stripe_size == o.stripe_size && index == o.index &&
         distribution == o.distribution && bitrot == o.bitrot && is_inline == o.is_inline &&
         bytes(*this) == bytes(o);
}

bool IsEncrypted(const std::map<std::string, std::string>& internal) {
  return internal.count(kInternalSse) > 0;
}

ObjectInfo ObjectMeta::ToInfo(const std::string& bucket, const std::string& key) const {
  ObjectInfo info;
  info.bucket = bucket;
  info.key = key;
  // Every field but the layout's (a generic lambda: ObjectInfo has no layout members).
  [&](auto& to) {
#define RDMASTOR_VERSION_TO_INFO(member, name, T, codec, presence, scope) \
  if constexpr (FieldScope::scope != FieldScope::kLayout) to.member = member;
    RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_TO_INFO)
#undef RDMASTOR_VERSION_TO_INFO
  }(info);
  if (multipart) {
    info.part_count = static_cast<int>(parts.size());
    bool part_sums = false;
    for (const auto& p : parts) {
      info.part_sizes.push_back(p.size);
      part_sums = part_sums || !p.checksums.empty();
    }
    if (part_sums)
      for (const auto& p : parts) info.part_checksums.push_back(p.checksums);
  }
  if (IsEncrypted(internal) && !delete_marker) {
    // Clients see plaintext sizes; every part is one encrypted stream. A stored size no plaintext
    // encrypts to (a damaged record) stays as stored: reading the object then fails to decrypt.
    uint64_t plain = 0;
    bool sound = true;
    std::vector<uint64_t> plain_parts;
    for (const auto& p : parts) {
      auto n = crypto::DecryptedSize(p.size);
      if (!n.ok()) {
        sound = false;
        break;
      }
      plain_parts.push_back(*n);
      plain += *n;
    }
    if (sound) {
      info.size = plain;
      if (multipart) info.part_sizes = std::move(plain_parts);
    }
  }
  return info;
}

void ApplyMetadataUpdate(const PutOptions& opts, ObjectMeta& meta, int64_t now_ns) {
  CopyDeclared(opts, meta, opts.update);
  if (opts.update & FieldBit(VersionField::mtime_ns)) meta.mtime_ns = now_ns;
}

bool IsValidVersionId(std::string_view id) {
  if (id.empty() || id.size() > kMaxVersionIdLength) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

std::string GenerateVersionId() {
  std::string h = hash::RandomHex(16);
  h[12] = '4';                                                  // version 4 (random)
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

const ObjectMeta* ObjectVersions::Find(std::string_view version_id) const {
  for (const auto& v : versions) {
    if (v.version_id == version_id) return &v;
  }
  return nullptr;
}

ObjectMeta* ObjectVersions::Find(std::string_view version_id) {
  return const_cast<ObjectMeta*>(std::as_const(*this).Find(version_id));
}

std::optional<ObjectMeta> ObjectVersions::Remove(std::string_view version_id) {
  for (auto it = versions.begin(); it != versions.end(); ++it) {
    if (it->version_id == version_id) {
      ObjectMeta out = std::move(*it);
      versions.erase(it);
      return out;
    }
  }
  return std::nullopt;
}

std::optional<ObjectMeta> ObjectVersions::Add(ObjectMeta v) {
  auto old = Remove(v.version_id);
  // Newest first by mtime: a new write lands first, a healed older version back in its place.
  auto at = std::find_if(versions.begin(), versions.end(),
                         [&](const ObjectMeta& o) { return o.mtime_ns <= v.mtime_ns; });
  versions.insert(at, std::move(v));
  return old;
}

std::vector<std::string> ObjectVersions::DataDirs() const {
  std::vector<std::string> out;
  for (const auto& v : versions) {
    if (!v.data_dir.empty()) out.push_back(v.data_dir);
  }
  return out;
}

namespace {

// The checks a version passes after it is read, whichever reader read it.
Status CheckVersion(const ObjectMeta& m, const std::string& path) {
  uint64_t total = 0;
  for (const auto& p : m.parts) {
    if (p.size > UINT64_MAX - total) {
      return MakeError(ErrorCode::kInternalError, "part sizes overflow in " + path);
    }
    total += p.size;
  }
  if (m.erasure) {
    const ErasureMeta& e = *m.erasure;
    // Sized like the codec allows (erasure/layout.h caps a set far below this).
    if (e.data < 1 || e.parity < 0 || e.data > 1024 || e.parity > 1024 || e.stripe_size == 0 ||
        e.index < 0 || e.index >= e.data + e.parity ||
        static_cast<int>(e.distribution.size()) != e.data + e.parity) {
      return MakeError(ErrorCode::kInternalError, "inconsistent erasure info in " + path);
    }
  }
  if (!m.version_id.empty() && !IsValidVersionId(m.version_id)) {
    return MakeError(ErrorCode::kInternalError, "bad version id in " + path);
  }
  if (m.delete_marker) {
    // A delete marker has no data to point at.
    if (!m.data_dir.empty() || !m.parts.empty() || m.size != 0) {
      return MakeError(ErrorCode::kInternalError, "inconsistent delete marker in " + path);
    }
    return {};
  }
  // The data dir name is joined to a path: it must be one of the layout's data dir names.
  if (!paths::IsDataDirName(m.data_dir) || total != m.size) {
    return MakeError(ErrorCode::kInternalError, "inconsistent metadata " + path);
  }
  return {};
}

// The canonical reader. A small GET parses one metadata file per drive, and nlohmann's DOM (a
// map node and a heap string per member, then a copy into ObjectMeta) was ~25% of a 4 KiB GET's
// CPU. A file in SerializeObjectVersions' layout (checksum verified on its bytes) is read here
// straight into ObjectMeta, in one pass and with no tree. It reads that layout only: the known
// members in the dump's order (sorted, so a repeated name is out of order too), no whitespace,
// integers as the dump writes them, the escapes the dump writes. On anything else it declines,
// and the general reader (ParseVersion's) decides and words the error, so the two never differ
// in what they accept or read (tests/storage/object_meta_test.cc holds them equal on mutated
// files).
class CanonicalReader : public text::Cursor {
 public:
  using text::Cursor::Cursor;

  // Calls member(name) at each member's value, names strictly ascending; false when member does.
  template <class F>
  bool Object(F&& member) {
    if (!Eat('{')) return false;
    if (Eat('}')) return true;
    std::string_view prev;
    do {
      std::string_view name;
      if (!Name(name) || (!prev.empty() && !(prev < name))) return false;
      prev = name;
      if (!member(name)) return false;
    } while (Eat(','));
    return Eat('}');
  }

  // Calls element() at each element of an array.
  template <class F>
  bool Array(F&& element) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      if (!element()) return false;
    } while (Eat(','));
    return Eat(']');
  }

  bool String(std::string& out) {
    if (!Eat('"')) return false;
    out.clear();
    bool high = false;  // bytes above ASCII: the whole must be UTF-8, as the JSON parser demands
    for (;;) {
      const size_t start = i_;
      unsigned char c = 0;
      while (i_ < t_.size()) {
        c = static_cast<unsigned char>(t_[i_]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        high = high || c >= 0x80;
        ++i_;
      }
      out.append(t_.data() + start, i_ - start);
      if (i_ == t_.size() || c < 0x20) return false;
      ++i_;
      if (c == '"') break;
      if (i_ == t_.size()) return false;
      switch (t_[i_++]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          // The dump writes \u00XX for the other control bytes; a code point above ASCII
          // (surrogate pairs and all) is the general reader's.
          if (t_.size() - i_ < 4) return false;
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = t_[i_++];
            const int d = h >= '0' && h <= '9'   ? h - '0'
                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                 : -1;
            if (d < 0) return false;
            v = v * 16 + static_cast<unsigned>(d);
          }
          if (v >= 0x80) return false;
          out += static_cast<char>(v);
          break;
        }
        default:
          return false;
      }
    }
    return !high || IsValidUtf8(out);
  }

  // A string's raw bytes up to the next quote (an inline shard's base64, which has no escapes:
  // a backslash in it fails the strict base64 decode, as in CutInlineShards' reading).
  bool Raw(std::string_view& out) {
    if (!Eat('"')) return false;
    const size_t end = t_.find('"', i_);
    if (end == std::string_view::npos) return false;
    out = t_.substr(i_, end - i_);
    i_ = end + 1;
    return true;
  }

  // An integer as the dump writes it (no fraction, exponent or leading zero) that fits T.
  template <class T>
  bool Int(T& out) {
    const bool neg = Eat('-');
    const size_t start = i_;
    uint64_t mag = 0;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
      const auto d = static_cast<unsigned>(t_[i_] - '0');
      if (mag > (UINT64_MAX - d) / 10) return false;
      mag = mag * 10 + d;
      ++i_;
    }
    const size_t len = i_ - start;
    if (len == 0 || (len > 1 && t_[start] == '0')) return false;
    if (i_ < t_.size() && (t_[i_] == '.' || t_[i_] == 'e' || t_[i_] == 'E')) return false;
    if (!neg) {
      if (!std::in_range<T>(mag)) return false;
      out = static_cast<T>(mag);
      return true;
    }
    constexpr uint64_t kMinMag = uint64_t{1} << 63;
    if (mag > kMinMag) return false;
    const int64_t s = mag == kMinMag ? INT64_MIN : -static_cast<int64_t>(mag);
    if (!std::in_range<T>(s)) return false;
    out = static_cast<T>(s);
    return true;
  }

  template <class T>
  bool IntArray(std::vector<T>& out) {
    out.clear();
    return Array([&] {
      T v{};
      if (!Int(v)) return false;
      out.push_back(v);
      return true;
    });
  }

  bool Bool(bool& out) {
    for (const bool v : {true, false}) {
      const std::string_view lit = v ? "true" : "false";
      if (t_.substr(i_).starts_with(lit)) {
        i_ += lit.size();
        out = v;
        return true;
      }
    }
    return false;
  }

  // An object of strings, keys strictly ascending (std::map's order, which the dump follows).
  bool StringMap(std::map<std::string, std::string>& out) {
    out.clear();
    if (!Eat('{')) return false;
    if (Eat('}')) return true;
    do {
      std::string key, value;
      if (!String(key) || !Eat(':') || !String(value)) return false;
      if (!out.empty() && !(std::prev(out.end())->first < key)) return false;
      out.emplace_hint(out.end(), std::move(key), std::move(value));
    } while (Eat(','));
    return Eat('}');
  }

 private:
  // A member name and its colon. A name with an escape is none the schema knows: declined.
  bool Name(std::string_view& out) {
    if (!Eat('"')) return false;
    const size_t end = t_.find('"', i_);
    if (end == std::string_view::npos) return false;
    out = t_.substr(i_, end - i_);
    if (out.find('\\') != std::string_view::npos) return false;
    i_ = end + 1;
    return Eat(':');
  }
};

// Marks a required member seen (the readers' `seen` bit sets); always true.
bool Need(unsigned& seen, unsigned bit) {
  seen |= bit;
  return true;
}

bool ReadErasure(CanonicalReader& r, ErasureMeta& e) {
  unsigned seen = 0;
  bool shard = false;
  const bool ok = r.Object([&](std::string_view name) {
    if (name == "bitrot") return Need(seen, 1) && r.String(e.bitrot);
    if (name == "data") return Need(seen, 2) && r.Int(e.data);
    if (name == "distribution") return Need(seen, 4) && r.IntArray(e.distribution);
    if (name == "index") return Need(seen, 8) && r.Int(e.index);
    if (name == "inline") return r.Bool(e.is_inline);
    if (name == "inline_shard") {
      shard = true;
      // Kept as text (ErasureMeta::inline_b64), checked as strictly as a decode would be.
      std::string_view b64;
      if (!r.Raw(b64) || !hash::IsBase64(b64)) return false;
      e.inline_b64.assign(b64);
      return true;
    }
    if (name == "parity") return Need(seen, 16) && r.Int(e.parity);
    if (name == "stripe_size") return Need(seen, 32) && r.Int(e.stripe_size);
    return false;
  });
  return ok && seen == 63 && shard == e.is_inline;
}

bool ReadPart(CanonicalReader& r, PartMeta& p) {
  unsigned seen = 0;
  const bool ok = r.Object([&](std::string_view name) {
    if (name == "checksums") return r.StringMap(p.checksums);
    if (name == "etag") return r.String(p.etag);
    if (name == "number") return Need(seen, 1) && r.Int(p.number);
    if (name == "size") return Need(seen, 2) && r.Int(p.size);
    return false;
  });
  return ok && seen == 3;
}

// The record's codecs (the `codec` column of storage/version_record.h): how one field is written
// (Put), read by the general reader (Get: from a parsed object, the member possibly absent) and
// read by the canonical reader (Read: at the member's value). Each spells its value exactly as
// the releases before the list did, so files and both readers are unchanged.
struct GetContext {
  const std::string& path;
  CutShards* cut = nullptr;  // the file's inline shards, cut out of the parsed text (or none)
};

namespace codec {

struct Int {
  template <class T>
  static void Put(json& j, const char* n, const T& v, std::vector<const ErasureMeta*>*) {
    j[n] = v;
  }
  template <class T>
  static Status Get(const json& j, const char* n, T& v, bool required, GetContext&) {
    if (required || j.contains(n)) v = json_int::At<T>(j, n);
    return {};
  }
  template <class T>
  static bool Read(CanonicalReader& r, T& v) {
    return r.Int(v);
  }
};

struct Str {
  static void Put(json& j, const char* n, const std::string& v, std::vector<const ErasureMeta*>*) {
    j[n] = v;
  }
  static Status Get(const json& j, const char* n, std::string& v, bool required, GetContext&) {
    v = required ? j.at(n).get<std::string>() : j.value(n, std::string());
    return {};
  }
  static bool Read(CanonicalReader& r, std::string& v) { return r.String(v); }
};

struct Bool {
  static void Put(json& j, const char* n, bool v, std::vector<const ErasureMeta*>*) { j[n] = v; }
  static Status Get(const json& j, const char* n, bool& v, bool required, GetContext&) {
    v = required ? j.at(n).get<bool>() : j.value(n, false);
    return {};
  }
  static bool Read(CanonicalReader& r, bool& v) { return r.Bool(v); }
};

// A map of strings; a member that is not an object reads as empty (as it always has).
struct Map {
  static void Put(json& j, const char* n, const StringMap& v, std::vector<const ErasureMeta*>*) {
    j[n] = v;
  }
  static Status Get(const json& j, const char* n, StringMap& v, bool, GetContext&) {
    v = MapAt(j, n);
    return {};
  }
  static bool Read(CanonicalReader& r, StringMap& v) { return r.StringMap(v); }
};

// User metadata: PutMetadata / GetMetadata (non-UTF-8 entries under "<name>_b64").
struct UserMeta {
  static void Put(json& j, const char* n, const StringMap& v, std::vector<const ErasureMeta*>*) {
    PutMetadata(j, n, v);
  }
  static Status Get(const json& j, const char* n, StringMap& v, bool, GetContext&) {
    v = GetMetadata(j, n);
    return {};
  }
  static bool Read(CanonicalReader& r, StringMap& v) { return r.StringMap(v); }
};

struct Parts {
  static void Put(json& j, const char* n, const std::vector<PartMeta>& v,
                  std::vector<const ErasureMeta*>*) {
    json parts = json::array();
    for (const auto& p : v) {
      parts.push_back({{"number", p.number}, {"size", p.size}, {"etag", p.etag}});
      // Optional (issue 14 item 12): absent in older files and for parts without checksums.
      if (!p.checksums.empty()) parts.back()["checksums"] = p.checksums;
    }
    j[n] = std::move(parts);
  }
  static Status Get(const json& j, const char* n, std::vector<PartMeta>& v, bool, GetContext&) {
    const json& parts = j.at(n);
    if (!parts.is_array()) throw std::runtime_error("parts is not an array");
    for (const auto& p : parts) {
      PartMeta pm;
      pm.number = json_int::At<int>(p, "number");
      pm.size = json_int::At<uint64_t>(p, "size");
      pm.etag = p.value("etag", std::string());
      pm.checksums = MapAt(p, "checksums");
      v.push_back(std::move(pm));
    }
    return {};
  }
  static bool Read(CanonicalReader& r, std::vector<PartMeta>& v) {
    return r.Array([&] { return ReadPart(r, v.emplace_back()); });
  }
};

// `shards`: when given, inline shards are left out ("") and collected here in file order for
// SpliceInlineShards; else they are dumped as base64 members.
struct Erasure {
  static void Put(json& j, const char* n, const std::optional<ErasureMeta>& v,
                  std::vector<const ErasureMeta*>* shards) {
    const ErasureMeta& e = *v;
    json& out = j[n] = {{"data", e.data},
                        {"parity", e.parity},
                        {"stripe_size", e.stripe_size},
                        {"index", e.index},
                        {"distribution", e.distribution},
                        {"bitrot", e.bitrot},
                        {"inline", e.is_inline}};
    if (!e.is_inline) return;
    if (shards) {
      out["inline_shard"] = "";
      shards->push_back(&e);
    } else {
      out["inline_shard"] =
          e.inline_b64.empty() ? hash::Base64Encode(e.inline_shard) : e.inline_b64;
    }
  }
  static Status Get(const json& j, const char* n, std::optional<ErasureMeta>& v, bool,
                    GetContext& ctx) {
    auto it = j.find(n);
    if (it == j.end()) return {};
    ErasureMeta e;
    e.data = json_int::At<int>(*it, "data");
    e.parity = json_int::At<int>(*it, "parity");
    e.stripe_size = json_int::At<uint64_t>(*it, "stripe_size");
    e.index = json_int::At<int>(*it, "index");
    e.distribution = json_int::ArrayAt<int>(*it, "distribution");
    e.bitrot = it->at("bitrot").get<std::string>();
    e.is_inline = it->value("inline", false);
    if (e.is_inline) {
      const std::string& in_json = it->at("inline_shard").get_ref<const std::string&>();
      std::string_view b64 = in_json;
      if (CutShards* cut = ctx.cut) {
        if (!in_json.empty() || cut->next >= cut->b64.size())
          return MakeError(ErrorCode::kInternalError, "inline shards out of place in " + ctx.path);
        b64 = cut->b64[cut->next++];
      }
      auto raw = hash::Base64Decode(b64);
      if (!raw) return MakeError(ErrorCode::kInternalError, "bad inline shard in " + ctx.path);
      e.inline_shard = std::move(*raw);
    }
    v = std::move(e);
    return {};
  }
  static bool Read(CanonicalReader& r, std::optional<ErasureMeta>& v) {
    return ReadErasure(r, v.emplace());
  }
};

}  // namespace codec

template <class T>
bool IsDefault(const T& v) {
  return v == T{};
}

// Writes the fields of `mask` that `from` holds, each as its presence says.
template <class From>
void PutFields(const From& from, json& j, VersionFieldMask mask,
               std::vector<const ErasureMeta*>* shards) {
  [&](const auto& f) {
#define RDMASTOR_VERSION_PUT(member, name, T, codec_, presence, scope)                   \
  if constexpr (requires { f.member; }) {                                                \
    if ((mask & FieldBit(VersionField::member)) &&                                       \
        (FieldPresence::presence != FieldPresence::kNonDefault || !IsDefault(f.member))) \
      codec::codec_::Put(j, name, f.member, shards);                                     \
  }
    RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_PUT)
#undef RDMASTOR_VERSION_PUT
  }(from);
}

// Reads the fields of `mask` that `to` holds; throws on a mistyped or missing required member.
template <class To>
Status GetFields(const json& j, To& to, VersionFieldMask mask, GetContext& ctx) {
  return [&](auto& t) -> Status {
#define RDMASTOR_VERSION_GET(member, name, T, codec_, presence, scope)                   \
  if constexpr (requires { t.member; }) {                                                \
    if (mask & FieldBit(VersionField::member))                                           \
      RS_RETURN_IF_ERROR(codec::codec_::Get(                                             \
          j, name, t.member, FieldPresence::presence == FieldPresence::kRequired, ctx)); \
  }
    RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_GET)
#undef RDMASTOR_VERSION_GET
    return {};
  }(to);
}

constexpr VersionFieldMask kAllFields = FieldBit(VersionField::kCount) - 1;

json VersionJson(const ObjectMeta& m, std::vector<const ErasureMeta*>* shards = nullptr) {
  json j = json::object();
  PutFields(m, j, kAllFields, shards);
  return j;
}

// One version's fields (format 1: the whole file; format 2: one element of "versions"). Throws
// on a missing or mistyped member; the caller turns that into a kInternalError. `cut`: the file's
// inline shards were cut out of the parsed text, this version's (if inline) is the next one.
Result<ObjectMeta> ParseVersion(const json& j, const std::string& path, CutShards* cut) {
  if (!j.is_object()) throw std::runtime_error("version is not an object");
  ObjectMeta m;
  GetContext ctx{path, cut};
  RS_RETURN_IF_ERROR(GetFields(j, m, kAllFields, ctx));
  RS_RETURN_IF_ERROR(CheckVersion(m, path));
  return m;
}

// The required fields, which the canonical reader must have seen.
constexpr VersionFieldMask RequiredFields() {
  VersionFieldMask m = 0;
#define RDMASTOR_VERSION_REQUIRED_BIT(member, name, T, codec_, presence, scope) \
  if (FieldPresence::presence == FieldPresence::kRequired) m |= FieldBit(VersionField::member);
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_REQUIRED_BIT)
#undef RDMASTOR_VERSION_REQUIRED_BIT
  return m;
}

bool ReadVersion(CanonicalReader& r, ObjectMeta& m) {
  VersionFieldMask seen = 0;
  std::map<std::string, std::string> b64;  // user_metadata_b64 (the UserMeta codec's companion)
  const bool ok = r.Object([&](std::string_view name) {
#define RDMASTOR_VERSION_READ(member, jname, T, codec_, presence, scope)      \
  if (name == jname) {                                                        \
    seen |= FieldBit(VersionField::member);                                   \
    return codec::codec_::Read(r, m.member);                                  \
  }                                                                           \
  if (std::is_same_v<codec::codec_, codec::UserMeta> && name == jname "_b64") \
    return r.StringMap(b64);
    RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_READ)
#undef RDMASTOR_VERSION_READ
    return false;
  });
  constexpr VersionFieldMask kRequired = RequiredFields();
  if (!ok || (seen & kRequired) != kRequired) return false;
  // As GetMetadata: the base64 members, in their (encoded) order, over the plain ones.
  for (const auto& [k, v] : b64) {
    auto key = hash::Base64Decode(k);
    auto value = hash::Base64Decode(v);
    if (!key || !value) return false;
    m.user_metadata[*key] = std::move(*value);
  }
  return true;
}

// `text` passed CanonicalChecksumMatches.
std::optional<ObjectVersions> ReadCanonical(std::string_view text) {
  CanonicalReader r(text);
  ObjectVersions out;
  int format = 0;
  std::string checksum;
  const bool ok = r.Object([&](std::string_view name) {
    if (name == "checksum") return r.String(checksum);
    if (name == "version") return r.Int(format);
    if (name == "versions") {
      return r.Array([&] { return ReadVersion(r, out.versions.emplace_back()); });
    }
    return false;
  });
  if (!ok || !r.AtEnd() || out.versions.empty() ||
      (format != kMetaFormatVersion && format != kMetaFormatEncrypted))
    return std::nullopt;
  static const std::string kNoPath;  // a failed check declines: the general reader words it
  for (size_t i = 0; i < out.versions.size(); ++i) {
    ObjectMeta& v = out.versions[i];
    v.version = format;
    if (!CheckVersion(v, kNoPath).ok()) return std::nullopt;
    for (size_t k = 0; k < i; ++k) {
      if (out.versions[k].version_id == v.version_id) return std::nullopt;  // duplicate id
    }
  }
  return out;
}

}  // namespace

std::string SerializeObjectVersions(const ObjectVersions& file) {
  json versions = json::array();
  bool encrypted = false;
  std::vector<const ErasureMeta*> shards;
  for (const auto& v : file.versions) {
    versions.push_back(VersionJson(v, &shards));
    encrypted = encrypted || !v.internal.empty();
  }
  json j = {{"version", encrypted ? kMetaFormatEncrypted : kMetaFormatVersion},
            {"versions", std::move(versions)}};
  // Checksum over the canonical dump (keys sorted; invalid UTF-8 already replaced, so the dump
  // parses back to itself). "checksum" sorts before "version": the file is that dump with the
  // checksum member put first, which is what a dump of the object with it would print.
  const std::string canonical = SpliceInlineShards(Dump(j), shards);
  std::string out = "{\"checksum\":\"" + MetaChecksum(canonical) + "\",";
  out.append(canonical, 1);
  return out;
}

namespace {

// `verified`: CanonicalChecksumMatches(text).
Result<ObjectVersions> ParseGeneral(const std::string& text, const std::string& path,
                                    bool verified) {
  try {
    CutShards cut;
    std::optional<std::string> without_shards;
    if (verified) without_shards = CutInlineShards(text, cut);
    CutShards* shards = without_shards ? &cut : nullptr;
    json j = json::parse(without_shards ? *without_shards : text);
    if (!j.is_object()) return MakeError(ErrorCode::kInternalError, "malformed metadata " + path);
    if (auto it = j.find("checksum"); it != j.end()) {
      std::string want = it->get<std::string>();
      j.erase("checksum");
      if (!verified && MetaChecksum(Dump(j)) != want) {
        return MakeError(ErrorCode::kInternalError, "metadata checksum mismatch in " + path);
      }
    }
    const int format = json_int::At<int>(j, "version");
    ObjectVersions out;
    if (format == 1) {
      auto v = ParseVersion(j, path, shards);
      if (!v.ok()) return v.error();
      if (shards && shards->next != shards->b64.size())
        return MakeError(ErrorCode::kInternalError, "inline shards out of place in " + path);
      v->version = 1;
      v->version_id.clear();  // format 1 had no versions: its object is the null version
      v->delete_marker = false;
      out.versions.push_back(std::move(*v));
      return out;
    }
    if (format != kMetaFormatVersion && format != kMetaFormatEncrypted) {
      return MakeError(ErrorCode::kInternalError,
                       "unsupported metadata version " + std::to_string(format) + " in " + path);
    }
    const json& versions = j.at("versions");
    if (!versions.is_array() || versions.empty()) {
      return MakeError(ErrorCode::kInternalError, "metadata without versions in " + path);
    }
    for (const auto& e : versions) {
      auto v = ParseVersion(e, path, shards);
      if (!v.ok()) return v.error();
      if (out.Find(v->version_id)) {
        return MakeError(ErrorCode::kInternalError, "duplicate version id in " + path);
      }
      v->version = format;
      out.versions.push_back(std::move(*v));
    }
    if (shards && shards->next != shards->b64.size())
      return MakeError(ErrorCode::kInternalError, "inline shards out of place in " + path);
    return out;
  } catch (const std::exception& e) {
    return Malformed(path, e);
  }
}

}  // namespace

std::optional<ObjectVersions> ParseCanonicalVersions(std::string_view text) {
  if (!CanonicalChecksumMatches(text)) return std::nullopt;
  return ReadCanonical(text);
}

Result<ObjectVersions> ParseObjectVersionsGeneral(const std::string& text,
                                                  const std::string& path) {
  return ParseGeneral(text, path, CanonicalChecksumMatches(text));
}

Result<ObjectVersions> ParseObjectVersions(const std::string& text, const std::string& path) {
  // A file as SerializeObjectVersions writes it is checked on its bytes, before parsing; any
  // other spelling of the same JSON (a file that fails this test) is checked the long way.
  const bool verified = CanonicalChecksumMatches(text);
  if (verified) {
    if (auto fast = ReadCanonical(text)) return std::move(*fast);
  }
  return ParseGeneral(text, path, verified);
}

std::string SerializeObjectMeta(const ObjectMeta& m) {
  ObjectVersions file;
  file.versions.push_back(m);
  return SerializeObjectVersions(file);
}

Result<ObjectMeta> ParseObjectMeta(const std::string& text, const std::string& path) {
  auto file = ParseObjectVersions(text, path);
  if (!file.ok()) return file.error();
  return std::move(file->versions.front());
}

std::string SerializeUploadRecord(const UploadRecord& r) {
  json j = {{"version", r.internal.empty() ? 1 : 2},
            {"key", r.key},
            {"initiated_ns", r.initiated_ns},
            {"checksum_algorithm", r.checksum_algorithm}};
  PutFields(r, j, kDeclaredFields, nullptr);
  if (!r.checksum_type.empty()) j["checksum_type"] = r.checksum_type;
  if (r.parity) j["parity"] = *r.parity;
  return Dump(j);
}

Result<UploadRecord> ParseUploadRecord(const std::string& text, const std::string& path) {
  try {
    json j = json::parse(text);
    UploadRecord r;
    r.key = j.at("key").get<std::string>();
    r.initiated_ns = json_int::At<int64_t>(j, "initiated_ns");
    GetContext ctx{path};
    RS_RETURN_IF_ERROR(GetFields(j, r, kDeclaredFields, ctx));
    r.checksum_algorithm = j.value("checksum_algorithm", std::string());
    r.checksum_type = j.value("checksum_type", std::string());
    if (j.contains("parity")) r.parity = json_int::At<int>(j, "parity");
    return r;
  } catch (const std::exception& e) {
    return Malformed(path, e);
  }
}

void VersionFieldsToJson(const ObjectInfo& info, json& j) {
  PutFields(info, j, kAllFields & ~ScopeMask(FieldScope::kLayout), nullptr);
}

void VersionFieldsFromJson(const json& j, ObjectInfo& info) {
  static const std::string kPeer = "peer reply";
  GetContext ctx{kPeer};
  auto st = GetFields(j, info, kAllFields & ~ScopeMask(FieldScope::kLayout), ctx);
  if (!st.ok()) throw std::runtime_error(st.error().message);
}

std::string SerializePartRecord(const PartRecord& r) {
  json j = {{"version", 1},        {"number", r.info.number},     {"etag", r.info.etag},
            {"size", r.info.size}, {"mtime_ns", r.info.mtime_ns}, {"checksums", r.info.checksums},
            {"data", r.data_file}};
  return Dump(j);
}

Result<PartRecord> ParsePartRecord(const std::string& text, const std::string& path) {
  try {
    json j = json::parse(text);
    PartRecord r;
    r.info.number = json_int::At<int>(j, "number");
    r.info.etag = j.at("etag").get<std::string>();
    r.info.size = json_int::At<uint64_t>(j, "size");
    r.info.mtime_ns = json_int::At<int64_t>(j, "mtime_ns");
    r.info.checksums = MapAt(j, "checksums");
    r.data_file = j.at("data").get<std::string>();
    if (r.data_file.empty() || r.data_file.find('/') != std::string::npos || r.data_file == "." ||
        r.data_file == "..") {
      return MakeError(ErrorCode::kInternalError, "inconsistent part record " + path);
    }
    return r;
  } catch (const std::exception& e) {
    return Malformed(path, e);
  }
}

}  // namespace rdmastor::storage
