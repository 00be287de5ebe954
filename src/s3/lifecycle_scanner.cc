// The lifecycle scanner (s3/lifecycle_scanner.h).
#include "s3/lifecycle_scanner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "admin/metrics.h"
#include "common/clock.h"
#include "iam/store.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"

namespace rdmastor::s3 {

namespace {

const std::string kStateKey = "lifecycle/state.json";
// How long a node tries for the scanner's lock: one round of the lock servers, no queueing (the
// node that does not get it skips this cycle).
constexpr std::chrono::milliseconds kLockWait{200};

// Does `e` say a version stayed because Object Lock keeps it (CheckRemovable's refusal)?
bool KeptByLock(const Error& e) { return e.code == ErrorCode::kAccessDenied; }

}  // namespace

// One cycle's position and counts (what lifecycle/state.json records).
struct LifecycleScanner::Cycle {
  std::unique_ptr<storage::NamespaceLock> lock;
  int64_t started_ns = 0;
  std::string bucket, after;  // the last key done (resume point)
  LifecycleCounts counts;
  std::vector<LifecycleRule> rules;  // the current bucket's enabled rules
  storage::Versioning versioning = storage::Versioning::kUnversioned;
  int64_t now_ms = 0;
  bool stopped = false;    // Stop(), or the lock was lost
  bool had_rules = false;  // some bucket had enabled rules
};

LifecycleScanner::LifecycleScanner(storage::ObjectLayer& store, LifecycleSettings settings,
                                   std::shared_ptr<storage::NamespaceLocker> locker,
                                   std::string node)
    : store_(store), settings_(settings), locker_(std::move(locker)), node_(std::move(node)) {}

void PublishLifecycleMetrics(const LifecycleScanner& scanner) {
  admin::GlobalRegistry().AddScrapeHook([&scanner] {
    const auto c = scanner.counts();
    admin::SetLifecycleProgress({scanner.running(), c.cycles, c.objects_scanned,
                                 c.objects_expired, c.uploads_aborted, c.locked_kept, c.errors,
                                 scanner.last_cycle_end_ns()});
  });
}

LifecycleScanner::~LifecycleScanner() { Stop(); }

void LifecycleScanner::Start() {
  if (settings_.interval.count() <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] {
    // Half an interval between looks: a cycle another node ran is seen, and the next one starts
    // at most half an interval late.
    const auto look = std::max(settings_.interval / 2, std::chrono::milliseconds(10));
    do {
      auto ran = RunCycle();
      if (!ran.ok()) spdlog::warn("lifecycle: cycle failed: {}", ran.error().message);
    } while (Sleep(look));
  });
}

void LifecycleScanner::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LifecycleScanner::Sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

LifecycleCounts LifecycleScanner::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void LifecycleScanner::Count(uint64_t LifecycleCounts::*field, uint64_t n) {
  std::lock_guard lock(mu_);
  counts_.*field += n;
}

Status LifecycleScanner::SaveState(const Cycle& c, bool done) {
  nlohmann::json doc = {{"node", node_},
                        {"started_ns", c.started_ns},
                        {"ended_ns", done ? NowNs() : 0},
                        {"bucket", done ? "" : c.bucket},
                        {"after", done ? "" : c.after},
                        {"scanned", c.counts.objects_scanned},
                        {"expired", c.counts.objects_expired},
                        {"aborted", c.counts.uploads_aborted},
                        {"locked_kept", c.counts.locked_kept},
                        {"errors", c.counts.errors}};
  return iam::WriteSystemDoc(store_, kStateKey, doc.dump());
}

