// One erasure set: the drives it spans and the object operations on them. ErasureStore
// (storage/erasure_store.h) routes each key to its set; everything below is internal to the
// erasure object layer. The members are defined by concern, as in MinIO's cmd/erasure-*.go:
//   set.cc        drive fan-out, locks, codecs, shard distribution, shared helpers
//   bucket.cc     buckets (every set holds every bucket), the bucket cache, listing
//   write.cc      the write path: staging, encode, publish, commit, rollback; delete, metadata
//   read.cc       the read path: shard sources, stripe reads, version resolution, the reader
//   multipart.cc  multipart uploads
//   heal.cc       healing objects, the heal queue and drive replacement
//   migrate.cc    converting a drive of the retired single-drive layout
//   store.cc      ErasureStore: opening the layout, routing to sets
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"  // NowNs, used by every erasure file
#include "common/result.h"
#include "erasure/codec.h"
#include "erasure/layout.h"
#include "storage/drive.h"
#include "storage/drive_host.h"
#include "storage/erasure_store.h"
#include "storage/namespace_lock.h"
#include "storage/object_layer.h"
#include "storage/object_meta.h"
#include "storage/paths.h"

namespace rdmastor {
class ThreadPool;
}

namespace rdmastor::storage {

// ---- helpers shared by the erasure files (set.cc) ----

// Names every erasure source file uses unqualified (this header is the module's own).
using erasure::Codec;
using erasure::Geometry;
using paths::Join;

inline constexpr std::string_view kUploadFile = "upload.json";

std::string PartFileName(size_t index);
std::string PartRecordName(int number);
std::string StripQuotes(std::string s);
bool IsUploadId(const std::string& id);
int Count(const std::vector<bool>& v);
Error WriteQuorumError(int have, int need);
// The data directory the metadata file `meta_path` (drive-relative) references; "" when missing.
Result<std::string> DataDirOf(Drive& drive, const std::string& meta_path);

// ---- the retired single-drive layout (migrate.cc) ----

// True when `drive` holds the single-drive layout of an earlier version (data, the system area's
// bucket records, no format file).
Result<bool> HoldsSingleDriveLayout(Drive& drive);
// Converts such a drive in place into the only drive of a one-drive erasure set and formats it;
// resumable (a conversion cut short by a crash continues where it stopped).
Status MigrateSingleDriveLayout(Drive& drive);

// ---- drive fan-out (set.cc) ----

// What a batch of per-drive calls does, which decides where the calls run (DriveFanout).
enum class DriveWork {
  kIo,        // disk or network work (fsync, reads of shard data): every local drive's call on the
              // pool, a remote node's drives in one task (ForEachHost: one batch call)
  kLookup,    // a metadata lookup that a local drive answers from the page cache in microseconds:
              // local drives' calls run on the calling thread, cheaper than a hand-off
  kBuffered,  // steps of a write that land in the page cache (shard pieces, staging removal): the
              // local host's drives run one after another on one thread, since they share the
              // page cache and threads would only add hand-offs; remote drives in parallel (one
              // thread per drive, or per node for ForEachHost: a round trip each)
  kCommit,    // a commit (ForEachHost): each host's drives in one call, hosts in parallel
};

// Runs one call per drive position of an erasure set and collects per-position results. The
// erasure layer's loops over drives all go through ForEachDrive or ForEachHost, so that calls to
// different drives (each a network round trip or an fsync) overlap instead of adding up
// (measured: a 4-drive single node PUTs small objects several times faster with its fsyncs in
// parallel), and the work of one node's drives travels in one batch call (DriveHost).
class DriveFanout {
 public:
  DriveFanout(std::vector<DriveSlot> slots, ThreadPool* pool);

