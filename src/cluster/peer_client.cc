#include "cluster/peer_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "admin/metrics.h"
#include "cluster/topology.h"
#include "cluster/wire.h"
#include "common/no_block.h"
#include "common/uri.h"

namespace rdmastor::cluster {

namespace {
// The call a peer target names: the last path segment ("renamedata", "lock", "config").
std::string_view CallName(std::string_view target) {
  target = target.substr(0, target.find('?'));
  return target.substr(target.rfind('/') + 1);
}
}  // namespace

PeerClient::PeerClient(std::string host, uint16_t port, std::shared_ptr<const PeerAuth> auth,
                       PeerClientOptions options)
    : host_(std::move(host)),
      port_(port),
      address_(NodeAddress(host_, port_)),
      auth_(std::move(auth)),
      options_(options) {}

PeerClient::~PeerClient() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  health_cv_.notify_all();
  if (health_.joinable()) health_.join();
}

bool PeerClient::reachable() const {
  std::lock_guard lock(mu_);
  return !offline_ && std::chrono::steady_clock::now() >= down_until_;
}

bool PeerClient::online() const {
  std::lock_guard lock(mu_);
  return !offline_;
}

void PeerClient::StartHealthCheck() {
  std::lock_guard lock(mu_);
  if (health_.joinable() || options_.ping_interval.count() <= 0) return;
  health_ = std::thread([this] { HealthLoop(); });
}

void PeerClient::MarkOfflineLocked(const std::string& why) {
  if (!offline_) spdlog::warn("peer {} is offline: {}", address_, why);
  offline_ = true;
  // The calls waiting on it fail now (each closes its connection), not after the I/O timeout.
  for (auto* c : in_flight_) c->Abort();
  for (auto& [unused, idle] : idle_)
    for (auto& i : idle) i->Close();
  idle_.clear();
}

void PeerClient::HealthLoop() {
  using Clock = std::chrono::steady_clock;
  bool again = false;  // the last ping was inconclusive: ask again at once
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (health_cv_.wait_for(lock, again ? std::chrono::milliseconds(0) : options_.ping_interval,
                              [&] { return stopping_; }))
        return;
    }
    again = false;
    const auto t0 = Clock::now();
    auto r = Exchange("GET", kPeerPingTarget, {}, client::ResponseTarget::String(), {},
                      options_.ping_timeout);
    const auto took = Clock::now() - t0;
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (r.ok()) {  // any answer (even a refusal) means the peer is there
      if (offline_) spdlog::info("peer {} is online again", address_);
      offline_ = false;
      down_until_ = {};
      continue;
    }
    // A ping that took far longer than its timeout says that this process did not run (stopped,
    // starved), not that the peer is gone: ask again before deciding.
    if (took > options_.ping_timeout + std::chrono::seconds(1)) {
      spdlog::debug("peer {}: ping inconclusive after {} ms: {}", address_,
                    std::chrono::duration_cast<std::chrono::milliseconds>(took).count(),
                    r.error().message);
      again = true;
      continue;
    }
    MarkOfflineLocked(r.error().message);
  }
}

std::unique_ptr<client::HttpClient> PeerClient::Acquire(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    auto& idle = idle_[timeout.count()];
    if (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      return c;
    }
  }
  client::HttpClientOptions o;
  o.connect_timeout =
      timeout.count() > 0 ? std::min(timeout, options_.connect_timeout) : options_.connect_timeout;
  o.io_timeout = timeout.count() > 0 ? timeout : options_.io_timeout;
  o.local_ip = options_.local_ip;
  o.tls = options_.tls;
  return std::make_unique<client::HttpClient>(host_, port_, o);
}

void PeerClient::Release(std::unique_ptr<client::HttpClient> c, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  auto& idle = idle_[timeout.count()];
  if (idle.size() < options_.max_idle && c->connected() && !c->aborted() && !offline_)
    idle.push_back(std::move(c));
}

Result<client::HttpResponse> PeerClient::Call(std::string_view method, const std::string& target,
                                              std::string_view body,
                                              const client::ResponseTarget& response,
                                              const s3::HeaderList& headers,
                                              std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    if (offline_) {
      return MakeError(ErrorCode::kServiceUnavailable,
                       "peer " + address_ + " is offline (no answer to the health check)");
    }
    if (std::chrono::steady_clock::now() < down_until_) {
      return MakeError(ErrorCode::kServiceUnavailable, "peer " + address_ + " is unreachable");
    }
  }
  admin::RecordPeerCall(CallName(target));
  auto resp = Exchange(method, target, body, response, headers, timeout);
  if (!resp.ok()) return resp.error();
  if (!resp->success()) {
    const std::string* code = resp->FindHeader(kErrorHeader);
    if (!code) {
      return MakeError(resp->status == 403 ? ErrorCode::kAccessDenied : ErrorCode::kInternalError,
                       "peer " + address_ + " answered HTTP " + std::to_string(resp->status) +
                           " to " + std::string(method) + " " + target);
    }
    return MakeError(ErrorCodeFromName(*code), resp->body);
  }
  return resp;
}

Result<client::HttpResponse> PeerClient::Exchange(std::string_view method,
                                                  const std::string& target, std::string_view body,
                                                  const client::ResponseTarget& response,
                                                  const s3::HeaderList& headers,
                                                  std::chrono::milliseconds timeout) {
  if (!noblock::MayWait()) return noblock::WouldBlock("a call to peer " + address_);
  auto c = Acquire(timeout);
  client::HttpRequest req;
  req.method = std::string(method);
  req.target = target;
  req.headers = headers;
  req.headers.emplace_back(kPeerAuthHeader, auth_->Sign(method, address_, target, body, headers));
  req.body = body;
  {
    std::lock_guard lock(mu_);
    if (offline_ && target != kPeerPingTarget) c->Abort();  // went offline since Call looked
    in_flight_.insert(c.get());
  }
  auto resp = c->Send(req, response);
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(c.get());
  }
  if (!resp.ok()) {
    {
      std::lock_guard lock(mu_);
      down_until_ = std::chrono::steady_clock::now() + options_.down_for;
      for (auto& [unused, idle] : idle_)
        for (auto& i : idle) i->Close();
      idle_.clear();
    }
    spdlog::debug("peer {}: {} {}: {}", address_, method, target, resp.error().message);
    return MakeError(ErrorCode::kServiceUnavailable,
                     "peer " + address_ + " unreachable: " + resp.error().message);
  }
  Release(std::move(c), timeout);
  return resp;
}

std::string QueryParam(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + uri::Encode(value, /*encode_slash=*/true);
}

}  // namespace rdmastor::cluster
