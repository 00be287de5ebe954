// Healing: one object (verify every block, rebuild and commit missing or corrupt copies), dangling
// leftovers of failed writes, and the store's heal queue, heal walks and replaced-drive check.

#include <spdlog/spdlog.h>

#include <set>

#include "common/hash.h"
#include "storage/erasure/set.h"
#include "storage/format.h"
#include "storage/fsutil.h"
#include "storage/listing.h"

namespace rdmastor::storage {


Result<ObjectHealResult> ErasureSet::HealObject(const std::string& bucket, const std::string& key) {
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  EnsureBucket(bucket);
  // Every version any drive's file names is healed on its own (each has its own data directory);
  // a drive that lost the file gets them back one by one, each in its place (mtime order).
  const std::string path = Join(Join(bucket, loc->rel_dir), loc->meta_name);
  std::vector<std::vector<std::string>> ids(roots_.size());
  ForEachDrive(
      [&](size_t p) {
        auto raw = roots_[p]->ReadFile(path);
        if (!raw.ok() || !raw->has_value()) return false;
        auto file = ParseObjectVersions(**raw, path);
        if (!file.ok()) return false;
        for (const auto& v : file->versions) ids[p].push_back(v.version_id);
        return true;
      },
      DriveWork::kLookup);
  std::set<std::string> all;
  for (const auto& d : ids) all.insert(d.begin(), d.end());
  if (all.empty()) return HealVersion(bucket, key, *loc, std::nullopt);  // none, or unreadable
  ObjectHealResult total;
  std::set<std::string> missed;
  for (const auto& id : all) {
    auto r = HealVersion(bucket, key, *loc, id);
    if (!r.ok()) return r.error();
    total.rewritten += r->rewritten;
    total.written_drives.insert(total.written_drives.end(), r->written_drives.begin(),
                                r->written_drives.end());
    missed.insert(r->missed_drives.begin(), r->missed_drives.end());
  }
  total.missed_drives.assign(missed.begin(), missed.end());
  return total;
}

Result<ObjectHealResult> ErasureSet::HealVersion(const std::string& bucket, const std::string& key,
                                                 const paths::KeyLocation& loc_in,
                                                 const VersionSel& sel) {
  const paths::KeyLocation* loc = &loc_in;
  // Verification runs without the namespace lock, so a heal walk over healthy objects never holds
  // up writers (nor leaves a lock behind on the other nodes if this node dies mid-walk). Only a
  // heal with something to write takes the key's exclusive lock, and first checks that the version
  // it verified is still the current one.
  auto v = Resolve(bucket, *loc, sel);
  if (!v.ok()) {
    if (v.error().code != ErrorCode::kNoSuchKey && v.error().code != ErrorCode::kNoSuchVersion)
      return v.error();
    auto removed = RemoveDangling(bucket, *loc, key, sel);
    if (!removed.ok()) return removed.error();
    return ObjectHealResult{*removed, {}};
  }
  if (v->meta.delete_marker) return HealMarker(bucket, key, *loc, *v);
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
  auto now = Resolve(bucket, *loc, sel);
  if (!now.ok() || now->meta.data_dir != v->meta.data_dir || now->meta.etag != v->meta.etag ||
      now->meta.version_id != v->meta.version_id) {
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
  for (size_t p = 0; p < n; ++p)
    if (need[p]) result.written_drives.push_back(roots_[p]->name());
  // Per object at debug: a replaced drive heals every object (HealCounts::Log summarises).
  spdlog::debug("heal: {}/{}: rewrote {} drive copy(ies)", bucket, key, result.rewritten);
  return result;
}

Result<ObjectHealResult> ErasureSet::HealMarker(const std::string& bucket, const std::string& key,
                                                const paths::KeyLocation& loc,
                                                const ObjectView& v) {
  // A delete marker has no data: drives that lack it get its record.
  const size_t n = roots_.size();
  ObjectHealResult result;
  auto needs = [&](const ObjectView& view) {
    std::vector<bool> need(n, false);
    result.missed_drives.clear();
    for (size_t p = 0; p < n; ++p) {
      if (view.has[p]) continue;
      need[p] = roots_[p]->IsOnline();
      if (!need[p]) result.missed_drives.push_back(roots_[p]->name());
    }
    return need;
  };
  if (Count(needs(v)) == 0) return result;
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "HealObject");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  const VersionSel sel = v.meta.version_id;
  auto now = Resolve(bucket, loc, sel);
  if (!now.ok() || !now->meta.delete_marker || now->meta.mtime_ns != v.meta.mtime_ns)
    return ObjectHealResult{};
  std::vector<bool> need = needs(*now);
  if (Count(need) == 0) return result;
  Stagings st(*this, need, /*create=*/false);
  std::vector<ObjectMeta> metas(n, now->meta);
  RS_RETURN_IF_ERROR(CommitAll(bucket, loc, st, need, metas, /*quorum=*/1, **lock));
  result.rewritten = Count(need);
  for (size_t p = 0; p < n; ++p)
    if (need[p]) result.written_drives.push_back(roots_[p]->name());
  spdlog::debug("heal: {}/{}: wrote delete marker on {} drive(s)", bucket, key, result.rewritten);
  return result;
}

Result<int> ErasureSet::RemoveDangling(const std::string& bucket, const paths::KeyLocation& loc,
                                       const std::string& key, const VersionSel& sel) {
  const std::string key_dir = Join(bucket, loc.rel_dir);
  const std::string meta_path = Join(key_dir, loc.meta_name);
  auto has_copy = [&](size_t p) { return roots_[p]->Exists(meta_path); };
  if (Count(ForEachDrive(has_copy, DriveWork::kLookup)) == 0) return 0;  // nothing there
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "HealObject");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  auto v = Resolve(bucket, loc, sel);
  if (v.ok() || (v.error().code != ErrorCode::kNoSuchKey &&
                 v.error().code != ErrorCode::kNoSuchVersion))
    return 0;  // a write landed meanwhile
  const int removed = Count(ForEachDrive([&](size_t p) {
    Drive& d = *roots_[p];
    if (!d.Exists(meta_path)) return false;
    if (sel) {
      // One version on too few drives (a write that failed without its rollback): that version
      // goes from the drives that have it, the others stay.
      auto raw = d.ReadFile(meta_path);
      if (!raw.ok() || !raw->has_value()) return false;
      auto file = ParseObjectVersions(**raw, meta_path);
      if (!file.ok() || !file->Find(*sel)) return false;
      RenameDataRequest req{rel::Staging(hash::RandomHex(16)), bucket, key_dir,
                            std::string(loc.meta_name),        "",     std::nullopt,
                            /*keep_data=*/false,               /*prune=*/true};
      req.mode = RenameMode::kRemoveVersion;
      req.version_id = *sel;
      return d.RenameData(req).ok();
    }
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
    spdlog::debug("heal: removed dangling {}/{} from {} drive(s)", bucket, key, removed);
  return 0;
}

// ---- ErasureStore: the heal queue, drive replacement, heal walks ----

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
  for (const auto& d : r->written_drives) ++written_per_drive[d];
}

void HealCounts::Log(std::string_view run) const {
  const bool clean = failed == 0 && incomplete == 0;
  if (clean) {
    spdlog::info("heal: {} done: {}", run, Summary());
  } else {
    spdlog::warn("heal: {} done: {} (each object: RDMASTOR_LOG_LEVEL=debug)", run, Summary());
  }
  for (const auto& [drive, n] : written_per_drive)
    spdlog::info("heal: {}: drive {}: {} copy(ies) rewritten", run, drive, n);
  for (const auto& drive : missed_drives)
    if (!written_per_drive.count(drive))
      spdlog::warn("heal: {}: drive {}: copies not rebuilt (offline or failing)", run, drive);
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

void ErasureStore::StartUploadExpiry(std::chrono::milliseconds expiry,
                                     std::chrono::milliseconds interval) {
  {
    std::lock_guard lock(mu_);
    upload_expiry_ = expiry;
    upload_sweep_interval_ = interval;
  }
  cv_.notify_all();
}

int ErasureStore::ExpireStaleUploads(int64_t initiated_before_ns) {
  int removed = 0;
  for (auto& s : sets_) {
    auto n = s->ExpireUploads(initiated_before_ns);
    if (n.ok()) removed += *n;
  }
  return removed;
}

void ErasureStore::BackgroundLoop() {
  HealCounts on_read;  // heal-on-read items since the queue was last empty
  auto next_check = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> next_sweep;  // set once expiry is on
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    const bool sweeping = upload_expiry_.count() > 0 && upload_sweep_interval_.count() > 0;
    if (!sweeping) {
      next_sweep.reset();
    } else if (!next_sweep) {
      next_sweep = now + upload_sweep_interval_;
    } else if (now >= *next_sweep) {
      next_sweep = now + upload_sweep_interval_;
      const int64_t before =
          NowNs() - std::chrono::duration_cast<std::chrono::nanoseconds>(upload_expiry_).count();
      busy_ = true;
      lock.unlock();
      const int removed = ExpireStaleUploads(before);
      if (removed > 0) spdlog::info("aborted {} stale multipart upload(s)", removed);
      lock.lock();
      busy_ = false;
      continue;
    }
    // The next timed task: the drive check or the sweep, whichever is due first.
    std::optional<std::chrono::steady_clock::time_point> wake = next_sweep;
    if (monitor_interval_ms_ > 0 && (!wake || next_check < *wake)) wake = next_check;
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
      if (wake) {
        cv_.wait_until(lock, *wake);
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
      if (counts.ok()) counts->Log("walk");
    } else {
      // Heal on read: objects queued by reads that found a copy missing or corrupt. One summary
      // when the queue runs dry, not a line per object.
      auto r = SetFor(item.second).HealObject(item.first, item.second);
      RecordHeal(r, nullptr);
      if (!r.ok()) spdlog::debug("heal: {}/{}: {}", item.first, item.second, r.error().message);
      on_read.Add(r);
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty() && on_read.objects_scanned > 0) {
      on_read.Log("heal on read");
      on_read = {};
    }
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
    if (counts.ok()) counts->Log("replaced drive(s)");
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
      opts.versions = true;  // keys whose latest version is a delete marker too
      for (;;) {
        auto page = s->ListObjects(b, opts, /*min_copies=*/1);  // leftovers too
        if (!page.ok()) return page.error();
        for (size_t i = 0; i < page->objects.size(); ++i) {
          const auto& o = page->objects[i];
          if (i > 0 && page->objects[i - 1].key == o.key) continue;  // one heal per key
          auto r = s->HealObject(b, o.key);
          if (!r.ok()) spdlog::debug("heal: {}/{}: {}", b, o.key, r.error().message);
          c.Add(r);
          RecordHeal(r, &c);
          if (progress) progress(b, o.key, c);
        }
        if (!page->truncated || page->objects.empty()) break;
        // Inclusive for versions: the smallest name after the key (keys hold no NUL).
        opts.start_after = page->objects.back().key + std::string(1, '\0');
      }
    }
  }
  return c;
}

}  // namespace rdmastor::storage
