#include "rdma/verbs/verbs_fabric.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <infiniband/mlx5dv.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rdma/build_info.h"
#include "rdma/check.h"
#include "rdma/rails.h"
#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {
namespace verbs {

static_assert(static_cast<int>(PathMtu::k256) == IBV_MTU_256 &&
              static_cast<int>(PathMtu::k4096) == IBV_MTU_4096);

WcStatus FromIbvStatus(ibv_wc_status s) {
  static constexpr std::pair<ibv_wc_status, WcStatus> kMap[] = {
      {IBV_WC_SUCCESS, WcStatus::kSuccess},
      {IBV_WC_LOC_LEN_ERR, WcStatus::kLocalLengthError},
      {IBV_WC_LOC_QP_OP_ERR, WcStatus::kLocalQpOpError},
      {IBV_WC_LOC_PROT_ERR, WcStatus::kLocalProtectionError},
      {IBV_WC_WR_FLUSH_ERR, WcStatus::kFlushed},
      {IBV_WC_REM_INV_REQ_ERR, WcStatus::kRemoteInvalidRequest},
      {IBV_WC_REM_ACCESS_ERR, WcStatus::kRemoteAccessError},
      {IBV_WC_REM_OP_ERR, WcStatus::kRemoteOperationError},
      {IBV_WC_RETRY_EXC_ERR, WcStatus::kRetryExceeded},
      {IBV_WC_RNR_RETRY_EXC_ERR, WcStatus::kRnrRetryExceeded}};
  for (const auto& [ibv, ours] : kMap)
    if (ibv == s) return ours;
  return WcStatus::kGeneralError;  // IBV_WC_GENERAL_ERR and the rest
}

ibv_ah_attr AhAttrFor(const RemoteAddress& remote, uint8_t port, uint8_t sgid_index) {
  ibv_ah_attr a{};
  a.dlid = remote.lid;
  a.port_num = port;
  a.is_global = remote.has_gid ? 1 : 0;
  if (remote.has_gid) {
    std::memcpy(a.grh.dgid.raw, remote.gid.data(), 16);
    a.grh.sgid_index = sgid_index;
    a.grh.hop_limit = 64;
  }
  return a;
}

int IbvAccess(unsigned access) {
  int f = 0;
#ifdef IBV_ACCESS_RELAXED_ORDERING
  // Optional access flag: ignored where the device, kernel or PCIe path cannot honour it.
  if (access & (kLocalWrite | kRemoteWrite | kRemoteRead)) f |= IBV_ACCESS_RELAXED_ORDERING;
#endif
  if (access & kLocalWrite) f |= IBV_ACCESS_LOCAL_WRITE;
  // Remote write needs local write too (verbs rule).
  if (access & kRemoteWrite) f |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  if (access & kRemoteRead) f |= IBV_ACCESS_REMOTE_READ;
  return f;
}

Registration Reported(const ibv_mr& mr) {
  return {reinterpret_cast<uint64_t>(mr.addr), mr.length, mr.lkey, mr.rkey};
}

static Error VerbsPollError(const std::string& what, int err) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "verbs: " + what + ": " + std::strerror(err ? err : EIO));
}

Error RegistrationError(const std::string& what, int err) {
  if (!err) err = EIO;
  return MakeError(ErrorCode::kRDMANotSupported,
                   "verbs: " + what + ": " + std::strerror(err) + RegistrationHint(err));
}

ibv_mr* RegisterHostMemory(ibv_pd* pd, void* addr, size_t length, unsigned access) {
  int flags = IbvAccess(access);
  ibv_mr* mr = ibv_reg_mr(pd, addr, length, flags);
#ifdef IBV_ACCESS_RELAXED_ORDERING
  if (!mr && RetryWithoutRelaxedOrdering((flags & IBV_ACCESS_RELAXED_ORDERING) != 0, errno))
    mr = ibv_reg_mr(pd, addr, length, flags & ~IBV_ACCESS_RELAXED_ORDERING);
#endif
  return mr;
}

Result<int> WaitForCompletions(ibv_cq* cq, ibv_comp_channel* channel, ibv_wc* wc, int max,
                               std::chrono::milliseconds wait) {
  // Busy-poll this long before sleeping on the channel: a 1 MiB work request takes ~40-80 us at
  // 100-200 Gb/s, so short transfers never sleep and long ones do not burn a core.
  constexpr std::chrono::microseconds kSpin{50};
  const auto start = std::chrono::steady_clock::now();
  bool armed = false;
  for (;;) {
    int n = ibv_poll_cq(cq, max, wc);
    if (n < 0) return VerbsPollError("ibv_poll_cq", -n);
    if (n > 0) return n;
    auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    WaitStep step = NextWaitStep(elapsed, kSpin, wait);
    if (step == WaitStep::kGiveUp) return 0;
    if (step == WaitStep::kPoll || !channel) continue;
    if (!armed) {
      // Arm, then poll once more: a completion that arrived before the arm raises no event.
      if (int e = ibv_req_notify_cq(cq, 0)) return VerbsPollError("ibv_req_notify_cq", e);
      armed = true;
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wait - elapsed);
    pollfd pfd{channel->fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 1, 100)));
    if (r < 0 && errno != EINTR) return VerbsPollError("poll on the completion channel", errno);
    if (r > 0) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx) == 0) {
        ibv_ack_cq_events(ev_cq, 1);  // acknowledged at once: destroying the CQ never waits
        armed = false;                // one event per arm
      }
    }
  }
}

