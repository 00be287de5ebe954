#include "rdma/rc_sessions.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <random>

#include "common/text.h"
#include "rdma/soft/net.h"

namespace rdmastor::rdma {

Result<uint64_t> ParseRcConnectionId(std::string_view text) {
  auto bad = [&] {
    return MakeError(ErrorCode::kInvalidRDMAToken,
                     std::string(kRdmaConnectionHeader) +
                         ": expected the connection id as 16 lower-case hex digits, got '" +
                         std::string(text.substr(0, 32)) + "'");
  };
  if (text.size() != 16) return bad();
  uint64_t v = 0;
  for (char c : text) {
    int d = text::HexDigit(c, /*lower_only=*/true);
    if (d < 0) return bad();
    v = v << 4 | static_cast<uint64_t>(d);
  }
  if (v == 0) return bad();
  return v;
}

std::string FormatRcConnectionId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

struct RcSessions::Entry {
  uint64_t id = 0;
  RcPeer peer;
  std::unique_ptr<Endpoint> endpoint;
  bool lent = false;
  std::string principal;  // pinned by the first request that used the connection
  std::chrono::steady_clock::time_point last_used;
};

// One transfer's use of a connection's endpoint. Work request ids of one Transfer are sequence
// numbers and an RC QP completes in order, so a successful completion of id N means every
// request up to N is done: the connection is clean (reusable) when the highest completed id
// reached the highest posted one and no completion failed.
class RcSessions::Lent final : public Endpoint {
 public:
  Lent(RcSessions* owner, std::shared_ptr<Entry> entry) : owner_(owner), entry_(std::move(entry)) {}
  ~Lent() override {
    bool clean = !failed_ && completed_ >= posted_ && entry_->endpoint->Alive();
    owner_->GiveBack(entry_, clean);
  }
  Status PostSend(const WorkRequest& wr) override {
    posted_ = std::max(posted_, wr.wr_id);
    auto st = entry_->endpoint->PostSend(wr);
    if (!st.ok()) failed_ = true;
    return st;
  }
  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) override {
    auto n = entry_->endpoint->PollCompletions(out, max, wait);
    if (!n.ok()) {
      failed_ = true;
      return n;
    }
    for (int i = 0; i < *n; ++i) {
      if (out[i].status != WcStatus::kSuccess)
        failed_ = true;
      else
        completed_ = std::max(completed_, out[i].wr_id);
    }
    return n;
  }
  bool Alive() override { return !failed_ && entry_->endpoint->Alive(); }
  std::string error_detail() const override { return entry_->endpoint->error_detail(); }

 private:
  RcSessions* owner_;
  std::shared_ptr<Entry> entry_;
  uint64_t posted_ = 0, completed_ = 0;
  bool failed_ = false;
};

RcSessions::RcSessions(RcLimits limits, Clock clock)
    : limits_(std::move(limits)), clock_(std::move(clock)) {}

RcSessions::~RcSessions() {
  {
    std::lock_guard lock(reaper_mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

std::chrono::steady_clock::time_point RcSessions::Now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

size_t RcSessions::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t RcSessions::CountFrom(uint32_t ip) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, e] : entries_) n += e->peer.ip == ip;
  return n;
}

RcStats RcSessions::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::optional<Error> RcSessions::RefusalLocked(uint32_t ip) const {
  size_t from = 0;
  for (const auto& [id, e] : entries_) from += e->peer.ip == ip;
  if (from >= limits_.per_source)
    return MakeError(ErrorCode::kSlowDown, "RC: " + soft::net::Ipv4String(ip) + " already holds " +
                                               std::to_string(limits_.per_source) +
                                               " connections (RDMASTOR_RDMA_RC_PER_SOURCE)");
  if (entries_.size() >= limits_.total)
    return MakeError(ErrorCode::kSlowDown, "RC: the server holds " + std::to_string(limits_.total) +
                                               " connections (RDMASTOR_RDMA_RC_MAX)");
  return std::nullopt;
}

Status RcSessions::CanAdmit(uint32_t ip) {
  std::lock_guard lock(mu_);
  if (auto why = RefusalLocked(ip)) {
    ++stats_.refused;
    return *why;
  }
  return {};
}

uint64_t RcSessions::NewId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t id = 0;
  while (id == 0) id = rng();
  return id;
}

void RcSessions::Expect(uint64_t id) {
  std::lock_guard lock(mu_);
  expected_.insert(id);
}

void RcSessions::Forget(uint64_t id) {
  {
    std::lock_guard lock(mu_);
    expected_.erase(id);
  }
  freed_.notify_all();
}

