// The metadata file cache (storage/meta_cache.h) and LocalDrive's use of it, on real files.
#include "storage/meta_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/local_drive.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using testing::TempDir;

void Write(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary) << data;
  ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0);  // replaced as the store replaces them
}

std::string ReadOk(MetaFileCache& c, const std::string& root, const std::string& rel) {
  auto r = c.Read(rel, root + "/" + rel);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.ok() && r->has_value()) << rel;
  return r.ok() && r->has_value() ? **r : std::string();
}

TEST(MetaFileCache, SecondReadIsAHitAndAChangeIsSeen) {
  TempDir dir;
  MetaFileCache c(1 << 20);
  const std::string rel = "b/k/.rdmastor.meta";
  Write(dir.path() + "/" + rel, "one");
  EXPECT_EQ(ReadOk(c, dir.path(), rel), "one");
  EXPECT_EQ(ReadOk(c, dir.path(), rel), "one");
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 1u);
  // Replaced with no invalidation (behind the cache's back): a new inode, so a miss.
  Write(dir.path() + "/" + rel, "two");
  EXPECT_EQ(ReadOk(c, dir.path(), rel), "two");
  EXPECT_EQ(c.stats().misses, 2u);
  // Replaced and invalidated, same size, many times (inode numbers are reused): always fresh.
  for (int i = 0; i < 50; ++i) {
    const std::string v = "v" + std::to_string(100 + i);
    Write(dir.path() + "/" + rel, v);
    c.Invalidate(rel);
    EXPECT_EQ(ReadOk(c, dir.path(), rel), v);
    EXPECT_EQ(ReadOk(c, dir.path(), rel), v);
  }
  // Gone: absent, not the cached bytes.
  ASSERT_EQ(::unlink((dir.path() + "/" + rel).c_str()), 0);
  auto r = c.Read(rel, dir.path() + "/" + rel);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(MetaFileCache, InvalidateBelowTakesTheTreeOnly) {
  TempDir dir;
  MetaFileCache c(1 << 20);
  for (const char* rel : {"a/.rdmastor.meta", "a/x/.rdmastor.meta", "a-b/.rdmastor.meta"}) {
    Write(dir.path() + "/" + rel, rel);
    ReadOk(c, dir.path(), rel);
  }
  EXPECT_EQ(c.stats().entries, 3u);
  c.InvalidateBelow("a");
  EXPECT_EQ(c.stats().entries, 1u);  // a-b/ stays
  ReadOk(c, dir.path(), "a-b/.rdmastor.meta");
  EXPECT_EQ(c.stats().hits, 1u);
  // A "." segment names the same files: such a path clears everything.
  ReadOk(c, dir.path(), "a/x/.rdmastor.meta");
  c.InvalidateBelow("a/./x");
  EXPECT_EQ(c.stats().entries, 0u);
  // ... and is never cached itself.
  ReadOk(c, dir.path(), "a/./x/.rdmastor.meta");
  EXPECT_EQ(c.stats().entries, 0u);
}

TEST(MetaFileCache, StaysWithinItsBudget) {
  TempDir dir;
  MetaFileCache c(10'000);
  const std::string data(1000, 'x');
  for (int i = 0; i < 40; ++i) {
    const std::string rel = "b/k" + std::to_string(i) + "/.rdmastor.meta";
    Write(dir.path() + "/" + rel, data);
    EXPECT_EQ(ReadOk(c, dir.path(), rel), data);
  }
  EXPECT_LE(c.stats().bytes, 10'000u);
  EXPECT_GE(c.stats().entries, 5u);
  // The most recently read stays.
  ReadOk(c, dir.path(), "b/k39/.rdmastor.meta");
  EXPECT_EQ(c.stats().hits, 1u);
  // Off: never holds anything.
  MetaFileCache off(0);
  EXPECT_EQ(ReadOk(off, dir.path(), "b/k39/.rdmastor.meta"), data);
  EXPECT_EQ(off.stats().entries, 0u);
}

// LocalDrive invalidates on every changing call, so a write through the drive is seen at once
// even where the file's identity could repeat.
TEST(MetaFileCache, LocalDriveCallsInvalidate) {
  TempDir dir;
  LocalDrive d(dir.path(), 1 << 20);
  const std::string rel = "bkt/k/.rdmastor.meta";
  RS_ASSERT_OK(d.MakeDirAll("", "bkt/k"));
  RS_ASSERT_OK(d.WriteFile(rel, "one"));
  ASSERT_EQ(**d.ReadFile(rel), "one");
  ASSERT_EQ(**d.ReadFile(rel), "one");
  EXPECT_EQ(d.meta_cache_stats().hits, 1u);
  RS_ASSERT_OK(d.WriteFile(rel, "two"));  // rewritten in place: same inode
  EXPECT_EQ(d.meta_cache_stats().entries, 0u);
  EXPECT_EQ(**d.ReadFile(rel), "two");
  RS_ASSERT_OK(d.WriteFile("bkt/k/other", "x"));
  RS_ASSERT_OK(d.Rename("bkt/k/other", rel));
  EXPECT_EQ(**d.ReadFile(rel), "x");
  RS_ASSERT_OK(d.Unlink(rel));
  EXPECT_FALSE(d.ReadFile(rel)->has_value());
  RS_ASSERT_OK(d.WriteFile(rel, "three"));
  ASSERT_EQ(**d.ReadFile(rel), "three");
  RS_ASSERT_OK(d.RemoveAll("bkt/k"));
  EXPECT_EQ(d.meta_cache_stats().entries, 0u);
  EXPECT_FALSE(d.ReadFile(rel)->has_value());
  // Other files are not cached.
  RS_ASSERT_OK(d.MakeDirAll("", "bkt/k"));
  RS_ASSERT_OK(d.WriteFile("bkt/k/part.json", "p"));
  ASSERT_EQ(**d.ReadFile("bkt/k/part.json"), "p");
  EXPECT_EQ(d.meta_cache_stats().entries, 0u);
}

}  // namespace
}  // namespace rdmastor::storage
