#include "rdma/build_info.h"

namespace rdmastor::rdma {

bool BuiltWithVerbs() {
#ifdef RDMASTOR_WITH_RDMA
  return true;
#else
  return false;
#endif
}

std::string FeatureLine() { return BuiltWithVerbs() ? "RDMA (verbs)" : "standard (no RDMA)"; }

#ifndef RDMASTOR_WITH_RDMA
DeviceProbe ProbeDevices() {
  DeviceProbe probe;
  probe.error = "this is the standard build: RDMA support is not compiled in";
  return probe;
}
#endif

}  // namespace rdmastor::rdma
