// rdmastor: the server (`rdmastor server ...`) and its operator commands; the command line is
// parsed in cli/command_line.cc.
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "admin/health.h"
#include "admin/logging.h"
#include "admin/metrics.h"
#include "cli/admin_command.h"
#include "cli/command_line.h"
#include "cli/rdma_command.h"
#include "cli/server_config.h"
#include "cli/storage_setup.h"
#include "storage/meta_cache.h"
#include "cli/systemd_notify.h"
#include "cluster/namespace_lock.h"
#include "cluster/node.h"
#include "cluster/peer_server.h"
#include "rdma/build_info.h"
#include "rdma/settings.h"
#include "s3/access.h"
#include "s3/admin_api.h"
#include "s3/api.h"
#include "s3/http_server.h"
#include "s3/lifecycle_scanner.h"
#include "storage/local_drive.h"

namespace {

void PrintVersion() {
  std::printf("rdmastor version %s\n", RDMASTOR_VERSION);
  std::printf("Features: %s\n", rdmastor::rdma::FeatureLine().c_str());
}

// What every server mode starts from: the S3 port (HTTPS with a certificate) and the S3 API's
// credentials, region, domains and metrics access.
rdmastor::s3::HttpServerOptions HttpOptionsFor(const rdmastor::cli::ServerConfig& cfg) {
  rdmastor::s3::HttpServerOptions o;
  o.host = cfg.host;
  o.port = cfg.port;
  o.tls_cert_file = cfg.tls_cert;
  o.tls_key_file = cfg.tls_key;
  o.worker_threads = cfg.requests_max;
  o.requests_per_client = cfg.requests_per_client;
  o.max_connections = cfg.connections_max;
  o.body_timeout = std::chrono::milliseconds(cfg.body_timeout_ms);
  o.send_timeout = std::chrono::milliseconds(cfg.send_timeout_ms);
  o.header_timeout = std::chrono::milliseconds(cfg.header_timeout_ms);
  o.handshake_timeout = std::chrono::milliseconds(cfg.handshake_timeout_ms);
  o.min_rate = cfg.min_rate;
  return o;
}

rdmastor::s3::ApiOptions ApiOptionsFor(const rdmastor::cli::ServerConfig& cfg,
                                       const std::string& deployment_id) {
  rdmastor::s3::ApiOptions o;
  o.account_id = rdmastor::s3::AccountId(cfg.account_id, deployment_id);
  spdlog::info("account id: {} (x-amz-expected-bucket-owner)", o.account_id);
  o.access_key = cfg.root_user;
  o.secret_key = cfg.root_password;
  o.region = cfg.region;
  o.region_configured = cfg.region_configured;
  o.domains = cfg.domains;
  o.ops.prometheus_public = cfg.prometheus_public;
  o.secure_transport = !cfg.tls_cert.empty();
  o.sse.allow_sse_c_over_http = cfg.sse_c_allow_http;
  o.sse.ring = cfg.kms;
  o.sse.kms = cfg.kms_service;
  o.iam.refresh = std::chrono::milliseconds(cfg.iam_refresh_ms);
  o.ops.access_key = cfg.root_user;
  o.ops.secret_key = cfg.root_password;
  return o;
}

rdmastor::rdma::ServiceOptions RdmaOptionsFor(const rdmastor::cli::ServerConfig& cfg) {
  rdmastor::rdma::ServiceOptions o;
  o.transfer.timeout = std::chrono::milliseconds(cfg.rdma_progress_timeout_ms);
  o.transfer.min_rate = cfg.rdma_min_rate;
  o.max_buffers = static_cast<size_t>(cfg.rdma_transfers_max);
  o.transfers_per_client = static_cast<size_t>(cfg.rdma_transfers_per_client);
  o.buffer_wait = std::chrono::milliseconds(cfg.rdma_transfers_wait_ms);
  o.rc.per_source = static_cast<size_t>(cfg.rdma_rc_per_source);
  o.rc.total = static_cast<size_t>(cfg.rdma_rc_max);
  o.rc.idle = std::chrono::milliseconds(cfg.rdma_rc_idle_timeout_ms);
  o.rc.lend_wait = o.buffer_wait;
  o.rc_bind_ip = cfg.host;
  return o;
}

// The S3-over-RDMA gauges, sampled at every scrape.
void PublishRdmaMetrics(const rdmastor::rdma::S3RdmaService& svc) {
  rdmastor::admin::GlobalRegistry().AddScrapeHook([svc = &svc] {
    rdmastor::admin::SetRdmaFabricReady(svc->available());
    rdmastor::admin::SetRdmaOriginDeclines(svc->stats().origin_declined.load());
    const auto& st = svc->stats();
    rdmastor::admin::SetRdmaCeilingHits("transfers_per_client", true,
                                        st.refused_per_client.load());
    rdmastor::admin::SetRdmaCeilingHits("transfers_max", false, st.staging_waited.load());
    rdmastor::admin::SetRdmaCeilingHits("transfers_max", true, st.staging_refused.load());
    if (const auto* rc = svc->rc_sessions()) {
      auto s = rc->stats();
      rdmastor::admin::SetRdmaRc({rc->size(), s.admitted, s.refused, s.closed_idle, s.closed_dead,
                                  s.closed_dirty, s.foreign});
    }
  });
}

// The lifecycle scanner's settings (RDMASTOR_LIFECYCLE_*).
rdmastor::s3::LifecycleSettings LifecycleSettingsFor(const rdmastor::cli::ServerConfig& cfg) {
  rdmastor::s3::LifecycleSettings s;
  s.interval = std::chrono::milliseconds(cfg.lifecycle_interval_ms);
  s.day_ms = cfg.lifecycle_day_seconds * 1000;
  s.batch = static_cast<int>(cfg.lifecycle_batch);
  s.pause = std::chrono::milliseconds(cfg.lifecycle_pause_ms);
  return s;
}

// A detached thread waits for SIGINT/SIGTERM (blocked in every thread) and stops the server.
void StopOnSignal(sigset_t stop_signals, rdmastor::s3::HttpServer& server) {
  std::thread([stop_signals, &server] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("received {}, shutting down", strsignal(sig));
    rdmastor::cli::NotifyStopping();
    server.Stop();
  }).detach();
}