  // Runs fn(p) for every position p with which[p] and returns, per position, whether fn returned
  // true (false where it did not run). Calls run in parallel on the pool, except local drives'
  // calls of a kLookup batch, which run meanwhile on the calling thread, one after another. fn
  // runs concurrently for different positions: it may touch only position p's state.
  std::vector<bool> ForEachDrive(const std::vector<bool>& which,
                                 const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const;
  std::vector<bool> ForEachDrive(const std::function<bool(size_t)>& fn,
                                 DriveWork work = DriveWork::kIo) const {
    return ForEachDrive(all_, fn, work);
  }
  // Runs fn(host, members) once per host of the positions with which[p] (members in position
  // order), hosts in parallel: the entries of one batch call. A kIo batch splits a local host
  // into one call per drive (each waits on its own disk); kLookup runs the local host's call on
  // the calling thread meanwhile. fn may touch only its members' state.
  void ForEachHost(const std::vector<bool>& which,
                   const std::function<void(DriveHost&, const std::vector<size_t>&)>& fn,
                   DriveWork work) const;

  const DriveSlot& slot(size_t p) const { return slots_[p]; }
  // The smallest piece any host takes (DriveHost::piece_bytes).
  size_t piece_bytes() const { return piece_bytes_; }

 private:
  // Runs fn(task) for every task, in parallel on the pool (the last one on the calling thread),
  // and every task of `here` on the calling thread meanwhile (everything there without a pool).
  void RunTasks(const std::vector<std::vector<size_t>>& tasks,
                const std::vector<std::vector<size_t>>& here,
                const std::function<void(const std::vector<size_t>&)>& fn) const;
  // The positions with which[p] as tasks: one per drive, or (kHost) one per host, or (kLocalHost)
  // one per local host and one per remote drive, or (kRemoteHost) one per remote host and one
  // per local drive. With a pool, a kLookup batch's local tasks go to `here` instead.
  enum class GroupBy { kNone, kHost, kLocalHost, kRemoteHost };
  std::vector<std::vector<size_t>> Groups(const std::vector<bool>& which, GroupBy by,
                                          DriveWork work,
                                          std::vector<std::vector<size_t>>& here) const;

  std::vector<DriveSlot> slots_;
  std::vector<bool> all_;
  ThreadPool* pool_;
  size_t piece_bytes_ = 0;
};

// ---- the write path's shard buffers (write.cc) ----

// The framed shard bytes of a write not written yet, one buffer per shard index, each aligned for
// direct I/O (fsutil::kDirectIoAlign) and holding the same count of bytes from the same offset of
// its shard file. Stripes are encoded in place here: the body is read straight into the data
// shards' frames and the parity computed into the parity shards' (erasure::EncodeFrames), so a
// stripe is never copied between the body and the drives' write calls.
class FrameBuffers {
 public:
  FrameBuffers(size_t shards, size_t capacity);
  char* at(size_t shard) const { return bufs_[shard].get(); }
  size_t size() const { return fill_; }
  // Room for `more` bytes after size() (grows, keeping the bytes: an inline body of unknown size).
  void Reserve(size_t more);
  void Append(size_t n) { fill_ += n; }
  // Drops the first n bytes of every buffer (written), moving what is left to the front.
  void Consume(size_t n);

 private:
  struct Free {
    void operator()(char* p) const;
  };
  std::vector<std::unique_ptr<char, Free>> bufs_;
  size_t capacity_ = 0;
  size_t fill_ = 0;
};

// ---- the read path's view of a version (read.cc) ----

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
  // A remote drive's read-ahead: bytes [window_off, window_off + window_len) of part window_part's
  // file at window_at, in a buffer shared by the drives of one DriveHost::ReadShardPieces call
  // (ReadStripe asks each remote host once per window of stripes, not each drive per stripe).
  std::shared_ptr<char[]> window;
  const char* window_at = nullptr;
  size_t window_part = 0;
  uint64_t window_off = 0, window_len = 0;
  uint64_t handle = 0;        // the host's file kept open for window_part (0: none)
  bool fetch_failed = false;  // the last window's read failed: this stripe's block is missing

