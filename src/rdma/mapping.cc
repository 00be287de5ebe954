#include "rdma/mapping.h"

#include <sys/statfs.h>

#include <charconv>
#include <fstream>

namespace rdmastor::rdma {
namespace {

constexpr uint64_t kTmpfsMagic = 0x01021994;
constexpr uint64_t kHugetlbfsMagic = 0x958458f6;
constexpr uint64_t kRamfsMagic = 0x858458f6;

bool Hex(std::string_view s, uint64_t& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

// The next space-separated field of `s` from `pos`.
std::string_view Field(std::string_view s, size_t& pos) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  size_t b = pos;
  while (pos < s.size() && s[pos] != ' ') ++pos;
  return s.substr(b, pos - b);
}

}  // namespace

std::optional<MappingFacts> ParseMapsLine(std::string_view line) {
  MappingFacts m;
  size_t pos = 0;
  std::string_view range = Field(line, pos), perms = Field(line, pos);
  std::string_view offset = Field(line, pos), dev = Field(line, pos), inode = Field(line, pos);
  auto dash = range.find('-');
  if (dash == std::string_view::npos || !Hex(range.substr(0, dash), m.start) ||
      !Hex(range.substr(dash + 1), m.end) || m.end < m.start || perms.size() != 4 ||
      offset.empty() || dev.empty())
    return std::nullopt;
  auto r = std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
  if (r.ec != std::errc() || r.ptr != inode.data() + inode.size() || inode.empty())
    return std::nullopt;
  m.writable = perms[1] == 'w';
  m.shared = perms[3] == 's';
  while (pos < line.size() && line[pos] == ' ') ++pos;
  m.path = std::string(line.substr(pos));
  return m;
}

std::string WritablePinRefusal(const MappingFacts& m) {
  if (!m.shared || m.inode == 0) return "";  // private (copy-on-write) or anonymous memory
  if (m.path.rfind("/dev/zero", 0) == 0 || m.path.rfind("/SYSV", 0) == 0 ||
      m.path.rfind("/memfd:", 0) == 0)
    return "";  // shared anonymous memory, SysV shm, memfd: shmem, no dirty tracking
  if (m.fs_magic == kTmpfsMagic || m.fs_magic == kHugetlbfsMagic || m.fs_magic == kRamfsMagic)
    return "";
  return "memory at " + m.path +
         " is a shared mapping of a file: it cannot be registered for remote write (the kernel "
         "refuses long-term writable pins of such mappings since Linux 6.5); receive into "
         "anonymous or /dev/shm memory and write the file from there";
}

std::string RemoteWriteRefusal(const void* p, size_t len) {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return "";
  const uint64_t lo = reinterpret_cast<uint64_t>(p);
  const uint64_t hi = lo + (len ? len : 1);
  for (std::string line; std::getline(maps, line);) {
    auto m = ParseMapsLine(line);
    if (!m || m->end <= lo || m->start >= hi) continue;
    if (m->shared && m->inode != 0 && !m->path.empty() && m->path[0] == '/') {
      struct statfs fs {};
      if (statfs(m->path.c_str(), &fs) == 0) m->fs_magic = static_cast<uint64_t>(fs.f_type);
    }
    if (auto why = WritablePinRefusal(*m); !why.empty()) return why;
  }
  return "";
}

}  // namespace rdmastor::rdma
