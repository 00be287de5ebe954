// Which memory a remote peer may be allowed to write through a registration (issue 12 item 2).
// Registering memory for remote write pins it long-term for writing. Since Linux 6.5 the kernel
// refuses such pins on a shared file mapping whose filesystem tracks dirty pages (ext4, xfs,
// btrfs...: EFAULT from ibv_reg_mr); before, it allowed them in a mode it documents as broken
// (writeback can miss what the NIC wrote). Anonymous memory, private mappings, tmpfs (/dev/shm,
// memfd) and hugetlbfs are fine. The client refuses such a registration on every fabric, so the
// rule is the same on soft and verbs and is tested without a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::rdma {

// One line of /proc/self/maps and the filesystem behind it.
struct MappingFacts {
  uint64_t start = 0, end = 0;
  bool writable = false;
  bool shared = false;    // 's' in the permissions
  uint64_t inode = 0;     // 0: anonymous
  std::string path;       // "" for anonymous, "[heap]", "/dev/zero (deleted)", a file path
  uint64_t fs_magic = 0;  // statfs f_type of `path` when it names a file, else 0
};

// Parses one /proc/<pid>/maps line ("start-end perms offset dev inode path"); nullopt if malformed.
std::optional<MappingFacts> ParseMapsLine(std::string_view line);

// Why a remote-writable registration of memory in `m` must be refused ("" when it may be
// registered): a writable shared mapping of a file on a filesystem that needs dirty tracking.
// Shared anonymous memory (inode 0, /dev/zero, SysV shm), tmpfs and hugetlbfs are fine.
std::string WritablePinRefusal(const MappingFacts& m);

// WritablePinRefusal over every mapping [p, p + len) touches; "" when all may be registered (or
// when the mappings cannot be read: the registration itself then decides). Asks the kernel for
// just those mappings (PROCMAP_QUERY, Linux 6.11+), else reads all of /proc/self/maps — which
// costs milliseconds per call in a process with thousands of mappings (Python with torch), paid
// on every registration of a buffer for remote write.
std::string RemoteWriteRefusal(const void* p, size_t len);

// The same judgement from the whole /proc/self/maps text (the fallback; exposed for the test that
// checks both ways agree).
std::string RemoteWriteRefusalFromMaps(const void* p, size_t len);

}  // namespace rdmastor::rdma