  // Opens part `part`'s shard file (0-based) unless open; false when it cannot be opened.
  bool Open(size_t part);
  // Reads `len` bytes at `off` of part `part` (0-based) into buf; false on any failure.
  bool Read(size_t part, uint64_t off, char* buf, size_t len);
  // Reads one framed block at `off` of part `part`: its hash into `hash` (kBitrotHashSize bytes)
  // and its `len` data bytes into `buf`, in one read where the drive can; false on any failure.
  bool ReadFramed(size_t part, uint64_t off, char* hash, char* buf, size_t len);
  // Part `part`'s whole shard file as read-only memory (ShardFile::Map); empty when it cannot be
  // (a remote or inline shard, a file shorter than its metadata says).
  std::string_view Map(size_t part);
};

// A resolved object version and where its shards are.
struct ObjectView {
  ObjectMeta meta;                        // the quorum version (erasure.index is meaningless here)
  std::vector<ShardSource> sources;       // per drive position
  std::vector<bool> has;                  // drive holds this version's metadata
  std::vector<bool> read;                 // drive's metadata was read (a quorum read skips some)
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
Status ReadStripe(ObjectView& v, const DriveFanout& drives, const erasure::Codec& codec,
                  size_t part, uint64_t s, std::vector<uint8_t>& shards, std::vector<bool>& present,
                  std::vector<int>* bad, bool all, std::vector<uint8_t*>* blocks = nullptr);

// ---- one erasure set ----

class ErasureSet {
 public:
  using Degraded = std::function<void(const std::string&, const std::string&)>;

  // `layout`: the storage classes' parity (its set size is the drive count).
  ErasureSet(std::vector<DriveSlot> slots, const erasure::SetLayout& layout, Degraded on_degraded,
             ThreadPool* pool)
      : roots_(DrivesOf(slots)),
        n_(static_cast<int>(roots_.size())),
        data_(n_ - layout.parity),
        parity_(layout.parity),
        all_local_(std::all_of(roots_.begin(), roots_.end(),
                               [](const Drive* d) { return d->is_local(); })),
        layout_(layout),
        on_degraded_(std::move(on_degraded)),
        fanout_(std::move(slots), pool) {}

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
  // RenameData of make_req(p) on every drive with which[p]: the drives of a host in one
  // DriveHost::RenameData call, hosts in parallel. make_req runs on the host's thread, which may
  // touch position p's state. One result per position (an error where it did not run).
  std::vector<Result<RenameDataResult>> RenameDataAll(
      const std::vector<bool>& which,
      const std::function<RenameDataRequest(size_t)>& make_req) const;
  // ReadFile of `path` on every drive with which[p] (a kLookup batch: local drives on the calling
  // thread, the remote drives of one node in one DriveHost::ReadFiles call), then fn(p, what drive
  // p read) on the thread that read it; returns, per position, what fn returned (false where it did
  // not run).
  std::vector<bool> ReadFileEach(
      const std::vector<bool>& which, const std::string& path,
      const std::function<bool(size_t, Result<std::optional<std::string>>)>& fn) const;

  // ---- namespace locks ----

  void SetLocker(std::shared_ptr<NamespaceLocker> locker, std::chrono::milliseconds timeout);

  Result<std::unique_ptr<NamespaceLock>> Lock(const std::string& resource, LockMode mode,
                                              std::string_view source);
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

  // The set's quorums: those of STANDARD objects, used for what is no object's data (buckets,
  // upload records, delete markers). An object's own writes use its Shape's.
  int write_quorum() const { return erasure::WriteQuorum(data_, parity_); }
  int read_quorum() const { return erasure::ReadQuorum(data_, parity_); }

