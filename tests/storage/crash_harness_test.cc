// Crash-consistency harness (issue 13 item 4): records the storage layer's writes, creations,
// renames, unlinks and syncs (fsutil::Recorder) while one operation runs on a 4-drive erasure
// store (EC 2+2) or a one-drive erasure set (EC 1+0, how a single drive runs), then rebuilds, in
// a fresh directory, every state a power loss could leave and opens a store on it. Every state must
// show the old object or the new one, read back whole and intact, never a mix and never an error;
// once the operation returned, only the new one; after recovery no drive keeps staging data or a
// data directory no metadata names.
//
// The crash model (documented in docs/architecture.md, "What is synced when"):
//  - a crash happens just before a sync (any sync the operation issued) or after the operation
//    returned; cut there, every op recorded before the cut ran;
//  - file data written before a syncfs, or before an fsync of that file, is durable; other
//    written data is dropped, kept, or torn (its first half kept);
//  - namespace operations (mkdir, create, rename, link, unlink, rmdir, rm -rf) persist in the
//    order they ran (a journaling file system: ext4, xfs): those before the last syncfs or
//    directory fsync all persist, of the later ones any prefix does.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "storage/erasure_store.h"
#include "storage/fsutil.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

namespace fs = std::filesystem;
using fsutil::FsOp;
using testing::Pattern;
using testing::TempDir;

// A scratch directory on tmpfs when there is one: the harness rebuilds hundreds of states and
// opens a store on each, and on a busy disk the stores' own syncs would dominate its run time.
class ScratchDir {
 public:
  ScratchDir() {
    for (const char* base : {"/dev/shm", "/tmp"}) {
      std::string tmpl = std::string(base) + "/rdmastor-crash-XXXXXX";
      if (::mkdtemp(tmpl.data())) {
        path_ = tmpl;
        return;
      }
    }
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class OpLog final : public fsutil::Recorder {
 public:
  void Record(FsOp op) override {
    std::lock_guard lock(mu_);
    ops_.push_back(std::move(op));
  }
  std::vector<FsOp> Take() {
    std::lock_guard lock(mu_);
    return std::move(ops_);
  }

 private:
  std::mutex mu_;
  std::vector<FsOp> ops_;
};

// Installs a recorder for its lifetime.
class Recording {
 public:
  explicit Recording(OpLog& log) { fsutil::SetRecorder(&log); }
  ~Recording() { fsutil::SetRecorder(nullptr); }
};

// A directory tree in memory: relative path -> file content, or nullopt for a directory.
using Snapshot = std::map<std::string, std::optional<std::string>>;

Snapshot Take(const std::string& root) {
  Snapshot out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory()) {
      out[rel] = std::nullopt;
    } else {
      std::ifstream f(it->path(), std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      out[rel] = ss.str();
    }
  }
  return out;
}

void Materialize(const Snapshot& snap, const std::string& root) {
  fs::create_directories(root);
  for (const auto& [rel, content] : snap) {  // sorted: parents first
    const std::string p = root + "/" + rel;
    if (!content) {
      fs::create_directories(p);
    } else {
      std::ofstream(p, std::ios::binary) << *content;
    }
  }
}

bool IsSync(const FsOp& op) {
  return op.kind == FsOp::kFsyncFile || op.kind == FsOp::kFsyncDir || op.kind == FsOp::kSyncFs;
}
bool IsNamespace(const FsOp& op) { return op.kind != FsOp::kWrite && !IsSync(op); }

enum class DataMode { kDrop, kKeep, kTear };

// One crash state: ops[0, cut) ran; of the namespace ops after the last namespace barrier, the
// first `prefix` persisted; unsynced data as `mode` says.
struct CrashState {
  size_t cut;
  size_t prefix;
  DataMode mode;
};

class Replayer {
 public:
  Replayer(std::vector<FsOp> ops, std::string from, std::string to)
      : ops_(std::move(ops)), from_(std::move(from)), to_(std::move(to)) {}

  const std::vector<FsOp>& ops() const { return ops_; }

