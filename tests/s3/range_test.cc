#include "s3/range.h"

#include <gtest/gtest.h>

namespace rdmastor::s3 {
namespace {

// Expects a satisfiable range [start, start+length).
void ExpectRange(std::string_view header, uint64_t size, uint64_t start, uint64_t length) {
  SCOPED_TRACE(std::string(header));
  auto r = ParseRange(header, size);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->start, start);
  EXPECT_EQ((*r)->length, length);
}

void ExpectIgnored(std::string_view header, uint64_t size) {
  SCOPED_TRACE(std::string(header));
  auto r = ParseRange(header, size);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

void ExpectUnsatisfiable(std::string_view header, uint64_t size) {
  SCOPED_TRACE(std::string(header));
  auto r = ParseRange(header, size);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidRange);
}

TEST(RangeTest, ClosedRange) {
  ExpectRange("bytes=0-0", 10, 0, 1);
  ExpectRange("bytes=0-9", 10, 0, 10);
  ExpectRange("bytes=2-5", 10, 2, 4);
  ExpectRange("bytes=9-9", 10, 9, 1);
}

TEST(RangeTest, EndBeyondSizeIsClamped) {
  ExpectRange("bytes=2-100", 10, 2, 8);
  ExpectRange("bytes=0-18446744073709551615", 10, 0, 10);
  ExpectRange("bytes=3-99999999999999999999999", 10, 3, 7);  // overflow saturates
}

TEST(RangeTest, OpenEnded) {
  ExpectRange("bytes=0-", 10, 0, 10);
  ExpectRange("bytes=7-", 10, 7, 3);
  ExpectRange("bytes=9-", 10, 9, 1);
}

TEST(RangeTest, Suffix) {
  ExpectRange("bytes=-1", 10, 9, 1);
  ExpectRange("bytes=-3", 10, 7, 3);
  ExpectRange("bytes=-10", 10, 0, 10);
  ExpectRange("bytes=-11", 10, 0, 10);  // longer than the object: whole object
  ExpectRange("bytes=-99999999999999999999999", 10, 0, 10);
}

TEST(RangeTest, LargeObject) {
  const uint64_t size = 5ULL << 40;  // 5 TiB
  ExpectRange("bytes=4398046511104-", size, 4398046511104ULL, size - 4398046511104ULL);
  ExpectRange("bytes=-4294967296", size, size - 4294967296ULL, 4294967296ULL);
}

TEST(RangeTest, CaseAndWhitespaceTolerated) {
  ExpectRange("Bytes=1-2", 10, 1, 2);
  ExpectRange("BYTES=1-2", 10, 1, 2);
  ExpectRange("  bytes=1-2  ", 10, 1, 2);
  ExpectRange("bytes= 1-2", 10, 1, 2);
}

TEST(RangeTest, SyntacticallyInvalidIsIgnored) {
  ExpectIgnored("", 10);
  ExpectIgnored("bytes", 10);
  ExpectIgnored("bytes=", 10);
  ExpectIgnored("bytes=-", 10);
  ExpectIgnored("bytes=abc", 10);
  ExpectIgnored("bytes=a-b", 10);
  ExpectIgnored("bytes=1-b", 10);
  ExpectIgnored("bytes=1", 10);
  ExpectIgnored("bytes=1-2-3", 10);
  ExpectIgnored("bytes=--1", 10);
  ExpectIgnored("bytes=+1-2", 10);
  ExpectIgnored("bytes=-+1", 10);
  ExpectIgnored("bytes=1.5-2", 10);
  ExpectIgnored("items=1-2", 10);
  ExpectIgnored("bytes 1-2", 10);
  ExpectIgnored("=1-2", 10);
}

TEST(RangeTest, ReversedRangeIsIgnored) {
  // RFC 9110: last-pos < first-pos makes the range-spec invalid, so the header is ignored.
  ExpectIgnored("bytes=5-2", 10);
  ExpectIgnored("bytes=5-2", 0);
  ExpectIgnored("bytes=20-15", 10);
}

TEST(RangeTest, MultiRangeIsIgnored) {
  ExpectIgnored("bytes=1-2,4-5", 10);
  ExpectIgnored("bytes=0-0,-1", 10);
  ExpectIgnored("bytes=1-2,", 10);
  ExpectIgnored("bytes=,1-2", 10);
}

TEST(RangeTest, Unsatisfiable) {
  ExpectUnsatisfiable("bytes=-0", 10);
  ExpectUnsatisfiable("bytes=10-", 10);
  ExpectUnsatisfiable("bytes=10-20", 10);
  ExpectUnsatisfiable("bytes=11-11", 10);
  ExpectUnsatisfiable("bytes=99999999999999999999999-", 10);
  ExpectUnsatisfiable("bytes=18446744073709551615-18446744073709551615", 10);
}

TEST(RangeTest, EmptyObjectHasNoSatisfiableRange) {
  ExpectUnsatisfiable("bytes=0-", 0);
  ExpectUnsatisfiable("bytes=0-0", 0);
  ExpectUnsatisfiable("bytes=0-100", 0);
  ExpectUnsatisfiable("bytes=-1", 0);
  ExpectUnsatisfiable("bytes=-0", 0);
  ExpectIgnored("bytes=abc", 0);  // still ignored: 200 with the empty body
}

TEST(RangeTest, MaxSizeObject) {
  const uint64_t max = UINT64_MAX;
  ExpectRange("bytes=0-", max, 0, max);
  ExpectRange("bytes=-5", max, max - 5, 5);
  ExpectRange("bytes=1-99999999999999999999999", max, 1, max - 1);
}

TEST(PartNumberRangeTest, SinglePartAndMultipart) {
  auto one = PartNumberRange("1", 10, 0, {});
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->start, 0u);
  EXPECT_EQ((*one)->length, 10u);
  auto empty = PartNumberRange("1", 0, 0, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
  auto third = PartNumberRange("0003", 12, 3, {5, 4, 3});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*third)->start, 9u);
  EXPECT_EQ((*third)->length, 3u);
  EXPECT_EQ(PartNumberRange("2", 10, 0, {}).error().code, ErrorCode::kInvalidPartNumber);
  EXPECT_EQ(PartNumberRange("4", 12, 3, {5, 4, 3}).error().code, ErrorCode::kInvalidPartNumber);
  for (const char* bad : {"", "0", "-1", "+1", " 1", "10001", "1e3", "99999999999999999999"})
    EXPECT_EQ(PartNumberRange(bad, 10, 0, {}).error().code, ErrorCode::kInvalidArgument) << bad;
}

TEST(PartNumberRangeTest, InconsistentMetadataIsAnErrorNotAnOutOfBoundsRead) {
  // More parts than sizes, or sizes beyond the object: metadata from a drive is not trusted.
  EXPECT_EQ(PartNumberRange("3", 12, 3, {5, 4}).error().code, ErrorCode::kInternalError);
  EXPECT_EQ(PartNumberRange("2", 8, 2, {5, 4}).error().code, ErrorCode::kInternalError);
  EXPECT_EQ(PartNumberRange("2", 8, 2, {UINT64_MAX, 4}).error().code, ErrorCode::kInternalError);
}

}  // namespace
}  // namespace rdmastor::s3