  // How a new object version is coded: data and parity shards over the set's drives.
  struct Shape {
    int data = 0, parity = 0;
    int write_quorum() const { return erasure::WriteQuorum(data, parity); }
  };
  // The shape of a new object of `storage_class` (as stored: "" = STANDARD).
  Shape ShapeFor(const std::string& storage_class) const;
  // The shape an upload's parts and object get: the parity its record names (kInternalError when
  // that cannot be this set's); a record without one (earlier releases) had the standard parity.
  Result<Shape> ShapeOf(const UploadRecord& upload) const;
  const std::vector<Drive*>& drives() const { return roots_; }

  Result<const erasure::Codec*> GetCodec(int k, int m);

  std::vector<int> Distribution(const std::string& key) const;

  // ---- buckets (every set holds every bucket) ----

  int BucketCopies(const std::string& bucket);

  // `cached`: a bucket seen on a read quorum within kBucketCacheTtl counts as existing without
  // asking the drives (object writes and reads: their commit, or a key found missing, checks
  // again: RenameData refuses a bucket that is gone, Resolve re-checks before kNoSuchKey).
  Status CheckBucket(const std::string& bucket, bool cached = false);

  // Creates the bucket on every drive that lacks it; returns how many drives have it now and
  // whether it existed on a quorum before.
  std::pair<int, int> MakeBucket(const std::string& bucket, int64_t created_ns);

  Result<BucketInfo> GetBucketInfo(const std::string& bucket);

  // Rewrites the bucket record on every drive with `tags` ("" removes them): staged in the
  // staging area, renamed over the record. Quorum as for any metadata write.
  Status SetBucketTags(const std::string& bucket, const std::string& tags);

  Status WriteBucketRecord(const std::string& bucket, const BucketInfo& info);
  // Under the bucket's lock: reads the bucket record, applies `change`, writes it back on every
  // drive (WriteBucketRecord) and caches it. What each SetBucket* call does with its field.
  Status UpdateBucketRecord(const std::string& bucket,
                            const std::function<void(BucketInfo&)>& change);
  // Records the versioning state in the bucket record on every drive (write quorum).
  Status SetBucketVersioning(const std::string& bucket, Versioning state,
                             const VersioningExclusions& excluded);
  // Records the default encryption ("" none, "AES256") in the bucket record (write quorum).
  Status SetBucketEncryption(const std::string& bucket, const std::string& algorithm);
  Status SetBucketConfig(const std::string& bucket, const std::string& name,
                         const std::string& value);
  // The bucket record as writes see it (versioning state, default encryption): read from the
  // records at most every kVersioningCacheTtl (a change made through another node shows within
  // that time).
  Result<BucketInfo> CachedBucketInfo(const std::string& bucket);
  Result<Versioning> VersioningOf(const std::string& bucket);
  // What writes and deletes of `key` see (VersioningFor: an excluded key is Suspended).
  Result<Versioning> VersioningOf(const std::string& bucket, std::string_view key);
  // The version id a new write of `key` gets: a new one when Enabled for it, "" (null) otherwise.
  Result<std::string> NewVersionId(const std::string& bucket, std::string_view key);

  std::set<std::string> BucketNames();

  Result<bool> BucketHasObjects(const std::string& bucket);

  void RemoveBucket(const std::string& bucket);

  // ---- writes ----

