#include "storage/erasure_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "common/hash.h"
#include "common/thread_pool.h"
#include "erasure/codec.h"
#include "storage/drive.h"
#include "storage/drive_store.h"
#include "storage/format.h"
#include "storage/fsutil.h"
#include "storage/listing.h"
#include "storage/local_drive.h"
#include "storage/namespace_lock.h"
#include "storage/object_meta.h"
#include "storage/paths.h"

namespace rdmastor::storage {

namespace {

using erasure::Codec;
using erasure::Geometry;
using paths::Join;

constexpr std::string_view kUploadFile = "upload.json";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string PartFileName(size_t index) { return "part." + std::to_string(index); }
std::string PartRecordName(int number) { return "part." + std::to_string(number) + ".json"; }

std::string StripQuotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

bool IsUploadId(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

int Count(const std::vector<bool>& v) {
  return static_cast<int>(std::count(v.begin(), v.end(), true));
}

Error WriteQuorumError(int have, int need) {
  return MakeError(ErrorCode::kInsufficientWriteQuorum,
                   "only " + std::to_string(have) + " drives could store the write; " +
                       std::to_string(need) + " needed (write quorum)");
}

// The data directory the metadata file `meta_path` (drive-relative) references; "" when missing.
Result<std::string> DataDirOf(Drive& drive, const std::string& meta_path) {
  auto raw = drive.ReadFile(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return std::string();
  auto meta = ParseObjectMeta(**raw, meta_path);
  if (!meta.ok()) return meta.error();
  return meta->data_dir;
}

// What a batch of per-drive calls does, which decides where the calls run (DriveFanout).
enum class DriveWork {
  kIo,      // disk or network work (fsync, shard data, commit): every call on the pool
  kLookup,  // a metadata lookup that a local drive answers from the page cache in microseconds:
            // local drives' calls run on the calling thread, cheaper than a hand-off
};

// Runs one call per drive position of an erasure set and collects per-position results. The
// erasure layer's loops over drives all go through ForEachDrive, so that calls to different
// drives (each a network round trip or an fsync) overlap instead of adding up (measured: a
// 4-drive single node PUTs small objects several times faster with its fsyncs in parallel).
class DriveFanout {
 public:
  DriveFanout(std::vector<Drive*> drives, ThreadPool* pool)
      : drives_(std::move(drives)), all_(drives_.size(), true), pool_(pool) {}

  // Runs fn(p) for every position p with which[p] and returns, per position, whether fn returned
  // true (false where it did not run). Calls run in parallel on the pool, except local drives'
  // calls of a kLookup batch, which run meanwhile on the calling thread, one after another. fn
  // runs concurrently for different positions: it may touch only position p's state.
  std::vector<bool> ForEachDrive(const std::vector<bool>& which,
                                 const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const {
    const size_t n = drives_.size();
    std::vector<char> ok(n, 0);  // not vector<bool>: positions are written concurrently
    auto on_pool = [&](size_t p) {
      return pool_ && (work == DriveWork::kIo || !drives_[p]->is_local());
    };
    struct Join {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
    } join;
    for (size_t p = 0; p < n; ++p) join.left += which[p] && on_pool(p) ? 1 : 0;
    for (size_t p = 0; p < n; ++p) {
      if (!which[p] || !on_pool(p)) continue;
      pool_->Submit([&, p] {
        const bool r = fn(p);
        std::lock_guard lock(join.mu);  // notify under the lock: `join` lives on our stack
        ok[p] = r;
        if (--join.left == 0) join.cv.notify_one();
      });
    }
    for (size_t p = 0; p < n; ++p) {
      if (which[p] && !on_pool(p)) ok[p] = fn(p);
    }
    std::unique_lock lock(join.mu);
    join.cv.wait(lock, [&] { return join.left == 0; });
    return std::vector<bool>(ok.begin(), ok.end());
  }
  std::vector<bool> ForEachDrive(const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const {
    return ForEachDrive(all_, fn, work);
  }

 private:
  std::vector<Drive*> drives_;
  std::vector<bool> all_;
  ThreadPool* pool_;
};

// Reads framed shard blocks of one drive's copy: from part files (opened lazily, kept open) or
// from the inline shard.
struct ShardSource {
  bool usable = false;
  int shard = 0;           // shard index this drive holds
  Drive* drive = nullptr;  // the drive holding it
  std::string data_dir;    // data directory, relative to the drive root
  bool is_inline = false;
  std::string inline_shard;
  std::vector<std::unique_ptr<ShardFile>> fds;  // per part
  std::vector<uint64_t> file_sizes;             // per part: the shard file's size
  std::vector<bool> tried;

  // Reads `len` bytes at `off` of part `part` (0-based) into buf; false on any failure.
  bool Read(size_t part, uint64_t off, char* buf, size_t len) {
    if (!usable) return false;
    if (is_inline) {
      if (part != 0 || off + len > inline_shard.size()) return false;
      std::memcpy(buf, inline_shard.data() + off, len);
      return true;
    }
    if (fds.size() <= part) {
      fds.resize(part + 1);
      tried.resize(part + 1, false);
    }
    if (!fds[part]) {
      if (tried[part]) return false;
      tried[part] = true;
      auto fd = drive->OpenShard(Join(data_dir, PartFileName(part + 1)),
                                 part < file_sizes.size() ? file_sizes[part] : 0);
      if (!fd.ok()) return false;
      fds[part] = std::move(*fd);
    }
    auto n = fds[part]->ReadAt(off, buf, len);
    return n.ok() && *n == len;
  }
};

// A resolved object version and where its shards are.
struct ObjectView {
  ObjectMeta meta;                        // the quorum version (erasure.index is meaningless here)
  std::vector<ShardSource> sources;       // per drive position
  std::vector<bool> has;                  // drive holds this version's metadata
  std::vector<std::vector<char>> framed;  // per drive position: ReadStripe's read buffer
};

// Reads stripe `s` of part `part` into `shards` (total x block bytes); verifies every block read;
// reads data shards first (in parallel), then as many parity shards as blocks were missing or
// corrupt. With `all`, reads every shard (heal verification). Positions whose block was missing or
// corrupt are added to `bad`. Reconstructs the missing data shards (every missing shard with
// `all`).
// With `blocks` (the GET path), nothing is copied: blocks[i] points at shard i's verified block
// where it was read (v.framed, valid until the next call) or, for a reconstructed shard, into
// `shards`; without it every block is copied into `shards` (total x block, contiguous).
Status ReadStripe(ObjectView& v, const DriveFanout& drives, const Codec& codec, size_t part,
                  uint64_t s, std::vector<uint8_t>& shards, std::vector<bool>& present,
                  std::vector<int>* bad, bool all, std::vector<uint8_t*>* blocks = nullptr) {
  const auto& e = *v.meta.erasure;
  Geometry g{e.data, e.parity, e.stripe_size};
  const uint64_t size = v.meta.parts[part].size;
  const uint64_t block = g.BlockSize(g.StripeBytes(size, s));
  const uint64_t off = g.ShardOffset(size, s);
  const int n = g.total();
  shards.resize(static_cast<size_t>(n) * block);
  present.assign(static_cast<size_t>(n), false);
  v.framed.resize(static_cast<size_t>(n));
  // Positions ordered: data shards first.
  std::vector<int> order;
  for (int p = 0; p < n; ++p) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return (v.sources[static_cast<size_t>(a)].shard >= e.data) <
           (v.sources[static_cast<size_t>(b)].shard >= e.data);
  });
  std::vector<uint8_t*> ptrs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    ptrs[static_cast<size_t>(i)] = &shards[static_cast<size_t>(i) * block];
  int good = 0;
  size_t next = 0;  // into order
  // Each round reads, in parallel, as many of the next usable positions as blocks are still
  // needed; a block that is missing or corrupt sends the next round to a further position.
  while (all || good < e.data) {
    std::vector<bool> round(static_cast<size_t>(n), false);
    int picked = 0;
    for (; next < order.size() && (all || picked < e.data - good); ++next) {
      const auto p = static_cast<size_t>(order[next]);
      if (!v.sources[p].usable) continue;
      round[p] = true;
      ++picked;
    }
    if (picked == 0) break;
    auto ok = drives.ForEachDrive(round, [&](size_t p) {
      auto& framed = v.framed[p];
      framed.resize(erasure::kBitrotHashSize + block);
      return v.sources[p].Read(part, off, framed.data(), framed.size()) &&
             erasure::VerifyFramedBlock(framed.data(), block);
    });
    for (size_t p = 0; p < static_cast<size_t>(n); ++p) {
      if (!round[p]) continue;
      if (!ok[p]) {
        if (bad) bad->push_back(static_cast<int>(p));
        continue;
      }
      const auto shard = static_cast<size_t>(v.sources[p].shard);
      auto* verified = reinterpret_cast<uint8_t*>(v.framed[p].data() + erasure::kBitrotHashSize);
      if (blocks)
        ptrs[shard] = verified;
      else
        std::memcpy(ptrs[shard], verified, block);
      present[shard] = true;
      ++good;
    }
    if (all) break;
  }
  RS_RETURN_IF_ERROR(codec.Reconstruct(ptrs.data(), present, block, /*data_only=*/!all));
  if (blocks) *blocks = std::move(ptrs);
  return {};
}

}  // namespace

// ---- One erasure set ------------------------------------------------------------------------

class ErasureSet {
 public:
  using Degraded = std::function<void(const std::string&, const std::string&)>;

  ErasureSet(std::vector<Drive*> drives, int parity, Degraded on_degraded, ThreadPool* pool)
      : roots_(std::move(drives)),
        n_(static_cast<int>(roots_.size())),
        data_(n_ - parity),
        parity_(parity),
        on_degraded_(std::move(on_degraded)),
        fanout_(roots_, pool) {}

  std::vector<bool> ForEachDrive(const std::vector<bool>& which,
                                 const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const {
    return fanout_.ForEachDrive(which, fn, work);
  }
  std::vector<bool> ForEachDrive(const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const {
    return fanout_.ForEachDrive(fn, work);
  }
  const DriveFanout& fanout() const { return fanout_; }

  // ---- namespace locks ----

  void SetLocker(std::shared_ptr<NamespaceLocker> locker, std::chrono::milliseconds timeout) {
    std::lock_guard lock(locker_mu_);
    locker_ = std::move(locker);
    lock_timeout_ = timeout;
  }

  Result<std::unique_ptr<NamespaceLock>> Lock(const std::string& resource, LockMode mode,
                                              std::string_view source) {
    std::shared_ptr<NamespaceLocker> locker;
    std::chrono::milliseconds timeout;
    {
      std::lock_guard lock(locker_mu_);
      locker = locker_;
      timeout = lock_timeout_;
    }
    return locker->Lock({resource}, mode, timeout, source);
  }
  Result<std::unique_ptr<NamespaceLock>> LockObject(const std::string& bucket,
                                                    const std::string& key, LockMode mode,
                                                    std::string_view source) {
    return Lock(ObjectResource(bucket, key), mode, source);
  }
  Result<std::unique_ptr<NamespaceLock>> LockUpload(const std::string& bucket,
                                                    const std::string& upload_id,
                                                    std::string_view source) {
    return Lock(UploadResource(bucket, upload_id), LockMode::kExclusive, source);
  }

  int write_quorum() const { return erasure::WriteQuorum(data_, parity_); }
  int read_quorum() const { return erasure::ReadQuorum(data_, parity_); }
  const std::vector<Drive*>& drives() const { return roots_; }

  Result<const Codec*> GetCodec(int k, int m) {
    std::lock_guard lock(codec_mu_);
    auto& c = codecs_[{k, m}];
    if (!c) {
      auto made = Codec::Create(k, m);
      if (!made.ok()) return made.error();
      c = std::move(*made);
    }
    return c.get();
  }

  std::vector<int> Distribution(const std::string& key) const {
    const uint64_t h = XXH3_64bits(key.data(), key.size()) % static_cast<uint64_t>(n_);
    std::vector<int> d(static_cast<size_t>(n_));
    for (int p = 0; p < n_; ++p) d[static_cast<size_t>(p)] = static_cast<int>((p + h) % n_);
    return d;
  }

  // ---- buckets (every set holds every bucket) ----

  int BucketCopies(const std::string& bucket) {
    return Count(
        ForEachDrive([&](size_t p) { return roots_[p]->StatVol(bucket); }, DriveWork::kLookup));
  }

  // `cached`: a bucket seen on a read quorum within kBucketCacheTtl counts as existing without
  // asking the drives (object writes and reads: their commit, or a key found missing, checks
  // again: RenameData refuses a bucket that is gone, Resolve re-checks before kNoSuchKey).
  Status CheckBucket(const std::string& bucket, bool cached = false) {
    if (auto st = paths::ValidateBucketName(bucket); !st.ok()) {
      return MakeError(ErrorCode::kNoSuchBucket, st.error().message);
    }
    if (cached && BucketCached(bucket)) return {};
    if (BucketCopies(bucket) >= read_quorum()) {
      RememberBucket(bucket);
      return {};
    }
    ForgetBucket(bucket);
    const int online =
        Count(ForEachDrive([&](size_t p) { return roots_[p]->IsOnline(); }, DriveWork::kLookup));
    if (online < read_quorum()) {  // cannot tell: too few drives answer
      return MakeError(ErrorCode::kInsufficientReadQuorum,
                       "only " + std::to_string(online) +
                           " drives of the erasure set are online; " +
                           std::to_string(read_quorum()) + " needed");
    }
    return MakeError(ErrorCode::kNoSuchBucket);
  }

  // Creates the bucket on every drive that lacks it; returns how many drives have it now and
  // whether it existed on a quorum before.
  std::pair<int, int> MakeBucket(const std::string& bucket, int64_t created_ns) {
    std::unique_lock lock(BucketLock(bucket));
    const std::string record =
        nlohmann::json{{"version", 1}, {"name", bucket}, {"created_ns", created_ns}}.dump();
    std::vector<char> existed(roots_.size(), 0);
    auto have = ForEachDrive([&](size_t p) {
      auto made = roots_[p]->MakeVol(bucket, record);  // fails when the drive is gone (offline)
      if (!made.ok()) return false;
      existed[p] = *made;
      return true;
    });
    return {Count(have), static_cast<int>(std::count(existed.begin(), existed.end(), 1))};
  }

  Result<BucketInfo> GetBucketInfo(const std::string& bucket) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    BucketInfo info{bucket, 0, {}};
    // The newest record wins ("updated_ns", written by SetBucketTags): a drive that was away
    // during a tag change still holds the older one.
    int64_t newest = -1;
    for (Drive* d : roots_) {
      auto raw = d->ReadVolMeta(bucket);
      if (!raw.ok() || !raw->has_value()) continue;
      try {
        auto j = nlohmann::json::parse(**raw);
        const int64_t updated = j.value("updated_ns", int64_t{0});
        if (updated <= newest) continue;
        info.created_ns = j.at("created_ns").get<int64_t>();
        info.tags = j.value("tags", std::string());
        newest = updated;
      } catch (const std::exception&) {
      }
    }
    return info;
  }

  // Rewrites the bucket record on every drive with `tags` ("" removes them): staged in the
  // staging area, renamed over the record. Quorum as for any metadata write.
  Status SetBucketTags(const std::string& bucket, const std::string& tags) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    std::unique_lock lock(BucketLock(bucket));
    auto current = GetBucketInfo(bucket);
    if (!current.ok()) return current.error();
    std::string record;
    try {
      nlohmann::json j{{"version", 1},
                       {"name", bucket},
                       {"created_ns", current->created_ns},
                       {"updated_ns", NowNs()}};
      if (!tags.empty()) j["tags"] = tags;
      record = j.dump();
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternalError, e.what());
    }
    const std::string staged = rel::Staging(hash::RandomHex(16));
    const int have = Count(ForEachDrive([&](size_t p) {
      Drive& d = *roots_[p];
      if (!d.StatVol(bucket)) return false;
      if (!d.WriteFile(staged, record).ok()) {
        (void)d.Unlink(staged);
        return false;
      }
      if (!d.Rename(staged, rel::BucketMeta(bucket)).ok()) {
        (void)d.Unlink(staged);
        return false;
      }
      return d.FsyncDir(rel::BucketsMeta()).ok();
    }));
    if (have < write_quorum()) return WriteQuorumError(have, write_quorum());
    return {};
  }

  std::set<std::string> BucketNames() {
    std::vector<std::vector<std::string>> listed(roots_.size());
    ForEachDrive(
        [&](size_t p) {
          auto names = roots_[p]->ListVols();
          if (names.ok()) listed[p] = std::move(*names);
          return names.ok();
        },
        DriveWork::kLookup);
    std::map<std::string, int> counts;
    for (const auto& names : listed) {
      for (const auto& n : names)
        if (paths::ValidateBucketName(n).ok()) ++counts[n];
    }
    std::set<std::string> out;
    for (const auto& [n, c] : counts)
      if (c >= read_quorum()) out.insert(n);
    return out;
  }

  Result<bool> BucketHasObjects(const std::string& bucket) {
    return Count(ForEachDrive(
               [&](size_t p) {
                 auto has = roots_[p]->VolHasObjects(bucket);
                 return has.ok() && *has;
               },
               DriveWork::kLookup)) > 0;
  }

  void RemoveBucket(const std::string& bucket) {
    std::unique_lock lock(BucketLock(bucket));
    ForgetBucket(bucket);
    ForEachDrive([&](size_t p) { return roots_[p]->DeleteVol(bucket).ok(); });
  }

  // ---- writes ----

  // One staging directory per drive position (same name everywhere); removed on destruction
  // where it may exist. `create`: made now on every alive drive (a drive that cannot is dropped
  // from `alive`); otherwise made by the first call that needs it (a shard write, RenameData), so
  // a write costs no round of mkdir calls: that call marks it (Use) and RenameData, which removes
  // it unless it holds retired data, unmarks it (Gone).
  class Stagings {
   public:
    Stagings(const ErasureSet& set, std::vector<bool>& alive, bool create)
        : set_(set), dir_(rel::Staging(hash::RandomHex(16))), used_(alive.size(), 0) {
      if (!create) return;
      const auto& roots = set.roots_;
      alive = set.ForEachDrive(alive, [&](size_t p) {
        auto made = roots[p]->MakeDir(dir_);
        if (!made.ok()) {
          spdlog::warn("erasure: drive {} not writable: {}", roots[p]->name(),
                       made.error().message);
        }
        used_[p] = made.ok();
        return made.ok();
      });
    }
    ~Stagings() {
      std::vector<bool> used(used_.begin(), used_.end());
      set_.ForEachDrive(used, [&](size_t p) { return set_.roots_[p]->RemoveAll(dir_).ok(); });
    }
    const std::string& operator[](size_t) const { return dir_; }
    // Position p's directory may exist now / is gone. Positions are set concurrently.
    void Use(size_t p) const { used_[p] = 1; }
    void Gone(size_t p) const { used_[p] = 0; }

   private:
    const ErasureSet& set_;
    std::string dir_;  // drive-relative, the same on every drive
    mutable std::vector<char> used_;  // not vector<bool>: written per position concurrently
  };

  // Encodes `body` stripe by stripe into <staging>/<rel> on every alive drive (the shard's
  // creation makes its directories), or into `inline_out` (per position) when allowed and the body
  // stays below kInlineThreshold. Drops drives that fail; fails when fewer than write quorum
  // remain.
  Result<uint64_t> Encode(BodySource& body, std::optional<uint64_t> declared, uint64_t limit,
                          const Codec& codec, const std::vector<int>& dist, const Stagings& st,
                          std::vector<bool>& alive, const std::string& rel, bool allow_inline,
                          std::vector<std::string>* inline_out, std::string* md5_out,
                          bool committed_by_rename_data = false) {
    if (declared && *declared > limit) {
      return MakeError(ErrorCode::kEntityTooLarge, "declared size " + std::to_string(*declared) +
                                                       " exceeds the limit of " +
                                                       std::to_string(limit) + " bytes");
    }
    const size_t n = static_cast<size_t>(n_);
    std::vector<std::unique_ptr<ShardWriter>> fds(n);
    std::vector<std::string> pending(n);  // by shard index
    std::vector<uint8_t> scratch;
    std::vector<char> buf(erasure::kStripeSize);
    std::unique_ptr<hash::Hasher> md5;
    if (md5_out) md5 = hash::NewHasher(hash::Algo::kMD5);
    bool files = false;
    uint64_t total = 0;
    // What every shard file will hold when the body has its declared size (0: not declared).
    const uint64_t shard_size =
        declared
            ? erasure::Geometry{codec.data(), codec.parity(), erasure::kStripeSize}.ShardFileSize(
                  *declared)
            : 0;
    for (;;) {
      auto got = body.ReadFull(buf.data(), buf.size());
      if (!got.ok()) return got.error();
      total += *got;
      if (declared && total > *declared) {
        return MakeError(ErrorCode::kInvalidRequest, "request body is longer than the declared " +
                                                         std::to_string(*declared) + " bytes");
      }
      if (total > limit) {
        return MakeError(ErrorCode::kEntityTooLarge,
                         "body exceeds the limit of " + std::to_string(limit) + " bytes");
      }
      if (*got > 0) {
        if (md5) md5->Update(buf.data(), *got);
        erasure::EncodeStripe(codec, buf.data(), *got, pending, scratch);
      }
      const bool end = *got < buf.size();
      if (!files && (!allow_inline || total >= kInlineThreshold || !end)) {
        files = true;
        alive = ForEachDrive(alive, [&](size_t p) {
          st.Use(p);  // the shard's creation makes the staging directory
          auto fd = roots_[p]->CreateShard(Join(st[p], rel), shard_size);
          if (!fd.ok()) return false;
          fds[p] = std::move(*fd);
          return true;
        });
      }
      if (files) {
        alive = ForEachDrive(alive, [&](size_t p) {
          return fds[p]->Append(pending[static_cast<size_t>(dist[p])]).ok();
        });
        for (auto& s : pending) s.clear();
        if (Count(alive) < write_quorum()) return WriteQuorumError(Count(alive), write_quorum());
      }
      if (end) break;
    }
    if (declared && total < *declared) {
      return MakeError(ErrorCode::kIncompleteBody, "received " + std::to_string(total) + " of " +
                                                       std::to_string(*declared) + " bytes");
    }
    if (files) {
      // Files a RenameData commits are made durable by its first barrier (group commit); others
      // (multipart parts) are synced here.
      alive = ForEachDrive(alive, [&](size_t p) {
        return (committed_by_rename_data ? fds[p]->Close() : fds[p]->Finish()).ok();
      });
    } else {
      inline_out->assign(n, std::string());
      for (size_t p = 0; p < n; ++p) (*inline_out)[p] = pending[static_cast<size_t>(dist[p])];
    }
    if (Count(alive) < write_quorum()) return WriteQuorumError(Count(alive), write_quorum());
    if (md5_out) *md5_out = hash::HexEncode(md5->Final());
    return total;
  }

  // Commits the staged version (metadata per alive drive in the commit call) and rolls back when
  // fewer than `quorum` drives committed. `metas` per position; data dir name metas[p].data_dir
  // unless inline.
  Status Publish(const std::string& bucket, const std::string& key, const paths::KeyLocation& loc,
                 const Stagings& st, std::vector<bool>& alive, const std::vector<ObjectMeta>& metas,
                 int quorum, const WritePrecondition& precondition) {
    // The key's lock covers the commit only: staging is private to this write, so the body can
    // stream in unlocked, and a slow client never holds up other writers of the key.
    auto lock = LockObject(bucket, key, LockMode::kExclusive, "PutObject");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    // Cached: RenameData refuses a bucket deleted meanwhile (kNoSuchBucket from CommitAll).
    RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
    RS_RETURN_IF_ERROR(CheckPrecondition(bucket, key, loc, precondition));
    return CommitAll(bucket, loc, st, alive, metas, quorum, **lock);
  }

  // A conditional write's check against the version it would replace; the caller holds the key's
  // exclusive lock (on a quorum of nodes in a cluster), so no other commit can come in between.
  Status CheckPrecondition(const std::string& bucket, const std::string& key,
                           const paths::KeyLocation& loc, const WritePrecondition& precondition) {
    if (!precondition) return {};
    auto current = Resolve(bucket, loc);
    if (!current.ok() && current.error().code != ErrorCode::kNoSuchKey) return current.error();
    std::optional<ObjectInfo> info;
    if (current.ok()) info = current->meta.ToInfo(bucket, key);
    return precondition(info ? &*info : nullptr);
  }

  // Commits the staged version on every alive drive with one RenameData call each (it writes
  // metas[p], moves the data in, retires the old version); rolls back when fewer than `quorum`
  // did. `lock`: the key's exclusive namespace lock, held by the caller; a lost lock aborts first.
  // keep_data: replace only the metadata files (the data directories stay as they are).
  Status CommitAll(const std::string& bucket, const paths::KeyLocation& loc, const Stagings& st,
                   std::vector<bool>& alive, const std::vector<ObjectMeta>& metas, int quorum,
                   const NamespaceLock& lock, bool keep_data = false) {
    if (lock.lost()) {
      return MakeError(ErrorCode::kSlowDown,
                       "lock on " + bucket + "/" + loc.rel_dir + " was lost; nothing committed");
    }
    const size_t n = roots_.size();
    std::vector<RenameDataResult> old(n);
    std::vector<char> no_bucket(n, 0);
    const std::string key_dir = Join(bucket, loc.rel_dir);
    auto new_data = [&](size_t p) {
      const bool has_data = !keep_data && (!metas[p].erasure || !metas[p].erasure->is_inline);
      return has_data ? metas[p].data_dir : std::string();
    };
    auto committed = ForEachDrive(alive, [&](size_t p) {
      RenameDataRequest req{st[p],       bucket,
                            key_dir,     std::string(loc.meta_name),
                            new_data(p), SerializeObjectMeta(metas[p]),
                            keep_data,   /*prune=*/false};
      st.Use(p);
      auto r = roots_[p]->RenameData(req);
      if (!r.ok()) {
        no_bucket[p] = r.error().code == ErrorCode::kNoSuchBucket;
        return false;
      }
      if (r->old_data_name.empty()) st.Gone(p);  // else Stagings removes it with the old data
      old[p] = std::move(*r);
      return true;
    });
    if (Count(committed) >= quorum) return {};
    spdlog::warn("erasure: {}/{}: only {} of {} drives committed; rolling back", bucket,
                 loc.rel_dir, Count(committed), quorum);
    ForEachDrive(committed, [&](size_t p) {
      Rollback(p, bucket, loc, st[p], old[p].old_meta, old[p].old_data_name, new_data(p));
      return true;
    });
    if (static_cast<int>(std::count(no_bucket.begin(), no_bucket.end(), 1)) >
        static_cast<int>(n) - quorum) {
      ForgetBucket(bucket);  // deleted (by another node) since it was cached
      return MakeError(ErrorCode::kNoSuchBucket);
    }
    return WriteQuorumError(Count(committed), quorum);
  }

  // Restores the version a commit replaced on drive p (its data was retired to <staging>/old).
  void Rollback(size_t p, const std::string& bucket, const paths::KeyLocation& loc,
                const std::string& staging, const std::optional<std::string>& old_raw,
                const std::string& old_data, const std::string& new_data) {
    Drive& d = *roots_[p];
    const std::string s2 = rel::Staging(hash::RandomHex(16));
    if (!d.MakeDir(s2).ok()) return;
    std::string restore_data;
    if (old_raw) {
      (void)d.WriteFile(Join(s2, "meta"), *old_raw);
      if (!old_data.empty() && d.Rename(Join(staging, "old"), Join(s2, "data")).ok()) {
        restore_data = old_data;
      }
    }
    const std::string key_dir = Join(bucket, loc.rel_dir);
    fsutil::CommitPlan plan{std::string(), bucket,  s2, key_dir, std::string(loc.meta_name),
                            restore_data,  new_data};
    if (auto c = d.Commit(plan); !c.ok()) {
      spdlog::error("erasure: rollback on {} failed: {}", d.name(), c.error().message);
    }
    (void)d.RemoveAll(s2);
  }

  ObjectMeta MetaFor(const ObjectMeta& base, const std::vector<int>& dist, size_t p,
                     const std::vector<std::string>* inline_shards) const {
    ObjectMeta m = base;
    m.erasure->index = dist[p];
    if (inline_shards) m.erasure->inline_shard = (*inline_shards)[p];
    return m;
  }

  ObjectMeta NewMeta(const std::string& key, const paths::KeyLocation& loc) const {
    ObjectMeta m;
    m.data_dir = std::string(loc.data_prefix) + hash::RandomHex(16);
    ErasureMeta e;
    e.data = data_;
    e.parity = parity_;
    e.stripe_size = erasure::kStripeSize;
    e.distribution = Distribution(key);
    e.bitrot = erasure::kBitrotAlgorithm;
    m.erasure = std::move(e);
    return m;
  }

  Result<ObjectInfo> PutObject(const std::string& bucket, const std::string& key,
                               BodySource& body, const PutOptions& opts,
                               const CommitCheck& check) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    auto codec = GetCodec(data_, parity_);
    if (!codec.ok()) return codec.error();
    ObjectMeta meta = NewMeta(key, *loc);
    const auto& dist = meta.erasure->distribution;
    std::vector<bool> alive(roots_.size(), true);
    // Per remote drive: the shard's pieces (none for an inline object) and one RenameData.
    Stagings st(*this, alive, /*create=*/false);
    std::vector<std::string> inline_shards;
    std::string md5;
    auto size =
        Encode(body, opts.size, kMaxPutSize, **codec, dist, st, alive, "data/" + PartFileName(1),
               /*allow_inline=*/true, &inline_shards, check ? nullptr : &md5,
               /*committed_by_rename_data=*/true);
    if (!size.ok()) return size.error();
    CommitInfo ci;
    if (check) {
      auto r = check(*size);
      if (!r.ok()) return r.error();
      ci = std::move(*r);
    } else {
      ci.etag = md5;
    }
    meta.size = *size;
    meta.etag = StripQuotes(ci.etag);
    meta.mtime_ns = NowNs();
    meta.content_type = opts.content_type;
    meta.user_metadata = opts.user_metadata;
    meta.tags = opts.tags;
    meta.storage_class = opts.storage_class;
    meta.checksums = ci.checksums;
    meta.parts.push_back(PartMeta{1, *size, meta.etag});
    meta.erasure->is_inline = !inline_shards.empty();
    std::vector<ObjectMeta> metas;
    for (size_t p = 0; p < roots_.size(); ++p) {
      metas.push_back(MetaFor(meta, dist, p, meta.erasure->is_inline ? &inline_shards : nullptr));
    }
    RS_RETURN_IF_ERROR(
        Publish(bucket, key, *loc, st, alive, metas, write_quorum(), opts.precondition));
    return meta.ToInfo(bucket, key);
  }

