// Decisions the verbs backend takes from what the device reports, as pure functions over plain
// structs (no ibv types), so both builds unit-test them without a device (issue 12). The verbs
// code (rdma/verbs/) only gathers the facts, calls these and applies the result.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "rdma/check.h"
#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {

// What a registration call returned: the fields of struct ibv_mr.
struct Registration {
  uint64_t addr = 0;  // ibv_mr->addr
  uint64_t length = 0;
  uint32_t lkey = 0, rkey = 0;
};

// The address range work requests and tokens name a region by.
struct RegionSpan {
  uint64_t addr = 0;
  uint64_t length = 0;
};

// ibv_reg_mr: the region is where the memory is, [mr->addr, +length).
RegionSpan HostRegionSpan(const Registration& reg);
// ibv_reg_dmabuf_mr: libibverbs reports mr->addr = the dma-buf *offset*; initiators (and the
// client's own lookups) address the region through the iova it was registered with (the device
// pointer), so the span is [iova, +length) whatever addr says (ibv_reg_mr(3)).
RegionSpan DmabufRegionSpan(const Registration& reg, uint64_t iova);

// Path MTU codes, numerically equal to enum ibv_mtu.
enum class PathMtu : int { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };
int PathMtuBytes(PathMtu m);
// The path MTU a QP may use: what it wants, but never above the port's active MTU (on RoCE that
// follows the netdev MTU; a larger path MTU makes every transfer above one MTU end in
// retry-exceeded). An unknown active value (0) leaves the wanted one.
PathMtu ClampPathMtu(PathMtu active, PathMtu wanted);
// The completion vector of the n-th CQ a fabric creates: round robin over the device's
// num_comp_vectors (0 when it reports none).
int CompletionVector(uint64_t n, int num_comp_vectors);
// The path MTU of `bytes` (256, 512, 1024, 2048 or 4096), or nullopt (MINIO_RDMA_MTU_MAX).
std::optional<PathMtu> PathMtuFromBytes(uint64_t bytes);

// The device and port a fabric uses (DC fabric, DC target, RC fabric, `rdma check`).
struct DevicePick {
  std::string device;
  int port = 1;
  const DeviceInfo* info = nullptr;  // into the list SelectDevice was given
  const PortInfo* port_info = nullptr;
};
// A port is usable when it is ACTIVE and, on Ethernet (RoCE), has a RoCE v2 GID (an address on
// its netdev): InfiniBand routes by LID. MINIO_RDMA_DEVICE (`wanted`) names the device: it must be
// listed (and DC capable when `need_dc`) and its `port` usable. Unset: the first listed device
// (DC capable when `need_dc`) whose `port` is usable. The error says what was found and what to
// set.
Result<DevicePick> SelectDevice(const std::vector<DeviceInfo>& devices, const std::string& wanted,
                                int port, bool need_dc);
// The device the inter-node RC initiator uses. Its connections leave from the node's own address
// (the address its peer RPCs come from and its RC target listens on), so the device is the one
// rdma_cm binds that address to (`bind_device`; "" when the address is no RDMA interface's or
// is a loopback address): it must be usable and, when MINIO_RDMA_DEVICE is set, one it lists.
// Without a bound device: SelectDevice's choice (the first usable device). `bind_source` says
// whether connections should bind the node's address as their source (rdma_resolve_addr), which
// pins their route to that device's netdev.
struct RcDeviceChoice {
  DevicePick pick;
  bool bind_source = false;
};
Result<RcDeviceChoice> SelectRcDevice(const std::vector<DeviceInfo>& devices,
                                      const std::string& wanted, int port,
                                      const std::string& bind_device);
// Whether a device `name` is allowed by MINIO_RDMA_DEVICE (`wanted`: "" allows any; else one of
// its comma-separated names).
bool DeviceAllowed(const std::string& wanted, const std::string& name);
// Why `port` of `device` is not usable ("" when it is).
std::string PortUnusableReason(const PortInfo& port);