namespace {

template <class T, int (*F)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p) F(p);
  }
};
using ContextPtr = std::unique_ptr<ibv_context, Deleter<ibv_context, ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, Deleter<ibv_pd, ibv_dealloc_pd>>;
using MrPtr = std::unique_ptr<ibv_mr, Deleter<ibv_mr, ibv_dereg_mr>>;
using CqPtr = std::unique_ptr<ibv_cq, Deleter<ibv_cq, ibv_destroy_cq>>;
using QpPtr = std::unique_ptr<ibv_qp, Deleter<ibv_qp, ibv_destroy_qp>>;
using AhPtr = std::unique_ptr<ibv_ah, Deleter<ibv_ah, ibv_destroy_ah>>;
using ChannelPtr =
    std::unique_ptr<ibv_comp_channel, Deleter<ibv_comp_channel, ibv_destroy_comp_channel>>;

Error VerbsError(std::string what, int err) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "verbs: " + what + ": " + std::strerror(err ? err : EIO));
}

class VerbsMr final : public MemoryRegion {
 public:
  // `span`: HostRegionSpan for ibv_reg_mr, DmabufRegionSpan for ibv_reg_dmabuf_mr.
  VerbsMr(MrPtr mr, RegionSpan span)
      : MemoryRegion(reinterpret_cast<char*>(span.addr), span.length, mr->lkey, mr->rkey),
        mr_(std::move(mr)) {}

  // Host memory (ibv_reg_mr), for the fabric and the DC target alike.
  static Result<std::unique_ptr<MemoryRegion>> RegisterHost(ibv_pd* pd, void* addr, size_t length,
                                                            unsigned access) {
    MrPtr mr(RegisterHostMemory(pd, addr, length, access));
    if (!mr) return RegistrationError("ibv_reg_mr", errno);
    RegionSpan span = HostRegionSpan(Reported(*mr));
    return std::unique_ptr<MemoryRegion>(new VerbsMr(std::move(mr), span));
  }

 private:
  MrPtr mr_;
};

// One DC initiator with its CQ and the CQ's completion channel; RTS while idle in the pool.
struct Dci {
  ChannelPtr channel;  // destroyed after the CQ (every event was acknowledged)
  CqPtr cq;            // destroyed after the QP
  QpPtr qp;
  ibv_qp_ex* qpx = nullptr;
  mlx5dv_qp_ex* mqpx = nullptr;
};

class VerbsFabric;
uint8_t PickGidIndex(ibv_context* ctx, const VerbsSettings& s, const ibv_port_attr& attr);

// ibv_event_type -> AsyncEvent, and the port it names (0: not a port event).
std::pair<AsyncEvent, int> Classify(const ibv_async_event& ev) {
  const int port = static_cast<int>(ev.element.port_num);
  switch (ev.event_type) {
    case IBV_EVENT_PORT_ACTIVE:
      return {AsyncEvent::kPortActive, port};
    case IBV_EVENT_PORT_ERR:
      return {AsyncEvent::kPortError, port};
    case IBV_EVENT_GID_CHANGE:
      return {AsyncEvent::kGidChange, port};
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      return {AsyncEvent::kLidChange, port};
    case IBV_EVENT_DEVICE_FATAL:
      return {AsyncEvent::kDeviceFatal, 0};
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_WQ_FATAL:
      return {AsyncEvent::kQueueError, 0};
    default:
      return {AsyncEvent::kOther, 0};
  }
}

// What the opened device allows, applied to every DCI (and the DCT): from the pure rules.
struct PortPlan {
  PathMtu mtu = PathMtu::k4096;
  QueueSizes dci_queues;
  int max_rd_atomic = 1;
};

// An endpoint toward one client DCT. It holds a DCI only while its work requests are in flight
// (DciAfterPoll): taken at the first post, given back once every posted request completed.
class DciEndpoint final : public Endpoint {
 public:
  DciEndpoint(VerbsFabric& f, std::shared_ptr<ibv_ah> ah, uint32_t dctn)
      : fabric_(f), ah_(std::move(ah)), dctn_(dctn) {}
  ~DciEndpoint() override;
  Status PostSend(const WorkRequest& wr) override;
  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) override;

 private:
  void GiveBack(DciDisposition how);

  VerbsFabric& fabric_;
  std::unique_ptr<Dci> dci_;  // null while nothing is in flight
  DciUse use_;
  std::shared_ptr<ibv_ah> ah_;  // from the fabric's cache, alive while used even if evicted
  uint32_t dctn_;
};