  // One staging directory per drive position (same name everywhere); removed on destruction
  // where it may exist. `create`: made now on every alive drive (a drive that cannot is dropped
  // from `alive`); otherwise made by the first call that needs it (a shard write, RenameData), so
  // a write costs no round of mkdir calls: that call marks it (Use) and RenameData, which removes
  // it unless it holds retired data, unmarks it (Gone).
  //
  // `reuse` (writes that end in RenameData with keep_staging): the name comes from the set's pool
  // of staging directories that earlier writes left behind clean (holding only their commit's
  // journal, marked Kept), and goes back to it on destruction when every position is clean or
  // gone: a small PUT then creates and deletes no staging inode at all (see keep_staging).
  class Stagings {
   public:
    Stagings(const ErasureSet& set, std::vector<bool>& alive, bool create, bool reuse = false);
    ~Stagings();
    const std::string& operator[](size_t) const { return dir_; }
    // Position p's directory may exist now / is gone / was kept clean by RenameData (only its
    // journal in it). Positions are set concurrently.
    void Use(size_t p) const { used_[p] = kUsed; }
    void Gone(size_t p) const { used_[p] = kGone; }
    void Kept(size_t p) const { used_[p] = kKept; }
    // Kept clean but for a replaced version's data retired into <dir>/old (removed on
    // destruction, when the write has kept its quorum).
    void KeptWithOld(size_t p) const { used_[p] = kKeptOld; }
    // RenameData may keep the directory (keep_staging): it goes back to the pool.
    bool reuse() const { return reuse_; }

   private:
    enum : char { kGone = 0, kUsed = 1, kKept = 2, kKeptOld = 3 };
    const ErasureSet& set_;
    std::string dir_;                 // drive-relative, the same on every drive
    mutable std::vector<char> used_;  // not vector<bool>: written per position concurrently
    bool reuse_ = false;
  };
  // Staging directory names (drive-relative) whose directories are clean or absent on every drive
  // of the set, for Stagings with `reuse`. Bounded: past kStagingPoolMax a kept directory is
  // removed. In memory only: a restart's recovery (Drive::Prepare) removes them all.
  static constexpr size_t kStagingPoolMax = 256;

  // Encodes `body` stripe by stripe into <staging>/<rel> on every alive drive (the shard's
  // creation makes its directories), or into `inline_out` (per position, every stripe's framed
  // blocks) when each shard file would hold at most `inline_limit` bytes (nullopt: never inline).
  // Drops drives that fail; fails when fewer than write quorum remain.
  Result<uint64_t> Encode(BodySource& body, std::optional<uint64_t> declared, uint64_t limit,
                          const erasure::Codec& codec, const std::vector<int>& dist,
                          const Stagings& st, std::vector<bool>& alive, const std::string& rel,
                          std::optional<uint64_t> inline_limit,
                          std::vector<std::string>* inline_out, std::string* md5_out,
                          bool committed_by_rename_data = false);

  // Writes the first `len` of every alive drive's pending shard bytes (pending.at(dist[p])) at
  // written[p] of <staging>/<rel>, one WriteShardPieces call per host (the first piece creates the
  // file; `sync`: the last piece of a shard no RenameData commits), then advances `written` and
  // drops what was written from `pending`. Drops the drives whose piece failed.
  void WritePieces(FrameBuffers& pending, size_t len, const std::vector<int>& dist,
                   std::vector<uint64_t>& written, const Stagings& st, std::vector<bool>& alive,
                   const std::string& rel, uint64_t shard_size, bool sync) const;

  // The error of commits that reached `committed` drives, short of `quorum`: NoSuchBucket (the
  // cached bucket forgotten) when `no_bucket` drives, a write quorum, refused for want of the
  // bucket; else a lost write quorum.
  Error CommitQuorumError(const std::string& bucket, int committed, int no_bucket, int quorum);

  // Commits the staged version (metadata per alive drive in the commit call) and rolls back when
  // fewer than `quorum` drives committed. `metas` per position; data dir name metas[p].data_dir
  // unless inline.
  Status Publish(const std::string& bucket, const std::string& key, const paths::KeyLocation& loc,
                 const Stagings& st, std::vector<bool>& alive, const std::vector<ObjectMeta>& metas,
                 int quorum, const WritePrecondition& precondition);

