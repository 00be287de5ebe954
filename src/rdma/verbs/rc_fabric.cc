// RDMA build: RC queue pairs connected with librdmacm (see rdma/rc.h). The initiator resolves the
// token's address and route, creates one RC QP with its own CQ per Connect and sends the endpoint
// id as private data; the target listens with rdma_cm, checks that id and accepts with a
// responder-only QP on the protection domain its memory is registered in.
#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "rdma/check.h"
#include "rdma/rc.h"
#include "rdma/rc_sessions.h"
#include "rdma/soft/net.h"
#include "rdma/soft/soft_wire.h"
#include "rdma/token.h"
#include "rdma/verbs/verbs_fabric.h"

namespace rdmastor::rdma {
namespace verbs {
namespace {

Error RcError(const std::string& what, int err) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "verbs RC: " + what + ": " + std::strerror(err ? err : EIO));
}

struct ChannelDeleter {
  void operator()(rdma_event_channel* c) const {
    if (c) rdma_destroy_event_channel(c);
  }
};
using ChannelPtr = std::unique_ptr<rdma_event_channel, ChannelDeleter>;

// The next rdma_cm event on `ch`, or nullptr once `wake_fd` is readable (its owner is stopping)
// or poll fails for good; a failed rdma_get_cm_event is retried. The event loop of the RC target
// and of the S3 RC listener. With timeout_ms >= 0 and timed_out: nullptr and *timed_out = true
// when no event came within it.
rdma_cm_event* NextCmEvent(rdma_event_channel* ch, int wake_fd, int timeout_ms = -1,
                           bool* timed_out = nullptr) {
  for (;;) {
    pollfd pfds[2] = {{ch->fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int n = poll(pfds, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return nullptr;
    }
    if (n == 0 && timed_out) {
      *timed_out = true;
      return nullptr;
    }
    if (pfds[1].revents) return nullptr;
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev) == 0) return ev;
  }
}

// Wakes an event loop waiting in NextCmEvent and waits for its thread to end.
void StopEventThread(int wake_write_fd, std::thread& thread) {
  if (wake_write_fd >= 0) {
    char c = 1;
    (void)!write(wake_write_fd, &c, 1);
  }
  if (thread.joinable()) thread.join();
}

// MINIO_RDMA_INTERNODE_TRAFFIC_CLASS: the ToS rdma_cm puts in the path it resolves (the GRH
// traffic class on RoCE). Set before the route is resolved; a listening id passes it to the ids
// it accepts. tos < 0: the default.
Status SetTos(rdma_cm_id* id, int tos) {
  if (tos < 0) return {};
  uint8_t v = static_cast<uint8_t>(tos);
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &v, sizeof(v)))
    return RcError("rdma_set_option(RDMA_OPTION_ID_TOS)", errno);
  return {};
}

// "a.b.c.d:port" of the other end of an rdma_cm id, for log lines.
std::string CmPeerName(rdma_cm_id* id) {
  const sockaddr* a = id ? rdma_get_peer_addr(id) : nullptr;
  if (!a || a->sa_family != AF_INET) return "an unknown address";
  const auto* in = reinterpret_cast<const sockaddr_in*>(a);
  return soft::net::Ipv4String(ntohl(in->sin_addr.s_addr)) + ":" +
         std::to_string(ntohs(in->sin_port));
}

// Waits (bounded) for the next CM event on `ch` and acknowledges it; with copy_data, keeps a copy
// of its private data (an accept's or reject's answer; only connection events carry any).
struct CmEvent {
  rdma_cm_event_type type;
  int status = 0;
  std::vector<uint8_t> data;
};
Result<CmEvent> NextEventWithData(rdma_event_channel* ch, std::chrono::milliseconds timeout,
                                  bool copy_data = true) {
  pollfd pfd{ch->fd, POLLIN, 0};
  int rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (rc == 0)
    return MakeError(ErrorCode::kRDMANotSupported, "verbs RC: no rdma_cm event within " +
                                                       std::to_string(timeout.count()) + " ms");
  if (rc < 0) return RcError("poll", errno);
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev)) return RcError("rdma_get_cm_event", errno);
  CmEvent out{ev->event, ev->status, {}};
  const auto* p = static_cast<const uint8_t*>(ev->param.conn.private_data);
  if (p && copy_data) out.data.assign(p, p + ev->param.conn.private_data_len);
  rdma_ack_cm_event(ev);
  return out;
}

Status Expect(rdma_event_channel* ch, rdma_cm_event_type want, std::chrono::milliseconds timeout,
              const std::string& where) {
  auto got = NextEventWithData(ch, timeout, /*copy_data=*/false);
  if (!got.ok()) return MakeError(got.error().code, got.error().message + " (" + where + ")");
  if (got->type == want) return {};
  return MakeError(
      ErrorCode::kRDMANotSupported,
      std::string("verbs RC: ") + where + ": " + rdma_event_str(got->type) +
          (got->status ? " (status " + std::to_string(got->status) + ")" : std::string()));
}

// The device rdma_cm binds `ip` to ("" when it is no RDMA interface's address, or loopback,
// which rdma_cm binds to an arbitrary device).
std::string BoundDevice(const std::string& ip) {
  auto addr = soft::ParseIpv4(ip);
  if (!addr || (*addr >> 24) == 127) return "";
  ChannelPtr ch(rdma_create_event_channel());
  rdma_cm_id* id = nullptr;
  if (!ch || rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP)) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(*addr);
  std::string name;
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) == 0 && id->verbs)
    name = ibv_get_device_name(id->verbs->device);
  rdma_destroy_id(id);
  return name;
}

// The device context rdma_cm uses, chosen by SelectRcDevice (the device the node's address
// belongs to, else the first usable one): QPs on rdma_cm ids must be created in a protection
// domain of that very context.
struct CmChoice {
  ibv_context* ctx = nullptr;
  bool bind_source = false;
};
Result<CmChoice> CmDevice(const RcSettings& s) {
  auto devices = QueryDevices();
  if (!devices.ok())
    return MakeError(ErrorCode::kRDMANotSupported, "no RDMA device: " + devices.error().message);
  const std::string bound = BoundDevice(s.source_ip);
  if (s.require_source_device && bound.empty())
    return MakeError(ErrorCode::kRDMANotSupported,
                     s.source_ip + " is not the address of an RDMA device (yet)");
  auto choice = SelectRcDevice(*devices, s.device, s.port, bound);
  if (!choice.ok()) return choice.error();
  const DevicePick* pick = &choice->pick;
  int n = 0;
  errno = 0;
  ibv_context** list = rdma_get_devices(&n);
  if (!list)
    return MakeError(
        ErrorCode::kRDMANotSupported,
        std::string("no RDMA device: rdma_get_devices: ") + std::strerror(errno ? errno : ENODEV));
  ibv_context* ctx = nullptr;
  for (int i = 0; i < n && !ctx; ++i)
    if (pick->device == ibv_get_device_name(list[i]->device)) ctx = list[i];
  rdma_free_devices(list);  // frees the array; the contexts stay open for rdma_cm
  if (!ctx)
    return MakeError(ErrorCode::kRDMANotSupported,
                     "rdma_cm does not list " + pick->device + " (MINIO_RDMA_DEVICE)");
  return CmChoice{ctx, choice->bind_source};
}

