#include "s3/admin_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/error_code.h"
#include "common/hash.h"
#include "common/uri.h"
#include "s3/admin_iam.h"
#include "s3/lifecycle_scanner.h"
#include "s3/names.h"
#include "s3/ops.h"
#include "rdma/s3_service.h"
#include "s3/sigv4.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kHealPrefix = "/minio/admin/v3/heal";
constexpr std::string_view kRdmaPath = "/minio/admin/v3/rdma";
constexpr std::string_view kInfoPath = "/minio/admin/v3/info";

// The process start, for `info`'s uptime (static initialisation runs before main).
const auto kProcessStart = std::chrono::steady_clock::now();

// The deployment as `info` shows it. Drives come as the health monitor samples them, set after
// set; a remote drive is a URL (http://node:9000/path) and names its node; local drives belong to
// this node, named as the client reached it (`host`).
nlohmann::json InfoJson(const admin::ClusterHealth& h, const std::string& host) {
  using Json = nlohmann::json;
  const size_t set_size = h.set_size ? h.set_size : std::max<size_t>(h.drives.size(), 1);
  std::vector<std::pair<std::string, Json>> servers;  // endpoint -> drives, in first-seen order
  size_t online = 0;
  for (size_t i = 0; i < h.drives.size(); ++i) {
    const auto& d = h.drives[i];
    std::string node = host;
    if (auto scheme = d.path.find("://"); scheme != std::string::npos)
      node = d.path.substr(scheme + 3, d.path.find('/', scheme + 3) - (scheme + 3));
    online += d.online;
    Json drive = {{"endpoint", d.path},
                  {"state", d.online ? "ok" : "offline"},
                  {"totalspace", d.total_bytes},
                  {"usedspace", d.total_bytes - std::min(d.free_bytes, d.total_bytes)},
                  {"availspace", d.free_bytes},
                  {"set_index", i / set_size},
                  {"disk_index", i % set_size}};
    auto it = std::find_if(servers.begin(), servers.end(),
                           [&](const auto& s) { return s.first == node; });
    if (it == servers.end()) it = servers.insert(servers.end(), {node, Json::array()});
    it->second.push_back(std::move(drive));
  }
  Json list = Json::array();
  for (auto& [node, drives] : servers) {
    const bool any_online = std::any_of(drives.begin(), drives.end(),
                                        [](const Json& d) { return d["state"] == "ok"; });
    list.push_back({{"endpoint", node},
                    {"state", any_online ? "online" : "offline"},
                    {"drives", std::move(drives)}});
  }
  const size_t sets = (h.drives.size() + set_size - 1) / set_size;
  return {{"mode", h.HasWriteQuorum() ? "online" : "degraded"},
          {"version", RDMASTOR_VERSION},
          {"uptime", std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - kProcessStart)
                         .count()},
          {"servers", std::move(list)},
          {"backend",
           {{"backendType", h.drives.size() > 1 ? "Erasure" : "FS"},
            {"onlineDisks", online},
            {"offlineDisks", h.drives.size() - online},
            {"totalSets", Json::array({sets})},
            {"totalDrivesPerSet", Json::array({set_size})},
            {"readQuorum", h.read_quorum},
            {"writeQuorum", h.write_quorum}}}};
}

void SendJson(ResponseSink& sink, const std::string& request_id, const nlohmann::json& doc) {
  auto head = BaseHead(request_id, 200);
  std::string body = doc.dump();
  head.Set("Content-Type", "application/json");
  head.content_length = body.size();
  if (sink.SendHead(head)) sink.Write(body.data(), body.size());
}

nlohmann::json CountsJson(const storage::HealCounts& c) {
  return {{"scanned", c.objects_scanned},
          {"healed", c.objects_healed},
          {"shardsWritten", c.shards_written},
          {"failed", c.failed},
          {"incomplete", c.incomplete},
          {"missedDrives", c.missed_drives}};
}

}  // namespace

// ---- HealService ----------------------------------------------------------------------------

HealService::~HealService() {
  if (thread_.joinable()) {
    if (running_) spdlog::info("heal: waiting for the running heal to finish");
    thread_.join();
  }
}

