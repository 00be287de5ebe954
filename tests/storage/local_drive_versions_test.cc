// RenameData's version modes on a real drive directory: each commit merges one version into the
// drive's own metadata file, keeps the other versions' data, retires only what it replaces, and a
// version removal drops that version's data (and the file with its last version).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/hash.h"
#include "storage/local_drive.h"
#include "storage/object_meta.h"
#include "storage/paths.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using testing::TempDir;

class LocalDriveVersionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(drive_.EnsureRoot().ok());
    ASSERT_TRUE(drive_.Prepare().ok());
    ASSERT_TRUE(drive_.MakeVol("bkt", "{}").ok());
  }

  // Stages a version with a data directory (or a delete marker) and commits it in `mode`.
  Result<RenameDataResult> Add(const std::string& id, const std::string& data_dir,
                               int64_t mtime, bool marker = false) {
    const std::string staging = rel::Staging(hash::RandomHex(8));
    ObjectMeta m;
    m.version_id = id;
    m.mtime_ns = mtime;
    m.delete_marker = marker;
    if (!marker) {
      if (auto st = drive_.MakeDir(staging); !st.ok()) return st.error();
      if (auto st = drive_.MakeDir(staging + "/data"); !st.ok()) return st.error();
      if (auto st = drive_.WriteFile(staging + "/data/part.1", "abc"); !st.ok()) return st.error();
      m.size = 3;
      m.etag = "e";
      m.parts.push_back(PartMeta{1, 3, "e"});
      m.data_dir = data_dir;
    }
    RenameDataRequest req{staging, "bkt", "bkt/key", std::string(paths::kMetaFile),
                          marker ? "" : data_dir, SerializeObjectMeta(m), false, false};
    req.mode = RenameMode::kAddVersion;
    auto r = drive_.RenameData(req);
    (void)drive_.RemoveAll(staging);  // what the caller does once the write has its quorum
    return r;
  }

  Result<RenameDataResult> Remove(const std::string& id) {
    RenameDataRequest req{rel::Staging(hash::RandomHex(8)), "bkt", "bkt/key",
                          std::string(paths::kMetaFile), "", std::nullopt, false, true};
    req.mode = RenameMode::kRemoveVersion;
    req.version_id = id;
    return drive_.RenameData(req);
  }

  std::vector<std::string> Ids() {
    auto raw = drive_.ReadFile("bkt/key/.rdmastor.meta");
    if (!raw.ok() || !raw->has_value()) return {"<none>"};
    auto f = ParseObjectVersions(**raw, "meta");
    if (!f.ok()) return {"<corrupt>"};
    std::vector<std::string> out;
    for (const auto& v : f->versions) out.push_back(v.version_id.empty() ? "null" : v.version_id);
    return out;
  }

  bool HasDir(const std::string& name) {
    return std::filesystem::is_directory(dir_.path() + "/bkt/key/" + name);
  }

  TempDir dir_;
  LocalDrive drive_{dir_.path()};
};

TEST_F(LocalDriveVersionsTest, AddKeepsOtherVersionsAndReplacesTheSameId) {
  ASSERT_TRUE(Add("v1", ".rdmastor.data.a", 10).ok());
  auto r = Add("v2", ".rdmastor.data.b", 20);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->old_data_name, "");  // nothing replaced: v1 stays
  EXPECT_EQ(Ids(), (std::vector<std::string>{"v2", "v1"}));
  EXPECT_TRUE(HasDir(".rdmastor.data.a"));
  EXPECT_TRUE(HasDir(".rdmastor.data.b"));
  // The null version twice: the second replaces the first and retires its data.
  ASSERT_TRUE(Add("", ".rdmastor.data.c", 30).ok());
  r = Add("", ".rdmastor.data.d", 40);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->old_data_name, ".rdmastor.data.c");
  ASSERT_TRUE(r->old_meta.has_value());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"null", "v2", "v1"}));
  EXPECT_FALSE(HasDir(".rdmastor.data.c"));
  // An older version (a heal) goes back to its place by mtime.
  ASSERT_TRUE(Remove("v1").ok());
  EXPECT_FALSE(HasDir(".rdmastor.data.a"));
  ASSERT_TRUE(Add("v1", ".rdmastor.data.a", 10).ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"null", "v2", "v1"}));
  // A delete marker has no data and becomes the latest.
  ASSERT_TRUE(Add("m1", "", 50, /*marker=*/true).ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"m1", "null", "v2", "v1"}));
}

TEST_F(LocalDriveVersionsTest, RemoveDropsOneVersionThenTheFile) {
  ASSERT_TRUE(Add("v1", ".rdmastor.data.a", 10).ok());
  ASSERT_TRUE(Add("v2", ".rdmastor.data.b", 20).ok());
  ASSERT_TRUE(Remove("v2").ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"v1"}));
  EXPECT_FALSE(HasDir(".rdmastor.data.b"));
  EXPECT_TRUE(HasDir(".rdmastor.data.a"));
  ASSERT_TRUE(Remove("absent").ok());  // nothing to do
  EXPECT_EQ(Ids(), (std::vector<std::string>{"v1"}));
  ASSERT_TRUE(Remove("v1").ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"<none>"}));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/bkt/key"));  // pruned
  auto staged = drive_.ListDir(rel::Tmp(), false);
  ASSERT_TRUE(staged.ok());
  EXPECT_TRUE(staged->empty());
}

TEST_F(LocalDriveVersionsTest, CrashRecoveryKeepsEveryVersionsData) {
  ASSERT_TRUE(Add("v1", ".rdmastor.data.a", 10).ok());
  ASSERT_TRUE(Add("v2", ".rdmastor.data.b", 20).ok());
  // A journal naming both (as a commit that crashed after its rename would leave it).
  const std::string staging = rel::Staging("crashed");
  ASSERT_TRUE(drive_.MakeDir(staging).ok());
  ASSERT_TRUE(drive_
                  .WriteFile(staging + "/intent.json",
                             R"({"version":1,"base":"bkt","target":"bkt/key",)"
                             R"("meta":".rdmastor.meta","data":[".rdmastor.data.a",)"
                             R"(".rdmastor.data.b",".rdmastor.data.z"]})")
                  .ok());
  std::filesystem::create_directory(dir_.path() + "/bkt/key/.rdmastor.data.z");
  ASSERT_TRUE(drive_.Prepare().ok());
  EXPECT_TRUE(HasDir(".rdmastor.data.a"));
  EXPECT_TRUE(HasDir(".rdmastor.data.b"));
  EXPECT_FALSE(HasDir(".rdmastor.data.z"));  // named by no version: an orphan
}

}  // namespace
}  // namespace rdmastor::storage
