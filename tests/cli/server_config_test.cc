#include "cli/server_config.h"

#include <gtest/gtest.h>

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
      ParseServerConfig({"/d"}, {{"MINIO_RDMA_INTERNODE", "on"}, {"MINIO_RDMA_MIN_SIZE", "1MiB"}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->rdma_settings.size(), 2u);
  int rdma_warnings = 0;
  for (const auto& w : cfg->warnings)
    if (w.find("MINIO_RDMA_INTERNODE") != std::string::npos) ++rdma_warnings;
#ifdef RDMASTOR_WITH_RDMA
  EXPECT_EQ(rdma_warnings, 0);
#else
  EXPECT_EQ(rdma_warnings, 1);
#endif
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

TEST(ParseServerConfig, RdmaSettingsValidatedOnRdmaBuild) {
  auto bad = ParseServerConfig({"/d"}, {{"MINIO_RDMA_MIN_SIZE", "banana"}});
  auto bad2 = ParseServerConfig({"/d"}, {{"MINIO_RDMA_INTERNODE", "yes"}});
  auto good = ParseServerConfig(
      {"/d"}, {{"MINIO_RDMA_MIN_SIZE", "512KiB"}, {"MINIO_RDMA_INTERNODE", "on"}});
  ASSERT_TRUE(good.ok());
#ifdef RDMASTOR_WITH_RDMA
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_RDMA_MIN_SIZE"), std::string::npos);
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.error().message.find("MINIO_RDMA_INTERNODE"), std::string::npos);
  EXPECT_EQ(good->rdma_min_size, 512u << 10);
  EXPECT_TRUE(good->rdma_internode);
#else
  // The standard build compiles RDMA out: it warns once and ignores the values.
  EXPECT_TRUE(bad.ok());
  EXPECT_TRUE(bad2.ok());
  EXPECT_FALSE(good->rdma_internode);
#endif
}

}  // namespace
}  // namespace rdmastor::cli