  // ---- reads ----

  // Reads every drive's metadata and picks the version at least read-quorum drives agree on.
  Result<ObjectView> Resolve(const std::string& bucket, const paths::KeyLocation& loc) {
    const size_t n = roots_.size();
    std::vector<std::optional<ObjectMeta>> metas(n);
    const std::string path = Join(Join(bucket, loc.rel_dir), loc.meta_name);
    // true: the drive answers and has no such key.
    auto missing_on = ForEachDrive(
        [&](size_t p) {
          auto raw = roots_[p]->ReadFile(path);
          if (!raw.ok()) return false;
          if (!raw->has_value()) return roots_[p]->StatVol(bucket);
          auto m = ParseObjectMeta(**raw, path);
          if (m.ok() && m->erasure)
            metas[p] = std::move(*m);  // else corrupt: this drive needs healing
          return false;
        },
        DriveWork::kLookup);
    const int missing = Count(missing_on);
    std::map<std::pair<std::string, std::string>, std::vector<size_t>> groups;
    for (size_t p = 0; p < n; ++p) {
      if (metas[p]) groups[{metas[p]->data_dir, metas[p]->etag}].push_back(p);
    }
    const std::vector<size_t>* best = nullptr;
    for (const auto& [id, ps] : groups) {
      if (!best || ps.size() > best->size() ||
          (ps.size() == best->size() && metas[ps[0]]->mtime_ns > metas[(*best)[0]]->mtime_ns)) {
        best = &ps;
      }
    }
    if (!best || static_cast<int>(best->size()) < metas[(*best)[0]]->erasure->data) {
      if (missing > static_cast<int>(n) - read_quorum() || !best) {
        return MakeError(ErrorCode::kNoSuchKey);
      }
      return MakeError(
          ErrorCode::kInsufficientReadQuorum,
          "object metadata readable on " + std::to_string(best->size()) + " drives only");
    }
    ObjectView v;
    v.meta = *metas[(*best)[0]];
    v.meta.erasure->inline_shard.clear();
    v.sources.resize(n);
    v.has.assign(n, false);
    const auto& dist = v.meta.erasure->distribution;
    const auto& e = *v.meta.erasure;
    const erasure::Geometry g{e.data, e.parity, e.stripe_size};
    std::vector<uint64_t> file_sizes;
    for (const auto& part : v.meta.parts) file_sizes.push_back(g.ShardFileSize(part.size));
    for (size_t p = 0; p < n; ++p) {
      v.sources[p].shard = dist[p];
      v.sources[p].drive = roots_[p];
      v.sources[p].file_sizes = file_sizes;
    }
    for (size_t p : *best) {
      ShardSource& s = v.sources[p];
      ObjectMeta& m = *metas[p];
      v.has[p] = true;
      if (m.erasure->index != dist[p]) continue;  // inconsistent copy: heal rewrites it
      s.usable = true;
      s.is_inline = m.erasure->is_inline;
      s.inline_shard = std::move(m.erasure->inline_shard);
      s.data_dir = Join(Join(bucket, loc.rel_dir), m.data_dir);
    }
    return v;
  }

