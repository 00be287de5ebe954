#include "cli/admin_command.h"

#include <chrono>
#include <cctype>
#include <cstdio>
#include <optional>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/jwt.h"
#include "cli/command_line.h"
#include "client/http_client.h"
#include "common/clock.h"
#include "common/uri.h"

namespace rdmastor::cli {

namespace {

std::string EnvOr(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// The root credentials as the server reads them (MINIO_ROOT_USER / _FILE, the deprecated pair),
// so a tool run with the server's environment file signs as its root; {"", ""} when none is set
// (or they are invalid: the caller then says which variables to set).
std::pair<std::string, std::string> RootCredentialsFromEnv(const EnvMap& env) {
  auto c = ParseRootCredentials(env);
  if (!c.ok() || c->defaults) return {};
  return {c->user, c->password};
}

}  // namespace

Result<nlohmann::json> AdminCall(client::S3Client& c, const std::string& method,
                                 const std::string& path_under_minio,
                                 const std::string& raw_query) {
  client::S3Request req;
  req.method = method;
  req.bucket = "minio";  // path-style: /minio/admin/v3/...
  req.key = path_under_minio;
  req.raw_query = raw_query;
  auto resp = c.Execute(req, client::ResponseTarget::String());
  if (!resp.ok()) return resp.error();
  if (!resp->success())
    return client::S3ErrorFromResponse(*resp, method + " /minio/" + path_under_minio);
  auto doc = nlohmann::json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return MakeError(ErrorCode::kInternalError,
                     "the server's answer to /minio/" + path_under_minio + " is not JSON");
  }
  return doc;
}

Result<client::S3ClientConfig> AdminClientConfig(const std::string& endpoint,
                                           const std::string& certs_dir, const EnvMap& env,
                                           bool server_defaults) {
  auto [user, password] = RootCredentialsFromEnv(env);
  if (user.empty() && password.empty()) {
    user = EnvOr(env, "AWS_ACCESS_KEY_ID");
    password = EnvOr(env, "AWS_SECRET_ACCESS_KEY");
  }
  if (user.empty() && password.empty() && server_defaults) user = password = "minioadmin";
  if (user.empty() || password.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "set MINIO_ROOT_USER and MINIO_ROOT_PASSWORD (or AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY) to the server's root credentials");
  }
  return client::S3ConfigFromEndpoint(
      endpoint, user, password,
      EnvOr(env, "MINIO_REGION").empty() ? std::string("us-east-1") : EnvOr(env, "MINIO_REGION"),
      client::CertsDirTrust(certs_dir, EnvOr(env, "HOME")));
}

namespace {

Result<nlohmann::json> AdminPost(client::S3Client& c, const std::string& path_under_minio,
                                 const std::string& raw_query) {
  return AdminCall(c, "POST", path_under_minio, raw_query);
}

void PrintCounts(const char* what, const nlohmann::json& counts) {
  std::printf(
      "%s: %llu object(s) scanned, %llu healed, %llu shard(s) written, %llu failed, %llu "
      "incomplete\n",
      what, counts.value("scanned", 0ULL), counts.value("healed", 0ULL),
      counts.value("shardsWritten", 0ULL), counts.value("failed", 0ULL),
      counts.value("incomplete", 0ULL));
  if (auto it = counts.find("missedDrives"); it != counts.end() && it->is_array() && !it->empty()) {
    std::string names;
    for (const auto& d : *it) names += (names.empty() ? "" : ", ") + d.get<std::string>();
    std::printf("copies not rebuilt (drive offline or failing; heal again once it is back): %s\n",
                names.c_str());
  }
  std::fflush(stdout);
}

// Root credentials and the endpoint's client for the admin commands; nullopt after printing why.
std::optional<client::S3ClientConfig> IamClientConfig(const char* what, const EnvMap& env,
                                                         const std::string& endpoint,
                                                         const std::string& certs_dir) {
  auto [user, password] = RootCredentialsFromEnv(env);
  if (user.empty() && password.empty()) {
    user = EnvOr(env, "AWS_ACCESS_KEY_ID");
    password = EnvOr(env, "AWS_SECRET_ACCESS_KEY");
  }
  if (user.empty() || password.empty()) {
    std::fprintf(stderr,
                 "rdmastor admin %s: set MINIO_ROOT_USER and MINIO_ROOT_PASSWORD (or "
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) to the server's root "
                 "credentials\n",
                 what);
    return std::nullopt;
  }
  auto cfg = client::S3ConfigFromEndpoint(
      endpoint, user, password,
      EnvOr(env, "MINIO_REGION").empty() ? std::string("us-east-1") : EnvOr(env, "MINIO_REGION"),
      client::CertsDirTrust(certs_dir, EnvOr(env, "HOME")));
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdmastor admin %s: %s\n", what, cfg.error().message.c_str());
    return std::nullopt;
  }
  return *cfg;
}

