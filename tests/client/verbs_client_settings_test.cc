// The verbs client's knobs come from the same MINIO_RDMA_* variables as the server's, validated
// the same way (rdmastor-cli and the Python module use this one function): a client DC target
// outside the server's partition or traffic class would not be reached, or not losslessly.
#include <gtest/gtest.h>

#include "rdma/build_info.h"
#include "rdmastor/rdma_client.h"

namespace rdmastor::client {
namespace {

TEST(VerbsClientSettingsFromEnv, TakesTheServersFabricKnobs) {
  auto d = VerbsClientSettingsFromEnv({});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->port, 1);
  EXPECT_EQ(d->gid_index, -1);
  EXPECT_EQ(d->dc_key, 0xffeeddccu);
  EXPECT_EQ(d->traffic_class, 0);
  EXPECT_EQ(d->service_level, 0);
  EXPECT_EQ(d->pkey_index, 0);

  auto s = VerbsClientSettingsFromEnv({{"MINIO_RDMA_DEVICE", "mlx5_1"},
                                       {"MINIO_RDMA_PORT", "2"},
                                       {"MINIO_RDMA_GID_INDEX", "3"},
                                       {"MINIO_RDMA_DC_KEY", "0x1234abcd"},
                                       {"MINIO_RDMA_TRAFFIC_CLASS", "104"},
                                       {"MINIO_RDMA_SERVICE_LEVEL", "3"},
                                       {"MINIO_RDMA_PKEY_INDEX", "2"}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  if (!rdma::BuiltWithVerbs()) {
    // The standard build compiles the verbs knobs out (the server warns about them): defaults.
    EXPECT_EQ(s->device, "");
    EXPECT_EQ(s->traffic_class, 0);
    EXPECT_EQ(s->pkey_index, 0);
    return;
  }
  EXPECT_EQ(s->device, "mlx5_1");
  EXPECT_EQ(s->port, 2);
  EXPECT_EQ(s->gid_index, 3);
  EXPECT_EQ(s->dc_key, 0x1234abcdu);
  EXPECT_EQ(s->traffic_class, 104);
  EXPECT_EQ(s->service_level, 3);
  EXPECT_EQ(s->pkey_index, 2);

  for (auto [name, value] :
       {std::pair{"MINIO_RDMA_TRAFFIC_CLASS", "256"}, std::pair{"MINIO_RDMA_SERVICE_LEVEL", "16"},
        std::pair{"MINIO_RDMA_PKEY_INDEX", "-1"}}) {
    auto bad = VerbsClientSettingsFromEnv({{name, value}});
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.error().message.find(name), std::string::npos) << bad.error().message;
  }
}

}  // namespace
}  // namespace rdmastor::client