class VerbsFabric final : public Fabric {
 public:
  VerbsFabric(ContextPtr ctx, PdPtr pd, const VerbsSettings& s, uint8_t gid_index, PortPlan plan)
      : ctx_(std::move(ctx)),
        pd_(std::move(pd)),
        settings_(s),
        gid_index_(gid_index),
        plan_(plan) {}
  ~VerbsFabric() override {
    stop_ = true;
    if (events_.joinable()) events_.join();
    pool_.clear();  // QPs and CQs before the PD and context
    ah_cache_.Clear();
    pd_.reset();
  }
  std::string_view name() const override { return "verbs"; }

  std::string Unavailable() const override {
    std::lock_guard lock(state_mu_);
    return state_.health == FabricHealth::kReady ? "" : state_.reason;
  }
  bool NeedsReopen() const override {
    std::lock_guard lock(state_mu_);
    return state_.health == FabricHealth::kDown;
  }

  // Reads the device's asynchronous events on a thread of its own (OnAsyncEvent decides).
  Status StartEvents() {
    int fl = fcntl(ctx_->async_fd, F_GETFL);
    if (fl < 0 || fcntl(ctx_->async_fd, F_SETFL, fl | O_NONBLOCK) != 0)
      return VerbsError("async event fd O_NONBLOCK", errno);
    events_ = std::thread([this] { EventLoop(); });
    return {};
  }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    return VerbsMr::RegisterHost(pd_.get(), addr, length, access);
  }

  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& remote,
                                            const RequestOrigin& origin) override {
    if (!remote.has_gid && remote.lid == 0)
      return MakeError(ErrorCode::kRDMANotSupported, "verbs: the token has neither LID nor GID");
    if (auto st = VerbsOriginCheck(remote.has_gid, remote.gid, origin.remote_ip, settings_.allow,
                                   settings_.origin_check);
        !st.ok())
      return st.error();
    auto ah = AddressHandle(remote);
    if (!ah.ok()) return ah.error();
    return std::unique_ptr<Endpoint>(new DciEndpoint(*this, std::move(ah).value(), remote.qpn));
  }

  // The address handle toward `remote`, from a bounded cache keyed by (GID, LID): creating one
  // per request is a syscall on most providers. Created outside the cache's lock: on RoCE it
  // resolves the neighbour (ARP, up to about a second for a silent host), and requests to every
  // other client must not wait behind that. Two threads may both create one for a new client;
  // the first stored wins and the other is destroyed.
  Result<std::shared_ptr<ibv_ah>> AddressHandle(const RemoteAddress& remote) {
    const AhKey key = AhKeyFor(remote.has_gid, remote.gid, remote.lid);
    {
      std::lock_guard lock(ah_mu_);
      if (auto hit = ah_cache_.Find(key)) return hit;
    }
    ibv_ah_attr attr = AhAttrFor(remote, static_cast<uint8_t>(settings_.port), gid_index_.load());
    attr.sl = static_cast<uint8_t>(settings_.service_level);
    if (attr.is_global) attr.grh.traffic_class = static_cast<uint8_t>(settings_.traffic_class);
    std::shared_ptr<ibv_ah> ah(ibv_create_ah(pd_.get(), &attr), [](ibv_ah* a) {
      if (a) ibv_destroy_ah(a);
    });
    if (!ah) return VerbsError("ibv_create_ah", errno);
    std::lock_guard lock(ah_mu_);
    if (auto raced = ah_cache_.Find(key)) return raced;
    ah_cache_.Put(key, ah);
    return ah;
  }

  Status Init() {
    for (int i = 0; i < settings_.num_dcis; ++i) {
      ledger_.ReserveCreate(DciPoolLedger::Clock::now());
      auto d = CreateDci();
      if (!d.ok()) return d.error();
      ledger_.Created();
      pool_.push_back(std::move(d).value());
    }
    return {};
  }

  // An idle DCI, a missing one created now (DciPoolLedger), or one another request gives back
  // within 10 s; else 503 SlowDown.
  Result<std::unique_ptr<Dci>> Acquire() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::unique_lock lock(mu_);
    for (;;) {
      if (!pool_.empty()) {
        auto d = std::move(pool_.back());
        pool_.pop_back();
        return d;
      }
      auto now = std::chrono::steady_clock::now();
      if (ledger_.ReserveCreate(now)) {
        lock.unlock();
        auto d = CreateDci();
        lock.lock();
        if (d.ok()) {
          ledger_.Created();
          return d;
        }
        ledger_.CreateFailed(std::chrono::steady_clock::now());
        spdlog::warn("verbs: cannot create a DC initiator ({} of {} live): {}", ledger_.live(),
                     ledger_.target(), d.error().message);
      }
      if (now >= deadline)
        return MakeError(ErrorCode::kSlowDown, "all DC initiators are busy (MINIO_RDMA_NUM_DCIS)");
      auto until = deadline;
      if (ledger_.missing() > 0) until = std::min(until, ledger_.next_try());
      cv_.wait_until(lock, std::max(until, now + std::chrono::milliseconds(1)));
    }
  }

  // kReturn: back to the pool. kReplace: destroyed, and a fresh one created in its place (when
  // that fails, the hole is filled later by Acquire, spaced by the ledger's backoff).
  void Release(std::unique_ptr<Dci> dci, DciDisposition how) {
    if (how == DciDisposition::kReplace) {
      dci.reset();
      std::unique_lock lock(mu_);
      ledger_.Destroyed();
      if (!ledger_.ReserveCreate(std::chrono::steady_clock::now())) return;
      lock.unlock();
      auto fresh = CreateDci();
      lock.lock();
      if (!fresh.ok()) {
        ledger_.CreateFailed(std::chrono::steady_clock::now());
        spdlog::error("verbs: cannot replace a failed DC initiator ({} of {} live): {}",
                      ledger_.live(), ledger_.target(), fresh.error().message);
        return;
      }
      ledger_.Created();
      dci = std::move(fresh).value();
      pool_.push_back(std::move(dci));
      cv_.notify_one();
      return;
    }
    std::lock_guard lock(mu_);
    pool_.push_back(std::move(dci));
    cv_.notify_one();
  }

  uint64_t dc_key() const { return settings_.dc_key; }

 private:
  void EventLoop() {
    while (!stop_) {
      pollfd pfd{ctx_->async_fd, POLLIN, 0};
      if (::poll(&pfd, 1, 200) <= 0) continue;  // bounded: the destructor's stop_ is seen
      ibv_async_event ev{};
      if (ibv_get_async_event(ctx_.get(), &ev) != 0) continue;
      auto [kind, port] = Classify(ev);
      const char* what = ibv_event_type_str(ev.event_type);
      ibv_ack_async_event(&ev);
      EventDecision d;
      FabricState before;
      {
        std::lock_guard lock(state_mu_);
        before = state_;
        d = OnAsyncEvent(kind, port, settings_.port, state_);
        state_ = d.next;
      }
      if (d.log_error)
        spdlog::error("verbs: device event {} (port {}): S3 over RDMA {}{}", what, port,
                      FabricHealthName(d.next.health),
                      d.next.reason.empty() ? "" : ": " + d.next.reason);
      else
        spdlog::info("verbs: device event {} (port {})", what, port);
      if (d.requery_port) Requery();
      if (before.health != FabricHealth::kReady && d.next.health == FabricHealth::kReady)
        spdlog::info("verbs: port {} is active again: S3 over RDMA serving", settings_.port);
      if (d.reopen) return;  // the context is dead: the service creates a new fabric
    }
  }

  // The port came back or its addresses changed: pick the GID index again and drop address
  // handles built with the old one.
  void Requery() {
    ibv_port_attr attr{};
    if (ibv_query_port(ctx_.get(), static_cast<uint8_t>(settings_.port), &attr) != 0) return;
    uint8_t idx = PickGidIndex(ctx_.get(), settings_, attr);
    if (idx != gid_index_.exchange(idx))
      spdlog::info("verbs: port {} now uses GID index {}", settings_.port, idx);
    // The DCIs' path MTU was fixed when they were created; a smaller one now (a netdev MTU
    // lowered while the link was down) would make transfers above it end in retry-exceeded.
    if (PathMtu now = ClampPathMtu(static_cast<PathMtu>(attr.active_mtu), PathMtu::k4096);
        PathMtuBytes(now) < PathMtuBytes(plan_.mtu))
      spdlog::error(
          "verbs: port {} active MTU is now {} bytes, below the DC initiators' path MTU {}: "
          "restart rdmastor to apply it",
          settings_.port, PathMtuBytes(now), PathMtuBytes(plan_.mtu));
    std::lock_guard lock(ah_mu_);
    ah_cache_.Clear();
  }

  Result<std::unique_ptr<Dci>> CreateDci() {
    auto d = std::make_unique<Dci>();
    d->channel.reset(ibv_create_comp_channel(ctx_.get()));
    if (!d->channel) return VerbsError("ibv_create_comp_channel", errno);
    // Non-blocking: the endpoint waits in poll() with a deadline, never in ibv_get_cq_event.
    int fl = fcntl(d->channel->fd, F_GETFL);
    if (fl < 0 || fcntl(d->channel->fd, F_SETFL, fl | O_NONBLOCK) != 0)
      return VerbsError("completion channel O_NONBLOCK", errno);
    // Each DCI's CQ on the next completion vector: their interrupts spread over the device's
    // vectors (and so CPUs) instead of all landing on vector 0.
    d->cq.reset(ibv_create_cq(ctx_.get(), plan_.dci_queues.cqe, nullptr, d->channel.get(),
                              CompletionVector(next_vector_++, ctx_->num_comp_vectors)));
    if (!d->cq) return VerbsError("ibv_create_cq", errno);
    ibv_qp_init_attr_ex attr{};
    attr.qp_type = IBV_QPT_DRIVER;
    attr.send_cq = d->cq.get();
    attr.recv_cq = d->cq.get();
    attr.pd = pd_.get();
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
    attr.cap.max_send_wr = plan_.dci_queues.send_wr;
    attr.cap.max_send_sge = 1;
    mlx5dv_qp_init_attr dv{};
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
    d->qp.reset(mlx5dv_create_qp(ctx_.get(), &attr, &dv));
    if (!d->qp) return VerbsError("mlx5dv_create_qp (DCI)", errno);
    d->qpx = ibv_qp_to_qp_ex(d->qp.get());
    d->mqpx = mlx5dv_qp_ex_from_ibv_qp_ex(d->qpx);
    // RESET -> INIT -> RTR -> RTS; a DCI has no remote peer of its own.
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.pkey_index = static_cast<uint16_t>(settings_.pkey_index);
    qa.port_num = static_cast<uint8_t>(settings_.port);
    if (int e = ibv_modify_qp(d->qp.get(), &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT))
      return VerbsError("DCI to INIT", e);
    // RTR: the path MTU only. A DCI's address vector comes with each work request
    // (mlx5dv_wr_set_dc_addr); older kernels reject IBV_QP_AV here, and pyverbs omits it.
    qa = {};
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = static_cast<ibv_mtu>(plan_.mtu);
    if (int e = ibv_modify_qp(d->qp.get(), &qa, IBV_QP_STATE | IBV_QP_PATH_MTU))
      return VerbsError("DCI to RTR", e);
    qa = {};
    qa.qp_state = IBV_QPS_RTS;
    // MINIO_RDMA_TIMEOUT, default 14: ~67 ms per try; with retry_cnt 7 a vanished peer fails in
    // ~0.5 s.
    qa.timeout = static_cast<uint8_t>(settings_.timeout);
    qa.retry_cnt = 7;
    qa.rnr_retry = 7;
    qa.sq_psn = 0;
    qa.max_rd_atomic = static_cast<uint8_t>(plan_.max_rd_atomic);  // the device's, as RC does
    if (int e = ibv_modify_qp(d->qp.get(), &qa,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
      return VerbsError("DCI to RTS", e);
    return d;
  }

  ContextPtr ctx_;
  PdPtr pd_;
  VerbsSettings settings_;
  std::atomic<uint8_t> gid_index_;
  PortPlan plan_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Dci>> pool_;  // idle DCIs
  DciPoolLedger ledger_{settings_.num_dcis};
  std::mutex ah_mu_;
  BoundedLru<AhKey, ibv_ah> ah_cache_{1024};
  std::atomic<uint64_t> next_vector_{0};  // CQs created so far (CompletionVector)
  mutable std::mutex state_mu_;
  FabricState state_;
  std::atomic<bool> stop_{false};
  std::thread events_;  // last: joined first
};

DciEndpoint::~DciEndpoint() {
  if (!dci_) return;
  // Outstanding requests may still touch local memory: drain them (bounded) or drop the DCI.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  ibv_wc wc[16];
  while (use_.signaled_outstanding > 0 && !use_.errored &&
         std::chrono::steady_clock::now() < deadline) {
    int n = ibv_poll_cq(dci_->cq.get(), 16, wc);
    if (n < 0) break;
    for (int i = 0; i < n; ++i) {
      use_.errored |= wc[i].status != IBV_WC_SUCCESS;
      --use_.signaled_outstanding;
    }
    if (n == 0) std::this_thread::yield();
  }
  GiveBack(DciAfterPoll(use_, /*closing=*/true));
}

void DciEndpoint::GiveBack(DciDisposition how) {
  fabric_.Release(std::move(dci_), how);
  use_ = {};
}

Status DciEndpoint::PostSend(const WorkRequest& wr) {
  if (!dci_) {
    auto d = fabric_.Acquire();
    if (!d.ok()) return d.error();
    dci_ = std::move(d).value();
    use_ = {};
  }
  ibv_wr_start(dci_->qpx);
  dci_->qpx->wr_id = wr.wr_id;
  dci_->qpx->wr_flags = wr.signaled ? IBV_SEND_SIGNALED : 0;
  if (wr.opcode == Opcode::kWrite)
    ibv_wr_rdma_write(dci_->qpx, wr.rkey, wr.remote_addr);
  else
    ibv_wr_rdma_read(dci_->qpx, wr.rkey, wr.remote_addr);
  mlx5dv_wr_set_dc_addr(dci_->mqpx, ah_.get(), dctn_, fabric_.dc_key());
  ibv_wr_set_sge(dci_->qpx, wr.lkey, reinterpret_cast<uint64_t>(wr.local_addr), wr.length);
  if (int e = ibv_wr_complete(dci_->qpx)) {
    // Nothing of this request was queued; earlier ones may be in flight.
    if (use_.signaled_outstanding == 0 && use_.unsignaled_tail == 0)
      GiveBack(DciDisposition::kReturn);
    return VerbsError("post", e);
  }
  if (wr.signaled) {
    ++use_.signaled_outstanding;
    use_.unsignaled_tail = 0;
  } else {
    ++use_.unsignaled_tail;
  }
  return {};
}

Result<int> DciEndpoint::PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) {
  if (!dci_) return 0;  // nothing in flight
  std::vector<ibv_wc> wc(static_cast<size_t>(max));
  auto n = WaitForCompletions(dci_->cq.get(), dci_->channel.get(), wc.data(), max, wait);
  if (!n.ok()) return n.error();
  for (int i = 0; i < *n; ++i) {
    out[i] = {wc[i].wr_id, FromIbvStatus(wc[i].status),
              wc[i].opcode == IBV_WC_RDMA_READ ? Opcode::kRead : Opcode::kWrite, wc[i].byte_len};
    if (wc[i].status != IBV_WC_SUCCESS) use_.errored = true;
    if (use_.signaled_outstanding > 0) --use_.signaled_outstanding;
  }
  // Everything posted has completed (or the QP is in error): the DCI goes back now, not when the
  // endpoint dies, so drive reads and commits between posts hold none.
  if (*n > 0)
    if (auto how = DciAfterPoll(use_, false); how != DciDisposition::kKeep) GiveBack(how);
  return n;
}

}  // namespace
}  // namespace verbs

