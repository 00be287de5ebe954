// Open shard read handles: a kept file stays readable after its path is gone (an overwrite retired
// its data directory), handles are bound to their drive and path, and the table stays bounded.
#include "storage/open_shards.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "storage/local_drive.h"

namespace rdmastor::storage {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct Drive : ::testing::Test {
  void SetUp() override {
    root = fs::temp_directory_path() /
           ("open-shards-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root / "b/k/d1");
    std::ofstream(root / "b/k/d1/part.1") << "old version bytes";
    drive = std::make_unique<storage::LocalDrive>(root.string());
  }
  void TearDown() override { fs::remove_all(root); }
  std::shared_ptr<storage::ShardFile> Open(const std::string& rel) {
    auto f = drive->OpenShard(rel, 0);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? std::shared_ptr<storage::ShardFile>(std::move(f).value()) : nullptr;
  }
  std::string Read(storage::ShardFile& f) {
    std::string buf(64, '\0');
    auto n = f.ReadAt(0, buf.data(), buf.size());
    EXPECT_TRUE(n.ok());
    buf.resize(n.ok() ? *n : 0);
    return buf;
  }
  fs::path root;
  std::unique_ptr<storage::LocalDrive> drive;
};

TEST_F(Drive, KeptFileOutlivesItsPath) {
  OpenShards open;
  uint64_t h = open.Keep(Open("b/k/d1/part.1"), "/d1", "b/k/d1/part.1");
  ASSERT_NE(h, 0u);
  // An overwrite commits a new data directory and retires the old one.
  fs::remove_all(root / "b/k/d1");
  EXPECT_FALSE(drive->OpenShard("b/k/d1/part.1", 0).ok());
  auto f = open.Find(h, "/d1", "b/k/d1/part.1");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Read(*f), "old version bytes");
  open.Release(h, "/d1", "b/k/d1/part.1");
  EXPECT_EQ(open.Find(h, "/d1", "b/k/d1/part.1"), nullptr);
  EXPECT_EQ(open.size(), 0u);
}

TEST_F(Drive, HandleIsBoundToItsDriveAndPath) {
  OpenShards open;
  uint64_t h = open.Keep(Open("b/k/d1/part.1"), "/d1", "b/k/d1/part.1");
  EXPECT_EQ(open.Find(h, "/d2", "b/k/d1/part.1"), nullptr);
  EXPECT_EQ(open.Find(h, "/d1", "b/k/d1/part.2"), nullptr);
  EXPECT_EQ(open.Find(h + 1, "/d1", "b/k/d1/part.1"), nullptr);
  open.Release(h, "/d1", "other/path");  // not its path: not released
  EXPECT_NE(open.Find(h, "/d1", "b/k/d1/part.1"), nullptr);
}

TEST_F(Drive, BoundedByCountAndIdleTime) {
  OpenShards open(/*capacity=*/3, /*idle=*/400ms);
  std::vector<uint64_t> h;
  for (int i = 0; i < 5; ++i) h.push_back(open.Keep(Open("b/k/d1/part.1"), "/d1", "b/k/d1/part.1"));
  EXPECT_EQ(open.size(), 3u);  // the two least recently used were closed
  EXPECT_EQ(open.Find(h[0], "/d1", "b/k/d1/part.1"), nullptr);
  EXPECT_EQ(open.Find(h[1], "/d1", "b/k/d1/part.1"), nullptr);
  EXPECT_NE(open.Find(h[2], "/d1", "b/k/d1/part.1"), nullptr);
  std::this_thread::sleep_for(250ms);
  EXPECT_NE(open.Find(h[4], "/d1", "b/k/d1/part.1"), nullptr);  // used: stays
  std::this_thread::sleep_for(250ms);
  // h[2], h[3] idle for 500 ms > 400 ms: closed; h[4] was used 250 ms ago.
  EXPECT_NE(open.Find(h[4], "/d1", "b/k/d1/part.1"), nullptr);
  EXPECT_EQ(open.size(), 1u);
}

}  // namespace
}  // namespace rdmastor::storage