// The device limits queue sizes are clamped to (ibv_device_attr).
struct DeviceLimits {
  int max_qp_wr = 0;  // 0 = unknown: no clamp
  int max_cqe = 0;
};
struct QueueSizes {
  uint32_t send_wr = 0;  // QP max_send_wr
  int cqe = 0;           // ibv_create_cq cqe: what can be outstanding on it (+1 for the recv side)
};
// Sizes for an initiator QP and its own CQ: `wanted` work requests (MINIO_RDMA_CQ_DEPTH, capped
// by `cap` when the QP needs fewer), within the device's max_qp_wr, and a CQ large enough for every
// signalled request the QP can have outstanding (send + `recv_wr`), within max_cqe.
QueueSizes ClampQueues(int wanted, int cap, int recv_wr, const DeviceLimits& limits);

// Entries to allocate for ibv_query_gid_table: it fills entries of every port of the device, so it
// needs room for the whole device's table (the sum of the ports' gid_tbl_len; at least 1).
size_t GidTableEntries(const std::vector<int>& port_table_lengths);

// The text appended to a registration failure: ENOMEM from ibv_reg_mr is nearly always the
// locked-memory limit. Empty for other errors.
std::string RegistrationHint(int err);

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

// --- DC initiator pool (issue 12 item 8) ---------------------------------------------------
// An endpoint holds a DCI only while its work requests are in flight: it takes one at its first
// post and gives it back once every request it posted has provably completed (a signalled
// completion covers every request before it on the same send queue). Drive reads and commits
// between posts hold none.
struct DciUse {
  int signaled_outstanding = 0;  // signalled requests not yet polled
  int unsignaled_tail = 0;       // unsignalled requests posted after the last signalled one
  bool errored = false;          // an error completion or a failed post: the QP is in error
};
enum class DciDisposition {
  kKeep,     // requests still in flight: keep polling this DCI
  kReturn,   // nothing in flight: back to the pool, usable at once
  kReplace,  // in error, or closing with requests that cannot be proven complete: destroy and
             // create a fresh one (an unsignalled success leaves no completion to wait for)
};
DciDisposition DciAfterPoll(const DciUse& use, bool closing);

// How many DCIs exist and when a missing one is created again. The pool starts at `target`; a
// DCI in error is destroyed and replaced; a failed creation leaves a hole that later acquires
// and returns try to fill again, spaced by a backoff (100 ms doubling to 5 s) so a device
// that refuses creation is not hammered. Not thread-safe: the fabric holds its lock.
class DciPoolLedger {
 public:
  using Clock = std::chrono::steady_clock;
  explicit DciPoolLedger(int target) : target_(target < 1 ? 1 : target) {}
  int target() const { return target_; }
  int live() const { return live_; }          // created and not destroyed (idle or held)
  int creating() const { return creating_; }  // reserved, being created
  int missing() const { return target_ - live_ - creating_; }
  // Whether the caller should create one now (and reserves it: call Created or CreateFailed).
  bool ReserveCreate(Clock::time_point now);
  void Created();
  void CreateFailed(Clock::time_point now);
  void Destroyed();  // a DCI in error was destroyed
  Clock::time_point next_try() const { return next_try_; }

 private:
  int target_;
  int live_ = 0, creating_ = 0;
  std::chrono::milliseconds backoff_{0};
  Clock::time_point next_try_{};
};

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

// --- Completion handling and address handles (issue 12 item 9) ------------------------------
// How an initiator waits for a completion: busy-poll for `spin` (a short transfer completes in
// microseconds), then arm the CQ and sleep on its completion channel until `wait` runs out.
enum class WaitStep { kPoll, kSleep, kGiveUp };
WaitStep NextWaitStep(std::chrono::microseconds elapsed, std::chrono::microseconds spin,
                      std::chrono::microseconds wait);

// Address handles are cached by what they encode: the remote's GID (RoCE / routed IB) or LID.
struct AhKey {
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;
  bool has_gid = false;
  auto operator<=>(const AhKey&) const = default;
};
// What an address handle is created from (the fabric's SL and traffic class are fixed): the LID,
// and the GID when the token carries one; a GID without has_gid is ignored.
AhKey AhKeyFor(bool has_gid, const std::array<uint8_t, 16>& gid, uint16_t lid);

