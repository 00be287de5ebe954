// The erasure read path: shard sources, stripe reads (verify, decode), version resolution, the
// object reader. GET and HEAD resolve from a read quorum of drives first (ResolveForRead): opening,
// reading and closing the metadata files was ~29% of a 4 KiB GET's CPU; reading 2 of 4 on EC 2+2
// took server CPU per GiB of 4 KiB GETs at c=32 from 27.7 to 22.2 s (mean of five runs each).

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/splice.h"
#include "storage/erasure/set.h"

namespace rdmastor::storage {


bool ShardSource::Open(size_t part) {
  if (!usable || is_inline) return false;
  if (fds.size() <= part) {
    fds.resize(part + 1);
    tried.resize(part + 1, false);
  }
  if (fds[part]) return true;
  if (tried[part]) return false;
  tried[part] = true;
  auto fd = drive->OpenShard(Join(data_dir, PartFileName(part + 1)),
                             part < file_sizes.size() ? file_sizes[part] : 0);
  if (!fd.ok()) return false;
  fds[part] = std::move(*fd);
  return true;
}

bool ShardSource::Read(size_t part, uint64_t off, char* buf, size_t len) {
  if (!usable) return false;
  if (is_inline) {
    if (part != 0 || off + len > inline_shard.size()) return false;
    std::memcpy(buf, inline_shard.data() + off, len);
    return true;
  }
  if (window_len > 0 && window_part == part && off >= window_off &&
      off + len <= window_off + window_len) {
    std::memcpy(buf, window_at + (off - window_off), len);
    return true;
  }
  if (fetch_failed) return false;
  if (!Open(part)) return false;
  auto n = fds[part]->ReadAt(off, buf, len);
  return n.ok() && *n == len;
}

bool ShardSource::ReadFramed(size_t part, uint64_t off, char* hash, char* buf, size_t len) {
  if (!usable || is_inline || !Open(part)) return false;
  auto n = fds[part]->ReadFramedAt(off, hash, erasure::kBitrotHashSize, buf, len);
  return n.ok() && *n == erasure::kBitrotHashSize + len;
}

std::string_view ShardSource::Map(size_t part) {
  if (!usable || is_inline || part >= file_sizes.size() || !Open(part)) return {};
  return fds[part]->Map(file_sizes[part]);
}

namespace {

// Fills the read-ahead windows (ShardSource::window) of a remote host's positions in `members`
// that do not hold [off, off + need) of part `part` yet: one ReadShardPieces call for all of
// them. Each window starts at `off` and holds as many whole framed blocks as one transport piece
// (host.piece_bytes() per drive of the node: 1 MiB, what one remote drive's window was before),
// never past the file's end: a GET whose shard files are at most 1 MiB (up to ~12 MiB on 12+4)
// reads every drive of a node in one call, a larger one a call per MiB of its largest shard.
void FetchWindows(ObjectView& v, DriveHost& host, const DriveFanout& drives,
                  const std::vector<size_t>& members, size_t part, uint64_t off, size_t need) {
  std::vector<size_t> want;
  for (size_t p : members) {
    ShardSource& src = v.sources[p];
    if (!src.usable || src.is_inline) continue;
    if (src.window_len > 0 && src.window_part == part && off >= src.window_off &&
        off + need <= src.window_off + src.window_len)
      continue;
    want.push_back(p);
  }
  if (want.empty()) return;
  const size_t budget = host.piece_bytes() * std::max<size_t>(1, host.drives().size());
  const size_t share = std::max(need, budget / need * need);
  std::vector<ShardPieceRead> reads;
  reads.reserve(want.size());
  uint64_t total = 0;
  for (size_t p : want) {
    const ShardSource& src = v.sources[p];
    const uint64_t file = part < src.file_sizes.size() ? src.file_sizes[part] : 0;
    uint64_t len = share;
    if (file > off) len = std::max<uint64_t>(need, std::min<uint64_t>(len, file - off));
    ShardPieceRead r;
    r.drive = drives.slot(p).index;
    r.path = Join(src.data_dir, PartFileName(part + 1));
    r.offset = off;
    r.len = len;
    r.shard_size = file;
    r.handle = src.window_part == part ? src.handle : 0;
    r.keep = !(file != 0 && off + len >= file);  // the last piece lets the kept file go
    reads.push_back(std::move(r));
    total += len;
  }
  std::shared_ptr<char[]> buf(new char[static_cast<size_t>(total)]);
  size_t at = 0;
  for (auto& r : reads) {
    r.buf = buf.get() + at;
    at += static_cast<size_t>(r.len);
  }
  auto got = host.ReadShardPieces(reads);
  for (size_t j = 0; j < want.size(); ++j) {
    ShardSource& src = v.sources[want[j]];
    const bool ok = j < got.size() && got[j].ok();
    src.window = ok ? buf : nullptr;
    src.window_at = reads[j].buf;
    src.window_part = part;
    src.window_off = off;
    src.window_len = ok ? got[j]->bytes : 0;
    src.handle = ok ? got[j]->handle : 0;
    src.fetch_failed = !ok || got[j]->bytes < need;  // a short file: no second try per drive
  }
}

}  // namespace

Status ReadStripe(ObjectView& v, const DriveFanout& drives, const Codec& codec, size_t part,
                  uint64_t s, std::vector<uint8_t>& shards, std::vector<bool>& present,
                  std::vector<int>* bad, bool all, std::vector<uint8_t*>* blocks) {
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
  // Inline shards are in memory already (read with the metadata): copying them is no I/O, and a
  // hand-off to the pool would cost more than the copy.
  bool all_inline = true;
  for (const auto& src : v.sources) all_inline = all_inline && (!src.usable || src.is_inline);
  const DriveWork work = all_inline ? DriveWork::kLookup : DriveWork::kIo;
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
    // A remote host's drives in one ReadShardPieces per window of stripes, hosts in parallel;
    // each local drive on its own (its file open since OpenObject). Every block verified here.
    // Not vector<bool>: written by several threads.
    std::vector<char> ok(static_cast<size_t>(n), 0);
    drives.ForEachHost(
        round,
        [&](DriveHost& host, const std::vector<size_t>& members) {
          const size_t framed_len = static_cast<size_t>(erasure::kBitrotHashSize + block);
          if (!host.is_local()) FetchWindows(v, host, drives, members, part, off, framed_len);
          for (size_t p : members) {
            auto& framed = v.framed[p];
            framed.resize(framed_len);
            ok[p] = v.sources[p].Read(part, off, framed.data(), framed.size()) &&
                    erasure::VerifyFramedBlock(framed.data(), block);
          }
        },
        work);
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

void ErasureSet::ReadMetas(const std::string& bucket, const std::string& path,
                           const VersionSel& sel, const std::vector<bool>& which, MetaReads& r) {
  // true: the drive answers and has no such key (or, for a named version, not that version).
  auto missing_on =
      ReadFileEach(which, path, [&](size_t p, Result<std::optional<std::string>> raw) {
        if (!raw.ok()) return false;
        if (!raw->has_value()) return roots_[p]->StatVol(bucket);
        auto file = ParseObjectVersions(**raw, path);
        if (!file.ok()) {  // corrupt: this drive needs healing
          r.corrupt[p] = true;
          return false;
        }
        r.files[p] = std::move(*file);
        ObjectMeta* m = sel ? r.files[p].Find(*sel) : r.files[p].Latest();
        if (!m) return true;
        if (m->delete_marker || m->erasure) r.metas[p] = m;
        return false;
      });
  for (size_t p = 0; p < which.size(); ++p) {
    if (!which[p]) continue;
    r.read[p] = true;
    r.missing[p] = missing_on[p];
  }
}

std::vector<size_t> ErasureSet::BestGroup(const std::vector<ObjectMeta*>& metas) {
  // A version is the same on every drive: id, data directory, ETag, marker or not, ACL and tags
  // (a drive that missed a PutObjectAcl or PutObjectTagging must not decide who may read or what
  // the tags are: the quorum's copy wins).
  std::map<std::tuple<std::string_view, std::string_view, std::string_view, bool, std::string_view,
                      std::string_view>,
           std::vector<size_t>>
      groups;
  for (size_t p = 0; p < metas.size(); ++p) {
    if (metas[p]) {
      groups[{metas[p]->version_id, metas[p]->data_dir, metas[p]->etag, metas[p]->delete_marker,
              metas[p]->acl, metas[p]->tags}]
          .push_back(p);
    }
  }
  const std::vector<size_t>* best = nullptr;
  for (const auto& [id, ps] : groups) {
    if (!best || ps.size() > best->size() ||
        (ps.size() == best->size() && metas[ps[0]]->mtime_ns > metas[(*best)[0]]->mtime_ns)) {
      best = &ps;
    }
  }
  return best ? *best : std::vector<size_t>{};
}

Result<ObjectView> ErasureSet::Resolve(const std::string& bucket, const paths::KeyLocation& loc,
                                       const VersionSel& sel) {
  MetaReads r(roots_.size());
  ReadMetas(bucket, Join(Join(bucket, loc.rel_dir), loc.meta_name), sel,
            std::vector<bool>(roots_.size(), true), r);
  return ResolveFrom(bucket, loc, sel, r);
}

Result<ObjectView> ErasureSet::ResolveFrom(const std::string& bucket, const paths::KeyLocation& loc,
                                           const VersionSel& sel, MetaReads& r) {
  const size_t n = roots_.size();
  const int missing = Count(r.missing);
  const std::vector<size_t> best = BestGroup(r.metas);
  if (best.empty() || static_cast<int>(best.size()) < CopiesNeeded(*r.metas[best[0]])) {
    // A key whose metadata is corrupt on drives that could make a read quorum is not absent: a
    // reader that takes absence as meaning (a bucket policy, a user record) must see an error.
    const int corrupt = Count(r.corrupt);
    if (best.empty() && corrupt > 0 && missing < read_quorum()) {
      return MakeError(ErrorCode::kInternalError, "object metadata is corrupt on " +
                                                      std::to_string(corrupt) + " drive(s)");
    }
    if (missing > static_cast<int>(n) - read_quorum() || best.empty()) {
      return MakeError(sel ? ErrorCode::kNoSuchVersion : ErrorCode::kNoSuchKey);
    }
    return MakeError(ErrorCode::kInsufficientReadQuorum,
                     "object metadata readable on " + std::to_string(best.size()) + " drives only");
  }
  return BuildView(bucket, loc, r, best);
}

ObjectView ErasureSet::BuildView(const std::string& bucket, const paths::KeyLocation& loc,
                                 MetaReads& r, const std::vector<size_t>& best) {
  const size_t n = roots_.size();
  ObjectView v;
  v.meta = std::move(*r.metas[best[0]]);
  r.metas[best[0]] = &v.meta;  // that drive's copy is v.meta from here on
  v.sources.resize(n);
  v.has.assign(n, false);
  v.read = r.read;
  if (v.meta.delete_marker) {
    for (size_t p : best) v.has[p] = true;
    for (size_t p = 0; p < n; ++p) v.sources[p].drive = roots_[p];
    return v;
  }
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
  for (size_t p : best) {
    ShardSource& s = v.sources[p];
    ObjectMeta& m = *r.metas[p];
    v.has[p] = true;
    if (m.erasure->index != dist[p]) continue;  // inconsistent copy: heal rewrites it
    if (!m.erasure->DecodeInline()) continue;   // a damaged inline shard: likewise
    s.usable = true;
    s.is_inline = m.erasure->is_inline;
    s.inline_shard = std::move(m.erasure->inline_shard);
    s.data_dir = Join(Join(bucket, loc.rel_dir), m.data_dir);
  }
  v.meta.erasure->SetInline({});  // each source holds its own
  return v;
}

namespace {

// Whether every framed block of an inline copy's shard passes its bitrot hash (one part only: a
// multipart object is never inline; anything else is not trusted).
bool InlineShardVerifies(ObjectMeta& m) {
  if (!m.erasure->DecodeInline()) return false;
  const auto& e = *m.erasure;
  if (m.parts.size() > 1) return false;
  const uint64_t size = m.parts.empty() ? 0 : m.parts[0].size;
  const Geometry g{e.data, e.parity, e.stripe_size};
  for (uint64_t s = 0; s < g.StripeCount(size); ++s) {
    const uint64_t off = g.ShardOffset(size, s);
    const uint64_t block = g.BlockSize(g.StripeBytes(size, s));
    if (off + erasure::kBitrotHashSize + block > e.inline_shard.size() ||
        !erasure::VerifyFramedBlock(e.inline_shard.data() + off, block))
      return false;
  }
  return true;
}

}  // namespace

std::vector<size_t> ErasureSet::AgreedByAllRead(const MetaReads& r) const {
  int asked = 0;
  for (size_t p = 0; p < r.read.size(); ++p) {
    if (!r.read[p]) continue;
    if (!r.metas[p]) return {};  // an error, a missing key or version, a corrupt file
    ++asked;
  }
  std::vector<size_t> best = BestGroup(r.metas);
  if (best.empty() || static_cast<int>(best.size()) != asked) return {};  // disagreement
  const ObjectMeta& m = *r.metas[best[0]];
  if (asked < CopiesNeeded(m)) return {};  // e.g. a REDUCED_REDUNDANCY object: more data shards
  if (m.delete_marker) return best;
  for (size_t p : best) {
    const auto& e = *r.metas[p]->erasure;
    if (m.erasure->distribution.size() != r.read.size() || e.index != m.erasure->distribution[p])
      return {};  // an inconsistent copy: the full read reports it for healing
  }
  return best;
}

Result<ObjectView> ErasureSet::ResolveForRead(const std::string& bucket, const std::string& key,
                                              const paths::KeyLocation& loc, const VersionSel& sel,
                                              ReadFor what) {
  // Quorum read. Every layout has parity m <= n/2, so data k = n - m >= n/2 and write quorum
  // W = k (k > m) or k + 1 (k == m) > n/2, for every object's own parity too. The first round
  // reads R = k of the set's standard shape: R + W > n, so under the key's shared lock any R
  // drives include one that holds the latest acknowledged write. When all R answer with the same
  // version (BestGroup's key) on at least as many drives as that version needs, it is the latest
  // acknowledged one. Anything else (an error, a missing key, disagreement, too few copies, a
  // corrupt file or inline shard) reads the other drives and resolves over all n as Resolve does;
  // the partial read never answers NoSuchKey/NoSuchVersion itself.
  // The first round is the drives holding data shards 0..k-1 under Distribution(key), so an
  // inline object's data is in memory without decoding. A drive not read cannot be seen to be
  // stale or missing the version: one GET in kFullReadEvery per set reads every drive (heal on
  // read sees it then), and admin heal checks them all.
  const size_t n = roots_.size();
  const std::string path = Join(Join(bucket, loc.rel_dir), loc.meta_name);
  MetaReads r(n);
  // A set with remote drives (a cluster) reads every drive's metadata for a GET in one round, as
  // before: its first round already calls every other node (the drives of a set are interleaved
  // across nodes), and an object in part files would need a second round of calls for the rest.
  const bool sampled =
      what == ReadFor::kData &&
      (!all_local_ || (reads_.fetch_add(1, std::memory_order_relaxed) + 1) % kFullReadEvery == 0);
  if (!sampled) {
    const std::vector<int> dist = Distribution(key);
    std::vector<bool> first(n, false);
    for (size_t p = 0; p < n; ++p) first[p] = dist[p] < data_;
    ReadMetas(bucket, path, sel, first, r);
    const std::vector<size_t> agreed = AgreedByAllRead(r);
    if (!agreed.empty()) {
      const ObjectMeta& m = *r.metas[agreed[0]];
      // A GET of a data object needs every drive's copy as a source for degraded stripe reads;
      // an inline one only copies that verify (a copy that does not is served from parity after
      // the full read, and healed, as before).
      bool enough = m.delete_marker || what == ReadFor::kStat;
      if (!enough && m.erasure->is_inline) {
        enough = std::all_of(agreed.begin(), agreed.end(),
                             [&](size_t p) { return InlineShardVerifies(*r.metas[p]); });
      }
      if (enough) return BuildView(bucket, loc, r, agreed);
    }
  }
  std::vector<bool> rest(n);
  for (size_t p = 0; p < n; ++p) rest[p] = !r.read[p];
  ReadMetas(bucket, path, sel, rest, r);
  auto v = ResolveFrom(bucket, loc, sel, r);
  if (!v.ok() &&
      (v.error().code == ErrorCode::kNoSuchKey || v.error().code == ErrorCode::kNoSuchVersion))
    RS_RETURN_IF_ERROR(CheckBucket(bucket));
  return v;
}

Status ErasureSet::RefuseDeleteMarker(const std::string& bucket, const std::string& key,
                                      const ObjectView& v, const VersionSel& sel,
                                      ObjectInfo* marker) {
  if (!v.meta.delete_marker) return {};
  // A named marker: 405 (the S3 layer adds the marker headers); the latest is one: 404.
  if (sel) return MakeError(ErrorCode::kMethodNotAllowed);
  if (marker) *marker = v.meta.ToInfo(bucket, key);
  return MakeError(ErrorCode::kNoSuchKey);
}

Result<ObjectInfo> ErasureSet::StatObject(const std::string& bucket, const std::string& key,
                                          const VersionSel& sel, ObjectInfo* marker) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto lock = LockObject(bucket, key, LockMode::kShared, "HeadObject");
  if (!lock.ok()) return lock.error();
  auto v = ResolveForRead(bucket, key, *loc, sel, ReadFor::kStat);
  if (!v.ok()) return v.error();
  RS_RETURN_IF_ERROR(RefuseDeleteMarker(bucket, key, *v, sel, marker));
  return v->meta.ToInfo(bucket, key);
}

namespace {

// Drops [p, p + n) of a read-only file mapping from this process's page tables (MADV_DONTNEED;
// the page cache keeps the pages, a later access maps them again).
void DropMappedPages(const char* p, size_t n) {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

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
    stored_size_ = off;
  }