DeviceLimits Limits(ibv_context* ctx) {
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) != 0) return {};
  return {attr.max_qp_wr, attr.max_cqe};
}

int MaxReadAtomic(ibv_context* ctx, bool initiator) {
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) != 0) return 1;
  return std::clamp(initiator ? attr.max_qp_init_rd_atom : attr.max_qp_rd_atom, 1, 16);
}

// An rdma_cm id bound to an address of one device, on a channel of its own. rdma_cm tells it
// DEVICE_REMOVAL when the device goes (rdma link delete, a driver unbind), and while it lives
// librdmacm keeps its context of the device open: the PD, CQs and registrations a fabric makes in
// that context must be freed before it, so it is destroyed last. The kernel removes the device's
// uverbs node first, so a device that left the verbs list (its dev_path is gone) counts as
// removed too: on drivers that cannot disassociate a context (rxe, siw) that is all a process
// sees until it closes every object of the device. Thread-safe.
class DeviceSentinel {
 public:
  // ip: an IPv4 address (host order) of the device; 0: the first IPv4-mapped GID of `port`.
  DeviceSentinel(ibv_context* ctx, uint32_t ip, int port)
      : name_(ibv_get_device_name(ctx->device)), dev_path_(ctx->device->dev_path) {
    if (!ip) ip = Ipv4OfPort(ctx, port);
    ch_.reset(rdma_create_event_channel());
    if (!ip || !ch_ || rdma_create_id(ch_.get(), &id_, nullptr, RDMA_PS_TCP)) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    if (rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&a)) != 0 || id_->verbs != ctx) {
      rdma_destroy_id(id_);
      id_ = nullptr;
      return;
    }
    if (int fl = fcntl(ch_->fd, F_GETFL); fl >= 0) fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK);
  }
  ~DeviceSentinel() {
    if (id_) rdma_destroy_id(id_);
    ch_.reset();
    // librdmacm closes its context of a removed device when it next syncs its device list and
    // nobody holds the device: now. (It cannot when no RDMA device is left at all: docs/
    // runbook.md, "RDMA device removal".)
    if (removed_)
      if (ibv_context** list = rdma_get_devices(nullptr)) rdma_free_devices(list);
  }
  const std::string& device() const { return name_; }

  // "" while the device is there; else how it went.
  std::string Gone() {
    std::lock_guard lock(mu_);
    if (removed_) return why_;
    if (id_) {
      rdma_cm_event* ev = nullptr;
      while (rdma_get_cm_event(ch_.get(), &ev) == 0) {
        bool removal = ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL;
        rdma_ack_cm_event(ev);
        if (removal) return Mark("rdma_cm reported DEVICE_REMOVAL");
      }
    }
    if (access(dev_path_.c_str(), F_OK) != 0) return Mark("it left the verbs device list");
    return "";
  }
  // The listener saw DEVICE_REMOVAL on an id of this device.
  void Removed(const std::string& how) {
    std::lock_guard lock(mu_);
    if (!removed_) Mark(how);
  }

 private:
  std::string Mark(const std::string& how) {
    removed_ = true;
    why_ = "the RDMA device " + name_ + " was removed (" + how + ")";
    spdlog::error("verbs RC: {}: freeing everything made on it", why_);
    return why_;
  }
  static uint32_t Ipv4OfPort(ibv_context* ctx, int port) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pa) != 0) return 0;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid g{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &g) != 0) continue;
      static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
      if (std::memcmp(g.raw, kMapped, 12) == 0)
        return uint32_t{g.raw[12]} << 24 | uint32_t{g.raw[13]} << 16 | uint32_t{g.raw[14]} << 8 |
               g.raw[15];
    }
    return 0;
  }

  std::string name_, dev_path_;
  std::mutex mu_;
  ChannelPtr ch_;
  rdma_cm_id* id_ = nullptr;
  bool removed_ = false;
  std::string why_;
};

// The fabric's health as a look at its device finds it (ObserveDevice), at most every 250 ms:
// requests ask on every call.
class DeviceLook {
 public:
  DeviceLook(ibv_context* ctx, int port) : ctx_(ctx), port_(port) {}
  FabricState Now(DeviceSentinel& sentinel) {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now < next_) return state_;
    next_ = now + std::chrono::milliseconds(250);
    DeviceObservation seen;
    std::string gone = sentinel.Gone();
    seen.removed = !gone.empty();
    if (!seen.removed) {
      ibv_port_attr pa{};
      seen.query_failed = ibv_query_port(ctx_, static_cast<uint8_t>(port_), &pa) != 0;
      seen.port_active = pa.state == IBV_PORT_ACTIVE;
    }
    FabricState next = ObserveDevice(seen, port_, state_);
    if (seen.removed && next.health == FabricHealth::kDown && state_.health != FabricHealth::kDown)
      next.reason = gone + "; reopening it when it is back";
    if (next.health != state_.health)
      spdlog::warn("verbs RC: {} port {}: {}{}", sentinel.device(), port_,
                   FabricHealthName(next.health), next.reason.empty() ? "" : ": " + next.reason);
    state_ = next;
    return state_;
  }

 private:
  ibv_context* ctx_;
  int port_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};
  FabricState state_;
};

class RcMr final : public MemoryRegion {
 public:
  explicit RcMr(ibv_mr* mr, RegionSpan span)
      : MemoryRegion(reinterpret_cast<char*>(span.addr), span.length, mr->lkey, mr->rkey),
        mr_(mr) {}
  ~RcMr() override { ibv_dereg_mr(mr_); }

 private:
  ibv_mr* mr_;
};

Result<std::unique_ptr<MemoryRegion>> Register(ibv_pd* pd, void* addr, size_t len,
                                               unsigned access) {
  ibv_mr* mr = RegisterHostMemory(pd, addr, len, access);
  if (!mr) return RegistrationError("ibv_reg_mr", errno);
  return std::unique_ptr<MemoryRegion>(new RcMr(mr, HostRegionSpan(Reported(*mr))));
}

// One RC QP toward one target, with its own CQ and event channel.
class RcEndpoint final : public Endpoint {
 public:
  RcEndpoint(ChannelPtr ch, rdma_cm_id* id) : ch_(std::move(ch)), id_(id) {}
  ~RcEndpoint() override {
    if (connected_) rdma_disconnect(id_);  // the QP goes to the error state: the rest flushes
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    ibv_wc wc[16];
    while (cq_ && outstanding_ > 0 && std::chrono::steady_clock::now() < deadline) {
      int n = ibv_poll_cq(cq_, 16, wc);
      if (n < 0) break;
      outstanding_ = std::max(0, outstanding_ - n);
      if (n == 0) std::this_thread::yield();
    }
    if (id_->qp) rdma_destroy_qp(id_);
    if (cq_) ibv_destroy_cq(cq_);
    if (cc_) ibv_destroy_comp_channel(cc_);  // after its CQ: every event was acknowledged
    rdma_destroy_id(id_);
  }

