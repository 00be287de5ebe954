// An erasure set's drive fan-out, namespace locks, codecs and shard distribution (set.h).

#include "storage/erasure/set.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>

#include "common/thread_pool.h"

namespace rdmastor::storage {

namespace {

using erasure::Codec;
using erasure::Geometry;
using paths::Join;

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

std::vector<bool> DriveFanout::ForEachDrive(const std::vector<bool>& which,
                                            const std::function<bool(size_t)>& fn,
                                            DriveWork work) const {
  const size_t n = drives_.size();
  std::vector<char> ok(n, 0);  // not vector<bool>: positions are written concurrently
  auto on_pool = [&](size_t p) {
    return pool_ && (work == DriveWork::kIo || !drives_[p]->is_local());
  };
  struct Join {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
  } join;
  // The calling thread would only wait: it runs the last pool call itself, which saves a thread
  // hand-off per batch (all of them for a one-drive set).
  size_t mine = n;
  for (size_t p = 0; p < n; ++p) {
    if (which[p] && on_pool(p)) mine = p;
  }
  for (size_t p = 0; p < n; ++p) join.left += which[p] && on_pool(p) && p != mine ? 1 : 0;
  for (size_t p = 0; p < n; ++p) {
    if (!which[p] || !on_pool(p) || p == mine) continue;
    pool_->Submit([&, p] {
      const bool r = fn(p);
      std::lock_guard lock(join.mu);  // notify under the lock: `join` lives on our stack
      ok[p] = r;
      if (--join.left == 0) join.cv.notify_one();
    });
  }
  for (size_t p = 0; p < n; ++p) {
    if (which[p] && !on_pool(p)) ok[p] = fn(p);
  }
  if (mine < n) ok[mine] = fn(mine);
  std::unique_lock lock(join.mu);
  join.cv.wait(lock, [&] { return join.left == 0; });
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
  if (!upload.parity) return ShapeFor(upload.storage_class);
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
