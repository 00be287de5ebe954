// Persistent inter-node RDMA channels (issue 10 item 4). The serving side of a shard piece moves
// it over an Endpoint toward the caller's target; opening one is the expensive part on hardware
// (rdma_cm resolve, route, CQ + QP create, connect), so endpoints are kept and reused: per key
// (the target's address, its endpoint id and the origin the policy admitted) a pool of at most
// MINIO_RDMA_CHANNELS long-lived channels. A piece leases one channel for the whole transfer (an
// Endpoint carries one transfer at a time); a caller that finds all of them busy waits up to
// `wait`, then gets kSlowDown and the piece goes over TCP (the calling node counts the fallback;
// this side warns). A channel whose transfer failed is dropped (its QP is in the error state), a
// dead idle one (the peer closed it or died) is dropped when found, and the next lease opens a
// fresh one. A sweeper closes channels idle for longer than `idle_close` and dead ones every
// `sweep_interval`, so a peer that died releases its channels (fds, QPs) within that interval.
//
// The decisions are pure functions (DecideAcquire, KeepAfterTransfer, ShouldCloseIdle,
// ParseChannelCount), unit-tested without a fabric; ChannelPool applies them under one mutex.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "rdma/fabric.h"

namespace rdmastor::cluster {

using ChannelClock = std::chrono::steady_clock;

inline constexpr int kDefaultChannels = 4;
inline constexpr int kMaxChannels = 64;

// MINIO_RDMA_CHANNELS: an integer from 1 to 64; nullopt when not.
std::optional<int> ParseChannelCount(std::string_view text);

// What a lease does next, given the key's channels now.
struct ChannelCounts {
  size_t idle = 0;        // open, not leased
  size_t busy = 0;        // leased
  size_t connecting = 0;  // being opened by a lease
  size_t max = kDefaultChannels;
};
enum class ChannelAction {
  kReuseIdle,  // take an idle channel (checked alive first; a dead one is dropped, decide again)
  kOpenNew,    // below the bound: open a channel
  kWait,       // all busy: wait for one to come back (or be dropped)
  kGiveUp,     // waited until the deadline: kSlowDown, the piece goes over TCP
};
ChannelAction DecideAcquire(const ChannelCounts& c, ChannelClock::time_point now,
                            ChannelClock::time_point deadline);

// Whether a channel goes back to its pool after a lease: only when its transfer succeeded (every
// request completed: nothing outstanding, not in the error state) and the endpoint still looks
// alive. Anything else is closed: a reused channel must be exactly as good as a new one.
bool KeepAfterTransfer(bool transfer_ok, bool alive);

// Whether the sweeper closes an idle channel: dead, or idle longer than idle_close.
bool ShouldCloseIdle(ChannelClock::time_point last_used, ChannelClock::time_point now,
                     std::chrono::milliseconds idle_close, bool alive);

struct ChannelPoolOptions {
  int channels = kDefaultChannels;                 // MINIO_RDMA_CHANNELS, per key
  std::chrono::milliseconds wait{5000};            // for a busy channel, then TCP
  std::chrono::milliseconds idle_close{300000};    // 5 min
  std::chrono::milliseconds sweep_interval{1000};  // 0: no sweeper thread (tests call Sweep)
  // A lease found every channel of its key busy: called once it got one (false) or gave up
  // (true). The metric of the ceiling (MINIO_RDMA_CHANNELS).
  std::function<void(bool refused)> on_ceiling;
};

class ChannelPool {
 public:
  using ConnectFn = std::function<Result<std::unique_ptr<rdma::Endpoint>>(
      const rdma::RemoteAddress&, const rdma::RequestOrigin&)>;
  // Called once per channel opened, with the peer the lease named (the metric).
  using OpenedFn = std::function<void(std::string_view peer)>;

  ChannelPool(ConnectFn connect, ChannelPoolOptions options, OpenedFn opened = {});
  ~ChannelPool();  // stops the sweeper and closes every idle channel; no lease may be alive
  ChannelPool(const ChannelPool&) = delete;
  ChannelPool& operator=(const ChannelPool&) = delete;

  struct Key {
    std::array<uint8_t, 16> gid{};
    bool has_gid = false;
    uint16_t lid = 0;
    uint32_t qpn = 0;    // the target's endpoint id
    std::string origin;  // the requester address the origin policy admitted
    auto operator<=>(const Key&) const = default;
  };
  struct Group;

  // One channel leased for one transfer. Call Fail() when the transfer did not complete cleanly;
  // destroying the lease returns the channel (or closes it: KeepAfterTransfer).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&& o) noexcept;
    ~Lease();
    rdma::Endpoint& endpoint() const { return *ep_; }
    void Fail() { failed_ = true; }
    bool reused() const { return reused_; }
    explicit operator bool() const { return ep_ != nullptr; }

   private:
    friend class ChannelPool;
    void Release();
    ChannelPool* pool_ = nullptr;
    std::shared_ptr<Group> group_;
    std::unique_ptr<rdma::Endpoint> ep_;
    bool failed_ = false;
    bool reused_ = false;
  };

  // A channel toward `remote` for a transfer on behalf of `peer`: an idle one, a new one (below
  // the bound), or one that frees up within options.wait. kSlowDown when none did; the Connect
  // error when opening failed.
  Result<Lease> Acquire(std::string_view peer, const rdma::RemoteAddress& remote,
                        const rdma::RequestOrigin& origin);

  // Closes dead channels and channels idle longer than idle_close (the sweeper's pass).
  void Sweep();

  uint64_t opened() const;       // channels opened so far
  uint64_t reused() const;       // leases served by an open channel
  uint64_t gave_up() const;      // leases that waited in vain (pieces sent over TCP)
  size_t open_channels() const;  // idle + busy, every key

 private:
  void Return(const std::shared_ptr<Group>& g, std::unique_ptr<rdma::Endpoint> ep, bool keep);
  void SweepLoop();

  ConnectFn connect_;
  ChannelPoolOptions options_;
  OpenedFn on_opened_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a channel came back, was dropped, or the pool stops
  std::map<Key, std::shared_ptr<Group>> groups_;
  uint64_t opened_ = 0, reused_ = 0, gave_up_ = 0;
  bool stop_ = false;
  std::thread sweeper_;
};

}  // namespace rdmastor::cluster
