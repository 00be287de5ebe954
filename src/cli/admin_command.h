// `rdmastor admin ...`: operator helpers that do not need a running server.
#pragma once

#include <string>
#include <vector>

#include "cli/server_config.h"

namespace rdmastor::cli {

// `admin prometheus-token [--expiry-days N]`: prints a bearer token (JWT, HS512, signed with the
// root secret, sub = root access key) for MINIO_PROMETHEUS_AUTH_TYPE=jwt. Returns the exit code.
int RunAdminCommand(const std::vector<std::string>& args, const EnvMap& env);

}  // namespace rdmastor::cli
