#include "cluster/dsync.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <system_error>

#include "common/clock.h"
#include "common/hash.h"

namespace rdmastor::cluster {

using Clock = std::chrono::steady_clock;

std::string NewLockInstance() {
  const int64_t us = NowNs() / 1000;
  char start[17];
  std::snprintf(start, sizeof(start), "%016llx", static_cast<unsigned long long>(us));
  return std::string(start) + "-" + hash::RandomHex(8);
}

// ---------------------------------------------------------------------------------------------
// LockServer

LockServer::LockServer(LockServerOptions options) : options_(std::move(options)) {
  if (options_.ttl.count() <= 0) options_.ttl = std::chrono::milliseconds(30000);
  last_sweep_ = Now();
}

Clock::time_point LockServer::Now() const { return options_.now ? options_.now() : Clock::now(); }

namespace {

Status Validate(const LockArgs& args, bool need_resources) {
  if (args.uid.empty()) return MakeError(ErrorCode::kInvalidArgument, "lock request without uid");
  if (need_resources && args.resources.empty())
    return MakeError(ErrorCode::kInvalidArgument, "lock request without resources");
  for (const auto& r : args.resources)
    if (r.empty())
      return MakeError(ErrorCode::kInvalidArgument, "lock request names an empty resource");
  return {};
}

}  // namespace

void LockServer::ExpireResourceLocked(const std::string& resource, Clock::time_point now) {
  auto it = table_.find(resource);
  if (it == table_.end()) return;
  auto& v = it->second;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const Entry& e) { return now - e.refreshed > options_.ttl; }),
          v.end());
  if (v.empty()) table_.erase(it);
}

size_t LockServer::SweepLocked(Clock::time_point now) {
  size_t dropped = 0;
  for (auto it = table_.begin(); it != table_.end();) {
    auto& v = it->second;
    size_t before = v.size();
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const Entry& e) { return now - e.refreshed > options_.ttl; }),
            v.end());
    dropped += before - v.size();
    it = v.empty() ? table_.erase(it) : std::next(it);
  }
  last_sweep_ = now;
  return dropped;
}

void LockServer::MaybeSweepLocked(Clock::time_point now) {
  // Entries of resources nobody asks about again are dropped by a sweep at most once per TTL.
  if (now - last_sweep_ >= options_.ttl) SweepLocked(now);
}

size_t LockServer::Expire() {
  std::lock_guard lock(mu_);
  return SweepLocked(Now());
}

bool LockServer::ObserveInstanceLocked(const std::string& owner, const std::string& instance,
                                       Clock::time_point now, size_t* dropped) {
  if (dropped) *dropped = 0;
  if (owner.empty() || instance.empty()) return true;
  auto [known, first] = instances_.try_emplace(owner, Instance{instance, now});
  if (first) return true;
  if (known->second.id == instance) {
    known->second.seen = now;
    return true;
  }
  // Ids start with the process's start time: a smaller one is an earlier process of the node.
  if (instance < known->second.id && now - known->second.seen <= options_.ttl) return false;
  size_t n = 0;
  for (auto it = table_.begin(); it != table_.end();) {
    auto& v = it->second;
    const size_t before = v.size();
    v.erase(
        std::remove_if(v.begin(), v.end(),
                       [&](const Entry& e) { return e.owner == owner && e.instance != instance; }),
        v.end());
    n += before - v.size();
    it = v.empty() ? table_.erase(it) : std::next(it);
  }
  if (n > 0)
    spdlog::info("dsync: {} restarted (process {} replaces {}): dropped its {} lock(s)", owner,
                 instance, known->second.id, n);
  known->second = Instance{instance, now};
  if (dropped) *dropped = n;
  return true;
}

bool LockServer::ObserveInstance(const std::string& owner, const std::string& instance,
                                 size_t* dropped) {
  std::lock_guard lock(mu_);
  return ObserveInstanceLocked(owner, instance, Now(), dropped);
}

