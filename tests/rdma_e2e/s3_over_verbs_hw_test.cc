// S3 over RDMA on the verbs fabric, two processes (ctest label `hw`): the real server binary with
// MINIO_RDMA_FABRIC=verbs and our client library's DC target in this process. Needs an mlx5
// device (DC); skips with a message when none is present. scripts/hw-validate.sh runs it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "rdma/build_info.h"
#include "rdma/check.h"
#include "rdmastor/rdma_client.h"
#include "server_process.h"

namespace rdmastor {
namespace {

using client::RdmaClientConfig;
using client::RdmaS3Client;
using client::Transport;
using testing::ServerProcess;
using testing::Pattern;

// The device facts the server and client share: whatever MINIO_RDMA_* this test runs under.
std::map<std::string, std::string> VerbsEnv() {
  // The client's HTTP requests reach the server over loopback while its token names the RoCE
  // address: the origin check (MINIO_RDMA_ALLOW) would refuse that, by design.
  std::map<std::string, std::string> env{{"MINIO_RDMA_FABRIC", "verbs"},
                                         {"MINIO_RDMA_ALLOW", "any"}};
  for (const char* name :
       {"MINIO_RDMA_DEVICE", "MINIO_RDMA_PORT", "MINIO_RDMA_GID_INDEX", "MINIO_RDMA_DC_KEY",
        "MINIO_RDMA_TRAFFIC_CLASS", "MINIO_RDMA_SERVICE_LEVEL", "MINIO_RDMA_PKEY_INDEX"})
    if (const char* v = std::getenv(name)) env[name] = v;
  return env;
}

TEST(S3OverVerbs, TwoProcessRoundTripsAndFailurePaths) {
  if (auto why = rdma::NoDcDeviceReason(rdma::QueryDevices()); !why.empty()) GTEST_SKIP() << why;
  ServerProcess server;
  ASSERT_TRUE(server.Start(VerbsEnv())) << server.log();
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  cfg.fabric = client::ClientFabric::kVerbs;
  auto settings = client::VerbsClientSettingsFromEnv(VerbsEnv());
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  cfg.verbs = *settings;
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto& client = **c;
  ASSERT_TRUE(client.http().CreateBucket("hw").ok());
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4097}, size_t{1} << 20,
                      (size_t{64} << 20) + 7}) {
    auto data = Pattern(size, static_cast<uint32_t>(size));
    std::string key = "o" + std::to_string(size);
    auto put = client.Put("hw", key, data.data(), data.size());
    ASSERT_TRUE(put.ok()) << size << ": " << put.error().message;
    EXPECT_EQ(put->transport, Transport::kRdma);
    std::vector<char> back(size + 1, 0);
    auto got = client.Get("hw", key, back.data(), size);
    ASSERT_TRUE(got.ok()) << size << ": " << got.error().message;
    EXPECT_EQ(got->transport, Transport::kRdma);
    EXPECT_EQ(got->bytes, size);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), size), 0) << size;
  }
  // A client whose DC key differs: the server's writes are refused by the NIC; an S3 error, and
  // the server carries on.
  RdmaClientConfig wrong = cfg;
  wrong.verbs.dc_key = cfg.verbs.dc_key ^ 0x5a5a;
  auto w = RdmaS3Client::Create(wrong);
  ASSERT_TRUE(w.ok()) << w.error().message;
  std::vector<char> buf(4096);
  EXPECT_FALSE((*w)->Get("hw", "o4095", buf.data(), 4095).ok());
  EXPECT_TRUE(server.alive()) << server.log();
  auto again = client.Get("hw", "o4095", buf.data(), 4095);
  EXPECT_TRUE(again.ok()) << again.error().message;
}

}  // namespace
}  // namespace rdmastor