  Status PostSend(const WorkRequest& wr) override {
    ibv_sge sge{reinterpret_cast<uint64_t>(wr.local_addr), wr.length, wr.lkey};
    ibv_send_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.opcode = wr.opcode == Opcode::kWrite ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    w.send_flags = wr.signaled ? IBV_SEND_SIGNALED : 0;
    w.wr.rdma.remote_addr = wr.remote_addr;
    w.wr.rdma.rkey = wr.rkey;
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(id_->qp, &w, &bad)) return RcError("ibv_post_send", e);
    if (wr.signaled) ++outstanding_;
    return {};
  }

  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) override {
    std::vector<ibv_wc> wc(static_cast<size_t>(std::max(1, max)));
    // A short spin, then the completion channel (WaitForCompletions), as the DC initiators do.
    auto n = WaitForCompletions(cq_, cc_, wc.data(), std::max(1, max), wait);
    if (!n.ok()) return n.error();
    for (int i = 0; i < *n; ++i) {
      out[i] = {wc[i].wr_id, FromIbvStatus(wc[i].status),
                wc[i].opcode == IBV_WC_RDMA_READ ? Opcode::kRead : Opcode::kWrite, wc[i].byte_len};
      if (outstanding_ > 0) --outstanding_;
    }
    return n;
  }

  bool Alive() override {
    if (!connected_ || dead_) return false;
    // The connection's cm events arrive on its own channel: a DISCONNECTED (the target went
    // away or disconnected) or any other event after ESTABLISHED ends the channel's life.
    pollfd pfd{ch_->fd, POLLIN, 0};
    if (poll(&pfd, 1, 0) == 0) return true;
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch_.get(), &ev) == 0) rdma_ack_cm_event(ev);
    dead_ = true;  // the QP is (or will be) in the error state: never reused
    return false;
  }

  rdma_event_channel* channel() { return ch_.get(); }
  rdma_cm_id* id() { return id_; }
  void set_cq(ibv_cq* cq, ibv_comp_channel* cc) {
    cq_ = cq;
    cc_ = cc;
  }
  void set_connected() { connected_ = true; }

 private:
  ChannelPtr ch_;  // destroyed last
  rdma_cm_id* id_;
  ibv_cq* cq_ = nullptr;
  ibv_comp_channel* cc_ = nullptr;
  bool connected_ = false;
  bool dead_ = false;
  int outstanding_ = 0;
};

class RcFabric final : public Fabric {
 public:
  RcFabric(ibv_context* ctx, ibv_pd* pd, RcSettings s, bool bind_source,
           std::unique_ptr<DeviceSentinel> sentinel)
      : ctx_(ctx),
        pd_(pd),
        settings_(std::move(s)),
        bind_source_(bind_source),
        rd_atomic_(MaxReadAtomic(ctx, true)),
        queues_(ClampQueues(settings_.cq_depth, 0, /*recv_wr=*/1, Limits(ctx))),
        sentinel_(std::move(sentinel)),
        look_(ctx, settings_.port) {}
  ~RcFabric() override { ibv_dealloc_pd(pd_); }  // before sentinel_: it keeps ctx_ open
  std::string_view name() const override { return "verbs"; }

  // Port down: 501 until it is active again; device removed or failed: 501, and the owner frees
  // this fabric and everything made with it, then creates a new one (S3RdmaService's monitor).
  std::string Unavailable() const override {
    auto st = look_.Now(*sentinel_);
    return st.health == FabricHealth::kReady ? "" : st.reason;
  }
  bool NeedsReopen() const override { return look_.Now(*sentinel_).health == FabricHealth::kDown; }
  DeviceSentinel& sentinel() { return *sentinel_; }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    return Register(pd_, addr, length, access);
  }

  Result<std::unique_ptr<RcListener>> ListenRc(const std::string& bind_ip, uint16_t port,
                                               RcAdmission admission) override;

  // A CQ with its completion channel (non-blocking) and an RC QP on `id` sized for initiating
  // one-sided requests, owned by `ep` from here on.
  Status MakeInitiatorQp(RcEndpoint& ep, rdma_cm_id* id) {
    ibv_comp_channel* cc = ibv_create_comp_channel(ctx_);
    if (!cc) return RcError("ibv_create_comp_channel", errno);
    if (int fl = fcntl(cc->fd, F_GETFL); fl < 0 || fcntl(cc->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      int e = errno;
      ibv_destroy_comp_channel(cc);
      return RcError("completion channel O_NONBLOCK", e);
    }
    // Spread over the device's completion vectors (verbs_fabric.cc's DCIs do the same).
    ibv_cq* cq = ibv_create_cq(ctx_, queues_.cqe, nullptr, cc,
                               CompletionVector(next_vector_++, ctx_->num_comp_vectors));
    if (!cq) {
      int e = errno;
      ibv_destroy_comp_channel(cc);
      return RcError("ibv_create_cq", e);
    }
    ep.set_cq(cq, cc);
    ibv_qp_init_attr qa{};
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = queues_.send_wr;
    qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id, pd_, &qa)) return RcError("rdma_create_qp", errno);
    return {};
  }
  ibv_context* context() const { return ctx_; }
  int rd_atomic() const { return rd_atomic_; }
  const RcSettings& settings() const { return settings_; }

  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& remote,
                                            const RequestOrigin& origin) override {
    auto where = ResolveRcTarget(remote, origin, settings_.allow);
    if (!where.ok()) return where.error();
    std::string name = soft::net::Ipv4String(where->ip) + ":" + std::to_string(where->port);
    ChannelPtr ch(rdma_create_event_channel());
    if (!ch) return RcError("rdma_create_event_channel", errno);
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP))
      return RcError("rdma_create_id", errno);
    auto ep = std::make_unique<RcEndpoint>(std::move(ch), id);  // owns id from here on
    RS_RETURN_IF_ERROR(SetTos(id, settings_.tos));
    const auto t = settings_.connect_timeout;
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(where->port);
    dst.sin_addr.s_addr = htonl(where->ip);
    // From the node's own address when it is on this device: the route is then pinned to its
    // netdev (rdma_cm binds the id there), not whichever interface the routing table prefers.
    sockaddr_in src{};
    src.sin_family = AF_INET;
    auto source = soft::ParseIpv4(settings_.source_ip);
    if (source) src.sin_addr.s_addr = htonl(*source);
    if (rdma_resolve_addr(id, bind_source_ && source ? reinterpret_cast<sockaddr*>(&src) : nullptr,
                          reinterpret_cast<sockaddr*>(&dst), static_cast<int>(t.count())))
      return RcError("rdma_resolve_addr " + name, errno);
    RS_RETURN_IF_ERROR(Expect(ep->channel(), RDMA_CM_EVENT_ADDR_RESOLVED, t, "resolve " + name));
    if (rdma_resolve_route(id, static_cast<int>(t.count())))
      return RcError("rdma_resolve_route " + name, errno);
    RS_RETURN_IF_ERROR(Expect(ep->channel(), RDMA_CM_EVENT_ROUTE_RESOLVED, t, "route " + name));
    if (id->verbs != ctx_)
      return MakeError(ErrorCode::kRDMANotSupported,
                       "verbs RC: the route to " + name + " leaves through " +
                           ibv_get_device_name(id->verbs->device) + ", not " +
                           ibv_get_device_name(ctx_->device) + " (MINIO_RDMA_DEVICE)");
    RS_RETURN_IF_ERROR(MakeInitiatorQp(*ep, id));
    std::vector<uint8_t> proof;
    if (settings_.prove) {
      // Bound to the address the target will see this connection come from.
      const sockaddr* self = rdma_get_local_addr(id);
      uint32_t self_ip = self && self->sa_family == AF_INET
                             ? ntohl(reinterpret_cast<const sockaddr_in*>(self)->sin_addr.s_addr)
                             : 0;
      proof = settings_.prove({where->ip, where->port, remote.qpn, self_ip});
    }
    auto data = EncodeRcConnectData(remote.qpn, proof);
    rdma_conn_param cp{};
    cp.private_data = data.data();
    cp.private_data_len = static_cast<uint8_t>(data.size());
    cp.initiator_depth = static_cast<uint8_t>(rd_atomic_);  // RDMA READs in flight
    cp.responder_resources = 0;                             // nobody reads from us
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    if (rdma_connect(id, &cp)) return RcError("rdma_connect " + name, errno);
    RS_RETURN_IF_ERROR(Expect(ep->channel(), RDMA_CM_EVENT_ESTABLISHED, t,
                              "connect " + name + " endpoint " + std::to_string(remote.qpn)));
    ep->set_connected();
    return std::unique_ptr<Endpoint>(std::move(ep));
  }

 private:
  ibv_context* ctx_;
  ibv_pd* pd_;
  RcSettings settings_;
  bool bind_source_;  // connections leave from settings_.source_ip (SelectRcDevice)
  int rd_atomic_;
  QueueSizes queues_;  // per QP; its CQ holds every completion that can be outstanding
  std::atomic<uint64_t> next_vector_{0};  // CQs created so far (CompletionVector)
  std::unique_ptr<DeviceSentinel> sentinel_;
  mutable DeviceLook look_;
};

