#include "cli/admin_command.h"

#include <chrono>
#include <cctype>
#include <cstdio>
#include <optional>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>
#include <variant>

#include "admin/jwt.h"
#include "client/http_client.h"
#include "common/uri.h"

namespace rdmastor::cli {

namespace {

constexpr const char* kAdminUsage = R"(Usage:
  rdmastor admin prometheus-token [--json] [--expiry-days N]
  rdmastor admin info [--json] [--endpoint URL] [--certs-dir DIR]
  rdmastor admin heal [--json] [--endpoint URL] [--certs-dir DIR] [BUCKET]
  rdmastor admin user add|remove|list|info|enable|disable [--json] [--endpoint URL] [--certs-dir DIR] [ACCESS_KEY [SECRET_KEY]]
      user add ACCESS_KEY [SECRET_KEY|-]
      user remove|info|enable|disable ACCESS_KEY
      user list
  rdmastor admin policy create|remove|list|info|attach|detach|set [--json] [--endpoint URL] [--certs-dir DIR] ...
      policy create NAME FILE          a custom policy from a JSON file (AWS policy language)
      policy remove NAME
      policy list                      every policy: readwrite, readonly, writeonly and custom
      policy info NAME                 the policy's document
      policy attach POLICY... --user AK    adds policies to a user
      policy detach POLICY... --user AK    removes policies from a user
      policy set POLICY... --user AK       replaces a user's policies

  info: the deployment as the server sees it: version, uptime, each node with its drives (state,
  used and total space, erasure set), the erasure sets and the drives online.