  // A conditional write's check against the version it would replace; the caller holds the key's
  // exclusive lock (on a quorum of nodes in a cluster), so no other commit can come in between.
  Status CheckPrecondition(const std::string& bucket, const std::string& key,
                           const paths::KeyLocation& loc, const WritePrecondition& precondition);
  // The same for a delete (under the same lock): the latest version, and the one the delete
  // removes for good (`sel`'s, or the null version when `state` is not Enabled).
  Status CheckDeletePrecondition(const std::string& bucket, const std::string& key,
                                 const paths::KeyLocation& loc, const VersionSel& sel,
                                 std::optional<Versioning> state,
                                 const DeletePrecondition& precondition);

  // Commits the staged version on every alive drive with one RenameData call each (it writes
  // metas[p], moves the data in, retires the old version); rolls back when fewer than `quorum`
  // did. `lock`: the key's exclusive namespace lock, held by the caller; a lost lock aborts first.
  // keep_data: replace only the metadata files (the data directories stay as they are).
  Status CommitAll(const std::string& bucket, const paths::KeyLocation& loc, const Stagings& st,
                   std::vector<bool>& alive, const std::vector<ObjectMeta>& metas, int quorum,
                   const NamespaceLock& lock, bool keep_data = false);

  // Restores the version a commit replaced on drive p (its data was retired to <staging>/old).
  void Rollback(size_t p, const std::string& bucket, const paths::KeyLocation& loc,
                const std::string& staging, const std::optional<std::string>& old_raw,
                const std::string& old_data, const std::string& new_data);

  ObjectMeta MetaFor(const ObjectMeta& base, const std::vector<int>& dist, size_t p,
                     const std::vector<std::string>* inline_shards) const;

  ObjectMeta NewMeta(const std::string& key, const paths::KeyLocation& loc,
                     const Shape& shape) const;

  Result<ObjectInfo> PutObject(const std::string& bucket, const std::string& key, BodySource& body,
                               const PutOptions& opts, const CommitCheck& check);

  // ---- reads ----

  // Reads every drive's metadata file and picks the version at least read-quorum drives agree on:
  // the latest version of each drive's file, or the version `sel` names (kNoSuchVersion when it
  // is not on enough drives). A delete marker resolves like any version (no shards).
  Result<ObjectView> Resolve(const std::string& bucket, const paths::KeyLocation& loc,
                             const VersionSel& sel = std::nullopt);

  Result<std::unique_ptr<ObjectReader>> OpenObject(const std::string& bucket,
                                                   const std::string& key,
                                                   const VersionSel& sel = std::nullopt);

  // What a read path resolve serves: the version's metadata (HEAD) or its data too (GET).
  enum class ReadFor { kStat, kData };
  // One GET in this many per set reads every drive's metadata although a quorum's agreed: heal on
  // read sees the drives a quorum read leaves out (a stale or missing copy) at this rate.
  // A counter, not a random draw: which GETs read everything is deterministic (tests count it).
  static constexpr uint64_t kFullReadEvery = 16;

  // Resolve for GET and HEAD: reads the metadata of a read quorum first (the drives of data shards
  // 0..k-1 of `key`) and serves from it when they all agree; otherwise, and for a GET of a data
  // object (its reader needs every drive as a source) or every kFullReadEvery-th GET, reads the
  // other drives too and resolves as Resolve does. A GET on a set with remote drives reads every
  // drive in one round (its first round would already call every node). The bucket check was a
  // cached one: a key reported missing is checked against the bucket's drives first (kNoSuchBucket
  // when it was deleted meanwhile). View.read names the drives read.
  Result<ObjectView> ResolveForRead(const std::string& bucket, const std::string& key,
                                    const paths::KeyLocation& loc, const VersionSel& sel,
                                    ReadFor what);

  // A read that resolved a delete marker: kMethodNotAllowed when `sel` named it, else kNoSuchKey
  // (with the marker in `marker` when given).
  Status RefuseDeleteMarker(const std::string& bucket, const std::string& key, const ObjectView& v,
                            const VersionSel& sel, ObjectInfo* marker);

  Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key,
                                const VersionSel& sel = std::nullopt, ObjectInfo* marker = nullptr);

