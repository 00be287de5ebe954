#include "storage/object_meta.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/hash.h"
#include "common/utf8.h"
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

std::map<std::string, std::string> StringMap(const json& j, const char* name) {
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
  auto out = StringMap(j, name);
  for (const auto& [k, v] : StringMap(j, (std::string(name) + "_b64").c_str())) {
    auto key = hash::Base64Decode(k);
    auto value = hash::Base64Decode(v);
    if (!key || !value) throw std::runtime_error("bad base64 in " + std::string(name) + "_b64");
    out[*key] = *value;
  }
  return out;
}

std::string MetaChecksum(const std::string& canonical) {
  return hash::HexEncode(hash::Digest(hash::Algo::kCRC32C, canonical));
}

Error Malformed(const std::string& path, const std::exception& e) {
  return MakeError(ErrorCode::kInternalError,
                   "malformed metadata " + path + ": " + std::string(e.what()));
}

}  // namespace

ObjectInfo ObjectMeta::ToInfo(const std::string& bucket, const std::string& key) const {
  ObjectInfo info;
  info.bucket = bucket;
  info.key = key;
  info.size = size;
  info.etag = etag;
  info.mtime_ns = mtime_ns;
  info.content_type = content_type;
  info.user_metadata = user_metadata;
  info.tags = tags;
  info.checksums = checksums;
  info.storage_class = storage_class;
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
  return info;
}

std::string SerializeObjectMeta(const ObjectMeta& m) {
  json parts = json::array();
  for (const auto& p : m.parts) {
    parts.push_back({{"number", p.number}, {"size", p.size}, {"etag", p.etag}});
    // Optional (issue 14 item 12): absent in older files and for parts without checksums.
    if (!p.checksums.empty()) parts.back()["checksums"] = p.checksums;
  }
  json j = {{"version", m.version},
            {"size", m.size},
            {"etag", m.etag},
            {"mtime_ns", m.mtime_ns},
            {"content_type", m.content_type},
            {"checksums", m.checksums},
            {"multipart", m.multipart},
            {"parts", parts},
            {"data_dir", m.data_dir}};
  PutMetadata(j, "user_metadata", m.user_metadata);
  // Optional field (absent in files written before tagging existed, and when there are none).
  if (!m.tags.empty()) j["tags"] = m.tags;
  if (!m.storage_class.empty()) j["storage_class"] = m.storage_class;
  if (m.erasure) {
    const ErasureMeta& e = *m.erasure;
    j["erasure"] = {{"data", e.data},
                    {"parity", e.parity},
                    {"stripe_size", e.stripe_size},
                    {"index", e.index},
                    {"distribution", e.distribution},
                    {"bitrot", e.bitrot},
                    {"inline", e.is_inline}};
    if (e.is_inline) j["erasure"]["inline_shard"] = hash::Base64Encode(e.inline_shard);
  }
  // Checksum over the canonical dump (keys sorted; invalid UTF-8 already replaced).
  json canonical = json::parse(Dump(j));
  canonical["checksum"] = MetaChecksum(Dump(canonical));
  return Dump(canonical);
}