  Result<std::unique_ptr<ObjectReader>> OpenObject(const std::string& bucket,
                                                   const std::string& key);

  // Resolve for a read whose bucket check was a cached one: a key reported missing is checked
  // against the bucket's drives first (kNoSuchBucket when it was deleted meanwhile).
  Result<ObjectView> ResolveForRead(const std::string& bucket, const paths::KeyLocation& loc) {
    auto v = Resolve(bucket, loc);
    if (!v.ok() && v.error().code == ErrorCode::kNoSuchKey) RS_RETURN_IF_ERROR(CheckBucket(bucket));
    return v;
  }

  Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    auto lock = LockObject(bucket, key, LockMode::kShared, "HeadObject");
    if (!lock.ok()) return lock.error();
    auto v = ResolveForRead(bucket, *loc);
    if (!v.ok()) return v.error();
    return v->meta.ToInfo(bucket, key);
  }

  // One RenameData per drive: removes the metadata file, the data and the key's directories
  // left empty (a drive without the key but with the bucket counts as done).
  Status DeleteObject(const std::string& bucket, const std::string& key) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    std::vector<bool> alive(roots_.size(), true);
    Stagings st(*this, alive, /*create=*/false);
    const std::string key_dir = Join(bucket, loc->rel_dir);
    auto lock = LockObject(bucket, key, LockMode::kExclusive, "DeleteObject");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    const int done = Count(ForEachDrive(alive, [&](size_t p) {
      RenameDataRequest req{st[p],
                            bucket,
                            key_dir,
                            std::string(loc->meta_name),
                            "",
                            std::nullopt,
                            /*keep_data=*/false,
                            /*prune=*/true};
      st.Use(p);
      auto r = roots_[p]->RenameData(req);
      if (r.ok()) st.Gone(p);  // a delete keeps nothing to roll back to
      return r.ok();
    }));
    if (done < write_quorum()) return WriteQuorumError(done, write_quorum());
    return {};
  }

  Result<ObjectInfo> UpdateMetadata(const std::string& bucket, const std::string& key,
                                    const PutOptions& opts) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    std::vector<bool> alive(roots_.size(), true);
    Stagings st(*this, alive, /*create=*/false);
    auto lock = LockObject(bucket, key, LockMode::kExclusive, "CopyObject");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    auto v = Resolve(bucket, *loc);
    if (!v.ok()) return v.error();
    v->meta.tags = opts.tags;
    if (!opts.tags_only) {
      v->meta.content_type = opts.content_type;
      v->meta.user_metadata = opts.user_metadata;
      v->meta.storage_class = opts.storage_class;
      v->meta.mtime_ns = NowNs();
    }
    std::vector<ObjectMeta> metas(roots_.size());
    for (size_t p = 0; p < roots_.size(); ++p) {
      alive[p] = alive[p] && v->sources[p].usable;
      if (!alive[p]) continue;
      metas[p] = v->meta;
      // Each drive keeps its own shard index (v->meta carries one drive's): writing one index
      // everywhere left a single readable shard after a metadata-only update.
      metas[p].erasure->index = v->sources[p].shard;
      metas[p].erasure->inline_shard = v->sources[p].inline_shard;
    }
    RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, alive, metas, write_quorum(), **lock,
                                 /*keep_data=*/true));
    return v->meta.ToInfo(bucket, key);
  }

  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts,
                                 int min_copies) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    std::vector<ListResult> listed(roots_.size());
    // A drive without the bucket or offline is skipped.
    auto ok = ForEachDrive(
        [&](size_t p) {
          auto l = roots_[p]->ListObjects(bucket, opts);
          if (l.ok()) listed[p] = std::move(*l);
          return l.ok();
        },
        DriveWork::kLookup);
    std::vector<ListResult> parts;
    for (size_t p = 0; p < listed.size(); ++p)
      if (ok[p]) parts.push_back(std::move(listed[p]));
    return MergeListings(std::move(parts), opts.max_keys, min_copies);
  }

  // ---- multipart ----

  Result<UploadRecord> LoadUpload(const std::string& bucket, const std::string& key,
                                  const std::string& upload_id) {
    if (!IsUploadId(upload_id)) return MakeError(ErrorCode::kNoSuchUpload);
    const std::string file = Join(Join(rel::MultipartBucket(bucket), upload_id), kUploadFile);
    std::vector<std::optional<UploadRecord>> recs(roots_.size());
    const int copies = Count(ForEachDrive(
        [&](size_t p) {
          auto raw = roots_[p]->ReadFile(file);
          if (!raw.ok() || !raw->has_value()) return false;
          auto parsed = ParseUploadRecord(**raw, file);
          if (parsed.ok()) recs[p] = std::move(*parsed);
          return parsed.ok();
        },
        DriveWork::kLookup));
    auto first =
        std::find_if(recs.begin(), recs.end(), [](const auto& r) { return r.has_value(); });
    if (first == recs.end() || copies < read_quorum()) return MakeError(ErrorCode::kNoSuchUpload);
    auto& rec = *first;
    if (rec->key != key)
      return MakeError(ErrorCode::kNoSuchUpload, "upload belongs to another key");
    return *rec;
  }

  Result<std::string> NewMultipartUpload(const std::string& bucket, const std::string& key,
                                         const PutOptions& opts) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    auto made = NewUploadRecord(key, opts);
    if (!made.ok()) return made.error();
    UploadRecord rec = std::move(*made);
    const std::string id = hash::RandomHex(16);
    std::vector<bool> alive(roots_.size(), true);
    Stagings st(*this, alive, /*create=*/true);
    std::shared_lock bucket_lock(BucketLock(bucket));
    const std::string mp = rel::MultipartBucket(bucket);
    const int done = Count(ForEachDrive(alive, [&](size_t p) {
      Drive& d = *roots_[p];
      const std::string staged = Join(st[p], "upload");
      if (!d.MakeDir(staged).ok() ||
          !d.WriteFile(Join(staged, kUploadFile), SerializeUploadRecord(rec)).ok() ||
          !d.MakeDirAll(rel::MultipartRoot(), mp).ok() || !d.Rename(staged, Join(mp, id)).ok()) {
        return false;
      }
      (void)d.FsyncDir(mp);
      return true;
    }));
    if (done < write_quorum()) {
      ForEachDrive([&](size_t p) { return roots_[p]->RemoveAll(Join(mp, id)).ok(); });
      return WriteQuorumError(done, write_quorum());
    }
    return id;
  }

  Result<PartInfo> PutObjectPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number,
                                 BodySource& body, std::optional<uint64_t> size,
                                 const CommitCheck& check) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    if (part_number < 1 || part_number > kMaxPartNumber) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Part number must be an integer between 1 and 10000, inclusive");
    }
    auto rec = LoadUpload(bucket, key, upload_id);
    if (!rec.ok()) return rec.error();
    auto codec = GetCodec(data_, parity_);
    if (!codec.ok()) return codec.error();
    const std::vector<int> dist = Distribution(key);
    std::vector<bool> alive(roots_.size(), true);
    Stagings st(*this, alive, /*create=*/true);
    if (Count(alive) < write_quorum()) return WriteQuorumError(Count(alive), write_quorum());
    std::string md5;
    auto got = Encode(body, size, kMaxPutSize, **codec, dist, st, alive, "part",
                      /*allow_inline=*/false, nullptr, check ? nullptr : &md5);
    if (!got.ok()) return got.error();
    CommitInfo ci;
    if (check) {
      auto r = check(*got);
      if (!r.ok()) return r.error();
      ci = std::move(*r);
    } else {
      ci.etag = md5;
    }
    PartRecord part;
    part.info.number = part_number;
    part.info.etag = StripQuotes(ci.etag);
    part.info.size = *got;
    part.info.mtime_ns = NowNs();
    part.info.checksums = ci.checksums;
    part.data_file = PartFileName(static_cast<size_t>(part_number)) + "." + hash::RandomHex(8);
    // The upload's lock orders part commits against completion and abort (on every node).
    auto lock = LockUpload(bucket, upload_id, "PutObjectPart");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    rec = LoadUpload(bucket, key, upload_id);  // aborted or completed meanwhile?
    if (!rec.ok()) return rec.error();
    if ((*lock)->lost()) return MakeError(ErrorCode::kSlowDown, "upload lock lost");
    const std::string upload_dir = Join(rel::MultipartBucket(bucket), upload_id);
    const std::string rec_path = Join(upload_dir, PartRecordName(part_number));
    const int done = Count(ForEachDrive(alive, [&](size_t p) {
      Drive& d = *roots_[p];
      const std::string staged_rec = Join(st[p], "part.json");
      if (!d.IsDir(upload_dir) || !d.WriteFile(staged_rec, SerializePartRecord(part)).ok()) {
        return false;
      }
      std::string old_data;
      if (auto raw = d.ReadFile(rec_path); raw.ok() && raw->has_value()) {
        if (auto old = ParsePartRecord(**raw, rec_path); old.ok()) old_data = old->data_file;
      }
      const std::string dest = Join(upload_dir, part.data_file);
      if (!d.Rename(Join(st[p], "part"), dest).ok()) return false;
      if (!d.Rename(staged_rec, rec_path).ok()) {
        (void)d.Unlink(dest);
        return false;
      }
      (void)d.FsyncDir(upload_dir);
      if (!old_data.empty() && old_data != part.data_file) {
        (void)d.Unlink(Join(upload_dir, old_data));
      }
      return true;
    }));
    if (done < write_quorum()) return WriteQuorumError(done, write_quorum());
    return part.info;
  }

  // Part records agreed by at least read-quorum drives: number -> (record per position).
  std::map<int, std::vector<std::optional<PartRecord>>> LoadParts(const std::string& bucket,
                                                                  const std::string& upload_id) {
    const std::string dir = Join(rel::MultipartBucket(bucket), upload_id);
    std::vector<std::vector<PartRecord>> found(roots_.size());  // per position
    ForEachDrive(
        [&](size_t p) {
          auto names = roots_[p]->ListDir(dir, /*dirs_only=*/false);
          if (!names.ok()) return false;
          for (const auto& n : *names) {
            if (!n.starts_with("part.") || !n.ends_with(".json")) continue;
            const std::string path = Join(dir, n);
            auto raw = roots_[p]->ReadFile(path);
            if (!raw.ok() || !raw->has_value()) continue;
            auto r = ParsePartRecord(**raw, path);
            if (r.ok()) found[p].push_back(std::move(*r));
          }
          return true;
        },
        DriveWork::kLookup);
    std::map<int, std::vector<std::optional<PartRecord>>> out;
    for (size_t p = 0; p < found.size(); ++p) {
      for (auto& r : found[p]) {
        auto& v = out[r.info.number];
        v.resize(roots_.size());
        v[p] = std::move(r);
      }
    }
    // Keep, per part, the records of the etag most drives agree on (and only with read quorum).
    for (auto it = out.begin(); it != out.end();) {
      std::map<std::string, int> votes;
      for (const auto& r : it->second)
        if (r) ++votes[r->info.etag];
      std::string best;
      int best_n = 0;
      for (const auto& [etag, c] : votes)
        if (c > best_n) best = etag, best_n = c;
      if (best_n < read_quorum()) {
        it = out.erase(it);
        continue;
      }
      for (auto& r : it->second)
        if (r && r->info.etag != best) r.reset();
      ++it;
    }
    return out;
  }

  Result<std::vector<PartInfo>> ListParts(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto rec = LoadUpload(bucket, key, upload_id);
    if (!rec.ok()) return rec.error();
    std::vector<PartInfo> out;
    for (auto& [num, recs] : LoadParts(bucket, upload_id)) {
      for (auto& r : recs) {
        if (r) {
          out.push_back(r->info);
          break;
        }
      }
    }
    return out;
  }

  Result<std::vector<UploadInfo>> ListMultipartUploads(const std::string& bucket,
                                                       const std::string& prefix) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    const std::string mp = rel::MultipartBucket(bucket);
    std::vector<std::vector<UploadInfo>> listed(roots_.size());  // per position
    ForEachDrive(
        [&](size_t p) {
          auto ids = roots_[p]->ListDir(mp, /*dirs_only=*/true);
          if (!ids.ok()) return false;
          for (const auto& id : *ids) {
            if (!IsUploadId(id)) continue;
            const std::string file = Join(Join(mp, id), kUploadFile);
            auto raw = roots_[p]->ReadFile(file);
            if (!raw.ok() || !raw->has_value()) continue;
            auto rec = ParseUploadRecord(**raw, file);
            if (!rec.ok() || !rec->key.starts_with(prefix)) continue;
            listed[p].push_back(UploadInfo{rec->key, id, rec->initiated_ns});
          }
          return true;
        },
        DriveWork::kLookup);
    std::map<std::string, UploadInfo> found;
    std::map<std::string, int> copies;
    for (const auto& infos : listed) {
      for (const auto& info : infos) {
        ++copies[info.upload_id];
        found.emplace(info.upload_id, info);
      }
    }
    std::vector<UploadInfo> out;
    for (auto& [id, info] : found)
      if (copies[id] >= read_quorum()) out.push_back(std::move(info));
    std::sort(out.begin(), out.end(), [](const UploadInfo& a, const UploadInfo& b) {
      return std::tie(a.key, a.initiated_ns, a.upload_id) <
             std::tie(b.key, b.initiated_ns, b.upload_id);
    });
    return out;
  }

  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto lock = LockUpload(bucket, upload_id, "AbortMultipartUpload");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    auto rec = LoadUpload(bucket, key, upload_id);
    if (!rec.ok()) return rec.error();
    RemoveUpload(bucket, upload_id);
    return {};
  }

  void RemoveUpload(const std::string& bucket, const std::string& upload_id) {
    const std::string dir = Join(rel::MultipartBucket(bucket), upload_id);
    const std::string staging = rel::Staging(hash::RandomHex(16));
    ForEachDrive([&](size_t p) {
      Drive& d = *roots_[p];
      // One rename makes the upload disappear from this drive; the files go with the staging dir.
      if (d.MakeDir(staging).ok() && !d.Rename(dir, Join(staging, "upload")).ok()) {
        (void)d.RemoveAll(dir);
      }
      return d.RemoveAll(staging).ok();
    });
  }

  Result<ObjectInfo> CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id,
                                             const std::vector<CompletePart>& parts,
                                             const WritePrecondition& precondition) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto loc = paths::MapKey(key);
    if (!loc.ok()) return loc.error();
    if (parts.empty()) {
      return MakeError(ErrorCode::kMalformedXML, "You must specify at least one part");
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].number < 1 || parts[i].number > kMaxPartNumber) {
        return MakeError(ErrorCode::kInvalidPart,
                         "invalid part number " + std::to_string(parts[i].number));
      }
      if (i > 0 && parts[i].number <= parts[i - 1].number) {
        return MakeError(ErrorCode::kInvalidPartOrder);
      }
    }
    std::vector<bool> alive(roots_.size(), true);
    Stagings st(*this, alive, /*create=*/true);
    // Lock order everywhere: upload, object, bucket (the in-process bucket lock is innermost).
    auto upload_lock = LockUpload(bucket, upload_id, "CompleteMultipartUpload");
    if (!upload_lock.ok()) return upload_lock.error();
    auto lock = LockObject(bucket, key, LockMode::kExclusive, "CompleteMultipartUpload");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    auto rec = LoadUpload(bucket, key, upload_id);
    if (!rec.ok()) return rec.error();
    RS_RETURN_IF_ERROR(CheckPrecondition(bucket, key, *loc, precondition));
    auto all = LoadParts(bucket, upload_id);
    std::vector<const std::vector<std::optional<PartRecord>>*> chosen;
    std::vector<PartInfo> infos;
    for (const auto& p : parts) {
      auto it = all.find(p.number);
      const PartRecord* any = nullptr;
      if (it != all.end())
        for (const auto& r : it->second)
          if (r && !any) any = &*r;
      if (!any) {
        return MakeError(ErrorCode::kInvalidPart,
                         "part " + std::to_string(p.number) + " was not uploaded");
      }
      if (any->info.etag != StripQuotes(p.etag)) {
        return MakeError(ErrorCode::kInvalidPart,
                         "part " + std::to_string(p.number) + ": ETag does not match");
      }
      chosen.push_back(&it->second);
      infos.push_back(any->info);
    }
    uint64_t total = 0;
    for (size_t i = 0; i < infos.size(); ++i) {
      if (i + 1 < infos.size() && infos[i].size < kMinPartSize) {
        return MakeError(ErrorCode::kEntityTooSmall,
                         "part " + std::to_string(infos[i].number) +
                             " is smaller than 5 MiB and not the last part");
      }
      total += infos[i].size;
    }
    if (total > kMaxObjectSize) return MakeError(ErrorCode::kEntityTooLarge);

    ObjectMeta meta = NewMeta(key, *loc);
    const std::string suffix = "-" + std::to_string(infos.size());
    std::vector<std::string> etags;
    for (const auto& r : infos) etags.push_back(r.etag);
    meta.etag = MultipartEtag(etags);
    for (const auto& [name, unused] : infos.front().checksums) {
      auto algo = hash::ChecksumAlgoFromName(name);
      if (!algo) continue;
      std::string raw_sums;
      bool every = true;
      for (const auto& r : infos) {
        auto it = r.checksums.find(name);
        std::optional<std::string> raw;
        if (it != r.checksums.end()) raw = hash::Base64Decode(it->second);
        if (!raw) {
          every = false;
          break;
        }
        raw_sums += *raw;
      }
      if (every) meta.checksums[name] = hash::Base64Encode(hash::Digest(*algo, raw_sums)) + suffix;
    }
    meta.size = total;
    meta.mtime_ns = NowNs();
    meta.content_type = rec->content_type;
    meta.user_metadata = rec->user_metadata;
    meta.tags = rec->tags;
    meta.storage_class = rec->storage_class;
    meta.multipart = true;
    for (size_t i = 0; i < infos.size(); ++i) {
      meta.parts.push_back(PartMeta{static_cast<int>(i + 1), infos[i].size, infos[i].etag});
    }
    // Per drive: hard-link this drive's shard of every part into the new data directory.
    const std::string upload_dir = Join(rel::MultipartBucket(bucket), upload_id);
    alive = ForEachDrive(alive, [&](size_t p) {
      Drive& d = *roots_[p];
      const std::string data = Join(st[p], "data");
      bool ok = d.MakeDir(data).ok();
      for (size_t i = 0; ok && i < chosen.size(); ++i) {
        const auto& r = (*chosen[i])[p];
        ok = r && d.Link(Join(upload_dir, r->data_file), Join(data, PartFileName(i + 1))).ok();
      }
      return ok && d.FsyncDir(data).ok();
    });
    const auto& dist = meta.erasure->distribution;
    std::vector<ObjectMeta> metas;
    for (size_t p = 0; p < roots_.size(); ++p) metas.push_back(MetaFor(meta, dist, p, nullptr));
    if (Count(alive) < write_quorum()) return WriteQuorumError(Count(alive), write_quorum());
    RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, alive, metas, write_quorum(), **lock));
    RemoveUpload(bucket, upload_id);
    return meta.ToInfo(bucket, key);
  }

  Result<PutOptions> GetUploadOptions(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) {
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
    auto rec = LoadUpload(bucket, key, upload_id);
    if (!rec.ok()) return rec.error();
    PutOptions opts;
    opts.content_type = rec->content_type;
    opts.user_metadata = rec->user_metadata;
    opts.tags = rec->tags;
    opts.storage_class = rec->storage_class;
    if (!rec->checksum_algorithm.empty()) {
      opts.user_metadata[kChecksumAlgorithmKey] = rec->checksum_algorithm;
    }
    return opts;
  }

  // ---- healing ----

  // Rewrites every drive copy of the object that is missing, stale, unreadable or corrupt on an
  // online drive; names the drives whose copy it could not rewrite.
  Result<ObjectHealResult> HealObject(const std::string& bucket, const std::string& key);

  // Removes the copies of an object held by fewer drives than read quorum (leftovers of a failed
  // write), under the key's lock, if that is still all there is; returns 0.
  Result<int> RemoveDangling(const std::string& bucket, const paths::KeyLocation& loc,
                             const std::string& key) {
    const std::string key_dir = Join(bucket, loc.rel_dir);
    const std::string meta_path = Join(key_dir, loc.meta_name);
    auto has_copy = [&](size_t p) { return roots_[p]->Exists(meta_path); };
    if (Count(ForEachDrive(has_copy, DriveWork::kLookup)) == 0) return 0;  // nothing there
    auto lock = LockObject(bucket, key, LockMode::kExclusive, "HealObject");
    if (!lock.ok()) return lock.error();
    std::shared_lock bucket_lock(BucketLock(bucket));
    auto v = Resolve(bucket, loc);
    if (v.ok() || v.error().code != ErrorCode::kNoSuchKey) return 0;  // a write landed meanwhile
    const int removed = Count(ForEachDrive([&](size_t p) {
      Drive& d = *roots_[p];
      if (!d.Exists(meta_path)) return false;
      const std::string staging = rel::Staging(hash::RandomHex(16));
      if (!d.MakeDir(staging).ok()) return false;
      auto old = DataDirOf(d, meta_path);
      fsutil::CommitPlan plan{std::string(),
                              bucket,
                              staging,
                              key_dir,
                              std::string(loc.meta_name),
                              "",
                              old.ok() ? *old : std::string()};
      const bool ok = d.Commit(plan).ok();
      (void)d.RemoveAll(staging);
      d.PruneEmptyDirs(key_dir, bucket);
      return ok;
    }));
    if (removed > 0)
      spdlog::info("heal: removed dangling {}/{} from {} drive(s)", bucket, key, removed);
    return 0;
  }

  void EnsureBucket(const std::string& bucket) {
    auto info = GetBucketInfo(bucket);
    MakeBucket(bucket, info.ok() ? info->created_ns : NowNs());
  }

  bool BucketCached(const std::string& bucket) {
    std::lock_guard lock(bucket_cache_mu_);
    auto it = bucket_seen_.find(bucket);
    return it != bucket_seen_.end() &&
           std::chrono::steady_clock::now() - it->second < kBucketCacheTtl;
  }
  void RememberBucket(const std::string& bucket) {
    std::lock_guard lock(bucket_cache_mu_);
    if (bucket_seen_.size() >= kBucketCacheMax) bucket_seen_.clear();  // bounded; refills on use
    bucket_seen_[bucket] = std::chrono::steady_clock::now();
  }
  void ForgetBucket(const std::string& bucket) {
    std::lock_guard lock(bucket_cache_mu_);
    bucket_seen_.erase(bucket);
  }

  std::shared_mutex& BucketLock(const std::string& bucket) {
    return bucket_locks_[std::hash<std::string>{}(bucket) % bucket_locks_.size()];
  }

  void ReportDegraded(const std::string& bucket, const std::string& key) {
    if (on_degraded_) on_degraded_(bucket, key);
  }

 private:
  std::vector<Drive*> roots_;  // owned by ErasureStore
  int n_, data_, parity_;
  Degraded on_degraded_;
  DriveFanout fanout_;
  std::mutex locker_mu_;  // guards locker_ and lock_timeout_ (replaced at start-up)
  std::shared_ptr<NamespaceLocker> locker_ = std::make_shared<LocalNamespaceLocker>();
  std::chrono::milliseconds lock_timeout_ = kDefaultLockTimeout;
  std::mutex codec_mu_;
  std::map<std::pair<int, int>, std::unique_ptr<Codec>> codecs_;
  std::array<std::shared_mutex, 32> bucket_locks_;
  // Buckets seen on a read quorum, and when (CheckBucket's `cached`).
  static constexpr std::chrono::seconds kBucketCacheTtl{60};
  static constexpr size_t kBucketCacheMax = 4096;
  std::mutex bucket_cache_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> bucket_seen_;
};

