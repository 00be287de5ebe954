// The `verbs` fabric (RDMA build): rdma-core + mlx5dv. S3 over RDMA reaches cuObject-style
// clients through DC: a pool of DC initiators (DCIs), each with its own CQ, and an address handle
// per request built from the token's LID/GID; work requests name the client's DCT (token qpn) and
// the fabric's DC access key. Every verbs object is owned by a unique_ptr with its destroy call.
// Pure helpers are exposed for tests that need no device.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>

#include "rdma/fabric.h"
#include "rdma/settings.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma::verbs {

// ibv_wc_status -> WcStatus.
WcStatus FromIbvStatus(ibv_wc_status status);

// The address handle attributes that reach `remote` from local `port` (GID index for RoCE v2).
ibv_ah_attr AhAttrFor(const RemoteAddress& remote, uint8_t port, uint8_t sgid_index);

// Access flags for ibv_reg_mr, IBV_ACCESS_RELAXED_ORDERING included where libibverbs has it.
int IbvAccess(unsigned access);

// ibv_reg_mr with IbvAccess, retried once without relaxed ordering when that was refused
// (RetryWithoutRelaxedOrdering). Null with errno set on failure.
ibv_mr* RegisterHostMemory(ibv_pd* pd, void* addr, size_t length, unsigned access);

// What a registration returned, for DmabufRegionSpan / HostRegionSpan.
Registration Reported(const ibv_mr& mr);

// Polls `cq` for up to `max` completions: busy for a short spin, then sleeping on `channel`
// (the CQ's completion channel, its fd non-blocking; null: keep polling) until `wait` runs out
// (NextWaitStep). 0 when none arrived in time.
Result<int> WaitForCompletions(ibv_cq* cq, ibv_comp_channel* channel, ibv_wc* wc, int max,
                               std::chrono::milliseconds wait);

// A registration failure; ENOMEM names the locked-memory limit (RegistrationHint).
Error RegistrationError(const std::string& what, int err);

}  // namespace rdmastor::rdma::verbs
