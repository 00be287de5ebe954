#include "cli/rdma_command.h"

#include <cstdio>

#include "cli/admin_command.h"
#include "rdma/check.h"

namespace rdmastor::cli {

namespace {

constexpr const char* kRdmaUsage = R"(Usage:
  rdmastor rdma check [--json] [--endpoint URL [--certs-dir DIR]]
  rdmastor rdma devices

  Walks the layers an RDMA deployment needs and prints each as ok / warning / failed with the
  fix: build flavour, devices and ports (state, link layer, MTU), GID table, locked-memory limit,
  the configured device/port/GID (MINIO_RDMA_DEVICE, MINIO_RDMA_PORT, MINIO_RDMA_GID_INDEX), GPU
  memory registration (nvidia_peermem or dma-buf), inter-node settings, and the fabric
  (MINIO_RDMA_FABRIC). Reads the same environment as the server (/etc/default/rdmastor).

  --endpoint URL asks the server running there which fabric it serves S3 over RDMA on now and
  whether it is ready (layer "server"; its answer decides the exit status, and the layers this
  host checks locally are then only warnings; GET /minio/admin/v3/rdma, signed with the root
  credentials MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, else AWS_ACCESS_KEY_ID /
  AWS_SECRET_ACCESS_KEY, else the server's defaults minioadmin / minioadmin). An https://
  endpoint is verified against the system CA store plus DIR/CAs (default: the CAs of
  ~/.rdmastor/certs, ~/.minio/certs and ~/.mc/certs).

  `rdma devices` prints, as JSON, what libibverbs returns for every device, port and GID in its
  own numbers (port state, link layer, MTU, GID type: the enums of <infiniband/verbs.h>), the
  facts `rdma check` judges; the unit tests keep such output from real devices as fixtures.

  Exit status: 0 ready (warnings allowed), 1 a layer failed, 2 usage or invalid settings;
  `rdma devices`: 0, or 1 when libibverbs cannot list devices (the reason on stderr).
)";

// The live server's S3-over-RDMA state, or why it could not be asked.
rdma::LiveServerFacts AskServer(const std::string& endpoint, const std::string& certs_dir,
                                const EnvMap& env) {
  rdma::LiveServerFacts out{endpoint, rdma::LiveFabric{}};
  auto cfg = AdminClientConfig(endpoint, certs_dir, env, /*server_defaults=*/true);
  if (!cfg.ok()) {
    out.answer = cfg.error();
    return out;
  }
  cfg->http.connect_timeout = std::chrono::seconds(5);
  cfg->http.io_timeout = std::chrono::seconds(10);
  client::S3Client c(*cfg);
  auto doc = AdminCall(c, "GET", "admin/v3/rdma", "");
  if (!doc.ok()) {
    out.answer = doc.error();
    return out;
  }
  const auto fabric = doc->find("fabric");
  const auto ready = doc->find("ready");
  if (fabric == doc->end() || !fabric->is_string() || ready == doc->end() || !ready->is_boolean()) {
    out.answer = MakeError(ErrorCode::kInternalError,
                           "the server's answer names no fabric (an older rdmastor?)");
    return out;
  }
  rdma::LiveFabric live;
  live.fabric = fabric->get<std::string>();
  live.ready = ready->get<bool>();
  if (auto r = doc->find("reason"); r != doc->end() && r->is_string()) live.reason = *r;
  out.answer = std::move(live);
  return out;
}

}  // namespace

int RunRdmaCommand(const std::vector<std::string>& args, const EnvMap& env) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kRdmaUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "devices") {
    if (args.size() > 1) {
      std::fprintf(stderr, "rdmastor rdma devices: unknown argument '%s'\n\n%s", args[1].c_str(),
                   kRdmaUsage);
      return 2;
    }
    auto json = rdma::QueryVerbsJson();
    if (!json.ok()) {
      std::fprintf(stderr, "rdmastor: %s\n", json.error().message.c_str());
      return 1;
    }
    std::fputs(json->c_str(), stdout);
    return 0;
  }
  bool json = false;
  std::string endpoint, certs_dir;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--endpoint" && i + 1 < args.size()) {
      endpoint = args[++i];
    } else if (args[i] == "--certs-dir" && i + 1 < args.size()) {
      certs_dir = args[++i];
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
  if (!endpoint.empty()) facts.server = AskServer(endpoint, certs_dir, env);
  auto items = rdma::RunRdmaCheck(facts);
  if (!items.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", items.error().message.c_str());
    return 2;
  }
  if (!endpoint.empty()) {
    // The local layers describe this shell (its environment, devices and limits), not the server:
    // with --endpoint the server's own answer decides; a local failure is shown as a warning.
    for (auto& i : *items) {
      if (i.layer == "server" || i.status != rdma::CheckStatus::kFailed) continue;
      i.status = rdma::CheckStatus::kWarning;
      i.fix += std::string(i.fix.empty() ? "" : " ") +
               "(this host's view, not the server's: with --endpoint the server layer decides)";
    }
  }
  std::string out = json ? rdma::RenderCheckJson(*items, facts.verbs_built)
                         : rdma::RenderCheckText(*items, facts.verbs_built);
  std::fputs(out.c_str(), stdout);
  return rdma::CheckExitCode(*items);
}

}  // namespace rdmastor::cli
