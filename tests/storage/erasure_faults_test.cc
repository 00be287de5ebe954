// The erasure set against misbehaving drives (FaultDrive wraps real LocalDrives): a slow drive
// beyond the data shards does not hold up stripe reads, failing drives within parity are
// tolerated and beyond it refused with the quorum errors, a drive returning wrong bytes is caught
// by the bitrot hash and never reaches the reader, and metadata that disagrees between drives
// resolves to the version a quorum holds.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "erasure/codec.h"
#include "fault_drive.h"
#include "storage/erasure/set.h"
#include "storage/erasure_store.h"
#include "storage/fsutil.h"
#include "storage/object_meta.h"
#include "storage/paths.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test helpers
using Clock = std::chrono::steady_clock;

class ErasureFaultTest : public ::testing::Test {
 protected:
  void Open(int n, const erasure::StorageClassSettings& classes = {}) {
    store_.reset();
    faults_.clear();
    std::vector<std::string> roots;
    for (int i = 0; i < n; ++i) {
      roots.push_back(tmp_.path() + "/d" + std::to_string(i));
      std::filesystem::create_directories(roots.back());
    }
    host_ = std::make_shared<FaultHost>(roots, as_remote_);
    std::vector<DriveSlot> drives;
    for (size_t i = 0; i < roots.size(); ++i) {
      faults_.push_back(&host_->fault(i));
      drives.push_back({host_, i});
    }
    auto s = ErasureStore::Open(std::move(drives), classes, FormatOptions{});
    RS_ASSERT_OK(s);
    store_ = std::move(*s);
    auto made = store_->MakeBucket("bkt");  // reopened drives have it already
    ASSERT_TRUE(made.ok() || made.error().code == ErrorCode::kBucketAlreadyOwnedByYou);
  }

  std::string MetaPath(const std::string& key) {
    auto loc = paths::MapKey(key);
    EXPECT_TRUE(loc.ok());
    return paths::Join(paths::Join("bkt", loc->rel_dir), loc->meta_name);
  }

  // The metadata file drive p holds for `key`, read past the faults.
  std::string RawMeta(size_t p, const std::string& key) {
    auto raw = faults_[p]->inner().ReadFile(MetaPath(key));
    EXPECT_TRUE(raw.ok() && raw->has_value()) << key;
    return raw.ok() && raw->has_value() ? **raw : std::string();
  }

  // The shard index drive p holds for `key`.
  int ShardOf(size_t p, const std::string& key) {
    auto file = ParseObjectVersions(RawMeta(p, key), MetaPath(key));
    EXPECT_TRUE(file.ok() && file->Latest() && file->Latest()->erasure);
    return file.ok() ? file->Latest()->erasure->index : -1;
  }

  // The first drive position holding a data shard (parity: a parity shard) of `key`.
  size_t PositionOf(const std::string& key, bool parity) {
    const int data = store_->layout().data();
    for (size_t p = 0; p < faults_.size(); ++p) {
      if ((ShardOf(p, key) >= data) == parity) return p;
    }
    ADD_FAILURE() << "no " << (parity ? "parity" : "data") << " drive for " << key;
    return 0;
  }

  // The latest version of `key` as drive p holds it.
  ObjectMeta LatestMeta(size_t p, const std::string& key) {
    auto file = ParseObjectVersions(RawMeta(p, key), MetaPath(key));
    EXPECT_TRUE(file.ok() && file->Latest() && file->Latest()->erasure) << key;
    ObjectMeta m = file.ok() && file->Latest() ? *file->Latest() : ObjectMeta{};
    if (m.erasure) EXPECT_TRUE(m.erasure->DecodeInline()) << key;
    return m;
  }

  // Whether drive p holds a data directory for `key` (an inline version has none).
  bool HasDataDir(size_t p, const std::string& key) {
    auto loc = paths::MapKey(key);
    EXPECT_TRUE(loc.ok());
    const std::string dir = tmp_.path() + "/d" + std::to_string(p) + "/bkt/" + loc->rel_dir;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().filename().string().starts_with(".rdmastor.data.")) return true;
    }
    return false;
  }

  // True when every drive keeps `key`'s shard inside its metadata file (no data directory), each
  // one as long as the shard file would be.
  void ExpectInline(const std::string& key, uint64_t size, bool want) {
    for (size_t p = 0; p < faults_.size(); ++p) {
      const ObjectMeta m = LatestMeta(p, key);
      ASSERT_TRUE(m.erasure) << key;
      EXPECT_EQ(m.erasure->is_inline, want) << key << " on drive " << p;
      EXPECT_EQ(HasDataDir(p, key), !want) << key << " on drive " << p;
      if (want) {
        const erasure::Geometry g{m.erasure->data, m.erasure->parity, m.erasure->stripe_size};
        EXPECT_EQ(m.erasure->inline_shard.size(), g.ShardFileSize(size)) << key;
      }
    }
  }

  // `len` bytes of `key` from `off`, through one reader.
  std::string ReadRange(const std::string& key, uint64_t off, size_t len) {
    auto r = store_->OpenObject("bkt", key);
    EXPECT_TRUE(r.ok()) << key;
    if (!r.ok()) return {};
    std::string out(len, '\0');
    auto n = (*r)->ReadAt(off, out.data(), len);
    EXPECT_TRUE(n.ok()) << key;
    out.resize(n.ok() ? *n : 0);
    return out;
  }

  void ClearFaults() {
    for (auto* f : faults_) f->Clear();
  }

  // The drives a GET or HEAD of `key` reads first: those holding its data shards.
  std::vector<size_t> FirstRound(const std::string& key) {
    std::vector<size_t> out;
    for (size_t p = 0; p < faults_.size(); ++p) {
      if (ShardOf(p, key) < store_->layout().data()) out.push_back(p);
    }
    return out;
  }
  std::vector<size_t> NotFirstRound(const std::string& key) {
    std::vector<size_t> out;
    for (size_t p = 0; p < faults_.size(); ++p) {
      if (ShardOf(p, key) >= store_->layout().data()) out.push_back(p);
    }
    return out;
  }

  // Metadata files read per drive since the last call (ReadFile calls; counters reset).
  std::vector<uint64_t> MetaReadsSince() {
    std::vector<uint64_t> out;
    for (auto* f : faults_) {
      out.push_back(f->calls(DriveOp::kReadFile));
      f->ResetCounts();
    }
    return out;
  }
  // Every drive's metadata was read since the last count (a read that found damage queues a heal,
  // whose own reads may land in the count too: at least once, then).
  void ExpectEveryDriveRead() {
    const std::vector<uint64_t> reads = MetaReadsSince();
    for (size_t p = 0; p < reads.size(); ++p) EXPECT_GE(reads[p], 1u) << "drive " << p;
  }
  // Drive p's metadata file for `key` replaced on disk (past the faults): a stale or damaged copy.
  void WriteMeta(size_t p, const std::string& key, const std::string& raw) {
    RS_ASSERT_OK(faults_[p]->inner().WriteFile(MetaPath(key), raw));
  }

  TempDir tmp_;
  bool as_remote_ = false;  // Open's host as another node's (FaultHost's as_remote)
  std::shared_ptr<FaultHost> host_;
  std::vector<FaultDrive*> faults_;  // owned by host_
  std::unique_ptr<ErasureStore> store_;
};

