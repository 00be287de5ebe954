#include "cli/server_config.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "cli/ellipsis.h"
#include "erasure/layout.h"
#include "rdma/build_info.h"
#include "rdma/ceilings.h"

extern char** environ;

namespace rdmastor::cli {

EnvMap Environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Result<std::pair<std::string, uint16_t>> ParseAddress(const std::string& address) {
  auto bad = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "invalid --address '" + address + "': " + why +
                         " (expected HOST:PORT, :PORT or [IPv6]:PORT)");
  };
  std::string host, port;
  if (!address.empty() && address[0] == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':')
      return bad("unterminated IPv6 literal");
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad("IPv6 addresses must be in brackets");
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return bad("port must be a number 0-65535");
  unsigned long p = std::stoul(port);
  if (p > 65535) return bad("port must be a number 0-65535");
  return std::make_pair(host, static_cast<uint16_t>(p));
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, uint64_t> kUnits[] = {{"", 1},
                                                            {"b", 1},
                                                            {"k", 1ULL << 10},
                                                            {"kib", 1ULL << 10},
                                                            {"kb", 1000},
                                                            {"m", 1ULL << 20},
                                                            {"mib", 1ULL << 20},
                                                            {"mb", 1000 * 1000},
                                                            {"g", 1ULL << 30},
                                                            {"gib", 1ULL << 30},
                                                            {"gb", 1000ULL * 1000 * 1000},
                                                            {"t", 1ULL << 40},
                                                            {"tib", 1ULL << 40},
                                                            {"tb", 1000ULL * 1000 * 1000 * 1000}};
  for (const auto& [name, mult] : kUnits) {
    if (unit == name) {
      if (value > UINT64_MAX / mult) return std::nullopt;
      return value * mult;
    }
  }
  return std::nullopt;
}

namespace {
std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (in >> item) {
    // Accept both space- and comma-separated lists.
    std::stringstream parts(item);
    std::string part;
    while (std::getline(parts, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}
}  // namespace

namespace {

// A *_FILE variable's secret, read as MinIO reads Docker/systemd secrets: a bare name is looked
// up under /run/secrets first, then taken as a path; surrounding white space is dropped.
Result<std::string> ReadSecretFile(const std::string& variable, const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (path.find('/') == std::string::npos &&
      std::filesystem::is_regular_file("/run/secrets/" + path, ec))
    file = "/run/secrets/" + path;
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    return MakeError(ErrorCode::kInvalidArgument,
                     variable + "=" + path + ": cannot read " + file + ": " + std::strerror(errno));
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return MakeError(ErrorCode::kInvalidArgument,
                     variable + "=" + path + ": " + file + " is empty (it should hold the secret)");
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}


// An on/off switch (any case); kInvalidArgument naming the variable otherwise.
Result<bool> ParseOnOff(const char* name, const std::string& value) {
  std::string lower = value;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower != "on" && lower != "off")
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(name) + "='" + value + "' is invalid: use on or off");
  return lower == "on";
}

}  // namespace

