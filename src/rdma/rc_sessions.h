// S3 over RDMA on RC queue pairs (docs/s3-over-rdma.md, "RC transport"): the server's table of
// persistent connections that clients opened, above the backend boundary so the soft and verbs
// listeners share every rule: admission limits (per source address, in total), the checks that
// tie a request to its connection (x-amz-rdma-connection names it; source, QP/GID and first
// principal must match), one transfer at a time per connection, idle and dead connections closed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "rdma/fabric.h"
#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {

inline constexpr std::string_view kRdmaConnectionHeader = "x-amz-rdma-connection";

// x-amz-rdma-connection: exactly 16 lower-case hex digits, not all zero (400 InvalidRDMAToken).
Result<uint64_t> ParseRcConnectionId(std::string_view text);
std::string FormatRcConnectionId(uint64_t id);

struct RcLimits {
  size_t per_source = 64;                      // RDMASTOR_RDMA_RC_PER_SOURCE
  size_t total = 1024;                         // RDMASTOR_RDMA_RC_MAX
  std::chrono::milliseconds idle{60000};       // RDMASTOR_RDMA_RC_IDLE_TIMEOUT
  std::chrono::milliseconds lend_wait{30000};  // a request waits this long for a busy connection
  // Networks whose HTTP requests may use a connection opened from another address (the
  // fabric's allow list: MINIO_RDMA_ALLOW / MINIO_RDMA_SOFT_ALLOW).
  std::vector<soft::Cidr> allow;
};

struct RcStats {
  uint64_t admitted = 0, refused = 0, closed_idle = 0, closed_dead = 0, closed_dirty = 0,
           foreign = 0;
};

class RcSessions {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit RcSessions(RcLimits limits, Clock clock = nullptr);
  ~RcSessions();
  RcSessions(const RcSessions&) = delete;
  RcSessions& operator=(const RcSessions&) = delete;

  // A connection the listener accepted: its id (`proposed` when not 0, else random; unique,
  // never 0), or kSlowDown when its source already holds per_source connections or the table
  // holds `total`, kInvalidArgument when `proposed` is taken (nothing is kept either way).
  Result<uint64_t> Admit(const RcPeer& peer, std::unique_ptr<Endpoint> endpoint,
                         uint64_t proposed = 0);
  // A fresh random id for a listener to propose (not 0).
  static uint64_t NewId();
  // The listener accepted a connection under `id` and waits for it to be established: until
  // Admit or Forget, Lend of that id waits for it (at most lend_wait) instead of failing; the
  // client may send its first request before the listener saw the handshake end.
  void Expect(uint64_t id);
  void Forget(uint64_t id);
  // The limits, checked before the listener creates anything for a connection (rdma_cm: before
  // the QP exists); a refusal counts in stats().refused.
  Status CanAdmit(uint32_t ip);

  // The endpoint of connection `id` for one transfer of a request from `origin`, signed by
  // `principal`, whose token names `token_addr`. Errors: kRDMANotSupported (not open),
  // kAccessDenied (another source, another QP/GID, another principal), kSlowDown (busy longer
  // than lend_wait). The returned endpoint gives the connection back when destroyed; a transfer
  // that leaves work requests outstanding or saw an error closes the connection instead.
  Result<std::unique_ptr<Endpoint>> Lend(uint64_t id, const RemoteAddress& token_addr,
                                         const RequestOrigin& origin, const std::string& principal);

  // Closes connections idle longer than the limit and idle ones whose endpoint died (peer gone,
  // QP in error). Returns how many. Runs every second on its own thread after StartReaper().
  size_t Reap();
  void StartReaper(std::chrono::milliseconds every = std::chrono::milliseconds(1000));
  // Closes every connection (their device went away): idle ones now, lent ones when their
  // transfer gives them back. Returns how many. Clients connect again (Lend: "connect again").
  size_t CloseAll();

  size_t size() const;
  size_t CountFrom(uint32_t ip) const;
  RcStats stats() const;

  struct Entry;

 private:
  class Lent;
  void GiveBack(const std::shared_ptr<Entry>& entry, bool clean);
  std::chrono::steady_clock::time_point Now() const;
  std::optional<Error> RefusalLocked(uint32_t ip) const;  // the admission limits (mu_ held)

  RcLimits limits_;
  Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::map<uint64_t, std::shared_ptr<Entry>> entries_;
  std::set<uint64_t> expected_;  // accepted, not yet established (Expect)
  RcStats stats_;
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace rdmastor::rdma
