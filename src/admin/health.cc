#include "admin/health.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/hash.h"

namespace rdmastor::admin {

size_t ClusterHealth::online() const {
  size_t n = 0;
  for (const auto& d : drives) n += d.online ? 1 : 0;
  return n;
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

DriveMonitor::DriveMonitor(std::vector<std::string> drives, size_t read_quorum, size_t write_quorum)
    : drives_(std::move(drives)), read_quorum_(read_quorum), write_quorum_(write_quorum) {}

ClusterHealth DriveMonitor::Check() const {
  ClusterHealth h;
  h.read_quorum = read_quorum_;
  h.write_quorum = write_quorum_;
  for (const auto& d : drives_) h.drives.push_back(ProbeDrive(d));
  return h;
}

void DriveMonitor::PublishMetrics() const {
  GlobalRegistry().AddScrapeHook([this] {
    auto h = Check();
    SetDriveSamples(h.drives, h.HasWriteQuorum());
  });
}

}  // namespace rdmastor::admin