// A bounded map with least-recently-used eviction (the address-handle cache). Values are
// shared_ptr: an evicted handle lives on while an endpoint still uses it. Not thread-safe.
template <class K, class V>
class BoundedLru {
 public:
  explicit BoundedLru(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  std::shared_ptr<V> Find(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recently used first
    return it->second->second;
  }
  // Inserts (or replaces) k; evicts the least recently used entry beyond the capacity and
  // returns how many were evicted.
  size_t Put(const K& k, std::shared_ptr<V> v) {
    if (auto it = index_.find(k); it != index_.end()) {
      it->second->second = std::move(v);
      order_.splice(order_.begin(), order_, it->second);
      return 0;
    }
    order_.emplace_front(k, std::move(v));
    index_[k] = order_.begin();
    size_t evicted = 0;
    while (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evicted;
    }
    return evicted;
  }
  void Clear() {
    index_.clear();
    order_.clear();
  }
  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::list<std::pair<K, std::shared_ptr<V>>> order_;
  std::map<K, typename std::list<std::pair<K, std::shared_ptr<V>>>::iterator> index_;
};

// IBV_ACCESS_RELAXED_ORDERING lets the NIC's PCIe writes be reordered (large gains for GPU
// memory and some CPUs). It lies in libibverbs' optional access range: a provider or kernel that
// cannot honour it ignores it. Asked for when the library defines it; a registration refused
// with EINVAL/EOPNOTSUPP while it was set (an old kernel that rejects unknown bits) is retried
// once without it.
bool RetryWithoutRelaxedOrdering(bool relaxed_was_set, int err);

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

// --- Asynchronous device events (issue 12 item 11) ------------------------------------------
// The events of ibv_get_async_event the fabric acts on (enum ibv_event_type, by meaning).
enum class AsyncEvent {
  kPortActive,   // IBV_EVENT_PORT_ACTIVE
  kPortError,    // IBV_EVENT_PORT_ERR: link down
  kGidChange,    // IBV_EVENT_GID_CHANGE: an address came or went on the netdev (RoCE)
  kLidChange,    // IBV_EVENT_LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER
  kDeviceFatal,  // IBV_EVENT_DEVICE_FATAL: the context is dead; reopen the device
  kQueueError,   // QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, CQ_ERR, SRQ_ERR: one object
  kOther,        // COMM_EST, SQ_DRAINED, LAST_WQE_REACHED, SRQ_LIMIT_REACHED, ...
};
enum class FabricHealth {
  kReady,     // serving
  kDegraded,  // our port is down: requests get 501 until it is ACTIVE again
  kDown,      // the device failed: 501 until it has been reopened
};
struct FabricState {
  FabricHealth health = FabricHealth::kReady;
  std::string reason;  // why not kReady ("" when ready)
};
struct EventDecision {
  FabricState next;
  bool requery_port = false;  // re-read the port's attributes and pick the GID index again
  bool reopen = false;        // close the device and open it again (new context, PD, QPs, MRs)
  bool log_error = false;     // worth an error line (else info)
};
// What an event on `event_port` (0 for device-wide events) means for a fabric using `our_port`
// in `state`. Events on other ports change nothing; a port coming back clears only a
// port-down state (a dead device stays down until reopened).
EventDecision OnAsyncEvent(AsyncEvent event, int event_port, int our_port,
                           const FabricState& state);
std::string_view FabricHealthName(FabricHealth h);  // "ready" | "degraded" | "down"

// The RC fabric (rc.h) looks at its device instead of reading asynchronous events: its context
// is librdmacm's, shared by every RC user of the process (the S3 listener, inter-node initiator
// and target, a client), and an event one of them reads is lost to the others. What a look saw:
struct DeviceObservation {
  bool removed = false;       // rdma_cm said DEVICE_REMOVAL, or the device left the verbs list
  bool query_failed = false;  // ibv_query_port failed (a fatal device error: EIO)
  bool port_active = true;    // the port's state is ACTIVE
};
// The state after a look: removed or failed is down for good (its resources must go, so that the
// kernel can finish removing the device; a new fabric is made when it is back); a port that is
// not active degrades, and an active one clears only that.
FabricState ObserveDevice(const DeviceObservation& seen, int our_port, const FabricState& state);

// --- S3 over RDMA transports (issue 31 item 3) ------------------------------------------------
// What the server serves S3 over RDMA with, from the device facts: DC on an mlx5 device (the only
// kind with DC), RC on any usable device while MINIO_RDMA_RC_PORT is on (rc_port != 0) — DC and RC
// on mlx5, RC elsewhere. RC runs on the device DC runs on when there is one (clients of either
// transport reach the same NIC), else on MINIO_RDMA_DEVICE or the first usable device.
struct S3Transports {
  std::optional<DevicePick> dc;  // the device DC runs on
  std::optional<DevicePick> rc;  // the device RC runs on (its listener on rc_port)
  std::string no_dc;             // why not DC ("" when dc)
  std::string no_rc;             // why not RC ("" when rc)
  int rc_port = 0;
  // "DC and RC on mlx5_0 port 1 (RC connections to port 9100)", "RC only on rxe0 port 1 (no
  // DC: ...; RC connections to port 9100)", "DC only on mlx5_0 port 1 (RC off: ...)".
  std::string Describe() const;
};
S3Transports ChooseS3Transports(const std::vector<DeviceInfo>& devices, const std::string& wanted,
                                int port, int rc_port);

// Delays between attempts to reopen a device that went away: `first`, doubling, at most `cap`,
// so a returning device is found within `cap` and a missing one costs a few syscalls per `cap`.
class ReopenBackoff {
 public:
  explicit ReopenBackoff(std::chrono::milliseconds first = std::chrono::milliseconds(250),
                         std::chrono::milliseconds cap = std::chrono::milliseconds(4000))
      : first_(first), cap_(cap), next_(first) {}
  // The wait before the next attempt (each call doubles the one after it, up to cap).
  std::chrono::milliseconds Next() {
    auto now = next_;
    next_ = std::min(cap_, next_ * 2);
    return now;
  }
  void Reset() { next_ = first_; }

