// Buckets of an erasure set (every set holds every bucket), the bucket cache, listing a set.

#include <map>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_int.h"
#include "storage/erasure/set.h"
#include "storage/listing.h"

namespace rdmastor::storage {


int ErasureSet::BucketCopies(const std::string& bucket) {
  return Count(
      ForEachDrive([&](size_t p) { return roots_[p]->StatVol(bucket); }, DriveWork::kLookup));
}

Status ErasureSet::CheckBucket(const std::string& bucket, bool cached) {
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
                     "only " + std::to_string(online) + " drives of the erasure set are online; " +
                         std::to_string(read_quorum()) + " needed");
  }
  return MakeError(ErrorCode::kNoSuchBucket);
}

std::pair<int, int> ErasureSet::MakeBucket(const std::string& bucket, int64_t created_ns) {
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

namespace {

const char* VersioningName(Versioning v) {
  return v == Versioning::kEnabled ? "Enabled" : v == Versioning::kSuspended ? "Suspended" : "";
}

}  // namespace

Result<BucketInfo> ErasureSet::GetBucketInfo(const std::string& bucket) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  BucketInfo info;
  info.name = bucket;
  // The newest record wins ("updated_ns", written by SetBucketTags / SetBucketVersioning): a
  // drive that was away during a change still holds the older one.
  int64_t newest = -1;
  for (Drive* d : roots_) {
    auto raw = d->ReadVolMeta(bucket);
    if (!raw.ok() || !raw->has_value()) continue;
    try {
      auto j = nlohmann::json::parse(**raw);
      const int64_t updated = j.contains("updated_ns") ? json_int::At<int64_t>(j, "updated_ns") : 0;
      if (updated <= newest) continue;
      info.created_ns = json_int::At<int64_t>(j, "created_ns");
      info.tags = j.value("tags", std::string());
      info.encryption = j.value("encryption", std::string());
      info.configs = j.value("configs", StringMap());
      const std::string v = j.value("versioning", std::string());
      info.versioning = v == "Enabled"     ? Versioning::kEnabled
                        : v == "Suspended" ? Versioning::kSuspended
                                           : Versioning::kUnversioned;
      info.excluded = {};
      if (j.contains("versioning_excluded_prefixes"))
        info.excluded.prefixes =
            j.at("versioning_excluded_prefixes").get<std::vector<std::string>>();
      info.excluded.folders = j.value("versioning_exclude_folders", false);
      newest = updated;
    } catch (const std::exception&) {
    }
  }
  return info;
}

// Rewrites the bucket record on every drive from `info` (tags, versioning): staged in the staging
// area, renamed over the record. Quorum as for any metadata write. Caller holds BucketLock.
Status ErasureSet::WriteBucketRecord(const std::string& bucket, const BucketInfo& info) {
  std::string record;
  try {
    nlohmann::json j{
        {"version", 1}, {"name", bucket}, {"created_ns", info.created_ns}, {"updated_ns", NowNs()}};
    if (!info.tags.empty()) j["tags"] = info.tags;
    if (!info.encryption.empty()) j["encryption"] = info.encryption;
    if (!info.configs.empty()) j["configs"] = info.configs;  // records without it read as none
    if (info.versioning != Versioning::kUnversioned)
      j["versioning"] = VersioningName(info.versioning);
    // MinIO's exclusions, only where set: records without them read as none.
    if (!info.excluded.prefixes.empty()) j["versioning_excluded_prefixes"] = info.excluded.prefixes;
    if (info.excluded.folders) j["versioning_exclude_folders"] = true;
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

Status ErasureSet::UpdateBucketRecord(const std::string& bucket,
                                      const std::function<void(BucketInfo&)>& change) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  std::unique_lock lock(BucketLock(bucket));
  auto current = GetBucketInfo(bucket);
  if (!current.ok()) return current.error();
  change(*current);
  RS_RETURN_IF_ERROR(WriteBucketRecord(bucket, *current));
  CacheBucketInfo(*current);
  return {};
}

Status ErasureSet::SetBucketTags(const std::string& bucket, const std::string& tags) {
  return UpdateBucketRecord(bucket, [&](BucketInfo& info) { info.tags = tags; });
}

Status ErasureSet::SetBucketVersioning(const std::string& bucket, Versioning state,
                                       const VersioningExclusions& excluded) {
  return UpdateBucketRecord(bucket, [&](BucketInfo& info) {
    info.versioning = state;
    info.excluded = excluded;
  });
}

Status ErasureSet::SetBucketEncryption(const std::string& bucket, const std::string& algorithm) {
  return UpdateBucketRecord(bucket, [&](BucketInfo& info) { info.encryption = algorithm; });
}

Status ErasureSet::SetBucketConfig(const std::string& bucket, const std::string& name,
                                   const std::string& value) {
  return UpdateBucketRecord(bucket, [&](BucketInfo& info) {
    if (value.empty())
      info.configs.erase(name);
    else
      info.configs[name] = value;
  });
}

void ErasureSet::CacheBucketInfo(const BucketInfo& info) {
  std::lock_guard cache(versioning_mu_);
  if (versioning_.size() > kBucketCacheMax) versioning_.clear();
  versioning_[info.name] = {info, std::chrono::steady_clock::now()};
}

Result<BucketInfo> ErasureSet::CachedBucketInfo(const std::string& bucket) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard cache(versioning_mu_);
    auto it = versioning_.find(bucket);
    if (it != versioning_.end() && now - it->second.second < kVersioningCacheTtl)
      return it->second.first;
  }
  auto info = GetBucketInfo(bucket);
  if (!info.ok()) return info.error();
  CacheBucketInfo(*info);
  return info;
}