  // Every crash state of the model, cut before each sync and at the end.
  std::vector<CrashState> States() const {
    std::vector<CrashState> out;
    std::vector<size_t> cuts;
    for (size_t i = 0; i < ops_.size(); ++i)
      if (IsSync(ops_[i])) cuts.push_back(i);
    cuts.push_back(ops_.size());
    for (size_t cut : cuts) {
      const size_t pending = Pending(cut).size();
      for (size_t prefix = 0; prefix <= pending; ++prefix) {
        for (DataMode m : {DataMode::kDrop, DataMode::kKeep, DataMode::kTear}) {
          out.push_back({cut, prefix, m});
        }
      }
    }
    return out;
  }

  // Rebuilds the state on top of the snapshot taken before the operation.
  void Build(const Snapshot& base, const CrashState& s) const {
    fs::remove_all(to_);
    Materialize(base, to_);
    const std::vector<size_t> pending = Pending(s.cut);
    std::set<size_t> applied(pending.begin(), pending.begin() + static_cast<long>(s.prefix));
    const size_t barrier = pending.empty() ? s.cut : pending.front();
    for (size_t i = 0; i < s.cut; ++i) {
      const FsOp& op = ops_[i];
      if (IsNamespace(op)) {
        if (i < barrier || applied.count(i)) Apply(op);
      } else if (op.kind == FsOp::kWrite) {
        if (Durable(i, s.cut) || s.mode == DataMode::kKeep) {
          Write(op, op.data.size());
        } else if (s.mode == DataMode::kTear) {
          Write(op, op.data.size() / 2);
        }
      }
    }
  }

 private:
  // Indices of the namespace ops before `cut` not covered by a syncfs or directory fsync.
  std::vector<size_t> Pending(size_t cut) const {
    size_t start = 0;
    for (size_t i = 0; i < cut; ++i) {
      if (ops_[i].kind == FsOp::kSyncFs || ops_[i].kind == FsOp::kFsyncDir) start = i + 1;
    }
    std::vector<size_t> out;
    for (size_t i = start; i < cut; ++i)
      if (IsNamespace(ops_[i])) out.push_back(i);
    return out;
  }

  bool Durable(size_t write, size_t cut) const {
    for (size_t j = write + 1; j < cut; ++j) {
      if (ops_[j].kind == FsOp::kSyncFs) return true;
      if (ops_[j].kind == FsOp::kFsyncFile && ops_[j].path == ops_[write].path) return true;
    }
    return false;
  }

  std::string Map(const std::string& p) const {
    EXPECT_TRUE(p.starts_with(from_ + "/")) << "op outside the drives: " << p;
    return to_ + p.substr(from_.size());
  }

  void Apply(const FsOp& op) const {
    std::error_code ec;
    const std::string a = Map(op.path);
    switch (op.kind) {
      case FsOp::kMkdir:
        fs::create_directory(a, ec);
        break;
      case FsOp::kCreate:
        if (op.truncate || !fs::exists(a)) std::ofstream(a, std::ios::binary | std::ios::trunc);
        break;
      case FsOp::kRename:
        fs::rename(a, Map(op.path2), ec);
        break;
      case FsOp::kLink:
        fs::create_hard_link(a, Map(op.path2), ec);
        break;
      case FsOp::kUnlink:
      case FsOp::kRmdir:
        fs::remove(a, ec);
        break;
      case FsOp::kRemoveAll:
        fs::remove_all(a, ec);
        break;
      default:
        break;
    }
  }

  void Write(const FsOp& op, size_t len) const {
    const std::string a = Map(op.path);
    if (len == 0 || !fs::is_regular_file(a)) return;
    std::fstream f(a, std::ios::binary | std::ios::in | std::ios::out);
    if (op.offset >= 0) {
      f.seekp(op.offset);
    } else {
      f.seekp(0, std::ios::end);
    }
    f.write(op.data.data(), static_cast<std::streamsize>(len));
  }

  std::vector<FsOp> ops_;
  std::string from_;
  std::string to_;
};

// Data directories no metadata file names, and anything left in a staging area.
std::vector<std::string> Strays(const std::string& drive) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(drive); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    const std::string rel = fs::relative(it->path(), drive).string();
    if (rel.starts_with(".rdmastor.sys/tmp/")) out.push_back(rel);
    if (it->is_directory() && name.starts_with(".rdmastor.data.")) {
      std::ifstream f(it->path().parent_path() / ".rdmastor.meta");
      std::stringstream ss;
      ss << f.rdbuf();
      if (ss.str().find("\"" + name + "\"") == std::string::npos) out.push_back(rel);
      it.disable_recursion_pending();
    }
  }
  return out;
}

