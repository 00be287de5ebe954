#include "rdma/s3_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "rdma/device_monitor.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

Result<std::shared_ptr<S3RdmaService::Plane>> S3RdmaService::MakePlane(
    std::unique_ptr<Fabric> fabric, const ServiceOptions& options) {
  auto plane = std::make_shared<Plane>();
  plane->fabric = std::move(fabric);
  plane->pool =
      std::make_unique<BufferPool>(*plane->fabric, options.staging_bytes, options.max_buffers);
  // One staging buffer registered now (it stays in the pool): registration pins memory, so a low
  // RLIMIT_MEMLOCK shows here, at start, with its fix in the message (RegistrationHint), instead
  // of as a 501 on the first request.
  if (auto first = plane->pool->Acquire(std::chrono::milliseconds(0)); !first.ok())
    return MakeError(first.error().code, "cannot register an RDMA staging buffer of " +
                                             std::to_string(options.staging_bytes) +
                                             " bytes: " + first.error().message);
  return plane;
}

S3RdmaService::S3RdmaService(std::unique_ptr<Fabric> fabric, std::string unavailable_reason,
                             ServiceOptions options, ReopenFn reopen)
    : unavailable_reason_(std::move(unavailable_reason)),
      options_(options),
      reopen_(std::move(reopen)) {
  options_.slot_bytes = std::clamp<size_t>(options_.slot_bytes, 4096, options_.staging_bytes);
  per_client_cap_ = std::clamp<size_t>(options_.transfers_per_client, 1,
                                       std::max<size_t>(1, options_.max_buffers / 2));
  if (!fabric) return;
  auto plane = MakePlane(std::move(fabric), options_);
  if (!plane.ok()) {
    unavailable_reason_ = plane.error().message;
    spdlog::error("S3 over RDMA: unavailable, requests with x-amz-rdma-token get 501: {}",
                  unavailable_reason_);
    return;
  }
  plane_ = std::move(plane).value();
  if (!reopen_) return;
  // A removed or failed device: everything made on it freed now, opened again when it is back.
  DeviceMonitor::Hooks hooks;
  hooks.gone = [this]() -> std::string {
    auto p = this->plane();
    if (!p || !p->fabric->NeedsReopen()) return "";
    auto why = p->fabric->Unavailable();
    return why.empty() ? "the RDMA device failed" : why;
  };
  hooks.release = [this](const std::string& why) { Release(why); };
  hooks.reopen = [this] { return Reopen(); };
  monitor_ = std::make_unique<DeviceMonitor>(
      DeviceMonitorOptions{options_.device_look, options_.reopen_first, options_.reopen_cap},
      std::move(hooks));
}

std::shared_ptr<S3RdmaService::Plane> S3RdmaService::plane() const {
  std::lock_guard lock(mu_);
  return plane_;
}

void S3RdmaService::Release(const std::string& why) {
  std::unique_ptr<RcListener> listener;
  {
    std::lock_guard lock(rc_mu_);
    listener = std::move(rc_listener_);
  }
  listener.reset();  // stops accepting; frees the handshakes in progress
  size_t closed = rc_sessions_ ? rc_sessions_->CloseAll() : 0;
  long users = 0;
  {
    std::lock_guard lock(mu_);
    gone_reason_ = why.empty() ? "the RDMA device failed" : why;
    users = plane_.use_count() - 1;
    plane_.reset();  // the last request running on it frees it
  }
  spdlog::error(
      "S3 over RDMA: degraded, requests with x-amz-rdma-token get 501: {}; freed the RC listener "
      "and {} RC connection(s){}; HTTP goes on",
      why, closed,
      users > 0 ? ", the staging buffers when " + std::to_string(users) + " request(s) end"
                : ", the staging buffers");
}

