#include "cluster/channel_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace rdmastor::cluster {

std::optional<int> ParseChannelCount(std::string_view text) {
  if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != text.npos)
    return std::nullopt;
  int n = 0;
  for (char c : text) n = n * 10 + (c - '0');
  if (n < 1 || n > kMaxChannels) return std::nullopt;
  return n;
}

ChannelAction DecideAcquire(const ChannelCounts& c, ChannelClock::time_point now,
                            ChannelClock::time_point deadline) {
  if (c.idle > 0) return ChannelAction::kReuseIdle;
  if (c.busy + c.connecting < c.max) return ChannelAction::kOpenNew;
  return now >= deadline ? ChannelAction::kGiveUp : ChannelAction::kWait;
}

bool KeepAfterTransfer(bool transfer_ok, bool alive) { return transfer_ok && alive; }

bool ShouldCloseIdle(ChannelClock::time_point last_used, ChannelClock::time_point now,
                     std::chrono::milliseconds idle_close, bool alive) {
  return !alive || now - last_used >= idle_close;
}

struct ChannelPool::Group {
  struct Idle {
    std::unique_ptr<rdma::Endpoint> ep;
    ChannelClock::time_point since;
  };
  std::vector<Idle> idle;  // most recently used last: reuse takes the warmest
  size_t busy = 0, connecting = 0;
};

ChannelPool::ChannelPool(ConnectFn connect, ChannelPoolOptions options, OpenedFn opened)
    : connect_(std::move(connect)), options_(options), on_opened_(std::move(opened)) {
  options_.channels = std::clamp(options_.channels, 1, kMaxChannels);
  if (options_.sweep_interval.count() > 0) sweeper_ = std::thread([this] { SweepLoop(); });
}

ChannelPool::~ChannelPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  std::map<Key, std::shared_ptr<Group>> groups;
  {
    std::lock_guard lock(mu_);
    groups.swap(groups_);
  }
  groups.clear();  // closes the idle endpoints outside the lock
}

ChannelPool::Lease::Lease(Lease&& o) noexcept
    : pool_(o.pool_),
      group_(std::move(o.group_)),
      ep_(std::move(o.ep_)),
      failed_(o.failed_),
      reused_(o.reused_) {
  o.pool_ = nullptr;
}

ChannelPool::Lease& ChannelPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Release();
    pool_ = o.pool_;
    group_ = std::move(o.group_);
    ep_ = std::move(o.ep_);
    failed_ = o.failed_;
    reused_ = o.reused_;
    o.pool_ = nullptr;
  }
  return *this;
}

ChannelPool::Lease::~Lease() { Release(); }

void ChannelPool::Lease::Release() {
  if (pool_ == nullptr || !ep_) return;
  bool keep = KeepAfterTransfer(!failed_, ep_->Alive());
  pool_->Return(group_, std::move(ep_), keep);
  pool_ = nullptr;
  group_.reset();
}

void ChannelPool::Return(const std::shared_ptr<Group>& g, std::unique_ptr<rdma::Endpoint> ep,
                         bool keep) {
  {
    std::lock_guard lock(mu_);
    --g->busy;
    if (keep && !stop_) g->idle.push_back({std::move(ep), ChannelClock::now()});
  }
  cv_.notify_all();
  ep.reset();  // a dropped channel closes outside the lock (a verbs disconnect may take a while)
}

Result<ChannelPool::Lease> ChannelPool::Acquire(std::string_view peer,
                                                const rdma::RemoteAddress& remote,
                                                const rdma::RequestOrigin& origin) {
  Key key{remote.gid, remote.has_gid, remote.lid, remote.qpn, origin.remote_ip};
  const auto deadline = ChannelClock::now() + options_.wait;
  std::unique_lock lock(mu_);
  std::shared_ptr<Group> g = std::make_shared<Group>();
  bool waited = false;  // found every channel busy at least once
  // Reports a lease that waited (outside the lock): it got a channel, or `refused`.
  auto report = [&](bool refused) {
    if (waited && options_.on_ceiling) options_.on_ceiling(refused);
  };
  for (;;) {
    // The sweeper may have removed an unused key while this lease waited: put it back (or join
    // the one another lease made meanwhile), so the bound holds per key.
    auto [it, inserted] = groups_.try_emplace(key, g);
    g = it->second;
    ChannelCounts counts{g->idle.size(), g->busy, g->connecting,
                         static_cast<size_t>(options_.channels)};
    switch (DecideAcquire(counts, ChannelClock::now(), deadline)) {
      case ChannelAction::kReuseIdle: {
        auto ep = std::move(g->idle.back().ep);
        g->idle.pop_back();
        if (!ep->Alive()) {
          // The peer closed it or died since: drop it (outside the lock) and decide again.
          lock.unlock();
          ep.reset();
          lock.lock();
          continue;
        }
        ++g->busy;
        ++reused_;
        Lease l;
        l.pool_ = this;
        l.group_ = g;
        l.ep_ = std::move(ep);
        l.reused_ = true;
        lock.unlock();
        report(false);
        return l;
      }
      case ChannelAction::kOpenNew: {
        ++g->connecting;
        lock.unlock();
        auto ep = connect_(remote, origin);
        lock.lock();
        --g->connecting;
        if (!ep.ok()) {
          cv_.notify_all();  // a waiter may open one now
          return ep.error();
        }
        ++g->busy;
        ++opened_;
        lock.unlock();
        if (on_opened_) on_opened_(peer);
        report(false);
        Lease l;
        l.pool_ = this;
        l.group_ = g;
        l.ep_ = std::move(ep).value();
        return l;
      }
      case ChannelAction::kWait:
        if (stop_) return MakeError(ErrorCode::kSlowDown, "inter-node RDMA channels are closing");
        waited = true;
        cv_.wait_until(lock, deadline);
        continue;
      case ChannelAction::kGiveUp:
        ++gave_up_;
        lock.unlock();
        waited = true;  // a zero wait gives up without waiting: still the ceiling
        report(true);
        return MakeError(ErrorCode::kSlowDown,
                         "inter-node RDMA: all " + std::to_string(options_.channels) +
                             " channels toward " + std::string(peer) + " stayed busy for " +
                             std::to_string(options_.wait.count()) + " ms");
    }
  }
}

void ChannelPool::Sweep() {
  std::vector<std::unique_ptr<rdma::Endpoint>> closing;
  {
    std::lock_guard lock(mu_);
    const auto now = ChannelClock::now();
    for (auto it = groups_.begin(); it != groups_.end();) {
      auto& idle = it->second->idle;
      for (auto i = idle.begin(); i != idle.end();) {
        if (ShouldCloseIdle(i->since, now, options_.idle_close, i->ep->Alive())) {
          closing.push_back(std::move(i->ep));
          i = idle.erase(i);
        } else {
          ++i;
        }
      }
      const Group& g = *it->second;
      // A key nobody uses any more goes (a lease in progress holds its own reference).
      if (g.idle.empty() && g.busy == 0 && g.connecting == 0)
        it = groups_.erase(it);
      else
        ++it;
    }
  }
  if (!closing.empty()) spdlog::debug("inter-node RDMA: closed {} idle channels", closing.size());
}

void ChannelPool::SweepLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, options_.sweep_interval, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    Sweep();
    lock.lock();
  }
}

uint64_t ChannelPool::opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}
uint64_t ChannelPool::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}
uint64_t ChannelPool::gave_up() const {
  std::lock_guard lock(mu_);
  return gave_up_;
}
size_t ChannelPool::open_channels() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [k, g] : groups_) n += g->idle.size() + g->busy;
  return n;
}

}  // namespace rdmastor::cluster