// Distributed mode: peer RPC is served as soon as the port is bound (the peers need it to start);
// S3 requests are answered 503 until the peers were found and the erasure layer is open.
int RunCluster(const rdmastor::cli::ServerConfig& cfg, sigset_t stop_signals) {
  rdmastor::cluster::ClusterConfig cc;
  cc.drives = cfg.drives;
  cc.listen_host = cfg.host;
  cc.listen_port = cfg.port;
  cc.access_key = cfg.root_user;
  cc.secret_key = cfg.root_password;
  cc.storage_classes = cfg.storage_classes;
  cc.internode = cfg.internode;
  cc.peer = cfg.peer;
  // Peer TLS follows the node's own: https:// endpoints, peers verified against the system store
  // plus <certs-dir>/CAs (MinIO's layout).
  cc.tls = !cfg.tls_cert.empty();
  cc.certs_dir = cfg.certs_dir;
  if (!cfg.certs_dir.empty()) cc.ca_dirs.push_back(cfg.certs_dir + "/CAs");
  auto node = rdmastor::cluster::ClusterNode::Create(cc);
  if (!node.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", node.error().message.c_str());
    return 1;
  }
  auto http_opts = HttpOptionsFor(cfg);
  // A busy peer may use every worker, but only a request signed by a peer: anything else on the
  // peer paths waits its turn like any client (refused there after the gate).
  http_opts.uncapped = [peer = &(*node)->node_handler()](const rdmastor::s3::HttpRequest& r) {
    return peer->SignedByPeer(r);
  };
  auto server = rdmastor::s3::HttpServer::Create(http_opts, (*node)->handler());
  if (!server.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", server.error().message.c_str());
    return 1;
  }
  rdmastor::cli::LogStartup(cfg, (*server)->port());
  StopOnSignal(stop_signals, **server);
  std::thread serve([&] { (*server)->Run(); });
  // Ready for systemd once the port listens: the peers need it to start, and S3 requests are
  // answered 503 until the deployment is up (the status line says so).
  rdmastor::cli::NotifyServing(cfg.host, (*server)->port(), !cfg.tls_cert.empty(),
                               "cluster: waiting for the other nodes");

  auto store = (*node)->Start();
  if (!store.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", store.error().message.c_str());
    spdlog::error("cluster start-up failed: {}", store.error().message);
    (*server)->Stop();
    serve.join();
    return 1;
  }
  (*store)->SetNamespaceLocker(
      std::make_shared<rdmastor::cluster::DsyncNamespaceLocker>((*node)->dsync()));
  (*store)->StartMonitor(cfg.drive_check_interval_ms);
  (*store)->StartUploadExpiry(std::chrono::milliseconds(cfg.stale_uploads_expiry_ms),
                              std::chrono::milliseconds(cfg.stale_uploads_cleanup_interval_ms));
  rdmastor::s3::ApiOptions api_opts = ApiOptionsFor(cfg, (*store)->deployment_id());
  if (cfg.kms_reseal)
    spdlog::warn("RDMASTOR_KMS_RESEAL=on is not implemented for a distributed deployment yet: "
                 "keep the previous master keys in RDMASTOR_KMS_PREVIOUS_SECRET_KEYS");
  // Drive metrics cover this node's drives; health (endpoints and minio_cluster_health_status)
  // covers every drive of the deployment against each set's quorum (a node that answers 200
  // while every request gets 503 misleads load balancers).
  rdmastor::admin::DriveMonitor drive_monitor((*node)->local_drive_paths(), 1, 1);
  auto deployment_monitor = rdmastor::cli::DeploymentMonitor(**store);
  drive_monitor.PublishMetrics(deployment_monitor.get());
  api_opts.ops.cluster_health = [&m = *deployment_monitor] { return m.Check(); };
  auto rdma_service = rdmastor::rdma::CreateS3RdmaService(cfg.rdma, RdmaOptionsFor(cfg));
  api_opts.rdma = rdma_service.get();
  PublishRdmaMetrics(*rdma_service);
  // Admin heal on any node heals the whole deployment (every set, through peer RPC).
  rdmastor::s3::HealService heal_service(store->get());
  api_opts.heal = &heal_service;
  rdmastor::cli::PublishHealMetrics(**store);
  rdmastor::cli::PublishStorageMetrics();
  // Lifecycle rules: one cycle at a time in the whole cluster (under a dsync lock).
  rdmastor::s3::LifecycleScanner lifecycle(
      **store, LifecycleSettingsFor(cfg),
      std::make_shared<rdmastor::cluster::DsyncNamespaceLocker>((*node)->dsync()),
      (*node)->topology().self_node().address());
  rdmastor::s3::PublishLifecycleMetrics(lifecycle);
  api_opts.lifecycle = &lifecycle;
  rdmastor::s3::S3Api api(api_opts, **store);
  (*node)->node_handler().SetS3(&api);
  lifecycle.Start();
  spdlog::info("cluster: ready; serving S3 for the whole deployment");
  rdmastor::cli::NotifyStatus("serving S3 for the whole deployment");
  serve.join();
  lifecycle.Stop();
  (*node)->node_handler().SetS3(nullptr);
  return 0;
}