// One admin call on /minio/admin/v3/<op>; returns the response body.
Result<std::string> IamCall(client::S3Client& c, const std::string& method,
                              const std::string& op, const std::string& raw_query,
                              std::string_view body = {}) {
  client::S3Request req;
  req.method = method;
  req.bucket = "minio";
  req.key = "admin/v3/" + op;
  req.raw_query = raw_query;
  req.body = body;
  auto resp = c.Execute(req, client::ResponseTarget::String());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return client::S3ErrorFromResponse(*resp, method + " /minio/admin/v3/" + op);
  return resp->body;
}

// `rdmastor admin user ...` and `rdmastor admin policy ...`.
int RunIam(const AdminArgs& a, const EnvMap& env) {
  // The arguments were checked when parsed (command_line.cc): their number fits the command.
  const std::string& what = a.command;
  const std::string& sub = a.sub;
  const auto& [endpoint, certs_dir, json] = a.client;
  const std::vector<std::string>& pos = a.args;
  const std::string& user_flag = a.user;
  if ((sub == "attach" || sub == "detach" || sub == "set") && user_flag.empty())
    return UsageError("admin policy " + sub, "--user names no user");
  auto cfg = IamClientConfig(what.c_str(), env, endpoint, certs_dir);
  if (!cfg) return 2;
  client::S3Client c(*cfg);
  Result<std::string> r = std::string();
  const std::string label = what + " " + sub;
  nlohmann::json out = {{"status", "success"}, {"command", label}};  // --json's answer
  // A success line, or (--json) the fields it names.
  auto done = [&](const std::string& line, nlohmann::json fields) {
    if (json) {
      out.update(fields);
    } else {
      std::printf("%s\n", line.c_str());
    }
  };
  if (what == "user" && sub == "add") {
    std::string secret = pos.size() == 2 ? pos[1] : "-";
    if (secret == "-") {
      char line[512];
      if (!std::fgets(line, sizeof(line), stdin))
        return UsageError("admin user add", "no secret key on standard input");
      secret = line;
      while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    }
    const std::string body = nlohmann::json{{"secretKey", secret}}.dump();
    r = IamCall(c, "PUT", "add-user", "accessKey=" + uri::Encode(pos[0]), body);
    if (r.ok()) done("user " + pos[0] + " added", {{"accessKey", pos[0]}});
  } else if (what == "user" && sub == "remove") {
    r = IamCall(c, "DELETE", "remove-user", "accessKey=" + uri::Encode(pos[0]));
    if (r.ok()) done("user " + pos[0] + " removed", {{"accessKey", pos[0]}});
  } else if (what == "user" && (sub == "enable" || sub == "disable")) {
    r = IamCall(c, "PUT", "set-user-status",
                "accessKey=" + uri::Encode(pos[0]) + "&status=" + sub + "d");
    if (r.ok())
      done("user " + pos[0] + " " + sub + "d", {{"accessKey", pos[0]}, {"userStatus", sub + "d"}});
  } else if (what == "user" && sub == "info") {
    r = IamCall(c, "GET", "user-info", "accessKey=" + uri::Encode(pos[0]));
    if (r.ok()) {
      auto doc = nlohmann::json::parse(*r, nullptr, false);
      if (!doc.is_object()) {
        r = MakeError(ErrorCode::kInternalError, "the server's answer is not JSON");
      } else {
        const std::string status = doc.value("status", ""), policies = doc.value("policyName", "");
        done("AccessKey: " + pos[0] + "\nStatus: " + status + "\nPolicyName: " + policies,
             {{"accessKey", pos[0]}, {"userStatus", status}, {"policyName", policies}});
      }
    }
  } else if (what == "user") {
    r = IamCall(c, "GET", "list-users", "");
    if (r.ok()) {
      auto doc = nlohmann::json::parse(*r, nullptr, false);
      if (!doc.is_object()) {
        r = MakeError(ErrorCode::kInternalError, "the server's answer is not JSON");
      } else if (json) {
        out["users"] = nlohmann::json::array();
        for (const auto& [ak, info] : doc.items())
          out["users"].push_back({{"accessKey", ak},
                                  {"status", info.value("status", "")},
                                  {"policyName", info.value("policyName", "")}});
      } else {
        for (const auto& [ak, info] : doc.items())
          std::printf("%s\t%s\t%s\n", ak.c_str(), info.value("status", "").c_str(),
                      info.value("policyName", "").c_str());
      }
    }
  } else if (sub == "create") {
    std::FILE* f = std::fopen(pos[1].c_str(), "rb");
    if (!f) {
      std::fprintf(stderr, "rdmastor admin policy: cannot open %s\n", pos[1].c_str());
      return 2;
    }
    std::string doc;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0 && doc.size() < (1 << 20)) doc.append(buf, n);
    std::fclose(f);
    r = IamCall(c, "PUT", "add-canned-policy", "name=" + uri::Encode(pos[0]), doc);
    if (r.ok()) done("policy " + pos[0] + " created", {{"policy", pos[0]}});
  } else if (sub == "remove") {
    r = IamCall(c, "DELETE", "remove-canned-policy", "name=" + uri::Encode(pos[0]));
    if (r.ok()) done("policy " + pos[0] + " removed", {{"policy", pos[0]}});
  } else if (sub == "list") {
    r = IamCall(c, "GET", "list-canned-policies", "");
    if (r.ok()) {
      auto doc = nlohmann::json::parse(*r, nullptr, false);
      if (!doc.is_object()) {
        r = MakeError(ErrorCode::kInternalError, "the server's answer is not JSON");
      } else if (json) {
        out["policies"] = nlohmann::json::object();
        for (const auto& [name, policy] : doc.items()) out["policies"][name] = policy;
      } else {
        for (const auto& [name, _] : doc.items()) std::printf("%s\n", name.c_str());
      }
    }
  } else if (sub == "info") {
    r = IamCall(c, "GET", "info-canned-policy", "name=" + uri::Encode(pos[0]));
    if (r.ok()) {
      auto doc = nlohmann::json::parse(*r, nullptr, false);
      if (doc.is_discarded()) {
        r = MakeError(ErrorCode::kInternalError, "the server's answer is not JSON");
      } else {
        done(doc.dump(2), {{"policy", pos[0]}, {"policyInfo", doc}});
      }
    }
  } else if (sub == "attach" || sub == "detach") {
    const std::string body = nlohmann::json{{"policies", pos}, {"user", user_flag}}.dump();
    r = IamCall(c, "POST", "idp/builtin/policy/" + sub, "", body);
    if (r.ok())
      done(sub + "ed " + (sub == "attach" ? "to" : "from") + " user " + user_flag,
           {{"user", user_flag}, {"policies", pos}});
  } else {  // set
    std::string names;
    for (const auto& p : pos) names += (names.empty() ? "" : ",") + p;
    r = IamCall(c, "PUT", "set-user-or-group-policy",
                  "isGroup=false&policyName=" + uri::Encode(names) + "&userOrGroup=" + uri::Encode(user_flag));
    if (r.ok())
      done("policies of user " + user_flag + " set", {{"user", user_flag}, {"policies", pos}});
  }
  if (!r.ok()) {
    if (json)
      std::printf(
          "%s\n",
          nlohmann::json{{"status", "error"}, {"command", label}, {"error", r.error().message}}
              .dump()
              .c_str());
    std::fprintf(stderr, "rdmastor admin %s: %s\n", label.c_str(), r.error().message.c_str());
    return 1;
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return 0;
}

