#include "s3/names.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmastor::s3 {
namespace {

TEST(NamesTest, ValidBucketNames) {
  for (const char* n : {"abc", "my-bucket", "my.bucket", "b10", "1bucket", "a-b.c-d", "123",
                        "bucket.1.2.3", "1.2.3", "1.2.3.4.5", "xn--bucket", "a.b-c.d"}) {
    EXPECT_TRUE(IsValidBucketName(n)) << n;
  }
  EXPECT_TRUE(IsValidBucketName(std::string(63, 'a')));
  EXPECT_TRUE(IsValidBucketName("abc"));
}

TEST(NamesTest, BucketLength) {
  EXPECT_FALSE(IsValidBucketName(""));
  EXPECT_FALSE(IsValidBucketName("a"));
  EXPECT_FALSE(IsValidBucketName("ab"));
  EXPECT_FALSE(IsValidBucketName(std::string(64, 'a')));
}

TEST(NamesTest, BucketCharacters) {
  EXPECT_FALSE(IsValidBucketName("MyBucket"));
  EXPECT_FALSE(IsValidBucketName("my_bucket"));
  EXPECT_FALSE(IsValidBucketName("my bucket"));
  EXPECT_FALSE(IsValidBucketName("my/bucket"));
  EXPECT_FALSE(IsValidBucketName("bucket!"));
  EXPECT_FALSE(IsValidBucketName(std::string("buc\0ket", 7)));
  EXPECT_FALSE(IsValidBucketName("b\xc3\xa4r"));
}

TEST(NamesTest, BucketEdges) {
  EXPECT_FALSE(IsValidBucketName("-bucket"));
  EXPECT_FALSE(IsValidBucketName("bucket-"));
  EXPECT_FALSE(IsValidBucketName(".bucket"));
  EXPECT_FALSE(IsValidBucketName("bucket."));
}

TEST(NamesTest, BucketAdjacentPunctuation) {
  EXPECT_FALSE(IsValidBucketName("my..bucket"));
  EXPECT_FALSE(IsValidBucketName("my.-bucket"));
  EXPECT_FALSE(IsValidBucketName("my-.bucket"));
  EXPECT_TRUE(IsValidBucketName("my--bucket"));  // allowed by S3
}

TEST(NamesTest, BucketIpv4Like) {
  EXPECT_FALSE(IsValidBucketName("192.168.5.4"));
  EXPECT_FALSE(IsValidBucketName("1.1.1.1"));
  EXPECT_FALSE(IsValidBucketName("999.999.999.999"));
  EXPECT_TRUE(IsValidBucketName("192.168.5.4a"));
  EXPECT_TRUE(IsValidBucketName("192.168.5"));
  EXPECT_TRUE(IsValidBucketName("192.168.5.4.1"));
  EXPECT_TRUE(IsValidBucketName("1234.1.1.1"));
}

void ExpectKeyOk(std::string_view key) { EXPECT_TRUE(ValidateObjectKey(key).ok()) << key; }
void ExpectKeyBad(std::string_view key, ErrorCode code = ErrorCode::kInvalidObjectName) {
  auto s = ValidateObjectKey(key);
  ASSERT_FALSE(s.ok()) << key;
  EXPECT_EQ(s.error().code, code) << key;
}

TEST(NamesTest, ValidKeys) {
  ExpectKeyOk("a");
  ExpectKeyOk("photos/2024/cat.jpg");
  ExpectKeyOk("dir/");    // folder marker
  ExpectKeyOk("a/b/c/");  // nested folder marker
  ExpectKeyOk("a b+c%20d&e=f?g#h");
  ExpectKeyOk("...");  // not a dot segment
  ExpectKeyOk("a/.../b");
  ExpectKeyOk(".hidden");
  ExpectKeyOk("a/..b/c.");
  ExpectKeyOk("back\\slash");
  ExpectKeyOk("tab\there\nnewline");
  ExpectKeyOk("rdmastor.x");
  ExpectKeyOk("a/.rdmastor");  // only the full ".rdmastor." prefix is reserved
  ExpectKeyOk("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/\xf0\x9f\x98\x80.txt");  // 日本語/😀.txt
  ExpectKeyOk("caf\xc3\xa9");
  ExpectKeyOk(std::string(1024, 'k'));
}

TEST(NamesTest, KeyLength) {
  ExpectKeyBad("");
  ExpectKeyBad(std::string(1025, 'k'), ErrorCode::kKeyTooLong);
  // 1024 bytes of multi-byte characters is fine; one more byte is not.
  std::string euro;
  for (int i = 0; i < 341; ++i) euro += "\xe2\x82\xac";  // 1023 bytes
  ExpectKeyOk(euro + "a");
  ExpectKeyBad(euro + "ab", ErrorCode::kKeyTooLong);
}

TEST(NamesTest, KeyTraversal) {
  ExpectKeyBad("..");
  ExpectKeyBad(".");
  ExpectKeyBad("../a");
  ExpectKeyBad("./a");
  ExpectKeyBad("a/../b");
  ExpectKeyBad("a/./b");
  ExpectKeyBad("a/..");
  ExpectKeyBad("a/.");
  ExpectKeyBad("a/../");
  ExpectKeyBad("../../../etc/passwd");
}

TEST(NamesTest, KeySlashes) {
  ExpectKeyBad("/a");
  ExpectKeyBad("/");
  ExpectKeyBad("a//b");
  ExpectKeyBad("a//");
  ExpectKeyBad("//");
}

TEST(NamesTest, KeyBytes) {
  ExpectKeyBad(std::string("a\0b", 3));
  ExpectKeyBad(std::string("\0", 1));
  ExpectKeyBad("\xff");
  ExpectKeyBad("a\x80");             // lone continuation byte
  ExpectKeyBad("\xc3");              // truncated sequence
  ExpectKeyBad("\xc0\xaf");          // overlong '/'
  ExpectKeyBad("\xe0\x80\xaf");      // overlong '/'
  ExpectKeyBad("\xed\xa0\x80");      // UTF-16 surrogate
  ExpectKeyBad("\xf4\x90\x80\x80");  // above U+10FFFF
  ExpectKeyBad("\xf8\x88\x80\x80\x80");
  ExpectKeyOk("\xf4\x8f\xbf\xbf");  // U+10FFFF itself
}

TEST(NamesTest, KeyReservedSegment) {
  ExpectKeyBad(".rdmastor.meta");
  ExpectKeyBad("a/.rdmastor.tmp/b");
  ExpectKeyBad("a/.rdmastor.");
  ExpectKeyBad(".rdmastor./");
}

}  // namespace
}  // namespace rdmastor::s3
