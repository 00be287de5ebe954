// Every value of the data plane's enums has its own name (common/enum_names.h tables: a value
// left out of its table would read as the fallback).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rdma/fabric.h"
#include "rdma/settings.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {
namespace {

TEST(EnumNamesTest, WcStatusFabricKindAndHealth) {
  std::set<std::string> seen;
  for (int s = 0; s <= static_cast<int>(WcStatus::kGeneralError); ++s) {
    std::string name(WcStatusName(static_cast<WcStatus>(s)));
    EXPECT_NE(name, "unknown") << s;
    EXPECT_TRUE(seen.insert(name).second) << name;
  }
  EXPECT_EQ(WcStatusName(WcStatus::kRemoteAccessError), "remote access error");
  EXPECT_EQ(FabricName(FabricKind::kOff), "off");
  EXPECT_EQ(FabricName(FabricKind::kVerbs), "verbs");
  EXPECT_EQ(FabricName(FabricKind::kSoft), "soft");
  EXPECT_EQ(FabricHealthName(FabricHealth::kReady), "ready");
  EXPECT_EQ(FabricHealthName(FabricHealth::kDown), "down");
}

}  // namespace
}  // namespace rdmastor::rdma