// ---- slow drives ----

// A drive holding only parity is never waited for while stripes stream: reads ask the data
// shards' drives (only the snapshot probe at open, which opens every drive's shard file without
// reading it, touches it once).
TEST_F(ErasureFaultTest, SlowParityDriveDoesNotHoldUpStripeReads) {
  Open(4);
  ASSERT_EQ(store_->layout().data(), 2);
  const std::string data = Pattern((6 << 20) + 7, 1);  // 7 stripes
  RS_ASSERT_OK(Put(*store_, "bkt", "slow", data));
  constexpr auto kDelay = std::chrono::milliseconds(300);
  FaultDrive* slow = faults_[PositionOf("slow", /*parity=*/true)];
  slow->Set(DriveOp::kOpenShard, {.delay = kDelay});
  slow->Set(DriveOp::kShardRead, {.delay = kDelay});
  slow->ResetCounts();
  const auto t0 = Clock::now();
  EXPECT_EQ(Get(*store_, "bkt", "slow"), data);
  const auto took = Clock::now() - t0;
  EXPECT_EQ(slow->calls(DriveOp::kOpenShard), 1u);  // the snapshot probe at open
  EXPECT_EQ(slow->calls(DriveOp::kShardRead), 0u);
  // Waiting for the slow drive on every stripe would take 8 delays.
  EXPECT_LT(took, 3 * kDelay)
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
}

// A slow data drive delays the read but the answer is complete and right; its calls run in
// parallel with the other drives' (one delay per stripe, not one per drive and stripe).
TEST_F(ErasureFaultTest, SlowDataDriveStillAnswersRight) {
  Open(4);
  const std::string data = Pattern((2 << 20) + 5, 2);  // 3 stripes
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  const size_t p = PositionOf("k", /*parity=*/false);
  constexpr auto kDelay = std::chrono::milliseconds(100);
  for (size_t q = 0; q < faults_.size(); ++q) {
    if (ShardOf(q, "k") < store_->layout().data())
      faults_[q]->Set(DriveOp::kShardRead, {.delay = kDelay});
  }
  const auto t0 = Clock::now();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  const auto took = Clock::now() - t0;
  // 3 stripes, each read from both data drives in parallel (the probe at open does not read).
  EXPECT_LT(took, 5 * kDelay)  // one drive after the other: 6
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  EXPECT_EQ(faults_[p]->calls(DriveOp::kShardRead), 3u);  // one read per stripe
}

// ---- failing drives ----

TEST_F(ErasureFaultTest, FailingDrivesWithinParityAreTolerated) {
  Open(4);
  ASSERT_EQ(store_->layout().parity, 2);
  const std::string v1 = Pattern(300 << 10, 3), v2 = Pattern((1 << 20) + 3, 4);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));

  // One dead drive: writes (quorum 3 of 4) and reads go on.
  faults_[1]->SetAll({.fail = true});
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2));
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  // Two dead: still readable (any 2 shards of 2+2), no longer writable.
  faults_[3]->SetAll({.fail = true});
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  RS_EXPECT_CODE(Put(*store_, "bkt", "k", v1), ErrorCode::kInsufficientWriteQuorum);
  RS_EXPECT_CODE(Put(*store_, "bkt", "fresh", v1), ErrorCode::kInsufficientWriteQuorum);
  // Three dead: below read quorum, a 503, never a 404 or wrong bytes.
  faults_[0]->SetAll({.fail = true});
  RS_EXPECT_CODE(store_->OpenObject("bkt", "k"), ErrorCode::kInsufficientReadQuorum);
  RS_EXPECT_CODE(store_->StatObject("bkt", "k"), ErrorCode::kInsufficientReadQuorum);

  // Back online: the refused writes left nothing, healing brings drive 1 up to date.
  ClearFaults();
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  RS_EXPECT_CODE(store_->StatObject("bkt", "fresh"), ErrorCode::kNoSuchKey);
  // The degraded reads queued it: the background healer may get there first.
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  RS_ASSERT_OK(store_->HealObject("bkt", "k"));
  for (size_t p = 0; p < faults_.size(); ++p) {
    auto file = ParseObjectVersions(RawMeta(p, "k"), "meta");
    RS_ASSERT_OK(file);
    EXPECT_EQ(file->Latest()->etag, hash::Md5Hex(v2)) << "drive " << p;
  }
  // Every drive now serves its shard: with the other two dead, each pair still reads v2.
  for (size_t a = 0; a < 4; ++a) {
    for (size_t b = a + 1; b < 4; ++b) {
      for (size_t q = 0; q < 4; ++q) {
        if (q != a && q != b) faults_[q]->SetAll({.fail = true});
      }
      EXPECT_EQ(Get(*store_, "bkt", "k"), v2) << "drives " << a << "," << b;
      ClearFaults();
    }
  }
}

