// Multi-rail (issue 12 item 13): one fabric over several, one per device. Memory is registered
// on every rail; each Connect goes out of the rail SelectRail picks for the token (its subnet,
// else the interface the HTTP request arrived on, else rail 0). Regions are addressed by rail
// 0's keys; endpoints of other rails translate the lkey at post. Written against the Fabric
// interface only, so the soft fabric tests it; the verbs fabric uses it with a DC fabric per
// device.
#pragma once

#include <memory>
#include <vector>

#include "rdma/fabric.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

// `fabrics[i]` serves `rails[i]`; at least two.
std::unique_ptr<Fabric> MakeRailsFabric(std::vector<std::unique_ptr<Fabric>> fabrics,
                                        std::vector<Rail> rails);

}  // namespace rdmastor::rdma
