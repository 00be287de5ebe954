#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "crypto/dare.h"
#include "storage/erasure_store.h"
#include "storage/fsutil.h"
#include "storage/paths.h"
#include "storage/s3_limits.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test helpers

// One drive runs as a one-drive erasure set (EC 1+0): what the retired single-drive object layer
// promised (its tests, ported here) holds for the set.
Result<std::unique_ptr<ErasureStore>> OpenOne(const std::string& dir) {
  return ErasureStore::Open(std::vector<std::string>{dir}, {});
}

class OneDriveSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path() + "/drive";
    auto s = OpenOne(root_);
    RS_ASSERT_OK(s);
    store_ = std::move(*s);
    RS_ASSERT_OK(store_->MakeBucket("bkt"));
  }

  void Reopen() {
    store_.reset();
    auto s = OpenOne(root_);
    RS_ASSERT_OK(s);
    store_ = std::move(*s);
  }

  // The staging area, clean staging directories kept for reuse aside.
  std::vector<std::string> TmpEntries() { return testing::StagingLeftovers(paths::TmpDir(root_)); }

  TempDir tmp_;
  std::string root_;
  std::unique_ptr<ErasureStore> store_;
};

// ---- Open ----

TEST_F(OneDriveSetTest, OpenCreatesLayout) {
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/.rdmastor.sys/tmp"));
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/.rdmastor.sys/multipart"));
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/.rdmastor.sys/buckets"));
  EXPECT_EQ(store_->drives()[0]->name(), root_);
  // Nested, not yet existing directories are created too.
  auto nested = OpenOne(tmp_.path() + "/x/y/z/");
  RS_ASSERT_OK(nested);
  EXPECT_EQ((*nested)->drives()[0]->name(), tmp_.path() + "/x/y/z");
}

TEST_F(OneDriveSetTest, OpenFailsClearlyOnUnusablePath) {
  const std::string file = tmp_.path() + "/plainfile";
  std::ofstream(file) << "x";
  auto r = OpenOne(file);
  RS_EXPECT_CODE(r, ErrorCode::kDriveNotWritable);
  EXPECT_NE(r.error().message.find(file), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("ot a directory"), std::string::npos) << r.error().message;

  auto below = OpenOne(file + "/sub");
  RS_EXPECT_CODE(below, ErrorCode::kDriveNotWritable);
  EXPECT_NE(below.error().message.find(file + "/sub"), std::string::npos);

  if (::geteuid() != 0) {  // root writes anywhere
    const std::string ro = tmp_.path() + "/readonly";
    ASSERT_EQ(::mkdir(ro.c_str(), 0555), 0);
    auto r2 = OpenOne(ro);
    RS_EXPECT_CODE(r2, ErrorCode::kDriveNotWritable);
    EXPECT_NE(r2.error().message.find(ro), std::string::npos);
    EXPECT_NE(r2.error().message.find("ermission denied"), std::string::npos);
  }
}

TEST_F(OneDriveSetTest, ReopenRemovesStaleTempData) {
  const std::string t = paths::TmpDir(root_);
  std::filesystem::create_directories(t + "/deadbeef/data");
  std::ofstream(t + "/deadbeef/data/part.1") << "half written";
  std::ofstream(t + "/stray-file") << "x";
  // A bucket record whose bucket directory is gone (the retired layout's crash inside
  // DeleteBucket; the erasure layer renames the record away first): no bucket shows.
  std::ofstream(paths::BucketMetaFile(root_, "gone")) << "{}";
  RS_ASSERT_OK(Put(*store_, "bkt", "k", "data"));
  Reopen();
  EXPECT_TRUE(TmpEntries().empty());
  RS_EXPECT_CODE(store_->GetBucketInfo("gone"), ErrorCode::kNoSuchBucket);
  auto buckets = store_->ListBuckets();
  RS_ASSERT_OK(buckets);
  ASSERT_EQ(buckets->size(), 1u);
  EXPECT_EQ((*buckets)[0].name, "bkt");
  EXPECT_EQ(Get(*store_, "bkt", "k"), "data");
}

