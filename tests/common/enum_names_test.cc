#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace rdmastor {
namespace {

enum class Color { kRed, kGreen, kBlue, kUnnamed };
constexpr EnumNames<Color> kColors[] = {{"red", Color::kRed},
                                        {"green", Color::kGreen},
                                        {"blue", Color::kBlue},
                                        {"grün", Color::kGreen}};

TEST(EnumNames, BothWays) {
  EXPECT_EQ(NameOf(kColors, Color::kRed), "red");
  EXPECT_EQ(NameOf(kColors, Color::kGreen), "green");  // the first entry of a value names it
  EXPECT_EQ(NameOf(kColors, Color::kUnnamed), "");
  EXPECT_EQ(NameOf(kColors, Color::kUnnamed, "none"), "none");
  EXPECT_EQ(ValueOf(kColors, "blue"), Color::kBlue);
  EXPECT_EQ(ValueOf(kColors, "grün"), Color::kGreen);  // aliases parse
  EXPECT_EQ(ValueOf(kColors, "Blue"), std::nullopt);   // exactly as written
  EXPECT_EQ(ValueOf(kColors, ""), std::nullopt);
  static_assert(NameOf(kColors, Color::kBlue) == "blue");
}

}  // namespace
}  // namespace rdmastor
