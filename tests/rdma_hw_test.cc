// Device tests (ctest label `hw`): need an RDMA NIC; skip with a message when none is present.
#include <gtest/gtest.h>

#include <vector>

#include "rdma/build_info.h"
#include "rdma/settings.h"

namespace rdmastor::rdma {
namespace {

TEST(VerbsDevice, RegistersMemoryAndOpensDcInitiators) {
  auto probe = ProbeDevices();
  if (!probe.available) GTEST_SKIP() << "no RDMA device on this host: " << probe.error;
  auto fabric = CreateVerbsFabric({});
  ASSERT_TRUE(fabric.ok()) << fabric.error().message;
  std::vector<char> buf(1 << 20);
  auto mr = (*fabric)->RegisterMemory(buf.data(), buf.size(), kLocalWrite | kRemoteWrite);
  ASSERT_TRUE(mr.ok()) << mr.error().message;
  EXPECT_NE((*mr)->rkey(), 0u);
}

}  // namespace
}  // namespace rdmastor::rdma