namespace verbs {
namespace {

using SrqPtr = std::unique_ptr<ibv_srq, Deleter<ibv_srq, ibv_destroy_srq>>;

// An opened device port: what both the server's DC initiators and a client's DC target need.
struct OpenedPort {
  ContextPtr ctx;
  PdPtr pd;
  ibv_port_attr attr{};
  uint8_t gid_index = 0;
  std::string device;
  DeviceLimits limits;
  int max_rd_atomic = 1;
  PathMtu mtu = PathMtu::k4096;  // the port's active MTU, at most 4096
};

// MINIO_RDMA_GID_INDEX, or a RoCE v2 entry holding an IPv4-mapped address (what cuObject tokens
// carry); IB uses 0. Read again after a GID change or the port coming back.
uint8_t PickGidIndex(ibv_context* ctx, const VerbsSettings& s, const ibv_port_attr& attr) {
  if (s.gid_index >= 0) return static_cast<uint8_t>(s.gid_index);
  for (int i = 0; i < attr.gid_tbl_len && attr.link_layer == IBV_LINK_LAYER_ETHERNET; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, static_cast<uint8_t>(s.port), static_cast<uint32_t>(i), &entry, 0))
      continue;
    std::array<uint8_t, 16> g;
    std::memcpy(g.data(), entry.gid.raw, 16);
    if (entry.gid_type == IBV_GID_TYPE_ROCE_V2 && GidToIpv4(g)) return static_cast<uint8_t>(i);
  }
  return 0;
}