// A crash between publishing and retiring leaves a journal in tmp: recovery deletes exactly the
// data directory the surviving metadata does not reference.
TEST_F(OneDriveSetTest, ReopenSettlesInterruptedCommits) {
  const std::string current = Pattern(200 << 10, 1);  // above the inline threshold: a data dir
  RS_ASSERT_OK(Put(*store_, "bkt", "dir/k", current));
  const std::string key_dir = root_ + "/bkt/dir/k";
  std::string live;
  for (auto& e : std::filesystem::directory_iterator(key_dir)) {
    std::string n = e.path().filename();
    if (n.starts_with(".rdmastor.data.")) live = n;
  }
  ASSERT_FALSE(live.empty());
  // Orphans: one from a commit that never reached its metadata rename, one already retired.
  std::filesystem::create_directories(key_dir + "/.rdmastor.data.orphan1");
  std::ofstream(key_dir + "/.rdmastor.data.orphan1/part.1") << "new but uncommitted";
  const std::string staging = paths::TmpDir(root_) + "/0123";
  std::filesystem::create_directories(staging);
  std::ofstream(staging + "/intent.json")
      << R"({"version":1,"base":"bkt","target":"bkt/dir/k","meta":".rdmastor.meta","data":[")"
      << ".rdmastor.data.orphan1\",\"" << live << "\"]}";
  // A crash after mkdir but before the rename left an empty key directory behind.
  std::filesystem::create_directories(root_ + "/bkt/e/f");
  std::filesystem::create_directories(paths::TmpDir(root_) + "/0124");
  std::ofstream(paths::TmpDir(root_) + "/0124/intent.json")
      << R"({"version":1,"base":"bkt","target":"bkt/e/f","meta":".rdmastor.meta",)"
      << R"("data":[".rdmastor.data.x"]})";
  // A malicious or corrupt journal must not make recovery touch anything outside the drive.
  const std::string outside = tmp_.path() + "/outside";
  std::filesystem::create_directories(outside + "/.rdmastor.data.y");
  std::filesystem::create_directories(paths::TmpDir(root_) + "/0125");
  std::ofstream(paths::TmpDir(root_) + "/0125/intent.json")
      << R"({"version":1,"base":"bkt","target":"../outside","meta":".rdmastor.meta",)"
      << R"("data":[".rdmastor.data.y"]})";

  Reopen();
  EXPECT_FALSE(std::filesystem::exists(key_dir + "/.rdmastor.data.orphan1"));
  EXPECT_TRUE(std::filesystem::exists(key_dir + "/" + live));
  EXPECT_EQ(Get(*store_, "bkt", "dir/k"), current);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/bkt/e"));
  EXPECT_TRUE(std::filesystem::exists(outside + "/.rdmastor.data.y"));
  EXPECT_TRUE(TmpEntries().empty());
}

// kill -9 at arbitrary moments of a writer process: after recovery each key shows one complete
// version (or none), and nothing but the live data remains outside the staging area.
TEST_F(OneDriveSetTest, KillNineLeavesOldOrNewVersion) {
  store_.reset();
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the writer: overwrite, create and delete until killed
      auto s = OpenOne(root_);
      if (!s.ok()) ::_exit(1);
      for (int i = 0;; ++i) {
        size_t size =
            (static_cast<size_t>(i) * 7919 + static_cast<size_t>(trial) * 104729) % (2 << 20);
        (void)Put(**s, "bkt", "crash/key", std::string(size, static_cast<char>('a' + i % 26)));
        std::string other = "crash/d/e/f" + std::to_string(i % 3);
        if (i % 2) {
          (void)(*s)->DeleteObject("bkt", other);
        } else {
          (void)Put(**s, "bkt", other, other);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + (trial * 37) % 60));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));

    Reopen();
    auto st = store_->StatObject("bkt", "crash/key");
    if (st.ok()) {
      std::string data = Get(*store_, "bkt", "crash/key");
      ASSERT_EQ(data.size(), st->size);
      if (!data.empty()) {
        EXPECT_EQ(data.find_first_not_of(data[0]), std::string::npos);
      }
      EXPECT_EQ(st->etag, hash::Md5Hex(data));
    } else {
      EXPECT_EQ(st.error().code, ErrorCode::kNoSuchKey);
    }
    for (int i = 0; i < 3; ++i) {
      std::string other = "crash/d/e/f" + std::to_string(i);
      auto o = store_->StatObject("bkt", other);
      if (o.ok()) {
        EXPECT_EQ(Get(*store_, "bkt", other), other);
      }
    }
    // No garbage: every data dir is the one its metadata references, no empty key dirs.
    for (auto& e : std::filesystem::recursive_directory_iterator(root_ + "/bkt")) {
      if (!e.is_directory()) continue;
      std::string name = e.path().filename();
      if (name.starts_with(".rdmastor.data.")) {
        auto meta = fsutil::ReadFileIfExists(e.path().parent_path().string() + "/.rdmastor.meta");
        ASSERT_TRUE(meta.ok() && meta->has_value()) << e.path();
        EXPECT_NE((*meta)->find(name), std::string::npos) << e.path();
      } else if (!name.starts_with(".rdmastor.")) {
        EXPECT_FALSE(std::filesystem::is_empty(e.path()))
            << e.path() << " " << ::testing::PrintToString(Tree(root_));
      }
    }
    EXPECT_TRUE(TmpEntries().empty());
    store_.reset();
  }
}

// ---- Buckets ----