namespace {

class ErasureReader final : public ObjectReader {
 public:
  // `drives`: the set's fan-out (the set outlives its readers).
  ErasureReader(ObjectInfo info, ObjectView view, const Codec* codec, const DriveFanout& drives,
                std::function<void()> degraded)
      : info_(std::move(info)),
        v_(std::move(view)),
        codec_(codec),
        drives_(drives),
        degraded_(std::move(degraded)) {
    uint64_t off = 0;
    for (const auto& p : v_.meta.parts) {
      offsets_.push_back(off);
      off += p.size;
    }
  }

  const ObjectInfo& info() const override { return info_; }

  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    std::lock_guard lock(mu_);
    const uint64_t stripe = v_.meta.erasure->stripe_size;
    size_t done = 0;
    while (done < len && off + done < info_.size) {
      const uint64_t pos = off + done;
      size_t part = static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), pos) -
                                        offsets_.begin() - 1);
      while (part < offsets_.size() && v_.meta.parts[part].size == 0) ++part;  // empty parts
      const uint64_t in_part = pos - offsets_[part];
      const uint64_t s = in_part / stripe;
      if (!cached_ || cached_part_ != part || cached_stripe_ != s) {
        RS_RETURN_IF_ERROR(Load(part, s));
      }
      // The one copy of the GET path: from the verified shard blocks (where they were read)
      // into the caller's buffer, block by block.
      uint64_t in_stripe = in_part - s * stripe;
      const uint64_t want = std::min<uint64_t>(len - done, stripe_bytes_ - in_stripe);
      for (uint64_t left = want; left > 0;) {
        const uint64_t i = in_stripe / block_, at = in_stripe % block_;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, block_ - at));
        std::memcpy(buf + done, blocks_[static_cast<size_t>(i)] + at, n);
        done += n;
        in_stripe += n;
        left -= n;
      }
      copied_ += want;
    }
    return done;
  }

  uint64_t bytes_copied() const override { return copied_; }

 private:
  Status Load(size_t part, uint64_t s) {
    std::vector<int> bad;
    auto st =
        ReadStripe(v_, drives_, *codec_, part, s, shards_, present_, &bad, /*all=*/false, &blocks_);
    if (!bad.empty()) Degraded();
    if (!st.ok()) {
      spdlog::error("erasure: {}/{}: {}", info_.bucket, info_.key, st.error().message);
      return st;
    }
    const auto& e = *v_.meta.erasure;
    Geometry g{e.data, e.parity, e.stripe_size};
    stripe_bytes_ = g.StripeBytes(v_.meta.parts[part].size, s);
    block_ = g.BlockSize(stripe_bytes_);
    // A degraded stripe's rebuilt data shards were computed, not read: count them as copied.
    for (int i = 0; i < e.data; ++i)
      if (!present_[static_cast<size_t>(i)]) copied_ += block_;
    cached_ = true;
    cached_part_ = part;
    cached_stripe_ = s;
    return {};
  }

  void Degraded() {
    if (reported_) return;
    reported_ = true;
    if (degraded_) degraded_();
  }

  ObjectInfo info_;
  ObjectView v_;
  const Codec* codec_;
  const DriveFanout& drives_;
  std::function<void()> degraded_;
  std::vector<uint64_t> offsets_;
  std::mutex mu_;
  std::vector<uint8_t> shards_;  // reconstructed blocks of a degraded stripe
  std::vector<bool> present_;
  // The loaded stripe: its data bytes and each shard's block (ReadStripe's `blocks`).
  std::vector<uint8_t*> blocks_;
  uint64_t stripe_bytes_ = 0, block_ = 0;
  uint64_t copied_ = 0;  // bytes_copied()
  bool cached_ = false;
  size_t cached_part_ = 0;
  uint64_t cached_stripe_ = 0;
  bool reported_ = false;
};

}  // namespace