// Picks the device and port (SelectDevice: MINIO_RDMA_DEVICE, or the first mlx5 device whose
// port is usable; the same choice `rdma check` reports), chooses the GID index (a RoCE v2
// IPv4-mapped entry unless set), reads the limits the plan is made from and allocates a PD.
Result<OpenedPort> OpenPort(const VerbsSettings& s) {
  auto devices = QueryDevices();
  if (!devices.ok())
    return MakeError(ErrorCode::kRDMANotSupported, "no RDMA device: " + devices.error().message);
  auto pick = SelectDevice(*devices, s.device, s.port, /*need_dc=*/true);
  if (!pick.ok()) return pick.error();
  int count = 0;
  std::unique_ptr<ibv_device*, decltype(&ibv_free_device_list)> list(ibv_get_device_list(&count),
                                                                     &ibv_free_device_list);
  ibv_device* dev = nullptr;
  for (int i = 0; list && i < count && !dev; ++i)
    if (pick->device == ibv_get_device_name(list.get()[i])) dev = list.get()[i];
  if (!dev)
    return MakeError(ErrorCode::kRDMANotSupported, "device " + pick->device + " disappeared");
  OpenedPort out;
  out.device = pick->device;
  out.ctx.reset(ibv_open_device(dev));
  if (!out.ctx) return VerbsError("ibv_open_device", errno);
  if (int e = ibv_query_port(out.ctx.get(), static_cast<uint8_t>(s.port), &out.attr))
    return VerbsError("ibv_query_port " + std::to_string(s.port), e);
  if (out.attr.state != IBV_PORT_ACTIVE)
    return MakeError(ErrorCode::kRDMANotSupported, "port " + std::to_string(s.port) + " of " +
                                                       out.device +
                                                       " is not active (MINIO_RDMA_PORT)");
  ibv_device_attr dattr{};
  if (int e = ibv_query_device(out.ctx.get(), &dattr)) return VerbsError("ibv_query_device", e);
  out.limits = {dattr.max_qp_wr, dattr.max_cqe};
  out.max_rd_atomic = std::clamp(dattr.max_qp_init_rd_atom, 1, 16);
  out.mtu =
      ClampPathMtu(static_cast<PathMtu>(out.attr.active_mtu),
                   PathMtuFromBytes(static_cast<uint64_t>(s.mtu_max)).value_or(PathMtu::k4096));
  out.gid_index = PickGidIndex(out.ctx.get(), s, out.attr);
  out.pd.reset(ibv_alloc_pd(out.ctx.get()));
  if (!out.pd) return VerbsError("ibv_alloc_pd", errno);
  return out;
}