// The target: an rdma_cm listener on one IPv4 address; every accepted connection is a
// responder-only RC QP on the PD the exposed memory is registered in.
class RcTarget final : public Target {
 public:
  ~RcTarget() override {
    StopEventThread(wake_[1], thread_);
    for (auto& c : conns_) DropConn(c);
    for (auto& [domain, pd] : domain_pds_)
      if (ibv_dealloc_pd(pd) != 0)
        spdlog::warn("verbs RC target: protection domain {} still in use at shutdown", domain);
    if (listen_) rdma_destroy_id(listen_);
    if (pd_ && ibv_dealloc_pd(pd_) != 0)
      spdlog::warn("verbs RC target: protection domain still in use at shutdown");
    for (int fd : wake_)
      if (fd >= 0) close(fd);
    sentinel_.reset();  // last: librdmacm's context stays open while it lives
  }

  static Result<std::unique_ptr<Target>> Start(const std::string& bind_ip, const RcSettings& s) {
    auto ip = soft::ParseIpv4(bind_ip);
    if (!ip)
      return MakeError(ErrorCode::kInvalidArgument,
                       "verbs RC target: '" + bind_ip + "' is not an IPv4 address");
    std::unique_ptr<RcTarget> t(new RcTarget());
    t->ip_ = *ip;
    t->ch_.reset(rdma_create_event_channel());
    if (!t->ch_) return RcError("rdma_create_event_channel", errno);
    if (rdma_create_id(t->ch_.get(), &t->listen_, nullptr, RDMA_PS_TCP))
      return RcError("rdma_create_id", errno);
    RS_RETURN_IF_ERROR(SetTos(t->listen_, s.tos));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(*ip);
    if (rdma_bind_addr(t->listen_, reinterpret_cast<sockaddr*>(&a)))
      return RcError("rdma_bind_addr " + bind_ip, errno);
    if (!t->listen_->verbs)
      return MakeError(ErrorCode::kRDMANotSupported,
                       "verbs RC target: " + bind_ip + " is not the address of an RDMA interface");
    if (!DeviceAllowed(s.device, ibv_get_device_name(t->listen_->verbs->device)))
      return MakeError(ErrorCode::kRDMANotSupported,
                       "verbs RC target: " + bind_ip + " belongs to " +
                           ibv_get_device_name(t->listen_->verbs->device) + ", not " + s.device +
                           " (MINIO_RDMA_DEVICE)");
    t->pd_ = ibv_alloc_pd(t->listen_->verbs);
    if (!t->pd_) return RcError("ibv_alloc_pd", errno);
    // Its owner (InternodeRdma's device monitor) asks Lost() and frees the target when it says so.
    t->sentinel_ = std::make_unique<DeviceSentinel>(t->listen_->verbs, *ip, s.port);
    t->responder_ = MaxReadAtomic(t->listen_->verbs, false);
    t->verify_ = s.verify;
    if (rdma_listen(t->listen_, 64)) return RcError("rdma_listen", errno);
    t->port_ = ntohs(rdma_get_src_port(t->listen_));
    std::mt19937 rng{std::random_device{}()};
    t->endpoint_ = std::uniform_int_distribution<uint32_t>(1, 0xffffff)(rng);
    if (pipe2(t->wake_, O_CLOEXEC) != 0) return RcError("pipe2", errno);
    t->thread_ = std::thread([p = t.get()] { p->EventLoop(); });
    return std::unique_ptr<Target>(std::move(t));
  }

  std::string Lost() override { return sentinel_ ? sentinel_->Gone() : std::string(); }