int RunServer(const rdmastor::cli::ServerFlags& flags) {
  auto cfg = rdmastor::cli::ServerConfigFromFlags(flags, rdmastor::cli::Environment());
  if (!cfg.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", cfg.error().message.c_str());
    return 2;
  }
  for (const auto& w : cfg->warnings) spdlog::warn("{}", w);
  if (auto st = rdmastor::cli::SizeRdmaCeilings(*cfg); !st.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", st.error().message.c_str());
    return 2;
  }
  rdmastor::storage::LocalDrive::SetDirectWrites(cfg->direct_writes);

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // After the mask: the watchdog thread inherits it (else SIGTERM could kill it, not stop us).
  rdmastor::cli::StartWatchdog();  // pings while the drives open; probes once serving

  rdmastor::storage::SetMetaCacheBytes(cfg->meta_cache_bytes);  // before any LocalHost is made
  if (cfg->distributed) return RunCluster(*cfg, stop_signals);

  if (auto st = rdmastor::cli::CheckLocalDrivePaths(cfg->drives); !st.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", st.error().message.c_str());
    return st.error().code == rdmastor::ErrorCode::kInvalidArgument ? 2 : 1;
  }
  // ErasureStore over the drives; one drive is a one-drive set without parity.
  auto store = rdmastor::cli::OpenStorage(*cfg);
  if (!store.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", store.error().message.c_str());
    return 1;
  }

  rdmastor::s3::ApiOptions api_opts = ApiOptionsFor(*cfg, store->erasure->deployment_id());
  // One drive: probed on every health request, as before it became a one-drive set (the
  // deployment monitor caches its samples for a second).
  auto drive_monitor = store->erasure->layout().set_size == 1
                           ? std::make_unique<rdmastor::admin::DriveMonitor>(cfg->drives, 1, 1)
                           : rdmastor::cli::DeploymentMonitor(*store->erasure);
  drive_monitor->PublishMetrics();
  api_opts.ops.cluster_health = [&m = *drive_monitor] { return m.Check(); };
  // S3 over RDMA (x-amz-rdma-token) on the fabric MINIO_RDMA_FABRIC selects; logs its state once.
  auto rdma_service = rdmastor::rdma::CreateS3RdmaService(cfg->rdma, RdmaOptionsFor(*cfg));
  api_opts.rdma = rdma_service.get();
  PublishRdmaMetrics(*rdma_service);
  // Admin heal (/minio/admin/v3/heal): runs ErasureStore::HealAll on its own thread. A single
  // drive has no parity to heal from: heal requests are refused (XMinioHealNotImplemented).
  const bool can_heal = store->erasure->layout().set_size > 1;
  rdmastor::s3::HealService heal_service(can_heal ? store->erasure : nullptr);
  api_opts.heal = &heal_service;
  if (can_heal) rdmastor::cli::PublishHealMetrics(*store->erasure);
  rdmastor::cli::PublishStorageMetrics();
  rdmastor::s3::LifecycleScanner lifecycle(
      *store->layer, LifecycleSettingsFor(*cfg),
      std::make_shared<rdmastor::storage::LocalNamespaceLocker>(),
      cfg->host.empty() ? "this node" : cfg->host);
  rdmastor::s3::PublishLifecycleMetrics(lifecycle);
  api_opts.lifecycle = &lifecycle;
  rdmastor::s3::S3Api api(api_opts, *store->layer);

  auto server = rdmastor::s3::HttpServer::Create(HttpOptionsFor(*cfg), api);
  if (!server.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", server.error().message.c_str());
    return 1;
  }

  rdmastor::cli::LogStartup(*cfg, (*server)->port());
  StopOnSignal(stop_signals, **server);
  // The port listens (HttpServer::Create bound it): clients can connect from here on.
  rdmastor::cli::NotifyServing(cfg->host, (*server)->port(), !cfg->tls_cert.empty(),
                               "serving S3 on port " + std::to_string((*server)->port()));
  // Master-key rotation (RDMASTOR_KMS_RESEAL=on): SSE-S3 object keys sealed by a previous key are
  // re-sealed under the current one while the server serves (docs/encryption.md).
  std::atomic<bool> stop_reseal{false};
  std::thread reseal;
  if (cfg->kms_reseal && api_opts.sse.ring) {
    reseal = std::thread([&] {
      auto stats = rdmastor::s3::ResealObjectKeys(*store->layer, *api_opts.sse.ring, stop_reseal);
      spdlog::info("SSE-S3 re-seal under master key '{}' done: {} object version(s) scanned, "
                   "{} re-sealed, {} failed",
                   api_opts.sse.ring->current().id, stats.scanned, stats.resealed, stats.failed);
    });
  }
  lifecycle.Start();
  (*server)->Run();
  lifecycle.Stop();
  stop_reseal = true;
  if (reseal.joinable()) reseal.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Stripe buffers and shards (0.25-4 MiB) are allocated and freed per request. glibc serves those
  // from fresh mmaps by default, so every request paid page faults plus zeroing by the kernel:
  // about a quarter of server CPU for 1 MiB PUTs and half of it for 1 MiB GETs on 4 drives
  // (perf). Below 4 MiB they come from the arenas and are reused; up to 16 MiB of free memory
  // stays mapped per arena top, the rest still goes back to the system.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  if (auto st = rdmastor::admin::ConfigureLogging(rdmastor::cli::Environment()); !st.ok()) {
    std::fprintf(stderr, "rdmastor: %s\n", st.error().message.c_str());
    return 2;
  }

  using Kind = rdmastor::cli::CommandLine::Kind;
  const auto cmd = rdmastor::cli::ParseCommandLine({argv + 1, argv + argc});
  switch (cmd.kind) {
    case Kind::kExit:
      return cmd.exit_code;
    case Kind::kVersion:
      PrintVersion();
      return 0;
    case Kind::kServer:
      return RunServer(cmd.server);
    case Kind::kAdmin:
      return rdmastor::cli::RunAdminCommand(cmd.admin, rdmastor::cli::Environment());
    case Kind::kRdma:
      return rdmastor::cli::RunRdmaCommand(cmd.rdma, rdmastor::cli::Environment());
  }
  return 2;
}
