#include "cli/ellipsis.h"

#include <gtest/gtest.h>

#include "cli/server_config.h"

namespace rdmastor::cli {
namespace {

using V = std::vector<std::string>;

V Expand(const std::string& arg) {
  auto r = ExpandEllipses(arg);
  EXPECT_TRUE(r.ok()) << arg << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : V{};
}

TEST(Ellipsis, Numeric) {
  EXPECT_EQ(Expand("/mnt/disk{1...4}"),
            (V{"/mnt/disk1", "/mnt/disk2", "/mnt/disk3", "/mnt/disk4"}));
  EXPECT_EQ(Expand("/d{9...11}/x"), (V{"/d9/x", "/d10/x", "/d11/x"}));
  EXPECT_EQ(Expand("/d{3...3}"), (V{"/d3"}));
}

TEST(Ellipsis, ZeroPadded) {
  V got = Expand("/mnt/disk{01...16}");
  ASSERT_EQ(got.size(), 16u);
  EXPECT_EQ(got.front(), "/mnt/disk01");
  EXPECT_EQ(got[8], "/mnt/disk09");
  EXPECT_EQ(got.back(), "/mnt/disk16");
  EXPECT_FALSE(ExpandEllipses("/d{01...100}").ok());
}

TEST(Ellipsis, Letters) {
  EXPECT_EQ(Expand("/mnt/{a...c}"), (V{"/mnt/a", "/mnt/b", "/mnt/c"}));
  EXPECT_FALSE(ExpandEllipses("/mnt/{a...C}").ok());
  EXPECT_FALSE(ExpandEllipses("/mnt/{f...a}").ok());
}

TEST(Ellipsis, SeveralInOneArgumentLeftmostSlowest) {
  EXPECT_EQ(Expand("/n{1...2}/d{a...b}"), (V{"/n1/da", "/n1/db", "/n2/da", "/n2/db"}));
}

TEST(Ellipsis, LiteralBracesAndNoPattern) {
  EXPECT_EQ(Expand("/data"), (V{"/data"}));
  EXPECT_EQ(Expand("/da{ta}"), (V{"/da{ta}"}));
  EXPECT_FALSE(HasEllipses("/da{ta}"));
  EXPECT_TRUE(HasEllipses("/d{1...2}"));
}

TEST(Ellipsis, Malformed) {
  for (const char* bad : {"/d{4...1}", "/d{1...}", "/d{...3}", "/d{1...b}", "/d{x1...3}",
                          "/d{1...4", "/d{1...999999999}", "/d{1..4}x{1...2"}) {
    auto r = ExpandEllipses(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
  }
}

TEST(DriveArgs, PlainArgumentsAndOneEllipsis) {
  auto a = ExpandDriveArgs({"/a", "/b", "/c"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (V{"/a", "/b", "/c"}));
  auto b = ExpandDriveArgs({"/d{1...8}"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 8u);
}

TEST(DriveArgs, RefusesPoolsHostsDuplicates) {
  auto pools = ExpandDriveArgs({"/a{1...4}", "/b{1...4}"});
  ASSERT_FALSE(pools.ok());
  EXPECT_NE(pools.error().message.find("pools"), std::string::npos);
  auto mixed = ExpandDriveArgs({"/a{1...4}", "/b"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("pools"), std::string::npos);
  auto host = ExpandDriveArgs({"http://node{1...4}:9000/mnt/d{1...4}"});
  ASSERT_TRUE(host.ok()) << host.error().message;
  ASSERT_EQ(host->size(), 16u);
  EXPECT_EQ((*host)[0], "http://node1:9000/mnt/d1");
  EXPECT_EQ((*host)[15], "http://node4:9000/mnt/d4");
  auto mixed_urls = ExpandDriveArgs({"http://a:9000/d1", "/d2"});
  ASSERT_FALSE(mixed_urls.ok());
  EXPECT_NE(mixed_urls.error().message.find("cannot be mixed"), std::string::npos);
  auto dup = ExpandDriveArgs({"/a", "/b/", "/a/./"});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("more than once"), std::string::npos);
}

TEST(DriveArgs, ServerConfigExpandsArgsAndMinioVolumes) {
  auto cfg = ParseServerConfig({"/mnt/disk{1...4}"}, {});
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->drives.size(), 4u);
  auto env = ParseServerConfig({}, {{"MINIO_VOLUMES", "/mnt/d{01...16}"}});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->drives.size(), 16u);
  EXPECT_EQ(env->drives[0], "/mnt/d01");
  EXPECT_FALSE(ParseServerConfig({"/a", "/a"}, {}).ok());
  auto dist = ParseServerConfig({}, {{"MINIO_VOLUMES", "http://h{1...4}:9000/d"}});
  ASSERT_TRUE(dist.ok()) << dist.error().message;
  EXPECT_TRUE(dist->distributed);
  EXPECT_FALSE(ParseServerConfig({}, {{"MINIO_PEER_WAIT", "soon"},
                                      {"MINIO_VOLUMES", "http://h{1...4}:9000/d"}})
                   .ok());
}

TEST(Ellipsis, TwoDotsPointAtTheEllipsis) {
  // Shell brace syntax would otherwise be one literal drive named "data{1..4}".
  auto r = ExpandEllipses("/data{1..4}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/data{1...4}"), std::string::npos) << r.error().message;
  r = ExpandEllipses("/n{a..c}/d{1...2}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/n{a...c}/d{1...2}"), std::string::npos) << r.error().message;
  EXPECT_EQ(Expand("/da{ta}"), (V{"/da{ta}"}));  // other braces stay literal
}

}  // namespace
}  // namespace rdmastor::cli
