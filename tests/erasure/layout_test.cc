#include "erasure/layout.h"

#include <gtest/gtest.h>

namespace rdmastor::erasure {
namespace {

TEST(Layout, SetSizesAsMinio) {
  struct Case {
    int drives, sets, size, parity;
  } cases[] = {{2, 1, 2, 1},   {3, 1, 3, 1},   {4, 1, 4, 2},   {5, 1, 5, 2},  {6, 1, 6, 3},
               {7, 1, 7, 3},   {8, 1, 8, 4},   {16, 1, 16, 4}, {18, 2, 9, 4}, {24, 2, 12, 4},
               {32, 2, 16, 4}, {48, 3, 16, 4}, {20, 2, 10, 4}};
  for (const auto& c : cases) {
    auto l = PlanLayout(c.drives, "");
    ASSERT_TRUE(l.ok()) << c.drives;
    EXPECT_EQ(l->set_count, c.sets) << c.drives;
    EXPECT_EQ(l->set_size, c.size) << c.drives;
    EXPECT_EQ(l->parity, c.parity) << c.drives;
  }
  for (int bad : {0, 17, 19, 23, 37}) EXPECT_FALSE(PlanLayout(bad, "").ok()) << bad;
}

TEST(Layout, OneDriveIsASetWithoutParity) {
  auto l = PlanLayout(1, "");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->set_count, 1);
  EXPECT_EQ(l->set_size, 1);
  EXPECT_EQ(l->parity, 0);
  EXPECT_EQ(ReadQuorum(l->data(), l->parity), 1);
  EXPECT_EQ(WriteQuorum(l->data(), l->parity), 1);
  EXPECT_TRUE(PlanLayout(1, "EC:0").ok());
  auto bad = PlanLayout(1, "EC:1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_STORAGE_CLASS_STANDARD"), std::string::npos);
}

TEST(Layout, StorageClassOverride) {
  auto l = PlanLayout(8, "EC:2");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->parity, 2);
  EXPECT_EQ(l->data(), 6);
  EXPECT_TRUE(PlanLayout(4, "EC:1").ok());
  for (const char* bad : {"EC:0", "EC:3", "EC:", "EC:x", "ec:2", "RRS", "EC:2x", "EC:-1"}) {
    auto r = PlanLayout(4, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("MINIO_STORAGE_CLASS_STANDARD"), std::string::npos);
  }
}

TEST(Layout, Quorums) {
  EXPECT_EQ(WriteQuorum(2, 2), 3);
  EXPECT_EQ(WriteQuorum(4, 2), 4);
  EXPECT_EQ(ReadQuorum(2, 2), 2);
  EXPECT_EQ(WriteQuorum(1, 1), 2);
}

}  // namespace
}  // namespace rdmastor::erasure
