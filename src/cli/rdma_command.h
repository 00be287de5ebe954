// `rdmastor rdma check [--json]`: is every layer an RDMA deployment needs in place?
#pragma once

#include <string>
#include <vector>

#include "cli/server_config.h"

namespace rdmastor::cli {

// Exit codes: 0 every layer ok or warning, 1 at least one layer failed (e.g. "no RDMA device"),
// 2 usage error or an invalid MINIO_RDMA_* value.
int RunRdmaCommand(const std::vector<std::string>& args, const EnvMap& env);

}  // namespace rdmastor::cli