Result<RootCredentials> ParseRootCredentials(const EnvMap& env) {
  RootCredentials c;
  auto set = [&](const char* name) {
    auto it = env.find(name);
    return it != env.end() && !it->second.empty();
  };
  // MinIO's order: the variable, its *_FILE secret, then the deprecated pair and its files.
  auto pick = [&](std::string& out, std::initializer_list<const char*> names) -> Status {
    for (const char* name : names) {
      if (!set(name)) continue;
      const std::string& v = env.at(name);
      const std::string_view n(name);
      if (n.ends_with("_FILE")) {
        auto secret = ReadSecretFile(name, v);
        if (!secret.ok()) return secret.error();
        out = std::move(secret).value();
      } else {
        out = v;
      }
      if (n.starts_with("MINIO_ACCESS_KEY") || n.starts_with("MINIO_SECRET_KEY"))
        c.warnings.push_back(std::string(name) +
                             " is deprecated: use MINIO_ROOT_USER and MINIO_ROOT_PASSWORD (or "
                             "their _FILE forms) instead");
      return {};
    }
    return {};
  };
  RS_RETURN_IF_ERROR(pick(c.user, {"MINIO_ROOT_USER", "MINIO_ROOT_USER_FILE", "MINIO_ACCESS_KEY",
                                   "MINIO_ACCESS_KEY_FILE"}));
  RS_RETURN_IF_ERROR(pick(c.password, {"MINIO_ROOT_PASSWORD", "MINIO_ROOT_PASSWORD_FILE",
                                       "MINIO_SECRET_KEY", "MINIO_SECRET_KEY_FILE"}));
  if (c.user.empty() && c.password.empty()) {
    // Reached only when no credential variable is set: a set but empty one is refused below.
    bool any = false;
    for (const char* name : kCredentialVariables) any = any || env.count(name) > 0;
    if (any)
      return MakeError(ErrorCode::kInvalidArgument,
                       "a root credential variable is set but empty: set MINIO_ROOT_USER and "
                       "MINIO_ROOT_PASSWORD (or MINIO_ROOT_USER_FILE and "
                       "MINIO_ROOT_PASSWORD_FILE), or unset them all for the default credentials");
    c.user = "minioadmin";
    c.password = "minioadmin";
    c.defaults = true;
  } else if (c.user.empty() || c.password.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string("MINIO_ROOT_USER and MINIO_ROOT_PASSWORD must be set together (") +
                         (c.user.empty() ? "no user: MINIO_ROOT_USER or MINIO_ROOT_USER_FILE"
                                         : "no password: MINIO_ROOT_PASSWORD or "
                                           "MINIO_ROOT_PASSWORD_FILE") +
                         " is missing)");
  }
  if (c.user.size() < 3)
    return MakeError(ErrorCode::kInvalidArgument,
                     "MINIO_ROOT_USER must be at least 3 characters long");
  if (c.password.size() < 8)
    return MakeError(ErrorCode::kInvalidArgument,
                     "MINIO_ROOT_PASSWORD must be at least 8 characters long");
  return c;
}

Result<TlsFiles> ResolveCertsDir(const std::optional<std::string>& flag, const EnvMap& env) {
  TlsFiles t;
  std::error_code ec;
  if (flag) {
    t.dir = *flag;
  } else if (auto home = env.find("HOME"); home != env.end() && !home->second.empty()) {
    // ~/.rdmastor/certs, else MinIO's ~/.minio/certs when only that one exists (a MinIO host's
    // certificates keep working when rdmastor replaces it).
    t.dir = home->second + "/.rdmastor/certs";
    const std::string minio = home->second + "/.minio/certs";
    if (!std::filesystem::is_directory(t.dir, ec) && std::filesystem::is_directory(minio, ec))
      t.dir = minio;
  } else {
    return t;
  }
  if (flag && !std::filesystem::is_directory(t.dir, ec))
    return MakeError(ErrorCode::kInvalidArgument, "--certs-dir " + t.dir + " is not a directory");
  std::string cert = t.dir + "/public.crt", key = t.dir + "/private.key";
  bool has_cert = std::filesystem::exists(cert, ec), has_key = std::filesystem::exists(key, ec);
  if (has_cert != has_key)
    return MakeError(
        ErrorCode::kInvalidArgument,
        "certs directory " + t.dir + " has " +
            (has_cert ? "public.crt but no private.key" : "private.key but no public.crt") +
            ": add the missing file for HTTPS, or remove the other for HTTP");
  if (has_cert) {
    t.cert = cert;
    t.key = key;
  }
  return t;
}

std::optional<int64_t> ParseDurationMs(std::string_view v, int64_t max_ms) {
  const size_t digits = std::min(v.find_first_not_of("0123456789"), v.size());
  const std::string_view num = v.substr(0, digits), unit = v.substr(digits);
  if (num.empty() || num.size() >= 9) return std::nullopt;
  const int64_t n = std::stoll(std::string(num));
  int64_t ms = -1;
  if (unit.empty() || unit == "s")
    ms = n * 1000;
  else if (unit == "ms")
    ms = n;
  else if (unit == "m")
    ms = n * 60000;
  else if (unit == "h")
    ms = n * 3600000;
  if (ms < 0 || ms > max_ms) return std::nullopt;
  return ms;
}

