// `rdmastor admin ...`: operator helpers: prometheus-token (no server needed); info, heal, user and
// policy ask a running server through the admin API (s3/admin_api.h). Their command lines are
// parsed in command_line.cc.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command_line.h"
#include "cli/server_config.h"
#include "common/result.h"
#include "rdmastor/s3_client.h"

namespace rdmastor::cli {

// `admin prometheus-token [--expiry-days N]`: prints a bearer token (JWT, HS512, signed with the
// root secret, sub = root access key) for MINIO_PROMETHEUS_AUTH_TYPE=jwt.
// `admin heal [--endpoint URL] [BUCKET]`: starts a heal on a running server and follows it,
// printing the objects healed, progress and the final counts. Returns the exit code.
int RunAdminCommand(const AdminArgs& args, const EnvMap& env);

// The S3 client configuration admin commands sign with: the root credentials
// MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else
// (server_defaults) the server's own defaults minioadmin / minioadmin; https:// endpoints trust
// the system store plus certs_dir/CAs (default ~/.rdmastor/certs).
Result<client::S3ClientConfig> AdminClientConfig(const std::string& endpoint,
                                           const std::string& certs_dir, const EnvMap& env,
                                           bool server_defaults);

// One signed admin request (/minio/<path_under_minio>); the JSON object answered, or the error.
Result<nlohmann::json> AdminCall(client::S3Client& c, const std::string& method,
                                 const std::string& path_under_minio,
                                 const std::string& raw_query);

}  // namespace rdmastor::cli