TEST_F(OneDriveSetTest, BucketLifecycle) {
  RS_EXPECT_CODE(store_->MakeBucket("bkt"), ErrorCode::kBucketAlreadyOwnedByYou);
  RS_ASSERT_OK(store_->MakeBucket("another.bucket"));
  std::filesystem::create_directories(root_ + "/lost+found");  // a mount point's own dir

  auto info = store_->GetBucketInfo("bkt");
  RS_ASSERT_OK(info);
  EXPECT_EQ(info->name, "bkt");
  EXPECT_GT(info->created_ns, 1'500'000'000'000'000'000);

  auto list = store_->ListBuckets();
  RS_ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "another.bucket");
  EXPECT_EQ((*list)[1].name, "bkt");

  RS_EXPECT_CODE(store_->GetBucketInfo("nope"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->DeleteBucket("nope"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->MakeBucket("Bad_Name"), ErrorCode::kInvalidBucketName);
  RS_EXPECT_CODE(store_->MakeBucket(".rdmastor.sys"), ErrorCode::kInvalidBucketName);
  RS_EXPECT_CODE(store_->MakeBucket(".."), ErrorCode::kInvalidBucketName);

  RS_ASSERT_OK(Put(*store_, "bkt", "a/b/c", "x"));
  RS_EXPECT_CODE(store_->DeleteBucket("bkt"), ErrorCode::kBucketNotEmpty);
  RS_ASSERT_OK(store_->DeleteObject("bkt", "a/b/c"));
  // Directories a crash may leave empty do not keep a bucket alive; pending uploads neither.
  std::filesystem::create_directories(root_ + "/bkt/left/over");
  auto up = store_->NewMultipartUpload("bkt", "mp", {});
  RS_ASSERT_OK(up);
  RS_ASSERT_OK(store_->DeleteBucket("bkt"));
  RS_EXPECT_CODE(store_->GetBucketInfo("bkt"), ErrorCode::kNoSuchBucket);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/bkt"));
  EXPECT_FALSE(std::filesystem::exists(paths::MultipartBucketDir(root_, "bkt")));
  EXPECT_FALSE(std::filesystem::exists(paths::BucketMetaFile(root_, "bkt")));
  EXPECT_TRUE(TmpEntries().empty());

  // A dir-key object counts as content.
  RS_ASSERT_OK(store_->MakeBucket("bkt"));
  RS_ASSERT_OK(Put(*store_, "bkt", "folder/", ""));
  RS_EXPECT_CODE(store_->DeleteBucket("bkt"), ErrorCode::kBucketNotEmpty);
}

TEST_F(OneDriveSetTest, ObjectOpsOnMissingBucket) {
  MemBody body("x");
  RS_EXPECT_CODE(store_->PutObject("nope", "k", body, {}, Md5Check("x")), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->OpenObject("nope", "k"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->StatObject("nope", "k"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->DeleteObject("nope", "k"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->UpdateMetadata("nope", "k", {}), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->ListObjects("nope", {}), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->NewMultipartUpload("nope", "k", {}), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->ListMultipartUploads("nope", ""), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->OpenObject("..", "k"), ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->StatObject(".rdmastor.sys", "tmp"), ErrorCode::kNoSuchBucket);
}

// ---- Objects ----

TEST_F(OneDriveSetTest, PutGetStatDeleteRoundTrip) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{(1 << 20) - 1}, size_t{1 << 20},
                      size_t{(3 << 20) + 17}}) {
    SCOPED_TRACE(size);
    const std::string data = Pattern(size, static_cast<uint32_t>(size));
    PutOptions opts;
    opts.content_type = "application/x-test";
    opts.user_metadata = {{"x-amz-meta-color", "blue"}, {"cache-control", "no-cache"}};
    MemBody body(data, 65537);
    opts.size = size;
    auto put = store_->PutObject("bkt", "obj/" + std::to_string(size), body, opts,
                                 Md5Check(data, {{"sha256", "c2hh"}}));
    RS_ASSERT_OK(put);
    EXPECT_EQ(put->etag, hash::Md5Hex(data));
    EXPECT_EQ(put->size, size);

    auto st = store_->StatObject("bkt", "obj/" + std::to_string(size));
    RS_ASSERT_OK(st);
    EXPECT_EQ(st->bucket, "bkt");
    EXPECT_EQ(st->key, "obj/" + std::to_string(size));
    EXPECT_EQ(st->size, size);
    EXPECT_EQ(st->etag, hash::Md5Hex(data));
    EXPECT_EQ(st->content_type, "application/x-test");
    EXPECT_EQ(st->user_metadata, opts.user_metadata);
    EXPECT_EQ(st->checksums.at("sha256"), "c2hh");
    EXPECT_EQ(st->part_count, 0);
    EXPECT_EQ(st->mtime_ns, put->mtime_ns);
    EXPECT_GT(st->mtime_ns, 0);

    auto reader = store_->OpenObject("bkt", "obj/" + std::to_string(size));
    RS_ASSERT_OK(reader);
    EXPECT_EQ((*reader)->info().etag, st->etag);
    EXPECT_EQ(ReadAll(**reader, 100003), data);
    // Random access, and reads at or past the end.
    if (size > 10) {
      char buf[8];
      auto n = (*reader)->ReadAt(size - 5, buf, sizeof(buf));
      RS_ASSERT_OK(n);
      ASSERT_EQ(*n, 5u);
      EXPECT_EQ(std::string(buf, 5), data.substr(size - 5));
    }
    char c;
    auto eof = (*reader)->ReadAt(size, &c, 1);
    RS_ASSERT_OK(eof);
    EXPECT_EQ(*eof, 0u);
  }
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{(1 << 20) - 1}, size_t{1 << 20},
                      size_t{(3 << 20) + 17}}) {
    RS_ASSERT_OK(store_->DeleteObject("bkt", "obj/" + std::to_string(size)));
    RS_EXPECT_CODE(store_->StatObject("bkt", "obj/" + std::to_string(size)), ErrorCode::kNoSuchKey);
  }
  // Empty parents are pruned, the bucket directory stays.
  EXPECT_TRUE(Tree(root_ + "/bkt").empty());
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/bkt"));
  EXPECT_TRUE(TmpEntries().empty());
}