  const ObjectInfo& info() const override { return info_; }

  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    std::lock_guard lock(mu_);
    const uint64_t stripe = v_.meta.erasure->stripe_size;
    size_t done = 0;
    // Stored bytes: info_.size is the plaintext size of an encrypted object.
    while (done < len && off + done < stored_size_) {
      const auto [part, in_part] = Locate(off + done);
      const uint64_t s = in_part / stripe;
      if (in_part == s * stripe) {
        if (const size_t direct = ReadWholeStripe(part, s, buf + done, len - done); direct > 0) {
          done += direct;
          continue;
        }
      }
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

  // The zero-copy read of a whole stripe (GET over plain HTTP, s3/api.cc): each data shard's
  // block goes into `pipe` straight from its mapped shard file, by reference, in stripe order, and
  // every block is checked against its bitrot hash while the pipe holds it. The pipe pins the
  // page-cache pages it references (a page with references is never reclaimed), so the bytes the
  // hashes covered are the bytes the socket gets; a stripe with a block that fails its check is
  // never sent from the pipe (the caller drops it) and ReadAt's stripe path reads it again:
  // reconstructed from parity where there is parity, else reported. Returns 0 where ReadAt must
  // do it: not a whole stripe at `off`, a data shard inline, missing, remote or unmappable, more
  // pages than the pipe holds (12+ data shards), a failed check.
  Result<size_t> ReadIntoPipe(uint64_t off, size_t len, SplicePipe& pipe) override {
    std::lock_guard lock(mu_);
    const auto& e = *v_.meta.erasure;
    if (off >= stored_size_) return 0;
    const auto [part, in_part] = Locate(off);
    const uint64_t s = in_part / e.stripe_size;
    if (in_part != s * e.stripe_size) return 0;
    Geometry g{e.data, e.parity, e.stripe_size};
    const uint64_t size = v_.meta.parts[part].size;
    const auto bytes = static_cast<size_t>(g.StripeBytes(size, s));
    if (bytes == 0 || bytes > len) return 0;
    const auto block = static_cast<size_t>(g.BlockSize(bytes));
    const uint64_t at = g.ShardOffset(size, s);
    // frames[i]: data shard i's framed block (hash, then `block` bytes) in its mapped file.
    std::vector<const char*> frames(static_cast<size_t>(e.data), nullptr);
    for (auto& src : v_.sources) {
      if (src.shard >= e.data || frames[static_cast<size_t>(src.shard)]) continue;
      if (!src.usable || src.is_inline) return 0;
      const std::string_view file = src.Map(part);
      if (file.size() < at + erasure::kBitrotHashSize + block) return 0;
      frames[static_cast<size_t>(src.shard)] = file.data() + at;
    }
    // However this ends, the stripe's pages leave this process's page tables (the pipe and the
    // socket hold their own references): a GET of a 1 GiB object must not grow RSS to 1 GiB.
    struct Unmapped {
      const std::vector<const char*>& frames;
      size_t len;
      ~Unmapped() {
        for (const char* f : frames)
          if (f) DropMappedPages(f, len);
      }
    } unmapped{frames, erasure::kBitrotHashSize + block};
    size_t pages = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!frames[i]) return 0;
      pages += SplicePipe::PagesOf(frames[i] + erasure::kBitrotHashSize, TakeOf(bytes, block, i));
    }
    if (pages > pipe.free_pages()) return 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      const size_t n = TakeOf(bytes, block, i);
      if (n > 0 && !pipe.Hold(frames[i] + erasure::kBitrotHashSize, n).ok()) return 0;
    }
    for (const char* f : frames)
      if (!erasure::VerifyBlock(f, f + erasure::kBitrotHashSize, block)) return 0;
    return bytes;
  }

  uint64_t PipeableFrom(uint64_t off) override {
    std::lock_guard lock(mu_);
    const auto& e = *v_.meta.erasure;
    if (off >= stored_size_) return UINT64_MAX;
    for (const auto& src : v_.sources) {
      if (src.shard < e.data && (!src.usable || src.is_inline || !src.drive->is_local()))
        return UINT64_MAX;  // a remote drive's shard cannot be mapped
    }
    const auto [part, in_part] = Locate(off);
    const uint64_t next = (in_part + e.stripe_size - 1) / e.stripe_size * e.stripe_size;
    if (next < v_.meta.parts[part].size) return offsets_[part] + next;
    return part + 1 < offsets_.size() ? offsets_[part + 1] : UINT64_MAX;  // the next part's start
  }

 private:
  // How many of a stripe's `bytes` data shard `i`'s block of `block` bytes carries (the last
  // ones carry padding only when the stripe is short).
  static size_t TakeOf(size_t bytes, size_t block, size_t i) {
    return i * block >= bytes ? 0 : std::min(block, bytes - i * block);
  }

  // The part holding stored byte `pos` (skipping empty parts) and the offset in it.
  std::pair<size_t, uint64_t> Locate(uint64_t pos) const {
    size_t part = static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), pos) -
                                      offsets_.begin() - 1);
    while (part < offsets_.size() && v_.meta.parts[part].size == 0) ++part;  // empty parts
    return {part, pos - offsets_[part]};
  }

  // A set without parity holding one data shard (a single drive, EC 1+0): a stripe's block is
  // the stripe's bytes, so a read that wants the whole stripe gets it straight into the caller's
  // buffer with one read (hash and data in one preadv), verified there: no staging buffer, no
  // copy. Returns the bytes read; 0 (nothing consumed) when the stripe does not fit, or the read
  // or its hash check failed: the stripe path then reads it again and reports the failure.
  size_t ReadWholeStripe(size_t part, uint64_t s, char* out, size_t room) {
    const auto& e = *v_.meta.erasure;
    if (e.data != 1 || e.parity != 0 || v_.sources.size() != 1) return 0;
    ShardSource& src = v_.sources[0];
    if (src.is_inline) return 0;
    Geometry g{e.data, e.parity, e.stripe_size};
    const uint64_t size = v_.meta.parts[part].size;
    const auto bytes = static_cast<size_t>(g.StripeBytes(size, s));
    if (bytes == 0 || bytes > room) return 0;
    char hash[erasure::kBitrotHashSize];
    if (!src.ReadFramed(part, g.ShardOffset(size, s), hash, out, bytes) ||
        !erasure::VerifyBlock(hash, out, bytes))
      return 0;
    return bytes;
  }

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
  uint64_t stored_size_ = 0;
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
                                                             const std::string& key,
                                                             const VersionSel& sel) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  // Shared: no writer commits while the version is resolved and its shards are opened. Not held
  // while the body streams (a slow reader would hold up every writer of the key).
  auto lock = LockObject(bucket, key, LockMode::kShared, "GetObject");
  if (!lock.ok()) return lock.error();
  auto v = ResolveForRead(bucket, key, *loc, sel, ReadFor::kData);
  if (!v.ok()) return v.error();
  RS_RETURN_IF_ERROR(RefuseDeleteMarker(bucket, key, *v, sel, nullptr));
  auto codec = GetCodec(v->meta.erasure->data, v->meta.erasure->parity);
  if (!codec.ok()) return codec.error();
  // Snapshot: open the first part on every drive now, so an overwrite cannot pull it away.
  std::vector<bool> probe(v->sources.size(), false);
  for (size_t p = 0; p < v->sources.size(); ++p) {
    probe[p] = v->has[p] && v->sources[p].usable && !v->sources[p].is_inline &&
               !v->meta.parts.empty() && v->meta.parts[0].size > 0;
  }
  auto probed = ForEachDrive(
      probe, [&](size_t p) { return v->sources[p].Open(0); }, DriveWork::kLookup);
  // Only drives read can be seen to lack the version (a quorum read leaves some unread).
  bool degraded = false;
  for (size_t p = 0; p < v->sources.size(); ++p) {
    degraded = degraded || (v->read[p] && (!v->has[p] || !v->sources[p].usable)) ||
               (probe[p] && !probed[p]);
  }
  if (degraded) ReportDegraded(bucket, key);
  ObjectInfo info = v->meta.ToInfo(bucket, key);
  return std::unique_ptr<ObjectReader>(
      new ErasureReader(std::move(info), std::move(*v), *codec, fanout_,
                        [this, bucket, key] { ReportDegraded(bucket, key); }));
}

}  // namespace rdmastor::storage