Result<std::unique_ptr<ObjectReader>> ErasureSet::OpenObject(const std::string& bucket,
                                                             const std::string& key) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  // Shared: no writer commits while the version is resolved and its shards are opened. Not held
  // while the body streams (a slow reader would hold up every writer of the key).
  auto lock = LockObject(bucket, key, LockMode::kShared, "GetObject");
  if (!lock.ok()) return lock.error();
  auto v = ResolveForRead(bucket, *loc);
  if (!v.ok()) return v.error();
  auto codec = GetCodec(v->meta.erasure->data, v->meta.erasure->parity);
  if (!codec.ok()) return codec.error();
  // Snapshot: open the first part on every drive now, so an overwrite cannot pull it away.
  std::vector<bool> probe(v->sources.size(), false);
  for (size_t p = 0; p < v->sources.size(); ++p) {
    probe[p] = v->has[p] && v->sources[p].usable && !v->sources[p].is_inline &&
               !v->meta.parts.empty() && v->meta.parts[0].size > 0;
  }
  auto probed = ForEachDrive(
      probe,
      [&](size_t p) {
        char byte;
        return v->sources[p].Read(0, 0, &byte, 1);
      },
      DriveWork::kLookup);
  bool degraded = false;
  for (size_t p = 0; p < v->sources.size(); ++p) {
    degraded = degraded || !v->has[p] || !v->sources[p].usable || (probe[p] && !probed[p]);
  }
  if (degraded) ReportDegraded(bucket, key);
  ObjectInfo info = v->meta.ToInfo(bucket, key);
  return std::unique_ptr<ObjectReader>(
      new ErasureReader(std::move(info), std::move(*v), *codec, fanout_,
                        [this, bucket, key] { ReportDegraded(bucket, key); }));
}