Result<ObjectMeta> ParseObjectMeta(const std::string& text, const std::string& path) {
  try {
    json j = json::parse(text);
    if (auto it = j.find("checksum"); it != j.end()) {
      std::string want = it->get<std::string>();
      j.erase("checksum");
      if (MetaChecksum(Dump(j)) != want) {
        return MakeError(ErrorCode::kInternalError, "metadata checksum mismatch in " + path);
      }
    }
    ObjectMeta m;
    m.version = j.at("version").get<int>();
    if (m.version != kMetaFormatVersion) {
      return MakeError(ErrorCode::kInternalError,
                       "unsupported metadata version " + std::to_string(m.version) + " in " + path);
    }
    m.size = j.at("size").get<uint64_t>();
    m.etag = j.at("etag").get<std::string>();
    m.mtime_ns = j.at("mtime_ns").get<int64_t>();
    m.content_type = j.value("content_type", std::string());
    m.user_metadata = GetMetadata(j, "user_metadata");
    m.tags = j.value("tags", std::string());
    m.checksums = StringMap(j, "checksums");
    m.storage_class = j.value("storage_class", std::string());
    m.multipart = j.value("multipart", false);
    uint64_t total = 0;
    for (const auto& p : j.at("parts")) {
      PartMeta pm;
      pm.number = p.at("number").get<int>();
      pm.size = p.at("size").get<uint64_t>();
      pm.etag = p.value("etag", std::string());
      pm.checksums = StringMap(p, "checksums");
      total += pm.size;
      m.parts.push_back(std::move(pm));
    }
    m.data_dir = j.at("data_dir").get<std::string>();
    if (auto it = j.find("erasure"); it != j.end()) {
      ErasureMeta e;
      e.data = it->at("data").get<int>();
      e.parity = it->at("parity").get<int>();
      e.stripe_size = it->at("stripe_size").get<uint64_t>();
      e.index = it->at("index").get<int>();
      e.distribution = it->at("distribution").get<std::vector<int>>();
      e.bitrot = it->at("bitrot").get<std::string>();
      e.is_inline = it->value("inline", false);
      if (e.is_inline) {
        auto raw = hash::Base64Decode(it->at("inline_shard").get<std::string>());
        if (!raw) return MakeError(ErrorCode::kInternalError, "bad inline shard in " + path);
        e.inline_shard = std::move(*raw);
      }
      const int n = e.data + e.parity;
      if (e.data < 1 || e.parity < 0 || e.stripe_size == 0 || e.index < 0 || e.index >= n ||
          static_cast<int>(e.distribution.size()) != n) {
        return MakeError(ErrorCode::kInternalError, "inconsistent erasure info in " + path);
      }
      m.erasure = std::move(e);
    }
    // The data dir name is joined to a path: it must be one of the layout's data dir names.
    if (!paths::IsDataDirName(m.data_dir) || total != m.size) {
      return MakeError(ErrorCode::kInternalError, "inconsistent metadata " + path);
    }
    return m;
  } catch (const std::exception& e) {
    return Malformed(path, e);
  }
}

std::string SerializeUploadRecord(const UploadRecord& r) {
  json j = {{"version", 1},
            {"key", r.key},
            {"initiated_ns", r.initiated_ns},
            {"content_type", r.content_type},
            {"checksum_algorithm", r.checksum_algorithm}};
  PutMetadata(j, "user_metadata", r.user_metadata);
  if (!r.tags.empty()) j["tags"] = r.tags;
  if (!r.storage_class.empty()) j["storage_class"] = r.storage_class;
  if (!r.checksum_type.empty()) j["checksum_type"] = r.checksum_type;
  return Dump(j);
}

Result<UploadRecord> ParseUploadRecord(const std::string& text, const std::string& path) {
  try {
    json j = json::parse(text);
    UploadRecord r;
    r.key = j.at("key").get<std::string>();
    r.initiated_ns = j.at("initiated_ns").get<int64_t>();
    r.content_type = j.value("content_type", std::string());
    r.user_metadata = GetMetadata(j, "user_metadata");
    r.checksum_algorithm = j.value("checksum_algorithm", std::string());
    r.tags = j.value("tags", std::string());
    r.storage_class = j.value("storage_class", std::string());
    r.checksum_type = j.value("checksum_type", std::string());
    return r;
  } catch (const std::exception& e) {
    return Malformed(path, e);
  }
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
    r.info.number = j.at("number").get<int>();
    r.info.etag = j.at("etag").get<std::string>();
    r.info.size = j.at("size").get<uint64_t>();
    r.info.mtime_ns = j.at("mtime_ns").get<int64_t>();
    r.info.checksums = StringMap(j, "checksums");
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
