// A Drive that injects faults into a real LocalDrive: selected calls are delayed, fail, or return
// wrong bytes (a lying drive), and every call is counted. The erasure layer's tests put it under
// an ErasureStore to check quorum, bitrot detection and healing against drives that misbehave the
// way real ones do (a slow disk, a dead one, silent corruption, a stale metadata file).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "storage/drive.h"
#include "storage/local_drive.h"

namespace rdmastor::storage::testing {

// The calls a test can aim faults at; everything else is kOther.
enum class DriveOp {
  kReadFile,  // metadata files, bucket records, upload records
  kWriteFile,
  kCreateShard,  // opening a shard for writing
  kShardAppend,  // each append of a shard writer
  kOpenShard,    // opening a shard for reading
  kShardRead,    // each ReadAt of an opened shard
  kRenameData,   // the commit of a write, metadata update or delete
  kStatVol,
  kOther,
  kCount
};

struct Fault {
  std::chrono::milliseconds delay{0};  // before the call runs
  bool fail = false;                   // the call answers an error instead of running
  bool corrupt = false;                // kShardRead: one byte of what was read is flipped
};

class FaultDrive final : public Drive {
 public:
  // Rewrites what ReadFile returns (path, content; nullopt = missing): a lying metadata file.
  using Lie = std::function<void(const std::string&, std::optional<std::string>&)>;

  explicit FaultDrive(std::string root) : inner_(std::move(root)) {}

  void Set(DriveOp op, Fault f) {
    std::lock_guard lock(mu_);
    faults_[static_cast<size_t>(op)] = f;
  }
  // Every call of every kind fails (a dead drive) or is delayed.
  void SetAll(Fault f) {
    std::lock_guard lock(mu_);
    for (auto& x : faults_) x = f;
  }
  void SetLie(Lie lie) {
    std::lock_guard lock(mu_);
    lie_ = std::move(lie);
  }
  void Clear() {
    std::lock_guard lock(mu_);
    faults_ = {};
    lie_ = nullptr;
  }
  uint64_t calls(DriveOp op) const { return calls_[static_cast<size_t>(op)].load(); }
  void ResetCounts() {
    for (auto& c : calls_) c = 0;
  }
  LocalDrive& inner() { return inner_; }

  const std::string& name() const override { return inner_.name(); }
  bool is_local() const override { return true; }

