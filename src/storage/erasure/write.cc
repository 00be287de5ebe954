// The erasure write path: staging, encode, publish, commit, rollback; PUT, DELETE, metadata
// updates.

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "common/hash.h"
#include "storage/erasure/set.h"
#include "storage/fsutil.h"
#include "storage/local_drive.h"
#include "storage/s3_limits.h"

namespace rdmastor::storage {

ErasureSet::Stagings::Stagings(const ErasureSet& set, std::vector<bool>& alive, bool create,
                               bool reuse)
    : set_(set), used_(alive.size(), kGone), reuse_(reuse && !create) {
  if (reuse_) {
    std::lock_guard lock(set.staging_pool_mu_);
    if (!set.staging_pool_.empty()) {
      dir_ = std::move(set.staging_pool_.back());
      set.staging_pool_.pop_back();
      // Clean (or absent) everywhere: kept as it is unless this write makes it dirty.
      std::fill(used_.begin(), used_.end(), kKept);
      return;
    }
  }
  dir_ = rel::Staging(hash::RandomHex(16));
  if (!create) return;
  const auto& roots = set.roots_;
  alive = set.ForEachDrive(
      alive,
      [&](size_t p) {
        auto made = roots[p]->MakeDir(dir_);
        if (!made.ok()) {
          spdlog::warn("erasure: drive {} not writable: {}", roots[p]->name(),
                       made.error().message);
        }
        used_[p] = made.ok();
        return made.ok();
      },
      DriveWork::kBuffered);
}

ErasureSet::Stagings::~Stagings() {
  const size_t n = used_.size();
  // Per position: the whole directory goes, or (a kept one) only its retired data.
  std::vector<bool> touch(n);
  for (size_t p = 0; p < n; ++p) touch[p] = used_[p] == kUsed || used_[p] == kKeptOld;
  const std::string old = Join(dir_, "old");
  std::vector<char> kept_old(n, 0);  // not vector<bool>: written per position concurrently
  const auto done = set_.ForEachDrive(
      touch,
      [&](size_t p) {
        if (reuse_ && used_[p] == kKeptOld && set_.roots_[p]->RemoveAll(old).ok()) {
          kept_old[p] = 1;
          return true;
        }
        return set_.roots_[p]->RemoveAll(dir_).ok();
      },
      DriveWork::kBuffered);
  std::vector<bool> kept(n);
  bool clean = reuse_;  // every position clean (journal only) or gone: the name may be reused
  for (size_t p = 0; p < n; ++p) {
    kept[p] = used_[p] == kKept || kept_old[p];
    if (touch[p] && !done[p]) clean = false;
  }
  if (Count(kept) == 0) return;
  if (clean) {
    std::lock_guard lock(set_.staging_pool_mu_);
    if (set_.staging_pool_.size() < kStagingPoolMax) {
      set_.staging_pool_.push_back(std::move(dir_));
      return;
    }
  }
  set_.ForEachDrive(
      kept, [&](size_t p) { return set_.roots_[p]->RemoveAll(dir_).ok(); }, DriveWork::kBuffered);
}

FrameBuffers::FrameBuffers(size_t shards, size_t capacity) : bufs_(shards) { Reserve(capacity); }

void FrameBuffers::Free::operator()(char* p) const { std::free(p); }

void FrameBuffers::Reserve(size_t more) {
  if (fill_ + more <= capacity_) return;
  constexpr size_t kAlign = fsutil::kDirectIoAlign;
  const size_t cap = (std::max(fill_ + more, capacity_ * 2) + kAlign - 1) / kAlign * kAlign;
  for (auto& b : bufs_) {
    // Not zeroed: every byte is written before it is read (the blocks' padding explicitly).
    void* mem = std::aligned_alloc(kAlign, cap);
    if (!mem) throw std::bad_alloc();
    if (fill_ > 0) std::memcpy(mem, b.get(), fill_);
    b.reset(static_cast<char*>(mem));
  }
  capacity_ = cap;
}

void FrameBuffers::Consume(size_t n) {
  const size_t rest = fill_ - n;
  for (auto& b : bufs_)
    if (rest > 0) std::memmove(b.get(), b.get() + n, rest);
  fill_ = rest;
}

Result<uint64_t> ErasureSet::Encode(BodySource& body, std::optional<uint64_t> declared,
                                    uint64_t limit, const Codec& codec,
                                    const std::vector<int>& dist, const Stagings& st,
                                    std::vector<bool>& alive, const std::string& rel,
                                    std::optional<uint64_t> inline_limit,
                                    std::vector<std::string>* inline_out, std::string* md5_out,
                                    bool committed_by_rename_data) {
  if (declared && *declared > limit) {
    return MakeError(ErrorCode::kEntityTooLarge, "declared size " + std::to_string(*declared) +
                                                     " exceeds the limit of " +
                                                     std::to_string(limit) + " bytes");
  }
  constexpr size_t kHash = erasure::kBitrotHashSize;
  constexpr size_t kAlign = fsutil::kDirectIoAlign;
  const size_t n = static_cast<size_t>(n_);
  const size_t k = static_cast<size_t>(codec.data());
  const size_t shards = static_cast<size_t>(codec.total());
  const int quorum = erasure::WriteQuorum(codec.data(), codec.parity());  // the object's
  const size_t piece = fanout_.piece_bytes();
  const size_t max_frame = kHash + (erasure::kStripeSize + k - 1) / k;
  // What every shard file will hold when the body has its declared size (0: not declared).
  const uint64_t shard_size =
      declared
          ? erasure::Geometry{codec.data(), codec.parity(), erasure::kStripeSize}.ShardFileSize(
                *declared)
          : 0;
  // By shard index: the framed shard bytes not written yet. They go out in pieces of about
  // fanout_.piece_bytes() per drive, every host's in one WriteShardPieces call (a remote node's
  // drives in one peer call: a 2 MiB PUT on 4 nodes x 4 drives is 3 shard calls, not 12). A set
  // of local drives cuts its pieces at kAlign boundaries (all but the file's last bytes can go
  // out with direct I/O, and what stays behind is less than kAlign); a set with remote drives in
  // pieces of exactly piece_bytes (what one transport buffer holds).
  const size_t held = piece + max_frame + kAlign;
  FrameBuffers pending(shards, declared ? std::min<uint64_t>(held, shard_size + kAlign) : held);
  std::vector<uint64_t> written(n, 0);  // per position: bytes of its shard file written
  std::unique_ptr<hash::Hasher> md5;
  if (md5_out) md5 = hash::NewHasher(hash::Algo::kMD5);
  bool files = false;
  uint64_t total = 0;
  // Inline (MinIO's rule, by shard size): a declared body decides up front; one of unknown length
  // keeps its framed shard bytes in memory, stripe after stripe, until they would exceed the limit.
  auto too_big_for_inline = [&] {
    if (!inline_limit) return true;
    return declared ? shard_size > *inline_limit : pending.size() > *inline_limit;
  };
  std::vector<char*> frames(shards);
  std::vector<BodySource::Segment> segs(k);
  std::vector<char> relayout;
  for (;;) {
    // The next stripe: the rest of a declared body (up to a stripe), or a stripe's worth.
    const size_t want =
        static_cast<size_t>(declared ? std::min<uint64_t>(erasure::kStripeSize, *declared - total)
                                     : erasure::kStripeSize);
    size_t got = 0;
    if (want > 0) {
      pending.Reserve(kHash + (want + k - 1) / k);
      size_t block = (want + k - 1) / k;
      for (size_t i = 0; i < shards; ++i) frames[i] = pending.at(i) + pending.size();
      // Data shard i's block is the stripe's bytes [i * block, (i + 1) * block).
      for (size_t i = 0; i < k; ++i) {
        const size_t from = std::min(want, i * block);
        segs[i] = {frames[i] + kHash, std::min(block, want - from)};
      }
      auto r = body.ReadFullV(segs.data(), k);
      if (!r.ok()) return r.error();
      got = *r;
      total += got;
      if (total > limit) {
        return MakeError(ErrorCode::kEntityTooLarge,
                         "body exceeds the limit of " + std::to_string(limit) + " bytes");
      }
      if (md5) {
        size_t left = got;
        for (size_t i = 0; i < k && left > 0; ++i) {
          const size_t m = std::min(left, segs[i].len);
          md5->Update(segs[i].data, m);
          left -= m;
        }
      }
      if (declared && got < want) {
        return MakeError(ErrorCode::kIncompleteBody, "received " + std::to_string(total) + " of " +
                                                         std::to_string(*declared) + " bytes");
      }
      if (got < want && got > 0) {
        // The short last stripe of a body of unknown length: its blocks are shorter; lay its
        // bytes out again (the only copy on this path, at most one stripe per body).
        relayout.resize(got);
        size_t off = 0;
        for (size_t i = 0; i < k && off < got; ++i) {
          const size_t m = std::min(got - off, segs[i].len);
          std::memcpy(relayout.data() + off, segs[i].data, m);
          off += m;
        }
        block = (got + k - 1) / k;
        for (size_t i = 0; i < k; ++i) {
          const size_t from = std::min(got, i * block);
          segs[i] = {frames[i] + kHash, std::min(block, got - from)};
          std::memcpy(segs[i].data, relayout.data() + from, segs[i].len);
        }
      }
      if (got > 0) {
        for (size_t i = 0; i < k; ++i) {
          const size_t filled = std::min(segs[i].len, got - std::min(got, i * block));
          std::memset(segs[i].data + filled, 0, block - filled);  // the last blocks' padding
        }
        erasure::EncodeFrames(codec, frames.data(), block);
        pending.Append(kHash + block);
      }
    }
    const bool end = declared ? total == *declared : got < want;
    if (end && declared) {
      // The body must end here: one more byte means it is longer than declared.
      char extra;
      auto more = body.ReadFull(&extra, 1);
      if (!more.ok()) return more.error();
      if (*more > 0) {
        return MakeError(ErrorCode::kInvalidRequest, "request body is longer than the declared " +
                                                         std::to_string(*declared) + " bytes");
      }
    }
    if (!files && too_big_for_inline()) {
      files = true;
      for (size_t p = 0; p < n; ++p)
        if (alive[p]) st.Use(p);  // the shard's first piece makes the staging directory
    }
    if (files) {
      if (all_local_) {
        // Everything at the end; before, whole kAlign blocks once a piece is held.
        if (end || pending.size() >= piece) {
          const size_t len = end ? pending.size() : pending.size() / kAlign * kAlign;
          WritePieces(pending, len, dist, written, st, alive, rel, shard_size,
                      /*sync=*/end && !committed_by_rename_data);
          if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
        }
      } else {
        // Full pieces as they fill, and the rest at the end (the last piece of a shard that no
        // RenameData commits carries its fsync: multipart parts).
        while (pending.size() > piece || (!end && pending.size() == piece)) {
          WritePieces(pending, piece, dist, written, st, alive, rel, shard_size, /*sync=*/false);
          if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
        }
        if (end) {
          WritePieces(pending, pending.size(), dist, written, st, alive, rel, shard_size,
                      /*sync=*/!committed_by_rename_data);
          if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
        }
      }
    }
    if (end) break;
  }
  if (!files) {
    inline_out->assign(n, std::string());
    for (size_t p = 0; p < n; ++p)
      (*inline_out)[p].assign(pending.at(static_cast<size_t>(dist[p])), pending.size());
  }
  if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
  if (md5_out) *md5_out = hash::HexEncode(md5->Final());
  return total;
}

void ErasureSet::WritePieces(FrameBuffers& pending, size_t len, const std::vector<int>& dist,
                             std::vector<uint64_t>& written, const Stagings& st,
                             std::vector<bool>& alive, const std::string& rel, uint64_t shard_size,
                             bool sync) const {
  const size_t n = roots_.size();
  std::vector<char> ok(n, 0);  // not vector<bool>: written per host concurrently
  // Files a RenameData commits are made durable by its first barrier (group commit); a shard
  // synced here waits on its disk: each local drive's piece on its own thread then (kIo). So does
  // a direct write (LocalDrive::WriteShardAt), which returns once its blocks are on the disk:
  // measured on 4 drives, 1 MiB and 64 MiB PUTs at c=8 took no more CPU per GiB that way
  // (4.4-4.8 against 4.9-5.2 s/GiB at 1 MiB) and the drives' writes overlap.
  const bool direct = all_local_ && LocalDrive::direct_writes();
  fanout_.ForEachHost(
      alive,
      [&](DriveHost& host, const std::vector<size_t>& members) {
        std::vector<ShardPiece> pieces;
        std::vector<size_t> sent;
        for (size_t p : members) {
          const std::string_view data(pending.at(static_cast<size_t>(dist[p])), len);
          const bool create = written[p] == 0;
          if (data.empty() && !create && !sync) {
            ok[p] = 1;  // nothing left for this drive
            continue;
          }
          pieces.push_back({fanout_.slot(p).index, Join(st[p], rel), written[p], data, create, sync,
                            shard_size});
          sent.push_back(p);
        }
        if (pieces.empty()) return;
        auto done = host.WriteShardPieces(pieces);
        for (size_t j = 0; j < sent.size() && j < done.size(); ++j) {
          ok[sent[j]] = done[j].ok();
          if (!done[j].ok())
            spdlog::warn("erasure: shard write on {} failed: {}", roots_[sent[j]]->name(),
                         done[j].error().message);
        }
      },
      sync || direct ? DriveWork::kIo : DriveWork::kBuffered);
  for (size_t p = 0; p < n; ++p) {
    if (!alive[p]) continue;
    if (!ok[p]) {
      alive[p] = false;
      continue;
    }
    written[p] += len;
  }
  pending.Consume(len);  // what is left (less than a stripe) moves up
}

Status ErasureSet::Publish(const std::string& bucket, const std::string& key,
                           const paths::KeyLocation& loc, const Stagings& st,
                           std::vector<bool>& alive, const std::vector<ObjectMeta>& metas,
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

Status ErasureSet::CheckPrecondition(const std::string& bucket, const std::string& key,
                                     const paths::KeyLocation& loc,
                                     const WritePrecondition& precondition) {
  if (!precondition) return {};
  auto current = Resolve(bucket, loc);
  if (!current.ok() && current.error().code != ErrorCode::kNoSuchKey) return current.error();
  std::optional<ObjectInfo> info;
  // A delete marker is no object to compare with.
  if (current.ok() && !current->meta.delete_marker) info = current->meta.ToInfo(bucket, key);
  return precondition(info ? &*info : nullptr);
}

Status ErasureSet::CommitAll(const std::string& bucket, const paths::KeyLocation& loc,
                             const Stagings& st, std::vector<bool>& alive,
                             const std::vector<ObjectMeta>& metas, int quorum,
                             const NamespaceLock& lock, bool keep_data) {
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
  auto results = RenameDataAll(alive, [&](size_t p) {
    RenameDataRequest req{st[p],       bucket,
                          key_dir,     std::string(loc.meta_name),
                          new_data(p), SerializeObjectMeta(metas[p]),
                          keep_data,   /*prune=*/false};
    // Each drive merges the version into its own file (its own shard index and inline shards).
    req.mode = RenameMode::kAddVersion;
    req.keep_staging = st.reuse();  // handed back to the set's pool when clean (Stagings)
    st.Use(p);
    return req;
  });
  std::vector<bool> committed(n, false);
  for (size_t p = 0; p < n; ++p) {
    if (!alive[p]) continue;
    auto& r = results[p];
    if (!r.ok()) {
      no_bucket[p] = r.error().code == ErrorCode::kNoSuchBucket;
      continue;
    }
    // Retired data stays until the write has its quorum (a rollback restores it from there).
    if (!r->old_data_name.empty()) {
      st.KeptWithOld(p);
    } else if (r->staging_kept) {
      st.Kept(p);
    } else {
      st.Gone(p);
    }
    old[p] = std::move(*r);
    committed[p] = true;
  }
  if (Count(committed) >= quorum) return {};
  spdlog::warn("erasure: {}/{}: only {} of {} drives committed; rolling back", bucket, loc.rel_dir,
               Count(committed), quorum);
  ForEachDrive(committed, [&](size_t p) {
    Rollback(p, bucket, loc, st[p], old[p].old_meta, old[p].old_data_name, new_data(p));
    st.Use(p);  // what the rollback left goes with the directory
    return true;
  });
  return CommitQuorumError(bucket, Count(committed),
                           static_cast<int>(std::count(no_bucket.begin(), no_bucket.end(), 1)),
                           quorum);
}

Error ErasureSet::CommitQuorumError(const std::string& bucket, int committed, int no_bucket,
                                    int quorum) {
  // As MinIO reduces write errors: the bucket is gone only when a write quorum of drives says so.
  // Drives that lost everything (removed, replaced, not yet formatted) lack the bucket too, and a
  // write that touched no drive before its commit (an inline object) meets them only here: that
  // is a lost write quorum (503), not a deleted bucket (404).
  if (no_bucket >= quorum) {
    ForgetBucket(bucket);  // deleted (by another node) since it was cached
    return MakeError(ErrorCode::kNoSuchBucket);
  }
  return WriteQuorumError(committed, quorum);
}

void ErasureSet::Rollback(size_t p, const std::string& bucket, const paths::KeyLocation& loc,
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
  } else if (!old_raw) {
    d.PruneEmptyDirs(key_dir, bucket);  // a fresh key leaves no directory behind
  }
  (void)d.RemoveAll(s2);
}

ObjectMeta ErasureSet::MetaFor(const ObjectMeta& base, const std::vector<int>& dist, size_t p,
                               const std::vector<std::string>* inline_shards) const {
  ObjectMeta m = base;
  m.erasure->index = dist[p];
  if (inline_shards) m.erasure->SetInline((*inline_shards)[p]);
  return m;
}

ObjectMeta ErasureSet::NewMeta(const std::string& key, const paths::KeyLocation& loc,
                               const Shape& shape) const {
  ObjectMeta m;
  m.data_dir = std::string(loc.data_prefix) + hash::RandomHex(16);
  ErasureMeta e;
  e.data = shape.data;
  e.parity = shape.parity;
  e.stripe_size = erasure::kStripeSize;
  e.distribution = Distribution(key);
  e.bitrot = erasure::kBitrotAlgorithm;
  m.erasure = std::move(e);
  return m;
}

Result<ObjectInfo> ErasureSet::PutObject(const std::string& bucket, const std::string& key,
                                         BodySource& body, const PutOptions& opts,
                                         const CommitCheck& check) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  // The storage class decides the parity (MINIO_STORAGE_CLASS_STANDARD / _RRS); the version
  // records it, and everything after (reads, heals, quorums) follows the version's own.
  const Shape shape = ShapeFor(opts.storage_class);
  auto codec = GetCodec(shape.data, shape.parity);
  if (!codec.ok()) return codec.error();
  ObjectMeta meta = NewMeta(key, *loc, shape);
  auto version_id = NewVersionId(bucket, key);
  if (!version_id.ok()) return version_id.error();
  meta.version_id = std::move(*version_id);
  const auto& dist = meta.erasure->distribution;
  std::vector<bool> alive(roots_.size(), true);
  // Per remote drive: the shard's pieces (none for an inline object) and one RenameData.
  Stagings st(*this, alive, /*create=*/false, /*reuse=*/true);
  std::vector<std::string> inline_shards;
  std::string md5;
  // A version id is made only when versioning is Enabled: that bucket's metadata files keep every
  // version, so its inline shards are held to an eighth of the block (MinIO's ShouldInline).
  const uint64_t inline_limit =
      erasure::InlineShardLimit(layout_.inline_block, /*versioned=*/!meta.version_id.empty());
  auto size =
      Encode(body, opts.size, MaxStoredPutSize(opts.internal), **codec, dist, st, alive,
             "data/" + PartFileName(1), inline_limit, &inline_shards, check ? nullptr : &md5,
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
  CopyDeclared(opts, meta);
  meta.checksums = ci.checksums;
  meta.parts.push_back(PartMeta{1, *size, meta.etag, {}});
  meta.erasure->is_inline = !inline_shards.empty();
  std::vector<ObjectMeta> metas;
  for (size_t p = 0; p < roots_.size(); ++p) {
    metas.push_back(MetaFor(meta, dist, p, meta.erasure->is_inline ? &inline_shards : nullptr));
  }
  RS_RETURN_IF_ERROR(
      Publish(bucket, key, *loc, st, alive, metas, shape.write_quorum(), opts.precondition));
  return meta.ToInfo(bucket, key);
}

Status ErasureSet::CheckDeletePrecondition(const std::string& bucket, const std::string& key,
                                           const paths::KeyLocation& loc, const VersionSel& sel,
                                           std::optional<Versioning> state,
                                           const DeletePrecondition& precondition) {
  if (!precondition) return {};
  // Read under the lock: what a stat outside it saw may have changed since.
  auto read = [&](const VersionSel& which) -> Result<std::optional<ObjectInfo>> {
    auto v = Resolve(bucket, loc, which);
    if (v.ok()) return std::optional<ObjectInfo>(v->meta.ToInfo(bucket, key));
    if (v.error().code == ErrorCode::kNoSuchKey || v.error().code == ErrorCode::kNoSuchVersion)
      return std::optional<ObjectInfo>();
    return v.error();  // cannot tell: nothing is deleted
  };
  auto latest = read(std::nullopt);
  if (!latest.ok()) return latest.error();
  std::optional<ObjectInfo> removed;
  if (sel) {
    auto v = read(sel);
    if (!v.ok()) return v.error();
    removed = std::move(*v);
  } else if (state && *state != Versioning::kEnabled) {
    // Unversioned: the null version is the latest. Suspended: the marker replaces the null one.
    auto v = read(VersionSel(std::string()));
    if (!v.ok()) return v.error();
    removed = std::move(*v);
  }
  DeleteTarget target;
  if (*latest) target.latest = &**latest;
  if (removed) target.removed = &*removed;
  return precondition(target);
}

Result<DeleteResult> ErasureSet::DeleteObject(const std::string& bucket, const std::string& key,
                                              const VersionSel& sel,
                                              const DeletePrecondition& precondition) {
  // Cached, as a PUT's: every drive's RenameData refuses a bucket deleted meanwhile, and a write
  // quorum of such refusals is a NoSuchBucket below (in a cluster, a StatVol of every remote drive
  // per DELETE was 12 of its 15 storage calls).
  RS_RETURN_IF_ERROR(CheckBucket(bucket, /*cached=*/true));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  std::optional<Versioning> state;
  if (!sel) {
    auto s = VersioningOf(bucket, key);
    if (!s.ok()) return s.error();
    state = *s;
  }
  std::vector<bool> alive(roots_.size(), true);
  Stagings st(*this, alive, /*create=*/false, /*reuse=*/true);
  const std::string key_dir = Join(bucket, loc->rel_dir);
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "DeleteObject");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  RS_RETURN_IF_ERROR(CheckDeletePrecondition(bucket, key, *loc, sel, state, precondition));
  DeleteResult out;
  if (state && *state != Versioning::kUnversioned) {
    // A delete marker becomes the latest version: a new id when Enabled; when Suspended the null
    // one, replacing the null version (whose data goes).
    ObjectMeta marker;
    marker.delete_marker = true;
    marker.mtime_ns = NowNs();
    if (*state == Versioning::kEnabled) marker.version_id = GenerateVersionId();
    std::vector<ObjectMeta> metas(roots_.size(), marker);
    RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, alive, metas, write_quorum(), **lock));
    out.version_id = marker.version_id;
    out.delete_marker = out.created_marker = true;
    return out;
  }
  // Removes a version for good: the named one, or the null one of an unversioned bucket.
  out.version_id = sel ? *sel : std::string();
  if (sel) {
    auto v = Resolve(bucket, *loc, sel);
    if (v.ok()) {
      out.delete_marker = v->meta.delete_marker;
    } else if (v.error().code != ErrorCode::kNoSuchVersion &&
               v.error().code != ErrorCode::kNoSuchKey) {
      return v.error();
    }
  }
  auto results = RenameDataAll(alive, [&](size_t p) {
    RenameDataRequest req{st[p],
                          bucket,
                          key_dir,
                          std::string(loc->meta_name),
                          "",
                          std::nullopt,
                          /*keep_data=*/false,
                          /*prune=*/true};
    req.mode = RenameMode::kRemoveVersion;
    req.version_id = out.version_id;
    req.keep_staging = st.reuse();
    st.Use(p);
    return req;
  });
  int done = 0;
  int no_bucket = 0;
  for (size_t p = 0; p < results.size(); ++p) {
    if (alive[p] && !results[p].ok() && results[p].error().code == ErrorCode::kNoSuchBucket)
      ++no_bucket;
    if (!alive[p] || !results[p].ok()) continue;
    // A delete keeps nothing to roll back to.
    if (results[p]->staging_kept) {
      st.Kept(p);
    } else {
      st.Gone(p);
    }
    ++done;
  }
  if (done < write_quorum()) return CommitQuorumError(bucket, done, no_bucket, write_quorum());
  return out;
}

