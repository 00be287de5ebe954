#include "cluster/peer_client.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "cluster/wire.h"
#include "common/hash.h"
#include "common/uri.h"

namespace rdmastor::cluster {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Error Denied(const std::string& why) {
  return MakeError(ErrorCode::kAccessDenied, "peer RPC refused: " + why);
}

}  // namespace

PeerAuth::PeerAuth(const std::string& access_key, const std::string& secret_key)
    : key_(hash::HmacSha256("rdmastor-peer-v1", access_key + "\n" + secret_key)),
      credential_hash_(hash::Sha256Hex("rdmastor-credential-check\n" + key_)) {}

std::string PeerAuth::Mac(std::string_view method, std::string_view target,
                          std::string_view ts) const {
  std::string msg;
  msg.append(method).append("\n").append(target).append("\n").append(ts);
  return hash::HexEncode(hash::HmacSha256(key_, msg));
}

std::string PeerAuth::Sign(std::string_view method, std::string_view target) const {
  const std::string ts = std::to_string(NowMs());
  return "v1 " + ts + " " + Mac(method, target, ts);
}

Status PeerAuth::Verify(const s3::HttpRequest& req) const {
  const std::string* h = req.FindHeader(kPeerAuthHeader);
  if (!h) return Denied("no " + std::string(kPeerAuthHeader) + " header");
  const std::string& v = *h;
  auto sp1 = v.find(' ');
  auto sp2 = sp1 == std::string::npos ? std::string::npos : v.find(' ', sp1 + 1);
  if (sp2 == std::string::npos || v.substr(0, sp1) != "v1") return Denied("malformed header");
  const std::string ts = v.substr(sp1 + 1, sp2 - sp1 - 1);
  char* end = nullptr;
  const long long when = std::strtoll(ts.c_str(), &end, 10);
  if (ts.empty() || *end != '\0') return Denied("malformed time");
  if (std::llabs(NowMs() - when) > kPeerAuthSkew.count()) {
    return Denied("request time is too far from this node's clock (replay, or clocks apart)");
  }
  if (!ConstantTimeEquals(v.substr(sp2 + 1), Mac(req.method, req.target, ts))) {
    return Denied("bad signature (different root credentials?)");
  }
  return {};
}

PeerClient::PeerClient(std::string host, uint16_t port, std::shared_ptr<const PeerAuth> auth,
                       PeerClientOptions options)
    : host_(std::move(host)),
      port_(port),
      address_(client::HostHeaderValue(host_, port_)),
      auth_(std::move(auth)),
      options_(options) {
  if (address_.find(':') == std::string::npos) address_ += ":" + std::to_string(port_);
}

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
  auto c = Acquire(timeout);
  client::HttpRequest req;
  req.method = std::string(method);
  req.target = target;
  req.headers = headers;
  req.headers.emplace_back(kPeerAuthHeader, auth_->Sign(method, target));
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