Result<ObjectHealResult> ErasureSet::HealObject(const std::string& bucket,
                                                const std::string& key) {
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  EnsureBucket(bucket);
  // Verification runs without the namespace lock, so a heal walk over healthy objects never holds
  // up writers (nor leaves a lock behind on the other nodes if this node dies mid-walk). Only a
  // heal with something to write takes the key's exclusive lock, and first checks that the version
  // it verified is still the current one.
  auto v = Resolve(bucket, *loc);
  if (!v.ok()) {
    if (v.error().code != ErrorCode::kNoSuchKey) return v.error();
    auto removed = RemoveDangling(bucket, *loc, key);
    if (!removed.ok()) return removed.error();
    return ObjectHealResult{*removed, {}};
  }
  const auto& e = *v->meta.erasure;
  auto codec = GetCodec(e.data, e.parity);
  if (!codec.ok()) return codec.error();
  const size_t n = roots_.size();
  std::vector<bool> bad_block(n, false);
  Geometry g{e.data, e.parity, e.stripe_size};
  std::vector<uint8_t> shards;
  std::vector<bool> present;
  // Pass 1: verify every block of every drive copy.
  for (size_t part = 0; part < v->meta.parts.size(); ++part) {
    for (uint64_t s = 0; s < g.StripeCount(v->meta.parts[part].size); ++s) {
      std::vector<int> bad;
      RS_RETURN_IF_ERROR(
          ReadStripe(*v, fanout_, **codec, part, s, shards, present, &bad, /*all=*/true));
      for (int p : bad) bad_block[static_cast<size_t>(p)] = true;
    }
  }
  // Copies that need rewriting on online drives; those that would but whose drive is offline
  // cannot be healed now and are named in the result (a walk that skipped them is not clean).
  ObjectHealResult result;
  auto needs = [&](const ObjectView& view) {
    std::vector<bool> need(n, false);
    result.missed_drives.clear();
    for (size_t p = 0; p < n; ++p) {
      if (!bad_block[p] && view.has[p] && view.sources[p].usable) continue;
      need[p] = roots_[p]->IsOnline();
      if (!need[p]) result.missed_drives.push_back(roots_[p]->name());
    }
    return need;
  };
  if (Count(needs(*v)) == 0) return result;
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "HealObject");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  auto now = Resolve(bucket, *loc);
  if (!now.ok() || now->meta.data_dir != v->meta.data_dir || now->meta.etag != v->meta.etag) {
    // Rewritten or deleted meanwhile: a write commits a whole version on a quorum.
    return ObjectHealResult{};
  }
  std::vector<bool> need = needs(*now);  // another heal may have done part of the work
  if (Count(need) == 0) return result;
  const std::vector<bool> wanted = need;  // a drive that fails below is named as missed
  // Pass 2: rebuild the copies that need it in staging, then commit them drive by drive.
  Stagings st(*this, need, /*create=*/true);
  const auto& dist = e.distribution;
  std::vector<std::string> inline_shards(n);
  for (size_t part = 0; part < v->meta.parts.size(); ++part) {
    const uint64_t size = v->meta.parts[part].size;
    std::vector<std::unique_ptr<ShardWriter>> fds(n);
    for (size_t p = 0; p < n && !e.is_inline; ++p) {
      if (!need[p]) continue;
      if (part == 0 && !roots_[p]->MakeDir(Join(st[p], "data")).ok()) {
        need[p] = false;
        continue;
      }
      auto fd = roots_[p]->CreateShard(
          Join(Join(st[p], "data"), PartFileName(part + 1)),
          erasure::Geometry{e.data, e.parity, e.stripe_size}.ShardFileSize(size));
      if (!fd.ok()) {
        need[p] = false;
        continue;
      }
      fds[p] = std::move(*fd);
    }
    for (uint64_t s = 0; s < g.StripeCount(size); ++s) {
      RS_RETURN_IF_ERROR(ReadStripe(*v, fanout_, **codec, part, s, shards, present, nullptr, true));
      const uint64_t block = g.BlockSize(g.StripeBytes(size, s));
      for (size_t p = 0; p < n; ++p) {
        if (!need[p]) continue;
        std::string framed;
        erasure::AppendFramedBlock(framed, &shards[static_cast<size_t>(dist[p]) * block], block);
        if (e.is_inline) {
          inline_shards[p] += framed;
        } else if (!fds[p]->Append(framed).ok()) {
          need[p] = false;
        }
      }
    }
    for (size_t p = 0; p < n; ++p) {
      // CommitAll's RenameData makes the files durable (its first barrier).
      if (need[p] && fds[p] && !fds[p]->Close().ok()) need[p] = false;
    }
  }
  std::vector<ObjectMeta> metas(n);
  for (size_t p = 0; p < n; ++p) {
    metas[p] = MetaFor(v->meta, dist, p, e.is_inline ? &inline_shards : nullptr);
  }
  auto name_failed = [&] {
    for (size_t p = 0; p < n; ++p) {
      if (wanted[p] && !need[p]) result.missed_drives.push_back(roots_[p]->name());
    }
  };
  const int healed = Count(need);
  if (healed == 0) {
    name_failed();
    return result;
  }
  // A corrupt copy of this version keeps its data directory name: move it aside so the rebuilt
  // one can take its place (readers holding its files open keep them).
  for (size_t p = 0; p < n && !e.is_inline; ++p) {
    const std::string old = Join(Join(bucket, loc->rel_dir), v->meta.data_dir);
    if (need[p] && roots_[p]->IsDir(old) && !roots_[p]->Rename(old, Join(st[p], "corrupt")).ok()) {
      need[p] = false;
    }
  }
  RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, need, metas, /*quorum=*/1, **lock));
  name_failed();
  result.rewritten = Count(need);
  spdlog::info("heal: {}/{}: rewrote {} drive copy(ies)", bucket, key, result.rewritten);
  return result;
}

