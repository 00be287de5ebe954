#include "rdma/mapping.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
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

// struct procmap_query of <linux/fs.h> (Linux 6.11+; Debian 12's headers predate it).
struct ProcmapQuery {
  uint64_t size, query_flags, query_addr;
  uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
  uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
  uint64_t vma_name_addr, build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long kProcmapQuery = 0xC0686611;  // _IOWR('f', 17, struct procmap_query)
constexpr uint64_t kCoveringOrNextVma = 0x10;
constexpr uint64_t kVmaWritable = 0x02, kVmaShared = 0x08;

void AddFsMagic(MappingFacts& m) {
  if (m.shared && m.inode != 0 && !m.path.empty() && m.path[0] == '/') {
    struct statfs fs {};
    if (statfs(m.path.c_str(), &fs) == 0) m.fs_magic = static_cast<uint64_t>(fs.f_type);
  }
}

// The refusal from PROCMAP_QUERY, one mapping at a time; nullopt when the kernel has no such
// ioctl (then the caller reads the whole table).
std::optional<std::string> RefusalByQuery(uint64_t lo, uint64_t hi) {
  static std::atomic<bool> unsupported{false};
  if (unsupported.load(std::memory_order_relaxed)) return std::nullopt;
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char name[4096];
  for (uint64_t addr = lo; addr < hi;) {  // bounded: each step moves past one mapping
    ProcmapQuery q{};
    q.size = sizeof(q);
    q.query_flags = kCoveringOrNextVma;
    q.query_addr = addr;
    q.vma_name_addr = reinterpret_cast<uint64_t>(name);
    q.vma_name_size = sizeof(name);
    if (::ioctl(fd, kProcmapQuery, &q) != 0) {
      const int err = errno;
      if (err == ENOENT) break;  // no mapping at or after addr
      if (err == ENOTTY || err == EINVAL || err == EOPNOTSUPP) unsupported = true;
      ::close(fd);
      return std::nullopt;
    }
    if (q.vma_start >= hi || q.vma_end <= addr) break;
    MappingFacts m;
    m.start = q.vma_start;
    m.end = q.vma_end;
    m.writable = (q.vma_flags & kVmaWritable) != 0;
    m.shared = (q.vma_flags & kVmaShared) != 0;
    m.inode = q.inode;
    if (q.vma_name_size > 0) m.path.assign(name, strnlen(name, sizeof(name)));
    AddFsMagic(m);
    if (out = WritablePinRefusal(m); !out.empty()) break;
    addr = q.vma_end;
  }
  ::close(fd);
  return out;
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
  const uint64_t lo = reinterpret_cast<uint64_t>(p);
  if (auto r = RefusalByQuery(lo, lo + (len ? len : 1))) return *r;
  return RemoteWriteRefusalFromMaps(p, len);
}

std::string RemoteWriteRefusalFromMaps(const void* p, size_t len) {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return "";
  const uint64_t lo = reinterpret_cast<uint64_t>(p);
  const uint64_t hi = lo + (len ? len : 1);
  for (std::string line; std::getline(maps, line);) {
    auto m = ParseMapsLine(line);
    if (!m || m->end <= lo || m->start >= hi) continue;
    AddFsMagic(*m);
    if (auto why = WritablePinRefusal(*m); !why.empty()) return why;
  }
  return "";
}

}  // namespace rdmastor::rdma