  RemoteAddress address() const override {
    RemoteAddress a;
    a.lid = port_;
    a.qpn = endpoint_;
    a.has_gid = true;
    a.gid = Ipv4ToGid(ip_);
    return a;
  }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    return Register(pd_, addr, length, access);
  }
  // Per-peer protection domains (issue 37 item 9): an rkey of one domain's MR is refused with a
  // remote access error on a QP of any other PD, so a connection reaches only the memory
  // registered for the peer its proof named.
  Result<std::unique_ptr<MemoryRegion>> RegisterMemoryIn(uint32_t domain, void* addr,
                                                         size_t length, unsigned access) override {
    auto pd = PdFor(domain);
    if (!pd.ok()) return pd.error();
    return Register(*pd, addr, length, access);
  }

 private:
  Result<ibv_pd*> PdFor(uint32_t domain) {
    if (domain == 0) return pd_;
    std::lock_guard lock(pds_mu_);
    auto it = domain_pds_.find(domain);
    if (it != domain_pds_.end()) return it->second;
    ibv_pd* pd = ibv_alloc_pd(listen_->verbs);
    if (!pd) return RcError("ibv_alloc_pd (peer domain " + std::to_string(domain) + ")", errno);
    domain_pds_.emplace(domain, pd);
    return pd;
  }

  struct Conn {
    rdma_cm_id* id = nullptr;
    ibv_cq* cq = nullptr;
    bool established = false;  // RTS: may send (a keep-alive before that fails to post)
    bool probing = false;      // a keep-alive write is outstanding
    int unanswered = 0;        // rounds it has been outstanding
  };

  // A responder-only QP never sends, so it never learns that its peer is gone: a process that
  // dies has its kernel send a disconnect, but a crashed host, a cut link or a lost disconnect
  // sends nothing, and the QP, its CQ and the rdma_cm id were held until shutdown (issue 37,
  // item 8). Every kKeepAliveMs the event loop sends each connection a zero-byte RDMA WRITE (the
  // responder checks no key or address for zero bytes: IBTA C9-88). A connection is freed when
  // that write completes in error (the QP's retries ran out) or is still unanswered after
  // kKeepAliveRounds rounds: the retry count comes from the initiator's request, and 7, which
  // our initiators send, means "retry forever" to some devices (rxe: measured, the write stayed
  // outstanding with completer_retry_err climbing).
  static constexpr int kKeepAliveMs = 5000;
  static constexpr int kKeepAliveRounds = 3;

  RcTarget() = default;

  static void DropConn(Conn& c) {
    if (c.id && c.id->qp) rdma_destroy_qp(c.id);
    if (c.cq) ibv_destroy_cq(c.cq);
    if (c.id) rdma_destroy_id(c.id);
    c = {};
  }

  // Creates the responder QP and accepts; false when the request is not ours or fails (logged:
  // the initiator sees only a REJECTED event).
  bool Accept(rdma_cm_event* ev) {
    auto endpoint =
        DecodeRcConnectData(ev->param.conn.private_data, ev->param.conn.private_data_len);
    const std::string from = CmPeerName(ev->id);
    if (!endpoint || *endpoint != endpoint_) {
      spdlog::warn("verbs RC target: refused a connection from {}: it names endpoint {}, not {}",
                   from, endpoint ? std::to_string(*endpoint) : std::string("none"), endpoint_);
      return false;
    }
    if (ev->id->verbs != pd_->context) {
      spdlog::warn("verbs RC target: refused a connection from {}: it arrived on {}, not {}", from,
                   ev->id->verbs ? ibv_get_device_name(ev->id->verbs->device) : "no device",
                   ibv_get_device_name(pd_->context->device));
      return false;
    }
    ibv_pd* pd = pd_;
    if (verify_) {
      // Before anything is created for it: a connection that cannot prove which peer opens it
      // gets no QP (the verifier counts the refusal).
      const sockaddr* src = rdma_get_peer_addr(ev->id);
      uint32_t src_ip = src && src->sa_family == AF_INET
                            ? ntohl(reinterpret_cast<const sockaddr_in*>(src)->sin_addr.s_addr)
                            : 0;
      auto proof =
          DecodeRcConnectProof(ev->param.conn.private_data, ev->param.conn.private_data_len);
      auto domain = verify_({ip_, port_, endpoint_, src_ip}, proof.data(), proof.size());
      if (!domain.ok()) {
        spdlog::warn("verbs RC target: refused a connection from {}: {}", from,
                     domain.error().message);
        return false;
      }
      auto got = PdFor(*domain);
      if (!got.ok()) {
        spdlog::warn("verbs RC target: refused a connection from {}: {}", from,
                     got.error().message);
        return false;
      }
      pd = *got;
    }
    Conn c{ev->id, ibv_create_cq(ev->id->verbs, 4, nullptr, nullptr, 0)};
    if (!c.cq) {
      spdlog::warn("verbs RC target: refused a connection from {}: ibv_create_cq: {}", from,
                   std::strerror(errno));
      return false;
    }
    ibv_qp_init_attr qa{};
    qa.send_cq = c.cq;
    qa.recv_cq = c.cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = 1;
    qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    rdma_conn_param cp{};
    cp.responder_resources = static_cast<uint8_t>(responder_);  // RDMA READs served at once
    cp.initiator_depth = 0;
    cp.rnr_retry_count = 7;
    if (rdma_create_qp(c.id, pd, &qa) || rdma_accept(c.id, &cp)) {
      spdlog::warn("verbs RC target: refused a connection from {}: {}: {}", from,
                   c.id->qp ? "rdma_accept" : "rdma_create_qp", std::strerror(errno));
      if (c.id->qp) rdma_destroy_qp(c.id);
      ibv_destroy_cq(c.cq);
      return false;
    }
    conns_.push_back(c);
    return true;
  }

  // One keep-alive round: reaps the last round's completions, frees the connections whose peer
  // did not answer (or whose QP can no longer send), and probes the others again.
  void KeepAlive() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      ibv_wc wc[4];
      int n = ibv_poll_cq(it->cq, 4, wc);
      std::string why;
      for (int i = 0; i < n && why.empty(); ++i)
        if (wc[i].status != IBV_WC_SUCCESS) why = ibv_wc_status_str(wc[i].status);
      if (n < 0) why = "ibv_poll_cq failed";
      if (n > 0) {
        it->probing = false;
        it->unanswered = 0;
      } else if (it->probing && ++it->unanswered >= kKeepAliveRounds) {
        why = "a keep-alive unanswered for " +
              std::to_string(kKeepAliveRounds * kKeepAliveMs / 1000) + " s";
      }
      if (why.empty() && it->established && !it->probing) {
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.opcode = IBV_WR_RDMA_WRITE;  // zero bytes, no SGE: only the peer's acknowledgement
        wr.send_flags = IBV_SEND_SIGNALED;
        if (int rc = ibv_post_send(it->id->qp, &wr, &bad); rc != 0)
          why = std::string("posting a keep-alive: ") + std::strerror(rc);
        else
          it->probing = true;
      }
      if (why.empty()) {
        ++it;
        continue;
      }
      spdlog::warn("verbs RC target: the connection from {} is gone ({}): freed",
                   CmPeerName(it->id), why);
      DropConn(*it);
      it = conns_.erase(it);
    }
  }

  void EventLoop() {
    auto next_probe = std::chrono::steady_clock::now() + std::chrono::milliseconds(kKeepAliveMs);
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now >= next_probe) {
        KeepAlive();
        next_probe = now + std::chrono::milliseconds(kKeepAliveMs);
      }
      bool tick = false;
      int wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next_probe - now).count());
      rdma_cm_event* ev = NextCmEvent(ch_.get(), wake_[0], std::max(wait_ms, 1), &tick);
      if (!ev) {
        if (tick) continue;
        return;
      }
      rdma_cm_id* id = ev->id;
      switch (ev->event) {
        case RDMA_CM_EVENT_CONNECT_REQUEST:
          if (!Accept(ev)) {
            rdma_reject(id, nullptr, 0);
            rdma_ack_cm_event(ev);
            rdma_destroy_id(id);
            continue;
          }
          break;
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_REJECTED: {
          if (ev->event == RDMA_CM_EVENT_DISCONNECTED) rdma_disconnect(id);
          rdma_ack_cm_event(ev);
          for (auto it = conns_.begin(); it != conns_.end(); ++it)
            if (it->id == id) {
              DropConn(*it);
              conns_.erase(it);
              break;
            }
          continue;
        }
        case RDMA_CM_EVENT_ESTABLISHED:
          for (auto& c : conns_)
            if (c.id == id) c.established = true;
          break;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
          if (sentinel_) sentinel_->Removed("rdma_cm reported DEVICE_REMOVAL to the RC target");
          break;
        default:
          break;
      }
      rdma_ack_cm_event(ev);
    }
  }

  ChannelPtr ch_;  // destroyed last
  rdma_cm_id* listen_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint32_t ip_ = 0;
  uint16_t port_ = 0;
  uint32_t endpoint_ = 0;
  int responder_ = 1;
  ConnectVerifier verify_;  // unset: every connection in pd_ (no proof asked)
  std::mutex pds_mu_;
  std::map<uint32_t, ibv_pd*> domain_pds_;  // per-peer PDs by domain (PdFor), besides pd_
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::list<Conn> conns_;  // touched by the event loop only (and the destructor after it)
  std::unique_ptr<DeviceSentinel> sentinel_;
};