TEST_F(OneDriveSetTest, MissingKeys) {
  RS_ASSERT_OK(Put(*store_, "bkt", "a/b", "x"));
  RS_EXPECT_CODE(store_->StatObject("bkt", "a"), ErrorCode::kNoSuchKey);  // only a directory
  RS_EXPECT_CODE(store_->StatObject("bkt", "a/"), ErrorCode::kNoSuchKey);
  RS_EXPECT_CODE(store_->OpenObject("bkt", "a/b/c"), ErrorCode::kNoSuchKey);
  RS_EXPECT_CODE(store_->UpdateMetadata("bkt", "zzz", {}), ErrorCode::kNoSuchKey);
  RS_ASSERT_OK(store_->DeleteObject("bkt", "zzz"));  // S3: succeeds
  RS_ASSERT_OK(store_->DeleteObject("bkt", "a"));    // does not touch a/b
  EXPECT_EQ(Get(*store_, "bkt", "a/b"), "x");
}

TEST_F(OneDriveSetTest, NoCommitCheckComputesMd5) {
  const std::string data = Pattern(3 << 20, 9);
  MemBody body(data);
  auto put = store_->PutObject("bkt", "k", body, {}, nullptr);  // size unknown, no check
  RS_ASSERT_OK(put);
  EXPECT_EQ(put->etag, hash::Md5Hex(data));
  EXPECT_EQ(put->size, data.size());
}

TEST_F(OneDriveSetTest, OverwriteIsAtomicForOpenReaders) {
  const std::string v1 = Pattern((2 << 20) + 3, 1), v2 = Pattern(1 << 20, 2);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));
  auto old_reader = store_->OpenObject("bkt", "k");
  RS_ASSERT_OK(old_reader);
  char first[10];
  RS_ASSERT_OK((*old_reader)->ReadAt(0, first, sizeof(first)));

  PutOptions opts;
  opts.content_type = "text/new";
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2, opts));
  EXPECT_EQ(ReadAll(**old_reader), v1);
  EXPECT_EQ((*old_reader)->info().size, v1.size());
  EXPECT_EQ((*old_reader)->info().etag, hash::Md5Hex(v1));
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  auto st = store_->StatObject("bkt", "k");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->content_type, "text/new");

  // Deletion does not disturb an open reader either.
  auto reader2 = store_->OpenObject("bkt", "k");
  RS_ASSERT_OK(reader2);
  RS_ASSERT_OK(store_->DeleteObject("bkt", "k"));
  EXPECT_EQ(ReadAll(**reader2), v2);
  RS_EXPECT_CODE(store_->OpenObject("bkt", "k"), ErrorCode::kNoSuchKey);

  // Old data is gone from the drive: only the bucket dir remains.
  EXPECT_TRUE(Tree(root_ + "/bkt").empty());
}

TEST_F(OneDriveSetTest, OnlyOneDataDirSurvivesOverwrites) {
  constexpr size_t kLarge = erasure::kDefaultInlineBlock + 1000;
  for (int i = 0; i < 5; ++i) RS_ASSERT_OK(Put(*store_, "bkt", "k", Pattern(kLarge + i, i)));
  std::vector<std::string> tree = Tree(root_ + "/bkt/k");
  ASSERT_EQ(tree.size(), 3u) << ::testing::PrintToString(tree);  // meta, data dir, part.1
  EXPECT_EQ(tree[0], ".rdmastor.data." + tree[0].substr(15));
  EXPECT_EQ(tree[2], ".rdmastor.meta");
  EXPECT_EQ(Get(*store_, "bkt", "k"), Pattern(kLarge + 4, 4));
  // A small object lives inside the metadata file: the overwrite retires the data dir.
  RS_ASSERT_OK(Put(*store_, "bkt", "k", Pattern(1000, 9)));
  tree = Tree(root_ + "/bkt/k");
  EXPECT_EQ(tree, std::vector<std::string>{".rdmastor.meta"});
  EXPECT_EQ(Get(*store_, "bkt", "k"), Pattern(1000, 9));
}