Result<bool> LockServer::Grant(const LockArgs& args, bool writer) {
  RS_RETURN_IF_ERROR(Validate(args, true));
  std::lock_guard lock(mu_);
  auto now = Now();
  MaybeSweepLocked(now);
  if (!ObserveInstanceLocked(args.owner, args.instance, now, nullptr)) return false;
  for (const auto& r : args.resources) {
    ExpireResourceLocked(r, now);
    auto it = table_.find(r);
    if (it == table_.end()) continue;
    for (const auto& e : it->second) {
      // The same acquisition asking again (an RPC retried after a lost reply) is granted again.
      bool same = e.uid == args.uid && e.writer == writer;
      if (same) continue;
      if (writer || e.writer) return false;
    }
  }
  for (const auto& r : args.resources) {
    auto& v = table_[r];
    auto mine = std::find_if(v.begin(), v.end(), [&](const Entry& e) {
      return e.uid == args.uid && e.writer == writer;
    });
    if (mine != v.end()) {
      mine->refreshed = now;
      continue;
    }
    v.push_back(Entry{args.uid, args.owner, args.instance, args.source, writer, now});
  }
  return true;
}

Result<bool> LockServer::Release(const LockArgs& args, bool writer) {
  RS_RETURN_IF_ERROR(Validate(args, true));
  std::lock_guard lock(mu_);
  bool removed = false;
  for (const auto& r : args.resources) {
    auto it = table_.find(r);
    if (it == table_.end()) continue;
    auto& v = it->second;
    auto end = std::remove_if(v.begin(), v.end(), [&](const Entry& e) {
      return e.uid == args.uid && e.writer == writer &&
             (args.owner.empty() || e.owner == args.owner);
    });
    removed = removed || end != v.end();
    v.erase(end, v.end());
    if (v.empty()) table_.erase(it);
  }
  return removed;
}

Result<bool> LockServer::Lock(const LockArgs& args) { return Grant(args, true); }
Result<bool> LockServer::RLock(const LockArgs& args) { return Grant(args, false); }
Result<bool> LockServer::Unlock(const LockArgs& args) { return Release(args, true); }
Result<bool> LockServer::RUnlock(const LockArgs& args) { return Release(args, false); }

Result<bool> LockServer::Refresh(const LockArgs& args) {
  RS_RETURN_IF_ERROR(Validate(args, true));
  std::lock_guard lock(mu_);
  auto now = Now();
  if (!ObserveInstanceLocked(args.owner, args.instance, now, nullptr)) return false;
  // Every resource of the acquisition must still be held: a partly expired lock is a lost lock.
  std::vector<Entry*> mine;
  for (const auto& r : args.resources) {
    ExpireResourceLocked(r, now);
    auto it = table_.find(r);
    if (it == table_.end()) return false;
    auto e = std::find_if(it->second.begin(), it->second.end(),
                          [&](const Entry& x) { return x.uid == args.uid; });
    if (e == it->second.end()) return false;
    mine.push_back(&*e);
  }
  for (auto* e : mine) e->refreshed = now;
  return true;
}

Result<bool> LockServer::ForceUnlock(const LockArgs& args) {
  if (args.uid.empty() && args.resources.empty())
    return MakeError(ErrorCode::kInvalidArgument, "force unlock names neither uid nor resources");
  std::lock_guard lock(mu_);
  bool removed = false;
  if (!args.resources.empty()) {
    for (const auto& r : args.resources) removed = table_.erase(r) > 0 || removed;
    return removed;
  }
  for (auto it = table_.begin(); it != table_.end();) {
    auto& v = it->second;
    auto end =
        std::remove_if(v.begin(), v.end(), [&](const Entry& e) { return e.uid == args.uid; });
    removed = removed || end != v.end();
    v.erase(end, v.end());
    it = v.empty() ? table_.erase(it) : std::next(it);
  }
  return removed;
}