Result<bool> LifecycleScanner::RunCycle() {
  Cycle c;
  auto lock = locker_->Lock({storage::ObjectResource(iam::kSystemBucket, "lifecycle")},
                            storage::LockMode::kExclusive, kLockWait, "lifecycle scanner");
  if (!lock.ok()) return false;  // another node runs the cycle
  c.lock = std::move(*lock);

  // The last cycle, whichever node ran it: not yet due, or unfinished (go on from there).
  auto stored = iam::ReadSystemDoc(store_, kStateKey);
  if (!stored.ok()) return stored.error();
  nlohmann::json state = nlohmann::json::object();
  if (stored->has_value()) {
    state = nlohmann::json::parse(**stored, nullptr, /*allow_exceptions=*/false);
    if (!state.is_object()) state = nlohmann::json::object();
  }
  int64_t ended = 0;
  std::string resume_bucket, resume_after;
  c.started_ns = NowNs();
  try {
    ended = state.value("ended_ns", int64_t{0});
    if (ended == 0 && state.contains("started_ns")) {
      resume_bucket = state.value("bucket", "");
      resume_after = state.value("after", "");
      c.started_ns = state.value("started_ns", c.started_ns);
      spdlog::info("lifecycle: resuming the cycle started by {} at bucket '{}' after key '{}'",
                   state.value("node", "?"), resume_bucket, resume_after);
    }
  } catch (const nlohmann::json::exception& e) {
    // A record that is not ours (fields of other types): start a new cycle, which rewrites it.
    spdlog::warn("lifecycle: {} is unreadable ({}): starting a new cycle", kStateKey, e.what());
    ended = 0;
    resume_bucket.clear();
    resume_after.clear();
  }
  const int64_t interval_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(settings_.interval).count();
  if (ended > 0 && NowNs() - ended < interval_ns) return false;

  running_ = true;
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = false; }
  } done{running_};

  auto buckets = store_.ListBuckets();
  if (!buckets.ok()) return buckets.error();
  std::sort(buckets->begin(), buckets->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& b : *buckets) {
    if (b.name == iam::kSystemBucket || b.name < resume_bucket) continue;
    const std::string after = b.name == resume_bucket ? resume_after : "";
    auto st = ScanBucket(c, b, after);
    if (c.stopped) return false;  // stopped, or the lock lost: the state says where to go on
    if (!st.ok()) {
      spdlog::warn("lifecycle: bucket '{}': {}", b.name, st.error().message);
      Count(&LifecycleCounts::errors);
      ++c.counts.errors;
    }
  }
  // No bucket with rules: nothing done, nothing recorded (the system bucket is not created for
  // it), and not counted as a cycle.
  if (!c.had_rules && resume_bucket.empty()) return false;
  RS_RETURN_IF_ERROR(SaveState(c, /*done=*/true));
  last_end_ns_ = NowNs();
  Count(&LifecycleCounts::cycles);
  const bool acted = c.counts.objects_expired + c.counts.uploads_aborted + c.counts.locked_kept +
                        c.counts.errors > 0;
  spdlog::log(acted ? spdlog::level::info : spdlog::level::debug,
              "lifecycle: cycle done: {} version(s) scanned, {} expired, {} upload(s) aborted, "
              "{} kept under Object Lock, {} error(s)",
               c.counts.objects_scanned, c.counts.objects_expired, c.counts.uploads_aborted,
               c.counts.locked_kept, c.counts.errors);
  return true;
}

Status LifecycleScanner::AbortUploads(Cycle& c, const std::string& bucket) {
  auto uploads = store_.ListMultipartUploads(bucket, "");
  if (!uploads.ok()) return uploads.error();
  for (const auto& u : *uploads) {
    for (const auto& rule : c.rules) {
      if (!rule.abort_days || (rule.prefix && !u.key.starts_with(*rule.prefix))) continue;
      if (c.now_ms < LifecycleDue(u.initiated_ns / 1'000'000, *rule.abort_days, settings_.day_ms))
        continue;
      auto st = store_.AbortMultipartUpload(bucket, u.key, u.upload_id);
      if (st.ok()) {
        ++c.counts.uploads_aborted;
        Count(&LifecycleCounts::uploads_aborted);
      } else if (st.error().code != ErrorCode::kNoSuchUpload) {
        spdlog::warn("lifecycle: abort of upload {} of {}/{}: {}", u.upload_id, bucket, u.key,
                     st.error().message);
        ++c.counts.errors;
        Count(&LifecycleCounts::errors);
      }
      break;
    }
  }
  return {};
}