constexpr const char* kBucket = "bkt";

struct Scenario {
  std::optional<std::string> old_body;  // the object before the operation (nullopt: none)
  std::optional<std::string> new_body;  // after it (nullopt: deleted)
};

class CrashHarness : public ::testing::TestWithParam<int> {
 protected:
  int drives() const { return GetParam(); }
  std::string Root() const { return dir_.path() + "/live"; }
  std::vector<std::string> Drives(const std::string& root) const {
    if (drives() == 1) return {root + "/d0"};
    std::vector<std::string> out;
    for (int i = 0; i < drives(); ++i) out.push_back(root + "/d" + std::to_string(i));
    return out;
  }
  static Result<std::unique_ptr<ObjectLayer>> OpenStore(const std::vector<std::string>& drives) {
    auto s = ErasureStore::Open(drives, {});
    if (!s.ok()) return s.error();
    return std::unique_ptr<ObjectLayer>(std::move(*s));
  }

  void SetUp() override {
    for (const auto& d : Drives(Root())) fs::create_directories(d);
    auto s = OpenStore(Drives(Root()));
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    ASSERT_TRUE(store_->MakeBucket(kBucket).ok());
  }

  // Runs `op` recorded, then checks every crash state. What the test did before is the durable
  // starting point.
  void Check(const std::string& key, const Scenario& sc, const std::function<Status()>& op) {
    const Snapshot base = Take(Root());
    OpLog log;
    {
      Recording rec(log);
      Status st = op();
      ASSERT_TRUE(st.ok()) << st.error().message;
    }
    store_.reset();
    std::vector<FsOp> ops = log.Take();
    ASSERT_FALSE(ops.empty());
    last_ops_ = ops;
    size_t syncs = 0;
    for (const auto& o : ops) syncs += IsSync(o);
    const std::string crash_root = dir_.path() + "/crash";
    Replayer replay(std::move(ops), Root(), crash_root);
    const auto states = replay.States();
    size_t saw_old = 0, saw_new = 0;
    for (const CrashState& s : states) {
      SCOPED_TRACE("cut " + std::to_string(s.cut) + " of " + std::to_string(replay.ops().size()) +
                   ", namespace prefix " + std::to_string(s.prefix) + ", data mode " +
                   std::to_string(static_cast<int>(s.mode)));
      replay.Build(base, s);
      auto store = OpenStore(Drives(crash_root));
      ASSERT_TRUE(store.ok()) << store.error().message;
      auto r = (*store)->OpenObject(kBucket, key);
      std::optional<std::string> seen;
      if (r.ok()) {
        seen = testing::ReadAll(**r);
      } else {
        ASSERT_EQ(r.error().code, ErrorCode::kNoSuchKey) << r.error().message;
      }
      const bool is_old = seen == sc.old_body;
      const bool is_new = seen == sc.new_body;
      ASSERT_TRUE(is_old || is_new)
          << "a crash state shows neither the old nor the new object ("
          << (seen ? std::to_string(seen->size()) + " bytes" : "absent") << ")";
      if (s.cut == replay.ops().size()) {
        ASSERT_TRUE(is_new) << "the acknowledged operation was lost";
      }
      saw_old += is_old && !is_new;
      saw_new += is_new && !is_old;
      store->reset();  // recovery ran at open; nothing may be left behind
      for (const auto& d : Drives(crash_root)) {
        auto strays = Strays(d);
        ASSERT_TRUE(strays.empty()) << d << ": " << strays.front();
      }
    }
    // The harness must see both sides, or it tests nothing.
    EXPECT_GT(saw_old, 0u);
    EXPECT_GT(saw_new, 0u);
    std::printf("crash harness: %zu ops, %zu syncs, %zu crash states (%zu old, %zu new)\n",
                replay.ops().size(), syncs, states.size(), saw_old, saw_new);
  }

  Status PutNow(const std::string& key, const std::string& body) {
    auto r = testing::Put(*store_, kBucket, key, body);
    if (!r.ok()) return r.error();
    return {};
  }