Result<ObjectInfo> ErasureSet::UpdateMetadata(const std::string& bucket, const std::string& key,
                                              const PutOptions& opts) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  std::vector<bool> alive(roots_.size(), true);
  Stagings st(*this, alive, /*create=*/false, /*reuse=*/true);
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "CopyObject");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  auto v = Resolve(bucket, *loc, opts.version);
  if (!v.ok()) return v.error();
  // The version changes in place (same id); a delete marker has nothing to update.
  if (v->meta.delete_marker)
    return MakeError(opts.version ? ErrorCode::kMethodNotAllowed : ErrorCode::kNoSuchKey);
  // A class is a parity: changing it rewrites the data (CopyObject copies then), never here.
  if ((opts.update & FieldBit(VersionField::storage_class)) &&
      opts.storage_class != v->meta.storage_class) {
    return MakeError(ErrorCode::kInternalError,
                     "a storage class change needs the data rewritten; not a metadata update");
  }
  if (opts.precondition) {
    const ObjectInfo now = v->meta.ToInfo(bucket, key);
    RS_RETURN_IF_ERROR(opts.precondition(&now));
  }
  ApplyMetadataUpdate(opts, v->meta, NowNs());
  std::vector<ObjectMeta> metas(roots_.size());
  for (size_t p = 0; p < roots_.size(); ++p) {
    alive[p] = alive[p] && v->sources[p].usable;
    if (!alive[p]) continue;
    metas[p] = v->meta;
    // Each drive keeps its own shard index (v->meta carries one drive's): writing one index
    // everywhere left a single readable shard after a metadata-only update.
    metas[p].erasure->index = v->sources[p].shard;
    metas[p].erasure->SetInline(v->sources[p].inline_shard);
  }
  const auto& e = *v->meta.erasure;
  RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, alive, metas,
                               erasure::WriteQuorum(e.data, e.parity), **lock, /*keep_data=*/true));
  return v->meta.ToInfo(bucket, key);
}

}  // namespace rdmastor::storage