TEST_F(OneDriveSetTest, CommitCheckVetoLeavesNothing) {
  MemBody body(Pattern(3 << 20, 5));
  uint64_t seen = 0;
  auto veto = [&seen](uint64_t n) -> Result<CommitInfo> {
    seen = n;
    return MakeError(ErrorCode::kBadDigest, "md5 mismatch");
  };
  RS_EXPECT_CODE(store_->PutObject("bkt", "dir/k", body, {}, veto), ErrorCode::kBadDigest);
  EXPECT_EQ(seen, 3u << 20);
  RS_EXPECT_CODE(store_->StatObject("bkt", "dir/k"), ErrorCode::kNoSuchKey);
  EXPECT_TRUE(Tree(root_ + "/bkt").empty());
  EXPECT_TRUE(TmpEntries().empty());

  // A vetoed overwrite keeps the old version.
  RS_ASSERT_OK(Put(*store_, "bkt", "k", "old"));
  MemBody body2("new");
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", body2, {}, veto), ErrorCode::kBadDigest);
  EXPECT_EQ(Get(*store_, "bkt", "k"), "old");
  EXPECT_TRUE(TmpEntries().empty());
}

// A delete's precondition runs under the key's lock and sees the latest version and the one the
// delete removes for good; a refusal leaves everything as it was.
TEST_F(OneDriveSetTest, DeletePreconditionSeesLatestAndRemovedVersions) {
  struct Seen {
    std::optional<ObjectInfo> latest, removed;
  } seen;
  auto record = [&seen](const DeleteTarget& t) -> Status {
    seen.latest = t.latest ? std::optional<ObjectInfo>(*t.latest) : std::nullopt;
    seen.removed = t.removed ? std::optional<ObjectInfo>(*t.removed) : std::nullopt;
    return {};
  };
  auto refuse = [](const DeleteTarget&) -> Status {
    return MakeError(ErrorCode::kPreconditionFailed);
  };
  // Unversioned: the null version is both the latest and the one removed.
  auto v1 = Put(*store_, "bkt", "k", "one");
  RS_ASSERT_OK(v1);
  RS_EXPECT_CODE(store_->DeleteObjectVersion("bkt", "k", std::nullopt, refuse),
                 ErrorCode::kPreconditionFailed);
  EXPECT_EQ(Get(*store_, "bkt", "k"), "one");
  RS_ASSERT_OK(store_->DeleteObjectVersion("bkt", "k", std::nullopt, record));
  ASSERT_TRUE(seen.latest && seen.removed);
  EXPECT_EQ(seen.latest->etag, v1->etag);
  EXPECT_EQ(seen.removed->etag, v1->etag);
  RS_EXPECT_CODE(store_->StatObject("bkt", "k"), ErrorCode::kNoSuchKey);
  // Nothing there: neither.
  RS_ASSERT_OK(store_->DeleteObjectVersion("bkt", "k", std::nullopt, record));
  EXPECT_FALSE(seen.latest || seen.removed);

  // Enabled: a plain delete removes nothing for good (it adds a marker).
  RS_ASSERT_OK(store_->SetBucketVersioning("bkt", Versioning::kEnabled));
  auto a = Put(*store_, "bkt", "v", "a");
  auto b = Put(*store_, "bkt", "v", "bb");
  RS_ASSERT_OK(a);
  RS_ASSERT_OK(b);
  auto marker = store_->DeleteObjectVersion("bkt", "v", std::nullopt, record);
  RS_ASSERT_OK(marker);
  EXPECT_TRUE(marker->created_marker);
  ASSERT_TRUE(seen.latest);
  EXPECT_EQ(seen.latest->version_id, b->version_id);
  EXPECT_FALSE(seen.removed);
  // A named version: that one is removed; the latest is now the marker.
  RS_EXPECT_CODE(store_->DeleteObjectVersion("bkt", "v", a->version_id, refuse),
                 ErrorCode::kPreconditionFailed);
  RS_ASSERT_OK(store_->StatObjectVersion("bkt", "v", a->version_id));
  RS_ASSERT_OK(store_->DeleteObjectVersion("bkt", "v", a->version_id, record));
  ASSERT_TRUE(seen.latest && seen.removed);
  EXPECT_TRUE(seen.latest->delete_marker);
  EXPECT_EQ(seen.removed->version_id, a->version_id);
  RS_EXPECT_CODE(store_->StatObjectVersion("bkt", "v", a->version_id), ErrorCode::kNoSuchVersion);

  // Suspended: the marker replaces the null version, which is the one removed.
  RS_ASSERT_OK(store_->SetBucketVersioning("bkt", Versioning::kSuspended));
  auto n = Put(*store_, "bkt", "s", "null");
  RS_ASSERT_OK(n);
  RS_ASSERT_OK(store_->DeleteObjectVersion("bkt", "s", std::nullopt, record));
  ASSERT_TRUE(seen.removed);
  EXPECT_EQ(seen.removed->etag, n->etag);
}

