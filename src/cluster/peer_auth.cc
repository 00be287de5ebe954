#include "cluster/peer_auth.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "common/clock.h"
#include "common/hash.h"

namespace rdmastor::cluster {

namespace {

constexpr std::string_view kVersion = "v2";

bool IsLowerHex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Error Denied(const std::string& why) {
  return MakeError(ErrorCode::kAccessDenied, "peer RPC refused: " + why);
}

// The fields between single spaces (an empty one where two meet or at either end), at most 8.
std::vector<std::string_view> SplitSpaces(std::string_view v) {
  std::vector<std::string_view> out;
  for (;;) {
    auto sp = v.find(' ');
    out.push_back(v.substr(0, sp));
    if (sp == std::string_view::npos || out.size() == 8) return out;
    v.remove_prefix(sp + 1);
  }
}

}  // namespace

int64_t PeerAuthNowMs() {
  return NowNs() / 1'000'000;
}

std::string PeerAuthMessage(std::string_view method, std::string_view destination,
                            std::string_view target, std::string_view time_ms,
                            std::string_view nonce, std::string_view body_sha256,
                            const s3::HeaderList& headers) {
  // One field per line: no field can hold a newline (HTTP forbids it in the method, target and
  // header values; the others are digits and hex), so no two requests share a message.
  std::string msg = "rdmastor-peer-v2\n";
  for (std::string_view f : {method, destination, target, time_ms, nonce, body_sha256})
    msg.append(f).append("\n");
  for (const char* name : kPeerSignedHeaders) {
    msg.append(name);
    const std::string* value = nullptr;
    for (const auto& [k, v] : headers)
      if (k == name) {
        value = &v;
        break;
      }
    // "=value" when present, "-" when absent: a header cannot be added or dropped unnoticed.
    if (value)
      msg.append("=").append(*value);
    else
      msg.append("-");
    msg.append("\n");
  }
  return msg;
}

PeerAuth::PeerAuth(const std::string& access_key, const std::string& secret_key)
    : key_(hash::HmacSha256("rdmastor-peer-v1", access_key + "\n" + secret_key)),
      credential_hash_(hash::Sha256Hex("rdmastor-credential-check\n" + key_)) {}

std::string PeerAuth::Sign(std::string_view method, std::string_view destination,
                           std::string_view target, std::string_view body,
                           const s3::HeaderList& headers) const {
  return SignWith(method, destination, target, body, headers, PeerAuthNowMs(), hash::RandomHex(16));
}

std::string PeerAuth::SignWith(std::string_view method, std::string_view destination,
                               std::string_view target, std::string_view body,
                               const s3::HeaderList& headers, int64_t time_ms,
                               std::string_view nonce) const {
  const std::string ts = std::to_string(time_ms);
  const std::string body_sha256 = hash::Sha256Hex(body);
  const std::string mac = hash::HexEncode(hash::HmacSha256(
      key_, PeerAuthMessage(method, destination, target, ts, nonce, body_sha256, headers)));
  std::string out(kVersion);
  out.append(" ").append(ts).append(" ").append(nonce).append(" ").append(body_sha256);
  return out.append(" ").append(mac);
}

Result<PeerSignature> PeerAuth::Verify(const s3::HttpRequest& req, std::string_view destination,
                                       int64_t now_ms) const {
  const std::string* h = req.FindHeader(kPeerAuthHeader);
  if (!h) return Denied("no " + std::string(kPeerAuthHeader) + " header");
  const auto f = SplitSpaces(*h);
  if (f.empty() || f[0] != kVersion) {
    return Denied("not a " + std::string(kVersion) +
                  " signature (a node of an older release, or a forged header)");
  }
  if (f.size() != 5 || !IsLowerHex(f[2], 32) || !IsLowerHex(f[3], 64) || !IsLowerHex(f[4], 64))
    return Denied("malformed header");
  int64_t when = 0;
  auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), when);
  if (ec != std::errc() || p != f[1].data() + f[1].size() || f[1].empty() || f[1][0] == '-')
    return Denied("malformed time");
  if (now_ms - when > kPeerAuthSkew.count() || when - now_ms > kPeerAuthSkew.count()) {
    return Denied("request time is too far from this node's clock (replay, or clocks apart)");
  }
  // A signed header sent twice would leave which copy counts to the code that reads it.
  for (const char* name : kPeerSignedHeaders) {
    int n = 0;
    for (const auto& [k, v] : req.headers) n += k == name;
    if (n > 1) return Denied(std::string("header ") + name + " sent more than once");
  }
  const std::string expected = hash::HexEncode(hash::HmacSha256(
      key_, PeerAuthMessage(req.method, destination, req.target, f[1], f[2], f[3], req.headers)));
  if (!hash::ConstantTimeEquals(f[4], expected)) {
    return Denied(
        "bad signature (different root credentials, or a request altered or meant for another "
        "node)");
  }
  return PeerSignature{when, std::string(f[2]), std::string(f[3])};
}

uint64_t NodeId(std::string_view node_address) {
  const std::string d = hash::HmacSha256("rdmastor-node-id", node_address);
  uint64_t id = 0;
  std::memcpy(&id, d.data(), sizeof(id));
  return id;
}

