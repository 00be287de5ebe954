#include "cluster/wire.h"

#include <map>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "common/json_int.h"
#include "storage/format.h"
#include "storage/object_meta.h"

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

// The version's fields travel as storage/version_record.h spells them (VersionFieldsToJson); a
// field an older peer does not send reads as its default.
json InfoToJson(const storage::ObjectInfo& o) {
  json j = {{"bucket", o.bucket},
            {"key", o.key},
            {"part_count", o.part_count},
            {"part_sizes", o.part_sizes},
            {"part_checksums", o.part_checksums},
            {"is_latest", o.is_latest}};
  storage::VersionFieldsToJson(o, j);
  return j;
}

storage::ObjectInfo InfoFromJson(const json& j) {
  storage::ObjectInfo o;
  o.bucket = j.at("bucket").get<std::string>();
  o.key = j.at("key").get<std::string>();
  o.part_count = json_int::At<int>(j, "part_count");
  o.part_sizes = json_int::ArrayAt<uint64_t>(j, "part_sizes");
  if (auto it = j.find("part_checksums"); it != j.end())  // absent from older peers
    o.part_checksums = it->get<std::vector<std::map<std::string, std::string>>>();
  o.is_latest = j.value("is_latest", true);  // absent from peers that predate versioning
  storage::VersionFieldsFromJson(j, o);
  return o;
}

}  // namespace

std::string EncodeListOptions(const storage::ListOptions& o) {
  return json{{"prefix", o.prefix},
              {"delimiter", o.delimiter},
              {"start_after", o.start_after},
              {"max_keys", o.max_keys},
              {"versions", o.versions}}
      .dump();
}

Result<storage::ListOptions> DecodeListOptions(const std::string& text) {
  return Parse(text, "list options", [](const json& j) -> Result<storage::ListOptions> {
    storage::ListOptions o;
    o.prefix = j.at("prefix").get<std::string>();
    o.delimiter = j.at("delimiter").get<std::string>();
    o.start_after = j.at("start_after").get<std::string>();
    o.max_keys = json_int::At<int>(j, "max_keys");
    o.versions = j.value("versions", false);
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
    a.quorum = json_int::At<int>(j, "quorum");
    return a;
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

// ---- the call table's types ---------------------------------------------------------------

// Defines Wire<T> from two lambdas over (json&, const T&) and (const json&, T&); the payload, for
// the types that have one, travels outside the JSON.
#define RDMASTOR_WIRE_JSON(T, TO, FROM)                        \
  template <>                                                  \
  Frame Wire<T>::Encode(const T& v) {                          \
    json j = json::object();                                   \
    (TO)(j, v);                                                \
    return Frame{j.dump(), {}};                                \
  }                                                            \
  template <>                                                  \
  Result<T> Wire<T>::Decode(Frame f) {                         \
    return Parse(f.head, #T, [&](const json& j) -> Result<T> { \
      T v{};                                                   \
      (FROM)(j, v);                                            \
      return v;                                                \
    });                                                        \
  }
#define RDMASTOR_WIRE_JSON_PAYLOAD(T, TO, FROM)                \
  template <>                                                  \
  Frame Wire<T>::Encode(const T& v) {                          \
    json j = json::object();                                   \
    (TO)(j, v);                                                \
    return Frame{j.dump(), v.payload};                         \
  }                                                            \
  template <>                                                  \
  Result<T> Wire<T>::Decode(Frame f) {                         \
    return Parse(f.head, #T, [&](const json& j) -> Result<T> { \
      T v{};                                                   \
      (FROM)(j, v);                                            \
      v.payload = std::move(f.payload);                        \
      return v;                                                \
    });                                                        \
  }

// Defines Wire<T> for a struct that travels as named JSON members, each listed once by
// FIELDS(v, f): f("name", v.member) per member, for both directions (integers read checked,
// json_int).
template <class M>
void TakeField(const json& j, const char* name, M& out) {
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>)
    out = json_int::At<M>(j, name);
  else
    out = j.at(name).get<M>();
}
#define RDMASTOR_WIRE_CODEC_OF_FIELDS(T, FIELDS)                                         \
  [](json& j, const T& obj) {                                                            \
    (FIELDS)(obj, [&](const char* n, const auto& m) { j[n] = m; });                      \
  },                                                                                     \
      [](const json& j, T& obj) {                                                        \
        (FIELDS)(obj, [&](const char* n, auto& m) { TakeField(j, n, m); });              \
      }
