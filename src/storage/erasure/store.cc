// ErasureStore: opens the layout and format files, routes each key to its set (erasure_store.h).

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "common/thread_pool.h"
#include "storage/erasure/set.h"
#include "storage/format.h"
#include "storage/listing.h"
#include "storage/local_drive.h"
#include "storage/local_host.h"

namespace rdmastor::storage {


// ---- ErasureStore ---------------------------------------------------------------------------

namespace {

std::string Absolute(const std::string& dir) {
  std::string root = std::filesystem::absolute(dir).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

}  // namespace

Result<std::unique_ptr<ErasureStore>> ErasureStore::Open(
    const std::vector<std::string>& drives, const erasure::StorageClassSettings& classes) {
  auto layout = erasure::PlanLayout(static_cast<int>(drives.size()), classes);
  if (!layout.ok()) return layout.error();
  std::vector<std::string> roots;
  for (const auto& d : drives) {
    std::string root;
    try {
      root = Absolute(d);
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInvalidArgument, "drive " + d + ": " + e.what());
    }
    if (root == "/") return MakeError(ErrorCode::kInvalidArgument, "refusing to use / as a drive");
    roots.push_back(std::move(root));
  }
  auto host = std::make_shared<LocalHost>(roots);
  if (host->size() == 1) {
    // No other drive stands in for the only one: refuse to start on an unusable one, naming it.
    RS_RETURN_IF_ERROR(CheckDriveWritable(host->local(0).name()));
    auto legacy = HoldsSingleDriveLayout(host->local(0));
    if (!legacy.ok()) return legacy.error();
    if (*legacy) RS_RETURN_IF_ERROR(MigrateSingleDriveLayout(host->local(0)));
  }
  std::vector<DriveSlot> slots;
  for (size_t i = 0; i < host->size(); ++i) slots.push_back({host, i});
  return Open(std::move(slots), classes, FormatOptions{});
}

Result<std::unique_ptr<ErasureStore>> ErasureStore::Open(
    std::vector<DriveSlot> drives, const erasure::StorageClassSettings& classes,
    const FormatOptions& format_options) {
  auto layout = erasure::PlanLayout(static_cast<int>(drives.size()), classes);
  if (!layout.ok()) return layout.error();
  std::vector<Drive*> roots;
  for (const auto& d : drives) roots.push_back(d.drive());
  auto format = LoadOrFormat(roots, *layout, format_options);
  if (!format.ok()) return format.error();
  auto store = std::unique_ptr<ErasureStore>(new ErasureStore());
  store->layout_ = *layout;
  store->deployment_id_ = format->deployment_id;
  store->hash_seed_ = XXH3_64bits(format->deployment_id.data(), format->deployment_id.size());
  store->drives_ = roots;
  store->slots_ = std::move(drives);
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
    std::vector<DriveSlot> set_slots(store->slots_.begin() + s * layout->set_size,
                                     store->slots_.begin() + (s + 1) * layout->set_size);
    store->sets_.push_back(std::make_unique<ErasureSet>(
        std::move(set_slots), *layout,
        [self](const std::string& b, const std::string& k) { self->Enqueue(b, k); },
        store->drive_pool_.get()));
  }
  spdlog::info(
      "erasure: {} drive(s) in {} set(s) of {}, EC {}+{} (read quorum {}, write quorum "
      "{}), REDUCED_REDUNDANCY EC {}+{}, deployment {}",
      roots.size(), layout->set_count, layout->set_size, layout->data(), layout->parity,
      erasure::ReadQuorum(layout->data(), layout->parity),
      erasure::WriteQuorum(layout->data(), layout->parity), layout->set_size - layout->rrs_parity,
      layout->rrs_parity, format->deployment_id);
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
  auto r = SetFor(key).DeleteObject(bucket, key, std::nullopt);
  if (!r.ok()) return r.error();
  return {};
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
  if (opts.versions) return MergeVersionListings(std::move(parts), opts.max_keys, 1);
  return MergeListings(std::move(parts), opts.max_keys, 1);
}

// ---- versioning: the bucket state is in every set's records; a key's versions in its set ----

Status ErasureStore::SetBucketVersioning(const std::string& bucket, Versioning state,
                                         const VersioningExclusions& excluded) {
  for (auto& s : sets_) RS_RETURN_IF_ERROR(s->SetBucketVersioning(bucket, state, excluded));
  return {};
}

Status ErasureStore::SetBucketEncryption(const std::string& bucket, const std::string& algorithm) {
  for (auto& s : sets_) RS_RETURN_IF_ERROR(s->SetBucketEncryption(bucket, algorithm));
  return {};
}

Result<std::string> ErasureStore::BucketEncryption(const std::string& bucket) {
  auto info = sets_[0]->CachedBucketInfo(bucket);
  if (!info.ok()) return info.error();
  return info->encryption;
}

Status ErasureStore::SetBucketConfig(const std::string& bucket, const std::string& name,
                                     const std::string& value) {
  for (auto& s : sets_) RS_RETURN_IF_ERROR(s->SetBucketConfig(bucket, name, value));
  return {};
}

Result<std::string> ErasureStore::BucketConfig(const std::string& bucket,
                                               const std::string& name) {
  auto info = sets_[0]->CachedBucketInfo(bucket);
  if (!info.ok()) return info.error();
  auto it = info->configs.find(name);
  return it == info->configs.end() ? std::string() : it->second;
}

Result<Versioning> ErasureStore::BucketVersioning(const std::string& bucket) {
  return sets_[0]->VersioningOf(bucket);
}

Result<std::unique_ptr<ObjectReader>> ErasureStore::OpenObjectVersion(
    const std::string& bucket, const std::string& key, const std::string& version_id) {
  return SetFor(key).OpenObject(bucket, key, version_id);
}

Result<ObjectInfo> ErasureStore::StatObjectVersion(const std::string& bucket,
                                                   const std::string& key,
                                                   const std::string& version_id) {
  return SetFor(key).StatObject(bucket, key, version_id);
}

Result<ObjectInfo> ErasureStore::StatLatest(const std::string& bucket, const std::string& key,
                                            ObjectInfo* marker) {
  return SetFor(key).StatObject(bucket, key, std::nullopt, marker);
}

Result<DeleteResult> ErasureStore::DeleteObjectVersion(const std::string& bucket,
                                                       const std::string& key, const VersionSel& v,
                                                       const DeletePrecondition& precondition) {
  return SetFor(key).DeleteObject(bucket, key, v, precondition);
}

Result<ListResult> ErasureStore::ListObjectVersions(const std::string& bucket,
                                                    const ListOptions& opts) {
  ListOptions o = opts;
  o.versions = true;
  return ListObjects(bucket, o);
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
                                                         const WritePrecondition& precondition,
                                                         const CompleteChecksum& declared) {
  return SetFor(key).CompleteMultipartUpload(bucket, key, upload_id, parts, precondition, declared);
}

Result<PutOptions> ErasureStore::GetUploadOptions(const std::string& bucket, const std::string& key,
                                                  const std::string& upload_id) {
  return SetFor(key).GetUploadOptions(bucket, key, upload_id);
}

}  // namespace rdmastor::storage