bool S3RdmaService::Reopen() {
  auto fabric = reopen_();
  if (!fabric.ok()) {
    spdlog::debug("S3 over RDMA: the device is not back yet: {}", fabric.error().message);
    return false;
  }
  auto plane = MakePlane(std::move(fabric).value(), options_);
  if (!plane.ok()) {
    spdlog::warn("S3 over RDMA: reopened the device but {}", plane.error().message);
    return false;
  }
  if (rc_port_ != 0) {
    auto listener = StartRcListener(**plane, rc_port_);
    if (!listener.ok()) {
      spdlog::warn("S3 over RDMA: reopened the device but the RC listener: {}",
                   listener.error().message);
      return false;
    }
    std::lock_guard lock(rc_mu_);
    rc_listener_ = std::move(listener).value();
  }
  {
    std::lock_guard lock(mu_);
    plane_ = std::move(plane).value();
    gone_reason_.clear();
  }
  spdlog::info("S3 over RDMA: the device was reopened; serving again{}",
               rc_port_ ? " (RC on port " + std::to_string(rc_port_) + ")" : std::string());
  return true;
}

bool S3RdmaService::available() const {
  auto p = plane();
  return p && p->fabric->Unavailable().empty();
}

std::string S3RdmaService::fabric_name() const {
  auto p = plane();
  if (p) return std::string(p->fabric->name());
  return reopen_ ? "verbs" : "none";
}

std::string S3RdmaService::unavailable_reason() const {
  std::shared_ptr<Plane> p;
  {
    std::lock_guard lock(mu_);
    if (!plane_)
      return gone_reason_.empty() ? unavailable_reason_
                                  : "the verbs fabric is degraded: " + gone_reason_;
    p = plane_;
  }
  if (auto why = p->fabric->Unavailable(); !why.empty())
    return "the " + std::string(p->fabric->name()) + " fabric is degraded: " + why;
  return "";
}

Error S3RdmaService::Decline() const {
  std::string why = unavailable_reason();
  if (why.empty()) why = "S3 over RDMA is not available";
  {
    std::lock_guard lock(mu_);
    if (!plane_ && gone_reason_.empty()) return MakeError(ErrorCode::kRDMANotSupported, why);
  }
  return DegradedDecline(why);
}

S3RdmaService::~S3RdmaService() {
  monitor_.reset();
  // The listener goes before the connections' table and the plane it was made on.
  std::lock_guard lock(rc_mu_);
  rc_listener_.reset();
}


void S3RdmaService::ClientSlot::Release() {
  if (!service_) return;
  std::lock_guard lock(service_->clients_mu_);
  auto it = service_->active_by_client_.find(key_);
  if (it != service_->active_by_client_.end() && --it->second == 0)
    service_->active_by_client_.erase(it);
  service_ = nullptr;
}

Result<S3RdmaService::ClientSlot> S3RdmaService::AcquireClientSlot(const RequestOrigin& origin) {
  // One key per client host whichever way its address is written (IPv4-mapped or not).
  std::string key = origin.remote_ip;
  if (key.rfind("::ffff:", 0) == 0) key.erase(0, 7);
  std::lock_guard lock(clients_mu_);
  size_t& active = active_by_client_[key];
  if (active >= per_client_cap_) {
    if (active == 0) active_by_client_.erase(key);
    stats_.refused_per_client.fetch_add(1, std::memory_order_relaxed);
    return MakeError(ErrorCode::kSlowDown,
                     "this client already runs " + std::to_string(per_client_cap_) +
                         " S3-over-RDMA transfers (RDMASTOR_RDMA_TRANSFERS_PER_CLIENT); retry "
                         "when one has finished");
  }
  ++active;
  return ClientSlot(this, std::move(key));
}

Result<BufferPool::Buffer> S3RdmaService::AcquireStaging(Plane& plane) {
  auto now = plane.pool->Acquire(std::chrono::milliseconds(0));
  if (now.ok() || now.error().code != ErrorCode::kSlowDown) return now;
  // Every staging buffer is busy: RDMASTOR_RDMA_TRANSFERS_MAX is reached.
  auto later = plane.pool->Acquire(options_.buffer_wait);
  (later.ok() ? stats_.staging_waited : stats_.staging_refused)
      .fetch_add(1, std::memory_order_relaxed);
  if (later.ok() || later.error().code != ErrorCode::kSlowDown) return later;
  return MakeError(ErrorCode::kSlowDown,
                   "all " + std::to_string(plane.pool->max_buffers()) +
                       " S3-over-RDMA transfers of this server (RDMASTOR_RDMA_TRANSFERS_MAX) "
                       "stayed busy for " +
                       std::to_string(options_.buffer_wait.count()) + " ms; retry later");
}