#define RDMASTOR_WIRE_APPLY(M, ...) M(__VA_ARGS__)
#define RDMASTOR_WIRE_FIELDS(T, FIELDS) \
  RDMASTOR_WIRE_APPLY(RDMASTOR_WIRE_JSON, T, RDMASTOR_WIRE_CODEC_OF_FIELDS(T, FIELDS))
#define RDMASTOR_WIRE_FIELDS_PAYLOAD(T, FIELDS) \
  RDMASTOR_WIRE_APPLY(RDMASTOR_WIRE_JSON_PAYLOAD, T, RDMASTOR_WIRE_CODEC_OF_FIELDS(T, FIELDS))

RDMASTOR_WIRE_FIELDS(peer::NoArgs, [](auto&, auto&&) {})
RDMASTOR_WIRE_FIELDS(peer::Done, [](auto&, auto&&) {})
RDMASTOR_WIRE_JSON(
    bool, [](json& j, const bool& v) { j["v"] = v; },
    [](const json& j, bool& v) { v = j.at("v").get<bool>(); })
RDMASTOR_WIRE_JSON(
    peer::Names, [](json& j, const peer::Names& v) { j["names"] = v; },
    [](const json& j, peer::Names& v) { v = j.at("names").get<peer::Names>(); })
RDMASTOR_WIRE_FIELDS(peer::BucketArgs, [](auto& v, auto&& f) { f("bucket", v.bucket); })
RDMASTOR_WIRE_FIELDS_PAYLOAD(peer::MakeVolArgs, [](auto& v, auto&& f) { f("bucket", v.bucket); })
RDMASTOR_WIRE_FIELDS(peer::PathArgs, [](auto& v, auto&& f) { f("path", v.path); })
RDMASTOR_WIRE_FIELDS_PAYLOAD(peer::WriteFileArgs, [](auto& v, auto&& f) { f("path", v.path); })
RDMASTOR_WIRE_FIELDS(peer::ListDirArgs, [](auto& v, auto&& f) {
  f("path", v.path);
  f("dirs_only", v.dirs_only);
})
RDMASTOR_WIRE_FIELDS(peer::TwoPaths, [](auto& v, auto&& f) {
  f("a", v.a);
  f("b", v.b);
})
RDMASTOR_WIRE_JSON(
    peer::ListObjectsArgs,
    [](json& j, const peer::ListObjectsArgs& v) {
      j["bucket"] = v.bucket;
      j["opts"] = json::parse(EncodeListOptions(v.opts));
    },
    [](const json& j, peer::ListObjectsArgs& v) {
      v.bucket = j.at("bucket").get<std::string>();
      auto o = DecodeListOptions(j.at("opts").dump());
      if (!o.ok()) throw std::runtime_error(o.error().message);
      v.opts = std::move(*o);
    })
RDMASTOR_WIRE_FIELDS_PAYLOAD(peer::ShardWriteArgs, [](auto& v, auto&& f) {
  f("path", v.path);
  f("offset", v.offset);
  f("create", v.create);
  f("sync", v.sync);
})
RDMASTOR_WIRE_FIELDS(peer::ShardReadArgs, [](auto& v, auto&& f) {
  f("path", v.path);
  f("offset", v.offset);
  f("len", v.len);
  f("handle", v.handle);
  f("keep", v.keep);
})
RDMASTOR_WIRE_FIELDS_PAYLOAD(peer::ShardBytes, [](auto& v, auto&& f) {
  f("rdma_bytes", v.rdma_bytes);
  f("handle", v.handle);
})
RDMASTOR_WIRE_FIELDS(storage::DiskInfo, [](auto& v, auto&& f) {
  f("total", v.total_bytes);
  f("free", v.free_bytes);
  f("online", v.online);
})
RDMASTOR_WIRE_FIELDS(storage::fsutil::CommitPlan, [](auto& v, auto&& f) {
  f("base", v.base);
  f("staging", v.staging);
  f("target", v.target);
  f("meta_name", v.meta_name);
  f("new_data_name", v.new_data_name);
  f("old_data_name", v.old_data_name);
})

