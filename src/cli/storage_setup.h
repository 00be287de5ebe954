// Opens the object layer: ErasureStore (erasure sets, quorum, bitrot, healing) over the drive
// list; one drive is a one-drive set without parity (a drive of the retired single-drive layout
// is converted on its first start, see storage/erasure/migrate.cc).
#pragma once

#include <memory>

#include "admin/health.h"
#include "cli/server_config.h"
#include "common/result.h"
#include "storage/object_layer.h"

namespace rdmastor::storage {
class ErasureStore;
}

namespace rdmastor::cli {

struct OpenedStorage {
  std::unique_ptr<storage::ObjectLayer> layer;
  storage::ErasureStore* erasure = nullptr;  // = layer
};

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg);

// Local drive paths that must not be used (docs/settings.md, "Drives"): a missing drive whose
// parent directory is missing too, a drive holding MinIO's data (both kInvalidArgument: the
// configuration must change), and an empty directory on the root file system while another
// drive is a file system of its own (kDriveNotWritable: an unmounted mount point).
Status CheckLocalDrivePaths(const std::vector<std::string>& drives);

// Health of every drive of `store` (local ones probed with admin::ProbeDrive, remote ones asked
// over peer RPC) against each erasure set's read and write quorum: what /minio/health/cluster and
// /minio/health/cluster/read answer. The store must outlive the monitor.
std::unique_ptr<admin::DriveMonitor> DeploymentMonitor(storage::ErasureStore& store);

// Samples the store's heal state at every metrics scrape (rdmastor_heal_*, minio_heal_*,
// rdmastor_healed_*, rdmastor_drives_replaced_total). The store must outlive every scrape.
void PublishHealMetrics(storage::ErasureStore& store);
// rdmastor_storage_syncs_total from the storage layer's counters, refreshed on every scrape.
void PublishStorageMetrics();

}  // namespace rdmastor::cli