Result<std::string> HealService::Start(const std::string& bucket) {
  if (store_ == nullptr) {
    return MakeError(ErrorCode::kHealNotImplemented,
                     "Nothing to heal: this is a single-drive deployment (no erasure coding, no "
                     "parity to heal from).");
  }
  if (!bucket.empty() && !store_->GetBucketInfo(bucket).ok()) {
    return MakeError(ErrorCode::kNoSuchBucket);
  }
  std::lock_guard lock(mu_);
  if (running_) {
    return MakeError(ErrorCode::kHealAlreadyRunning,
                     "A heal is already running (clientToken " + job_.token + ").");
  }
  if (thread_.joinable()) thread_.join();  // the previous heal, finished
  job_ = Snapshot{};
  job_.token = hash::RandomHex(16);
  job_.bucket = bucket;
  job_.state = "running";
  job_.started_ns = NowNs();
  running_ = true;
  thread_ = std::thread([this, bucket] { Run(bucket); });
  spdlog::info("heal: started by the admin API: {} (clientToken {})",
               bucket.empty() ? std::string("all buckets") : "bucket " + bucket, job_.token);
  return job_.token;
}

void HealService::Run(std::string bucket) {
  // Replaced drives (empty directories where formatted ones were) first, so the walk heals onto
  // them even when the periodic drive check is off.
  const int replaced = store_->CheckDrives(/*heal=*/false);
  {
    std::lock_guard lock(mu_);
    job_.drives_replaced = replaced;
  }
  if (replaced > 0 && !bucket.empty()) {
    // A drive formatted here is no longer "replaced" for the drive check: heal all of it now.
    spdlog::info("heal: {} replaced drive(s) formatted: healing every bucket, not only {}",
                 replaced, bucket);
    bucket.clear();
  }
  auto counts = store_->HealAll(
      bucket, [this](const std::string& b, const std::string& k, const storage::HealCounts& c) {
        std::lock_guard lock(mu_);
        const bool item =
            c.objects_healed > job_.counts.objects_healed || c.failed > job_.counts.failed;
        if (item) {
          Item it;
          it.seq = ++job_.last_seq;
          it.bucket = b;
          it.key = k;
          it.shards = c.shards_written - job_.counts.shards_written;
          if (c.failed > job_.counts.failed) it.error = "could not be healed (see the server log)";
          job_.items.push_back(std::move(it));
          if (job_.items.size() > kMaxItems) job_.items.pop_front();
        }
        job_.counts = c;
      });
  std::lock_guard lock(mu_);
  job_.finished_ns = NowNs();
  if (counts.ok()) {
    job_.counts = *counts;
    job_.state = "done";
    counts->Log("admin heal (clientToken " + job_.token + ")");
  } else {
    job_.state = "failed";
    job_.error = counts.error().message.empty()
                     ? std::string(GetErrorInfo(counts.error().code).message)
                     : counts.error().message;
    spdlog::warn("heal: failed (clientToken {}): {}", job_.token, job_.error);
  }
  running_ = false;
}

Result<HealService::Snapshot> HealService::Status(const std::string& token, uint64_t after) {
  std::lock_guard lock(mu_);
  if (token.empty() || token != job_.token) return MakeError(ErrorCode::kHealNoSuchProcess);
  Snapshot s = job_;
  s.items.clear();
  const uint64_t first_kept = job_.items.empty() ? job_.last_seq + 1 : job_.items.front().seq;
  if (first_kept > after + 1) s.dropped = first_kept - (after + 1);
  for (const auto& it : job_.items) {
    if (it.seq > after) s.items.push_back(it);
  }
  return s;
}

// ---- the admin endpoint ---------------------------------------------------------------------

