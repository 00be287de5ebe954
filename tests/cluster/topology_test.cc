#include "cluster/topology.h"

#include <gtest/gtest.h>

namespace rdmastor::cluster {
namespace {

// The drive list the command line's ellipses expand to (cli::ExpandDriveArgs, tested in
// tests/cli): node-major, every drive of the first node first. Spelled out here so that this
// binary links the cluster module only.
std::vector<std::string> DriveUrls(const std::vector<std::string>& nodes, const std::string& dir,
                                   int drives_per_node) {
  std::vector<std::string> urls;
  for (const auto& node : nodes)
    for (int d = 1; d <= drives_per_node; ++d) urls.push_back(node + dir + std::to_string(d));
  return urls;
}

TEST(Topology, FourNodesFourDrivesSpreadSetsOverNodes) {
  auto drives = DriveUrls({"http://127.0.0.1:9001", "http://127.0.0.1:9002",
                           "http://127.0.0.1:9003", "http://127.0.0.1:9004"},
                          "/tmp/x/d", 4);
  ASSERT_EQ(drives.size(), 16u);
  auto t = BuildTopology(drives, "127.0.0.1", 9003, {"127.0.0.1"});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->nodes.size(), 4u);
  EXPECT_EQ(t->self, 2);
  EXPECT_TRUE(t->nodes[2].local);
  EXPECT_FALSE(t->nodes[0].local);
  EXPECT_FALSE(t->is_first());
  EXPECT_EQ(t->nodes[0].address(), "127.0.0.1:9001");
  // Node-major interleaving: consecutive drives are on different nodes.
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(t->endpoints[i].node, static_cast<int>(i % 4)) << i;
    EXPECT_EQ(t->endpoints[i].path, "/tmp/x/d" + std::to_string(i / 4 + 1)) << i;
  }
  EXPECT_EQ(t->nodes[1].drives, (std::vector<int>{1, 5, 9, 13}));
}

TEST(Topology, HostnamesAndDefaultPort) {
  auto drives = DriveUrls({"http://10.1.1.1", "http://10.1.1.2"}, "/mnt/d", 2);
  auto t = BuildTopology(drives, "", 9000, {"10.9.9.9"});
  // Neither node is an address of this host: not found.
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("none of the nodes"), std::string::npos);
  auto found = BuildTopology(drives, "", 9000, {"10.1.1.2"});
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->self, 1);
  EXPECT_EQ(found->endpoints[0].port, 9000);  // no port in the URL: 9000
  auto local = DriveUrls({"http://localhost:9000", "http://localhost:9001"}, "/mnt/d", 2);
  auto t2 = BuildTopology(local, "", 9001, {});
  ASSERT_TRUE(t2.ok()) << t2.error().message;
  EXPECT_EQ(t2->self, 1);
  EXPECT_EQ(t2->endpoints[0].port, 9000);
}

TEST(Topology, RefusesMixedSchemesAndPlainPaths) {
  auto t = BuildTopology({"http://127.0.0.1:9001/a", "/b"}, "", 9001, {"127.0.0.1"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("plain path"), std::string::npos);
  auto ftp =
      BuildTopology({"ftp://127.0.0.1:9001/a", "ftp://127.0.0.1:9002/a"}, "", 9001, {"127.0.0.1"});
  ASSERT_FALSE(ftp.ok());
  EXPECT_NE(ftp.error().message.find("https://"), std::string::npos);
  // http and https mixed, in either order: one scheme per deployment.
  for (auto drives :
       {std::vector<std::string>{"http://127.0.0.1:9001/a", "https://127.0.0.1:9002/a"},
        std::vector<std::string>{"https://127.0.0.1:9001/a", "http://127.0.0.1:9002/a"}}) {
    auto mixed = BuildTopology(drives, "", 9001, {"127.0.0.1"});
    ASSERT_FALSE(mixed.ok());
    EXPECT_NE(mixed.error().message.find("same scheme"), std::string::npos)
        << mixed.error().message;
  }
  auto no_path =
      BuildTopology({"http://127.0.0.1:9001", "http://127.0.0.1:9002"}, "", 9001, {"127.0.0.1"});
  EXPECT_FALSE(no_path.ok());
}

TEST(Topology, HttpsEndpoints) {
  auto drives = DriveUrls({"https://127.0.0.1:9001", "https://127.0.0.1:9002"}, "/d", 2);
  auto t = BuildTopology(drives, "127.0.0.1", 9002, {"127.0.0.1"});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->tls);
  EXPECT_EQ(t->self, 1);
  for (const auto& e : t->endpoints) EXPECT_TRUE(e.tls);
  EXPECT_EQ(t->endpoints[1].port, 9002);
  // No port: 9000 as for http (not https's 443), like MinIO.
  auto no_port =
      BuildTopology({"HTTPS://10.1.1.1/a", "https://10.1.1.2/a"}, "", 9000, {"10.1.1.2"});
  ASSERT_TRUE(no_port.ok()) << no_port.error().message;
  EXPECT_EQ(no_port->endpoints[0].port, 9000);
  EXPECT_TRUE(no_port->tls);
  auto plain = BuildTopology({"http://127.0.0.1:9001/a", "http://127.0.0.1:9002/a"}, "", 9001,
                             {"127.0.0.1"});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls);
}

TEST(Topology, RefusesNodeNotFoundAmbiguityAndInconsistentCounts) {
  auto drives = DriveUrls({"http://127.0.0.1:9001", "http://127.0.0.1:9002"}, "/d", 2);
  auto missing = BuildTopology(drives, "127.0.0.1", 9100, {"127.0.0.1"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("127.0.0.1:9001"), std::string::npos);
  auto counts = BuildTopology(
      {"http://127.0.0.1:9001/a", "http://127.0.0.1:9001/b", "http://127.0.0.1:9002/a"}, "", 9001,
      {"127.0.0.1"});
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.error().message.find("same number of drives"), std::string::npos);
  auto dup = BuildTopology({"http://127.0.0.1:9001/a", "http://127.0.0.1:9001/a/"}, "", 9001,
                           {"127.0.0.1"});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("more than once"), std::string::npos);
  // Two names of this host on the same port: which one is this process?
  auto ambiguous = BuildTopology({"http://127.0.0.1:9001/a", "http://localhost:9001/a"}, "", 9001,
                                 {"127.0.0.1"});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.error().message.find("several nodes"), std::string::npos);
}

}  // namespace
}  // namespace rdmastor::cluster
