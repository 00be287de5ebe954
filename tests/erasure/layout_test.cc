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
    auto l = PlanLayout(c.drives);
    ASSERT_TRUE(l.ok()) << c.drives;
    EXPECT_EQ(l->set_count, c.sets) << c.drives;
    EXPECT_EQ(l->set_size, c.size) << c.drives;
    EXPECT_EQ(l->parity, c.parity) << c.drives;
  }
  for (int bad : {0, 17, 19, 23, 37}) EXPECT_FALSE(PlanLayout(bad).ok()) << bad;
}

TEST(Layout, OneDriveIsASetWithoutParity) {
  auto l = PlanLayout(1);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->set_count, 1);
  EXPECT_EQ(l->set_size, 1);
  EXPECT_EQ(l->parity, 0);
  EXPECT_EQ(ReadQuorum(l->data(), l->parity), 1);
  EXPECT_EQ(WriteQuorum(l->data(), l->parity), 1);
  EXPECT_EQ(l->rrs_parity, 0);
  EXPECT_TRUE(PlanLayout(1, {"EC:0", "EC:0"}).ok());
  auto bad = PlanLayout(1, {"EC:1", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_STORAGE_CLASS_STANDARD"), std::string::npos);
  bad = PlanLayout(1, {"", "EC:1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_STORAGE_CLASS_RRS"), std::string::npos);
}

TEST(Layout, StorageClassOverride) {
  auto l = PlanLayout(8, {"EC:2", ""});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->parity, 2);
  EXPECT_EQ(l->data(), 6);
  EXPECT_EQ(l->rrs_parity, 1);
  EXPECT_TRUE(PlanLayout(4, {"EC:1", ""}).ok());
  // EC:0 (no parity) is accepted as MinIO accepts it; the RRS default follows it down.
  l = PlanLayout(4, {"EC:0", ""});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->parity, 0);
  EXPECT_EQ(l->rrs_parity, 0);
  for (const char* bad :
       {"EC:3", "EC:", "EC:x", "ec:2", "RRS", "EC:2x", "EC:-1", "EC:1:2", "EC: 1", "EC:+1"}) {
    auto r = PlanLayout(4, {bad, ""});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("MINIO_STORAGE_CLASS_STANDARD"), std::string::npos);
    EXPECT_NE(r.error().message.find("0 <= N <= 2"), std::string::npos) << r.error().message;
    r = PlanLayout(4, {"", bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("MINIO_STORAGE_CLASS_RRS"), std::string::npos);
  }
}

TEST(Layout, ReducedRedundancyParity) {
  struct Case {
    int drives;
    const char *standard, *rrs;
    int parity, rrs_parity;
  } cases[] = {{4, "", "", 2, 1},         {8, "", "", 4, 1},        {16, "", "", 4, 1},
               {2, "", "", 1, 1},         {4, "", "EC:2", 2, 2},    {4, "", "EC:0", 2, 0},
               {8, "EC:3", "EC:2", 3, 2}, {16, "EC:8", "EC:8", 8, 8}};
  for (const auto& c : cases) {
    auto l = PlanLayout(c.drives, {c.standard, c.rrs});
    ASSERT_TRUE(l.ok()) << c.drives << " " << c.standard << " " << c.rrs;
    EXPECT_EQ(l->parity, c.parity);
    EXPECT_EQ(l->rrs_parity, c.rrs_parity);
    EXPECT_EQ(l->ParityFor(""), c.parity);
    EXPECT_EQ(l->ParityFor("REDUCED_REDUNDANCY"), c.rrs_parity);
  }
  // More reduced-redundancy parity than standard is refused, naming both settings.
  auto r = PlanLayout(8, {"EC:2", "EC:3"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("MINIO_STORAGE_CLASS_RRS='EC:3'"), std::string::npos);
  EXPECT_NE(r.error().message.find("MINIO_STORAGE_CLASS_STANDARD"), std::string::npos);
  EXPECT_FALSE(PlanLayout(4, {"EC:1", ""}).ok() && PlanLayout(4, {"EC:1", "EC:2"}).ok());
  EXPECT_FALSE(PlanLayout(4, {"", "EC:3"}).ok());  // above set size / 2
}

TEST(Layout, Quorums) {
  EXPECT_EQ(WriteQuorum(2, 2), 3);
  EXPECT_EQ(WriteQuorum(4, 2), 4);
  EXPECT_EQ(ReadQuorum(2, 2), 2);
  EXPECT_EQ(WriteQuorum(1, 1), 2);
}

}  // namespace
}  // namespace rdmastor::erasure
