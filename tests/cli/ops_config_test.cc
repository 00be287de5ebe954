// Operations settings of `rdmastor server`: TLS certificate directory, metrics auth type.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/server_config.h"

namespace rdmastor::cli {
namespace {

namespace fs = std::filesystem;

class CertsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rdmastor-certs-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "home/.rdmastor/certs");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const fs::path& p) { std::ofstream(p) << "x"; }
  fs::path dir_;
};

TEST_F(CertsDirTest, PlainHttpWithoutCertificates) {
  auto t = ResolveCertsDir(std::nullopt, {{"HOME", (dir_ / "home").string()}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dir, (dir_ / "home/.rdmastor/certs").string());
  EXPECT_TRUE(t->cert.empty());
  EXPECT_TRUE(ResolveCertsDir(std::nullopt, {}).ok());  // no HOME: no default directory
}

TEST_F(CertsDirTest, DefaultDirectoryWithBothFilesMeansHttps) {
  auto certs = dir_ / "home/.rdmastor/certs";
  Touch(certs / "public.crt");
  Touch(certs / "private.key");
  auto t = ResolveCertsDir(std::nullopt, {{"HOME", (dir_ / "home").string()}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cert, (certs / "public.crt").string());
  EXPECT_EQ(t->key, (certs / "private.key").string());
}

TEST_F(CertsDirTest, FlagWinsAndHalfAPairIsAnError) {
  Touch(dir_ / "public.crt");
  auto t = ResolveCertsDir(dir_.string(), {{"HOME", (dir_ / "home").string()}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("no private.key"), std::string::npos);
  EXPECT_FALSE(ResolveCertsDir((dir_ / "missing").string(), {}).ok());
  Touch(dir_ / "private.key");
  auto ok = ParseServerConfig({"--certs-dir", dir_.string(), "/d"}, {});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->tls_key, (dir_ / "private.key").string());
}

TEST(PrometheusAuthType, JwtDefaultPublicOrRefuse) {
  auto def = ParseServerConfig({"/d"}, {});
  ASSERT_TRUE(def.ok());
  EXPECT_FALSE(def->prometheus_public);
  auto pub = ParseServerConfig({"/d"}, {{"MINIO_PROMETHEUS_AUTH_TYPE", "public"}});
  ASSERT_TRUE(pub.ok());
  EXPECT_TRUE(pub->prometheus_public);
  auto bad = ParseServerConfig({"/d"}, {{"MINIO_PROMETHEUS_AUTH_TYPE", "none"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_PROMETHEUS_AUTH_TYPE"), std::string::npos);
}

}  // namespace
}  // namespace rdmastor::cli
