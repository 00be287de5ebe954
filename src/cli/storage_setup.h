// Opens the object layer the drive list calls for: DriveStore (plain layout, no parity) for one
// drive, ErasureStore (erasure sets, quorum, bitrot, healing) for two or more.
#pragma once

#include <memory>

#include "cli/server_config.h"
#include "common/result.h"
#include "storage/object_layer.h"

namespace rdmastor::cli {

struct OpenedStorage {
  std::unique_ptr<storage::ObjectLayer> layer;
  size_t read_quorum = 1;  // drives (for health reporting)
  size_t write_quorum = 1;
};

Result<OpenedStorage> OpenStorage(const ServerConfig& cfg);

}  // namespace rdmastor::cli
