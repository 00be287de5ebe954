#include "cli/storage_setup.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "admin/metrics.h"
#include "storage/erasure_store.h"

namespace rdmastor::cli {

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg) {
  OpenedStorage out;
  auto store = storage::ErasureStore::Open(cfg.drives, cfg.storage_classes);
  if (!store.ok()) return store.error();
  (*store)->StartMonitor(cfg.drive_check_interval_ms);
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