template <>
Frame Wire<storage::ListResult>::Encode(const storage::ListResult& v) {
  return Frame{EncodeListResult(v), {}};
}
template <>
Result<storage::ListResult> Wire<storage::ListResult>::Decode(Frame f) {
  return DecodeListResult(f.head);
}

// The format file is JSON of its own: it travels as the head, re-dumped on one line (the file is
// pretty-printed, and a newline would end a request's head).
template <>
Frame Wire<storage::DriveFormat>::Encode(const storage::DriveFormat& v) {
  return Frame{json::parse(storage::SerializeFormat(v)).dump(), {}};
}
template <>
Result<storage::DriveFormat> Wire<storage::DriveFormat>::Decode(Frame f) {
  return storage::ParseFormat(f.head, "the format sent by a peer");
}

// An optional file: {"found":bool} and the contents as the payload.
template <>
Frame Wire<peer::OptBytes>::Encode(const peer::OptBytes& v) {
  return Frame{json{{"found", v.has_value()}}.dump(), v.value_or(std::string())};
}
template <>
Result<peer::OptBytes> Wire<peer::OptBytes>::Decode(Frame f) {
  return Parse(f.head, "file", [&](const json& j) -> Result<peer::OptBytes> {
    if (!j.at("found").get<bool>()) return peer::OptBytes();
    return peer::OptBytes(std::move(f.payload));
  });
}

