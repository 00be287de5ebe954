#include "cli/storage_setup.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>

#include "admin/metrics.h"
#include "storage/erasure_store.h"
#include "storage/meta_cache.h"

namespace rdmastor::cli {

Status CheckLocalDrivePaths(const std::vector<std::string>& drives) {
  namespace fs = std::filesystem;
  struct stat root_st {};
  if (::stat("/", &root_st) != 0) return {};
  struct Drive {
    std::string path;
    bool on_root = false, empty = true;
  };
  std::vector<Drive> local;
  bool any_off_root = false;
  for (const auto& path : drives) {
    std::error_code ec;
    const fs::path p = fs::absolute(path, ec).lexically_normal();
    fs::path at = p.has_filename() ? p : p.parent_path();  // "/mnt/d1/" -> "/mnt/d1"
    Drive d{path};
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) {
      // A missing drive is created, but only inside an existing directory: a mistyped path or a
      // drive whose file system is not mounted must not become a directory on the root disk.
      const fs::path parent = at.parent_path();
      if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return MakeError(ErrorCode::kInvalidArgument,
                         "drive " + path + ": its parent directory " + parent.string() +
                             " does not exist (a mistyped path, or a file system not mounted?); "
                             "create it, or fix the drive path");
    } else if (S_ISDIR(st.st_mode)) {
      if (fs::exists(at / ".minio.sys", ec))
        return MakeError(
            ErrorCode::kInvalidArgument,
            "drive " + path +
                " holds MinIO's data (.minio.sys): rdmastor does not read MinIO's "
                "on-disk format and will not write over it; keep MinIO on it and copy the objects "
                "over S3 to rdmastor on empty drives (docs/migrating-from-minio.md)");
      d.empty = fs::is_empty(at, ec);
    }
    d.on_root = st.st_dev == root_st.st_dev;
    any_off_root = any_off_root || !d.on_root;
    local.push_back(std::move(d));
  }
  // An unmounted mount point looks like an empty directory on the root file system: refused when
  // another drive is on a file system of its own (then every drive is meant to be one).
  if (any_off_root) {
    for (const auto& d : local) {
      if (d.on_root && d.empty)
        return MakeError(ErrorCode::kDriveNotWritable,
                         "drive " + d.path +
                             " is an empty directory on the root file system "
                             "while other drives are file systems of their own: is its file system "
                             "mounted? Mount it (or add it to /etc/fstab) and start again");
    }
  }
  return {};
}

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg) {
  OpenedStorage out;
  auto store = storage::ErasureStore::Open(cfg.drives, cfg.storage_classes);
  if (!store.ok()) return store.error();
  (*store)->StartMonitor(cfg.drive_check_interval_ms);
  (*store)->StartUploadExpiry(std::chrono::milliseconds(cfg.stale_uploads_expiry_ms),
                              std::chrono::milliseconds(cfg.stale_uploads_cleanup_interval_ms));
  out.erasure = store->get();
  out.layer = std::move(*store);
  return out;
}

std::unique_ptr<admin::DriveMonitor> DeploymentMonitor(storage::ErasureStore& store) {
  const auto& l = store.layout();
  // Health probes are unauthenticated and each sampling touches every drive (a file written per
  // local drive, an RPC per remote one): at most one sampling per second, however often they come.
  struct Cache {
    std::mutex mu;
    std::chrono::steady_clock::time_point at;
    std::vector<admin::DriveSample> samples;
  };
  auto cache = std::make_shared<Cache>();
  auto probe = [&store, cache] {
    std::lock_guard lock(cache->mu);
    const auto now = std::chrono::steady_clock::now();
    if (!cache->samples.empty() && now - cache->at < std::chrono::seconds(1)) return cache->samples;
    std::vector<admin::DriveSample> out;
    for (const auto& d : store.drives()) {
      if (d->is_local()) {
        out.push_back(admin::ProbeDrive(d->name()));
        continue;
      }
      admin::DriveSample s;
      s.path = d->name();
      if (auto info = d->GetDiskInfo(); info.ok()) {
        s.online = info->online;
        s.total_bytes = info->total_bytes;
        s.free_bytes = info->free_bytes;
      }
      out.push_back(std::move(s));
    }
    cache->samples = out;
    cache->at = now;
    return out;
  };
  return std::make_unique<admin::DriveMonitor>(
      probe, static_cast<size_t>(erasure::ReadQuorum(l.data(), l.parity)),
      static_cast<size_t>(erasure::WriteQuorum(l.data(), l.parity)),
      static_cast<size_t>(l.set_size));
}

void PublishStorageMetrics() {
  admin::GlobalRegistry().AddScrapeHook([] {
    const auto c = storage::fsutil::GetSyncCounts();
    admin::SetStorageSyncs(c.file, c.dir, c.fs);
    const auto m = storage::MetaCacheReads();
    admin::SetMetaCacheReads(m.hits, m.misses);
  });
}

void PublishHealMetrics(storage::ErasureStore& store) {
  admin::GlobalRegistry().AddScrapeHook([&store] {
    const auto s = store.heal_status();
    admin::HealProgress p;
    p.running = s.running;
    p.objects_scanned = s.walk.objects_scanned;
    p.objects_healed = s.walk.objects_healed;
    p.objects_failed = s.walk.failed;
    p.shards_written = s.walk.shards_written;
    p.last_activity_ns = s.last_activity_ns;
    p.queue_size = store.heal_queue_size();
    p.total_objects_healed = s.total.objects_healed;
    p.total_shards_written = s.total.shards_written;
    p.drives_replaced = s.drives_replaced;
    admin::SetHealProgress(p);
  });
}

}  // namespace rdmastor::cli
