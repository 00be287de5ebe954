// An erasure set's drive fan-out, namespace locks, codecs and shard distribution (set.h).

#include "storage/erasure/set.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "common/no_block.h"
#include "common/thread_pool.h"

namespace rdmastor::storage {


std::string PartFileName(size_t index) { return "part." + std::to_string(index); }
std::string PartRecordName(int number) { return "part." + std::to_string(number) + ".json"; }

std::string StripQuotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

bool IsUploadId(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

int Count(const std::vector<bool>& v) {
  return static_cast<int>(std::count(v.begin(), v.end(), true));
}

Error WriteQuorumError(int have, int need) {
  return MakeError(ErrorCode::kInsufficientWriteQuorum,
                   "only " + std::to_string(have) + " drives could store the write; " +
                       std::to_string(need) + " needed (write quorum)");
}

// The data directory the metadata file `meta_path` (drive-relative) references; "" when missing.
Result<std::string> DataDirOf(Drive& drive, const std::string& meta_path) {
  auto raw = drive.ReadFile(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return std::string();
  auto meta = ParseObjectMeta(**raw, meta_path);
  if (!meta.ok()) return meta.error();
  return meta->data_dir;
}

DriveFanout::DriveFanout(std::vector<DriveSlot> slots, ThreadPool* pool)
    : slots_(std::move(slots)), all_(slots_.size(), true), pool_(pool) {
  for (const auto& s : slots_) {
    const size_t piece = s.host->piece_bytes();
    if (piece_bytes_ == 0 || piece < piece_bytes_) piece_bytes_ = piece;
  }
}

std::vector<std::vector<size_t>> DriveFanout::Groups(const std::vector<bool>& which, GroupBy by,
                                                     DriveWork work,
                                                     std::vector<std::vector<size_t>>& here) const {
  std::vector<std::vector<size_t>> tasks;
  std::vector<std::pair<const DriveHost*, size_t>> task_of_host;
  for (size_t p = 0; p < slots_.size(); ++p) {
    if (!which[p]) continue;
    const DriveHost* host = slots_[p].host.get();
    const bool grouped = by == GroupBy::kHost || (by == GroupBy::kLocalHost && host->is_local()) ||
                         (by == GroupBy::kRemoteHost && !host->is_local());
    if (grouped) {
      auto it = std::find_if(task_of_host.begin(), task_of_host.end(),
                             [&](const auto& t) { return t.first == host; });
      if (it != task_of_host.end()) {
        tasks[it->second].push_back(p);
        continue;
      }
      task_of_host.emplace_back(host, tasks.size());
    }
    tasks.push_back({p});
  }
  // A page-cache lookup costs less than a thread hand-off: the local tasks run meanwhile on the
  // calling thread (without a pool RunTasks runs everything there anyway).
  if (work == DriveWork::kLookup && pool_) {
    std::vector<std::vector<size_t>> pooled;
    for (auto& t : tasks) {
      (slots_[t[0]].host->is_local() ? here : pooled).push_back(std::move(t));
    }
    tasks = std::move(pooled);
  }
  return tasks;
}

void DriveFanout::RunTasks(const std::vector<std::vector<size_t>>& tasks,
                           const std::vector<std::vector<size_t>>& here,
                           const std::function<void(const std::vector<size_t>&)>& fn) const {
  // A thread that must not wait (common/no_block.h) hands nothing to the pool: nothing runs, and
  // the attempt that asked is dropped.
  if (!tasks.empty() && pool_ && !noblock::MayWait()) return;
  if (tasks.empty() || !pool_) {
    for (const auto& t : here) fn(t);
    for (const auto& t : tasks) fn(t);
    return;
  }
  struct Join {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
  } join;
  // The calling thread would only wait: it runs the last task itself, which saves a thread
  // hand-off per batch (all of them for a one-drive set or a set of one host).
  join.left = tasks.size() - 1;
  for (size_t t = 0; t + 1 < tasks.size(); ++t) {
    pool_->Submit([&, t] {
      fn(tasks[t]);
      std::lock_guard lock(join.mu);  // notify under the lock: `join` lives on our stack
      if (--join.left == 0) join.cv.notify_one();
    });
  }
  for (const auto& t : here) fn(t);
  fn(tasks.back());
  std::unique_lock lock(join.mu);
  join.cv.wait(lock, [&] { return join.left == 0; });
}

std::vector<bool> DriveFanout::ForEachDrive(const std::vector<bool>& which,
                                            const std::function<bool(size_t)>& fn,
                                            DriveWork work) const {
  std::vector<char> ok(slots_.size(), 0);  // not vector<bool>: positions are written concurrently
  std::vector<std::vector<size_t>> here;
  const auto tasks = Groups(
      which, work == DriveWork::kBuffered ? GroupBy::kLocalHost : GroupBy::kNone, work, here);
  RunTasks(tasks, here, [&](const std::vector<size_t>& members) {
    for (size_t p : members) ok[p] = fn(p);
  });
  return std::vector<bool>(ok.begin(), ok.end());
}

void DriveFanout::ForEachHost(const std::vector<bool>& which,
                              const std::function<void(DriveHost&, const std::vector<size_t>&)>& fn,
                              DriveWork work) const {
  std::vector<std::vector<size_t>> here;
  const auto tasks =
      Groups(which, work == DriveWork::kIo ? GroupBy::kRemoteHost : GroupBy::kHost, work, here);
  RunTasks(tasks, here,
           [&](const std::vector<size_t>& members) { fn(*slots_[members[0]].host, members); });
}

std::vector<Result<RenameDataResult>> ErasureSet::RenameDataAll(
    const std::vector<bool>& which,
    const std::function<RenameDataRequest(size_t)>& make_req) const {
  std::vector<Result<RenameDataResult>> out(
      roots_.size(), Result<RenameDataResult>(MakeError(ErrorCode::kInternalError, "not run")));
  fanout_.ForEachHost(
      which,
      [&](DriveHost& host, const std::vector<size_t>& members) {
        std::vector<RenameDataEntry> entries;
        entries.reserve(members.size());
        for (size_t p : members) entries.push_back({fanout_.slot(p).index, make_req(p)});
        auto results = host.RenameData(std::move(entries));
        for (size_t j = 0; j < members.size() && j < results.size(); ++j)
          out[members[j]] = std::move(results[j]);
      },
      DriveWork::kCommit);
  return out;
}

std::vector<bool> ErasureSet::ReadFileEach(
    const std::vector<bool>& which, const std::string& path,
    const std::function<bool(size_t, Result<std::optional<std::string>>)>& fn) const {
  std::vector<char> ok(roots_.size(), 0);  // not vector<bool>: written by several threads
  fanout_.ForEachHost(
      which,
      [&](DriveHost& host, const std::vector<size_t>& members) {
        std::vector<FileRead> reads;
        reads.reserve(members.size());
        for (size_t p : members) reads.push_back({fanout_.slot(p).index, path});
        auto read = host.ReadFiles(reads);
        for (size_t j = 0; j < members.size() && j < read.size(); ++j)
          ok[members[j]] = fn(members[j], std::move(read[j]));
      },
      DriveWork::kLookup);
  return std::vector<bool>(ok.begin(), ok.end());
}

void ErasureSet::SetLocker(std::shared_ptr<NamespaceLocker> locker,
                           std::chrono::milliseconds timeout) {
  std::lock_guard lock(locker_mu_);
  locker_ = std::move(locker);
  lock_timeout_ = timeout;
}

Result<std::unique_ptr<NamespaceLock>> ErasureSet::Lock(const std::string& resource, LockMode mode,
                                                        std::string_view source) {
  std::shared_ptr<NamespaceLocker> locker;
  std::chrono::milliseconds timeout;
  {
    std::lock_guard lock(locker_mu_);
    locker = locker_;
    timeout = lock_timeout_;
  }
  return locker->Lock({resource}, mode, timeout, source);
}

Result<const Codec*> ErasureSet::GetCodec(int k, int m) {
  std::lock_guard lock(codec_mu_);
  auto& c = codecs_[{k, m}];
  if (!c) {
    auto made = Codec::Create(k, m);
    if (!made.ok()) return made.error();
    c = std::move(*made);
  }
  return c.get();
}

ErasureSet::Shape ErasureSet::ShapeFor(const std::string& storage_class) const {
  const int parity = layout_.ParityFor(storage_class);
  return Shape{n_ - parity, parity};
}

Result<ErasureSet::Shape> ErasureSet::ShapeOf(const UploadRecord& upload) const {
  // A record of an earlier release has none: every object was coded with the standard parity then.
  if (!upload.parity) return ShapeFor("");
  const int parity = *upload.parity;
  if (parity < 0 || parity > n_ / 2) {
    return MakeError(ErrorCode::kInternalError, "upload record names parity " +
                                                    std::to_string(parity) + " for a set of " +
                                                    std::to_string(n_) + " drives");
  }
  return Shape{n_ - parity, parity};
}

std::vector<int> ErasureSet::Distribution(const std::string& key) const {
  const uint64_t h = XXH3_64bits(key.data(), key.size()) % static_cast<uint64_t>(n_);
  std::vector<int> d(static_cast<size_t>(n_));
  for (int p = 0; p < n_; ++p) d[static_cast<size_t>(p)] = static_cast<int>((p + h) % n_);
  return d;
}

}  // namespace rdmastor::storage
