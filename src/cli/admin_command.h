// `rdmastor admin ...`: operator helpers: prometheus-token (no server needed) and heal (asks a
// running server through the admin API, s3/admin_api.h).
#pragma once

#include <string>
#include <vector>

#include "cli/server_config.h"

namespace rdmastor::cli {

// `admin prometheus-token [--expiry-days N]`: prints a bearer token (JWT, HS512, signed with the
// root secret, sub = root access key) for MINIO_PROMETHEUS_AUTH_TYPE=jwt.
// `admin heal [--endpoint URL] [BUCKET]`: starts a heal on a running server and follows it,
// printing the objects healed, progress and the final counts. Returns the exit code.
int RunAdminCommand(const std::vector<std::string>& args, const EnvMap& env);

}  // namespace rdmastor::cli
