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

// S3 over RDMA on DC and RC on one NIC (mlx5; issue 31 item 3): every Connect (DC, the token's
// target) on `dc`, the RC listener and the connections clients open on `rc`. Memory is
// registered with both; the RC connections translate the lkey (the two fabrics have their own
// protection domains: the DC fabric opens its device itself, the RC fabric uses rdma_cm's).
std::unique_ptr<Fabric> MakeDcRcFabric(std::unique_ptr<Fabric> dc, std::unique_ptr<Fabric> rc);

}  // namespace rdmastor::rdma