std::string ConnectAuthMessage(uint64_t node, int64_t time_ms, uint64_t nonce,
                               const rdma::ConnectContext& c) {
  std::string msg = "rdmastor-rdma-connect-v1\n";
  for (uint64_t f : {node, static_cast<uint64_t>(time_ms), nonce, uint64_t{c.target_ip},
                     uint64_t{c.target_port}, uint64_t{c.endpoint}, uint64_t{c.source_ip}})
    msg.append(std::to_string(f)).append("\n");
  return msg;
}

namespace {
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
constexpr size_t kConnectMacBytes = 16;
Error ConnectDenied(const std::string& why) {
  return MakeError(ErrorCode::kAccessDenied, "inter-node RDMA connect refused: " + why);
}
}  // namespace

std::vector<uint8_t> PeerAuth::SignConnect(std::string_view node,
                                           const rdma::ConnectContext& c) const {
  uint64_t nonce = 0;
  auto raw = hash::HexDecode(hash::RandomHex(8));
  if (raw && raw->size() == 8) std::memcpy(&nonce, raw->data(), 8);
  return SignConnectWith(NodeId(node), c, PeerAuthNowMs(), nonce);
}

std::vector<uint8_t> PeerAuth::SignConnectWith(uint64_t node, const rdma::ConnectContext& c,
                                               int64_t time_ms, uint64_t nonce) const {
  std::vector<uint8_t> out(kConnectProofBytes);
  Put64(out.data(), node);
  Put64(out.data() + 8, static_cast<uint64_t>(time_ms));
  Put64(out.data() + 16, nonce);
  const std::string mac = hash::HmacSha256(key_, ConnectAuthMessage(node, time_ms, nonce, c));
  std::memcpy(out.data() + 24, mac.data(), kConnectMacBytes);
  return out;
}

Result<ConnectClaim> PeerAuth::VerifyConnect(const rdma::ConnectContext& c, const uint8_t* proof,
                                             size_t len, int64_t now_ms) const {
  if (proof == nullptr || len == 0)
    return ConnectDenied("it carries no proof (not a node of this cluster, or an older release)");
  if (len != kConnectProofBytes) return ConnectDenied("malformed proof");
  ConnectClaim claim;
  claim.node = Get64(proof);
  const auto when = static_cast<int64_t>(Get64(proof + 8));
  const uint64_t nonce = Get64(proof + 16);
  if (now_ms - when > kPeerAuthSkew.count() || when - now_ms > kPeerAuthSkew.count())
    return ConnectDenied("its time is too far from this node's clock (replay, or clocks apart)");
  const std::string mac = hash::HmacSha256(key_, ConnectAuthMessage(claim.node, when, nonce, c));
  if (!hash::ConstantTimeEquals(
          std::string_view(reinterpret_cast<const char*>(proof + 24), kConnectMacBytes),
          std::string_view(mac.data(), kConnectMacBytes)))
    return ConnectDenied(
        "bad MAC (different root credentials, or a proof made for another target or source "
        "address)");
  std::string both(16, '\0');
  std::memcpy(both.data(), proof, 8);
  std::memcpy(both.data() + 8, proof + 16, 8);
  claim.signature = {when, hash::HexEncode(both), {}};
  return claim;
}

Status CheckBody(const PeerSignature& sig, std::string_view body) {
  if (!hash::ConstantTimeEquals(hash::Sha256Hex(body), sig.body_sha256))
    return Denied("the body is not the one the request was signed with");
  return {};
}

PeerReplayCache::PeerReplayCache(size_t capacity, int64_t start_ms,
                                 std::chrono::milliseconds window)
    : capacity_(std::max<size_t>(capacity, 1)),
      window_ms_(window.count()),
      // Refuses every request signed before start_ms (its expiry is below start + window).
      floor_(start_ms + window.count() - 1),
      start_ms_(start_ms) {}

size_t PeerReplayCache::size() const {
  std::lock_guard lock(mu_);
  return seen_.size();
}

Status PeerReplayCache::Admit(const PeerSignature& sig, int64_t now_ms) {
  auto raw = hash::HexDecode(sig.nonce);
  if (!raw || raw->size() != 16) return Denied("malformed nonce");
  Nonce nonce;
  std::memcpy(&nonce.first, raw->data(), 8);
  std::memcpy(&nonce.second, raw->data() + 8, 8);
  const int64_t expiry = sig.time_ms + window_ms_;
  std::lock_guard lock(mu_);
  while (!by_expiry_.empty() && by_expiry_.top().first < now_ms) {
    seen_.erase(by_expiry_.top().second);
    by_expiry_.pop();
  }
  // Checked here again (not only in Verify): an entry is dropped once its expiry is past, so a
  // request that old must not be admitted even if Verify ran a moment earlier.
  if (expiry < now_ms)
    return Denied("request time is too far from this node's clock (replay, or clocks apart)");
  if (expiry <= floor_) {
    if (floor_ == start_ms_ + window_ms_ - 1 && sig.time_ms < start_ms_)
      return Denied(kPeerSignedBeforeStart);
    return Denied(
        "request older than the replay cache still covers (it is full: peer requests arrive "
        "faster than it holds for the skew window; see docs/architecture.md)");
  }
  if (!seen_.insert(nonce).second) return Denied("nonce already used (a replayed request)");
  by_expiry_.emplace(expiry, nonce);
  if (seen_.size() > capacity_) {
    floor_ = std::max(floor_, by_expiry_.top().first);
    seen_.erase(by_expiry_.top().second);
    by_expiry_.pop();
  }
  return {};
}

}  // namespace rdmastor::cluster
