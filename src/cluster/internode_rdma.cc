#include "cluster/internode_rdma.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <optional>

#include "rdma/rc.h"
#include "rdma/soft/net.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/staged_transfer.h"
#include "rdma/token.h"

namespace rdmastor::cluster {

using Clock = std::chrono::steady_clock;

namespace {

// A counting semaphore whose permits come back when the returned handle is destroyed.
class Slots {
 public:
  explicit Slots(int limit) : limit_(std::max(1, limit)) {}
  // Null when none came free within `wait`. Finding them all taken is a ceiling hit
  // (MINIO_RDMA_INTERNODE_INFLIGHT), counted whether the wait then succeeds or not.
  std::shared_ptr<void> Acquire(std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    if (used_ >= limit_) {
      bool got = cv_.wait_for(lock, wait, [&] { return used_ < limit_; });
      admin::RecordRdmaCeilingHit("internode_inflight", !got);
      if (!got) return nullptr;
    }
    ++used_;
    return std::shared_ptr<void>(this, [](Slots* s) {
      {
        std::lock_guard l(s->mu_);
        --s->used_;
      }
      s->cv_.notify_one();
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int used_ = 0;
  const int limit_;
};

// A buffer of `pool`, waiting up to `wait` when all are busy: then a hit of `ceiling` (the
// setting that bounds the pool), counted whether the wait succeeds or not.
Result<rdma::BufferPool::Buffer> TakeBuffer(rdma::BufferPool& pool, const char* ceiling,
                                            std::chrono::milliseconds wait) {
  auto now = pool.Acquire(std::chrono::milliseconds(0));
  if (now.ok() || now.error().code != ErrorCode::kSlowDown) return now;
  auto later = pool.Acquire(wait);
  if (later.ok() || later.error().code == ErrorCode::kSlowDown)
    admin::RecordRdmaCeilingHit(ceiling, !later.ok());
  return later;
}

Error Invalid(const std::string& name, const std::string& value, const std::string& accepts) {
  return MakeError(ErrorCode::kInvalidArgument, name + "='" + value + "' is invalid: " + accepts);
}

// "30s", "500ms", "2m", or plain seconds; nullopt when malformed.
std::optional<std::chrono::milliseconds> ParseDuration(const std::string& v) {
  size_t digits = v.find_first_not_of("0123456789");
  if (digits == 0 || v.empty()) return std::nullopt;
  std::string num = v.substr(0, digits), unit = digits == std::string::npos ? "" : v.substr(digits);
  if (num.size() > 9) return std::nullopt;
  int64_t n = std::stoll(num);
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit.empty() || unit == "s") return std::chrono::milliseconds(n * 1000);
  if (unit == "m") return std::chrono::milliseconds(n * 60000);
  return std::nullopt;
}

}  // namespace

struct InternodeRdma::Peer {
  Peer(std::string n, int inflight)
      : name(std::move(n)), expose_slots(inflight), serve_slots(inflight) {}
  std::string name;
  Slots expose_slots, serve_slots;
  // Set once when made (under mu_): the protection domain of the buffers exposed to this peer on
  // this node's target, and the node id its connect proofs name (peer_auth.h).
  uint32_t domain = 0;
  uint64_t node_id = 0;
  // Guarded by InternodeRdma::mu_.
  bool degraded = false;
  std::optional<uint32_t> rdma_ip;  // its advertised inter-node RDMA address (host order)
  Clock::time_point retry_at{};
  std::string last_error;
  InternodePeerCounters c;
};

Status ApplyInternodeRdmaEnv(const std::map<std::string, std::string>& env,
                             InternodeRdmaSettings& s) {
  auto get = [&](const char* name) -> const std::string* {
    auto it = env.find(name);
    return it == env.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (const auto* v = get("MINIO_RDMA_INTERNODE_INFLIGHT")) {
    bool ok = v->size() <= 4 && v->find_first_not_of("0123456789") == std::string::npos;
    int n = ok ? std::stoi(*v) : 0;
    if (n < 1 || n > 1024)
      return Invalid("MINIO_RDMA_INTERNODE_INFLIGHT", *v, "use an integer from 1 to 1024");
    s.inflight_per_peer = n;
  }
  if (const auto* v = get("MINIO_RDMA_CHANNELS")) {
    auto n = ParseChannelCount(*v);
    if (!n) return Invalid("MINIO_RDMA_CHANNELS", *v, "use an integer from 1 to 64");
    s.channels = *n;
    s.channels_set = true;
  }
  if (const auto* v = get("MINIO_RDMA_INTERNODE_STAGING_BUFFERS")) {
    bool ok = v->size() <= 5 && v->find_first_not_of("0123456789") == std::string::npos;
    int n = ok ? std::stoi(*v) : 0;
    if (n < 1 || n > 65536)
      return Invalid("MINIO_RDMA_INTERNODE_STAGING_BUFFERS", *v, "use an integer from 1 to 65536");
    s.max_buffers = static_cast<size_t>(n);
    s.staging_set = true;
  }
  if (const auto* v = get("MINIO_RDMA_INTERNODE_WAIT")) {
    auto d = ParseDuration(*v);
    if (!d || *d < std::chrono::milliseconds(100) || *d > std::chrono::minutes(10))
      return Invalid("MINIO_RDMA_INTERNODE_WAIT", *v,
                     "use a duration from 100ms to 10m such as 5s, 500ms or 1m");
    s.inflight_wait = s.channel_wait = *d;
  }
  if (const auto* v = get("MINIO_RDMA_INTERNODE_TRAFFIC_CLASS")) {
    bool ok = v->size() <= 3 && v->find_first_not_of("0123456789") == std::string::npos;
    int n = ok ? std::stoi(*v) : -1;
    if (n < 0 || n > 255)
      return Invalid("MINIO_RDMA_INTERNODE_TRAFFIC_CLASS", *v,
                     "use an integer from 0 to 255 (the IP ToS / traffic class byte)");
    s.traffic_class = n;
  }
  if (const auto* v = get("MINIO_RDMA_INTERNODE_RETRY")) {
    auto d = ParseDuration(*v);
    if (!d || *d < std::chrono::milliseconds(100) || *d > std::chrono::hours(24))
      return Invalid("MINIO_RDMA_INTERNODE_RETRY", *v,
                     "use a duration from 100ms to 24h such as 30s, 500ms or 2m");
    s.retry_after = *d;
  }
  return {};
}

std::string InternodeRdmaStatus::state() const {
  if (!enabled) return "off";
  if (!available) return "unavailable";
  return degraded.empty() ? "ok" : "degraded";
}

struct InternodeRdma::Plane {
  std::unique_ptr<rdma::Fabric> fabric;  // serving side: connects to callers' targets
  std::unique_ptr<rdma::Target> target;  // caller side: exposes shard buffers
  // Declared after what they are registered with / connect through: destroyed before it.
  std::unique_ptr<rdma::BufferPool> pool;   // serving side staging
  std::unique_ptr<ChannelPool> channels;    // serving side: endpoints toward callers' targets
  // Caller side: piece-sized buffers registered with the target (send: remote-read; receive:
  // remote-write).
  std::unique_ptr<rdma::BufferPool> send_bufs, recv_bufs;
};

std::shared_ptr<InternodeRdma::Plane> InternodeRdma::MakePlane(
    const InternodeRdmaSettings& s, std::unique_ptr<rdma::Fabric> fabric,
    std::unique_ptr<rdma::Target> target) {
  auto p = std::make_shared<Plane>();
  p->fabric = std::move(fabric);
  p->target = std::move(target);
  p->pool = std::make_unique<rdma::BufferPool>(*p->fabric, s.staging_bytes, s.max_buffers);
  // Piece-sized buffers registered once with the target (issue 10 item 4: no registration per
  // RPC), at most inflight_bytes in all, half per direction; each buffer in the protection domain
  // of the peer it is exposed to, the first time it is (Buffer::RegisteredIn, issue 37 item 9).
  rdma::Target* t = p->target.get();
  auto reg = [t](uint32_t domain, void* a, size_t n, unsigned acc) {
    return t->RegisterMemoryIn(domain, a, n, acc);
  };
  const size_t piece =
      s.enabled ? static_cast<size_t>(std::clamp<uint64_t>(s.min_size, kMinPieceBytes,
                                                           kMaxPieceBytes))
                : kMinPieceBytes;
  const size_t per_dir = static_cast<size_t>(
      std::max<uint64_t>(1, s.inflight_bytes / 2 / std::max<size_t>(piece, 1)));
  p->send_bufs = std::make_unique<rdma::BufferPool>(reg, piece, per_dir, rdma::kRemoteRead);
  p->recv_bufs = std::make_unique<rdma::BufferPool>(reg, piece, per_dir,
                                                    rdma::kRemoteWrite | rdma::kLocalWrite);
  ChannelPoolOptions co;
  co.channels = s.channels;
  co.wait = s.channel_wait;
  co.idle_close = s.channel_idle_close;
  co.sweep_interval = s.channel_sweep;
  co.on_ceiling = [](bool refused) { admin::RecordRdmaCeilingHit("channels", refused); };
  rdma::Fabric* f = p->fabric.get();
  p->channels = std::make_unique<ChannelPool>(
      [f](const rdma::RemoteAddress& remote, const rdma::RequestOrigin& origin) {
        return f->Connect(remote, origin);
      },
      co, [](std::string_view peer) { admin::RecordInternodeConnectionOpened(peer); });
  return p;
}

Result<std::shared_ptr<InternodeRdma::Plane>> InternodeRdma::OpenFromSettings(
    bool reopening) const {
  const InternodeRdmaSettings& s = settings_;
  switch (s.fabric) {
    case rdma::FabricKind::kOff:
      return MakeError(ErrorCode::kRDMANotSupported, "MINIO_RDMA_FABRIC=off");
    case rdma::FabricKind::kVerbs: {
      // RC queue pairs connected with librdmacm (DESIGN.md §4), the same token addressing.
      rdma::RcSettings rc;
      rc.device = s.verbs.device;
      rc.port = s.verbs.port;
      rc.cq_depth = s.verbs.cq_depth;
      rc.connect_timeout = s.connect_timeout;
      rc.allow = s.soft_allow;
      rc.tos = s.traffic_class;
      rc.source_ip = s.bind_ip;  // connections leave from the node's address and its device
      // Every generation proves and checks connects alike (issue 37 item 9).
      rc.prove = prove_;
      rc.verify = verify_;
      // Opened again after a removal: the device of the node's address, where its peers' tokens
      // point, not another one that happens to be usable.
      rc.require_source_device = reopening;
      auto fabric = rdma::CreateVerbsRcFabric(rc);
      if (!fabric.ok()) return fabric.error();
      auto target = rdma::StartVerbsRcTarget(s.bind_ip, rc);
      if (!target.ok())
        return MakeError(target.error().code,
                         "RC target on " + s.bind_ip + ": " + target.error().message);
      return MakePlane(s, std::move(fabric).value(), std::move(target).value());
    }
    case rdma::FabricKind::kSoft: {
      rdma::soft::SoftFabricOptions fo;
      fo.allow = s.soft_allow;
      fo.connect_timeout = s.connect_timeout;
      fo.io_timeout = s.transfer.timeout;
      fo.tos = s.traffic_class;
      fo.max_idle_connections = 0;  // the channel pool keeps the connections
      fo.progress_interval = s.transfer.timeout;
      fo.min_rate = s.transfer.min_rate;  // 0 by default: peers need only move some byte
      fo.prove = prove_;  // as the verbs fabric's: every generation proves and checks alike
      rdma::soft::SoftTargetOptions to;
      to.bind_ip = s.bind_ip;
      to.io_timeout = s.transfer.timeout;
      to.tos = s.traffic_class;
      to.verify = verify_;
      auto target = rdma::soft::SoftTarget::Start(to);
      if (!target.ok())
        return MakeError(target.error().code, "soft target on " + s.bind_ip +
                                                  " did not start: " + target.error().message);
      return MakePlane(s, std::make_unique<rdma::soft::SoftFabric>(fo),
                       std::move(target).value());
    }
  }
  return MakeError(ErrorCode::kInternalError, "inter-node RDMA: unknown fabric");
}

static Status ValidateSettings(const InternodeRdmaSettings& s) {
  if (s.inflight_per_peer < 1)
    return MakeError(ErrorCode::kInvalidArgument, "inter-node RDMA: in-flight bound must be >= 1");
  if (s.channels < 1 || s.channels > kMaxChannels)
    return MakeError(ErrorCode::kInvalidArgument,
                     "inter-node RDMA: MINIO_RDMA_CHANNELS must be from 1 to 64");
  if (s.staging_bytes < 4096 || s.slot_bytes < 4096 || s.slot_bytes > s.staging_bytes ||
      s.max_buffers < 1)
    return MakeError(ErrorCode::kInvalidArgument,
                     "inter-node RDMA: staging buffers need 4096 <= slot_bytes <= staging_bytes "
                     "and max_buffers >= 1");
  if (s.enabled && (!s.auth || s.self.empty()))
    return MakeError(ErrorCode::kInvalidArgument,
                     "inter-node RDMA: the peer key and this node's address are needed to bind "
                     "its keys to authenticated peers");
  return {};
}

Result<std::unique_ptr<InternodeRdma>> InternodeRdma::Create(const InternodeRdmaSettings& s) {
  // Only the verbs fabric has a device that can go away.
  return Start(s, nullptr, s.fabric == rdma::FabricKind::kVerbs);
}

Result<std::unique_ptr<InternodeRdma>> InternodeRdma::CreateWith(const InternodeRdmaSettings& s,
                                                                 OpenFn open) {
  return Start(s, std::move(open), true);
}

Result<std::unique_ptr<InternodeRdma>> InternodeRdma::Start(const InternodeRdmaSettings& s,
                                                            OpenFn open, bool watch) {
  RS_RETURN_IF_ERROR(ValidateSettings(s));
  std::unique_ptr<InternodeRdma> self(new InternodeRdma(s));
  // Every connection proves which node opens it; this node's target serves only those, each in
  // the protection domain of the node it names (issue 37 item 9).
  // Kept as members: the fabric and target of every generation (OpenFromSettings: the first and
  // each one opened again after a device removal) get the same.
  if (s.auth) {
    self->prove_ = [auth = s.auth, node = s.self](const rdma::ConnectContext& c) {
      return auth->SignConnect(node, c);
    };
    self->verify_ = [raw = self.get()](const rdma::ConnectContext& c, const uint8_t* p,
                                       size_t n) { return raw->VerifyConnect(c, p, n); };
  }
  if (!s.enabled) {
    self->unavailable_reason_ = "MINIO_RDMA_INTERNODE is off";
    spdlog::info("inter-node RDMA: off (all shards over TCP)");
    return self;
  }
  InternodeRdma* raw = self.get();
  self->open_ = open ? std::move(open)
                     : OpenFn([raw](bool reopening) { return raw->OpenFromSettings(reopening); });
  auto plane = self->open_(false);
  if (!plane.ok()) {
    self->unavailable_reason_ = plane.error().message;
    spdlog::warn(
        "inter-node RDMA: MINIO_RDMA_INTERNODE=on but unavailable, all shards go over "
        "TCP: {}",
        self->unavailable_reason_);
    return self;
  }
  self->plane_ = std::move(plane).value();
  self->started_ = true;
  auto addr = self->plane_->target->address();
  spdlog::info(
      "inter-node RDMA: on, {} fabric, target port {} on {}, shards >= {} bytes, {} channels per "
      "peer",
      self->plane_->fabric->name(), addr.lid, s.bind_ip, s.min_size, s.channels);
  if (watch) {
    rdma::DeviceMonitor::Hooks hooks;
    hooks.gone = [raw] { return raw->Gone(); };
    hooks.release = [raw](const std::string& why) { raw->Release(why); };
    hooks.reopen = [raw] { return raw->Reopen(); };
    self->monitor_ = std::make_unique<rdma::DeviceMonitor>(
        rdma::DeviceMonitorOptions{s.device_look, s.reopen_first, s.reopen_cap}, std::move(hooks));
  }
  return self;
}

// Connect proofs are bound to this start's endpoint id (random per start), so the replay cache
// need not refuse what was signed before it started (unlike peer RPCs'): a peer's clock that
// lags a little does not cost it a refused connect.
InternodeRdma::InternodeRdma(InternodeRdmaSettings settings)
    : settings_(std::move(settings)),
      connect_nonces_(1 << 16, PeerAuthNowMs() - kPeerAuthSkew.count()) {}
InternodeRdma::~InternodeRdma() {
  monitor_.reset();  // before the plane it looks at
  std::lock_guard lock(plane_mu_);
  plane_.reset();  // its target's event loop calls VerifyConnect, which reads peers_
}

Result<uint32_t> InternodeRdma::VerifyConnect(const rdma::ConnectContext& c, const uint8_t* proof,
                                              size_t len) {
  auto refuse = [&](const char* reason, Error e) -> Result<uint32_t> {
    connects_refused_.fetch_add(1);
    admin::RecordInternodeConnectRefused(reason);
    return e;
  };
  const int64_t now = PeerAuthNowMs();
  auto claim = settings_.auth->VerifyConnect(c, proof, len, now);
  if (!claim.ok()) return refuse(len == 0 ? "no_proof" : "bad_proof", claim.error());
  uint32_t domain = 0;
  {
    // Only a node this node exposed memory to has a domain: nothing else could be reached.
    std::lock_guard lock(mu_);
    for (const auto& [name, p] : peers_)
      if (p->node_id == claim->node) domain = p->domain;
  }
  if (domain == 0)
    return refuse("unknown_node",
                  MakeError(ErrorCode::kAccessDenied,
                            "inter-node RDMA connect refused: it names no node this node "
                            "exchanges shards with"));
  if (auto st = connect_nonces_.Admit(claim->signature, now); !st.ok())
    return refuse("replay", MakeError(ErrorCode::kAccessDenied,
                                      "inter-node RDMA connect refused: " + st.error().message));
  return domain;
}

std::shared_ptr<InternodeRdma::Plane> InternodeRdma::plane() const {
  std::lock_guard lock(plane_mu_);
  return plane_;
}

std::string InternodeRdma::Gone() const {
  auto p = plane();
  if (!p) return "";
  if (p->fabric->NeedsReopen()) {
    auto why = p->fabric->Unavailable();
    return why.empty() ? "the RDMA device failed" : why;
  }
  return p->target->Lost();
}

void InternodeRdma::Release(const std::string& why) {
  long users = 0;
  std::shared_ptr<Plane> old;
  {
    std::lock_guard lock(plane_mu_);
    gone_reason_ = why;
    old = std::move(plane_);
    users = old.use_count() - 1;
  }
  // Idle channels (QPs) go now even when a running transfer keeps the plane a little longer.
  if (old && old->channels) old->channels->Sweep();
  old.reset();
  spdlog::error(
      "inter-node RDMA: degraded, shard pieces go over TCP (counted as fallbacks): {}; freed the "
      "channels, the target and the registered buffers{}",
      why,
      users > 0 ? " (what " + std::to_string(users) + " running transfer(s) hold when they end)"
                : std::string());
}

bool InternodeRdma::Reopen() {
  auto plane = open_(true);
  if (!plane.ok()) {
    spdlog::debug("inter-node RDMA: the device is not back yet: {}", plane.error().message);
    return false;
  }
  auto addr = (*plane)->target->address();
  {
    std::lock_guard lock(plane_mu_);
    plane_ = std::move(plane).value();
    gone_reason_.clear();
  }
  {
    // Transfers that failed while the device went away were not the peers' fault: try RDMA with
    // every peer at once.
    std::lock_guard lock(mu_);
    for (auto& [name, p] : peers_)
      if (p->degraded) p->retry_at = Clock::now();
  }
  spdlog::info(
      "inter-node RDMA: the device was reopened; shards >= {} bytes go over RDMA again (target "
      "port {} on {})",
      settings_.min_size, addr.lid, settings_.bind_ip);
  return true;
}

bool InternodeRdma::available() const {
  auto p = plane();
  return p && p->fabric->Unavailable().empty();
}

std::string InternodeRdma::UnavailableReason() const {
  std::shared_ptr<Plane> p;
  {
    std::lock_guard lock(plane_mu_);
    if (!plane_)
      return gone_reason_.empty()
                 ? unavailable_reason_
                 : "the " + std::string(rdma::FabricName(settings_.fabric)) +
                       " fabric is degraded: " + gone_reason_;
    p = plane_;
  }
  if (auto why = p->fabric->Unavailable(); !why.empty())
    return "the " + std::string(p->fabric->name()) + " fabric is degraded: " + why;
  return "";
}

uint64_t InternodeRdma::buffer_registrations() const {
  auto p = plane();
  return p ? p->send_bufs->registrations() + p->recv_bufs->registrations() : 0;
}
uint64_t InternodeRdma::channels_opened() const {
  auto p = plane();
  return p ? p->channels->opened() : 0;
}
size_t InternodeRdma::channels_open() const {
  auto p = plane();
  return p ? p->channels->open_channels() : 0;
}

InternodeRdma::Peer& InternodeRdma::GetPeer(std::string_view peer) {
  std::lock_guard lock(mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) {
    it = peers_
             .emplace(std::string(peer),
                      std::make_unique<Peer>(std::string(peer), settings_.inflight_per_peer))
             .first;
    it->second->domain = ++next_domain_;
    it->second->node_id = NodeId(peer);
  }
  return *it->second;
}

void InternodeRdma::CountFallback(Peer& p, std::string_view peer, std::string_view reason) {
  {
    std::lock_guard lock(mu_);
    ++p.c.fallbacks;
  }
  admin::RecordInternodeFallback(peer, reason);
}

bool InternodeRdma::ShouldUse(std::string_view peer, uint64_t size) {
  // An empty shard has nothing to move: always TCP (its metadata travels there anyway).
  if (!settings_.enabled || size == 0 || size < settings_.min_size) return false;
  Peer& p = GetPeer(peer);
  // Enabled but no fabric (or its device is gone, its port down), or the peer's RDMA path is
  // down (until its retry time): TCP, counted with the reason.
  if (!available()) {
    CountFallback(p, peer, "fabric_unavailable");
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (!p.degraded || Clock::now() >= p.retry_at) return true;
  }
  CountFallback(p, peer, "peer_degraded");
  return false;
}

size_t InternodeRdma::piece_bytes() const {
  // Fixed at start: a device that comes and goes does not change how shards are cut.
  if (!settings_.enabled || !started_) return kMinPieceBytes;
  return static_cast<size_t>(
      std::clamp<uint64_t>(settings_.min_size, kMinPieceBytes, kMaxPieceBytes));
}

void InternodeRdma::RecordFallback(std::string_view peer) {
  CountFallback(GetPeer(peer), peer, "busy");
}

void InternodeRdma::Exposed::Reset() {
  mr_.reset();  // deregister before the in-flight slot frees up
  if (buffer_) {
    if (answered_)
      buffer_ = rdma::BufferPool::Buffer();  // back to the pool, still registered
    else
      buffer_.Discard();
  }
  slot_.reset();
  plane_.reset();  // last: what the registrations were made with
}

InternodeRdma::Exposed& InternodeRdma::Exposed::operator=(Exposed&& o) noexcept {
  if (this != &o) {
    Reset();
    plane_ = std::move(o.plane_);
    token_ = std::move(o.token_);
    mr_ = std::move(o.mr_);
    buffer_ = std::move(o.buffer_);
    pool_ = o.pool_;
    dst_ = o.dst_;
    len_ = o.len_;
    answered_ = o.answered_;
    slot_ = std::move(o.slot_);
  }
  return *this;
}

void InternodeRdma::Exposed::CopyOut(size_t n) {
  if (buffer_ && dst_ != nullptr) std::memcpy(dst_, buffer_.data(), std::min(n, len_));
}

rdma::BufferPool::Buffer InternodeRdma::Exposed::TakeReceived() {
  if (!answered_ || !buffer_ || dst_ == nullptr || pool_ == nullptr) return {};
  if (pool_->in_use() > pool_->max_buffers() / 2) return {};
  return std::move(buffer_);
}

Result<InternodeRdma::Exposed> InternodeRdma::Expose(std::string_view peer, void* buf, size_t len,
                                                     bool for_remote_write) {
  auto plane = this->plane();
  if (!plane) return MakeError(ErrorCode::kRDMANotSupported, UnavailableReason());
  if (buf == nullptr || len == 0 || len > std::numeric_limits<uint32_t>::max())
    return MakeError(ErrorCode::kInvalidArgument,
                     "inter-node RDMA: exposed buffers hold 1 byte to 4 GiB - 1 (one token)");
  Exposed e;
  Peer& p = GetPeer(peer);
  const uint32_t domain = p.domain;
  e.plane_ = plane;
  e.slot_ = p.expose_slots.Acquire(settings_.inflight_wait);
  if (!e.slot_)
    return MakeError(ErrorCode::kSlowDown,
                     "inter-node RDMA: " + std::to_string(settings_.inflight_per_peer) +
                         " transfers with " + std::string(peer) + " already in flight");
  rdma::BufferPool& pool = for_remote_write ? *plane->recv_bufs : *plane->send_bufs;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  if (len <= pool.buffer_size()) {
    // A pre-registered buffer: the piece is copied in (send) or out after the answer (receive).
    auto b = TakeBuffer(pool, "internode_inflight_bytes", settings_.inflight_wait);
    if (!b.ok())
      return MakeError(ErrorCode::kSlowDown,
                       "inter-node RDMA: all " + std::to_string(pool.max_buffers()) +
                           " registered buffers (MINIO_RDMA_INTERNODE_INFLIGHT_BYTES) are busy");
    e.buffer_ = std::move(b).value();
    // A receive buffer handed over (TakeReceived) keeps its generation alive wherever it goes.
    e.buffer_.KeepOwner(plane);
    e.pool_ = &pool;
    // Reachable only through the connections `peer` opened (its protection domain).
    auto mr = e.buffer_.RegisteredIn(domain);
    if (!mr.ok()) return mr.error();
    rkey = (*mr)->rkey();
    if (!for_remote_write) std::memcpy(e.buffer_.data(), buf, len);
    e.dst_ = for_remote_write ? static_cast<char*>(buf) : nullptr;
    raddr = reinterpret_cast<uint64_t>(e.buffer_.data());
  } else {
    // Larger than a piece (not what RemoteDrive sends): registered for this RPC only.
    unsigned access =
        for_remote_write ? (rdma::kRemoteWrite | rdma::kLocalWrite) : rdma::kRemoteRead;
    auto mr = plane->target->RegisterMemoryIn(domain, buf, len, access);
    if (!mr.ok()) return mr.error();
    e.mr_ = std::move(mr).value();
    raddr = reinterpret_cast<uint64_t>(buf);
    rkey = e.mr_->rkey();
  }
  e.len_ = len;
  e.token_ =
      rdma::FormatToken(plane->target->address().TokenFor(raddr, static_cast<uint32_t>(len), rkey));
  return e;
}

Status InternodeRdma::Pull(std::string_view peer, std::string_view token,
                           std::string_view origin_ip, char* dst, size_t len) {
  auto moved = Move(peer, rdma::Opcode::kRead, token, origin_ip, len, dst, nullptr);
  return moved.ok() ? Status() : Status(moved.error());
}

Status InternodeRdma::Push(std::string_view peer, std::string_view token,
                           std::string_view origin_ip, const char* src, size_t len) {
  const PieceFill copy = [src](char* dst, size_t at, size_t n) -> Result<size_t> {
    std::memcpy(dst, src + at, n);
    return n;
  };
  auto moved = PushFrom(peer, token, origin_ip, len, copy);
  return moved.ok() ? Status() : Status(moved.error());
}

Result<size_t> InternodeRdma::PushFrom(std::string_view peer, std::string_view token,
                                       std::string_view origin_ip, size_t len,
                                       const PieceFill& fill) {
  return Move(peer, rdma::Opcode::kWrite, token, origin_ip, len, nullptr, &fill);
}

Result<size_t> InternodeRdma::Move(std::string_view peer, rdma::Opcode op, std::string_view token,
                                   std::string_view origin_ip, size_t len, char* local,
                                   const PieceFill* fill) {
  auto plane = this->plane();  // held until this transfer's endpoint and buffer are back
  if (!plane) return MakeError(ErrorCode::kRDMANotSupported, UnavailableReason());
  Peer& p = GetPeer(peer);
  auto fail = [&](Error e) {
    {
      std::lock_guard lock(mu_);
      ++p.c.errors;
    }
    admin::RecordInternodeRdmaError(peer);
    e.message = "inter-node RDMA " +
                std::string(op == rdma::Opcode::kRead ? "pull from " : "push to ") +
                std::string(peer) + ": " + e.message;
    return e;
  };
  auto parsed = rdma::ParseToken(token);
  if (!parsed.ok()) return fail(parsed.error());
  const rdma::RdmaToken& t = *parsed;
  if (len > t.rsize)
    return fail(MakeError(ErrorCode::kInvalidArgument,
                          std::to_string(len) + " bytes do not fit the token's " +
                              std::to_string(t.rsize) + "-byte buffer"));
  if (len == 0) return size_t{0};
  auto slot = p.serve_slots.Acquire(settings_.inflight_wait);
  if (!slot)
    return MakeError(ErrorCode::kSlowDown,
                     "inter-node RDMA: " + std::to_string(settings_.inflight_per_peer) +
                         " transfers with " + std::string(peer) + " already in flight");
  auto buffer = TakeBuffer(*plane->pool, "internode_staging_buffers", settings_.inflight_wait);
  if (!buffer.ok()) return buffer.error();
  // The origin the fabric's policy checks the token against: the address the RPC came from, or
  // the peer's advertised RDMA address when the token names that (a separate RDMA network).
  std::string origin(origin_ip);
  if (auto named = rdma::GidToIpv4(t.gid); t.has_gid && named) {
    std::lock_guard lock(mu_);
    if (p.rdma_ip == *named) origin = rdma::soft::net::Ipv4String(*named);
  }
  auto lease = plane->channels->Acquire(peer, rdma::RemoteAddress::FromToken(t),
                                  rdma::RequestOrigin{origin, settings_.bind_ip});
  if (!lease.ok()) {
    if (lease.error().code != ErrorCode::kSlowDown) return fail(lease.error());
    // Every channel stayed busy: the caller sends this piece over TCP and counts the fallback.
    spdlog::warn("{}; that piece goes over TCP", lease.error().message);
    return lease.error();
  }
  {
    // A transfer that does not finish cleanly leaves the channel unusable: dropped, not reused.
    struct FailUnlessDone {
      ChannelPool::Lease& l;
      bool done = false;
      ~FailUnlessDone() {
        if (!done) l.Fail();
      }
    } guard{*lease};
    rdma::StagedTransfer tr(lease->endpoint(), op, rdma::RemoteBuffer::FromToken(t),
                            settings_.transfer, rdma::Staging::Of(*buffer, settings_.slot_bytes),
                            len);
    std::optional<Error> source_error;  // fill's own failure: not the fabric's
    auto stop = [&](Error e) { return source_error ? *source_error : fail(std::move(e)); };
    if (op == rdma::Opcode::kWrite) {
      auto moved = tr.Push([&](uint64_t at, char* stage, size_t n) -> Result<size_t> {
        auto filled = (*fill)(stage, static_cast<size_t>(at), n);
        if (!filled.ok()) source_error = filled.error();
        return filled;
      });
      if (!moved.ok()) return stop(moved.error());
      len = static_cast<size_t>(*moved);  // the source may have ended early
    } else {
      for (size_t done = 0; done < len;) {
        auto n = tr.Pull(local + done, len - done);
        if (!n.ok()) return stop(n.error());
        done += *n;
      }
    }
    guard.done = true;
  }
  // The serving side's own view: bytes received from (READ) or sent to (WRITE) the caller.
  bool read = op == rdma::Opcode::kRead;
  {
    std::lock_guard lock(mu_);
    (read ? p.c.rdma_bytes_received : p.c.rdma_bytes_sent) += len;
    ++p.c.rdma_shards;
  }
  admin::AddInternodePeerShard(peer, admin::Transport::kRdma, read ? 0 : len, read ? len : 0);
  return len;
}

void InternodeRdma::RecordShard(std::string_view peer, admin::Transport t, uint64_t sent,
                                uint64_t received) {
  Peer& p = GetPeer(peer);
  admin::AddInternodePeerShard(peer, t, sent, received);
  bool restored = false;
  {
    std::lock_guard lock(mu_);
    if (t == admin::Transport::kRdma) {
      p.c.rdma_bytes_sent += sent;
      p.c.rdma_bytes_received += received;
      ++p.c.rdma_shards;
      restored = p.degraded;
      p.degraded = false;
    } else {
      p.c.tcp_bytes_sent += sent;
      p.c.tcp_bytes_received += received;
      ++p.c.tcp_shards;
    }
  }
  if (restored) {
    admin::SetInternodeRdmaDegraded(peer, false);
    spdlog::info("inter-node RDMA to {} restored: shards >= {} bytes travel over RDMA again", peer,
                 settings_.min_size);
  }
}

void InternodeRdma::ReportFailure(std::string_view peer, const Error& error) {
  Peer& p = GetPeer(peer);
  bool transition = false;
  {
    std::lock_guard lock(mu_);
    ++p.c.errors;
    ++p.c.fallbacks;  // the caller resends this shard over TCP
    transition = !p.degraded;
    if (transition) ++p.c.transitions;
    p.degraded = true;
    p.retry_at = Clock::now() + settings_.retry_after;
    p.last_error = error.message;
  }
  admin::RecordInternodeRdmaError(peer);
  admin::RecordInternodeFallback(peer, "transfer_failed");
  if (transition) {
    admin::SetInternodeRdmaDegraded(peer, true);
    spdlog::warn(
        "inter-node RDMA to {} failed, falling back to TCP for this peer (rdma status "
        "degraded, retrying RDMA in {} ms): {}",
        peer, settings_.retry_after.count(), error.message);
  }
}

void InternodeRdma::SetPeerRdmaAddress(std::string_view peer, const std::string& ip) {
  auto parsed = rdma::soft::ParseIpv4(ip);
  Peer& p = GetPeer(peer);
  std::lock_guard lock(mu_);
  p.rdma_ip = parsed;
}

InternodePeerCounters InternodeRdma::counters(std::string_view peer) const {
  std::lock_guard lock(mu_);
  auto it = peers_.find(peer);
  return it == peers_.end() ? InternodePeerCounters{} : it->second->c;
}

InternodeRdmaStatus InternodeRdma::status() const {
  InternodeRdmaStatus s;
  s.enabled = settings_.enabled;
  s.unavailable_reason = settings_.enabled ? UnavailableReason() : unavailable_reason_;
  s.available = settings_.enabled && s.unavailable_reason.empty();
  s.fabric = std::string(rdma::FabricName(settings_.fabric));
  if (!s.enabled) s.fabric = "off";
  auto now = Clock::now();
  std::lock_guard lock(mu_);
  for (const auto& [name, p] : peers_) {
    if (!p->degraded) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->retry_at - now);
    s.degraded.push_back({name, p->last_error, std::max(left, std::chrono::milliseconds(0))});
  }
  return s;
}

}  // namespace rdmastor::cluster
