#include "cli/admin_command.h"

#include <cstdio>
#include <ctime>

#include "admin/jwt.h"

namespace rdmastor::cli {

namespace {

constexpr const char* kAdminUsage = R"(Usage:
  rdmastor admin prometheus-token [--expiry-days N]

  Prints a bearer token for Prometheus to scrape /minio/v2/metrics/{cluster,node} when
  MINIO_PROMETHEUS_AUTH_TYPE is jwt (the default). The token is signed with MINIO_ROOT_PASSWORD
  for MINIO_ROOT_USER (read from the environment, as the server does) and expires after N days
  (default 36500, as `mc admin prometheus generate`). Use it in prometheus.yml as
  `bearer_token: <token>` (or `authorization: {credentials: <token>}`).
)";

}  // namespace

int RunAdminCommand(const std::vector<std::string>& args, const EnvMap& env) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kAdminUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "prometheus-token") {
    std::fprintf(stderr, "rdmastor admin: unknown command '%s'\n\n%s", args[0].c_str(),
                 kAdminUsage);
    return 2;
  }
  long days = 36500;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--expiry-days" && i + 1 < args.size()) {
      char* end = nullptr;
      days = std::strtol(args[++i].c_str(), &end, 10);
      if (*end != '\0' || days <= 0 || days > 36500) {
        std::fprintf(stderr, "rdmastor admin: --expiry-days must be 1..36500\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "rdmastor admin: unknown argument '%s'\n\n%s", args[i].c_str(),
                   kAdminUsage);
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
  std::printf("%s\n", admin::SignJwt(claims, creds->password).c_str());
  return 0;
}

}  // namespace rdmastor::cli