namespace {

// The S3 front end's limits against hostile or broken clients (http_server.h).
Status ParseApiLimits(const EnvMap& env, ServerConfig& cfg) {
  auto get = [&](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  auto count = [&](const char* name, uint64_t lo, uint64_t hi, auto& out) -> Status {
    const std::string v = get(name);
    if (v.empty()) return {};
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size() || n < lo || n > hi)
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + v + "' is invalid: use a number from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
    out = static_cast<std::remove_reference_t<decltype(out)>>(n);
    return {};
  };
  auto duration = [&](const char* name, int& out) -> Status {
    const std::string v = get(name);
    if (v.empty()) return {};
    auto ms = ParseDurationMs(v);
    if (!ms || *ms < 100)
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + v +
                           "' is invalid: use a duration such as 30s, 2m or 500ms (>= 100ms)");
    out = static_cast<int>(*ms);
    return {};
  };
  if (auto st = count("MINIO_API_REQUESTS_MAX", 1, 4096, cfg.requests_max); !st.ok()) return st;
  if (auto st = count("RDMASTOR_API_REQUESTS_PER_CLIENT", 1, 4096, cfg.requests_per_client);
      !st.ok())
    return st;
  if (auto st = count("RDMASTOR_API_CONNECTIONS_MAX", 1, 10'000'000, cfg.connections_max); !st.ok())
    return st;
  if (auto st = duration("RDMASTOR_API_BODY_TIMEOUT", cfg.body_timeout_ms); !st.ok()) return st;
  if (auto st = duration("RDMASTOR_API_SEND_TIMEOUT", cfg.send_timeout_ms); !st.ok()) return st;
  if (auto st = duration("RDMASTOR_API_HEADER_TIMEOUT", cfg.header_timeout_ms); !st.ok()) return st;
  if (auto st = duration("RDMASTOR_API_TLS_HANDSHAKE_TIMEOUT", cfg.handshake_timeout_ms); !st.ok())
    return st;
  auto rate = [&](const char* name, uint64_t& out) -> Status {
    const std::string v = get(name);
    if (v.empty()) return {};
    auto r = v == "off" ? std::optional<uint64_t>(0) : ParseByteSize(v);
    if (!r)
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + v +
                           "' is invalid: use bytes per second (65536), a size such as 64KiB, "
                           "or off");
    out = *r;
    return {};
  };
  if (auto st = rate("RDMASTOR_API_MIN_RATE", cfg.min_rate); !st.ok()) return st;
  if (auto st = duration("RDMASTOR_RDMA_PROGRESS_TIMEOUT", cfg.rdma_progress_timeout_ms); !st.ok())
    return st;
  if (auto st = rate("RDMASTOR_RDMA_MIN_RATE", cfg.rdma_min_rate); !st.ok()) return st;
  if (auto st = count("RDMASTOR_RDMA_TRANSFERS_MAX", 1, 65536, cfg.rdma_transfers_max); !st.ok())
    return st;
  if (auto st = count("RDMASTOR_RDMA_TRANSFERS_PER_CLIENT", 1, 4096, cfg.rdma_transfers_per_client);
      !st.ok())
    return st;
  if (auto st = duration("RDMASTOR_RDMA_TRANSFERS_WAIT", cfg.rdma_transfers_wait_ms); !st.ok())
    return st;
  if (auto st = count("RDMASTOR_RDMA_RC_PER_SOURCE", 1, 4096, cfg.rdma_rc_per_source); !st.ok())
    return st;
  if (auto st = count("RDMASTOR_RDMA_RC_MAX", 1, 65536, cfg.rdma_rc_max); !st.ok()) return st;
  if (auto st = duration("RDMASTOR_RDMA_RC_IDLE_TIMEOUT", cfg.rdma_rc_idle_timeout_ms); !st.ok())
    return st;
  return {};
}

}  // namespace