// Commits that fail on too many drives are rolled back on the drives that did commit: the old
// version stays whole everywhere.
TEST_F(ErasureFaultTest, CommitBelowWriteQuorumRollsBack) {
  Open(4);
  const std::string v1 = Pattern(400 << 10, 5), v2 = Pattern(500 << 10, 6);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));
  std::vector<std::string> before;
  for (size_t p = 0; p < 4; ++p) before.push_back(RawMeta(p, "k"));
  faults_[0]->Set(DriveOp::kRenameData, {.fail = true});
  faults_[2]->Set(DriveOp::kRenameData, {.fail = true});
  RS_EXPECT_CODE(Put(*store_, "bkt", "k", v2), ErrorCode::kInsufficientWriteQuorum);
  ClearFaults();
  for (size_t p = 0; p < 4; ++p) EXPECT_EQ(RawMeta(p, "k"), before[p]) << "drive " << p;
  EXPECT_EQ(Get(*store_, "bkt", "k"), v1);
  // Shard writes failing on one drive only: the write still reaches quorum.
  faults_[3]->Set(DriveOp::kShardAppend, {.fail = true});
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2));
  ClearFaults();
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
}

// The drives of one file system commit through their host as production's do (LocalHost::
// RenameData): one batch and one pair of syncfs barriers per PUT for all four drives, also when
// one drive's commit is refused inside the batch: the three others still commit together, and the
// refused drive keeps the version it had. (FaultDrive once forwarded no group call, so every
// fault test ran a per-drive commit with barriers of its own, a path production never ran.)
TEST_F(ErasureFaultTest, GroupCommitWithAFailingDriveCommitsTheOthersTogether) {
  Open(4);
  const std::string v1 = Pattern(300 << 10, 11), v2 = Pattern(300 << 10, 12);
  RS_ASSERT_OK(Put(*store_, "bkt", "g", v1));
  const uint64_t entries = faults_[1]->calls(DriveOp::kRenameData);
  std::string before;
  for (const bool fail : {false, true}) {
    before = RawMeta(1, "g");
    const uint64_t batches = host_->rename_batches();
    const uint64_t barriers = fsutil::GetSyncCounts().fs;
    if (fail) faults_[1]->Set(DriveOp::kRenameData, {.fail = true});
    RS_ASSERT_OK(Put(*store_, "bkt", "g", fail ? v2 : v1));
    EXPECT_EQ(host_->rename_batches() - batches, 1u) << "fail=" << fail;
    EXPECT_EQ(fsutil::GetSyncCounts().fs - barriers, 2u) << "fail=" << fail;
    // Drive 1 took the first overwrite, not the one it refused.
    EXPECT_EQ(RawMeta(1, "g") == before, fail) << "fail=" << fail;
  }
  EXPECT_EQ(faults_[1]->calls(DriveOp::kRenameData) - entries, 2u);
  for (size_t p : {2, 3}) EXPECT_EQ(LatestMeta(p, "g").etag, LatestMeta(0, "g").etag) << p;
  EXPECT_NE(LatestMeta(1, "g").etag, LatestMeta(0, "g").etag);
  ClearFaults();
  EXPECT_EQ(Get(*store_, "bkt", "g"), v2);
}

// ---- batched shard reads (DriveHost::ReadShardPieces) ----

// One batch of pieces of four drives' shard files where one entry fails: that entry answers its
// error, the others their bytes (a corrupt one its flipped bytes, for the caller's bitrot check),
// in order. A kept file (keep, then its handle) still reads after the object is deleted.
TEST_F(ErasureFaultTest, ShardPieceBatchAnswersEachEntryOnItsOwn) {
  Open(4);
  const std::string data = Pattern((2 << 20) + 5, 31);
  RS_ASSERT_OK(Put(*store_, "bkt", "b", data));
  auto loc = paths::MapKey("b");
  ASSERT_TRUE(loc.ok());
  std::vector<std::string> paths(4), want(4);
  for (size_t p = 0; p < 4; ++p) {
    paths[p] =
        paths::Join(paths::Join(paths::Join("bkt", loc->rel_dir), LatestMeta(p, "b").data_dir),
                    PartFileName(1));
    std::string file;
    auto f = faults_[p]->inner().OpenShard(paths[p], 0);
    RS_ASSERT_OK(f);
    file.resize(4096);
    auto n = (*f)->ReadAt(100, file.data(), file.size());
    RS_ASSERT_OK(n);
    ASSERT_EQ(*n, file.size());
    want[p] = file;
  }
  faults_[1]->Set(DriveOp::kShardRead, {.fail = true});
  faults_[2]->Set(DriveOp::kShardRead, {.corrupt = true});
  std::string buf(4 * 4096, '\0');
  std::vector<ShardPieceRead> reads;
  for (size_t p = 0; p < 4; ++p)
    reads.push_back({p, paths[p], 100, 4096, buf.data() + p * 4096, 0, 0, /*keep=*/p == 3});
  const uint64_t batches = host_->read_batches();
  auto got = host_->ReadShardPieces(reads);
  EXPECT_EQ(host_->read_batches() - batches, 1u);
  ASSERT_EQ(got.size(), 4u);
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].error().code, ErrorCode::kInternalError);
  for (size_t p : {0, 2, 3}) {
    RS_ASSERT_OK(got[p]);
    EXPECT_EQ(got[p]->bytes, 4096u) << p;
    EXPECT_EQ(buf.substr(p * 4096, 4096) == want[p], p != 2) << p;
  }
  EXPECT_EQ(got[0]->handle, 0u);
  ASSERT_NE(got[3]->handle, 0u);  // kept
  // Deleted meanwhile: the kept file still reads (its last piece releases it), the path does not.
  RS_ASSERT_OK(store_->DeleteObject("bkt", "b"));
  ClearFaults();
  std::string again(4096, '\0');
  auto last = host_->ReadShardPieces(
      {{3, paths[3], 100, 4096, again.data(), 0, got[3]->handle, /*keep=*/false},
       {0, paths[0], 100, 4096, buf.data(), 0, 0, false}});
  RS_ASSERT_OK(last[0]);
  EXPECT_EQ(again, want[3]);
  EXPECT_EQ(last[0]->handle, 0u);
  EXPECT_FALSE(last[1].ok());
}

