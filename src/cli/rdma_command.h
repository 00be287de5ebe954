// `rdmastor rdma check [--json] [--endpoint URL]`: is every layer an RDMA deployment needs in
// place? `rdmastor rdma devices`: what libibverbs reports, as JSON.
#pragma once

#include <string>
#include <vector>

#include "cli/command_line.h"
#include "cli/server_config.h"

namespace rdmastor::cli {

// Exit codes: 0 every layer ok or warning, 1 at least one layer failed (e.g. "no RDMA device"),
// 2 usage error or an invalid MINIO_RDMA_* value.
int RunRdmaCommand(const RdmaArgs& args, const EnvMap& env);

}  // namespace rdmastor::cli
