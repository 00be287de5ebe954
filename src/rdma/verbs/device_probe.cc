// RDMA build only: asks libibverbs which devices exist. On hosts whose kernel has no InfiniBand
// support ibv_get_device_list fails with ENOSYS; that is reported, never treated as fatal.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "rdma/build_info.h"

namespace rdmastor::rdma {

DeviceProbe ProbeDevices() {
  DeviceProbe probe;
  int count = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, decltype(&ibv_free_device_list)> list(ibv_get_device_list(&count),
                                                                     &ibv_free_device_list);
  if (!list) {
    probe.error = std::string("ibv_get_device_list: ") + std::strerror(errno ? errno : ENODEV);
    return probe;
  }
  for (int i = 0; i < count; ++i) probe.devices.emplace_back(ibv_get_device_name(list.get()[i]));
  probe.available = count > 0;
  if (count == 0) probe.error = "no RDMA device found";
  return probe;
}

}  // namespace rdmastor::rdma