TEST_F(OneDriveSetTest, SizeMismatchAndLimits) {
  bool called = false;
  auto check = [&](uint64_t) -> Result<CommitInfo> {
    called = true;
    return CommitInfo{"e", {}};
  };
  PutOptions opts;
  opts.size = 10;
  MemBody short_body(std::string(9, 'x'));
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", short_body, opts, check),
                 ErrorCode::kIncompleteBody);
  MemBody long_body(std::string(11, 'x'));
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", long_body, opts, check), ErrorCode::kInvalidRequest);
  opts.size = kMaxPutSize + 1;
  MemBody big("x");
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", big, opts, check), ErrorCode::kEntityTooLarge);
  // Encrypted data: the limit is on the plaintext, so a 5 GiB plaintext's longer stream is
  // taken (this body then ends short of it), one byte more is not.
  opts.internal = {{kInternalSse, "SSE-S3"}};
  opts.size = crypto::EncryptedSize(kMaxPutSize);
  MemBody encrypted("x");
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", encrypted, opts, check),
                 ErrorCode::kIncompleteBody);
  opts.size = crypto::EncryptedSize(kMaxPutSize) + 1;
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", encrypted, opts, check),
                 ErrorCode::kEntityTooLarge);
  opts.internal.clear();
  opts.size = 100;
  MemBody failing(std::string(100, 'x'), 10);
  failing.FailAfter(50);
  RS_EXPECT_CODE(store_->PutObject("bkt", "k", failing, opts, check), ErrorCode::kRequestTimeout);
  EXPECT_FALSE(called);  // size is checked before the commit check
  RS_EXPECT_CODE(store_->StatObject("bkt", "k"), ErrorCode::kNoSuchKey);
  EXPECT_TRUE(TmpEntries().empty());
  EXPECT_TRUE(Tree(root_ + "/bkt").empty());
}

TEST_F(OneDriveSetTest, UpdateMetadataKeepsData) {
  const std::string data = Pattern(5000, 3);
  PutOptions opts;
  opts.content_type = "text/plain";
  opts.user_metadata = {{"x-amz-meta-a", "1"}};
  auto put = Put(*store_, "bkt", "k", data, opts);
  RS_ASSERT_OK(put);
  PutOptions repl;
  repl.content_type = "image/png";
  repl.user_metadata = {{"x-amz-meta-b", "2"}};
  auto up = store_->UpdateMetadata("bkt", "k", repl);
  RS_ASSERT_OK(up);
  EXPECT_EQ(up->content_type, "image/png");
  auto st = store_->StatObject("bkt", "k");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->content_type, "image/png");
  EXPECT_EQ(st->user_metadata, repl.user_metadata);
  EXPECT_EQ(st->etag, put->etag);
  EXPECT_GE(st->mtime_ns, put->mtime_ns);
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  EXPECT_TRUE(TmpEntries().empty());
}

TEST_F(OneDriveSetTest, KeysNestingIntoEachOtherCoexist) {
  const std::vector<std::string> keys = {"a", "a/", "a/b", "a-x", "a0", "a/b/", "a/b/c"};
  for (const auto& k : keys) RS_ASSERT_OK(Put(*store_, "bkt", k, "content of " + k));
  for (const auto& k : keys) EXPECT_EQ(Get(*store_, "bkt", k), "content of " + k) << k;

  ListOptions all;
  auto list = store_->ListObjects("bkt", all);
  RS_ASSERT_OK(list);
  std::vector<std::string> got;
  for (const auto& o : list->objects) got.push_back(o.key);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "a-x", "a/", "a/b", "a/b/", "a/b/c", "a0"}));
  EXPECT_FALSE(list->truncated);
  EXPECT_EQ(list->objects[0].size, std::string("content of a").size());
  EXPECT_EQ(list->objects[0].etag, hash::Md5Hex("content of a"));

  ListOptions delim;
  delim.delimiter = "/";
  list = store_->ListObjects("bkt", delim);
  RS_ASSERT_OK(list);
  got.clear();
  for (const auto& o : list->objects) got.push_back(o.key);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "a-x", "a0"}));
  EXPECT_EQ(list->common_prefixes, std::vector<std::string>{"a/"});

  delim.prefix = "a/";
  list = store_->ListObjects("bkt", delim);
  RS_ASSERT_OK(list);
  got.clear();
  for (const auto& o : list->objects) got.push_back(o.key);
  EXPECT_EQ(got, (std::vector<std::string>{"a/", "a/b"}));
  EXPECT_EQ(list->common_prefixes, std::vector<std::string>{"a/b/"});

  RS_ASSERT_OK(store_->DeleteObject("bkt", "a"));
  RS_ASSERT_OK(store_->DeleteObject("bkt", "a/"));
  RS_ASSERT_OK(store_->DeleteObject("bkt", "a/b/"));
  EXPECT_EQ(Get(*store_, "bkt", "a/b"), "content of a/b");
  EXPECT_EQ(Get(*store_, "bkt", "a/b/c"), "content of a/b/c");
  RS_EXPECT_CODE(store_->StatObject("bkt", "a"), ErrorCode::kNoSuchKey);
}

