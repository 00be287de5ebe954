// Which memory may be registered for remote write (rdma/mapping.h, issue 12 item 2): the parser
// and the rule over made-up maps lines, then the live check over real mappings of this process.
#include "rdma/mapping.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <string>

namespace rdmastor::rdma {
namespace {

TEST(MappingTest, ParsesMapsLines) {
  auto m = ParseMapsLine(
      "7f3a00000000-7f3a00200000 rw-s 00000000 08:01 1234567                    /data/out.bin");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->start, 0x7f3a00000000u);
  EXPECT_EQ(m->end, 0x7f3a00200000u);
  EXPECT_TRUE(m->writable);
  EXPECT_TRUE(m->shared);
  EXPECT_EQ(m->inode, 1234567u);
  EXPECT_EQ(m->path, "/data/out.bin");
  auto anon = ParseMapsLine("55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(anon.has_value());
  EXPECT_FALSE(anon->shared);
  EXPECT_EQ(anon->inode, 0u);
  EXPECT_EQ(anon->path, "");
  EXPECT_FALSE(ParseMapsLine("").has_value());
  EXPECT_FALSE(ParseMapsLine("zz-10 rw-p 0 00:00 0").has_value());
  EXPECT_FALSE(ParseMapsLine("20-10 rw-p 0 00:00 0").has_value());
  EXPECT_FALSE(ParseMapsLine("10-20 rw 0 00:00 0").has_value());
  EXPECT_FALSE(ParseMapsLine("10-20 rw-p 0 00:00 x").has_value());
}

TEST(MappingTest, RefusesOnlySharedFileMappingsThatNeedDirtyTracking) {
  MappingFacts file{0x1000, 0x2000, true, true, 42, "/data/out.bin", 0xEF53 /* ext4 */};
  EXPECT_NE(WritablePinRefusal(file).find("/data/out.bin"), std::string::npos);
  MappingFacts priv = file;
  priv.shared = false;  // MAP_PRIVATE: the pin breaks copy-on-write, the file is never written
  EXPECT_EQ(WritablePinRefusal(priv), "");
  MappingFacts anon{0x1000, 0x2000, true, false, 0, "", 0};
  EXPECT_EQ(WritablePinRefusal(anon), "");
  MappingFacts shared_anon{0x1000, 0x2000, true, true, 99, "/dev/zero (deleted)", 0};
  EXPECT_EQ(WritablePinRefusal(shared_anon), "");
  MappingFacts shm = file;
  shm.path = "/dev/shm/buf";
  shm.fs_magic = 0x01021994;  // tmpfs
  EXPECT_EQ(WritablePinRefusal(shm), "");
  MappingFacts huge = file;
  huge.fs_magic = 0x958458f6;  // hugetlbfs
  EXPECT_EQ(WritablePinRefusal(huge), "");
  MappingFacts deleted = file;  // statfs failed (the file is gone): refused, not guessed
  deleted.path = "/data/out.bin (deleted)";
  deleted.fs_magic = 0;
  EXPECT_NE(WritablePinRefusal(deleted), "");
}

TEST(MappingTest, LiveMappingsOfThisProcess) {
  const size_t len = 1 << 16;
  void* anon = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  EXPECT_EQ(RemoteWriteRefusal(anon, len), "");
  munmap(anon, len);

  // A file in the working directory (the build tree: a disk filesystem in CI).
  std::string path = "mapping_test." + std::to_string(getpid());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, len), 0);
  struct statfs fs {};
  ASSERT_EQ(fstatfs(fd, &fs), 0);
  void* shared = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* priv = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ASSERT_NE(shared, MAP_FAILED);
  ASSERT_NE(priv, MAP_FAILED);
  EXPECT_EQ(RemoteWriteRefusal(priv, len), "");
  if (static_cast<uint64_t>(fs.f_type) == 0x01021994) {
    EXPECT_EQ(RemoteWriteRefusal(shared, len), "");  // the tree is on tmpfs here
  } else {
    EXPECT_NE(RemoteWriteRefusal(shared, len), "");
    // Any byte of it counts.
    EXPECT_NE(RemoteWriteRefusal(static_cast<char*>(shared) + 4096, 1), "");
  }
  munmap(shared, len);
  munmap(priv, len);
  close(fd);
  unlink(path.c_str());
}

// The per-mapping query (PROCMAP_QUERY, where the kernel has it) and the whole-table read judge
// alike: anonymous, private and shared file mappings, a range spanning several mappings, a
// deleted file, and an unmapped hole.
TEST(MappingTest, QueryAndMapsReadAgree) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::string path = "mapping_test_q." + std::to_string(getpid());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4 * page), 0);
  // One reserved span of 8 pages: anon | private file | hole | shared file | anon ...
  char* base = static_cast<char*>(
      mmap(nullptr, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  ASSERT_NE(mmap(base + page, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0),
            MAP_FAILED);
  ASSERT_EQ(munmap(base + 2 * page, page), 0);
  ASSERT_NE(mmap(base + 3 * page, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0),
            MAP_FAILED);
  struct Case {
    size_t off, len;
  };
  for (auto [off, len] : {Case{0, page}, Case{page, page}, Case{0, 2 * page}, Case{2 * page, page},
                          Case{0, 3 * page}, Case{3 * page, 1}, Case{page + 7, 4 * page},
                          Case{5 * page, 3 * page}, Case{0, 8 * page}}) {
    EXPECT_EQ(RemoteWriteRefusal(base + off, len), RemoteWriteRefusalFromMaps(base + off, len))
        << "offset " << off << " len " << len;
  }
  unlink(path.c_str());  // the shared mapping now names "... (deleted)"
  EXPECT_EQ(RemoteWriteRefusal(base + 3 * page, page),
            RemoteWriteRefusalFromMaps(base + 3 * page, page));
  EXPECT_NE(RemoteWriteRefusal(base + 3 * page, page), "");
  munmap(base, 8 * page);
  close(fd);
}

}  // namespace
}  // namespace rdmastor::rdma