// ---- ErasureStore ---------------------------------------------------------------------------

namespace {

std::string Absolute(const std::string& dir) {
  std::string root = std::filesystem::absolute(dir).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

}  // namespace

Result<std::unique_ptr<ErasureStore>> ErasureStore::Open(const std::vector<std::string>& drives,
                                                         const std::string& storage_class) {
  auto layout = erasure::PlanLayout(static_cast<int>(drives.size()), storage_class);
  if (!layout.ok()) return layout.error();
  std::vector<std::unique_ptr<Drive>> local;
  for (const auto& d : drives) {
    std::string root;
    try {
      root = Absolute(d);
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInvalidArgument, "drive " + d + ": " + e.what());
    }
    if (root == "/") return MakeError(ErrorCode::kInvalidArgument, "refusing to use / as a drive");
    local.push_back(std::make_unique<LocalDrive>(std::move(root)));
  }
  return Open(std::move(local), storage_class, FormatOptions{});
}

Result<std::unique_ptr<ErasureStore>> ErasureStore::Open(std::vector<std::unique_ptr<Drive>> drives,
                                                         const std::string& storage_class,
                                                         const FormatOptions& format_options) {
  auto layout = erasure::PlanLayout(static_cast<int>(drives.size()), storage_class);
  if (!layout.ok()) return layout.error();
  std::vector<Drive*> roots;
  for (const auto& d : drives) roots.push_back(d.get());
  auto format = LoadOrFormat(roots, *layout, format_options);
  if (!format.ok()) return format.error();
  auto store = std::unique_ptr<ErasureStore>(new ErasureStore());
  store->layout_ = *layout;
  store->deployment_id_ = format->deployment_id;
  store->hash_seed_ = XXH3_64bits(format->deployment_id.data(), format->deployment_id.size());
  store->drives_ = std::move(drives);
  bool replaced = false;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (format->states[i] == DriveState::kOffline) continue;
    // Each node settles its own drives' staging areas (a peer may be writing into them).
    if (!roots[i]->is_local()) continue;
    if (auto st = roots[i]->Prepare(); !st.ok()) {
      spdlog::warn("drive {} is offline: {}", roots[i]->name(), st.error().message);
    }
    replaced = replaced || (format->states[i] == DriveState::kFormatted && !format->fresh);
  }
  ErasureStore* self = store.get();
  // Threads mostly wait on a disk or the network: enough for a few requests' worth of one set's
  // drives at once; more calls queue (bounded threads, a queue of short calls).
  store->drive_pool_ = std::make_unique<ThreadPool>(std::clamp(4 * layout->set_size, 16, 128));
  for (int s = 0; s < layout->set_count; ++s) {
    std::vector<Drive*> set_roots(roots.begin() + s * layout->set_size,
                                  roots.begin() + (s + 1) * layout->set_size);
    store->sets_.push_back(std::make_unique<ErasureSet>(
        std::move(set_roots), layout->parity,
        [self](const std::string& b, const std::string& k) { self->Enqueue(b, k); },
        store->drive_pool_.get()));
  }
  spdlog::info(
      "erasure: {} drive(s) in {} set(s) of {}, EC {}+{} (read quorum {}, write quorum "
      "{}), deployment {}",
      roots.size(), layout->set_count, layout->set_size, layout->data(), layout->parity,
      erasure::ReadQuorum(layout->data(), layout->parity),
      erasure::WriteQuorum(layout->data(), layout->parity), format->deployment_id);
  store->worker_ = std::thread([self] { self->BackgroundLoop(); });
  if (replaced) {
    std::lock_guard lock(store->mu_);
    store->queue_.insert({"", ""});  // marker: heal everything
    store->cv_.notify_all();
  }
  return store;
}

ErasureStore::~ErasureStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ErasureStore::SetNamespaceLocker(std::shared_ptr<NamespaceLocker> locker,
                                      std::chrono::milliseconds timeout) {
  for (auto& s : sets_) s->SetLocker(locker, timeout);
}

ErasureSet& ErasureStore::SetFor(const std::string& key) {
  if (sets_.size() == 1) return *sets_[0];
  return *sets_[XXH3_64bits_withSeed(key.data(), key.size(), hash_seed_) % sets_.size()];
}

void ErasureStore::Enqueue(const std::string& bucket, const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.insert({bucket, key});  // a set: each object is queued once
  }
  cv_.notify_all();
}

size_t ErasureStore::heal_queue_size() {
  std::lock_guard lock(mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}

HealStatus ErasureStore::heal_status() {
  std::lock_guard lock(status_mu_);
  return status_;
}

void HealCounts::Add(const Result<ObjectHealResult>& r) {
  ++objects_scanned;
  if (!r.ok()) {
    ++failed;
    return;
  }
  if (r->rewritten > 0) {
    ++objects_healed;
    shards_written += static_cast<uint64_t>(r->rewritten);
  }
  if (!r->missed_drives.empty()) {
    ++incomplete;
    missed_drives.insert(r->missed_drives.begin(), r->missed_drives.end());
  }
}

std::string HealCounts::Summary() const {
  std::string out = std::to_string(objects_scanned) + " object(s) scanned, " +
                    std::to_string(objects_healed) + " healed, " + std::to_string(shards_written) +
                    " drive copies rewritten, " + std::to_string(failed) + " failed, " +
                    std::to_string(incomplete) + " incomplete";
  if (!missed_drives.empty()) {
    out += " (copies not rebuilt on:";
    for (const auto& d : missed_drives) out += " " + d;
    out += ")";
  }
  return out;
}

void ErasureStore::RecordHeal(const Result<ObjectHealResult>& r, const HealCounts* walk) {
  std::lock_guard lock(status_mu_);
  if (walk) status_.walk = *walk;
  status_.total.Add(r);
  if (r.ok() && r->rewritten > 0) status_.last_activity_ns = NowNs();
}

bool ErasureStore::DrainHealQueue(int timeout_ms) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [this] { return queue_.empty() && !busy_; });
}

