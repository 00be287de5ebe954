// An erasure set's drive fan-out, namespace locks, codecs and shard distribution (set.h).

#include "storage/erasure/set.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "common/thread_pool.h"

namespace rdmastor::storage {

namespace {

using erasure::Codec;
using erasure::Geometry;
using paths::Join;

}  // namespace

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

std::vector<std::vector<size_t>> DriveFanout::Groups(const std::vector<bool>& which,
                                                     GroupBy by) const {
  std::vector<std::vector<size_t>> tasks;
  std::vector<std::pair<uint64_t, size_t>> task_of_key;
  for (size_t p = 0; p < drives_.size(); ++p) {
    if (!which[p]) continue;
    const bool keyed = by == GroupBy::kKey || (by == GroupBy::kLocalKey && drives_[p]->is_local());
    const uint64_t key = keyed ? drives_[p]->GroupKey() : 0;
    if (key != 0) {
      auto it = std::find_if(task_of_key.begin(), task_of_key.end(),
                             [&](const auto& k) { return k.first == key; });
      if (it != task_of_key.end()) {
        tasks[it->second].push_back(p);
        continue;
      }
      task_of_key.emplace_back(key, tasks.size());
    }
    tasks.push_back({p});
  }
  return tasks;
}

void DriveFanout::RunTasks(const std::vector<std::vector<size_t>>& tasks,
                           const std::vector<size_t>& here,
                           const std::function<void(const std::vector<size_t>&)>& fn) const {
  if (tasks.empty() || !pool_) {
    if (!here.empty()) fn(here);
    for (const auto& t : tasks) fn(t);
    return;
  }
  struct Join {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
  } join;
  // The calling thread would only wait: it runs the last task itself, which saves a thread
  // hand-off per batch (all of them for a one-drive set or a set on one file system).
  join.left = tasks.size() - 1;
  for (size_t t = 0; t + 1 < tasks.size(); ++t) {
    pool_->Submit([&, t] {
      fn(tasks[t]);
      std::lock_guard lock(join.mu);  // notify under the lock: `join` lives on our stack
      if (--join.left == 0) join.cv.notify_one();
    });
  }
  if (!here.empty()) fn(here);
  fn(tasks.back());
  std::unique_lock lock(join.mu);
  join.cv.wait(lock, [&] { return join.left == 0; });
}

std::vector<size_t> DriveFanout::TakeLookups(std::vector<bool>& pooled, DriveWork work) const {
  std::vector<size_t> here;
  if (work != DriveWork::kLookup || !pool_) return here;  // without a pool RunTasks runs it all
  for (size_t p = 0; p < drives_.size(); ++p) {
    if (pooled[p] && drives_[p]->is_local()) {
      pooled[p] = false;
      here.push_back(p);
    }
  }
  return here;
}

std::vector<bool> DriveFanout::ForEachDrive(const std::vector<bool>& which,
                                            const std::function<bool(size_t)>& fn,
                                            DriveWork work) const {
  const size_t n = drives_.size();
  std::vector<char> ok(n, 0);  // not vector<bool>: positions are written concurrently
  std::vector<bool> pooled = which;
  const std::vector<size_t> here = TakeLookups(pooled, work);
  RunTasks(Groups(pooled, work == DriveWork::kBuffered ? GroupBy::kLocalKey : GroupBy::kNone), here,
           [&](const std::vector<size_t>& members) {
             for (size_t p : members) ok[p] = fn(p);
           });
  return std::vector<bool>(ok.begin(), ok.end());
}

void DriveFanout::ForEachGroup(const std::vector<bool>& which,
                               const std::function<void(const std::vector<size_t>&)>& fn,
                               DriveWork work) const {
  std::vector<bool> pooled = which;
  const std::vector<size_t> here = TakeLookups(pooled, work);
  RunTasks(Groups(pooled, GroupBy::kKey), here, fn);
}

std::vector<Result<RenameDataResult>> ErasureSet::RenameDataAll(
    const std::vector<bool>& which,
    const std::function<RenameDataRequest(size_t)>& make_req) const {
  std::vector<Result<RenameDataResult>> out(
      roots_.size(), Result<RenameDataResult>(MakeError(ErrorCode::kInternalError, "not run")));
  fanout_.ForEachGroup(which, [&](const std::vector<size_t>& members) {
    if (members.size() == 1) {
      out[members[0]] = roots_[members[0]]->RenameData(make_req(members[0]));
      return;
    }
    std::vector<Drive*> group;
    std::vector<RenameDataRequest> reqs;
    for (size_t p : members) {
      group.push_back(roots_[p]);
      reqs.push_back(make_req(p));
    }
    auto results = roots_[members[0]]->RenameDataGroup(group, reqs);
    for (size_t j = 0; j < members.size(); ++j) out[members[j]] = std::move(results[j]);
  });
  return out;
}

std::vector<bool> ErasureSet::ReadFileEach(
    const std::vector<bool>& which, const std::string& path,
    const std::function<bool(size_t, Result<std::optional<std::string>>)>& fn) const {
  std::vector<char> ok(roots_.size(), 0);  // not vector<bool>: written by several threads
  fanout_.ForEachGroup(
      which,
      [&](const std::vector<size_t>& members) {
        if (members.size() == 1) {
          ok[members[0]] = fn(members[0], roots_[members[0]]->ReadFile(path));
          return;
        }
        std::vector<Drive*> group;
        for (size_t p : members) group.push_back(roots_[p]);
        auto read = roots_[members[0]]->ReadFileGroup(
            group, std::vector<std::string>(members.size(), path));
        for (size_t j = 0; j < members.size(); ++j)
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
