#include "admin/health.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/hash.h"

namespace rdmastor::admin {

size_t ClusterHealth::online() const {
  size_t n = 0;
  for (const auto& d : drives) n += d.online ? 1 : 0;
  return n;
}

bool ClusterHealth::EverySetHas(size_t quorum) const {
  const size_t per_set = set_size == 0 ? drives.size() : set_size;
  if (per_set == 0) return false;
  for (size_t first = 0; first < drives.size(); first += per_set) {
    size_t n = 0;
    for (size_t i = first; i < std::min(first + per_set, drives.size()); ++i)
      n += drives[i].online ? 1 : 0;
    if (n < quorum) return false;
  }
  return true;
}

DriveSample ProbeDrive(const std::string& path) {
  DriveSample s;
  s.path = path;
  struct statvfs vfs {};
  if (statvfs(path.c_str(), &vfs) != 0) return s;
  s.total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  s.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  // The staging directory is wiped at start-up, so a probe a crash leaves behind is cleaned up.
  std::string dir = path + "/.rdmastor.sys/tmp";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) dir = path;
  std::string probe = dir + "/.health-" + hash::RandomHex(6);
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return s;
  bool wrote = ::write(fd, "ok", 2) == 2;
  ::close(fd);
  bool removed = ::unlink(probe.c_str()) == 0;
  s.online = wrote && removed;
  return s;
}

DriveMonitor::DriveMonitor(std::vector<std::string> drives, size_t read_quorum, size_t write_quorum,
                           size_t set_size)
    : DriveMonitor(
          [drives = std::move(drives)] {
            std::vector<DriveSample> out;
            for (const auto& d : drives) out.push_back(ProbeDrive(d));
            return out;
          },
          read_quorum, write_quorum, set_size) {}

DriveMonitor::DriveMonitor(DriveProbe probe, size_t read_quorum, size_t write_quorum,
                           size_t set_size)
    : probe_(std::move(probe)),
      read_quorum_(read_quorum),
      write_quorum_(write_quorum),
      set_size_(set_size) {}

ClusterHealth DriveMonitor::Check() const {
  ClusterHealth h;
  h.set_size = set_size_;
  h.read_quorum = read_quorum_;
  h.write_quorum = write_quorum_;
  h.drives = probe_();
  return h;
}

void DriveMonitor::PublishMetrics(const DriveMonitor* health) const {
  GlobalRegistry().AddScrapeHook([this, health] {
    auto h = Check();
    SetDriveSamples(h.drives, health ? health->Check().HasWriteQuorum() : h.HasWriteQuorum());
  });
}

}  // namespace rdmastor::admin