Result<std::unique_ptr<Endpoint>> S3RdmaService::EndpointFor(Plane& plane, const RdmaToken& token,
                                                             const RequestOrigin& origin) {
  if (origin.rc_connection == 0) {
    auto ep = plane.fabric->Connect(RemoteAddress::FromToken(token), origin);
    if (!ep.ok() && IsOriginDecline(ep.error())) {
      stats_.origin_declined.fetch_add(1, std::memory_order_relaxed);
      // Once per client host: behind a load balancer every request of a client declines alike.
      std::string key = origin.remote_ip;
      if (key.rfind("::ffff:", 0) == 0) key.erase(0, 7);
      std::lock_guard lock(clients_mu_);
      if (origin_logged_.size() < kOriginLogMax && origin_logged_.insert(key).second)
        spdlog::warn("S3 over RDMA declined for client {} (it falls back to TCP; logged once per "
                     "client): {}",
                     key, ep.error().message);
    }
    return ep;
  }
  if (!rc_sessions_)
    return MakeError(ErrorCode::kRDMANotSupported,
                     "this server serves no RC connections (MINIO_RDMA_RC_PORT=off, or its "
                     "fabric has no RC listener)");
  return rc_sessions_->Lend(origin.rc_connection, RemoteAddress::FromToken(token), origin,
                            origin.principal);
}

Result<std::unique_ptr<RcListener>> S3RdmaService::StartRcListener(Plane& plane, uint16_t port) {
  std::string bind = options_.rc_bind_ip;
  if (!soft::ParseIpv4(bind)) bind = "0.0.0.0";  // all interfaces, as the S3 listener
  RcAdmission admission;
  admission.can_admit = [raw = rc_sessions_.get()](uint32_t ip) { return raw->CanAdmit(ip); };
  admission.admit = [raw = rc_sessions_.get()](const RcPeer& peer, std::unique_ptr<Endpoint> ep,
                                               uint64_t proposed) {
    return raw->Admit(peer, std::move(ep), proposed);
  };
  admission.expect = [raw = rc_sessions_.get()](uint64_t id) { raw->Expect(id); };
  admission.forget = [raw = rc_sessions_.get()](uint64_t id) { raw->Forget(id); };
  return plane.fabric->ListenRc(bind, port, std::move(admission));
}

Status S3RdmaService::ListenRc(uint16_t port) {
  auto p = plane();
  if (!p) return MakeError(ErrorCode::kRDMANotSupported, unavailable_reason());
  auto sessions = std::make_shared<RcSessions>(options_.rc);
  rc_sessions_ = sessions;
  auto listener = StartRcListener(*p, port);
  if (!listener.ok()) {
    rc_sessions_.reset();
    return listener.error();
  }
  sessions->StartReaper();
  rc_port_ = (*listener)->port();
  {
    std::lock_guard lock(rc_mu_);
    rc_listener_ = std::move(listener).value();
  }
  spdlog::info(
      "S3 over RDMA: RC connections accepted on {}:{} ({} per client address, {} in all, "
      "closed after {} ms idle)",
      soft::ParseIpv4(options_.rc_bind_ip) ? options_.rc_bind_ip : "0.0.0.0", rc_port_.load(),
      options_.rc.per_source, options_.rc.total, options_.rc.idle.count());
  return {};
}