// S3 over RDMA on RC (rc_sessions.h): the server's rdma_cm listener for the connections clients
// open. A connect request passes the limits before anything is made for it; then the id gets an
// initiator QP on the fabric's PD (where the staging buffers are registered) and is accepted with
// a connection id proposed here in the private data (a soft::wire::RcWelcome, the soft fabric's
// own answer); on its ESTABLISHED it moves to its own event channel (whose DISCONNECTED ends the
// endpoint: RcEndpoint::Alive) and is admitted under that id. The loop never waits for one
// client: a handshake not completed within kEstablishTimeout is freed. Host byte order, as the
// soft wire.
class RcServerListener final : public RcListener {
 public:
  static constexpr auto kEstablishTimeout = std::chrono::seconds(3);
  static constexpr size_t kMaxAccepting = 64;  // handshakes pending at once, as the soft listener

  static Result<std::unique_ptr<RcListener>> Start(RcFabric* fabric, const std::string& bind_ip,
                                                   uint16_t port, RcAdmission admission) {
    auto ip = soft::ParseIpv4(bind_ip);
    if (!ip)
      return MakeError(ErrorCode::kInvalidArgument,
                       "verbs RC: '" + bind_ip + "' is not an IPv4 address to listen on");
    std::unique_ptr<RcServerListener> l(new RcServerListener(fabric, std::move(admission)));
    l->ch_.reset(rdma_create_event_channel());
    if (!l->ch_) return RcError("rdma_create_event_channel", errno);
    if (rdma_create_id(l->ch_.get(), &l->listen_, nullptr, RDMA_PS_TCP))
      return RcError("rdma_create_id", errno);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(*ip);
    a.sin_port = htons(port);
    if (rdma_bind_addr(l->listen_, reinterpret_cast<sockaddr*>(&a)))
      return RcError("rdma_bind_addr " + bind_ip + ":" + std::to_string(port), errno);
    if (l->listen_->verbs && l->listen_->verbs != fabric->context())
      return MakeError(ErrorCode::kRDMANotSupported,
                       "verbs RC: " + bind_ip + " belongs to " +
                           ibv_get_device_name(l->listen_->verbs->device) + ", not " +
                           ibv_get_device_name(fabric->context()->device));
    if (rdma_listen(l->listen_, 64)) return RcError("rdma_listen", errno);
    l->port_ = ntohs(rdma_get_src_port(l->listen_));
    if (pipe2(l->wake_, O_CLOEXEC) != 0) return RcError("pipe2", errno);
    l->thread_ = std::thread([p = l.get()] { p->EventLoop(); });
    return std::unique_ptr<RcListener>(std::move(l));
  }

  ~RcServerListener() override {
    StopEventThread(wake_[1], thread_);
    for (const Accepting& a : accepting_) Forget(a.proposed);
    if (listen_) rdma_destroy_id(listen_);
    for (int fd : wake_)
      if (fd >= 0) close(fd);
  }
  uint16_t port() const override { return port_; }

 private:
  RcServerListener(RcFabric* fabric, RcAdmission admission)
      : fabric_(fabric), admission_(std::move(admission)) {}

  static void Reject(rdma_cm_id* id, uint32_t status) {
    soft::wire::RcWelcome w;
    w.status = status;
    rdma_reject(id, &w, sizeof(w));
  }

  // An accepted connection waiting for its ESTABLISHED.
  struct Accepting {
    std::unique_ptr<RcEndpoint> ep;
    RcPeer peer;
    uint64_t proposed = 0;
    std::chrono::steady_clock::time_point deadline;
  };

