#include "cli/rdma_command.h"

#include <cstdio>

#include "rdma/check.h"

namespace rdmastor::cli {

namespace {

constexpr const char* kRdmaUsage = R"(Usage:
  rdmastor rdma check [--json]

  Walks the layers an RDMA deployment needs and prints each as ok / warning / failed with the
  fix: build flavour, devices and ports (state, link layer, MTU), GID table, locked-memory limit,
  the configured device/port/GID (MINIO_RDMA_DEVICE, MINIO_RDMA_PORT, MINIO_RDMA_GID_INDEX), GPU
  memory registration (nvidia_peermem or dma-buf), inter-node settings, and the fabric
  (MINIO_RDMA_FABRIC). Reads the same environment as the server (/etc/default/rdmastor).

  Exit status: 0 ready (warnings allowed), 1 a layer failed, 2 usage or invalid settings.
)";

}  // namespace

int RunRdmaCommand(const std::vector<std::string>& args, const EnvMap& env) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kRdmaUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  bool json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "rdmastor rdma: unknown argument '%s'\n\n%s", args[i].c_str(),
                   kRdmaUsage);
      return 2;
    }
  }
  if (args[0] != "check") {
    std::fprintf(stderr, "rdmastor rdma: unknown command '%s'\n\n%s", args[0].c_str(), kRdmaUsage);
    return 2;
  }
  auto facts = rdma::GatherCheckFacts(env);
  auto items = rdma::RunRdmaCheck(facts);
  if (!items.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", items.error().message.c_str());
    return 2;
  }
  std::string out = json ? rdma::RenderCheckJson(*items, facts.verbs_built)
                         : rdma::RenderCheckText(*items, facts.verbs_built);
  std::fputs(out.c_str(), stdout);
  return rdma::CheckExitCode(*items);
}

}  // namespace rdmastor::cli