bool IsKnownMinioVariable(std::string_view name) {
  // Every MINIO_* variable some part of the server reads (grep '"MINIO_' src/); a name missing
  // here gets a false "does not use it" warning, so add new settings here too.
  static constexpr std::string_view kKnown[] = {
      "MINIO_ACCESS_KEY", "MINIO_ACCESS_KEY_FILE", "MINIO_ADDRESS", "MINIO_API_ODIRECT",
      "MINIO_API_REQUESTS_MAX", "MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL",
      "MINIO_API_STALE_UPLOADS_EXPIRY", "MINIO_DOMAIN", "MINIO_KMS_SECRET_KEY", "MINIO_OPTS",
      "MINIO_PEER_WAIT", "MINIO_PROMETHEUS_AUTH_TYPE", "MINIO_REGION", "MINIO_ROOT_PASSWORD",
      "MINIO_ROOT_PASSWORD_FILE", "MINIO_ROOT_USER", "MINIO_ROOT_USER_FILE", "MINIO_SECRET_KEY",
      "MINIO_SECRET_KEY_FILE", "MINIO_SITE_REGION", "MINIO_STORAGE_CLASS_INLINE_BLOCK",
      "MINIO_STORAGE_CLASS_RRS", "MINIO_STORAGE_CLASS_STANDARD", "MINIO_VOLUMES",
      // S3 over RDMA and inter-node RDMA (rdma/settings.h, cluster/internode_rdma.h)
      "MINIO_RDMA_ALLOW", "MINIO_RDMA_CHANNELS", "MINIO_RDMA_CQ_DEPTH", "MINIO_RDMA_DC_KEY",
      "MINIO_RDMA_DEVICE", "MINIO_RDMA_FABRIC", "MINIO_RDMA_GID_INDEX", "MINIO_RDMA_INTERNODE",
      "MINIO_RDMA_INTERNODE_ADDRESS", "MINIO_RDMA_INTERNODE_INFLIGHT",
      "MINIO_RDMA_INTERNODE_INFLIGHT_BYTES", "MINIO_RDMA_INTERNODE_RETRY",
      "MINIO_RDMA_INTERNODE_STAGING_BUFFERS", "MINIO_RDMA_INTERNODE_TRAFFIC_CLASS",
      "MINIO_RDMA_INTERNODE_WAIT", "MINIO_RDMA_MIN_SIZE", "MINIO_RDMA_MTU_MAX",
      "MINIO_RDMA_NUM_DCIS", "MINIO_RDMA_PKEY_INDEX", "MINIO_RDMA_PORT", "MINIO_RDMA_RC_PORT",
      "MINIO_RDMA_SERVICE_LEVEL", "MINIO_RDMA_SOFT_ALLOW", "MINIO_RDMA_TIMEOUT",
      "MINIO_RDMA_TRAFFIC_CLASS"};
  return std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown);
}

Result<ServerConfig> ParseServerConfig(const std::vector<std::string>& args, const EnvMap& env) {
  auto flags = ParseServerFlags(args);
  if (!flags.ok()) return flags.error();
  return ServerConfigFromFlags(*flags, env);
}