Result<S3RdmaService::PushResult> S3RdmaService::PushToClient(const RdmaToken& token,
                                                              const RequestOrigin& origin,
                                                              uint64_t length,
                                                              const ReadAtFn& read_at) {
  auto plane = this->plane();
  if (!plane || !plane->fabric->Unavailable().empty()) return Decline();
  stats_.transfers.fetch_add(1, std::memory_order_relaxed);
  auto fail = [&](Error e) {
    stats_.failures.fetch_add(1, std::memory_order_relaxed);
    return e;
  };
  PushResult out;
  if (length == 0) return out;  // nothing to move: no endpoint needed
  auto client_slot = AcquireClientSlot(origin);
  if (!client_slot.ok()) return fail(client_slot.error());
  auto buffer = AcquireStaging(*plane);
  if (!buffer.ok()) return fail(buffer.error());
  auto ep = EndpointFor(*plane, token, origin);
  if (!ep.ok()) return fail(ep.error());
  StagedTransfer t(**ep, Opcode::kWrite, RemoteBuffer::FromToken(token), options_.transfer,
                   Staging::Of(*buffer, options_.slot_bytes), length);
  auto moved = t.Push([&](uint64_t off, char* stage, size_t want) -> Result<size_t> {
    for (size_t got = 0; got < want;) {
      auto n = read_at(off + got, stage + got, want - got);
      if (!n.ok()) return n.error();
      if (*n == 0) return MakeError(ErrorCode::kInternalError, "object shorter than its metadata");
      got += *n;
    }
    return want;
  });
  if (!moved.ok()) return fail(moved.error());
  out.bytes = length;
  stats_.bytes_to_clients.fetch_add(length, std::memory_order_relaxed);
  return out;
}

Result<std::unique_ptr<S3RdmaService::ClientBody>> S3RdmaService::PullFromClient(
    const RdmaToken& token, const RequestOrigin& origin) {
  auto plane = this->plane();
  if (!plane || !plane->fabric->Unavailable().empty()) return Decline();
  stats_.transfers.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<ClientBody> body(new ClientBody());
  body->service_ = this;
  body->plane_ = plane;
  body->total_ = token.rsize;
  if (token.rsize == 0) return body;
  auto fail = [&](Error e) {
    stats_.failures.fetch_add(1, std::memory_order_relaxed);
    return e;
  };
  auto client_slot = AcquireClientSlot(origin);
  if (!client_slot.ok()) return fail(client_slot.error());
  body->client_slot_ = std::move(client_slot).value();
  auto buffer = AcquireStaging(*plane);
  if (!buffer.ok()) return fail(buffer.error());
  body->buffer_ = std::move(buffer).value();
  auto ep = EndpointFor(*plane, token, origin);
  if (!ep.ok()) return fail(ep.error());
  body->endpoint_ = std::move(ep).value();
  body->transfer_ = std::make_unique<StagedTransfer>(
      *body->endpoint_, Opcode::kRead, RemoteBuffer::FromToken(token), options_.transfer,
      Staging::Of(body->buffer_, options_.slot_bytes), token.rsize);
  // Read ahead into every slot now: a refused transfer fails here, before the object layer runs.
  if (auto st = body->transfer_->ReadAhead(); !st.ok()) return fail(st.error());
  return body;
}

S3RdmaService::ClientBody::~ClientBody() {
  // Destroy the transfer and endpoint before the staging buffer returns to the pool.
  transfer_.reset();
  endpoint_.reset();
}

Result<size_t> S3RdmaService::ClientBody::Read(char* buf, size_t len) {
  if (failure_) return *failure_;
  if (consumed_ >= total_ || len == 0) return size_t{0};
  auto fail = [&](Error e) {
    failure_ = e;
    service_->stats_.failures.fetch_add(1, std::memory_order_relaxed);
    return e;
  };
  // The one user-space copy of the PUT path: staging slot -> the object layer's buffer.
  auto n = transfer_->Pull(buf, len);
  if (!n.ok()) return fail(n.error());
  copied_ += *n;
  consumed_ += *n;
  service_->stats_.bytes_copied.fetch_add(*n, std::memory_order_relaxed);
  service_->stats_.bytes_from_clients.fetch_add(*n, std::memory_order_relaxed);
  return n;
}

}  // namespace rdmastor::rdma