  user, policy: manage the users of a running server (MinIO's `mc admin user` / `mc admin
  policy`); users and policies are stored on the drives and every node of a cluster sees them.
  The secret key may be given as "-" to read it from standard input. A disabled user's requests
  are refused (InvalidAccessKeyId) until it is enabled again. Signs with the root credentials as
  heal does. --json (every command that asks a server): one JSON object on standard output,
  {"status": "success", "command": ..., ...} or {"status": "error", ..., "error": ...}. Exit status 0 on success, 1 when the server refused, 2 on usage
  errors.

  heal: asks a running erasure-coded server (default endpoint http://127.0.0.1:9000; an
  https:// endpoint is verified against the system CA store plus DIR/CAs/*.crt|*.pem; without
  --certs-dir, the CAs of ~/.rdmastor/certs, MinIO's ~/.minio/certs and mc's ~/.mc/certs) to heal
  every object of BUCKET, or of every bucket: formats replaced drives, verifies every shard of
  every object and rewrites missing, stale and corrupt ones. Prints each object healed,
  progress every 2 s, and the counts at the end (scanned, healed, shards written, failed,
  incomplete) with the drives whose copies could not be rebuilt (offline or failing). Signs
  with the root credentials: MINIO_ROOT_USER/MINIO_ROOT_PASSWORD, else
  AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY. Exit status 0 when every object is sound, 1 when an
  object could not be healed, copies were left missing on an offline drive, or the heal failed,
  2 on usage errors.

  Prints a bearer token for Prometheus to scrape /minio/v2/metrics/{cluster,node} when
  MINIO_PROMETHEUS_AUTH_TYPE is jwt (the default). The token is signed with MINIO_ROOT_PASSWORD
  for MINIO_ROOT_USER (read from the environment, as the server does) and expires after N days
  (default 36500, as `mc admin prometheus generate`). Use it in prometheus.yml as
  `bearer_token: <token>` (or `authorization: {credentials: <token>}`).
)";

// The usage lines of one admin command (those of kAdminUsage naming it), for a usage error: the
// relevant line, not the whole help. With `sub` (user enable, policy detach, ...), the command's
// first line and only the lines of that subcommand.
std::string UsageOf(std::string_view command, std::string_view sub_command = {}) {
  std::string out, line;
  const std::string_view text(kAdminUsage);
  const std::string top = "rdmastor admin " + std::string(command) + " ";
  const std::string sub = std::string(command) + " ";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    if (l.empty()) break;  // the Usage block ends at the first blank line
    const auto first = l.find_first_not_of(' ');
    if (first == std::string_view::npos) continue;
    const std::string_view body = l.substr(first);
    bool wanted = body.starts_with(top);
    if (!wanted && first > 2 && body.starts_with(sub)) {
      // "user remove|info|enable|disable ACCESS_KEY": the alternatives of its second word.
      std::string_view names = body.substr(sub.size());
      names = names.substr(0, names.find(' '));
      wanted = sub_command.empty();
      for (size_t at = 0; !wanted && at <= names.size();) {
        const size_t bar = std::min(names.find('|', at), names.size());
        wanted = names.substr(at, bar - at) == sub_command;
        at = bar + 1;
      }
    }
    if (wanted) out += std::string(l) + "\n";
  }
  return "Usage:\n" + out + "(rdmastor admin --help for every command)\n";
}

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

// The flags every admin command that asks a server takes, and its positional arguments.
struct ClientArgs {
  std::string endpoint = "http://127.0.0.1:9000", certs_dir, user;
  bool json = false;  // --json: one JSON object on stdout (mc's --json habit)
  std::vector<std::string> positional;
};

// Parses `args` of `rdmastor admin <command>`: --endpoint, --certs-dir/-S, --json, --help, and
// --user when `with_user`; "-" is positional (a secret read from stdin). Returns the exit status
// instead when it printed the help (0) or a usage error (2).
std::variant<ClientArgs, int> ParseClientArgs(const std::string& command,
                                              const std::vector<std::string>& args,
                                              bool with_user) {
  ClientArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--endpoint" && has_value) {
      out.endpoint = args[++i];
    } else if ((args[i] == "--certs-dir" || args[i] == "-S") && has_value) {
      out.certs_dir = args[++i];
    } else if (with_user && args[i] == "--user" && has_value) {
      out.user = args[++i];
    } else if (args[i] == "--json") {
      out.json = true;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::fputs(kAdminUsage, stdout);
      return 0;
    } else if (args[i] != "-" && args[i].starts_with("-")) {
      std::fprintf(stderr, "rdmastor admin %s: unexpected argument '%s'\n%s", command.c_str(),
                   args[i].c_str(), UsageOf(command).c_str());
      return 2;
    } else {
      out.positional.push_back(args[i]);
    }
  }
  return out;
}

// `rdmastor admin user ...` and `rdmastor admin policy ...`.
int RunIam(const std::string& what, const std::vector<std::string>& args, const EnvMap& env) {
  auto parsed = ParseClientArgs(what, args, /*with_user=*/what == "policy");
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  auto& [endpoint, certs_dir, user_flag, json, pos] = std::get<ClientArgs>(parsed);
  const std::string sub = pos.empty() ? std::string() : pos[0];
  auto usage = [&] {
    std::fprintf(stderr, "rdmastor admin %s: wrong arguments\n%s", what.c_str(),
                 UsageOf(what, sub).c_str());
    return 2;
  };
  if (pos.empty()) return usage();
  pos.erase(pos.begin());
  // Validate the arguments before any connection.
  const bool one_name = pos.size() == 1;
  if (what == "user") {
    if (!((sub == "add" && (pos.size() == 2 || pos.size() == 1)) ||
          ((sub == "remove" || sub == "info" || sub == "enable" || sub == "disable") &&
           one_name) ||
          (sub == "list" && pos.empty())))
      return usage();
  } else {
    if (!((sub == "create" && pos.size() == 2) ||
          ((sub == "remove" || sub == "info") && one_name) || (sub == "list" && pos.empty()) ||
          ((sub == "attach" || sub == "detach" || sub == "set") && !pos.empty() &&
           !user_flag.empty())))
      return usage();
  }
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
      if (!std::fgets(line, sizeof(line), stdin)) return usage();
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
int RunInfo(const std::vector<std::string>& args, const EnvMap& env) {
  auto parsed = ParseClientArgs("info", args, /*with_user=*/false);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& [endpoint, certs_dir, user, json, pos] = std::get<ClientArgs>(parsed);
  if (!pos.empty()) {
    std::fprintf(stderr, "rdmastor admin info: unexpected argument '%s'\n%s", pos[0].c_str(),
                 UsageOf("info").c_str());
    return 2;
  }
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
  return 0;
}

int RunHeal(const std::vector<std::string>& args, const EnvMap& env) {
  // --json: one JSON object at the end (items included), nothing else.
  auto parsed = ParseClientArgs("heal", args, /*with_user=*/false);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& [endpoint, certs_dir, user, json, pos] = std::get<ClientArgs>(parsed);
  if (pos.size() > 1 || (pos.size() == 1 && pos[0] == "-")) {
    std::fprintf(stderr, "rdmastor admin heal: unexpected argument '%s'\n%s",
                 pos.back().c_str(), UsageOf("heal").c_str());
    return 2;
  }
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

int RunAdminCommand(const std::vector<std::string>& args, const EnvMap& env) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kAdminUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "heal") return RunHeal({args.begin() + 1, args.end()}, env);
  if (args[0] == "info") return RunInfo({args.begin() + 1, args.end()}, env);
  if (args[0] == "user" || args[0] == "policy")
    return RunIam(args[0], {args.begin() + 1, args.end()}, env);
  if (args[0] != "prometheus-token") {
    // The command lines only (one per command), not every subcommand and its explanation.
    std::string lines;
    const std::string_view text(kAdminUsage);
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      if (text.substr(at, end - at).starts_with("  rdmastor admin "))
        lines += std::string(text.substr(at, end - at)) + "\n";
      at = end + 1;
    }
    std::fprintf(stderr,
                 "rdmastor admin: unknown command '%s'\nUsage:\n%s(rdmastor admin --help for "
                 "every command)\n",
                 args[0].c_str(), lines.c_str());
    return 2;
  }
  long days = 36500;
  bool json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--expiry-days" && i + 1 < args.size()) {
      char* end = nullptr;
      days = std::strtol(args[++i].c_str(), &end, 10);
      if (*end != '\0' || days <= 0 || days > 36500) {
        std::fprintf(stderr, "rdmastor admin: --expiry-days must be 1..36500\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "rdmastor admin prometheus-token: unknown argument '%s'\n%s",
                   args[i].c_str(), UsageOf("prometheus-token").c_str());
      return 2;
    }
  }
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