Result<ServerConfig> ServerConfigFromFlags(const ServerFlags& flags, const EnvMap& env) {
  ServerConfig cfg;
  std::string address = ":9000";
  if (auto it = env.find("MINIO_ADDRESS"); it != env.end() && !it->second.empty())
    address = it->second;
  if (flags.address_given) address = flags.address;
  std::optional<std::string> certs_dir;
  if (flags.certs_dir_given) certs_dir = flags.certs_dir;
  // MinIO's web console, named in most MinIO MINIO_OPTS: accepted so that a MinIO configuration
  // starts, and ignored, saying so.
  if (flags.console_address)
    cfg.warnings.push_back("--console-address is ignored: rdmastor has no web console");
  cfg.drives = flags.drives;
  auto addr = ParseAddress(address);
  if (!addr.ok()) return addr.error();
  auto tls = ResolveCertsDir(certs_dir, env);
  if (!tls.ok()) return tls.error();
  cfg.certs_dir = tls->dir;
  cfg.tls_cert = tls->cert;
  cfg.tls_key = tls->key;
  cfg.host = addr->first;
  cfg.port = addr->second;

  if (cfg.drives.empty()) {
    if (auto it = env.find("MINIO_VOLUMES"); it != env.end()) cfg.drives = SplitList(it->second);
    if (cfg.drives.empty())
      return MakeError(ErrorCode::kInvalidArgument,
                       "no drive directory given: pass DIR... or set MINIO_VOLUMES");
  }
  auto expanded = ExpandDriveArgs(cfg.drives);  // MinIO ellipses: /mnt/disk{1...8}
  if (!expanded.ok()) return expanded.error();
  cfg.drives = std::move(expanded).value();
  // The storage classes' parity (erasure/layout.h). One drive has none: the settings are
  // ignored there, with a warning rather than silently.
  for (auto [name, value] : {std::pair{"MINIO_STORAGE_CLASS_STANDARD", &cfg.storage_classes.standard},
                             std::pair{"MINIO_STORAGE_CLASS_RRS", &cfg.storage_classes.rrs}}) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) continue;
    if (cfg.drives.size() == 1) {
      cfg.warnings.push_back(std::string(name) + " is ignored: one drive has no parity");
    } else {
      *value = it->second;
    }
  }
  if (auto it = env.find("MINIO_STORAGE_CLASS_INLINE_BLOCK");
      it != env.end() && !it->second.empty()) {
    auto block = ParseByteSize(it->second);
    if (!block || *block > erasure::kMaxInlineBlock)
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_STORAGE_CLASS_INLINE_BLOCK='" + it->second +
                           "' is invalid: use a size from 0 to 1MiB such as 128KiB");
    if (*block > erasure::kDefaultInlineBlock)  // as MinIO warns
      cfg.warnings.push_back("MINIO_STORAGE_CLASS_INLINE_BLOCK=" + it->second +
                             " is above the recommended 128KiB: metadata reads (HEAD, listing) "
                             "carry the inline data and may slow down");
    cfg.storage_classes.inline_block = *block;
  }
  if (auto it = env.find("RDMASTOR_META_CACHE"); it != env.end() && !it->second.empty()) {
    auto bytes = it->second == "off" ? std::optional<uint64_t>(0) : ParseByteSize(it->second);
    if (!bytes)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_META_CACHE='" + it->second +
                           "' is invalid: use a size such as 64MiB or 1GiB, or off");
    cfg.meta_cache_bytes = *bytes;
  }
  if (cfg.drives.size() > 1) {  // validated now so a bad value refuses to start
    auto layout = erasure::PlanLayout(static_cast<int>(cfg.drives.size()), cfg.storage_classes);
    if (!layout.ok()) return layout.error();
  }
  // A duration setting (ParseDurationMs) of at least min_ms; `off` (or 0) = 0 where allowed.
  // `out`: an int of milliseconds or a std::chrono::milliseconds.
  auto duration = [&](const char* name, auto* out, int64_t min_ms, bool may_be_off,
                      const char* example) -> Status {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return {};
    const std::string& v = it->second;
    std::optional<int64_t> ms;
    if (may_be_off && (v == "off" || v == "0")) {
      ms = 0;
    } else if (ms = ParseDurationMs(v); ms && *ms < min_ms) {
      ms.reset();
    }
    if (!ms) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          std::string(name) + "='" + v + "' is invalid: use a duration such as " + example);
    }
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(*ms);
    return {};
  };
  RS_RETURN_IF_ERROR(duration("RDMASTOR_DRIVE_CHECK_INTERVAL", &cfg.drive_check_interval_ms, 100,
                              true, "10s or 500ms (>= 100ms), or off"));
  cfg.distributed = cfg.drives.front().find("://") != std::string::npos;
  RS_RETURN_IF_ERROR(duration("MINIO_PEER_WAIT", &cfg.peer.wait, 0, false, "120s, 2m or 500ms"));
  RS_RETURN_IF_ERROR(duration("RDMASTOR_PEER_PING_INTERVAL", &cfg.peer.ping_interval, 100, true,
                              "1s or 500ms (>= 100ms), or off"));
  RS_RETURN_IF_ERROR(duration("RDMASTOR_PEER_PING_TIMEOUT", &cfg.peer.ping_timeout, 100, false,
                              "2s or 500ms (>= 100ms)"));
  RS_RETURN_IF_ERROR(duration("RDMASTOR_PEER_QUICK_TIMEOUT", &cfg.peer.quick_timeout, 100, false,
                              "5s or 500ms (>= 100ms)"));
  RS_RETURN_IF_ERROR(duration("RDMASTOR_IAM_REFRESH", &cfg.iam_refresh_ms, 100, false,
                              "5s or 500ms (>= 100ms)"));
  if (auto it = env.find("RDMASTOR_ACCOUNT_ID"); it != env.end() && !it->second.empty()) {
    const std::string& v = it->second;
    if (v.size() != 12 || v.find_first_not_of("0123456789") != std::string::npos)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_ACCOUNT_ID='" + v + "' is invalid: use 12 digits, as an AWS account id");
    cfg.account_id = v;
  }
  // Stale multipart uploads, as MinIO names them; up to a year (int ms holds 24 days).
  for (auto [name, out] : {std::pair{"MINIO_API_STALE_UPLOADS_EXPIRY", &cfg.stale_uploads_expiry_ms},
                           std::pair{"MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL",
                                     &cfg.stale_uploads_cleanup_interval_ms}}) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) continue;
    auto ms = it->second == "off" ? std::optional<int64_t>(0)
                                  : ParseDurationMs(it->second, 8760LL * 3600 * 1000);
    if (!ms || (*ms > 0 && *ms < 100))
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + it->second +
                           "' is invalid: use a duration such as 24h, 90m or 30s (>= 100ms), or off");
    *out = *ms;
  }
  // The lifecycle scanner: a duration up to a year (`off` for the interval, 0 for the pause), a
  // day of 1 s to 86400 s, a batch of 2 to 100000 keys.
  for (auto [name, out, off_ok] :
       {std::tuple{"RDMASTOR_LIFECYCLE_INTERVAL", &cfg.lifecycle_interval_ms, true},
        std::tuple{"RDMASTOR_LIFECYCLE_PAUSE", &cfg.lifecycle_pause_ms, true}}) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) continue;
    auto ms = off_ok && (it->second == "off" || it->second == "0")
                  ? std::optional<int64_t>(0)
                  : ParseDurationMs(it->second, 8760LL * 3600 * 1000);
    if (!ms || (*ms > 0 && *ms < 10))
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + it->second +
                           "' is invalid: use a duration such as 1h, 30s or 500ms (>= 10ms), "
                           "or off");
    *out = *ms;
  }
  for (auto [name, out, lo, hi] :
       {std::tuple{"RDMASTOR_LIFECYCLE_DAY_SECONDS", &cfg.lifecycle_day_seconds, 1LL, 86400LL},
        std::tuple{"RDMASTOR_LIFECYCLE_BATCH", &cfg.lifecycle_batch, 2LL, 100000LL}}) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) continue;
    long long n = 0;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
    if (ec != std::errc() || p != it->second.data() + it->second.size() || n < lo || n > hi)
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + "='" + it->second + "' is invalid: use a number from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
    *out = n;
  }
  if (auto st = ParseApiLimits(env, cfg); !st.ok()) return st.error();

  auto get = [&](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  auto creds = ParseRootCredentials(env);
  if (!creds.ok()) return creds.error();
  cfg.root_user = creds->user;
  cfg.root_password = creds->password;
  cfg.default_credentials = creds->defaults;
  cfg.warnings.insert(cfg.warnings.end(), creds->warnings.begin(), creds->warnings.end());

  if (auto v = get("MINIO_PROMETHEUS_AUTH_TYPE"); !v.empty()) {
    if (v == "public") {
      cfg.prometheus_public = true;
    } else if (v != "jwt") {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_PROMETHEUS_AUTH_TYPE='" + v + "' is invalid: use jwt or public");
    }
  }

  for (const char* name : {"MINIO_REGION", "MINIO_SITE_REGION"}) {  // the later one wins
    if (auto r = get(name); !r.empty()) {
      cfg.region = r;
      cfg.region_configured = true;
    }
  }
  for (auto& d : SplitList(get("MINIO_DOMAIN"))) {
    for (auto& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    cfg.domains.push_back(d);
  }

  for (const auto& [name, value] : env)
    if (name.rfind("MINIO_RDMA_", 0) == 0) cfg.rdma_settings.push_back(name);
  auto s3_rdma = rdma::ParseRdmaSettings(env);
  if (!s3_rdma.ok()) return s3_rdma.error();
  cfg.rdma = std::move(s3_rdma).value();
  // SSE-S3's master key (MinIO's single-key KMS form) and the keys it replaced.
  {
    const std::string cur = get("MINIO_KMS_SECRET_KEY");
    const std::string prev = get("RDMASTOR_KMS_PREVIOUS_SECRET_KEYS");
    auto ring = crypto::ParseKeyRing(cur.c_str(), prev.c_str());
    if (!ring.ok()) return ring.error();
    cfg.kms = std::move(*ring);
    const std::string key_dir = get("RDMASTOR_KMS_KEY_DIR");
    const std::string default_id = get("RDMASTOR_KMS_DEFAULT_KEY_ID");
    if (cfg.kms || !key_dir.empty()) {
      auto service = crypto::LocalKms::Load(cfg.kms, key_dir, default_id);
      if (!service.ok()) return service.error();
      cfg.kms_service = std::move(*service);
    } else if (!default_id.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_DEFAULT_KEY_ID is set but no KMS key is configured "
                       "(MINIO_KMS_SECRET_KEY or RDMASTOR_KMS_KEY_DIR)");
    }
  }
  if (auto v = get("RDMASTOR_KMS_RESEAL"); !v.empty()) {
    auto on = ParseOnOff("RDMASTOR_KMS_RESEAL", v);
    if (!on.ok()) return on.error();
    cfg.kms_reseal = *on;
    if (cfg.kms_reseal && !cfg.kms)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_RESEAL=on needs MINIO_KMS_SECRET_KEY (the key to re-seal under)");
  }
  // MinIO's switch for O_DIRECT shard writes (on by default there too); off sends every shard
  // write through the page cache.
  if (auto v = get("MINIO_API_ODIRECT"); !v.empty()) {
    auto on = ParseOnOff("MINIO_API_ODIRECT", v);
    if (!on.ok()) return on.error();
    cfg.direct_writes = *on;
  }
  // SSE-C sends the customer's key in a header: AWS takes it only over TLS; an operator whose
  // clients reach the server over a trusted network (or a TLS-terminating proxy) may allow HTTP.
  if (auto v = get("RDMASTOR_SSE_C_ALLOW_HTTP"); !v.empty()) {
    auto on = ParseOnOff("RDMASTOR_SSE_C_ALLOW_HTTP", v);
    if (!on.ok()) return on.error();
    cfg.sse_c_allow_http = *on;
  }

  // Inter-node RDMA: validated in both builds (the standard build moves shards over the soft
  // fabric when MINIO_RDMA_FABRIC=soft); an invalid value refuses to start, naming it.
  auto& in = cfg.internode;
  in.bind_ip.clear();  // "": the node's own address (cluster::ClusterNode)
  if (auto v = get("MINIO_RDMA_INTERNODE"); !v.empty()) {
    auto on = ParseOnOff("MINIO_RDMA_INTERNODE", v);
    if (!on.ok()) return on.error();
    in.enabled = *on;
  }
  if (auto v = get("MINIO_RDMA_MIN_SIZE"); !v.empty()) {
    auto size = ParseByteSize(v);
    if (!size)
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_RDMA_MIN_SIZE='" + v +
                           "' is invalid: use bytes (1048576) or a size such as 512KiB or 1MiB");
    in.min_size = *size;
  }
  if (auto v = get("MINIO_RDMA_INTERNODE_ADDRESS"); !v.empty()) {
    in6_addr a6{};
    in_addr a4{};
    if (inet_pton(AF_INET, v.c_str(), &a4) != 1 && inet_pton(AF_INET6, v.c_str(), &a6) != 1)
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_RDMA_INTERNODE_ADDRESS='" + v +
                           "' is invalid: use an IP address of this node's RDMA interface");
    in.bind_ip = v;
  }
  if (auto v = get("MINIO_RDMA_INTERNODE_INFLIGHT_BYTES"); !v.empty()) {
    auto size = ParseByteSize(v);
    if (!size || *size < (uint64_t{1} << 20) || *size > (uint64_t{64} << 30))
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_RDMA_INTERNODE_INFLIGHT_BYTES='" + v +
                           "' is invalid: use a size from 1MiB to 64GiB such as 256MiB");
    in.inflight_bytes = *size;
  }
  if (auto st = cluster::ApplyInternodeRdmaEnv(env, in); !st.ok()) return st.error();
  in.fabric = cfg.rdma.fabric;
  in.verbs = cfg.rdma.verbs;
  in.soft_allow = cfg.rdma.soft_allow;
  for (const char* name :
       {"MINIO_RDMA_INTERNODE", "MINIO_RDMA_MIN_SIZE", "MINIO_RDMA_INTERNODE_ADDRESS",
        "MINIO_RDMA_INTERNODE_INFLIGHT", "MINIO_RDMA_INTERNODE_RETRY", "MINIO_RDMA_CHANNELS",
        "MINIO_RDMA_INTERNODE_INFLIGHT_BYTES", "MINIO_RDMA_INTERNODE_TRAFFIC_CLASS",
        "MINIO_RDMA_INTERNODE_STAGING_BUFFERS", "MINIO_RDMA_INTERNODE_WAIT"})
    cfg.rdma.live_names.push_back(name);
  if (!cfg.rdma_settings.empty() && !rdma::BuiltWithVerbs()) {
    // One warning whenever MINIO_RDMA_* is set on the standard build: no hardware RDMA here. The
    // soft fabric's settings act (RDMA semantics over TCP); the verbs knobs are named as ignored.
    std::string names;
    for (const auto& n : cfg.rdma_settings) {
      const auto& live = cfg.rdma.live_names;
      if (std::find(live.begin(), live.end(), n) == live.end())
        names += (names.empty() ? "" : ", ") + n;
    }
    cfg.warnings.push_back(
        "this is the standard build without hardware RDMA (install the rdmastor-rdma build): "
        "payloads move over TCP, at most through the soft fabric's emulation "
        "(MINIO_RDMA_FABRIC=soft)" +
        (names.empty() ? std::string() : "; " + names + " ignored"));
  }
  for (const auto& [name, value] : env) {
    if (name.rfind("MINIO_", 0) != 0 || IsKnownMinioVariable(name)) continue;
    cfg.warnings.push_back(name +
                           " is set but rdmastor does not use it (ignored; docs/settings.md "
                           "lists every setting)");
  }
  if (cfg.default_credentials) {
    cfg.warnings.push_back(
        "Detected default credentials 'minioadmin:minioadmin', we recommend that you change "
        "these values with 'MINIO_ROOT_USER' and 'MINIO_ROOT_PASSWORD' environment variables");
  }
  return cfg;
}