// A host that is another node's gets a GET's stripe reads as batches (one per window of stripes,
// not one per drive and stripe); a drive whose entry fails or lies is read around from parity,
// the bitrot hash catching the lie, and the reader gets the right bytes.
TEST_F(ErasureFaultTest, RemoteHostStripeReadsAreBatchedAndDegradeAroundABadEntry) {
  as_remote_ = true;
  Open(4);
  const std::string data = Pattern((3 << 20) + 11, 32);
  RS_ASSERT_OK(Put(*store_, "bkt", "r", data));
  uint64_t batches = host_->read_batches();
  EXPECT_EQ(Get(*store_, "bkt", "r"), data);
  // 2 data shards of ~1.5 MiB: one window each, both in the first stripe's batch.
  EXPECT_EQ(host_->read_batches() - batches, 1u);
  for (const Fault f : {Fault{.fail = true}, Fault{.corrupt = true}}) {
    ClearFaults();
    FaultDrive* bad = faults_[PositionOf("r", /*parity=*/false)];
    bad->Set(DriveOp::kShardRead, f);
    const uint64_t tried = bad->calls(DriveOp::kShardRead);
    EXPECT_EQ(Get(*store_, "bkt", "r"), data) << "fail=" << f.fail;
    EXPECT_GE(bad->calls(DriveOp::kShardRead) - tried, 1u);
  }
  ClearFaults();
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  EXPECT_EQ(Get(*store_, "bkt", "r"), data);
}

// ---- lying drives ----

// A drive returning wrong shard bytes: the bitrot hash catches every block, parity stands in, the
// object is queued for healing, and the reader gets the right bytes.
TEST_F(ErasureFaultTest, LyingDriveIsCaughtByBitrotHash) {
  Open(4);
  const std::string data = Pattern((3 << 20) + 11, 7);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  FaultDrive* liar = faults_[PositionOf("k", /*parity=*/false)];
  liar->Set(DriveOp::kShardRead, {.corrupt = true});
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  EXPECT_GE(store_->heal_status().total.objects_scanned + store_->heal_status().total.failed +
                store_->heal_status().total.objects_healed,
            1u);
  // Two liars within parity: still right. Three: an error, never wrong data.
  faults_[PositionOf("k", /*parity=*/true)]->Set(DriveOp::kShardRead, {.corrupt = true});
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  for (auto* f : faults_) f->Set(DriveOp::kShardRead, {.corrupt = true});
  auto r = store_->OpenObject("bkt", "k");
  RS_ASSERT_OK(r);
  std::string buf(1 << 20, '\0');
  auto n = (*r)->ReadAt(0, buf.data(), buf.size());
  ASSERT_FALSE(n.ok()) << "served " << *n << " bytes read from lying drives";
  EXPECT_EQ(n.error().code, ErrorCode::kInsufficientReadQuorum) << n.error().message;
}

// One drive (EC 1+0) has no parity: a lie is an error, never wrong bytes.
TEST_F(ErasureFaultTest, OneDriveSetRefusesToServeCorruptBytes) {
  Open(1);
  const std::string data = Pattern((1 << 20) + 3, 8);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  faults_[0]->Set(DriveOp::kShardRead, {.corrupt = true});
  auto r = store_->OpenObject("bkt", "k");
  RS_ASSERT_OK(r);
  std::string buf(4096, '\0');
  auto n = (*r)->ReadAt(0, buf.data(), buf.size());
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, ErrorCode::kInsufficientReadQuorum);
  ClearFaults();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  // A dead drive: writes are refused with 503, nothing half-written shows later.
  faults_[0]->SetAll({.fail = true});
  RS_EXPECT_CODE(Put(*store_, "bkt", "k2", "x"), ErrorCode::kInsufficientWriteQuorum);
  ClearFaults();
  RS_EXPECT_CODE(store_->StatObject("bkt", "k2"), ErrorCode::kNoSuchKey);
}

