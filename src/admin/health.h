// Drive and cluster health: what /minio/health/cluster answers and the drive metrics show.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "admin/metrics.h"

namespace rdmastor::admin {

struct ClusterHealth {
  std::vector<DriveSample> drives;  // every drive of the deployment, erasure set after set
  size_t set_size = 0;              // drives per erasure set; 0 = all drives form one set
  size_t read_quorum = 1;           // drives online that each set needs to serve reads
  size_t write_quorum = 1;          // ... and writes

  size_t online() const;
  // Objects live in one set each, so the deployment has a quorum only when every set has it.
  bool EverySetHas(size_t quorum) const;
  bool HasWriteQuorum() const { return EverySetHas(write_quorum); }
  bool HasReadQuorum() const { return EverySetHas(read_quorum); }
};

// Samples one drive directory: capacity via statvfs, online when a file can be created and
// removed in it (a read-only or failed mount is offline).
DriveSample ProbeDrive(const std::string& path);

// Samples every drive, in set order.
using DriveProbe = std::function<std::vector<DriveSample>()>;

// The drives and the per-set quorums the object layer needs (single drive: 1 and 1).
class DriveMonitor {
 public:
  // Local drive directories, each sampled with ProbeDrive.
  DriveMonitor(std::vector<std::string> drives, size_t read_quorum, size_t write_quorum,
               size_t set_size = 0);
  // Any drives (a cluster's remote ones included), sampled by `probe`.
  DriveMonitor(DriveProbe probe, size_t read_quorum, size_t write_quorum, size_t set_size);
  ClusterHealth Check() const;
  // Samples the drives at every metrics scrape (minio_cluster_drive_*, minio_node_drive_*);
  // minio_cluster_health_status comes from `health` when given (a cluster node: its own drives,
  // the deployment's quorum), else from these drives. Both monitors must outlive every scrape.
  void PublishMetrics(const DriveMonitor* health = nullptr) const;

 private:
  DriveProbe probe_;
  size_t read_quorum_, write_quorum_, set_size_;
};

}  // namespace rdmastor::admin