Status SizeRdmaCeilings(ServerConfig& cfg) {
  rdma::CeilingSettings set;
  if (cfg.rdma_transfers_max > 0) set.transfers_max = static_cast<size_t>(cfg.rdma_transfers_max);
  if (cfg.rdma_transfers_per_client > 0)
    set.transfers_per_client = static_cast<size_t>(cfg.rdma_transfers_per_client);
  auto& in = cfg.internode;
  if (in.staging_set) set.internode_staging = in.max_buffers;
  if (in.channels_set) set.channels = in.channels;
  set.internode_inflight = in.inflight_per_peer;
  // The devices only where verbs runs: the soft fabric pins nothing and has no link of its own.
  const bool verbs = cfg.rdma.fabric == rdma::FabricKind::kVerbs;
  std::optional<Result<std::vector<rdma::DeviceInfo>>> devices;
  if (verbs) devices = rdma::QueryDevices();
  auto facts = rdma::GatherCeilingFacts(verbs, devices ? &*devices : nullptr,
                                        cfg.rdma.verbs.device, cfg.rdma.verbs.port);
  auto c = rdma::SizeCeilings(set, facts);
  if (!c.ok()) return c.error();
  cfg.rdma_transfers_max = static_cast<int>(c->transfers_max);
  cfg.rdma_transfers_per_client = static_cast<int>(c->transfers_per_client);
  in.max_buffers = c->internode_staging;
  in.channels = c->channels;
  if (cfg.rdma.fabric != rdma::FabricKind::kOff || in.enabled)
    spdlog::info(
        "RDMA ceilings: {} S3 transfers ({} per client address), {} inter-node staging buffers, "
        "{} channels per peer, {} ms before TCP; {}",
        c->transfers_max, c->transfers_per_client, c->internode_staging, c->channels,
        in.inflight_wait.count(), c->basis);
  return {};
}

