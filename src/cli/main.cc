// rdmastor command line: `rdmastor server ...`, --help, --version.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/server_config.h"
#include "rdma/build_info.h"
#include "s3/api.h"
#include "s3/http_server.h"
#include "storage/drive_store.h"

namespace {

constexpr const char* kUsage = R"(rdmastor — S3-compatible object server with an RDMA data path

Usage:
  rdmastor server [--address HOST:PORT] DIR...
  rdmastor --version
  rdmastor --help

Commands:
  server      serve S3 from the given drive directories (or MINIO_VOLUMES when none given)

Server flags:
  --address HOST:PORT   listen address (default ":9000", all interfaces)

Environment:
  MINIO_ROOT_USER       access key of the root user (default "minioadmin"; change it)
  MINIO_ROOT_PASSWORD   secret key of the root user, at least 8 characters (default "minioadmin")
  MINIO_VOLUMES         drive directories, used when no DIR is given
  MINIO_DOMAIN          domain(s) for virtual-host-style requests (bucket.DOMAIN), comma separated
  MINIO_REGION          region reported to clients (default us-east-1)
  RDMASTOR_LOG_LEVEL    trace|debug|info|warn|error (default info)

See docs/settings.md for every setting.
)";

void PrintVersion() {
  std::printf("rdmastor version %s\n", RDMASTOR_VERSION);
  std::printf("Features: %s\n", rdmastor::rdma::FeatureLine().c_str());
}

int RunServer(const std::vector<std::string>& args) {
  auto cfg = rdmastor::cli::ParseServerConfig(args, rdmastor::cli::Environment());
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", cfg.error().message.c_str());
    return 2;
  }
  for (const auto& w : cfg->warnings) spdlog::warn("{}", w);
  if (cfg->drives.size() != 1) {
    std::fprintf(stderr,
                 "rdmastor: %zu drives given; this version serves exactly one drive directory "
                 "(erasure coding across drives is not available yet)\n",
                 cfg->drives.size());
    return 2;
  }

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto store = rdmastor::storage::DriveStore::Open(cfg->drives[0]);
  if (!store.ok()) {
    std::fprintf(stderr, "rdmastor: drive %s: %s\n", cfg->drives[0].c_str(),
                 store.error().message.c_str());
    return 1;
  }

  rdmastor::s3::ApiOptions api_opts;
  api_opts.access_key = cfg->root_user;
  api_opts.secret_key = cfg->root_password;
  api_opts.region = cfg->region;
  api_opts.domains = cfg->domains;
  rdmastor::s3::S3Api api(api_opts, **store);

  rdmastor::s3::HttpServerOptions http_opts;
  http_opts.host = cfg->host;
  http_opts.port = cfg->port;
  auto server = rdmastor::s3::HttpServer::Create(http_opts, api);
  if (!server.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", server.error().message.c_str());
    return 1;
  }

  rdmastor::cli::LogStartup(*cfg, (*server)->port());

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("received {}, shutting down", strsignal(sig));
    (*server)->Stop();
  });
  signal_thread.detach();
  (*server)->Run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("rdmastor");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  if (const char* lvl = std::getenv("RDMASTOR_LOG_LEVEL")) {
    auto level = spdlog::level::from_str(lvl);
    if (level == spdlog::level::off && std::strcmp(lvl, "off") != 0) {
      std::fprintf(
          stderr, "rdmastor: RDMASTOR_LOG_LEVEL=%s is not one of trace|debug|info|warn|error|off\n",
          lvl);
      return 2;
    }
    spdlog::set_level(level);
  }

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "--version" || args[0] == "-v" || args[0] == "version") {
    PrintVersion();
    return 0;
  }
  if (args[0] == "server") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest) {
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
    }
    return RunServer(rest);
  }
  std::fprintf(stderr, "rdmastor: unknown command '%s'\n\n%s", args[0].c_str(), kUsage);
  return 2;
}
