#include "cli/server_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "rdma/build_info.h"

namespace rdmastor::cli {
namespace {

TEST(ParseAddress, AcceptsMinioForms) {
  auto a = ParseAddress(":9000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "");
  EXPECT_EQ(a->second, 9000);
  auto b = ParseAddress("127.0.0.1:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "127.0.0.1");
  EXPECT_EQ(b->second, 0);
  auto c = ParseAddress("[::1]:9001");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->first, "::1");
  EXPECT_EQ(c->second, 9001);
  auto d = ParseAddress("node1.example:9000");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->first, "node1.example");
}

TEST(ParseAddress, RejectsMalformed) {
  for (const char* bad : {"", "nonsense", "127.0.0.1", ":", ":65536", ":-1", ":9x", "::1:9000",
                          "[::1]", "[::1]9000", ":123456"}) {
    auto r = ParseAddress(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("--address"), std::string::npos);
    }
  }
}

TEST(ParseServerConfig, DefaultsAndDrives) {
  auto cfg = ParseServerConfig({"/data"}, {});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->port, 9000);
  EXPECT_EQ(cfg->drives, std::vector<std::string>{"/data"});
  EXPECT_TRUE(cfg->default_credentials);
  EXPECT_EQ(cfg->root_user, "minioadmin");
  ASSERT_FALSE(cfg->warnings.empty());
  EXPECT_NE(cfg->warnings.back().find("minioadmin"), std::string::npos);
}

TEST(ParseServerConfig, VolumesFromEnvironment) {
  EnvMap env{{"MINIO_VOLUMES", "/a /b,/c"},
             {"MINIO_ROOT_USER", "admin"},
             {"MINIO_ROOT_PASSWORD", "password1"}};
  auto cfg = ParseServerConfig({"--address", "127.0.0.1:9100"}, env);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->drives, (std::vector<std::string>{"/a", "/b", "/c"}));
  EXPECT_EQ(cfg->port, 9100);
  EXPECT_FALSE(cfg->default_credentials);
  // Arguments win over MINIO_VOLUMES.
  auto cfg2 = ParseServerConfig({"/x"}, env);
  ASSERT_TRUE(cfg2.ok());
  EXPECT_EQ(cfg2->drives, std::vector<std::string>{"/x"});
}

TEST(ParseServerConfig, RejectsBadCredentialsAndFlags) {
  EXPECT_FALSE(ParseServerConfig({"/d"}, {{"MINIO_ROOT_USER", "admin"}}).ok());
  EXPECT_FALSE(
      ParseServerConfig({"/d"}, {{"MINIO_ROOT_USER", "ad"}, {"MINIO_ROOT_PASSWORD", "password1"}})
          .ok());
  EXPECT_FALSE(
      ParseServerConfig({"/d"}, {{"MINIO_ROOT_USER", "admin"}, {"MINIO_ROOT_PASSWORD", "short"}})
          .ok());
  EXPECT_FALSE(ParseServerConfig({"--bogus", "/d"}, {}).ok());
  EXPECT_FALSE(ParseServerConfig({"--address"}, {}).ok());
  EXPECT_FALSE(ParseServerConfig({}, {}).ok());  // no drive at all
}

TEST(ParseServerConfig, DomainsAreLowerCased) {
  auto cfg = ParseServerConfig({"/d"}, {{"MINIO_DOMAIN", "S3.Example.com,localhost"}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->domains, (std::vector<std::string>{"s3.example.com", "localhost"}));
}

TEST(ParseServerConfig, RdmaSettingsOnStandardBuildWarnOnce) {
  auto cfg =
      ParseServerConfig({"/d"}, {{"MINIO_RDMA_DEVICE", "mlx5_0"}, {"MINIO_RDMA_PORT", "1"}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->rdma_settings.size(), 2u);
  int rdma_warnings = 0;
  for (const auto& w : cfg->warnings)
    if (w.find("MINIO_RDMA_DEVICE, MINIO_RDMA_PORT") != std::string::npos) ++rdma_warnings;
#ifdef RDMASTOR_WITH_RDMA
  EXPECT_EQ(rdma_warnings, 0);
#else
  EXPECT_EQ(rdma_warnings, 1);
#endif
  // Only settings the standard build acts on (the soft fabric's): still one warning that there
  // is no hardware RDMA here, naming nothing as ignored.
  auto soft = ParseServerConfig({"/d"}, {{"MINIO_RDMA_FABRIC", "soft"}});
  ASSERT_TRUE(soft.ok());
  int hardware_warnings = 0;
  for (const auto& w : soft->warnings) {
    if (w.find("without hardware RDMA") == std::string::npos) continue;
    ++hardware_warnings;
    EXPECT_EQ(w.find("ignored"), std::string::npos) << w;
  }
  EXPECT_EQ(hardware_warnings, rdma::BuiltWithVerbs() ? 0 : 1);
}

}  // namespace
}  // namespace rdmastor::cli