void LogStartup(const ServerConfig& cfg, uint16_t bound_port) {
  std::string host = cfg.host.empty() ? "127.0.0.1" : cfg.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  spdlog::info("rdmastor {} ({}) serving {} drive(s)", RDMASTOR_VERSION, rdma::FeatureLine(),
               cfg.drives.size());
  for (const auto& d : cfg.drives) spdlog::info("drive: {}", d);
  spdlog::info("S3-API: {}://{}:{}", cfg.tls_cert.empty() ? "http" : "https", host, bound_port);
  if (!cfg.tls_cert.empty()) {
    spdlog::info("TLS: certificate {} (HTTPS only; certs directory {})", cfg.tls_cert,
                 cfg.certs_dir);
  } else if (!cfg.certs_dir.empty()) {
    spdlog::info("TLS: off, plain HTTP (no public.crt and private.key in the certs directory {})",
                 cfg.certs_dir);
  }
  spdlog::info("RootUser: {}", cfg.root_user);
  spdlog::info("RootPass: {}",
               cfg.default_credentials ? cfg.root_password : "(from MINIO_ROOT_PASSWORD)");
  if (rdma::BuiltWithVerbs()) {
    auto probe = rdma::ProbeDevices();
    if (probe.available) {
      std::string names;
      for (const auto& n : probe.devices) names += (names.empty() ? "" : ", ") + n;
      spdlog::info("RDMA devices: {}", names);
    } else {
      spdlog::warn("no RDMA device usable: {}", probe.error);
    }
  }
  // The S3-over-RDMA line is logged when the service is created (rdma::CreateS3RdmaService).
  // A cluster node logs its inter-node line when the transport starts (cluster::InternodeRdma:
  // "RDMA >= MIN_SIZE" with the fabric, or why it is TCP only).
  if (!cfg.distributed) spdlog::info("inter-node: TCP only (single node)");
}

}  // namespace rdmastor::cli
