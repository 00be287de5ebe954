#include "cli/rdma_command.h"

#include <cstdio>

#include "cli/admin_command.h"
#include "rdma/check.h"

namespace rdmastor::cli {

namespace {

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

int RunRdmaCommand(const RdmaArgs& args, const EnvMap& env) {
  if (args.command == "devices") {
    auto json = rdma::QueryVerbsJson();
    if (!json.ok()) {
      std::fprintf(stderr, "rdmastor: %s\n", json.error().message.c_str());
      return 1;
    }
    std::fputs(json->c_str(), stdout);
    return 0;
  }
  const bool json = args.json;
  const std::string& endpoint = args.endpoint;
  const std::string& certs_dir = args.certs_dir;
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