namespace rdmastor::cli {
namespace {

TEST(ParseByteSize, UnitsAndErrors) {
  EXPECT_EQ(ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(ParseByteSize("1MiB"), 1u << 20);
  EXPECT_EQ(ParseByteSize("512KiB"), 512u << 10);
  EXPECT_EQ(ParseByteSize("2gib"), 2ULL << 30);
  EXPECT_EQ(ParseByteSize("1MB"), 1000000u);
  EXPECT_EQ(ParseByteSize("0"), 0u);
  for (const char* bad : {"", "banana", "MiB", "1.5MiB", "-1", "1 MiB", "1XiB",
                          "99999999999999999999", "99999999999TiB"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

TEST(ParseDurationMs, UnitsAndErrors) {
  EXPECT_EQ(ParseDurationMs("30s"), 30000);
  EXPECT_EQ(ParseDurationMs("2m"), 120000);
  EXPECT_EQ(ParseDurationMs("500ms"), 500);
  EXPECT_EQ(ParseDurationMs("7"), 7000);
  EXPECT_EQ(ParseDurationMs("1h"), 3600000);
  EXPECT_EQ(ParseDurationMs("168h", 8760LL * 3600 * 1000), 168LL * 3600 * 1000);
  for (const char* bad : {"", "s", "1d", "-1s", "10 s", "1.5s", "25h", "100000000s"})
    EXPECT_FALSE(ParseDurationMs(bad)) << bad;
}

TEST(ParseServerConfig, StaleUploads) {
  auto d = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->stale_uploads_expiry_ms, 24LL * 3600 * 1000);  // MinIO's defaults
  EXPECT_EQ(d->stale_uploads_cleanup_interval_ms, 6LL * 3600 * 1000);
  auto c = ParseServerConfig({"/d"}, {{"MINIO_API_STALE_UPLOADS_EXPIRY", "168h"},
                                      {"MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL", "30m"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->stale_uploads_expiry_ms, 168LL * 3600 * 1000);
  EXPECT_EQ(c->stale_uploads_cleanup_interval_ms, 30LL * 60 * 1000);
  auto off = ParseServerConfig({"/d"}, {{"MINIO_API_STALE_UPLOADS_EXPIRY", "off"}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->stale_uploads_expiry_ms, 0);
  for (const char* bad : {"10ms", "1y", "9000h"}) {
    auto e = ParseServerConfig({"/d"}, {{"MINIO_API_STALE_UPLOADS_EXPIRY", bad}});
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find("MINIO_API_STALE_UPLOADS_EXPIRY"), std::string::npos);
  }
}

TEST(ParseServerConfig, ApiLimits) {
  auto d = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->requests_max, 64);
  EXPECT_EQ(d->requests_per_client, 0);
  EXPECT_EQ(d->connections_max, 0u);
  EXPECT_EQ(d->body_timeout_ms, 30000);
  EXPECT_EQ(d->send_timeout_ms, 30000);
  EXPECT_EQ(d->min_rate, 64u << 10);
  auto c = ParseServerConfig({"/d"}, {{"MINIO_API_REQUESTS_MAX", "8"},
                                      {"RDMASTOR_API_REQUESTS_PER_CLIENT", "2"},
                                      {"RDMASTOR_API_CONNECTIONS_MAX", "500"},
                                      {"RDMASTOR_API_BODY_TIMEOUT", "2s"},
                                      {"RDMASTOR_API_SEND_TIMEOUT", "1m"},
                                      {"RDMASTOR_API_MIN_RATE", "1MiB"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->requests_max, 8);
  EXPECT_EQ(c->requests_per_client, 2);
  EXPECT_EQ(c->connections_max, 500u);
  EXPECT_EQ(c->body_timeout_ms, 2000);
  EXPECT_EQ(c->send_timeout_ms, 60000);
  EXPECT_EQ(c->min_rate, 1u << 20);
  auto off = ParseServerConfig({"/d"}, {{"RDMASTOR_API_MIN_RATE", "off"}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->min_rate, 0u);
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"MINIO_API_REQUESTS_MAX", "0"},
                                                        {"MINIO_API_REQUESTS_MAX", "lots"},
                                                        {"RDMASTOR_API_REQUESTS_PER_CLIENT", "-1"},
                                                        {"RDMASTOR_API_CONNECTIONS_MAX", "0"},
                                                        {"RDMASTOR_API_BODY_TIMEOUT", "50ms"},
                                                        {"RDMASTOR_API_SEND_TIMEOUT", "soon"},
                                                        {"RDMASTOR_API_MIN_RATE", "fast"},
                                                        {"RDMASTOR_API_HEADER_TIMEOUT", "0"},
                                                        {"RDMASTOR_API_TLS_HANDSHAKE_TIMEOUT", "x"},
                                                        {"RDMASTOR_RDMA_PROGRESS_TIMEOUT", "1ms"},
                                                        {"RDMASTOR_RDMA_MIN_RATE", "slow"},
                                                        {"RDMASTOR_RDMA_TRANSFERS_PER_CLIENT", "0"},
                                                        {"RDMASTOR_RDMA_TRANSFERS_MAX", "65537"},
                                                        {"RDMASTOR_RDMA_TRANSFERS_WAIT", "10ms"},
                                                        {"MINIO_RDMA_INTERNODE_STAGING_BUFFERS", "0"},
                                                        {"MINIO_RDMA_INTERNODE_WAIT", "11m"}}) {
    auto bad = ParseServerConfig({"/d"}, {{name, value}});
    ASSERT_FALSE(bad.ok()) << name << "=" << value;
    EXPECT_NE(bad.error().message.find(name), std::string::npos) << bad.error().message;
  }
}

TEST(ParseServerConfig, HeaderTlsAndRdmaAbuseLimits) {
  auto d = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header_timeout_ms, 90000);
  EXPECT_EQ(d->handshake_timeout_ms, 120000);
  EXPECT_EQ(d->rdma_progress_timeout_ms, 10000);
  EXPECT_EQ(d->rdma_min_rate, 1u << 20);
  // The ceilings left unset are sized at start (SizeRdmaCeilings).
  EXPECT_EQ(d->rdma_transfers_per_client, 0);
  EXPECT_EQ(d->rdma_transfers_max, 0);
  EXPECT_EQ(d->rdma_transfers_wait_ms, 30000);
  EXPECT_FALSE(d->internode.staging_set);
  EXPECT_FALSE(d->internode.channels_set);
  EXPECT_EQ(d->internode.inflight_wait.count(), 5000);
  auto c = ParseServerConfig({"/d"}, {{"RDMASTOR_API_HEADER_TIMEOUT", "15s"},
                                      {"RDMASTOR_API_TLS_HANDSHAKE_TIMEOUT", "5s"},
                                      {"RDMASTOR_RDMA_PROGRESS_TIMEOUT", "2s"},
                                      {"RDMASTOR_RDMA_MIN_RATE", "off"},
                                      {"RDMASTOR_RDMA_TRANSFERS_PER_CLIENT", "3"},
                                      {"RDMASTOR_RDMA_TRANSFERS_MAX", "6"},
                                      {"RDMASTOR_RDMA_TRANSFERS_WAIT", "1s"},
                                      {"MINIO_RDMA_INTERNODE_STAGING_BUFFERS", "5"},
                                      {"MINIO_RDMA_INTERNODE_WAIT", "750ms"},
                                      {"MINIO_RDMA_CHANNELS", "2"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->header_timeout_ms, 15000);
  EXPECT_EQ(c->handshake_timeout_ms, 5000);
  EXPECT_EQ(c->rdma_progress_timeout_ms, 2000);
  EXPECT_EQ(c->rdma_min_rate, 0u);
  EXPECT_EQ(c->rdma_transfers_per_client, 3);
  EXPECT_EQ(c->rdma_transfers_max, 6);
  EXPECT_EQ(c->rdma_transfers_wait_ms, 1000);
  EXPECT_TRUE(c->internode.staging_set);
  EXPECT_EQ(c->internode.max_buffers, 5u);
  EXPECT_EQ(c->internode.inflight_wait.count(), 750);
  EXPECT_EQ(c->internode.channel_wait.count(), 750);
  // Explicit values survive sizing; the unset ones are sized (here: no device asked for).
  auto sized = *c;
  sized.rdma.fabric = rdma::FabricKind::kSoft;
  ASSERT_TRUE(SizeRdmaCeilings(sized).ok());
  EXPECT_EQ(sized.rdma_transfers_max, 6);
  EXPECT_EQ(sized.rdma_transfers_per_client, 3);
  EXPECT_EQ(sized.internode.max_buffers, 5u);
  EXPECT_EQ(sized.internode.channels, 2);
  auto greedy = *c;
  greedy.rdma.fabric = rdma::FabricKind::kSoft;
  greedy.rdma_transfers_per_client = 4;  // more than half of 6
  auto st = SizeRdmaCeilings(greedy);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("RDMASTOR_RDMA_TRANSFERS_PER_CLIENT='4'"), std::string::npos)
      << st.error().message;
}

TEST(ParseServerConfig, InternodeSettingsValidatedInBothBuilds) {
  // Both builds move shards over RDMA (the standard one over the soft fabric), so both refuse a
  // bad value at start, naming it.
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"MINIO_RDMA_MIN_SIZE", "banana"},
           {"MINIO_RDMA_INTERNODE", "yes"},
           {"MINIO_RDMA_INTERNODE_ADDRESS", "node1"},
           {"MINIO_RDMA_INTERNODE_INFLIGHT", "0"},
           {"MINIO_RDMA_INTERNODE_RETRY", "forever"},
           {"MINIO_RDMA_CHANNELS", "0"},
           {"MINIO_RDMA_CHANNELS", "65"},
           {"MINIO_RDMA_INTERNODE_INFLIGHT_BYTES", "lots"},
           {"MINIO_RDMA_INTERNODE_INFLIGHT_BYTES", "4KiB"},
           {"MINIO_RDMA_INTERNODE_TRAFFIC_CLASS", "300"}}) {
    auto bad = ParseServerConfig({"/d"}, {{name, value}});
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.error().message.find(name), std::string::npos) << bad.error().message;
  }
  auto good = ParseServerConfig({"/d"}, {{"MINIO_RDMA_MIN_SIZE", "512KiB"},
                                         {"MINIO_RDMA_INTERNODE", "ON"},
                                         {"MINIO_RDMA_FABRIC", "soft"},
                                         {"MINIO_RDMA_INTERNODE_ADDRESS", "127.0.0.9"},
                                         {"MINIO_RDMA_INTERNODE_INFLIGHT", "4"},
                                         {"MINIO_RDMA_CHANNELS", "8"},
                                         {"MINIO_RDMA_INTERNODE_INFLIGHT_BYTES", "64MiB"},
                                         {"MINIO_RDMA_INTERNODE_TRAFFIC_CLASS", "104"}});
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->internode.channels, 8);
  EXPECT_EQ(good->internode.inflight_bytes, uint64_t{64} << 20);
  EXPECT_EQ(good->internode.traffic_class, 104);
  EXPECT_EQ(good->internode.min_size, 512u << 10);
  EXPECT_TRUE(good->internode.enabled);
  EXPECT_EQ(good->internode.fabric, rdma::FabricKind::kSoft);
  EXPECT_EQ(good->internode.bind_ip, "127.0.0.9");
  EXPECT_EQ(good->internode.inflight_per_peer, 4);
  // Live in both builds: never named as ignored.
  for (const auto& w : good->warnings)
    EXPECT_EQ(w.find("MINIO_RDMA_INTERNODE"), std::string::npos) << w;
  auto def = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(def.ok());
  EXPECT_FALSE(def->internode.enabled);
  EXPECT_EQ(def->internode.min_size, 1u << 20);
  EXPECT_EQ(def->internode.bind_ip, "");
}

}  // namespace
}  // namespace rdmastor::cli