// The client's DC target: one DCT (with the SRQ and CQ a DCT needs but never uses for one-sided
// traffic) that accepts RDMA WRITE/READ from any DCI presenting the DC access key.
class VerbsDcTarget final : public Target {
 public:
  static Result<std::unique_ptr<Target>> Start(OpenedPort port, const VerbsSettings& s) {
    std::unique_ptr<VerbsDcTarget> t(new VerbsDcTarget());
    t->ctx_ = std::move(port.ctx);
    t->pd_ = std::move(port.pd);
    t->cq_.reset(ibv_create_cq(t->ctx_.get(), 16, nullptr, nullptr, 0));
    if (!t->cq_) return VerbsError("ibv_create_cq", errno);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 1;
    sa.attr.max_sge = 1;
    t->srq_.reset(ibv_create_srq(t->pd_.get(), &sa));
    if (!t->srq_) return VerbsError("ibv_create_srq", errno);
    ibv_qp_init_attr_ex attr{};
    attr.qp_type = IBV_QPT_DRIVER;
    attr.send_cq = t->cq_.get();
    attr.recv_cq = t->cq_.get();
    attr.srq = t->srq_.get();
    attr.pd = t->pd_.get();
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    mlx5dv_qp_init_attr dv{};
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = s.dc_key;
    t->dct_.reset(mlx5dv_create_qp(t->ctx_.get(), &attr, &dv));
    if (!t->dct_) return VerbsError("mlx5dv_create_qp (DCT)", errno);
    // RESET -> INIT -> RTR: a DCT only receives, so it never goes to RTS.
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.pkey_index = static_cast<uint16_t>(s.pkey_index);
    qa.port_num = static_cast<uint8_t>(s.port);
    qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int e = ibv_modify_qp(t->dct_.get(), &qa,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return VerbsError("DCT to INIT", e);
    qa = {};
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = static_cast<ibv_mtu>(port.mtu);
    qa.min_rnr_timer = 12;
    qa.ah_attr.port_num = static_cast<uint8_t>(s.port);
    qa.ah_attr.is_global = 1;
    qa.ah_attr.grh.sgid_index = port.gid_index;
    qa.ah_attr.grh.hop_limit = 64;
    // What the DCT answers in (RDMA READ responses carry a PUT's payload, ACKs a GET's): the same
    // lossless class as the server's DCIs (mlx5 takes the DCT's tclass here and, on RoCE, its
    // Ethernet priority from the SL).
    qa.ah_attr.grh.traffic_class = static_cast<uint8_t>(s.traffic_class);
    qa.ah_attr.sl = static_cast<uint8_t>(s.service_level);
    if (int e = ibv_modify_qp(t->dct_.get(), &qa,
                              IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU))
      return VerbsError("DCT to RTR", e);
    ibv_gid gid{};
    if (int e = ibv_query_gid(t->ctx_.get(), static_cast<uint8_t>(s.port), port.gid_index, &gid))
      return VerbsError("ibv_query_gid", e);
    t->addr_.lid = port.attr.lid;
    t->addr_.qpn = t->dct_->qp_num;
    t->addr_.has_gid = port.attr.link_layer == IBV_LINK_LAYER_ETHERNET || port.attr.lid == 0;
    std::memcpy(t->addr_.gid.data(), gid.raw, 16);
    spdlog::info("verbs DC target: {} port {} GID index {}, DCT {:#x}", port.device, s.port,
                 port.gid_index, t->addr_.qpn);
    return std::unique_ptr<Target>(std::move(t));
  }

  ~VerbsDcTarget() override {
    dct_.reset();  // the DCT before its SRQ and CQ, all before the PD and context
    srq_.reset();
    cq_.reset();
    pd_.reset();
  }

  RemoteAddress address() const override { return addr_; }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    return VerbsMr::RegisterHost(pd_.get(), addr, length, access);
  }