// Inline objects carry their shard inside the metadata file: corrupted there, the hash catches
// it too (the 2+2 set rebuilds it from the others).
TEST_F(ErasureFaultTest, CorruptInlineShardIsCaught) {
  Open(4);
  const std::string data = Pattern(20000, 9);
  RS_ASSERT_OK(Put(*store_, "bkt", "small", data));
  const size_t p = PositionOf("small", /*parity=*/false);
  const std::string good = RawMeta(p, "small");
  auto file = ParseObjectVersions(good, "m");
  RS_ASSERT_OK(file);
  ObjectMeta m = *file->Latest();
  ASSERT_TRUE(m.erasure && m.erasure->is_inline && m.erasure->DecodeInline());
  ASSERT_GT(m.erasure->inline_shard.size(), 1000u);
  m.erasure->inline_shard[m.erasure->inline_shard.size() / 2] ^= 0x01;
  ObjectVersions bad;
  bad.versions.push_back(m);
  const std::string lie = SerializeObjectVersions(bad);
  const std::string path = MetaPath("small");
  faults_[p]->SetLie([&](const std::string& at, std::optional<std::string>& content) {
    if (at == path) content = lie;
  });
  EXPECT_EQ(Get(*store_, "bkt", "small"), data);
}

// A canonical file's inline shard is kept as its base64 text until a read needs the bytes (a
// commit moves it from file to file undecoded). A text that is no base64, in a file whose checksum
// matches, is refused as the decode would have refused it: that drive's copy is unusable, the
// read is served from the others and queues the key, and healing rewrites the copy.
TEST_F(ErasureFaultTest, InlineShardThatIsNoBase64IsServedFromTheOthers) {
  Open(4);
  const std::string data = Pattern(20000, 10);
  RS_ASSERT_OK(Put(*store_, "bkt", "small", data));
  const size_t p = PositionOf("small", /*parity=*/false);
  auto file = ParseObjectVersions(RawMeta(p, "small"), "m");
  RS_ASSERT_OK(file);
  ObjectMeta m = *file->Latest();
  ASSERT_TRUE(m.erasure && m.erasure->is_inline);
  ASSERT_TRUE(m.erasure->inline_shard.empty());  // held as text, not decoded
  ASSERT_GT(m.erasure->inline_b64.size(), 1000u);
  // Serialized again, the text goes back unchanged: the same bytes as the drive's file.
  ObjectVersions same;
  same.versions.push_back(m);
  EXPECT_EQ(SerializeObjectVersions(same), RawMeta(p, "small"));
  m.erasure->inline_b64[m.erasure->inline_b64.size() / 2] = '*';
  ErasureMeta broken = *m.erasure;
  EXPECT_FALSE(broken.DecodeInline());
  ObjectVersions bad;
  bad.versions.push_back(m);
  const std::string lie = SerializeObjectVersions(bad);
  auto refused = ParseObjectVersions(lie, "m");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.find("checksum"), std::string::npos);  // the shard's fault
  RS_ASSERT_OK(faults_[p]->inner().WriteFile(MetaPath("small"), lie));
  EXPECT_EQ(Get(*store_, "bkt", "small"), data);
  // The read queued the key: healing rewrites that drive's copy.
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  auto healed = ParseObjectVersions(RawMeta(p, "small"), "m");
  RS_ASSERT_OK(healed);
  EXPECT_TRUE(healed->Latest()->erasure->DecodeInline());
}

// ---- inline shards, decided by shard size (MINIO_STORAGE_CLASS_INLINE_BLOCK) ----

// 16 drives code 12+4: a 1 MiB object's shards are ~85 KiB, under the 128 KiB block, so every drive
// keeps its shard in the metadata file, one stripe's block or, past 1 MiB, several stripes'.
// Reads are byte-exact, ranges across the stripe edge included, with four data drives gone (every
// stripe decoded from parity), and a heal rebuilds a lost copy inline.
TEST_F(ErasureFaultTest, OneMiBOnSixteenDrivesIsInlineAcrossStripes) {
  Open(16);
  ASSERT_EQ(store_->layout().data(), 12);
  constexpr uint64_t kMiB = 1 << 20;
  const std::string one = Pattern(kMiB, 21), two = Pattern(kMiB + (200 << 10) + 3, 22);
  RS_ASSERT_OK(Put(*store_, "bkt", "one", one));
  RS_ASSERT_OK(Put(*store_, "bkt", "two", two));
  ExpectInline("one", one.size(), true);
  ExpectInline("two", two.size(), true);  // two stripes per inline shard
  EXPECT_EQ(Get(*store_, "bkt", "one"), one);
  EXPECT_EQ(Get(*store_, "bkt", "two"), two);
  auto ranges_match = [&](const std::string& why) {
    for (auto [off, len] : std::vector<std::pair<uint64_t, size_t>>{{kMiB - 5000, 10000},
                                                                    {kMiB, 4096},
                                                                    {kMiB - 1, 2},
                                                                    {0, 7},
                                                                    {two.size() - 1, 1},
                                                                    {12345, kMiB}}) {
      EXPECT_EQ(ReadRange("two", off, len), two.substr(off, len)) << why << " @" << off;
    }
    EXPECT_EQ(ReadRange("one", kMiB - 3, 3), one.substr(kMiB - 3)) << why;
  };
  ranges_match("all drives");

  // Four drives holding data shards fail: parity stands in on every stripe.
  std::vector<size_t> data_drives;
  for (size_t p = 0; p < 16 && data_drives.size() < 4; ++p) {
    if (ShardOf(p, "two") < 12) data_drives.push_back(p);
  }
  ASSERT_EQ(data_drives.size(), 4u);
  for (size_t p : data_drives) faults_[p]->SetAll({.fail = true});
  EXPECT_EQ(Get(*store_, "bkt", "two"), two);
  EXPECT_EQ(Get(*store_, "bkt", "one"), one);
  ranges_match("four data drives failed");
  // A fifth: below read quorum, 503.
  size_t fifth = 0;
  while (std::find(data_drives.begin(), data_drives.end(), fifth) != data_drives.end()) ++fifth;
  faults_[fifth]->SetAll({.fail = true});
  RS_EXPECT_CODE(store_->OpenObject("bkt", "two"), ErrorCode::kInsufficientReadQuorum);
  ClearFaults();
  EXPECT_TRUE(store_->DrainHealQueue(10000));

  // A drive loses its copy; heal rewrites it inline, and the read then needs exactly that copy.
  const size_t lost = data_drives[0];
  std::filesystem::remove(tmp_.path() + "/d" + std::to_string(lost) + "/" + MetaPath("two"));
  auto healed = store_->HealObject("bkt", "two");
  RS_ASSERT_OK(healed);
  EXPECT_TRUE(*healed);
  ExpectInline("two", two.size(), true);
  size_t failed = 0;
  for (size_t p = 0; p < 16 && failed < 4; ++p) {
    if (p == lost) continue;
    faults_[p]->SetAll({.fail = true});
    ++failed;
  }
  EXPECT_EQ(Get(*store_, "bkt", "two"), two);
  ranges_match("healed copy carrying the read");
}

