// Lifecycle rules (s3/lifecycle.h, s3/xml.h): the document both ways and what a rule takes.
#include "s3/lifecycle.h"

#include <gtest/gtest.h>

namespace rdmastor::s3 {
namespace {

constexpr int64_t kDay = 86'400'000;

std::string Doc(const std::string& rules) {
  return "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" + rules +
         "</LifecycleConfiguration>";
}

ErrorCode CodeOf(const std::string& rules) {
  auto r = ParseLifecycleXml(Doc(rules));
  return r.ok() ? ErrorCode::kInternalError : r.error().code;
}

TEST(LifecycleTest, DocumentRoundTrip) {
  const std::string rules =
      "<Rule><ID>a</ID><Prefix>logs/</Prefix><Status>Enabled</Status>"
      "<Expiration><Days>3</Days></Expiration>"
      "<AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation>"
      "</AbortIncompleteMultipartUpload></Rule>"
      "<Rule><ID>b</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
      "<ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></And></Filter><Status>Disabled</Status>"
      "<Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration>"
      "<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays>"
      "<NewerNoncurrentVersions>5</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>"
      "<Rule><Filter/><Status>Enabled</Status>"
      "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>";
  auto parsed = ParseLifecycleXml(Doc(rules));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 3u);
  const auto& a = (*parsed)[0];
  EXPECT_EQ(a.form, LifecycleRule::Form::kPrefix);
  EXPECT_EQ(a.prefix, "logs/");
  EXPECT_EQ(a.days, 3);
  EXPECT_EQ(a.abort_days, 7);
  const auto& b = (*parsed)[1];
  EXPECT_EQ(b.form, LifecycleRule::Form::kAnd);
  EXPECT_FALSE(b.enabled);
  EXPECT_EQ(b.date_ms, 1893456000000LL);
  EXPECT_EQ(b.newer_noncurrent, 5);
  EXPECT_FALSE(b.abort_days);
  EXPECT_EQ(b.tags, (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
  EXPECT_EQ((*parsed)[2].id.size(), 32u);  // generated
  EXPECT_FALSE((*parsed)[2].prefix);
  // What is written reads back the same.
  auto again = ParseLifecycleXml(LifecycleXml(*parsed));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(LifecycleXml(*again), LifecycleXml(*parsed));
}

TEST(LifecycleTest, ErrorsAsAws) {
  const std::string exp = "<Expiration><Days>1</Days></Expiration>";
  const std::string ok = "<Filter/><Status>Enabled</Status>" + exp;
  EXPECT_EQ(CodeOf(""), ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule>" + ok + "<Bogus/></Rule>"), ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><ID>" + std::string(256, 'a') + "</ID>" + ok + "</Rule>"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("<Rule><ID>x</ID>" + ok + "</Rule><Rule><ID>x</ID>" + ok + "</Rule>"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>enabled</Status>" + exp + "</Rule>"),
            ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><Status>Enabled</Status>" + exp + "</Rule>"), ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><Prefix/><Filter/><Status>Enabled</Status>" + exp + "</Rule>"),
            ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><Filter><Prefix/><ObjectSizeLessThan>3</ObjectSizeLessThan></Filter>"
                   "<Status>Enabled</Status>" + exp + "</Rule>"),
            ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status><Expiration><Days>0</Days>"
                   "</Expiration></Rule>"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status><Expiration>"
                   "<Date>2030-01-01T00:00:01Z</Date></Expiration></Rule>"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status><Expiration>"
                   "<Date>20200101</Date></Expiration></Rule>"),
            ErrorCode::kMalformedXML);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status></Rule>"), ErrorCode::kInvalidRequest);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status><Transition><Days>1</Days>"
                   "<StorageClass>GLACIER</StorageClass></Transition></Rule>"),
            ErrorCode::kNotImplemented);
  EXPECT_EQ(CodeOf("<Rule><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>"
                   "<NewerNoncurrentVersions>1</NewerNoncurrentVersions>"
                   "</NoncurrentVersionExpiration></Rule>"),
            ErrorCode::kMalformedXML);  // NoncurrentDays is required
  std::string many;
  for (int i = 0; i <= 1000; ++i) many += "<Rule>" + ok + "</Rule>";
  EXPECT_EQ(CodeOf(many), ErrorCode::kMalformedXML);
}

TEST(LifecycleTest, FilterAndDue) {
  LifecycleRule r;
  r.prefix = "a/";
  r.tags = {{"k", "v w"}};
  r.size_gt = 10;
  r.size_lt = 100;
  EXPECT_TRUE(LifecycleFilterMatches(r, "a/x", "k=v%20w&z=1", 50));
  EXPECT_FALSE(LifecycleFilterMatches(r, "b/x", "k=v%20w", 50));
  EXPECT_FALSE(LifecycleFilterMatches(r, "a/x", "k=v", 50));
  EXPECT_FALSE(LifecycleFilterMatches(r, "a/x", "k=v%20w", 10));
  EXPECT_FALSE(LifecycleFilterMatches(r, "a/x", "k=v%20w", 100));
  EXPECT_TRUE(LifecycleFilterMatches(LifecycleRule{}, "any", "", 0));
  // AWS: the object's time plus the days, rounded up to the next midnight UTC.
  EXPECT_EQ(LifecycleDue(10 * kDay + 1, 1, kDay), 12 * kDay);
  EXPECT_EQ(LifecycleDue(10 * kDay, 1, kDay), 11 * kDay);
  EXPECT_EQ(LifecycleDue(1500, 2, 1000), 4000);  // a test "day" of one second
}

}  // namespace
}  // namespace rdmastor::s3
