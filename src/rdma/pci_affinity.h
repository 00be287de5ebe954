// Which RDMA NIC sits nearest a GPU on the PCIe tree, read from sysfs: a GPU should move its
// bytes through the NIC under the same PCIe switch (GPUDirect RDMA then stays below the switch),
// else under the same root complex, else on the same NUMA node. Pure over a sysfs root, so tests
// run it over a fixture tree (tests/rdma/pci_affinity_test.cc); clients call it with "/sys".
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace rdmastor::rdma {

// "0000:3b:00.0" from the forms drivers print: CUDA's "00000000:3B:00.0", upper or lower case.
// Empty when `address` is not a PCI address.
std::string NormalizePciAddress(const std::string& address);

// The PCIe path of a device: the components of its sysfs directory from the root complex on
// ("pci0000:00", "0000:00:01.0", ..., the device itself). Empty when sysfs does not have it.
std::vector<std::string> PciPathOfRdmaDevice(const std::string& sysfs_root,
                                             const std::string& ib_device);
std::vector<std::string> PciPathOfAddress(const std::string& sysfs_root,
                                          const std::string& pci_address);

// The RDMA device (of `candidates`, or of every device in <sysfs>/class/infiniband when empty)
// nearest the PCI device `gpu_address`: the most PCIe bridges in common, then the same NUMA
// node; ties go to the earlier candidate (sorted by name when read from sysfs). An error names
// what sysfs lacks.
Result<std::string> NearestRdmaDevice(const std::string& sysfs_root, const std::string& gpu_address,
                                      std::vector<std::string> candidates = {});

}  // namespace rdmastor::rdma
