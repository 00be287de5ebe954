#include "common/uri.h"

#include <gtest/gtest.h>

namespace rdmastor::uri {
namespace {

TEST(UriTest, DecodeEscapes) {
  EXPECT_EQ(Decode("a%20b%2Fc%2f"), "a b/c/");
  EXPECT_EQ(Decode("%E2%82%AC"), "\xe2\x82\xac");
  EXPECT_EQ(Decode("%00"), std::string(1, '\0'));
  EXPECT_EQ(Decode(""), "");
  EXPECT_EQ(Decode("a+b"), "a+b");
  EXPECT_EQ(Decode("a+b", /*plus_as_space=*/true), "a b");
  EXPECT_EQ(Decode("%2B", /*plus_as_space=*/true), "+");
}

TEST(UriTest, DecodeRejectsMalformedEscapes) {
  for (const char* bad : {"%", "%2", "a%g0", "%0g", "abc%", "%%"}) {
    EXPECT_FALSE(Decode(bad).has_value()) << bad;
  }
}

TEST(UriTest, EncodeSigV4) {
  EXPECT_EQ(Encode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(Encode("a b+c*d"), "a%20b%2Bc%2Ad");
  EXPECT_EQ(Encode("test$file.text"), "test%24file.text");
  EXPECT_EQ(Encode("a/b"), "a%2Fb");
  EXPECT_EQ(Encode("/a/b c", /*encode_slash=*/false), "/a/b%20c");
  EXPECT_EQ(Encode("\xe2\x82\xac="), "%E2%82%AC%3D");
  EXPECT_EQ(Encode(std::string(1, '\0')), "%00");
}

TEST(UriTest, EncodeDecodeRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(Decode(Encode(all)), all);
  EXPECT_EQ(Decode(Encode(all, false)), all);
}

TEST(UriTest, ParseQuery) {
  auto q = ParseQuery("a=1&b&c=%20&d=x%3Dy&e=&prefix=a+b");
  ASSERT_TRUE(q.has_value());
  std::vector<std::pair<std::string, std::string>> want = {
      {"a", "1"}, {"b", ""}, {"c", " "}, {"d", "x=y"}, {"e", ""}, {"prefix", "a b"}};
  EXPECT_EQ(*q, want);

  auto dup = ParseQuery("x=2&x=1&&");
  ASSERT_TRUE(dup.has_value());
  want = {{"x", "2"}, {"x", "1"}};
  EXPECT_EQ(*dup, want);

  auto empty = ParseQuery("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());

  auto eq_in_value = ParseQuery("k=a=b");
  ASSERT_TRUE(eq_in_value.has_value());
  want = {{"k", "a=b"}};
  EXPECT_EQ(*eq_in_value, want);

  EXPECT_FALSE(ParseQuery("a=%zz").has_value());
  EXPECT_FALSE(ParseQuery("%=1").has_value());
}

}  // namespace
}  // namespace rdmastor::uri