  // One connect request (acknowledged by the caller only after this returns false: rejected).
  bool Handle(rdma_cm_event* ev) {
    rdma_cm_id* id = ev->id;
    const sockaddr* peer = rdma_get_peer_addr(id);
    soft::wire::Hello hello;
    bool ours = peer && peer->sa_family == AF_INET && ev->param.conn.private_data &&
                ev->param.conn.private_data_len >= sizeof(hello);
    if (ours) std::memcpy(&hello, ev->param.conn.private_data, sizeof(hello));
    if (!ours || hello.magic != soft::wire::kRcMagic || id->verbs != fabric_->context()) {
      Reject(id, soft::wire::kRcMalformed);
      return false;
    }
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(peer)->sin_addr.s_addr);
    if (accepting_.size() >= kMaxAccepting || !admission_.can_admit(ip).ok()) {
      Reject(id, soft::wire::kRcRefused);
      return false;
    }
    // The peer's QP as the CM carried it; its GID is the IPv4-mapped source (RoCE v2), what a
    // client token on this connection must name.
    RcPeer rp{ip, ev->param.conn.qp_num & 0xffffff, Ipv4ToGid(ip)};
    pending_ = {id, rp};
    return true;
  }

  void Expect(uint64_t id) {
    if (admission_.expect) admission_.expect(id);
  }
  void Forget(uint64_t id) {
    if (admission_.forget) admission_.forget(id);
  }

  // After the request's event was acknowledged: a QP and the accept. The id stays on the
  // listener's channel until its ESTABLISHED (Established), so that a client that never
  // completes the handshake holds one pending entry until kEstablishTimeout, never the loop.
  void Accept() {
    auto [id, peer] = pending_;
    pending_ = {};
    ChannelPtr ch(rdma_create_event_channel());  // the connection's own, from ESTABLISHED on
    if (!ch) {
      Reject(id, soft::wire::kRcRefused);
      rdma_destroy_id(id);
      return;
    }
    auto ep = std::make_unique<RcEndpoint>(std::move(ch), id);  // owns id from here on
    if (!fabric_->MakeInitiatorQp(*ep, id).ok()) {
      Reject(id, soft::wire::kRcRefused);
      return;  // ep destroys the id
    }
    uint64_t proposed = RcSessions::NewId();
    soft::wire::RcWelcome w;
    w.connection = proposed;
    rdma_conn_param cp{};
    cp.private_data = &w;
    cp.private_data_len = sizeof(w);
    cp.initiator_depth = static_cast<uint8_t>(fabric_->rd_atomic());  // our READs in flight
    cp.responder_resources = 0;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    Expect(proposed);  // before the accept: the client may ask for it as soon as it is accepted
    if (rdma_accept(id, &cp)) {
      spdlog::debug("verbs RC: rdma_accept: {}", std::strerror(errno));
      Forget(proposed);
      return;
    }
    accepting_.push_back({std::move(ep), peer, proposed,
                          std::chrono::steady_clock::now() + kEstablishTimeout});
  }

  // ESTABLISHED (acknowledged) for an accepted id: it moves to its own channel and is admitted.
  void Established(Accepting a) {
    rdma_cm_id* id = a.ep->id();
    if (rdma_migrate_id(id, a.ep->channel())) {
      Forget(a.proposed);
      spdlog::info("verbs RC: closed a connection from {}: rdma_migrate_id: {}",
                   soft::net::Ipv4String(a.peer.ip), std::strerror(errno));
      return;
    }
    a.ep->set_connected();
    auto admitted = admission_.admit(a.peer, std::move(a.ep), a.proposed);
    if (!admitted.ok())
      spdlog::info("verbs RC: closed a connection from {}: {}", soft::net::Ipv4String(a.peer.ip),
                   admitted.error().message);
  }

  // Frees the accepted connections that did not reach ESTABLISHED within kEstablishTimeout.
  // Returns the milliseconds until the next one is due (-1: none pending).
  int ExpireAccepting() {
    auto now = std::chrono::steady_clock::now();
    int next = -1;
    for (auto it = accepting_.begin(); it != accepting_.end();) {
      if (it->deadline <= now) {
        spdlog::info("verbs RC: a connection from {} was not established within {} s: freed",
                     soft::net::Ipv4String(it->peer.ip),
                     std::chrono::duration_cast<std::chrono::seconds>(kEstablishTimeout).count());
        Forget(it->proposed);
        it = accepting_.erase(it);
        continue;
      }
      int ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(it->deadline - now).count()) + 1;
      next = next < 0 ? ms : std::min(next, ms);
      ++it;
    }
    return next;
  }

  void EventLoop() {
    for (;;) {
      bool tick = false;
      rdma_cm_event* ev = NextCmEvent(ch_.get(), wake_[0], ExpireAccepting(), &tick);
      if (!ev) {
        if (tick) continue;
        return;
      }
      rdma_cm_id* id = ev->id;
      rdma_cm_event_type type = ev->event;
      if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        bool go = Handle(ev);
        rdma_ack_cm_event(ev);
        if (go)
          Accept();
        else
          rdma_destroy_id(id);
        continue;
      }
      rdma_ack_cm_event(ev);  // before rdma_migrate_id or destroying the id, which wait for it
      if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        // The service's monitor frees the listener, the connections and the fabric.
        fabric_->sentinel().Removed("rdma_cm reported DEVICE_REMOVAL to the RC listener");
        if (id == listen_) continue;
      }
      auto it = std::find_if(accepting_.begin(), accepting_.end(),
                             [id](const Accepting& a) { return a.ep->id() == id; });
      if (it == accepting_.end()) continue;
      Accepting a = std::move(*it);
      accepting_.erase(it);
      if (type == RDMA_CM_EVENT_ESTABLISHED)
        Established(std::move(a));
      else  // REJECTED, CONNECT_ERROR, UNREACHABLE, DISCONNECTED: a's endpoint destroys QP and id
        Forget(a.proposed);
    }
  }

  RcFabric* fabric_;
  RcAdmission admission_;
  ChannelPtr ch_;  // destroyed last
  rdma_cm_id* listen_ = nullptr;
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::pair<rdma_cm_id*, RcPeer> pending_{};
  std::list<Accepting> accepting_;  // accepted, not yet ESTABLISHED; the event loop's only
};

Result<std::unique_ptr<RcListener>> RcFabric::ListenRc(const std::string& bind_ip, uint16_t port,
                                                       RcAdmission admission) {
  return RcServerListener::Start(this, bind_ip, port, std::move(admission));
}

// The client of S3 over RDMA on RC: memory registered in its PD, and one RC QP per server that it
// connects with rdma_cm from its own address (the GID its tokens carry). The QP is a responder:
// the server writes into (GET) and reads from (PUT/UploadPart) the registered memory.
class RcClientTarget final : public Target {
 public:
  static Result<std::unique_ptr<Target>> Start(const RcSettings& s) {
    auto source = soft::ParseIpv4(s.source_ip);
    if (!source)
      return MakeError(ErrorCode::kInvalidArgument,
                       "verbs RC client: '" + s.source_ip + "' is not an IPv4 address");
    auto cm = CmDevice(s);
    if (!cm.ok()) return cm.error();
    std::unique_ptr<RcClientTarget> t(new RcClientTarget());
    t->ctx_ = cm->ctx;
    t->pd_ = ibv_alloc_pd(cm->ctx);
    if (!t->pd_) return RcError("ibv_alloc_pd", errno);
    t->ip_ = *source;
    t->settings_ = s;
    t->responder_ = MaxReadAtomic(cm->ctx, false);
    t->sentinel_ = std::make_unique<DeviceSentinel>(cm->ctx, *source, s.port);
    return std::unique_ptr<Target>(std::move(t));
  }

  ~RcClientTarget() override {
    for (auto& [key, c] : conns_) Drop(c);
    if (pd_ && ibv_dealloc_pd(pd_) != 0)
      spdlog::warn("verbs RC client: protection domain still in use at shutdown");
    sentinel_.reset();  // last: librdmacm's context stays open while it lives
  }

  std::string Lost() override { return sentinel_ ? sentinel_->Gone() : std::string(); }

