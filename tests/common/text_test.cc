#include "common/text.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace rdmastor::text {
namespace {

TEST(Text, JsonEscape) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\x01\t\r"), "a\\\"b\\\\c\\nd\\u0001\\t\\r");
  EXPECT_EQ(JsonEscape("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
}

TEST(Text, ToLowerAsciiOnly) { EXPECT_EQ(ToLower("X-Amz-Date\xc3\x89"), "x-amz-date\xc3\x89"); }

TEST(Text, HexDigit) {
  const std::string digits = "0123456789abcdef";
  for (int v = 0; v < 16; ++v) {
    EXPECT_EQ(HexDigit(digits[v]), v);
    EXPECT_EQ(HexDigit(digits[v], /*lower_only=*/true), v);
  }
  EXPECT_EQ(HexDigit('A'), 10);
  EXPECT_EQ(HexDigit('F'), 15);
  EXPECT_EQ(HexDigit('A', /*lower_only=*/true), -1);
  for (char c : {'g', 'G', '/', ':', '@', '`', ' ', '\0', '\xff'}) EXPECT_EQ(HexDigit(c), -1) << c;
}

TEST(Clock, NowNsIsUnixNanoseconds) {
  // 2020-01-01 < now < 2200-01-01, in nanoseconds.
  EXPECT_GT(NowNs(), 1577836800LL * 1'000'000'000);
  EXPECT_LT(NowNs(), 7258118400LL * 1'000'000'000);
}

}  // namespace
}  // namespace rdmastor::text
