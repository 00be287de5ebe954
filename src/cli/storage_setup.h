// Opens the object layer the drive list calls for: DriveStore (plain layout, no parity) for one
// drive, ErasureStore (erasure sets, quorum, bitrot, healing) for two or more.
#pragma once

#include <memory>

#include "cli/server_config.h"
#include "common/result.h"
#include "storage/object_layer.h"

namespace rdmastor::storage {
class ErasureStore;
}

namespace rdmastor::cli {

struct OpenedStorage {
  std::unique_ptr<storage::ObjectLayer> layer;
  storage::ErasureStore* erasure = nullptr;  // = layer on 2+ drives (healing), else null
  size_t read_quorum = 1;                    // drives (for health reporting)
  size_t write_quorum = 1;
};

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg);

// Samples the store's heal state at every metrics scrape (rdmastor_heal_*, minio_heal_*,
// rdmastor_healed_*, rdmastor_drives_replaced_total). The store must outlive every scrape.
void PublishHealMetrics(storage::ErasureStore& store);

}  // namespace rdmastor::cli
