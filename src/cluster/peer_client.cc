#include "cluster/peer_client.h"

#include <spdlog/spdlog.h>

#include "admin/metrics.h"
#include "cluster/topology.h"
#include "cluster/wire.h"
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

PeerClient::~PeerClient() = default;

bool PeerClient::reachable() const {
  std::lock_guard lock(mu_);
  return std::chrono::steady_clock::now() >= down_until_;
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
  o.connect_timeout = timeout.count() > 0 ? timeout : options_.connect_timeout;
  o.io_timeout = timeout.count() > 0 ? timeout : options_.io_timeout;
  o.local_ip = options_.local_ip;
  o.tls = options_.tls;
  return std::make_unique<client::HttpClient>(host_, port_, o);
}

void PeerClient::Release(std::unique_ptr<client::HttpClient> c, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  auto& idle = idle_[timeout.count()];
  if (idle.size() < options_.max_idle && c->connected()) idle.push_back(std::move(c));
}

Result<client::HttpResponse> PeerClient::Call(std::string_view method, const std::string& target,
                                              std::string_view body,
                                              const client::ResponseTarget& response,
                                              const s3::HeaderList& headers,
                                              std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    if (std::chrono::steady_clock::now() < down_until_) {
      return MakeError(ErrorCode::kServiceUnavailable, "peer " + address_ + " is unreachable");
    }
  }
  admin::RecordPeerCall(CallName(target));
  auto c = Acquire(timeout);
  client::HttpRequest req;
  req.method = std::string(method);
  req.target = target;
  req.headers = headers;
  req.headers.emplace_back(kPeerAuthHeader, auth_->Sign(method, address_, target, body, headers));
  req.body = body;
  auto resp = c->Send(req, response);
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

std::string QueryParam(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + uri::Encode(value, /*encode_slash=*/true);
}

}  // namespace rdmastor::cluster