TEST_F(OneDriveSetTest, PathEscapeAttemptsAreRejected) {
  const std::vector<std::string> bad = {"../escape",
                                        "a/../../escape",
                                        "/abs",
                                        "a//b",
                                        ".",
                                        "..",
                                        "a/./b",
                                        "a/..",
                                        ".rdmastor.sys/tmp",
                                        "x/.rdmastor.meta",
                                        ".rdmastor.data.1/part.1",
                                        std::string("nul\0x", 5)};
  for (const auto& key : bad) {
    SCOPED_TRACE(key);
    MemBody body("evil");
    RS_EXPECT_CODE(store_->PutObject("bkt", key, body, {}, Md5Check("evil")),
                   ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->StatObject("bkt", key), ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->OpenObject("bkt", key), ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->DeleteObject("bkt", key), ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->UpdateMetadata("bkt", key, {}), ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->NewMultipartUpload("bkt", key, {}), ErrorCode::kInvalidObjectName);
    RS_EXPECT_CODE(store_->CompleteMultipartUpload("bkt", key, std::string(32, 'a'), {{1, "e"}}),
                   ErrorCode::kInvalidObjectName);
  }
  MemBody body("x");
  RS_EXPECT_CODE(store_->PutObject("bkt", std::string(1025, 'k'), body, {}, Md5Check("x")),
                 ErrorCode::kKeyTooLong);
  // Nothing was written anywhere: the drive holds only the empty bucket and the system dir.
  EXPECT_TRUE(Tree(root_ + "/bkt").empty());
  EXPECT_EQ(Tree(tmp_.path()).size(), Tree(tmp_.path() + "/drive").size() + 1);
  EXPECT_TRUE(TmpEntries().empty());

  // Listing with hostile prefixes / markers finds nothing and does not fail.
  RS_ASSERT_OK(Put(*store_, "bkt", "ok", "x"));
  for (const std::string& prefix :
       std::vector<std::string>{"../", "../../etc/", "/", ".rdmastor.sys/", "a//", "./"}) {
    ListOptions o;
    o.prefix = prefix;
    auto list = store_->ListObjects("bkt", o);
    RS_ASSERT_OK(list);
    EXPECT_TRUE(list->objects.empty()) << prefix;
    EXPECT_TRUE(list->common_prefixes.empty()) << prefix;
  }
  // Internal entries never show up.
  ListOptions o;
  auto list = store_->ListObjects("bkt", o);
  RS_ASSERT_OK(list);
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "ok");
}

// ---- Listing against a model ----

struct Entry {
  bool prefix;
  std::string name;
  bool operator==(const Entry&) const = default;
};

std::string Describe(const std::vector<Entry>& v) {
  std::string s;
  for (const auto& e : v) s += (e.prefix ? "P:" : "K:") + e.name + " ";
  return s;
}

// S3 semantics, computed directly from a sorted set of keys.
std::vector<Entry> Model(const std::set<std::string>& keys, const ListOptions& o, bool* truncated) {
  std::vector<Entry> out;
  *truncated = false;
  if (o.max_keys <= 0) return out;
  for (const auto& k : keys) {
    if (!k.starts_with(o.prefix)) continue;
    Entry e{false, k};
    size_t idx = o.delimiter.empty() ? std::string::npos : k.find(o.delimiter, o.prefix.size());
    if (idx != std::string::npos) e = Entry{true, k.substr(0, idx + o.delimiter.size())};
    if (e.name <= o.start_after) continue;
    if (!out.empty() && e.prefix && out.back() == e) continue;
    if (static_cast<int>(out.size()) == o.max_keys) {
      *truncated = true;
      break;
    }
    out.push_back(e);
  }
  return out;
}