Result<Versioning> ErasureSet::VersioningOf(const std::string& bucket) {
  auto info = CachedBucketInfo(bucket);
  if (!info.ok()) return info.error();
  return info->versioning;
}

Result<Versioning> ErasureSet::VersioningOf(const std::string& bucket, std::string_view key) {
  auto info = CachedBucketInfo(bucket);
  if (!info.ok()) return info.error();
  return VersioningFor(*info, key);
}

Result<std::string> ErasureSet::NewVersionId(const std::string& bucket, std::string_view key) {
  auto state = VersioningOf(bucket, key);
  if (!state.ok()) return state.error();
  if (*state != Versioning::kEnabled) return std::string();
  return GenerateVersionId();
}

std::set<std::string> ErasureSet::BucketNames() {
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

Result<bool> ErasureSet::BucketHasObjects(const std::string& bucket) {
  return Count(ForEachDrive(
             [&](size_t p) {
               auto has = roots_[p]->VolHasObjects(bucket);
               return has.ok() && *has;
             },
             DriveWork::kLookup)) > 0;
}

void ErasureSet::RemoveBucket(const std::string& bucket) {
  std::unique_lock lock(BucketLock(bucket));
  ForgetBucket(bucket);
  ForEachDrive([&](size_t p) { return roots_[p]->DeleteVol(bucket).ok(); });
}

void ErasureSet::EnsureBucket(const std::string& bucket) {
  auto info = GetBucketInfo(bucket);
  MakeBucket(bucket, info.ok() ? info->created_ns : NowNs());
}

bool ErasureSet::BucketCached(const std::string& bucket) {
  std::lock_guard lock(bucket_cache_mu_);
  auto it = bucket_seen_.find(bucket);
  return it != bucket_seen_.end() &&
         std::chrono::steady_clock::now() - it->second < kBucketCacheTtl;
}

void ErasureSet::RememberBucket(const std::string& bucket) {
  std::lock_guard lock(bucket_cache_mu_);
  if (bucket_seen_.size() >= kBucketCacheMax) bucket_seen_.clear();  // bounded; refills on use
  bucket_seen_[bucket] = std::chrono::steady_clock::now();
}

void ErasureSet::ForgetBucket(const std::string& bucket) {
  {
    std::lock_guard lock(bucket_cache_mu_);
    bucket_seen_.erase(bucket);
  }
  std::lock_guard lock(uploads_mu_);
  upload_cache_.erase(bucket);
}

Result<ListResult> ErasureSet::ListObjects(const std::string& bucket, const ListOptions& opts,
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
  if (opts.versions) return MergeVersionListings(std::move(parts), opts.max_keys, min_copies);
  return MergeListings(std::move(parts), opts.max_keys, min_copies);
}

}  // namespace rdmastor::storage
