#include "storage/paths.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmastor::storage::paths {
namespace {

TEST(PathsTest, MapsKeysToDirectories) {
  auto a = MapKey("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rel_dir, "a");
  EXPECT_FALSE(a->dir_key);
  EXPECT_EQ(a->meta_name, kMetaFile);
  EXPECT_EQ(a->data_prefix, kDataPrefix);

  auto dir = MapKey("a/");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->rel_dir, "a");
  EXPECT_TRUE(dir->dir_key);
  EXPECT_EQ(dir->meta_name, kDirMetaFile);
  EXPECT_EQ(dir->data_prefix, kDirDataPrefix);

  auto deep = MapKey("x/y z/.hidden/\xc3\xa9");
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->rel_dir, "x/y z/.hidden/\xc3\xa9");
  EXPECT_TRUE(MapKey(".rdmastor").ok());  // only the dotted prefix is reserved
  EXPECT_TRUE(MapKey("a/...").ok());
}

TEST(PathsTest, RejectsKeysThatCouldEscape) {
  for (const std::string& key :
       std::vector<std::string>{"", "/", "/etc/passwd", "..", ".", "../x", "a/../../x", "a/./b",
                                "a//b", "a/..", "//", "a/b//", ".rdmastor.sys", "a/.rdmastor.meta",
                                ".rdmastor.data.x/part.1", "a/.rdmastor.dirmeta/"}) {
    auto r = MapKey(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidObjectName) << key;
  }
  auto nul = MapKey(std::string("a\0b", 3));
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.error().code, ErrorCode::kInvalidObjectName);
}

TEST(PathsTest, LengthLimits) {
  EXPECT_TRUE(MapKey(std::string(255, 'k')).ok());
  auto seg = MapKey("a/" + std::string(256, 'k'));
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.error().code, ErrorCode::kKeyTooLong);

  std::string key;
  while (key.size() < 1024) key += "abcdefg/";
  key.resize(1024);
  if (key.back() == '/') key.back() = 'x';
  EXPECT_TRUE(MapKey(key).ok());
  auto too_long = MapKey(key + "x");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code, ErrorCode::kKeyTooLong);
}

TEST(PathsTest, BucketNames) {
  for (const std::string& ok :
       std::vector<std::string>{"abc", "my-bucket", "a.b.c", "0bucket9", std::string(63, 'b')}) {
    EXPECT_TRUE(ValidateBucketName(ok).ok()) << ok;
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "ab", "..", "...", ".rdmastor.sys", "a/b", "../etc", "Upper", "lost+found", "-abc",
           "abc-", std::string(64, 'b'), std::string("ab\0c", 4)}) {
    auto st = ValidateBucketName(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidBucketName) << bad;
  }
}

TEST(PathsTest, InternalNames) {
  EXPECT_TRUE(IsInternalName(".rdmastor.meta"));
  EXPECT_TRUE(IsInternalName(".rdmastor.sys"));
  EXPECT_FALSE(IsInternalName(".rdmastor"));
  EXPECT_FALSE(IsInternalName("rdmastor.meta"));
  EXPECT_EQ(BucketDir("/d", "b"), "/d/b");
  EXPECT_EQ(TmpDir("/d"), "/d/.rdmastor.sys/tmp");
  EXPECT_EQ(MultipartBucketDir("/d", "b"), "/d/.rdmastor.sys/multipart/b");
  EXPECT_EQ(BucketMetaFile("/d", "b"), "/d/.rdmastor.sys/buckets/b.json");
}

// The names a commit may act on (a peer's commit plan carries them over the wire).
TEST(PathsTest, CommitNames) {
  EXPECT_TRUE(IsMetaFileName(".rdmastor.meta"));
  EXPECT_TRUE(IsMetaFileName(".rdmastor.dirmeta"));
  EXPECT_TRUE(IsDataDirName(".rdmastor.data.0123456789abcdef0123456789abcdef"));
  EXPECT_TRUE(IsDataDirName(".rdmastor.dirdata.ab12"));
  EXPECT_TRUE(IsDataDirName(".rdmastor.data." + std::string(64, 'f')));
  for (std::string bad : {"", ".", "..", "a", "../x", "meta", ".rdmastor.meta/..", "/x"}) {
    EXPECT_FALSE(IsMetaFileName(bad)) << bad;
    EXPECT_FALSE(IsDataDirName(bad)) << bad;
  }
  for (const std::string& bad : std::vector<std::string>{
           ".rdmastor.data.", ".rdmastor.data./x", ".rdmastor.data.a/../../../../etc",
           ".rdmastor.data..", ".rdmastor.data.a b", std::string(".rdmastor.data.a\0b", 18),
           ".rdmastor.data." + std::string(65, 'f'), ".rdmastor.meta", "victim", "../../dev/shm/x",
           ".rdmastor.datax"}) {
    EXPECT_FALSE(IsDataDirName(bad)) << bad;
  }
}

}  // namespace
}  // namespace rdmastor::storage::paths