// The block is a shard file size: on 2+2, a shard of exactly 128 KiB is inline, one byte more is
// a file; the setting moves the line, and 0 keeps only empty objects inline.
TEST_F(ErasureFaultTest, InlineBlockIsAShardFileSize) {
  Open(4);
  constexpr uint64_t kBlock = erasure::kDefaultInlineBlock;
  const size_t at = 2 * (kBlock - erasure::kBitrotHashSize);  // shard file == the block
  RS_ASSERT_OK(Put(*store_, "bkt", "at", Pattern(at, 1)));
  RS_ASSERT_OK(Put(*store_, "bkt", "above", Pattern(at + 1, 2)));
  ExpectInline("at", at, true);
  ExpectInline("above", at + 1, false);
  EXPECT_EQ(Get(*store_, "bkt", "at"), Pattern(at, 1));
  EXPECT_EQ(Get(*store_, "bkt", "above"), Pattern(at + 1, 2));

  // Reopened with a block of 0: new writes follow it, versions written before keep their layout.
  erasure::StorageClassSettings none;
  none.inline_block = 0;
  Open(4, none);
  RS_ASSERT_OK(Put(*store_, "bkt", "empty", ""));
  RS_ASSERT_OK(Put(*store_, "bkt", "byte", "x"));
  ExpectInline("empty", 0, true);
  ExpectInline("byte", 1, false);
  EXPECT_EQ(Get(*store_, "bkt", "byte"), "x");
  ExpectInline("at", at, true);
  EXPECT_EQ(Get(*store_, "bkt", "at"), Pattern(at, 1));
}

// A bucket with versioning Enabled keeps every version in one metadata file: its inline shards
// are held to an eighth of the block (16 KiB), as MinIO's ShouldInline does.
TEST_F(ErasureFaultTest, VersionedBucketInlinesAnEighthOfTheBlock) {
  Open(4);
  const size_t small = 2 * (erasure::kDefaultInlineBlock / 8 - erasure::kBitrotHashSize);
  const size_t mid = small + 2;  // a shard one byte over the eighth
  RS_ASSERT_OK(Put(*store_, "bkt", "plain", Pattern(mid, 3)));
  ExpectInline("plain", mid, true);
  RS_ASSERT_OK(store_->SetBucketVersioning("bkt", Versioning::kEnabled));
  RS_ASSERT_OK(Put(*store_, "bkt", "v-small", Pattern(small, 4)));
  RS_ASSERT_OK(Put(*store_, "bkt", "v-mid", Pattern(mid, 5)));
  ExpectInline("v-small", small, true);
  ExpectInline("v-mid", mid, false);
  EXPECT_EQ(Get(*store_, "bkt", "v-small"), Pattern(small, 4));
  EXPECT_EQ(Get(*store_, "bkt", "v-mid"), Pattern(mid, 5));
  // Suspended is not versioned (MinIO: opts.Versioned is false there): the whole block again.
  RS_ASSERT_OK(store_->SetBucketVersioning("bkt", Versioning::kSuspended));
  RS_ASSERT_OK(Put(*store_, "bkt", "s-mid", Pattern(mid, 6)));
  ExpectInline("s-mid", mid, true);
}

// A body of unknown length keeps its shards in memory across stripes while they fit the block,
// then moves them to files.
TEST_F(ErasureFaultTest, UndeclaredLengthBodyInlinesWhileItFits) {
  Open(16);
  auto put_undeclared = [&](const std::string& key, const std::string& data) {
    MemBody body(data);
    RS_ASSERT_OK(store_->PutObject("bkt", key, body, PutOptions{}, Md5Check(data)));
  };
  const std::string fits = Pattern((1 << 20) + (300 << 10), 7);
  const std::string over = Pattern((2 << 20) + 5, 8);  // two full stripes: ~171 KiB shards
  put_undeclared("fits", fits);
  put_undeclared("over", over);
  ExpectInline("fits", fits.size(), true);
  ExpectInline("over", over.size(), false);
  EXPECT_EQ(Get(*store_, "bkt", "fits"), fits);
  EXPECT_EQ(Get(*store_, "bkt", "over"), over);
  EXPECT_EQ(ReadRange("over", (2 << 20) - 3, 8), over.substr((2 << 20) - 3, 8));
}

// Two of four drives removed outright (their bucket directories with them): an inline PUT meets
// them first at its commit, where they answer "no such bucket". That is a lost write quorum (503,
// as MinIO reduces the errors), not a deleted bucket, and nothing is left on the other drives.
TEST_F(ErasureFaultTest, InlinePutOnRemovedDrivesIsAWriteQuorumError) {
  Open(4);
  for (int p : {0, 1}) std::filesystem::remove_all(tmp_.path() + "/d" + std::to_string(p));
  RS_EXPECT_CODE(Put(*store_, "bkt", "small", Pattern(200 << 10, 12)),
                 ErrorCode::kInsufficientWriteQuorum);
  auto loc = paths::MapKey("small");
  ASSERT_TRUE(loc.ok());
  for (int p : {2, 3}) {
    EXPECT_EQ(Tree(tmp_.path() + "/d" + std::to_string(p) + "/bkt"), std::vector<std::string>{})
        << p;
  }
  auto info = store_->GetBucketInfo("bkt");
  RS_ASSERT_OK(info);
}