  Result<std::unique_ptr<MemoryRegion>> RegisterDmabuf(int fd, uint64_t offset, size_t length,
                                                       uint64_t iova, unsigned access) override {
    int flags = IbvAccess(access);
    MrPtr mr(ibv_reg_dmabuf_mr(pd_.get(), offset, length, iova, fd, flags));
#ifdef IBV_ACCESS_RELAXED_ORDERING
    if (!mr && RetryWithoutRelaxedOrdering((flags & IBV_ACCESS_RELAXED_ORDERING) != 0, errno))
      mr.reset(ibv_reg_dmabuf_mr(pd_.get(), offset, length, iova, fd,
                                 flags & ~IBV_ACCESS_RELAXED_ORDERING));
#endif
    if (!mr) return RegistrationError("ibv_reg_dmabuf_mr", errno);
    // mr->addr is `offset` here: the region is where initiators address it, at the iova.
    RegionSpan span = DmabufRegionSpan(Reported(*mr), iova);
    return std::unique_ptr<MemoryRegion>(new VerbsMr(std::move(mr), span));
  }

 private:
  VerbsDcTarget() = default;
  ContextPtr ctx_;
  PdPtr pd_;
  CqPtr cq_;
  SrqPtr srq_;
  QpPtr dct_;
  RemoteAddress addr_;
};

}  // namespace
}  // namespace verbs

