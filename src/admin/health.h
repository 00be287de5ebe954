// Drive and cluster health: what /minio/health/cluster answers and the drive metrics show.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "admin/metrics.h"

namespace rdmastor::admin {

struct ClusterHealth {
  std::vector<DriveSample> drives;
  size_t read_quorum = 1;
  size_t write_quorum = 1;

  size_t online() const;
  bool HasWriteQuorum() const { return online() >= write_quorum; }
  bool HasReadQuorum() const { return online() >= read_quorum; }
};

// Samples one drive directory: capacity via statvfs, online when a file can be created and
// removed in it (a read-only or failed mount is offline).
DriveSample ProbeDrive(const std::string& path);

// The local drives and the quorums the object layer needs (single drive: 1 and 1).
class DriveMonitor {
 public:
  DriveMonitor(std::vector<std::string> drives, size_t read_quorum, size_t write_quorum);
  ClusterHealth Check() const;
  // Samples the drives at every metrics scrape (minio_cluster_drive_*, minio_node_drive_*).
  // The monitor must outlive every scrape.
  void PublishMetrics() const;

 private:
  std::vector<std::string> drives_;
  size_t read_quorum_, write_quorum_;
};

}  // namespace rdmastor::admin
