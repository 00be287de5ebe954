#include "cli/storage_setup.h"

#include <spdlog/spdlog.h>

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
  out.layer = std::move(*store);
  return out;
}

}  // namespace rdmastor::cli