namespace rdmastor::cli {
namespace {

TEST(ParseServerConfig, InlineBlockParsedWithUnitsAndBounded) {
  auto def = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(def.ok()) << def.error().message;
  EXPECT_EQ(def->storage_classes.inline_block, erasure::kDefaultInlineBlock);
  for (auto [value, want] : std::vector<std::pair<std::string, uint64_t>>{
           {"128KiB", 128u << 10}, {"64k", 64u << 10}, {"0", 0}, {"32768", 32768},
           {"1MiB", 1u << 20}}) {
    auto c = ParseServerConfig({"/d1", "/d2", "/d3", "/d4"},
                               {{"MINIO_STORAGE_CLASS_INLINE_BLOCK", value}});
    ASSERT_TRUE(c.ok()) << value << ": " << c.error().message;
    EXPECT_EQ(c->storage_classes.inline_block, want) << value;
    // Above MinIO's recommended 128KiB: accepted with a warning, as MinIO does.
    const bool warned = std::any_of(c->warnings.begin(), c->warnings.end(), [](const auto& w) {
      return w.find("MINIO_STORAGE_CLASS_INLINE_BLOCK") != std::string::npos;
    });
    EXPECT_EQ(warned, want > erasure::kDefaultInlineBlock) << value;
  }
  for (std::string bad : {"banana", "-1", "128 KiB", "1.5MiB", "2MiB", "1049577", "1GiB",
                          "99999999999999999999999"}) {
    auto c = ParseServerConfig({"/d"}, {{"MINIO_STORAGE_CLASS_INLINE_BLOCK", bad}});
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.error().message.find("MINIO_STORAGE_CLASS_INLINE_BLOCK='" + bad + "'"),
              std::string::npos)
        << c.error().message;
  }
}

TEST(ParseRootCredentials, MinioWaysAndNeverDefaultsWhenAnyIsSet) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("rdmastor-creds-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "user") << "fileuser\n";
  std::ofstream(dir / "pw") << " file-password \n";
  auto c = ParseRootCredentials({{"MINIO_ROOT_USER_FILE", (dir / "user").string()},
                                 {"MINIO_ROOT_PASSWORD_FILE", (dir / "pw").string()}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->user, "fileuser");
  EXPECT_EQ(c->password, "file-password");
  EXPECT_FALSE(c->defaults);
  EXPECT_TRUE(c->warnings.empty());
  c = ParseRootCredentials({{"MINIO_ACCESS_KEY", "legacy"}, {"MINIO_SECRET_KEY", "legacy-secret"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->user, "legacy");
  EXPECT_EQ(c->warnings.size(), 2u);
  // The current names win over the deprecated ones.
  c = ParseRootCredentials({{"MINIO_ROOT_USER", "root1"},
                            {"MINIO_ROOT_PASSWORD", "password1"},
                            {"MINIO_ACCESS_KEY", "legacy"},
                            {"MINIO_SECRET_KEY", "legacy-secret"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->user, "root1");
  for (const EnvMap& env :
       std::vector<EnvMap>{{{"MINIO_ACCESS_KEY", "legacy"}},
                           {{"MINIO_ROOT_PASSWORD_FILE", (dir / "pw").string()}},
                           {{"MINIO_ROOT_USER_FILE", (dir / "none").string()},
                            {"MINIO_ROOT_PASSWORD", "password1"}},
                           {{"MINIO_ROOT_USER", ""}}}) {
    EXPECT_FALSE(ParseRootCredentials(env).ok()) << env.begin()->first;
  }
  std::filesystem::remove_all(dir);
}

TEST(ParseServerConfig, UnknownMinioVariablesAreNamed) {
  auto cfg = ParseServerConfig(
      {"/d"},
      {{"MINIO_BROWSER", "off"}, {"MINIO_REGION", "eu-west-1"}, {"MINIO_OPTS", "--address :9000"}});
  ASSERT_TRUE(cfg.ok());
  int named = 0;
  for (const auto& w : cfg->warnings) {
    named += w.find("does not use it") != std::string::npos;
    EXPECT_EQ(w.find("MINIO_REGION"), std::string::npos) << w;
  }
  EXPECT_EQ(named, 1);
  EXPECT_TRUE(cfg->region_configured);
  EXPECT_FALSE(ParseServerConfig({"/d"}, {})->region_configured);
}

// The peer timings land in cfg.peer, which ClusterConfig takes whole (cli/main.cc): each
// variable its own member, the defaults where unset, `off` only for the ping interval.
TEST(ParseServerConfig, PeerTimings) {
  using std::chrono::milliseconds;
  auto cfg = ParseServerConfig({"/d"}, {{"MINIO_PEER_WAIT", "90s"},
                                        {"RDMASTOR_PEER_PING_INTERVAL", "off"},
                                        {"RDMASTOR_PEER_PING_TIMEOUT", "3s"},
                                        {"RDMASTOR_PEER_QUICK_TIMEOUT", "700ms"}});
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->peer.wait, milliseconds(90000));
  EXPECT_EQ(cfg->peer.ping_interval, milliseconds(0));
  EXPECT_EQ(cfg->peer.ping_timeout, milliseconds(3000));
  EXPECT_EQ(cfg->peer.quick_timeout, milliseconds(700));
  auto def = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->peer.wait, milliseconds(120000));
  EXPECT_EQ(def->peer.ping_interval, milliseconds(1000));
  EXPECT_EQ(def->peer.ping_timeout, milliseconds(2000));
  EXPECT_EQ(def->peer.quick_timeout, milliseconds(5000));
  EXPECT_FALSE(ParseServerConfig({"/d"}, {{"RDMASTOR_PEER_PING_TIMEOUT", "off"}}).ok());
  EXPECT_FALSE(ParseServerConfig({"/d"}, {{"RDMASTOR_PEER_QUICK_TIMEOUT", "50ms"}}).ok());
}

}  // namespace
}  // namespace rdmastor::cli