namespace {

// A renamedata request's head fields (its payload, the metadata file, travels outside the JSON).
json RenameDataHead(const storage::RenameDataRequest& v) {
  return json{{"staging", v.staging},
              {"bucket", v.bucket},
              {"key_dir", v.key_dir},
              {"meta_name", v.meta_name},
              {"data_name", v.data_name},
              {"has_meta", v.meta.has_value()},
              {"keep_data", v.keep_data},
              {"prune", v.prune},
              {"mode", static_cast<int>(v.mode)},
              {"version_id", v.version_id},
              {"keep_staging", v.keep_staging}};
}

// Throws (the caller's Parse turns it into an error) on a malformed head.
storage::RenameDataRequest RenameDataFromHead(const json& j, std::string payload) {
  storage::RenameDataRequest v;
  v.staging = j.at("staging").get<std::string>();
  v.bucket = j.at("bucket").get<std::string>();
  v.key_dir = j.at("key_dir").get<std::string>();
  v.meta_name = j.at("meta_name").get<std::string>();
  v.data_name = j.at("data_name").get<std::string>();
  if (j.at("has_meta").get<bool>()) v.meta = std::move(payload);
  v.keep_data = j.at("keep_data").get<bool>();
  v.prune = j.at("prune").get<bool>();
  // Absent from older peers: a whole-file replace, as they meant.
  const int mode = j.contains("mode") ? json_int::At<int>(j, "mode") : 0;
  if (mode < 0 || mode > static_cast<int>(storage::RenameMode::kRemoveVersion))
    throw std::runtime_error("bad rename mode");
  v.mode = static_cast<storage::RenameMode>(mode);
  v.version_id = j.value("version_id", std::string());
  // Absent from older peers: the staging directory is removed, as they expect.
  v.keep_staging = j.value("keep_staging", false);
  return v;
}

// The next `len` bytes of a batch's payload (the entries' payloads, one after another).
std::string TakePayload(const std::string& payload, size_t& at, const json& entry) {
  const auto len = json_int::At<uint64_t>(entry, "len");
  if (len > payload.size() - at) throw std::runtime_error("entry payload past the body's end");
  std::string out = payload.substr(at, static_cast<size_t>(len));
  at += static_cast<size_t>(len);
  return out;
}

// A batch entry's error: its S3 code and message (decoded back into the same ErrorCode).
json ErrorJson(const Error& e) {
  return {{"ok", false}, {"error", std::string(GetErrorInfo(e.code).code)}, {"message", e.message}};
}
Error ErrorFromJson(const json& r) {
  return MakeError(ErrorCodeFromName(r.at("error").get<std::string>()),
                   r.at("message").get<std::string>());
}

// A batch reply: {"results":[{"ok":true, <the result's fields>, "len"} or {"ok":false,"error":S3
// code,"message"}...]} and the results' payloads, one after another. fields(const T&) returns the
// result's fields and its payload (nullptr: none).
template <typename T, typename Fields>
Frame EncodeResults(const std::vector<Result<T>>& results, Fields fields) {
  json heads = json::array();
  std::vector<const std::string*> payloads;
  size_t total = 0;  // one allocation for the payload
  for (const auto& r : results) {
    if (!r.ok()) {
      heads.push_back(ErrorJson(r.error()));
      continue;
    }
    auto [head, payload] = fields(*r);
    head["ok"] = true;
    head["len"] = payload ? payload->size() : 0;
    if (payload) {
      total += payload->size();
      payloads.push_back(payload);
    }
    heads.push_back(std::move(head));
  }
  Frame f;
  f.payload.reserve(total);
  for (const std::string* p : payloads) f.payload += *p;
  // An error message may quote a name that is not UTF-8: replaced, not thrown on.
  f.head = json{{"results", std::move(heads)}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return f;
}

// The other side of EncodeResults: one(const json& result, std::string payload) rebuilds a result
// (throwing on a malformed one); every payload byte must belong to a result.
template <typename T, typename One>
Result<std::vector<Result<T>>> DecodeResults(const Frame& f, const char* what, One one) {
  return Parse(f.head, what, [&](const json& j) -> Result<std::vector<Result<T>>> {
    std::vector<Result<T>> out;
    size_t at = 0;
    for (const auto& r : j.at("results")) {
      if (!r.at("ok").get<bool>()) {
        out.emplace_back(ErrorFromJson(r));
        continue;
      }
      out.emplace_back(one(r, TakePayload(f.payload, at, r)));
    }
    if (at != f.payload.size()) throw std::runtime_error("bytes after the last result's payload");
    return out;
  });
}

}  // namespace

template <>
Frame Wire<storage::RenameDataRequest>::Encode(const storage::RenameDataRequest& v) {
  return Frame{RenameDataHead(v).dump(), v.meta.value_or(std::string())};
}
template <>
Result<storage::RenameDataRequest> Wire<storage::RenameDataRequest>::Decode(Frame f) {
  return Parse(f.head, "renamedata", [&](const json& j) -> Result<storage::RenameDataRequest> {
    return RenameDataFromHead(j, std::move(f.payload));
  });
}

// {"entries":[{"disk", the renamedata head, "len"}...]} and the entries' metadata files, one after
// another, as the payload.
template <>
Frame Wire<peer::RenameDataBatch>::Encode(const peer::RenameDataBatch& v) {
  json entries = json::array();
  Frame f;
  size_t total = 0;  // one allocation for the payload (4 metadata files of ~113 KiB for 1 MiB)
  for (const auto& e : v.entries) total += e.req.meta ? e.req.meta->size() : 0;
  f.payload.reserve(total);
  for (const auto& e : v.entries) {
    json j = RenameDataHead(e.req);
    j["disk"] = e.disk;
    j["len"] = e.req.meta ? e.req.meta->size() : 0;
    if (e.req.meta) f.payload += *e.req.meta;
    entries.push_back(std::move(j));
  }
  f.head = json{{"entries", std::move(entries)}}.dump();
  return f;
}
template <>
Result<peer::RenameDataBatch> Wire<peer::RenameDataBatch>::Decode(Frame f) {
  return Parse(f.head, "renamedatagroup", [&](const json& j) -> Result<peer::RenameDataBatch> {
    peer::RenameDataBatch v;
    size_t at = 0;
    for (const auto& e : j.at("entries")) {
      std::string payload = TakePayload(f.payload, at, e);
      if (!e.at("has_meta").get<bool>() && !payload.empty())
        throw std::runtime_error("a payload for an entry without metadata");
      v.entries.push_back(
          {e.at("disk").get<std::string>(), RenameDataFromHead(e, std::move(payload))});
    }
    if (at != f.payload.size()) throw std::runtime_error("bytes after the last entry's payload");
    return v;
  });
}

// Results: {"has_old_meta","old_data_name","staging_kept"}, the replaced metadata file as the
// payload (EncodeResults).
template <>
Frame Wire<peer::RenameDataResults>::Encode(const peer::RenameDataResults& v) {
  return EncodeResults(v.results, [](const storage::RenameDataResult& r) {
    return std::pair{json{{"has_old_meta", r.old_meta.has_value()},
                          {"old_data_name", r.old_data_name},
                          {"staging_kept", r.staging_kept}},
                     r.old_meta ? &*r.old_meta : nullptr};
  });
}
template <>
Result<peer::RenameDataResults> Wire<peer::RenameDataResults>::Decode(Frame f) {
  auto results = DecodeResults<storage::RenameDataResult>(
      f, "renamedatagroup result", [](const json& r, std::string payload) {
        storage::RenameDataResult one;
        if (r.at("has_old_meta").get<bool>())
          one.old_meta = std::move(payload);
        else if (!payload.empty())
          throw std::runtime_error("a payload for a result without metadata");
        one.old_data_name = r.at("old_data_name").get<std::string>();
        // Absent from older peers, which always remove the staging directory.
        one.staging_kept = r.value("staging_kept", false);
        return one;
      });
  if (!results.ok()) return results.error();
  return peer::RenameDataResults{std::move(*results)};
}

// {"entries":[{"disk","path"}...]}
template <>
Frame Wire<peer::ReadFileBatch>::Encode(const peer::ReadFileBatch& v) {
  json entries = json::array();
  for (const auto& e : v.entries) entries.push_back({{"disk", e.disk}, {"path", e.path}});
  return Frame{json{{"entries", std::move(entries)}}.dump(), {}};
}
template <>
Result<peer::ReadFileBatch> Wire<peer::ReadFileBatch>::Decode(Frame f) {
  return Parse(f.head, "readfilegroup", [&](const json& j) -> Result<peer::ReadFileBatch> {
    peer::ReadFileBatch v;
    for (const auto& e : j.at("entries"))
      v.entries.push_back({e.at("disk").get<std::string>(), e.at("path").get<std::string>()});
    return v;
  });
}

// Results: {"found"}, the file as the payload (EncodeResults).
template <>
Frame Wire<peer::ReadFileResults>::Encode(const peer::ReadFileResults& v) {
  return EncodeResults(v.results, [](const std::optional<std::string>& file) {
    return std::pair{json{{"found", file.has_value()}}, file ? &*file : nullptr};
  });
}
template <>
Result<peer::ReadFileResults> Wire<peer::ReadFileResults>::Decode(Frame f) {
  auto results = DecodeResults<std::optional<std::string>>(
      f, "readfilegroup result", [](const json& r, std::string payload) {
        if (r.at("found").get<bool>()) return std::optional<std::string>(std::move(payload));
        if (!payload.empty()) throw std::runtime_error("a payload for a file not found");
        return std::optional<std::string>();
      });
  if (!results.ok()) return results.error();
  return peer::ReadFileResults{std::move(*results)};
}

// {"entries":[{"disk","path","offset","len","create","sync"}...]} and the pieces, one after
// another, as the payload (over RDMA: none, the serving node pulls them).
template <>
Frame Wire<peer::ShardWriteBatch>::Encode(const peer::ShardWriteBatch& v) {
  json entries = json::array();
  for (const auto& e : v.entries)
    entries.push_back({{"disk", e.disk},
                       {"path", e.path},
                       {"offset", e.offset},
                       {"len", e.len},
                       {"create", e.create},
                       {"sync", e.sync}});
  return Frame{json{{"entries", std::move(entries)}}.dump(), v.payload};
}
template <>
Result<peer::ShardWriteBatch> Wire<peer::ShardWriteBatch>::Decode(Frame f) {
  return Parse(f.head, "shardwritegroup", [&](const json& j) -> Result<peer::ShardWriteBatch> {
    peer::ShardWriteBatch v;
    for (const auto& e : j.at("entries"))
      v.entries.push_back({e.at("disk").get<std::string>(), e.at("path").get<std::string>(),
                           json_int::At<uint64_t>(e, "offset"), json_int::At<uint64_t>(e, "len"),
                           e.at("create").get<bool>(), e.at("sync").get<bool>()});
    v.payload = std::move(f.payload);
    return v;
  });
}

// Results: {"ok":true} or the entry's error (EncodeResults), no payload.
template <>
Frame Wire<peer::DoneResults>::Encode(const peer::DoneResults& v) {
  return EncodeResults(v.results, [](const peer::Done&) {
    return std::pair{json::object(), static_cast<const std::string*>(nullptr)};
  });
}
template <>
Result<peer::DoneResults> Wire<peer::DoneResults>::Decode(Frame f) {
  auto results = DecodeResults<peer::Done>(
      f, "shardwritegroup result", [](const json&, const std::string&) { return peer::Done{}; });
  if (!results.ok()) return results.error();
  return peer::DoneResults{std::move(*results)};
}

// {"entries":[{"disk","path","offset","len","handle","keep"}...]}
template <>
Frame Wire<peer::ShardReadBatch>::Encode(const peer::ShardReadBatch& v) {
  json entries = json::array();
  for (const auto& e : v.entries)
    entries.push_back({{"disk", e.disk},
                       {"path", e.path},
                       {"offset", e.offset},
                       {"len", e.len},
                       {"handle", e.handle},
                       {"keep", e.keep}});
  return Frame{json{{"entries", std::move(entries)}}.dump(), {}};
}
template <>
Result<peer::ShardReadBatch> Wire<peer::ShardReadBatch>::Decode(Frame f) {
  return Parse(f.head, "shardreadgroup", [&](const json& j) -> Result<peer::ShardReadBatch> {
    peer::ShardReadBatch v;
    for (const auto& e : j.at("entries"))
      v.entries.push_back({e.at("disk").get<std::string>(), e.at("path").get<std::string>(),
                           json_int::At<uint64_t>(e, "offset"), json_int::At<uint64_t>(e, "len"),
                           json_int::At<uint64_t>(e, "handle"), e.at("keep").get<bool>()});
    return v;
  });
}

// Results: {"ok":true,"bytes","handle"} or the entry's error; the payload is the entries' slots
// (not EncodeResults': every entry has its slot, a failed one's zeroed).
template <>
Frame Wire<peer::ShardReadResults>::Encode(const peer::ShardReadResults& v) {
  json heads = json::array();
  for (const auto& r : v.results) {
    if (!r.ok()) {
      heads.push_back(ErrorJson(r.error()));
      continue;
    }
    heads.push_back({{"ok", true}, {"bytes", r->bytes}, {"handle", r->handle}});
  }
  return Frame{
      json{{"results", std::move(heads)}}.dump(-1, ' ', false, json::error_handler_t::replace),
      v.payload};
}
template <>
Result<peer::ShardReadResults> Wire<peer::ShardReadResults>::Decode(Frame f) {
  return Parse(f.head, "shardreadgroup result",
               [&](const json& j) -> Result<peer::ShardReadResults> {
                 peer::ShardReadResults v;
                 for (const auto& r : j.at("results")) {
                   if (!r.at("ok").get<bool>()) {
                     v.results.emplace_back(ErrorFromJson(r));
                     continue;
                   }
                   v.results.emplace_back(storage::ShardPieceGot{
                       json_int::At<uint64_t>(r, "bytes"), json_int::At<uint64_t>(r, "handle")});
                 }
                 v.payload = std::move(f.payload);
                 return v;
               });
}

template <>
Frame Wire<storage::RenameDataResult>::Encode(const storage::RenameDataResult& v) {
  return Frame{json{{"has_old_meta", v.old_meta.has_value()},
                    {"old_data_name", v.old_data_name},
                    {"staging_kept", v.staging_kept}}
                   .dump(),
               v.old_meta.value_or(std::string())};
}
template <>
Result<storage::RenameDataResult> Wire<storage::RenameDataResult>::Decode(Frame f) {
  return Parse(f.head, "renamedata result",
               [&](const json& j) -> Result<storage::RenameDataResult> {
                 storage::RenameDataResult v;
                 if (j.at("has_old_meta").get<bool>()) v.old_meta = std::move(f.payload);
                 v.old_data_name = j.at("old_data_name").get<std::string>();
                 // Absent from older peers, which always remove the staging directory.
                 v.staging_kept = j.value("staging_kept", false);
                 return v;
               });
}

}  // namespace rdmastor::cluster