Result<uint64_t> RcSessions::Admit(const RcPeer& peer, std::unique_ptr<Endpoint> endpoint,
                                   uint64_t proposed) {
  std::unique_ptr<Endpoint> refused;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  // A Lend waiting for it looks again once this admission released the lock.
  if (proposed && expected_.erase(proposed)) freed_.notify_all();
  if (auto why = RefusalLocked(peer.ip)) {
    ++stats_.refused;
    refused = std::move(endpoint);
    return *why;
  }
  if (proposed && entries_.count(proposed)) {
    refused = std::move(endpoint);
    return MakeError(ErrorCode::kInvalidArgument, "RC: connection id already in use");
  }
  uint64_t id = proposed;
  while (id == 0 || entries_.count(id)) id = NewId();
  auto e = std::make_shared<Entry>();
  e->id = id;
  e->peer = peer;
  e->endpoint = std::move(endpoint);
  e->last_used = Now();
  entries_[id] = std::move(e);
  ++stats_.admitted;
  return id;
}

Result<std::unique_ptr<Endpoint>> RcSessions::Lend(uint64_t id, const RemoteAddress& token_addr,
                                                   const RequestOrigin& origin,
                                                   const std::string& principal) {
  const std::string name = FormatRcConnectionId(id);
  std::unique_lock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() && expected_.count(id)) {  // accepted: being established
    freed_.wait_for(lock, limits_.lend_wait, [&] { return !expected_.count(id); });
    it = entries_.find(id);
  }
  if (it == entries_.end())
    return MakeError(ErrorCode::kRDMANotSupported,
                     "the RC connection " + name +
                         " is not open (closed, timed out or never opened): connect again");
  std::shared_ptr<Entry> e = it->second;
  auto from = soft::ParseIpv4(origin.remote_ip);
  bool source_ok = from && *from == e->peer.ip;
  for (const auto& c : limits_.allow) source_ok = source_ok || (from && c.Contains(*from));
  if (!source_ok) {
    ++stats_.foreign;
    return MakeError(ErrorCode::kAccessDenied, "the RC connection " + name + " was opened from " +
                                                   soft::net::Ipv4String(e->peer.ip) +
                                                   ", not from " + origin.remote_ip);
  }
  if (token_addr.qpn != e->peer.qpn || !token_addr.has_gid || token_addr.gid != e->peer.gid) {
    ++stats_.foreign;
    return MakeError(ErrorCode::kAccessDenied,
                     "x-amz-rdma-token names another queue pair or GID than the RC connection " +
                         name + " (its qpn and gid must be the connection's own)");
  }
  if (!e->principal.empty() && e->principal != principal) {
    ++stats_.foreign;
    return MakeError(ErrorCode::kAccessDenied,
                     "the RC connection " + name + " belongs to another access key");
  }
  if (!freed_.wait_for(lock, limits_.lend_wait, [&] { return !e->lent || !e->endpoint; }))
    return MakeError(ErrorCode::kSlowDown,
                     "the RC connection " + name + " is busy with another transfer; retry");
  if (!e->endpoint || !entries_.count(id))
    return MakeError(ErrorCode::kRDMANotSupported,
                     "the RC connection " + name + " closed: connect again");
  if (e->principal.empty()) e->principal = principal;
  e->lent = true;
  return std::unique_ptr<Endpoint>(new Lent(this, e));
}

void RcSessions::GiveBack(const std::shared_ptr<Entry>& entry, bool clean) {
  std::unique_ptr<Endpoint> closing;
  {
    std::lock_guard lock(mu_);
    entry->lent = false;
    entry->last_used = Now();
    if (!clean) {
      ++stats_.closed_dirty;
      entries_.erase(entry->id);
      closing = std::move(entry->endpoint);
    }
  }
  freed_.notify_all();
  if (closing)
    spdlog::debug("RC: closed connection {} after a failed transfer",
                  FormatRcConnectionId(entry->id));
}

size_t RcSessions::Reap() {
  std::vector<std::unique_ptr<Endpoint>> closing;
  {
    std::lock_guard lock(mu_);
    auto now = Now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      Entry& e = *it->second;
      bool idle = now - e.last_used > limits_.idle;
      bool dead = !idle && !e.endpoint->Alive();
      if (e.lent || (!idle && !dead)) {
        ++it;
        continue;
      }
      ++(idle ? stats_.closed_idle : stats_.closed_dead);
      closing.push_back(std::move(e.endpoint));
      it = entries_.erase(it);
    }
  }
  if (!closing.empty()) freed_.notify_all();
  return closing.size();
}

size_t RcSessions::CloseAll() {
  std::vector<std::unique_ptr<Endpoint>> closing;
  size_t n = 0;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, e] : entries_) {
      ++n;
      ++stats_.closed_dead;
      // A lent one: its Lent holds the entry, and the endpoint goes with it.
      if (!e->lent) closing.push_back(std::move(e->endpoint));
    }
    entries_.clear();
    expected_.clear();
  }
  freed_.notify_all();
  return n;
}

void RcSessions::StartReaper(std::chrono::milliseconds every) {
  reaper_ = std::thread([this, every] {
    std::unique_lock lock(reaper_mu_);
    while (!reaper_cv_.wait_for(lock, every, [this] { return stopping_; })) {
      lock.unlock();
      Reap();
      lock.lock();
    }
  });
}

}  // namespace rdmastor::rdma