namespace verbs {
namespace {

// The IPv4 networks of a rail's port: its RoCE v2 GIDs with their netdev's prefix length.
Rail RailOf(const DevicePick& pick) {
  Rail rail{pick.device, {}};
  if (!pick.port_info) return rail;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) ifs = nullptr;
  for (const auto& g : pick.port_info->gids) {
    if (g.type != "RoCE v2") continue;
    auto ip = soft::ParseIpv4(g.gid);
    if (!ip) continue;
    RailNetwork n{*ip, 32};
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET) continue;
      uint32_t a = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
      uint32_t m = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
      if (a == *ip) n.prefix = __builtin_popcount(m);
    }
    rail.networks.push_back(n);
  }
  if (ifs) freeifaddrs(ifs);
  return rail;
}

Result<std::unique_ptr<Fabric>> CreateOneRail(const VerbsSettings& s);

}  // namespace
}  // namespace verbs

Result<std::unique_ptr<Fabric>> CreateVerbsFabric(const VerbsSettings& s) {
  auto devices = QueryDevices();
  if (!devices.ok())
    return MakeError(ErrorCode::kRDMANotSupported, "no RDMA device: " + devices.error().message);
  auto picks = SelectRails(*devices, s.device, s.port, /*need_dc=*/true);
  if (!picks.ok()) return picks.error();
  if (picks->size() == 1) {
    VerbsSettings one = s;
    one.device = (*picks)[0].device;
    return verbs::CreateOneRail(one);
  }
  std::vector<std::unique_ptr<Fabric>> fabrics;
  std::vector<Rail> rails;
  for (const auto& pick : *picks) {
    VerbsSettings one = s;
    one.device = pick.device;
    auto f = verbs::CreateOneRail(one);
    if (!f.ok()) return f.error();
    fabrics.push_back(std::move(f).value());
    rails.push_back(verbs::RailOf(pick));
  }
  spdlog::info("verbs fabric: {} rails; each request uses the rail on its token's subnet",
               fabrics.size());
  return MakeRailsFabric(std::move(fabrics), std::move(rails));
}

namespace verbs {
namespace {
Result<std::unique_ptr<Fabric>> CreateOneRail(const VerbsSettings& s) {
  auto port = verbs::OpenPort(s);
  if (!port.ok()) return port.error();
  const std::string device = port->device;
  const uint8_t gid_index = port->gid_index;
  const int active_mtu = PathMtuBytes(static_cast<PathMtu>(port->attr.active_mtu));
  verbs::PortPlan plan;
  plan.mtu = port->mtu;
  plan.dci_queues = ClampQueues(s.cq_depth, 1024, 0, port->limits);
  plan.max_rd_atomic = port->max_rd_atomic;
  auto fabric = std::make_unique<verbs::VerbsFabric>(std::move(port->ctx), std::move(port->pd), s,
                                                     gid_index, plan);
  if (auto st = fabric->Init(); !st.ok()) return st.error();
  if (auto st = fabric->StartEvents(); !st.ok()) return st.error();
  spdlog::info(
      "verbs fabric: {} port {} GID index {}, path MTU {} (port {}, MINIO_RDMA_MTU_MAX {}), {} DC "
      "initiators ({} send WRs, CQ {}), DC key {:#x}",
      device, s.port, gid_index, PathMtuBytes(plan.mtu), active_mtu, s.mtu_max, s.num_dcis,
      plan.dci_queues.send_wr, plan.dci_queues.cqe, s.dc_key);
  return std::unique_ptr<Fabric>(std::move(fabric));
}
}  // namespace
}  // namespace verbs

Result<std::unique_ptr<Target>> StartVerbsDcTarget(const VerbsSettings& s) {
  auto port = verbs::OpenPort(s);
  if (!port.ok()) return port.error();
  return verbs::VerbsDcTarget::Start(std::move(port).value(), s);
}

}  // namespace rdmastor::rdma
