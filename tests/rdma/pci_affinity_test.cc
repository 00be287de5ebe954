// The GPU-to-NIC choice over a fixture sysfs tree built here (issue 37 item 11): a two-socket
// host with a PCIe switch holding GPU 0 and mlx5_0, mlx5_1 on another port of the same root
// complex, mlx5_2 and GPU 1 on the second socket, GPU 2 alone on a third root complex of
// socket 1, and rxe0 (no PCI device).
#include "rdma/pci_affinity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rdmastor::rdma {
namespace {
namespace fs = std::filesystem;

class PciAffinity : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdmastor-sysfs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    Device("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0", 0);  // GPU 0
    Device("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0", 0, "mlx5_0");
    Device("pci0000:00/0000:00:02.0/0000:05:00.0", 0, "mlx5_1");
    Device("pci0000:80/0000:80:01.0/0000:81:00.0", 1, "mlx5_2");
    Device("pci0000:80/0000:80:02.0/0000:82:00.0", 1);  // GPU 1
    Device("pci0000:40/0000:40:01.0/0000:41:00.0", 1);  // GPU 2
    fs::create_directories(root_ / "class/infiniband/rxe0");
  }
  void TearDown() override { fs::remove_all(root_); }

  // A PCI device at devices/<path>, linked from bus/pci/devices (and class/infiniband/<ib>).
  void Device(const std::string& path, int numa, const std::string& ib = "") {
    const fs::path dir = root_ / "devices" / path;
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << numa << "\n";
    const std::string addr = fs::path(path).filename();
    fs::create_directories(root_ / "bus/pci/devices");
    fs::create_directory_symlink(fs::path("../../../devices") / path,
                                 root_ / "bus/pci/devices" / addr);
    if (!ib.empty()) {
      fs::create_directories(root_ / "class/infiniband" / ib);
      fs::create_directory_symlink(fs::path("../../../devices") / path,
                                   root_ / "class/infiniband" / ib / "device");
    }
  }
  fs::path root_;
};

TEST(PciAddress, NormalizesWhatDriversPrint) {
  EXPECT_EQ(NormalizePciAddress("00000000:3B:00.0"), "0000:3b:00.0");  // cuDeviceGetPCIBusId
  EXPECT_EQ(NormalizePciAddress("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizePciAddress("0:3b:0.1"), "0000:3b:00.1");
  EXPECT_EQ(NormalizePciAddress("0001:af:1f.7"), "0001:af:1f.7");
  for (const char* bad :
       {"", "3b:00.0", "0000:3b:00", "0000:3g:00.0", "123456789:00:00.0", "0000:3b:00.12"})
    EXPECT_EQ(NormalizePciAddress(bad), "") << bad;
}

TEST_F(PciAffinity, ReadsThePcieTreeFromRootComplexToDevice) {
  EXPECT_EQ(PciPathOfRdmaDevice(root_, "mlx5_1"),
            (std::vector<std::string>{"pci0000:00", "0000:00:02.0", "0000:05:00.0"}));
  EXPECT_EQ(PciPathOfAddress(root_, "00000000:82:00.0").back(), "0000:82:00.0");
  EXPECT_TRUE(PciPathOfRdmaDevice(root_, "rxe0").empty());
  EXPECT_TRUE(PciPathOfRdmaDevice(root_, "mlx5_9").empty());
}

TEST_F(PciAffinity, PicksTheNicUnderTheSameSwitchThenRootComplexThenNumaNode) {
  auto nic = NearestRdmaDevice(root_, "0000:03:00.0");  // GPU 0: mlx5_0 shares its switch
  ASSERT_TRUE(nic.ok()) << nic.error().message;
  EXPECT_EQ(*nic, "mlx5_0");
  nic = NearestRdmaDevice(root_, "0000:03:00.0", {"mlx5_2", "mlx5_1"});  // same root complex
  ASSERT_TRUE(nic.ok());
  EXPECT_EQ(*nic, "mlx5_1");
  nic = NearestRdmaDevice(root_, "00000000:82:00.0");  // GPU 1: socket 1's root complex
  ASSERT_TRUE(nic.ok());
  EXPECT_EQ(*nic, "mlx5_2");
  nic = NearestRdmaDevice(root_, "0000:41:00.0");  // GPU 2: no NIC under it; same NUMA node
  ASSERT_TRUE(nic.ok());
  EXPECT_EQ(*nic, "mlx5_2");
}

TEST_F(PciAffinity, NamesWhatIsMissing) {
  auto none = NearestRdmaDevice(root_, "0000:99:00.0");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("0000:99:00.0"), std::string::npos);
  auto soft_only = NearestRdmaDevice(root_, "0000:03:00.0", {"rxe0"});
  ASSERT_FALSE(soft_only.ok());
  EXPECT_EQ(soft_only.error().code, ErrorCode::kRDMANotSupported);
}

}  // namespace
}  // namespace rdmastor::rdma