std::vector<Entry> Merge(const ListResult& r) {
  std::vector<Entry> out;
  for (const auto& o : r.objects) out.push_back({false, o.key});
  for (const auto& p : r.common_prefixes) out.push_back({true, p});
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

TEST_F(OneDriveSetTest, ListingMatchesModel) {
  std::set<std::string> keys = {
      "a",          "a/",      "a/b",    "a/b/",   "a/b/c", "a/b/d/e", "a-x",
      "a-x/y",      "a0",      "a.b",    "b",      "b/a",   "b/a-b/c", "b/z",
      "ba/",        "c/d/e/f", "c/d/ef", "c/d-/x", "dir/",  "dir/x/",  "\xc3\xa9t\xc3\xa9",
      "\xc3\xa9/x", "Z",       "zz/y/x", "0/1",    "-/x",   "a b/c",   "a!/q",
      "a/!"};
  for (const auto& k : keys) RS_ASSERT_OK(Put(*store_, "bkt", k, k));
  // Leftovers of crashes and internal data must not appear.
  std::filesystem::create_directories(root_ + "/bkt/empty/dirs/only");
  std::filesystem::create_directories(root_ + "/bkt/a/.rdmastor.data.stray");

  std::vector<std::string> prefixes = {"",    "a",    "a/",  "a/b", "a/b/",     "b/",
                                       "c/d", "c/d/", "zz/", "q",   "\xc3\xa9", "dir/"};
  std::vector<std::string> delimiters = {"", "/", "-", "b", "/x"};
  std::vector<std::string> markers = {"",  "a",     "a/",  "a/b",   "a-", "a/b/c",
                                      "b", "c/d/e", "zzz", "a/b/d", "0"};
  int checked = 0;
  for (const auto& prefix : prefixes) {
    for (const auto& delim : delimiters) {
      for (const auto& marker : markers) {
        for (int max_keys : {1000, 3}) {
          ListOptions o;
          o.prefix = prefix;
          o.delimiter = delim;
          o.start_after = marker;
          o.max_keys = max_keys;
          SCOPED_TRACE("prefix=" + prefix + " delim=" + delim + " after=" + marker +
                       " max=" + std::to_string(max_keys));
          bool want_trunc = false;
          auto want = Model(keys, o, &want_trunc);
          auto got = store_->ListObjects("bkt", o);
          RS_ASSERT_OK(got);
          ASSERT_EQ(Describe(Merge(*got)), Describe(want));
          ASSERT_EQ(got->truncated, want_trunc);
          if (want_trunc) {
            ASSERT_EQ(got->next_marker, want.back().name);
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 12 * 5 * 11 * 2);
}

TEST_F(OneDriveSetTest, PaginationWalksEverything) {
  std::set<std::string> keys;
  for (int i = 0; i < 12; ++i) {
    for (const char* leaf : {"x", "y/", "y/z", "w-1"}) {
      keys.insert("p" + std::to_string(i % 4) + "/" + std::to_string(i) + "/" + leaf);
    }
  }
  keys.insert("p0");
  keys.insert("p1/");
  keys.insert("top");
  for (const auto& k : keys) RS_ASSERT_OK(Put(*store_, "bkt", k, ""));

  for (std::string delim : {"", "/", "-"}) {
    for (std::string prefix : {"", "p1/", "p"}) {
      ListOptions full;
      full.delimiter = delim;
      full.prefix = prefix;
      bool trunc = false;
      auto want = Model(keys, full, &trunc);
      for (int page = 1; page <= 7; ++page) {
        SCOPED_TRACE("delim=" + delim + " prefix=" + prefix + " page=" + std::to_string(page));
        std::vector<Entry> all;
        ListOptions o = full;
        o.max_keys = page;
        for (int guard = 0; guard < 1000; ++guard) {
          auto r = store_->ListObjects("bkt", o);
          RS_ASSERT_OK(r);
          auto entries = Merge(*r);
          ASSERT_LE(entries.size(), static_cast<size_t>(page));
          all.insert(all.end(), entries.begin(), entries.end());
          if (!r->truncated) break;
          ASSERT_EQ(entries.size(), static_cast<size_t>(page));
          ASSERT_EQ(r->next_marker, entries.back().name);
          o.start_after = r->next_marker;
        }
        EXPECT_EQ(Describe(all), Describe(want));
      }
    }
  }

  ListOptions zero;
  zero.max_keys = 0;
  auto r = store_->ListObjects("bkt", zero);
  RS_ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
  EXPECT_TRUE(r->common_prefixes.empty());
  EXPECT_FALSE(r->truncated);
}

// ---- Concurrency ----

TEST_F(OneDriveSetTest, ConcurrentWritersLeaveOneCompleteVersion) {
  constexpr int kWriters = 6, kRounds = 4;
  constexpr size_t kSize = 300 * 1024 + 7;
  std::atomic<bool> stop{false};
  std::atomic<int> bad_reads{0}, reads{0};
  RS_ASSERT_OK(Put(*store_, "bkt", "hot/key", std::string(kSize, 'A')));

  auto reader = [&] {
    while (!stop) {
      auto r = store_->OpenObject("bkt", "hot/key");
      if (!r.ok()) {
        ++bad_reads;
        continue;
      }
      std::string data = ReadAll(**r, 70000);
      // Each version is one repeated byte: a mix would mean a torn read.
      if (data.size() != kSize || data.find_first_not_of(data[0]) != std::string::npos ||
          (*r)->info().etag != hash::Md5Hex(data)) {
        ++bad_reads;
      }
      ++reads;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back(reader);
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int round = 0; round < kRounds; ++round) {
        std::string data(kSize, static_cast<char>('B' + w * kRounds + round));
        if (!Put(*store_, "bkt", "hot/key", data).ok()) ++failures;
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(bad_reads, 0);
  EXPECT_GT(reads, 0);

  std::string final_data = Get(*store_, "bkt", "hot/key");
  ASSERT_EQ(final_data.size(), kSize);
  EXPECT_EQ(final_data.find_first_not_of(final_data[0]), std::string::npos);
  auto st = store_->StatObject("bkt", "hot/key");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->etag, hash::Md5Hex(final_data));
  EXPECT_EQ(Tree(root_ + "/bkt/hot/key").size(), 3u);  // meta + one data dir + part.1
  EXPECT_TRUE(TmpEntries().empty());
}

// Writers creating keys while deleters prune the shared parent directories.
TEST_F(OneDriveSetTest, ConcurrentCreateAndPruneInSharedDirectories) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        std::string key = "shared/deep/dir/k" + std::to_string(t) + "-" + std::to_string(i);
        if (!Put(*store_, "bkt", key, key).ok()) ++failures;
        if (i % 2 == 0 && !store_->DeleteObject("bkt", key).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  ListOptions o;
  auto list = store_->ListObjects("bkt", o);
  RS_ASSERT_OK(list);
  EXPECT_EQ(list->objects.size(), 4u * 20u);
  for (const auto& obj : list->objects) EXPECT_EQ(Get(*store_, "bkt", obj.key), obj.key);
}

}  // namespace
}  // namespace rdmastor::storage