  RemoteAddress address() const override {
    RemoteAddress a;
    a.has_gid = true;
    a.gid = Ipv4ToGid(ip_);
    return a;
  }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    return Register(pd_, addr, length, access);
  }

  Result<RcConnectionInfo> RcConnection(uint32_t server_ip, uint16_t port, bool fresh) override {
    std::lock_guard lock(mu_);
    const uint64_t key = static_cast<uint64_t>(server_ip) << 16 | port;
    if (auto it = conns_.find(key); it != conns_.end()) {
      // Any event on an established connection's channel (DISCONNECTED, a device event) ends it.
      pollfd pfd{it->second.ch->fd, POLLIN, 0};
      if (!fresh && poll(&pfd, 1, 0) == 0) return it->second.info;
      Drop(it->second);
      conns_.erase(it);
    }
    std::string name = soft::net::Ipv4String(server_ip) + ":" + std::to_string(port);
    Conn c;
    // Every failure names its step (RDMAStep) and the server: "connect to 10.0.0.1:9100: no
    // rdma_cm event within 3000 ms".
    std::string step = "open device";
    auto fail = [&](Error e) {
      Drop(c);
      if (e.message.rfind("verbs RC: ", 0) == 0) e.message.erase(0, 10);
      e.message = "verbs RC client: " + step + " (" + name + "): " + e.message;
      return ClientTransportError(step, std::move(e));
    };
    if (auto gone = sentinel_ ? sentinel_->Gone() : std::string(); !gone.empty())
      return fail(MakeError(ErrorCode::kRDMANotSupported, gone));
    c.ch.reset(rdma_create_event_channel());
    if (!c.ch) return fail(RcError("rdma_create_event_channel", errno));
    if (rdma_create_id(c.ch.get(), &c.id, nullptr, RDMA_PS_TCP))
      return fail(RcError("rdma_create_id", errno));
    if (auto st = SetTos(c.id, settings_.tos); !st.ok()) return fail(st.error());
    const auto t = settings_.connect_timeout;
    sockaddr_in src{}, dst{};
    src.sin_family = dst.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(ip_);
    dst.sin_addr.s_addr = htonl(server_ip);
    dst.sin_port = htons(port);
    step = "resolve address";
    if (rdma_resolve_addr(c.id, reinterpret_cast<sockaddr*>(&src),
                          reinterpret_cast<sockaddr*>(&dst), static_cast<int>(t.count())))
      return fail(RcError("rdma_resolve_addr", errno));
    if (auto st = Expect(c.ch.get(), RDMA_CM_EVENT_ADDR_RESOLVED, t, step); !st.ok())
      return fail(st.error());
    step = "resolve route";
    if (rdma_resolve_route(c.id, static_cast<int>(t.count())))
      return fail(RcError("rdma_resolve_route", errno));
    if (auto st = Expect(c.ch.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, t, step); !st.ok())
      return fail(st.error());
    step = "connect";
    if (c.id->verbs != ctx_)
      return fail(MakeError(ErrorCode::kRDMANotSupported,
                            "the route leaves through " +
                                std::string(ibv_get_device_name(c.id->verbs->device)) + ", not " +
                                ibv_get_device_name(ctx_->device)));
    c.cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
    if (!c.cq) return fail(RcError("ibv_create_cq", errno));
    ibv_qp_init_attr qa{};
    qa.send_cq = c.cq;
    qa.recv_cq = c.cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = 1;
    qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(c.id, pd_, &qa)) return fail(RcError("rdma_create_qp", errno));
    soft::wire::Hello hello;
    hello.magic = soft::wire::kRcMagic;
    hello.qpn = c.id->qp->qp_num;
    rdma_conn_param cp{};
    cp.private_data = &hello;
    cp.private_data_len = sizeof(hello);
    cp.responder_resources = static_cast<uint8_t>(responder_);  // the server's READs at once
    cp.initiator_depth = 0;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    if (rdma_connect(c.id, &cp)) return fail(RcError("rdma_connect", errno));
    auto ev = NextEventWithData(c.ch.get(), t);
    if (!ev.ok()) return fail(ev.error());
    soft::wire::RcWelcome w;
    w.status = soft::wire::kRcMalformed;
    if (ev->data.size() >= sizeof(w)) std::memcpy(&w, ev->data.data(), sizeof(w));
    if (ev->type != RDMA_CM_EVENT_ESTABLISHED || w.magic != soft::wire::kRcMagic ||
        w.status != soft::wire::kRcAccepted || w.connection == 0)
      return fail(
          MakeError(ErrorCode::kRDMANotSupported,
                    ev->type == RDMA_CM_EVENT_REJECTED && w.status == soft::wire::kRcRefused
                        ? "the server refused the connection (its RC connection limits)"
                        : std::string("the server did not accept: ") + rdma_event_str(ev->type)));
    c.info.id = w.connection;
    c.info.self = address();
    c.info.self.qpn = c.id->qp->qp_num;
    RcConnectionInfo info = c.info;
    conns_[key] = std::move(c);
    return info;
  }

 private:
  struct Conn {
    ChannelPtr ch;
    rdma_cm_id* id = nullptr;
    ibv_cq* cq = nullptr;
    RcConnectionInfo info;
  };
  RcClientTarget() = default;

  static void Drop(Conn& c) {
    if (c.id) {
      rdma_disconnect(c.id);
      if (c.id->qp) rdma_destroy_qp(c.id);
    }
    if (c.cq) ibv_destroy_cq(c.cq);
    if (c.id) rdma_destroy_id(c.id);
    c.id = nullptr;
    c.cq = nullptr;
    c.ch.reset();
  }

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint32_t ip_ = 0;
  RcSettings settings_;
  int responder_ = 1;
  std::mutex mu_;
  std::map<uint64_t, Conn> conns_;
  std::unique_ptr<DeviceSentinel> sentinel_;
};

}  // namespace
}  // namespace verbs

Result<std::unique_ptr<Target>> StartVerbsRcClient(const RcSettings& settings) {
  return verbs::RcClientTarget::Start(settings);
}

Result<std::unique_ptr<Fabric>> CreateVerbsRcFabric(const RcSettings& settings) {
  auto cm = verbs::CmDevice(settings);
  if (!cm.ok()) return cm.error();
  ibv_pd* pd = ibv_alloc_pd(cm->ctx);
  if (!pd) return verbs::RcError("ibv_alloc_pd", errno);
  spdlog::info("verbs RC fabric: {} (inter-node RDMA over RC queue pairs, librdmacm){}",
               ibv_get_device_name(cm->ctx->device),
               cm->bind_source ? ", connections from " + settings.source_ip : std::string());
  auto source = soft::ParseIpv4(settings.source_ip);
  auto sentinel = std::make_unique<verbs::DeviceSentinel>(
      cm->ctx, cm->bind_source && source ? *source : 0, settings.port);
  return std::unique_ptr<Fabric>(
      new verbs::RcFabric(cm->ctx, pd, settings, cm->bind_source, std::move(sentinel)));
}

Result<std::unique_ptr<Target>> StartVerbsRcTarget(const std::string& bind_ip,
                                                   const RcSettings& settings) {
  return verbs::RcTarget::Start(bind_ip, settings);
}

}  // namespace rdmastor::rdma
