#include "rdma/pci_affinity.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace rdmastor::rdma {
namespace fs = std::filesystem;

namespace {

bool IsHex(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

// The components of `dir` (a resolved sysfs device directory) from its "pciDDDD:BB" on.
std::vector<std::string> PathFromRoot(const fs::path& dir) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& part : dir) {
    const std::string p = part.string();
    if (p.rfind("pci", 0) == 0 && p.find(':') != std::string::npos) in = true;
    if (in) out.push_back(p);
  }
  return out;
}

std::vector<std::string> Resolve(const fs::path& link) {
  std::error_code ec;
  fs::path real = fs::canonical(link, ec);
  if (ec) return {};
  return PathFromRoot(real);
}

int NumaNode(const std::string& sysfs_root, const std::vector<std::string>& path) {
  if (path.empty()) return -1;
  std::ifstream f(fs::path(sysfs_root) / "bus/pci/devices" / path.back() / "numa_node");
  int n = -1;
  if (!(f >> n)) return -1;
  return n;
}

}  // namespace

std::string NormalizePciAddress(const std::string& address) {
  std::string a;
  for (char c : address)
    a.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // domain:bus:device.function
  const auto c1 = a.find(':'), c2 = a.find(':', c1 == std::string::npos ? 0 : c1 + 1);
  const auto dot = a.find('.', c2 == std::string::npos ? 0 : c2);
  if (c1 == std::string::npos || c2 == std::string::npos || dot == std::string::npos) return {};
  std::string domain = a.substr(0, c1), bus = a.substr(c1 + 1, c2 - c1 - 1),
              dev = a.substr(c2 + 1, dot - c2 - 1), fn = a.substr(dot + 1);
  if (!IsHex(domain) || !IsHex(bus) || !IsHex(dev) || !IsHex(fn) || bus.size() > 2 ||
      dev.size() > 2 || fn.size() != 1)
    return {};
  // CUDA prints an 8-digit domain; sysfs a 4-digit one.
  domain.erase(0, std::min(domain.find_first_not_of('0'), domain.size()));
  if (domain.size() > 4) return {};
  domain.insert(0, 4 - domain.size(), '0');
  if (bus.size() < 2) bus.insert(0, 1, '0');
  if (dev.size() < 2) dev.insert(0, 1, '0');
  return domain + ":" + bus + ":" + dev + "." + fn;
}

std::vector<std::string> PciPathOfRdmaDevice(const std::string& sysfs_root,
                                             const std::string& ib_device) {
  return Resolve(fs::path(sysfs_root) / "class/infiniband" / ib_device / "device");
}

std::vector<std::string> PciPathOfAddress(const std::string& sysfs_root,
                                          const std::string& pci_address) {
  const std::string a = NormalizePciAddress(pci_address);
  if (a.empty()) return {};
  return Resolve(fs::path(sysfs_root) / "bus/pci/devices" / a);
}

Result<std::string> NearestRdmaDevice(const std::string& sysfs_root, const std::string& gpu_address,
                                      std::vector<std::string> candidates) {
  const auto gpu = PciPathOfAddress(sysfs_root, gpu_address);
  if (gpu.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "no PCI device " + gpu_address + " under " + sysfs_root + "/bus/pci/devices");
  if (candidates.empty()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(sysfs_root) / "class/infiniband", ec))
      candidates.push_back(e.path().filename().string());
    std::sort(candidates.begin(), candidates.end());
  }
  const int gpu_numa = NumaNode(sysfs_root, gpu);
  std::string best;
  std::pair<size_t, int> best_score{0, -1};
  for (const auto& dev : candidates) {
    const auto nic = PciPathOfRdmaDevice(sysfs_root, dev);
    if (nic.empty()) continue;  // not a PCI device (rxe, siw): no affinity to judge
    size_t common = 0;
    while (common < nic.size() && common < gpu.size() && nic[common] == gpu[common]) ++common;
    const int same_numa = gpu_numa >= 0 && NumaNode(sysfs_root, nic) == gpu_numa ? 1 : 0;
    const std::pair<size_t, int> score{common, same_numa};
    if (best.empty() || score > best_score) {
      best = dev;
      best_score = score;
    }
  }
  if (best.empty())
    return MakeError(ErrorCode::kRDMANotSupported,
                     "no RDMA device on the PCI bus under " + sysfs_root + "/class/infiniband");
  return best;
}

}  // namespace rdmastor::rdma