  // The staging directories on drive `d` and the files in each.
  static std::map<std::string, std::set<std::string>> StagingDirs(const std::string& d) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& e : fs::directory_iterator(d + "/.rdmastor.sys/tmp")) {
      auto& files = out[e.path().filename().string()];
      for (const auto& f : fs::recursive_directory_iterator(e.path()))
        files.insert(fs::relative(f.path(), e.path()).string());
    }
    return out;
  }
  // A staging directory (.rdmastor.sys/tmp/<id>) made by the operation Check() recorded.
  bool MadeStagingDir() const {
    for (const auto& op : last_ops_) {
      if (op.kind != FsOp::kMkdir) continue;
      if (op.path.substr(0, op.path.rfind('/')).ends_with("/.rdmastor.sys/tmp")) return true;
    }
    return false;
  }

  ScratchDir dir_;
  std::unique_ptr<ObjectLayer> store_;
  std::vector<FsOp> last_ops_;
};

TEST_P(CrashHarness, OverwriteLargeWithLarge) {
  const std::string a = Pattern(300 << 10, 1), b = Pattern(260 << 10, 2);
  ASSERT_TRUE(PutNow("k/x", a).ok());
  Check("k/x", {a, b}, [&] { return PutNow("k/x", b); });
}

TEST_P(CrashHarness, OverwriteLargeWithInline) {
  const std::string a = Pattern(300 << 10, 3), b = Pattern(1000, 4);
  ASSERT_TRUE(PutNow("k", a).ok());
  Check("k", {a, b}, [&] { return PutNow("k", b); });
}

TEST_P(CrashHarness, FreshKey) {
  const std::string b = Pattern(200 << 10, 5);
  Check("new/key", {std::nullopt, b}, [&] { return PutNow("new/key", b); });
}

TEST_P(CrashHarness, FreshInlineKey) {
  const std::string b = Pattern(3000, 6);
  Check("small", {std::nullopt, b}, [&] { return PutNow("small", b); });
}

TEST_P(CrashHarness, Delete) {
  const std::string a = Pattern(300 << 10, 7);
  ASSERT_TRUE(PutNow("gone", a).ok());
  Check("gone", {a, std::nullopt}, [&] { return store_->DeleteObject(kBucket, "gone"); });
}

TEST_P(CrashHarness, MultipartComplete) {
  const std::string a = Pattern(200 << 10, 8);
  ASSERT_TRUE(PutNow("mp", a).ok());
  // One part: the last part may be small, so the harness moves little data per crash state.
  const std::string p1 = Pattern(150 << 10, 9);
  auto id = store_->NewMultipartUpload(kBucket, "mp", PutOptions{});
  ASSERT_TRUE(id.ok()) << id.error().message;
  testing::MemBody mb(p1, 1 << 20);
  auto part = store_->PutObjectPart(kBucket, "mp", *id, 1, mb, p1.size(), testing::Md5Check(p1));
  ASSERT_TRUE(part.ok()) << part.error().message;
  Check("mp", {a, p1}, [&]() -> Status {
    auto r = store_->CompleteMultipartUpload(kBucket, "mp", *id, {{1, hash::Md5Hex(p1)}});
    if (!r.ok()) return r.error();
    return {};
  });
}

// A clean commit keeps its staging directory, journal inside, for the next write
// (RenameDataRequest::keep_staging). The checked PUT reuses the one the first PUT left, whose
// stale journal names this very key and the data directory it still references: every crash
// state, the ones where the new journal was not written yet or was torn included, must keep it.
TEST_P(CrashHarness, OverwriteThroughReusedStaging) {
  const std::string a = Pattern(300 << 10, 10), b = Pattern(250 << 10, 11);
  ASSERT_TRUE(PutNow("r/x", a).ok());
  for (const auto& d : Drives(Root())) {
    const auto dirs = StagingDirs(d);
    ASSERT_EQ(dirs.size(), 1u) << d;
    EXPECT_EQ(dirs.begin()->second, std::set<std::string>{"intent.json"}) << d;
  }
  Check("r/x", {a, b}, [&] { return PutNow("r/x", b); });
  EXPECT_FALSE(MadeStagingDir()) << "the PUT did not reuse the staging directory";
}

// An inline fresh key through a reused staging directory whose journal names another key.
TEST_P(CrashHarness, FreshInlineKeyThroughReusedStaging) {
  const std::string a = Pattern(300 << 10, 12), b = Pattern(3000, 13);
  ASSERT_TRUE(PutNow("first", a).ok());
  Check("second", {std::nullopt, b}, [&] { return PutNow("second", b); });
  EXPECT_FALSE(MadeStagingDir()) << "the PUT did not reuse the staging directory";
}