void ErasureStore::StartMonitor(int interval_ms) {
  {
    std::lock_guard lock(mu_);
    monitor_interval_ms_ = interval_ms;
  }
  cv_.notify_all();
}

void ErasureStore::BackgroundLoop() {
  auto next_check = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    if (monitor_interval_ms_ > 0 && now >= next_check) {
      next_check = now + std::chrono::milliseconds(monitor_interval_ms_);
      busy_ = true;
      lock.unlock();
      CheckDrives();
      lock.lock();
      busy_ = false;
      continue;
    }
    if (queue_.empty()) {
      cv_.notify_all();  // DrainHealQueue waiters
      if (monitor_interval_ms_ > 0) {
        cv_.wait_until(lock, next_check);
      } else {
        cv_.wait(lock);
      }
      continue;
    }
    auto item = *queue_.begin();
    queue_.erase(queue_.begin());
    busy_ = true;
    lock.unlock();
    if (item.first.empty()) {
      auto counts = HealAll("", nullptr);
      if (counts.ok()) spdlog::info("heal: done: {}", counts->Summary());
    } else if (auto r = HealObject(item.first, item.second); !r.ok()) {
      spdlog::warn("heal: {}/{}: {}", item.first, item.second, r.error().message);
    }
    lock.lock();
    busy_ = false;
  }
}

int ErasureStore::CheckDrives(bool heal) {
  std::lock_guard check_lock(check_mu_);
  int replaced = 0;
  for (size_t i = 0; i < drives_.size(); ++i) {
    Drive& drive = *drives_[i];
    const std::string& root = drive.name();
    if (!drive.is_local()) continue;  // every node checks its own drives
    if (drive.Exists(rel::Format())) continue;
    if (!drive.IsDir("")) continue;                                      // gone
    if (auto empty = drive.IsEmpty(); !empty.ok() || !*empty) continue;  // not ours to touch
    std::vector<std::vector<std::string>> sets;
    for (size_t j = 0; j < drives_.size() && sets.empty(); ++j) {
      if (auto f = drives_[j]->ReadFormat(); f.ok()) sets = f->sets;
    }
    if (sets.empty()) continue;
    const int set = static_cast<int>(i) / layout_.set_size;
    const int drive_index = static_cast<int>(i) % layout_.set_size;
    if (auto st = FormatInto(drive, deployment_id_, sets, set, drive_index); !st.ok()) {
      spdlog::warn("drive {}: cannot format replacement: {}", root, st.error().message);
      continue;
    }
    (void)drive.Prepare();
    spdlog::warn("drive {} was replaced (empty): formatted into set {} drive {}; healing", root,
                 set + 1, drive_index + 1);
    ++replaced;
  }
  if (replaced > 0) {
    std::lock_guard lock(status_mu_);
    status_.drives_replaced += static_cast<uint64_t>(replaced);
  }
  if (replaced > 0 && heal) {
    auto counts = HealAll("", [](const std::string& b, const std::string& k, const HealCounts& c) {
      if (c.objects_scanned % 100 == 0) {
        spdlog::info("heal: progress: {} object(s) scanned, {} healed", c.objects_scanned,
                     c.objects_healed);
      }
    });
    if (counts.ok()) spdlog::info("heal of replaced drive(s) done: {}", counts->Summary());
  }
  return replaced;
}

Result<bool> ErasureStore::HealObject(const std::string& bucket, const std::string& key) {
  auto r = SetFor(key).HealObject(bucket, key);
  RecordHeal(r, nullptr);
  if (!r.ok()) return r.error();
  return r->rewritten > 0;
}

Result<HealCounts> ErasureStore::HealAll(const std::string& bucket, const HealProgress& progress) {
  std::set<std::string> buckets;
  if (bucket.empty()) {
    for (auto& s : sets_) {
      auto names = s->BucketNames();
      buckets.insert(names.begin(), names.end());
    }
  } else {
    if (!GetBucketInfo(bucket).ok()) return MakeError(ErrorCode::kNoSuchBucket);
    buckets.insert(bucket);
  }
  std::lock_guard walk_lock(walk_mu_);
  {
    std::lock_guard lock(status_mu_);
    status_.running = true;
    status_.walk = {};
  }
  struct Done {
    ErasureStore* self;
    ~Done() {
      std::lock_guard lock(self->status_mu_);
      self->status_.running = false;
    }
  } done{this};
  HealCounts c;
  for (const auto& b : buckets) {
    for (auto& s : sets_) {
      s->EnsureBucket(b);
      ListOptions opts;
      opts.max_keys = 1000;
      for (;;) {
        auto page = s->ListObjects(b, opts, /*min_copies=*/1);  // leftovers too
        if (!page.ok()) return page.error();
        for (const auto& o : page->objects) {
          auto r = s->HealObject(b, o.key);
          if (!r.ok()) spdlog::warn("heal: {}/{}: {}", b, o.key, r.error().message);
          c.Add(r);
          RecordHeal(r, &c);
          if (progress) progress(b, o.key, c);
        }
        if (!page->truncated || page->objects.empty()) break;
        opts.start_after = page->objects.back().key;
      }
    }
  }
  return c;
}

// ---- ObjectLayer: buckets span every set; objects live in the set their key hashes to -----

Status ErasureStore::MakeBucket(const std::string& bucket) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  const int64_t now = NowNs();
  bool existed = true;
  for (auto& s : sets_) {
    auto [have, before] = s->MakeBucket(bucket, now);
    if (have < s->write_quorum()) return WriteQuorumError(have, s->write_quorum());
    existed = existed && before >= s->read_quorum();
  }
  if (existed) return MakeError(ErrorCode::kBucketAlreadyOwnedByYou);
  return {};
}

Result<BucketInfo> ErasureStore::GetBucketInfo(const std::string& bucket) {
  return sets_[0]->GetBucketInfo(bucket);
}

Status ErasureStore::SetBucketTags(const std::string& bucket, const std::string& tags) {
  for (auto& s : sets_) RS_RETURN_IF_ERROR(s->SetBucketTags(bucket, tags));
  return {};
}

Result<std::vector<BucketInfo>> ErasureStore::ListBuckets() {
  std::vector<BucketInfo> out;
  for (const auto& name : sets_[0]->BucketNames()) {
    auto info = sets_[0]->GetBucketInfo(name);
    if (info.ok()) out.push_back(std::move(*info));
  }
  return out;
}

Status ErasureStore::DeleteBucket(const std::string& bucket) {
  for (auto& s : sets_) RS_RETURN_IF_ERROR(s->CheckBucket(bucket));
  for (auto& s : sets_) {
    auto has = s->BucketHasObjects(bucket);
    if (!has.ok()) return has.error();
    if (*has) return MakeError(ErrorCode::kBucketNotEmpty);
  }
  for (auto& s : sets_) s->RemoveBucket(bucket);
  return {};
}

Result<ObjectInfo> ErasureStore::PutObject(const std::string& bucket, const std::string& key,
                                           BodySource& body, const PutOptions& opts,
                                           const CommitCheck& check) {
  return SetFor(key).PutObject(bucket, key, body, opts, check);
}

Result<std::unique_ptr<ObjectReader>> ErasureStore::OpenObject(const std::string& bucket,
                                                               const std::string& key) {
  return SetFor(key).OpenObject(bucket, key);
}

Result<ObjectInfo> ErasureStore::StatObject(const std::string& bucket, const std::string& key) {
  return SetFor(key).StatObject(bucket, key);
}

Status ErasureStore::DeleteObject(const std::string& bucket, const std::string& key) {
  return SetFor(key).DeleteObject(bucket, key);
}

Result<ObjectInfo> ErasureStore::UpdateMetadata(const std::string& bucket, const std::string& key,
                                                const PutOptions& opts) {
  return SetFor(key).UpdateMetadata(bucket, key, opts);
}

Result<ListResult> ErasureStore::ListObjects(const std::string& bucket, const ListOptions& opts) {
  std::vector<ListResult> parts;
  for (auto& s : sets_) {
    auto l = s->ListObjects(bucket, opts, s->read_quorum());
    if (!l.ok()) return l.error();
    parts.push_back(std::move(*l));
  }
  if (parts.size() == 1) return std::move(parts[0]);
  return MergeListings(std::move(parts), opts.max_keys, 1);
}

Result<std::string> ErasureStore::NewMultipartUpload(const std::string& bucket,
                                                     const std::string& key,
                                                     const PutOptions& opts) {
  return SetFor(key).NewMultipartUpload(bucket, key, opts);
}

Result<PartInfo> ErasureStore::PutObjectPart(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id, int part_number,
                                             BodySource& body, std::optional<uint64_t> size,
                                             const CommitCheck& check) {
  return SetFor(key).PutObjectPart(bucket, key, upload_id, part_number, body, size, check);
}

Result<std::vector<PartInfo>> ErasureStore::ListParts(const std::string& bucket,
                                                      const std::string& key,
                                                      const std::string& upload_id) {
  return SetFor(key).ListParts(bucket, key, upload_id);
}

Result<std::vector<UploadInfo>> ErasureStore::ListMultipartUploads(const std::string& bucket,
                                                                   const std::string& prefix) {
  std::vector<UploadInfo> out;
  for (auto& s : sets_) {
    auto l = s->ListMultipartUploads(bucket, prefix);
    if (!l.ok()) return l.error();
    out.insert(out.end(), l->begin(), l->end());
  }
  std::sort(out.begin(), out.end(), [](const UploadInfo& a, const UploadInfo& b) {
    return std::tie(a.key, a.initiated_ns, a.upload_id) <
           std::tie(b.key, b.initiated_ns, b.upload_id);
  });
  return out;
}

Status ErasureStore::AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id) {
  return SetFor(key).AbortMultipartUpload(bucket, key, upload_id);
}

Result<ObjectInfo> ErasureStore::CompleteMultipartUpload(const std::string& bucket,
                                                         const std::string& key,
                                                         const std::string& upload_id,
                                                         const std::vector<CompletePart>& parts,
                                                         const WritePrecondition& precondition) {
  return SetFor(key).CompleteMultipartUpload(bucket, key, upload_id, parts, precondition);
}

Result<PutOptions> ErasureStore::GetUploadOptions(const std::string& bucket, const std::string& key,
                                                  const std::string& upload_id) {
  return SetFor(key).GetUploadOptions(bucket, key, upload_id);
}

}  // namespace rdmastor::storage
