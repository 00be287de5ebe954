#include "cluster/wire.h"

#include <map>
#include <nlohmann/json.hpp>

namespace rdmastor::cluster {

namespace {

using nlohmann::json;

template <class F>
auto Parse(const std::string& text, const char* what, F&& f) -> decltype(f(json())) {
  try {
    return f(json::parse(text));
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError,
                     std::string("malformed peer RPC ") + what + ": " + e.what());
  }
}

json InfoToJson(const storage::ObjectInfo& o) {
  return {{"bucket", o.bucket},
          {"key", o.key},
          {"size", o.size},
          {"etag", o.etag},
          {"mtime_ns", o.mtime_ns},
          {"content_type", o.content_type},
          {"user_metadata", o.user_metadata},
          {"checksums", o.checksums},
          {"part_count", o.part_count},
          {"part_sizes", o.part_sizes}};
}

storage::ObjectInfo InfoFromJson(const json& j) {
  storage::ObjectInfo o;
  o.bucket = j.at("bucket").get<std::string>();
  o.key = j.at("key").get<std::string>();
  o.size = j.at("size").get<uint64_t>();
  o.etag = j.at("etag").get<std::string>();
  o.mtime_ns = j.at("mtime_ns").get<int64_t>();
  o.content_type = j.at("content_type").get<std::string>();
  o.user_metadata = j.at("user_metadata").get<std::map<std::string, std::string>>();
  o.checksums = j.at("checksums").get<std::map<std::string, std::string>>();
  o.part_count = j.at("part_count").get<int>();
  o.part_sizes = j.at("part_sizes").get<std::vector<uint64_t>>();
  return o;
}

}  // namespace

std::string EncodeListOptions(const storage::ListOptions& o) {
  return json{{"prefix", o.prefix},
              {"delimiter", o.delimiter},
              {"start_after", o.start_after},
              {"max_keys", o.max_keys}}
      .dump();
}

Result<storage::ListOptions> DecodeListOptions(const std::string& text) {
  return Parse(text, "list options", [](const json& j) -> Result<storage::ListOptions> {
    storage::ListOptions o;
    o.prefix = j.at("prefix").get<std::string>();
    o.delimiter = j.at("delimiter").get<std::string>();
    o.start_after = j.at("start_after").get<std::string>();
    o.max_keys = j.at("max_keys").get<int>();
    return o;
  });
}

std::string EncodeListResult(const storage::ListResult& r) {
  json objs = json::array();
  for (const auto& o : r.objects) objs.push_back(InfoToJson(o));
  return json{{"objects", objs},
              {"common_prefixes", r.common_prefixes},
              {"truncated", r.truncated},
              {"next_marker", r.next_marker}}
      .dump();
}

Result<storage::ListResult> DecodeListResult(const std::string& text) {
  return Parse(text, "listing", [](const json& j) -> Result<storage::ListResult> {
    storage::ListResult r;
    for (const auto& o : j.at("objects")) r.objects.push_back(InfoFromJson(o));
    r.common_prefixes = j.at("common_prefixes").get<std::vector<std::string>>();
    r.truncated = j.at("truncated").get<bool>();
    r.next_marker = j.at("next_marker").get<std::string>();
    return r;
  });
}

std::string EncodeCommitPlan(const storage::fsutil::CommitPlan& p) {
  return json{{"base", p.base},
              {"staging", p.staging},
              {"target", p.target},
              {"meta_name", p.meta_name},
              {"new_data_name", p.new_data_name},
              {"old_data_name", p.old_data_name}}
      .dump();
}

Result<storage::fsutil::CommitPlan> DecodeCommitPlan(const std::string& text) {
  return Parse(text, "commit plan", [](const json& j) -> Result<storage::fsutil::CommitPlan> {
    storage::fsutil::CommitPlan p;
    p.base = j.at("base").get<std::string>();
    p.staging = j.at("staging").get<std::string>();
    p.target = j.at("target").get<std::string>();
    p.meta_name = j.at("meta_name").get<std::string>();
    p.new_data_name = j.at("new_data_name").get<std::string>();
    p.old_data_name = j.at("old_data_name").get<std::string>();
    return p;
  });
}

std::string EncodeLockArgs(const LockArgs& a) {
  return json{{"uid", a.uid},           {"resources", a.resources}, {"owner", a.owner},
              {"instance", a.instance}, {"source", a.source},       {"quorum", a.quorum}}
      .dump();
}

Result<LockArgs> DecodeLockArgs(const std::string& text) {
  return Parse(text, "lock args", [](const json& j) -> Result<LockArgs> {
    LockArgs a;
    a.uid = j.at("uid").get<std::string>();
    a.resources = j.at("resources").get<std::vector<std::string>>();
    a.owner = j.at("owner").get<std::string>();
    a.instance = j.value("instance", std::string());
    a.source = j.at("source").get<std::string>();
    a.quorum = j.at("quorum").get<int>();
    return a;
  });
}

std::string EncodeStrings(const std::vector<std::string>& v) { return json(v).dump(); }

Result<std::vector<std::string>> DecodeStrings(const std::string& text) {
  return Parse(text, "name list", [](const json& j) -> Result<std::vector<std::string>> {
    return j.get<std::vector<std::string>>();
  });
}

ErrorCode ErrorCodeFromName(const std::string& name) {
  static const std::map<std::string, ErrorCode> kByName = [] {
    std::map<std::string, ErrorCode> m;
#define RDMASTOR_BY_NAME(e, code, status, msg) m.emplace(code, ErrorCode::e);
    RDMASTOR_ERROR_CODES(RDMASTOR_BY_NAME)
#undef RDMASTOR_BY_NAME
    return m;
  }();
  auto it = kByName.find(name);
  return it == kByName.end() ? ErrorCode::kInternalError : it->second;
}

}  // namespace rdmastor::cluster