// "1.5 GiB" for a byte count.
std::string HumanBytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// `rdmastor admin info`: GET /minio/admin/v3/info, as text or (--json) the server's document.
int RunInfo(const AdminArgs& a, const EnvMap& env) {
  const auto& [endpoint, certs_dir, json] = a.client;
  auto cfg = AdminClientConfig(endpoint, certs_dir, env, /*server_defaults=*/false);
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdmastor admin info: %s\n", cfg.error().message.c_str());
    return 2;
  }
  client::S3Client c(*cfg);
  auto info = AdminCall(c, "GET", "admin/v3/info", "");
  if (!info.ok()) {
    if (json)
      std::printf("%s\n", nlohmann::json{{"status", "error"},
                                         {"command", "info"},
                                         {"error", info.error().message}}
                              .dump()
                              .c_str());
    std::fprintf(stderr, "rdmastor admin info: %s\n", info.error().message.c_str());
    return 1;
  }
  if (json) {
    nlohmann::json out = {{"status", "success"}, {"command", "info"}, {"info", *info}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  const auto& backend = (*info)["backend"];
  std::printf("rdmastor %s, %s, up %llds\n", info->value("version", "?").c_str(),
              info->value("mode", "?").c_str(), info->value("uptime", 0LL));
  for (const auto& s : (*info)["servers"]) {
    std::printf("%s: %s\n", s.value("endpoint", "").c_str(), s.value("state", "").c_str());
    for (const auto& d : s["drives"]) {
      std::printf("  %-7s set %llu drive %llu  %s used of %s  %s\n", d.value("state", "").c_str(),
                  d.value("set_index", 0ULL) + 1, d.value("disk_index", 0ULL) + 1,
                  HumanBytes(d.value("usedspace", 0ULL)).c_str(),
                  HumanBytes(d.value("totalspace", 0ULL)).c_str(),
                  d.value("endpoint", "").c_str());
    }
  }
  const auto sets = backend.value("totalSets", nlohmann::json::array());
  const auto per_set = backend.value("totalDrivesPerSet", nlohmann::json::array());
  std::printf("%s: %llu erasure set(s) of %llu drive(s); %llu drive(s) online, %llu offline\n",
              backend.value("backendType", "").c_str(),
              sets.empty() ? 0ULL : sets[0].get<unsigned long long>(),
              per_set.empty() ? 0ULL : per_set[0].get<unsigned long long>(),
              backend.value("onlineDisks", 0ULL), backend.value("offlineDisks", 0ULL));
  if (info->contains("lifecycle")) {
    const auto& lc = (*info)["lifecycle"];
    std::printf("lifecycle: %s, every %gs; on this node %llu cycle(s), %llu version(s) scanned, "
                "%llu expired, %llu upload(s) aborted, %llu kept under Object Lock, %llu error(s)\n",
                lc.value("running", false) ? "running" : "idle", lc.value("intervalSeconds", 0.0),
                lc.value("cycles", 0ULL), lc.value("scanned", 0ULL), lc.value("expired", 0ULL),
                lc.value("aborted", 0ULL), lc.value("lockedKept", 0ULL), lc.value("errors", 0ULL));
    if (lc.contains("lastCycle")) {
      const auto& last = lc["lastCycle"];
      const long long ended = last.value("ended_ns", 0LL);
      const std::string when =
          ended > 0 ? "ended " + std::to_string((NowNs() - ended) / 1'000'000'000) + "s ago"
                    : "in progress at bucket '" + last.value("bucket", "") + "' after key '" +
                          last.value("after", "") + "'";
      std::printf("  last cycle (%s): %s; %llu scanned, %llu expired, %llu aborted\n",
                  last.value("node", "?").c_str(), when.c_str(),
                  last.value("scanned", 0ULL), last.value("expired", 0ULL),
                  last.value("aborted", 0ULL));
    }
  }
  return 0;
}

int RunHeal(const AdminArgs& a, const EnvMap& env) {
  // --json: one JSON object at the end (items included), nothing else.
  const auto& [endpoint, certs_dir, json] = a.client;
  const std::vector<std::string>& pos = a.args;
  if (pos.size() == 1 && pos[0] == "-") return UsageError("admin heal", "'-' is not a bucket");
  const std::string bucket = pos.empty() ? std::string() : pos[0];
  auto cfg = AdminClientConfig(endpoint, certs_dir, env, /*server_defaults=*/false);
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdmastor admin heal: %s\n", cfg.error().message.c_str());
    return 2;
  }
  client::S3Client c(*cfg);
  const std::string path = "admin/v3/heal/" + bucket;
  // --json: the items and the final state gathered into one object, printed at the end.
  nlohmann::json items = nlohmann::json::array();
  auto json_result = [&](const std::string& status, const nlohmann::json& fields) {
    nlohmann::json out = {{"status", status}, {"command", "heal"}, {"bucket", bucket}};
    out.update(fields);
    std::printf("%s\n", out.dump().c_str());
  };
  auto failed = [&](const std::string& message) {
    if (json) json_result("error", {{"error", message}, {"items", items}});
    std::fprintf(stderr, "rdmastor admin heal: %s\n", message.c_str());
    return 1;
  };
  auto started = AdminPost(c, path, "");
  if (!started.ok()) return failed(started.error().message);
  const std::string token = started->value("clientToken", "");
  if (!json)
    std::printf("heal started on %s: %s (clientToken %s)\n", endpoint.c_str(),
                bucket.empty() ? "all buckets" : ("bucket " + bucket).c_str(), token.c_str());
  std::fflush(stdout);
  uint64_t after = 0, dropped_total = 0;
  auto last_progress = std::chrono::steady_clock::now();
  int transport_errors = 0;
  for (;;) {  // ends when the heal does, or after 5 failed polls in a row
    auto st = AdminPost(c, path, "clientToken=" + token + "&after=" + std::to_string(after));
    if (!st.ok()) {
      if (++transport_errors >= 5) return failed("lost the heal's status: " + st.error().message);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    transport_errors = 0;
    if (auto dropped = st->value("itemsDropped", 0ULL); dropped > 0) {
      dropped_total += dropped;
      if (!json) std::printf("(%llu healed object(s) not shown)\n", dropped);
    }
    for (const auto& it : (*st)["items"]) {
      if (json) {
        items.push_back(it);
      } else if (it.contains("error")) {
        std::printf("failed %s/%s: %s\n", it.value("bucket", "").c_str(),
                    it.value("object", "").c_str(), it.value("error", "").c_str());
      } else {
        std::printf("healed %s/%s: %llu shard(s) written\n", it.value("bucket", "").c_str(),
                    it.value("object", "").c_str(), it.value("shardsWritten", 0ULL));
      }
    }
    after = std::max<uint64_t>(after, st->value("lastItem", uint64_t{0}));
    const std::string state = st->value("state", "");
    if (state != "running") {
      const auto& counts = (*st)["counts"];
      const bool sound = state == "done" && counts.value("failed", 0ULL) == 0 &&
                         counts.value("incomplete", 0ULL) == 0;
      if (json) {
        nlohmann::json fields = {{"clientToken", token},
                                 {"state", state},
                                 {"counts", counts},
                                 {"drivesReplaced", st->value("drivesReplaced", 0)},
                                 {"items", items},
                                 {"itemsDropped", dropped_total}};
        if (state != "done") fields["error"] = st->value("error", state);
        json_result(sound ? "success" : "error", fields);
      } else {
        if (auto n = st->value("drivesReplaced", 0); n > 0) {
          std::printf("replaced drive(s) formatted: %d\n", n);
        }
        PrintCounts(state == "done" ? "heal done" : "heal failed", counts);
      }
      if (state != "done") {
        std::fprintf(stderr, "rdmastor admin heal: %s\n", st->value("error", state).c_str());
        return 1;
      }
      return sound ? 0 : 1;
    }
    if (!json && std::chrono::steady_clock::now() - last_progress >= std::chrono::seconds(2)) {
      PrintCounts("progress", (*st)["counts"]);
      last_progress = std::chrono::steady_clock::now();
    }
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int RunAdminCommand(const AdminArgs& a, const EnvMap& env) {
  if (a.command == "heal") return RunHeal(a, env);
  if (a.command == "info") return RunInfo(a, env);
  if (a.command == "user" || a.command == "policy") return RunIam(a, env);
  // prometheus-token
  const long days = a.expiry_days;
  const bool json = a.client.json;
  auto creds = ParseRootCredentials(env);
  if (!creds.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", creds.error().message.c_str());
    return 2;
  }
  admin::JwtClaims claims{creds->user, "prometheus",
                          static_cast<int64_t>(std::time(nullptr)) + days * 86400};
  const std::string token = admin::SignJwt(claims, creds->password);
  if (json) {
    // mc admin prometheus generate's fields: the token and when it expires (Unix seconds).
    std::printf("%s\n", nlohmann::json{{"status", "success"},
                                       {"command", "prometheus-token"},
                                       {"bearerToken", token},
                                       {"expiresAt", claims.exp}}
                            .dump()
                            .c_str());
  } else {
    std::printf("%s\n", token.c_str());
  }
  return 0;
}

}  // namespace rdmastor::cli