 private:
  std::chrono::milliseconds first_, cap_, next_;
};

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

// --- Origin check (issue 12 item 14) -------------------------------------------------------
// A token must not turn the server into an RDMA relay toward hosts the requester does not own.
// Where it can be decided — a RoCE v2 token, whose GID is an IPv4-mapped address — the GID must
// be the HTTP requester's address or lie in an allowed network (MINIO_RDMA_ALLOW), as on the
// soft fabric. InfiniBand GIDs and LID-only tokens carry no IP address: not decidable, allowed.
// Returns why the token is refused ("" when allowed). `check` false (MINIO_RDMA_ALLOW=any)
// allows everything.
std::string VerbsOriginRefusal(bool token_has_gid, const std::array<uint8_t, 16>& token_gid,
                               std::string_view requester_ip, const std::vector<soft::Cidr>& allow,
                               bool check);
// The check as the verbs fabric answers it: a refusal is a decline, 501 RDMANotSupported naming
// the reason (OriginDecline), not 403. Behind an L4 load balancer or on a multi-NIC host whose
// HTTP leaves from another interface than the token's NIC the addresses differ for honest
// clients too, and clients fall back to TCP on a 501 only.
Status VerbsOriginCheck(bool token_has_gid, const std::array<uint8_t, 16>& token_gid,
                        std::string_view requester_ip, const std::vector<soft::Cidr>& allow,
                        bool check);

}  // namespace rdmastor::rdma

namespace rdmastor::rdma {

// --- Multi-rail (issue 12 item 13) ---------------------------------------------------------
// MINIO_RDMA_DEVICE may name several devices, comma separated ("mlx5_0,mlx5_1").
std::vector<std::string> SplitDeviceList(std::string_view text);

// The rails the server's DC initiators use: every listed device (each must be usable, as
// SelectDevice judges it), or, when none is named, every usable DC-capable device. At least one.
Result<std::vector<DevicePick>> SelectRails(const std::vector<DeviceInfo>& devices,
                                            const std::string& wanted, int port, bool need_dc);

// An IPv4 network a rail's port is on: one of its RoCE v2 GIDs and its netdev's prefix length.
struct RailNetwork {
  uint32_t ip = 0;  // host byte order
  int prefix = 32;
};
struct Rail {
  std::string device;
  std::vector<RailNetwork> networks;
};
// Which rail serves a token: the rail with a network containing the token's GID (RoCE v2, the
// longest prefix wins); else the rail holding the address the HTTP request arrived on
// (`local_ip`, NooBaa's rule); else rail 0 (InfiniBand, or no match: the subnet manager routes).
size_t SelectRail(const std::vector<Rail>& rails, bool token_has_gid,
                  const std::array<uint8_t, 16>& token_gid, std::string_view local_ip);

}  // namespace rdmastor::rdma