// ---- metadata disagreeing between drives ----

TEST_F(ErasureFaultTest, MetadataDisagreementResolvesToQuorum) {
  Open(4);
  const std::string v1 = Pattern(200 << 10, 10), v2 = Pattern(300 << 10, 11);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));
  std::vector<std::string> old_meta;
  for (size_t p = 0; p < 4; ++p) old_meta.push_back(RawMeta(p, "k"));
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2));
  const std::string path = MetaPath("k");
  auto stale = [&](size_t p) {
    faults_[p]->SetLie([&, p](const std::string& at, std::optional<std::string>& content) {
      if (at == path) content = old_meta[p];
    });
  };
  // One drive shows the previous version: three agree on v2.
  stale(0);
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  auto st = store_->StatObject("bkt", "k");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->etag, hash::Md5Hex(v2));
  // Two against two: both have a read quorum; the newer version wins.
  stale(1);
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  // Garbage on a drive is that drive's problem only.
  faults_[1]->SetLie([&](const std::string& at, std::optional<std::string>& content) {
    if (at == path) content = "{\"format\": 2, \"versions\": [{\"size\": \"hostile\"";
  });
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  // A drive that lost the file (nullopt) while three have v2: read, and queued for healing.
  ClearFaults();
  faults_[2]->SetLie([&](const std::string& at, std::optional<std::string>& content) {
    if (at == path) content.reset();
  });
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  EXPECT_GE(store_->heal_queue_size() + store_->heal_status().total.objects_scanned, 1u);
  ClearFaults();
  // Three drives without the key: it is gone (a delete that reached quorum), not an error.
  for (size_t p = 0; p < 3; ++p) {
    faults_[p]->SetLie([&](const std::string& at, std::optional<std::string>& content) {
      if (at == path) content.reset();
    });
  }
  RS_EXPECT_CODE(store_->StatObject("bkt", "k"), ErrorCode::kNoSuchKey);
}

// ---- quorum reads (ErasureSet::ResolveForRead) ----

// A GET or HEAD reads the metadata of the drives holding data shards first (2 of 4 on 2+2): when
// they agree, the other drives are not asked.
TEST_F(ErasureFaultTest, QuorumReadAsksOnlyTheDataDrivesWhenTheyAgree) {
  Open(4);
  const std::string small = Pattern(4096, 30), big = Pattern((1 << 20) + 9, 31);
  RS_ASSERT_OK(Put(*store_, "bkt", "small", small));
  RS_ASSERT_OK(Put(*store_, "bkt", "big", big));
  const std::vector<size_t> first = FirstRound("small");
  ASSERT_EQ(first.size(), 2u);
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "small"), small);
  std::vector<uint64_t> want(4, 0);
  for (size_t p : first) want[p] = 1;
  EXPECT_EQ(MetaReadsSince(), want) << "inline GET";
  RS_ASSERT_OK(store_->StatObject("bkt", "small"));
  EXPECT_EQ(MetaReadsSince(), want) << "HEAD";
  // A data object's reader needs every drive as a source: the other two are read as well, once.
  EXPECT_EQ(Get(*store_, "bkt", "big"), big);
  EXPECT_EQ(MetaReadsSince(), std::vector<uint64_t>(4, 1)) << "GET with part files";
  RS_ASSERT_OK(store_->StatObject("bkt", "big"));
  want.assign(4, 0);
  for (size_t p : FirstRound("big")) want[p] = 1;
  EXPECT_EQ(MetaReadsSince(), want) << "HEAD with part files";
  EXPECT_EQ(store_->heal_queue_size(), 0u);
}

// A first-round drive with an older version: the disagreement sends the read to every drive, the
// quorum's newest version is served, and the stale copy is healed.
TEST_F(ErasureFaultTest, QuorumReadWithAStaleDriveReadsAllAndHeals) {
  Open(4);
  const std::string v1 = Pattern(4096, 32), v2 = Pattern(4096, 33);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));
  const size_t stale = FirstRound("k")[0];
  const std::string old_raw = RawMeta(stale, "k");
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2));
  WriteMeta(stale, "k", old_raw);
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
  ExpectEveryDriveRead();
  auto st = store_->StatObject("bkt", "k");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->etag, hash::Md5Hex(v2));
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  EXPECT_EQ(LatestMeta(stale, "k").etag, hash::Md5Hex(v2)) << "heal on read rewrote the copy";
}

// A first-round drive without the key (or both of them): never a NoSuchKey from the partial read,
// the other drives hold the object's quorum.
TEST_F(ErasureFaultTest, QuorumReadWithFirstRoundDrivesMissingTheKeyReadsAll) {
  Open(4);
  const std::string data = Pattern(4096, 34);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  const std::vector<size_t> first = FirstRound("k");
  const std::string path = MetaPath("k");
  auto lose = [&](size_t p) {
    faults_[p]->SetLie([path](const std::string& at, std::optional<std::string>& content) {
      if (at == path) content.reset();
    });
  };
  lose(first[0]);
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  ExpectEveryDriveRead();
  lose(first[1]);  // both data drives: the two parity copies carry the read
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  RS_ASSERT_OK(store_->StatObject("bkt", "k"));
  // A failing drive instead of a missing file: the same.
  ClearFaults();
  faults_[first[1]]->Set(DriveOp::kReadFile, {.fail = true});
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  RS_ASSERT_OK(store_->StatObject("bkt", "k"));
}