std::vector<LockInfo> LockServer::Snapshot() const {
  std::lock_guard lock(mu_);
  auto now = Now();
  std::vector<LockInfo> out;
  for (const auto& [resource, entries] : table_)
    for (const auto& e : entries)
      out.push_back({resource, e.uid, e.owner, e.instance, e.source, e.writer, now - e.refreshed});
  return out;
}

// ---------------------------------------------------------------------------------------------
// Quorum

int LockTolerance(int lockers) { return lockers / 2; }
int ReadLockQuorum(int lockers) { return lockers - LockTolerance(lockers); }
int WriteLockQuorum(int lockers) {
  int q = ReadLockQuorum(lockers);
  return q == LockTolerance(lockers) ? q + 1 : q;
}

Dsync::Dsync(std::vector<std::shared_ptr<LockerClient>> lockers, std::string owner,
             DsyncOptions options, std::string instance)
    : lockers_(std::move(lockers)),
      owner_(std::move(owner)),
      instance_(instance.empty() ? NewLockInstance() : std::move(instance)),
      options_(options) {}

// ---------------------------------------------------------------------------------------------
// Parallel calls with a bounded wait

namespace {

enum class Call { kLock, kRLock, kUnlock, kRUnlock, kRefresh };

Result<bool> Invoke(LockerClient& c, Call call, const LockArgs& a) {
  switch (call) {
    case Call::kLock:
      return c.Lock(a);
    case Call::kRLock:
      return c.RLock(a);
    case Call::kUnlock:
      return c.Unlock(a);
    case Call::kRUnlock:
      return c.RUnlock(a);
    case Call::kRefresh:
      return c.Refresh(a);
  }
  return MakeError(ErrorCode::kInternalError, "unknown lock call");
}

// The answers of one round of calls, shared with the worker threads (which may outlive the wait).
struct Round {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Result<bool>>> answers;  // nullopt: no answer (yet)
  int answered = 0, granted = 0;
  bool abandoned = false;
};

// Calls `call` on every locker at once and waits until all answered, `timeout` passed, or (when
// `quorum` > 0) a quorum of grants became impossible, or a quorum was granted and the others have
// had `straggler_wait` more to answer. A locker that grants after the caller stopped waiting gets
// `undo` at once, so an abandoned attempt leaves nothing behind. Returns the answers that arrived
// in time (nullopt for the others).
std::vector<std::optional<Result<bool>>> CallAll(
    const std::vector<std::shared_ptr<LockerClient>>& lockers, Call call, const LockArgs& args,
    std::chrono::milliseconds timeout, std::optional<Call> undo, int quorum,
    const std::vector<bool>* only = nullptr,
    std::chrono::milliseconds straggler_wait = std::chrono::milliseconds::max()) {
  auto round = std::make_shared<Round>();
  const int n = static_cast<int>(lockers.size());
  round->answers.resize(lockers.size());
  int asked = 0;
  // This node's own lock server answers in-process at once: called on this thread after the
  // others' threads started (a thread start per lock round saved).
  std::vector<std::function<void()>> here;
  for (int i = 0; i < n; ++i) {
    if (only && !(*only)[i]) continue;
    ++asked;
    auto work = [round, locker = lockers[i], call, args, undo, i] {
      auto r = Invoke(*locker, call, args);
      std::unique_lock lock(round->mu);
      if (round->abandoned) {
        lock.unlock();
        if (undo && r.ok() && *r) (void)Invoke(*locker, *undo, args);
        return;
      }
      if (r.ok() && *r) ++round->granted;
      round->answers[i] = std::move(r);
      ++round->answered;
      lock.unlock();
      round->cv.notify_all();
    };
    if (dynamic_cast<LocalLockerClient*>(lockers[i].get())) {
      here.push_back(std::move(work));
      continue;
    }
    try {
      std::thread(std::move(work)).detach();
    } catch (const std::system_error& e) {  // no thread left: that server counts as unreachable
      std::lock_guard lock(round->mu);
      round->answers[i] = MakeError(ErrorCode::kSlowDown, std::string("lock call: ") + e.what());
      ++round->answered;
    }
  }
  for (auto& work : here) work();
  const auto deadline = Clock::now() + timeout;
  std::unique_lock lock(round->mu);
  round->cv.wait_until(lock, deadline, [&] {
    if (round->answered == asked) return true;
    // Stop early once the grants still possible cannot make a quorum, or once a quorum granted.
    if (quorum > 0 && round->granted >= quorum) return true;
    return quorum > 0 && round->granted + (asked - round->answered) < quorum;
  });
  if (round->answered < asked && quorum > 0 && round->granted >= quorum) {
    // Quorum is enough to hold the lock; more grants only make it sturdier (a refresh needs a
    // quorum of confirmations), so give the others a short while, not the whole call timeout: a
    // hung node must not add a second to every lock.
    const auto until = std::min(deadline, Clock::now() + std::min(straggler_wait, timeout));
    round->cv.wait_until(lock, until, [&] { return round->answered == asked; });
  }
  round->abandoned = true;
  return round->answers;
}

std::chrono::milliseconds Backoff(const DsyncOptions& o, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t d = std::max<int64_t>(1, o.retry_min.count());
  for (int i = 0; i < attempt && d < o.retry_max.count(); ++i) d *= 2;
  d = std::min<int64_t>(d, std::max<int64_t>(1, o.retry_max.count()));
  std::uniform_int_distribution<int64_t> dist(d / 2, d);
  return std::chrono::milliseconds(dist(rng));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DistributedLock

DistributedLock::DistributedLock(std::shared_ptr<const Dsync> dsync,
                                 std::vector<std::string> resources, std::string source)
    : dsync_(std::move(dsync)) {
  std::sort(resources.begin(), resources.end());
  resources.erase(std::unique(resources.begin(), resources.end()), resources.end());
  args_.resources = std::move(resources);
  args_.owner = dsync_->owner();
  args_.instance = dsync_->instance();
  args_.source = std::move(source);
}

DistributedLock::~DistributedLock() {
  if (held_) Release();
  StopRefresher();
}

Status DistributedLock::Lock(std::chrono::milliseconds timeout) { return Acquire(true, timeout); }
Status DistributedLock::RLock(std::chrono::milliseconds timeout) { return Acquire(false, timeout); }

void DistributedLock::Unlock() {
  if (held_ && writer_) Release();
}
void DistributedLock::RUnlock() {
  if (held_ && !writer_) Release();
}

Status DistributedLock::Acquire(bool writer, std::chrono::milliseconds timeout) {
  if (held_) return MakeError(ErrorCode::kInvalidRequest, "this lock object already holds a lock");
  const auto& lockers = dsync_->lockers();
  const int n = static_cast<int>(lockers.size());
  if (n == 0 || args_.resources.empty())
    return MakeError(ErrorCode::kInternalError, "distributed lock without lockers or resources");
  const auto& opt = dsync_->options();
  const int quorum = writer ? WriteLockQuorum(n) : ReadLockQuorum(n);
  args_.quorum = quorum;
  const Call call = writer ? Call::kLock : Call::kRLock;
  const Call undo = writer ? Call::kUnlock : Call::kRUnlock;
  const auto deadline = Clock::now() + timeout;
  int last_granted = 0, last_errors = 0, last_silent = 0;
  for (int attempt = 0;; ++attempt) {
    ++attempts_;
    args_.uid = hash::RandomHex(16);  // a fresh uid per attempt: late grants cannot be confused
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto wait = std::clamp(left, std::chrono::milliseconds(1), opt.call_timeout);
    auto answers = CallAll(lockers, call, args_, wait, undo, quorum, nullptr, opt.straggler_wait);
    std::vector<bool> granted(lockers.size(), false);
    int count = 0, errors = 0, silent = 0;
    for (int i = 0; i < n; ++i) {
      if (!answers[i]) {
        ++silent;
        continue;
      }
      if (!answers[i]->ok()) {
        ++errors;
        continue;
      }
      granted[i] = answers[i]->value();
      count += granted[i] ? 1 : 0;
    }
    if (count >= quorum) {
      granted_ = std::move(granted);
      held_ = true;
      writer_ = writer;
      lost_->store(false);
      StartRefresher();
      return {};
    }
    // No quorum: give back what this attempt got before anyone else waits on it.
    if (count > 0)
      (void)CallAll(lockers, undo, args_, opt.release_timeout, std::nullopt, 0, &granted);
    last_granted = count;
    last_silent = silent;
    last_errors = errors;
    auto pause = Backoff(opt, attempt);
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
  }
  std::string what =
      args_.resources.front() + (args_.resources.size() > 1
                                     ? " (+" + std::to_string(args_.resources.size() - 1) + " more)"
                                     : std::string());
  return MakeError(ErrorCode::kSlowDown,
                   std::string(writer ? "write" : "read") + " lock on " + what +
                       " not acquired within " + std::to_string(timeout.count()) + " ms after " +
                       std::to_string(attempts_) + " attempt(s): last attempt " +
                       std::to_string(last_granted) + " of " + std::to_string(n) +
                       " lock servers granted, quorum " + std::to_string(quorum) + ", " +
                       std::to_string(last_errors) + " unreachable, " +
                       std::to_string(last_silent) + " without an answer yet");
}

void DistributedLock::Release() {
  StopRefresher();
  // A reader's release is not waited for (one round trip less per GET): nothing this node does
  // next depends on it, and a writer elsewhere retries until it lands. A writer's is, so that
  // the next request (reading what was just written) does not find the lock still held.
  const auto wait = writer_ ? dsync_->options().release_timeout : std::chrono::milliseconds(0);
  (void)CallAll(dsync_->lockers(), writer_ ? Call::kUnlock : Call::kRUnlock, args_, wait,
                std::nullopt, 0, &granted_);
  held_ = false;
  granted_.clear();
}

void DistributedLock::StartRefresher() {
  refresh_ = std::make_shared<RefreshState>();
  refresher_ = std::thread([this, state = refresh_] {
    const auto& opt = dsync_->options();
    const int n = static_cast<int>(dsync_->lockers().size());
    const int quorum = writer_ ? WriteLockQuorum(n) : ReadLockQuorum(n);
    for (;;) {
      {
        std::unique_lock lock(state->mu);
        if (state->cv.wait_for(lock, opt.refresh_interval, [&] { return state->stop; })) return;
      }
      auto answers =
          CallAll(dsync_->lockers(), Call::kRefresh, args_, opt.call_timeout, std::nullopt, 0);
      int confirmed = 0;
      for (const auto& a : answers) confirmed += a && a->ok() && a->value() ? 1 : 0;
      if (confirmed >= quorum) continue;
      {
        std::lock_guard lock(state->mu);
        if (state->stop) return;  // released meanwhile: nothing was lost
      }
      lost_->store(true);
      spdlog::warn("dsync: lock on {} ({}) lost: refreshed on {} of {} lock servers, quorum {}",
                   args_.resources.front(), args_.source.empty() ? args_.uid : args_.source,
                   confirmed, n, quorum);
      if (on_lost_) on_lost_();
      return;
    }
  });
}

void DistributedLock::StopRefresher() {
  if (!refresh_) return;
  {
    std::lock_guard lock(refresh_->mu);
    refresh_->stop = true;
  }
  refresh_->cv.notify_all();
  if (refresher_.joinable()) refresher_.join();
  refresh_.reset();
}

}  // namespace rdmastor::cluster