// The pool of staging directories over many writes: one directory per drive for writes that
// follow each other, holding only a journal; a failed write leaves nothing behind; reopening the
// store (recovery reads every stale journal, and the versions of a versioned bucket are named
// in them) loses nothing and leaves the staging area empty.
TEST_P(CrashHarness, StagingPoolKeepsOneCleanDirectory) {
  ASSERT_TRUE(store_->MakeBucket("ver").ok());
  ASSERT_TRUE(store_->SetBucketVersioning("ver", Versioning::kEnabled).ok());
  std::map<std::pair<std::string, std::string>, std::string> want;  // (bucket, key) -> body
  for (int i = 0; i < 12; ++i) {
    const std::string bucket = i % 3 == 0 ? "ver" : kBucket;
    const std::string key = "k" + std::to_string(i % 4);
    const std::string body = Pattern(i % 2 ? 3000 : 300 << 10, 20 + i);
    auto r = testing::Put(*store_, bucket, key, body);
    ASSERT_TRUE(r.ok()) << r.error().message;
    want[{bucket, key}] = body;
  }
  ASSERT_TRUE(store_->DeleteObject(kBucket, "k1").ok());
  want.erase({kBucket, "k1"});
  {
    testing::MemBody body(Pattern(300 << 10, 99));
    body.FailAfter(200 << 10);
    PutOptions opts;
    opts.size = 300 << 10;
    EXPECT_FALSE(store_->PutObject(kBucket, "failed", body, opts, nullptr).ok());
  }
  for (const auto& d : Drives(Root())) {
    const auto dirs = StagingDirs(d);
    ASSERT_EQ(dirs.size(), 1u) << d;
    EXPECT_EQ(dirs.begin()->second, std::set<std::string>{"intent.json"}) << d;
  }
  store_.reset();
  auto s = OpenStore(Drives(Root()));
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (const auto& [bk, body] : want) {
    auto r = (*s)->OpenObject(bk.first, bk.second);
    ASSERT_TRUE(r.ok()) << bk.first << "/" << bk.second << ": " << r.error().message;
    EXPECT_EQ(testing::ReadAll(**r), body) << bk.first << "/" << bk.second;
  }
  for (const auto& d : Drives(Root())) {
    EXPECT_TRUE(StagingDirs(d).empty()) << d;
    auto strays = Strays(d);
    EXPECT_TRUE(strays.empty()) << d << ": " << strays.front();
  }
}

// Issue 13: at most two syncs per drive per PUT (the commit's two barriers) before group commit
// merges them, for a large and an inline object, fresh or overwriting. (Before: ~7 per drive.)
TEST_P(CrashHarness, AtMostTwoSyncsPerDrivePerPut) {
  for (size_t size : {size_t{300} << 10, size_t{2000}}) {
    for (int round = 0; round < 2; ++round) {  // fresh, then overwrite
      const auto before = fsutil::GetSyncCounts();
      ASSERT_TRUE(PutNow("counted", Pattern(size, round)).ok());
      const auto after = fsutil::GetSyncCounts();
      EXPECT_LE(after.total() - before.total(), 2u * static_cast<unsigned>(drives()))
          << size << " bytes, round " << round << ": file " << after.file - before.file << ", dir "
          << after.dir - before.dir << ", fs " << after.fs - before.fs;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Drives, CrashHarness, ::testing::Values(1, 4),
                         [](const auto& info) { return std::to_string(info.param) + "drives"; });

// Concurrent callers share syncfs calls: 16 threads x 4 barriers each start together; if every
// call ran its own syncfs there would be 64.
TEST(SyncBatcher, ConcurrentCallersShareSyncs) {
  TempDir dir;
  auto b = fsutil::SyncBatcher::For(dir.path());
  ASSERT_TRUE(b.ok()) << b.error().message;
  const auto before = fsutil::GetSyncCounts();
  std::latch start(16);
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < 4; ++i) failed += !(*b)->Sync().ok();
    });
  }
  for (auto& t : threads) t.join();
  const auto after = fsutil::GetSyncCounts();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(after.fs - before.fs, 4u);  // each caller's last barrier started after its call
  EXPECT_LE(after.fs - before.fs, 32u);
  // Two drive directories on one file system share one batcher.
  auto again = fsutil::SyncBatcher::For(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), b->get());
}

}  // namespace
}  // namespace rdmastor::storage
