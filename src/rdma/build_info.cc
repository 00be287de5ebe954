#include "rdma/build_info.h"

namespace rdmastor::rdma {

bool BuiltWithVerbs() {
#ifdef RDMASTOR_WITH_RDMA
  return true;
#else
  return false;
#endif
}

Error StandardBuildLacks(std::string_view what) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "this is the standard build: " + std::string(what));
}

std::string FeatureLine() { return BuiltWithVerbs() ? "RDMA (verbs)" : "standard (no RDMA)"; }

#ifndef RDMASTOR_WITH_RDMA
DeviceProbe ProbeDevices() {
  DeviceProbe probe;
  probe.error = StandardBuildLacks("RDMA support is not compiled in").message;
  return probe;
}
#endif

}  // namespace rdmastor::rdma