// Garbage in a first-round drive's metadata file: read everything, serve, heal.
TEST_F(ErasureFaultTest, QuorumReadWithCorruptMetadataReadsAllAndHeals) {
  Open(4);
  const std::string data = Pattern(4096, 35);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  const size_t bad = FirstRound("k")[1];
  WriteMeta(bad, "k", "{\"format\": 2, \"versions\": [{\"size\": \"hostile\"");
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  ExpectEveryDriveRead();
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  EXPECT_EQ(LatestMeta(bad, "k").etag, hash::Md5Hex(data));
}

// An inline shard that fails its bitrot hash on a first-round drive: the other drives are read and
// parity serves the object; heal rewrites the bad copy. Both data drives bad: still served.
TEST_F(ErasureFaultTest, QuorumReadServesABitrottedInlineShardFromParity) {
  Open(4);
  const std::string data = Pattern(4096, 36);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", data));
  const std::vector<size_t> first = FirstRound("k");
  auto rot = [&](size_t p) {
    auto file = ParseObjectVersions(RawMeta(p, "k"), "m");
    ASSERT_TRUE(file.ok() && file->Latest() && file->Latest()->erasure);
    ObjectVersions bad = *file;
    ASSERT_TRUE(bad.versions[0].erasure->DecodeInline());
    auto& shard = bad.versions[0].erasure->inline_shard;
    ASSERT_TRUE(bad.versions[0].erasure->is_inline);
    ASSERT_GT(shard.size(), 100u);
    shard[shard.size() / 2] ^= 0x10;
    WriteMeta(p, "k", SerializeObjectVersions(bad));
  };
  rot(first[0]);
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  ExpectEveryDriveRead();
  EXPECT_TRUE(store_->DrainHealQueue(10000));
  MetaReadsSince();
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
  std::vector<uint64_t> want(4, 0);
  for (size_t p : first) want[p] = 1;
  EXPECT_EQ(MetaReadsSince(), want) << "healed: the data drives verify again";
  rot(first[0]);
  rot(first[1]);
  EXPECT_EQ(Get(*store_, "bkt", "k"), data);
}

// A delete marker the first round agrees on: NoSuchKey with the marker, from two drives only.
TEST_F(ErasureFaultTest, QuorumReadOfADeleteMarker) {
  Open(4);
  RS_ASSERT_OK(store_->SetBucketVersioning("bkt", Versioning::kEnabled));
  RS_ASSERT_OK(Put(*store_, "bkt", "k", Pattern(4096, 37)));
  // The marker has no shards: its first round is the key's data-shard drives, the object's.
  std::vector<uint64_t> want(4, 0);
  for (size_t p : FirstRound("k")) want[p] = 1;
  auto del = store_->DeleteObjectVersion("bkt", "k", std::nullopt);
  RS_ASSERT_OK(del);
  ASSERT_TRUE(del->created_marker);
  MetaReadsSince();
  RS_EXPECT_CODE(store_->OpenObject("bkt", "k"), ErrorCode::kNoSuchKey);
  EXPECT_EQ(MetaReadsSince(), want) << "GET of a marker";
  ObjectInfo marker;
  RS_EXPECT_CODE(store_->StatLatest("bkt", "k", &marker), ErrorCode::kNoSuchKey);
  EXPECT_TRUE(marker.delete_marker);
  EXPECT_EQ(marker.version_id, del->version_id);
  for (auto* f : faults_) EXPECT_EQ(f->calls(DriveOp::kStatVol), 0u) << "no bucket check either";
  EXPECT_EQ(MetaReadsSince(), want) << "HEAD of a marker";
}

// Heal on read for drives a quorum read leaves out: every kFullReadEvery-th GET of a set reads
// every drive, so a stale copy on a drive outside the first round is found and healed.
TEST_F(ErasureFaultTest, EveryNthGetReadsEveryDrive) {
  Open(4);
  constexpr uint64_t kN = ErasureSet::kFullReadEvery;
  const std::string v1 = Pattern(4096, 38), v2 = Pattern(4096, 39);
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v1));
  const size_t stale = NotFirstRound("k")[0];
  const std::string old_raw = RawMeta(stale, "k");
  RS_ASSERT_OK(Put(*store_, "bkt", "k", v2));
  WriteMeta(stale, "k", old_raw);
  MetaReadsSince();
  std::vector<size_t> full;  // 1-based numbers of the GETs that read every drive
  for (uint64_t i = 1; i <= 2 * kN; ++i) {
    EXPECT_EQ(Get(*store_, "bkt", "k"), v2);
    uint64_t total = 0;
    for (auto r : MetaReadsSince()) total += r;
    if (total >= 4)  // the full read's GET queues a heal, whose reads may count here too
      full.push_back(i);
    else
      EXPECT_EQ(total, 2u) << "GET " << i;
    if (i == kN - 1 || i == kN) {
      EXPECT_TRUE(store_->DrainHealQueue(10000));
      MetaReadsSince();  // the healer's reads
      EXPECT_EQ(LatestMeta(stale, "k").etag, hash::Md5Hex(i < kN ? v1 : v2))
          << (i < kN ? "unseen by quorum reads" : "healed after the full read");
    }
  }
  EXPECT_EQ(full, (std::vector<size_t>{kN, 2 * kN}));
  // HEADs do not count: they never reported damage.
  for (uint64_t i = 0; i < 2 * kN; ++i) RS_ASSERT_OK(store_->StatObject("bkt", "k"));
  uint64_t total = 0;
  for (auto r : MetaReadsSince()) total += r;
  EXPECT_EQ(total, 2 * 2 * kN);
}

}  // namespace
}  // namespace rdmastor::storage