bool ServeAdmin(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                const AdminOptions& opts, BodySource& body) {
  if (!req.raw_path.starts_with("/minio/admin/")) return false;
  auto fail = [&](const Error& e) {
    SendOpsError(req, sink, request_id, e);
    return true;
  };
  // Root only: the admin API accepts nothing but a valid signature by the root credentials.
  auto auth = VerifyRequest(
      req,
      [&opts](std::string_view ak) -> std::optional<std::string> {
        if (ak == opts.access_key) return opts.secret_key;
        return std::nullopt;
      },
      static_cast<int64_t>(std::time(nullptr)));
  if (!auth.ok()) return fail(auth.error());
  if (auth->signature_version != 4) {
    return fail(MakeError(ErrorCode::kAccessDenied,
                          "The admin API requires AWS Signature Version 4."));
  }
  if (auth->payload_mode != PayloadMode::kSignedSha256 &&
      auth->payload_mode != PayloadMode::kUnsigned) {
    return fail(MakeError(ErrorCode::kInvalidRequest, "admin requests carry no streamed body"));
  }
  // Users and policies (s3/admin_iam.h).
  if (IsIamAdminPath(req.raw_path)) {
    if (opts.iam == nullptr) return fail(MakeError(ErrorCode::kNotImplemented));
    ServeIamAdmin(req, sink, request_id, *opts.iam, *auth, body);
    return true;
  }
  if (req.chunked || req.content_length.value_or(0) != 0) {
    return fail(MakeError(ErrorCode::kInvalidRequest, "admin requests carry no body"));
  }
  if (auth->payload_mode == PayloadMode::kSignedSha256 &&
      auth->content_sha256 != hash::Sha256Hex("")) {
    return fail(MakeError(ErrorCode::kContentSHA256Mismatch));
  }

  std::string_view path = req.raw_path;
  if (path == kInfoPath) {
    if (req.method != "GET") return fail(MakeError(ErrorCode::kMethodNotAllowed));
    const std::string* host = req.FindHeader("host");
    auto info = InfoJson(opts.cluster_health ? opts.cluster_health() : admin::ClusterHealth{},
                         host ? *host : std::string("this node"));
    if (opts.lifecycle) info["lifecycle"] = opts.lifecycle->StatusJson();
    SendJson(sink, request_id, info);
    return true;
  }
  if (path == kRdmaPath) {
    // The live state of S3 over RDMA: what a client on the soft fabric or verbs will get.
    if (req.method != "GET") return fail(MakeError(ErrorCode::kMethodNotAllowed));
    nlohmann::json doc = {{"fabric", "none"},
                          {"ready", false},
                          {"reason", "S3 over RDMA is not set up in this server"}};
    if (opts.rdma != nullptr) {
      doc = {{"fabric", opts.rdma->fabric_name()},
             {"ready", opts.rdma->available()},
             {"reason", opts.rdma->unavailable_reason()}};
    }
    SendJson(sink, request_id, doc);
    return true;
  }
  if (!path.starts_with(kHealPrefix) ||
      (path.size() > kHealPrefix.size() && path[kHealPrefix.size()] != '/')) {
    return fail(MakeError(ErrorCode::kNotImplemented,
                          "This admin API is not implemented by rdmastor (only info, heal, rdma, "
                          "users and policies are)."));
  }
  if (req.method != "POST") return fail(MakeError(ErrorCode::kMethodNotAllowed));
  auto bucket = uri::Decode(path.substr(std::min(path.size(), kHealPrefix.size() + 1)));
  if (!bucket) return fail(MakeError(ErrorCode::kInvalidRequest, "malformed request path"));
  while (!bucket->empty() && bucket->back() == '/') bucket->pop_back();
  if (!bucket->empty() && !IsValidBucketName(*bucket)) {
    return fail(MakeError(ErrorCode::kInvalidBucketName));
  }
  auto query = uri::ParseQuery(req.raw_query);
  if (!query) return fail(MakeError(ErrorCode::kInvalidArgument, "malformed query string"));
  std::string token;
  uint64_t after = 0;
  for (const auto& [k, v] : *query) {
    if (k == "clientToken") {
      token = v;
    } else if (k == "after") {
      char* end = nullptr;
      after = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') {
        return fail(MakeError(ErrorCode::kInvalidArgument, "after must be a number"));
      }
    }
  }
  if (opts.heal == nullptr) {
    return fail(MakeError(ErrorCode::kHealNotImplemented,
                          "Nothing to heal: this server has no heal service."));
  }

  if (token.empty()) {
    auto started = opts.heal->Start(*bucket);
    if (!started.ok()) return fail(started.error());
    SendJson(sink, request_id, {{"clientToken", *started}, {"bucket", *bucket}});
    return true;
  }
  auto s = opts.heal->Status(token, after);
  if (!s.ok()) return fail(s.error());
  nlohmann::json items = nlohmann::json::array();
  for (const auto& it : s->items) {
    nlohmann::json j = {
        {"seq", it.seq}, {"bucket", it.bucket}, {"object", it.key}, {"shardsWritten", it.shards}};
    if (!it.error.empty()) j["error"] = it.error;
    items.push_back(std::move(j));
  }
  nlohmann::json doc = {{"clientToken", s->token},
                        {"bucket", s->bucket},
                        {"state", s->state},
                        {"counts", CountsJson(s->counts)},
                        {"drivesReplaced", s->drives_replaced},
                        {"startTimeNs", s->started_ns},
                        {"finishTimeNs", s->finished_ns},
                        {"items", std::move(items)},
                        {"lastItem", s->last_seq},
                        {"itemsDropped", s->dropped}};
  if (!s->error.empty()) doc["error"] = s->error;
  SendJson(sink, request_id, doc);
  return true;
}

}  // namespace rdmastor::s3
