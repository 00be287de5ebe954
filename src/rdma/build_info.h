// What this build can do with RDMA, and what the host offers. Both builds compile this; only the
// RDMA build links rdma-core.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmastor::rdma {

// True when built with -DRDMASTOR_RDMA=ON.
bool BuiltWithVerbs();

// What the standard build's stand-ins for verbs code answer: kRDMANotSupported, "this is the
// standard build: <what>".
Error StandardBuildLacks(std::string_view what);

// "RDMA (verbs, soft)" or "standard (no RDMA)": the Features line of --version.
std::string FeatureLine();

struct DeviceProbe {
  bool available = false;            // at least one device was listed
  std::vector<std::string> devices;  // device names
  std::string error;  // why none, e.g. "ibv_get_device_list: Function not implemented"
};

// Lists RDMA devices through libibverbs (RDMA build); the standard build reports "not built".
DeviceProbe ProbeDevices();

}  // namespace rdmastor::rdma
