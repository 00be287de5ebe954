#include "cli/storage_setup.h"

#include <spdlog/spdlog.h>

#include "admin/metrics.h"
#include "storage/drive_store.h"
#include "storage/erasure_store.h"

namespace rdmastor::cli {

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg) {
  OpenedStorage out;
  if (cfg.drives.size() == 1) {
    auto store = storage::DriveStore::Open(cfg.drives[0]);
    if (!store.ok()) {
      return MakeError(store.error().code, "drive " + cfg.drives[0] + ": " + store.error().message);
    }
    out.layer = std::move(*store);
    return out;
  }
  auto store = storage::ErasureStore::Open(cfg.drives, cfg.storage_class);
  if (!store.ok()) return store.error();
  const auto& l = (*store)->layout();
  // Health: every set must keep its quorum; reported over all drives as sets x per-set quorum.
  out.read_quorum = static_cast<size_t>(l.set_count * erasure::ReadQuorum(l.data(), l.parity));
  out.write_quorum = static_cast<size_t>(l.set_count * erasure::WriteQuorum(l.data(), l.parity));
  (*store)->StartMonitor(cfg.drive_check_interval_ms);
  out.erasure = store->get();
  out.layer = std::move(*store);
  return out;
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