  // Without `sel`: removes the null version (unversioned bucket) or adds a delete marker (a new
  // id when Enabled, the null one when Suspended). With `sel`: removes that version. One
  // RenameData per drive (a drive without the key but with the bucket counts as done).
  // `precondition` sees the latest version and the one removed for good under the key's lock.
  Result<DeleteResult> DeleteObject(const std::string& bucket, const std::string& key,
                                    const VersionSel& sel,
                                    const DeletePrecondition& precondition = {});

  Result<ObjectInfo> UpdateMetadata(const std::string& bucket, const std::string& key,
                                    const PutOptions& opts);

  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts,
                                 int min_copies);

  // ---- multipart ----

  Result<UploadRecord> LoadUpload(const std::string& bucket, const std::string& key,
                                  const std::string& upload_id);

  Result<std::string> NewMultipartUpload(const std::string& bucket, const std::string& key,
                                         const PutOptions& opts);

  Result<PartInfo> PutObjectPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number, BodySource& body,
                                 std::optional<uint64_t> size, const CommitCheck& check);

  // Part records agreed by at least read-quorum drives: number -> (record per position).
  std::map<int, std::vector<std::optional<PartRecord>>> LoadParts(const std::string& bucket,
                                                                  const std::string& upload_id);

  Result<std::vector<PartInfo>> ListParts(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id);

  Result<std::vector<UploadInfo>> ListMultipartUploads(const std::string& bucket,
                                                       const std::string& prefix);

  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id);

  // Aborts every upload of every bucket initiated before `initiated_before_ns` (unix ns), as
  // AbortMultipartUpload does; returns how many.
  Result<int> ExpireUploads(int64_t initiated_before_ns);

  void RemoveUpload(const std::string& bucket, const std::string& upload_id);

  Result<ObjectInfo> CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id,
                                             const std::vector<CompletePart>& parts,
                                             const WritePrecondition& precondition,
                                             const CompleteChecksum& declared);

  Result<PutOptions> GetUploadOptions(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id);

  // ---- healing ----

  // Rewrites every drive copy of the object that is missing, stale, unreadable or corrupt on an
  // online drive; names the drives whose copy it could not rewrite.
  Result<ObjectHealResult> HealObject(const std::string& bucket, const std::string& key);
  // One version (`sel`; nullopt: the latest of each drive's file), and a delete marker.
  Result<ObjectHealResult> HealVersion(const std::string& bucket, const std::string& key,
                                       const paths::KeyLocation& loc, const VersionSel& sel);
  Result<ObjectHealResult> HealMarker(const std::string& bucket, const std::string& key,
                                      const paths::KeyLocation& loc, const ObjectView& v);

  // Removes the copies of an object (or of version `sel`) held by fewer drives than read quorum
  // (leftovers of a failed write), under the key's lock, if that is still all there is; returns 0.
  Result<int> RemoveDangling(const std::string& bucket, const paths::KeyLocation& loc,
                             const std::string& key, const VersionSel& sel = std::nullopt);

  void EnsureBucket(const std::string& bucket);

  bool BucketCached(const std::string& bucket);
  void RememberBucket(const std::string& bucket);
  void ForgetBucket(const std::string& bucket);

  std::shared_mutex& BucketLock(const std::string& bucket) {
    return bucket_locks_[std::hash<std::string>{}(bucket) % bucket_locks_.size()];
  }

  void ReportDegraded(const std::string& bucket, const std::string& key) {
    if (on_degraded_) on_degraded_(bucket, key);
  }

 private:
  // What each drive position's metadata file held: the parsed file, the version chosen in it
  // (nullptr: none, or not read), whether the drive was read and answered "no such key/version".
  // Kept where they were parsed: one vector of large ObjectMeta values was a malloc that
  // consolidated the heap every GET.
  struct MetaReads {
    explicit MetaReads(size_t n)
        : files(n), metas(n, nullptr), read(n, false), missing(n, false), corrupt(n, false) {}
    std::vector<ObjectVersions> files;
    std::vector<ObjectMeta*> metas;
    std::vector<bool> read, missing, corrupt;  // corrupt: the file is there but does not parse
  };
  // Reads the metadata file `path` on the drives with which[p] into `r` (the version `sel`, or
  // each file's latest).
  void ReadMetas(const std::string& bucket, const std::string& path, const VersionSel& sel,
                 const std::vector<bool>& which, MetaReads& r);
  // The positions of the version most drives agree on (ties: the newest); empty when none.
  static std::vector<size_t> BestGroup(const std::vector<ObjectMeta*>& metas);
  // Copies a version needs: its data shards; a delete marker (no shards) as many as an object of
  // this set's standard shape.
  int CopiesNeeded(const ObjectMeta& m) const { return m.erasure ? m.erasure->data : data_; }
  // The read drives' positions when every drive read holds one version, consistent, on at least
  // CopiesNeeded drives; empty otherwise (ResolveForRead then reads the rest).
  std::vector<size_t> AgreedByAllRead(const MetaReads& r) const;
  // Resolve's choice over what was read: the best group, or the quorum errors.
  Result<ObjectView> ResolveFrom(const std::string& bucket, const paths::KeyLocation& loc,
                                 const VersionSel& sel, MetaReads& r);
  // The view of the version the drives `best` hold (moves their copies' metadata and inline
  // shards out of `r`).
  ObjectView BuildView(const std::string& bucket, const paths::KeyLocation& loc, MetaReads& r,
                       const std::vector<size_t>& best);

  static std::vector<Drive*> DrivesOf(const std::vector<DriveSlot>& slots) {
    std::vector<Drive*> out;
    for (const auto& s : slots) out.push_back(s.drive());
    return out;
  }

  std::vector<Drive*> roots_;  // owned by their hosts (ErasureStore keeps them)
  int n_, data_, parity_;
  bool all_local_;  // no remote drive: a single node's set (ResolveForRead's quorum read)
  erasure::SetLayout layout_;
  Degraded on_degraded_;
  DriveFanout fanout_;
  std::mutex locker_mu_;  // guards locker_ and lock_timeout_ (replaced at start-up)
  std::shared_ptr<NamespaceLocker> locker_ = std::make_shared<LocalNamespaceLocker>();
  std::chrono::milliseconds lock_timeout_ = kDefaultLockTimeout;
  std::mutex codec_mu_;
  std::map<std::pair<int, int>, std::unique_ptr<erasure::Codec>> codecs_;
  std::array<std::shared_mutex, 32> bucket_locks_;
  // Versioning states read from the bucket records, and when (VersioningOf).
  static constexpr std::chrono::seconds kVersioningCacheTtl{2};
  std::mutex versioning_mu_;
  std::map<std::string, std::pair<BucketInfo, std::chrono::steady_clock::time_point>> versioning_;
  void CacheBucketInfo(const BucketInfo& info);
  // Buckets seen on a read quorum, and when (CheckBucket's `cached`).
  static constexpr std::chrono::seconds kBucketCacheTtl{60};
  static constexpr size_t kBucketCacheMax = 4096;
  std::mutex bucket_cache_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> bucket_seen_;
  mutable std::mutex staging_pool_mu_;
  mutable std::vector<std::string> staging_pool_;  // see kStagingPoolMax
  std::atomic<uint64_t> reads_{0};                 // GETs resolved (kFullReadEvery)
  // The upload records the last listing of each bucket found, by upload id (ListMultipartUploads):
  // bounded by the uploads that exist, since each listing replaces its bucket's entries.
  std::mutex uploads_mu_;
  std::map<std::string, std::map<std::string, UploadInfo>> upload_cache_;
};

}  // namespace rdmastor::storage