Status LifecycleScanner::ScanBucket(Cycle& c, const storage::BucketInfo& b,
                                    const std::string& after) {
  auto rules = LifecycleRulesOf(store_, b.name);
  if (!rules.ok()) return rules.error();
  c.rules.clear();
  for (auto& r : *rules)
    if (r.enabled) c.rules.push_back(std::move(r));
  if (c.rules.empty()) return {};
  c.had_rules = true;
  auto versioning = store_.BucketVersioning(b.name);
  if (!versioning.ok()) return versioning.error();
  c.versioning = *versioning;
  c.now_ms = NowNs() / 1'000'000;
  if (after.empty()) RS_RETURN_IF_ERROR(AbortUploads(c, b.name));

  // One removal (or delete marker) through the Object Lock check; counted.
  auto remove = [&](const std::string& key, const storage::VersionSel& v) {
    auto r = DeleteVersionChecked(store_, b.name, key, v, /*bypass=*/false);
    if (r.ok()) {
      ++c.counts.objects_expired;
      Count(&LifecycleCounts::objects_expired);
      return true;
    }
    if (KeptByLock(r.error())) {
      ++c.counts.locked_kept;
      Count(&LifecycleCounts::locked_kept);
    } else if (r.error().code != ErrorCode::kNoSuchKey &&
               r.error().code != ErrorCode::kNoSuchVersion) {
      spdlog::warn("lifecycle: expiry of {}/{}: {}", b.name, key, r.error().message);
      ++c.counts.errors;
      Count(&LifecycleCounts::errors);
    }
    return false;
  };
  const int64_t day = settings_.day_ms;

  // The versions of one key, newest first.
  auto apply = [&](const std::string& key, const std::vector<storage::ObjectInfo>& versions) {
    const storage::ObjectInfo& cur = versions.front();
    if (!cur.delete_marker) {
      for (const auto& rule : c.rules) {
        if (!rule.days && !rule.date_ms) continue;
        if (!LifecycleFilterMatches(rule, key, cur.tags, cur.size)) continue;
        const int64_t due =
            rule.days ? LifecycleDue(cur.mtime_ns / 1'000'000, *rule.days, day) : *rule.date_ms;
        if (c.now_ms < due) continue;
        // Where the key is versioned this adds a delete marker and keeps the version (now
        // noncurrent, from now); elsewhere it removes the version, unless Object Lock keeps it.
        if (remove(key, std::nullopt) && c.versioning == storage::Versioning::kUnversioned)
          return;
        break;
      }
    }
    size_t left = versions.size() - 1;  // noncurrent versions not removed
    size_t noncurrent = 0;
    for (size_t i = 1; i < versions.size(); ++i, ++noncurrent) {
      const storage::ObjectInfo& v = versions[i];
      // Noncurrent since its successor was written.
      const int64_t since_ms = versions[i - 1].mtime_ns / 1'000'000;
      for (const auto& rule : c.rules) {
        if (!rule.noncurrent_days) continue;
        if (!LifecycleFilterMatches(rule, key, v.tags, v.size)) continue;
        if (noncurrent < static_cast<size_t>(rule.newer_noncurrent.value_or(0))) continue;
        if (c.now_ms < LifecycleDue(since_ms, *rule.noncurrent_days, day)) continue;
        if (remove(key, v.version_id)) --left;
        break;
      }
    }
    // A delete marker with no version left behind it.
    if (cur.delete_marker && left == 0) {
      for (const auto& rule : c.rules) {
        if (!rule.expired_object_delete_marker.value_or(false)) continue;
        if (rule.prefix && !key.starts_with(*rule.prefix)) continue;
        remove(key, cur.version_id);
        break;
      }
    }
  };

  storage::ListOptions o;
  o.versions = true;
  o.max_keys = std::max(settings_.batch, 2);  // the resume key comes again (inclusive) + 1
  o.start_after = after;
  c.bucket = b.name;
  c.after = after;
  for (;;) {
    auto page = store_.ListObjectVersions(b.name, o);
    if (!page.ok()) return page.error();
    c.now_ms = NowNs() / 1'000'000;
    const auto& objs = page->objects;
    for (size_t i = 0; i < objs.size();) {
      size_t j = i;
      while (j < objs.size() && objs[j].key == objs[i].key) ++j;
      // The listing starts at its start key, inclusive: that key was done.
      if (o.start_after.empty() || objs[i].key != o.start_after) {
        std::vector<storage::ObjectInfo> versions(objs.begin() + i, objs.begin() + j);
        c.counts.objects_scanned += versions.size();
        Count(&LifecycleCounts::objects_scanned, versions.size());
        apply(objs[i].key, versions);
        c.after = objs[i].key;
      }
      i = j;
    }
    if (!page->truncated || objs.empty()) break;
    RS_RETURN_IF_ERROR(SaveState(c, /*done=*/false));
    if (c.lock->lost()) {
      spdlog::warn("lifecycle: the scanner's lock was lost: stopping this cycle (another node "
                   "goes on from bucket '{}' after key '{}')", c.bucket, c.after);
      c.stopped = true;
      return {};
    }
    if (!Sleep(settings_.pause)) {
      c.stopped = true;
      return {};
    }
    o.start_after = c.after;
  }
  return {};
}

nlohmann::json LifecycleScanner::StatusJson() {
  const auto n = counts();
  nlohmann::json out = {{"node", node_},
                        {"running", running()},
                        {"intervalSeconds", settings_.interval.count() / 1000.0},
                        {"daySeconds", settings_.day_ms / 1000.0},
                        {"cycles", n.cycles},
                        {"scanned", n.objects_scanned},
                        {"expired", n.objects_expired},
                        {"aborted", n.uploads_aborted},
                        {"lockedKept", n.locked_kept},
                        {"errors", n.errors}};
  auto stored = iam::ReadSystemDoc(store_, kStateKey);
  if (stored.ok() && stored->has_value()) {
    auto last = nlohmann::json::parse(**stored, nullptr, /*allow_exceptions=*/false);
    if (last.is_object()) out["lastCycle"] = last;
  }
  return out;
}

}  // namespace rdmastor::s3