  bool IsOnline() override { return Inject(DriveOp::kOther).ok() && inner_.IsOnline(); }
  Result<DiskInfo> GetDiskInfo() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.GetDiskInfo();
  }
  Result<bool> EnsureRoot() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.EnsureRoot();
  }
  Status Prepare() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.Prepare();
  }
  Result<bool> IsEmpty() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.IsEmpty();
  }
  Result<DriveFormat> ReadFormat() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.ReadFormat();
  }
  Status WriteFormat(const DriveFormat& format) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.WriteFormat(format);
  }
  Result<bool> MakeVol(const std::string& bucket, const std::string& record) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.MakeVol(bucket, record);
  }
  bool StatVol(const std::string& bucket) override {
    return Inject(DriveOp::kStatVol).ok() && inner_.StatVol(bucket);
  }
  Result<std::vector<std::string>> ListVols() override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.ListVols();
  }
  Result<std::optional<std::string>> ReadVolMeta(const std::string& bucket) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.ReadVolMeta(bucket);
  }
  Result<bool> VolHasObjects(const std::string& bucket) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.VolHasObjects(bucket);
  }
  Status DeleteVol(const std::string& bucket) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.DeleteVol(bucket);
  }
  Result<std::optional<std::string>> ReadFile(const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kReadFile));
    auto r = inner_.ReadFile(path);
    if (!r.ok()) return r;
    Lie lie;
    {
      std::lock_guard lock(mu_);
      lie = lie_;
    }
    if (lie) lie(path, *r);
    return r;
  }
  Status WriteFile(const std::string& path, std::string_view data) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kWriteFile));
    return inner_.WriteFile(path, data);
  }
  bool Exists(const std::string& path) override {
    return Inject(DriveOp::kOther).ok() && inner_.Exists(path);
  }
  bool IsDir(const std::string& path) override {
    return Inject(DriveOp::kOther).ok() && inner_.IsDir(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& path, bool dirs_only) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.ListDir(path, dirs_only);
  }
  Status MakeDir(const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.MakeDir(path);
  }
  Status MakeDirAll(const std::string& base, const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.MakeDirAll(base, path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.Rename(from, to);
  }
  Status Link(const std::string& from, const std::string& to) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.Link(from, to);
  }
  Status Unlink(const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.Unlink(path);
  }
  Status RemoveAll(const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.RemoveAll(path);
  }
  Status FsyncDir(const std::string& path) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.FsyncDir(path);
  }
  void PruneEmptyDirs(const std::string& path, const std::string& stop) override {
    if (Inject(DriveOp::kOther).ok()) inner_.PruneEmptyDirs(path, stop);
  }

  Result<std::unique_ptr<ShardWriter>> CreateShard(const std::string& path,
                                                   uint64_t size) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kCreateShard));
    auto w = inner_.CreateShard(path, size);
    if (!w.ok()) return w.error();
    return std::unique_ptr<ShardWriter>(new Writer(*this, std::move(*w)));
  }
  Result<std::unique_ptr<ShardFile>> OpenShard(const std::string& path, uint64_t size) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOpenShard));
    auto f = inner_.OpenShard(path, size);
    if (!f.ok()) return f.error();
    return std::unique_ptr<ShardFile>(new Reader(*this, std::move(*f)));
  }
  Status Commit(const fsutil::CommitPlan& plan) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.Commit(plan);
  }
  Result<RenameDataResult> RenameData(const RenameDataRequest& req) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kRenameData));
    return inner_.RenameData(req);
  }
  Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts) override {
    RS_RETURN_IF_ERROR(Inject(DriveOp::kOther));
    return inner_.ListObjects(bucket, opts);
  }

 private:
  class Writer final : public ShardWriter {
   public:
    Writer(FaultDrive& d, std::unique_ptr<ShardWriter> w) : d_(d), w_(std::move(w)) {}
    Status Append(std::string_view data) override {
      RS_RETURN_IF_ERROR(d_.Inject(DriveOp::kShardAppend));
      return w_->Append(data);
    }
    Status Finish() override { return w_->Finish(); }
    Status Close() override { return w_->Close(); }

   private:
    FaultDrive& d_;
    std::unique_ptr<ShardWriter> w_;
  };

  class Reader final : public ShardFile {
   public:
    Reader(FaultDrive& d, std::unique_ptr<ShardFile> f) : d_(d), f_(std::move(f)) {}
    Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
      Fault f = d_.Get(DriveOp::kShardRead);
      RS_RETURN_IF_ERROR(d_.Inject(DriveOp::kShardRead));
      auto n = f_->ReadAt(off, buf, len);
      if (n.ok() && *n > 0 && f.corrupt) buf[*n / 2] ^= 0x5a;  // a silent bit flip
      return n;
    }

   private:
    FaultDrive& d_;
    std::unique_ptr<ShardFile> f_;
  };

  Fault Get(DriveOp op) {
    std::lock_guard lock(mu_);
    return faults_[static_cast<size_t>(op)];
  }

  Status Inject(DriveOp op) {
    ++calls_[static_cast<size_t>(op)];
    const Fault f = Get(op);
    if (f.delay.count() > 0) std::this_thread::sleep_for(f.delay);
    if (f.fail) return MakeError(ErrorCode::kInternalError, "injected fault on " + inner_.name());
    return {};
  }

  LocalDrive inner_;
  std::mutex mu_;
  std::array<Fault, static_cast<size_t>(DriveOp::kCount)> faults_{};
  Lie lie_;
  std::array<std::atomic<uint64_t>, static_cast<size_t>(DriveOp::kCount)> calls_{};
};

}  // namespace rdmastor::storage::testing
