// A DriveHost that injects faults into a real LocalHost (FaultHost) and its drives (FaultDrive):
// selected calls are delayed, fail, or return wrong bytes (a lying drive), and every call is
// counted. A batch call injects each entry's fault on its drive, then runs the entries that
// passed as one call of the LocalHost, so fault tests run the commit path production runs (the
// group commit of a file system's drives, its barriers). The erasure layer's tests put it under
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
#include "storage/drive_host.h"
#include "storage/local_drive.h"
#include "storage/local_host.h"

namespace rdmastor::storage::testing {

// The calls a test can aim faults at; everything else is kOther.
enum class DriveOp {
  kReadFile,  // metadata files, bucket records, upload records
  kWriteFile,
  kCreateShard,  // opening a shard for writing (a shard's first piece)
  kShardAppend,  // each append of a shard writer, each shard piece
  kOpenShard,    // opening a shard for reading
  kShardRead,    // each ReadAt of an opened shard
  kRenameData,   // the commit of a write, metadata update or delete (a drive's entry of a batch)
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

  explicit FaultDrive(LocalDrive& inner) : inner_(inner) {}

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
    Tell(path, r);
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

  // A lying drive's ReadFile answer.
  void Tell(const std::string& path, Result<std::optional<std::string>>& r) {
    if (!r.ok()) return;
    Lie lie;
    {
      std::lock_guard lock(mu_);
      lie = lie_;
    }
    if (lie) lie(path, *r);
  }

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

  friend class FaultHost;  // injects each batch entry's fault on its drive

  LocalDrive& inner_;
  std::mutex mu_;
  std::array<Fault, static_cast<size_t>(DriveOp::kCount)> faults_{};
  Lie lie_;
  std::array<std::atomic<uint64_t>, static_cast<size_t>(DriveOp::kCount)> calls_{};
};

// The drives of `roots` on one LocalHost, each behind a FaultDrive.
class FaultHost final : public DriveHost {
 public:
  // `as_remote`: the host says it is not local (is_local() false), so that the erasure layer
  // reaches its drives as it reaches another node's: batch calls only (ReadShardPieces for
  // stripe reads), with the faults injected per entry.
  explicit FaultHost(const std::vector<std::string>& roots, bool as_remote = false)
      : inner_(roots), as_remote_(as_remote) {
    for (size_t i = 0; i < inner_.size(); ++i) {
      faults_.push_back(std::make_unique<FaultDrive>(inner_.local(i)));
      drives_.push_back(faults_.back().get());
    }
  }

  FaultDrive& fault(size_t i) { return *faults_[i]; }
  LocalHost& inner() { return inner_; }

  const std::string& name() const override { return inner_.name(); }
  bool is_local() const override { return !as_remote_; }
  const std::vector<Drive*>& drives() const override { return drives_; }
  size_t piece_bytes() const override { return inner_.piece_bytes(); }

  std::vector<Result<std::optional<std::string>>> ReadFiles(
      const std::vector<FileRead>& reads) override {
    return Batch<Result<std::optional<std::string>>>(
        std::vector<FileRead>(reads),
        [](FaultDrive& d, const FileRead&) { return d.Inject(DriveOp::kReadFile); },
        [&](std::vector<FileRead> pass) {
          auto got = inner_.ReadFiles(pass);
          for (size_t k = 0; k < pass.size(); ++k)
            faults_[pass[k].drive]->Tell(pass[k].path, got[k]);
          return got;
        });
  }

  std::vector<Result<RenameDataResult>> RenameData(std::vector<RenameDataEntry> entries) override {
    return Batch<Result<RenameDataResult>>(
        std::move(entries),
        [](FaultDrive& d, const RenameDataEntry&) { return d.Inject(DriveOp::kRenameData); },
        [&](std::vector<RenameDataEntry> pass) {
          ++rename_batches_;
          return inner_.RenameData(std::move(pass));
        });
  }

  std::vector<Status> WriteShardPieces(const std::vector<ShardPiece>& pieces) override {
    return Batch<Status>(
        std::vector<ShardPiece>(pieces),
        [](FaultDrive& d, const ShardPiece& p) {
          Status st = p.create ? d.Inject(DriveOp::kCreateShard) : Status();
          return st.ok() ? d.Inject(DriveOp::kShardAppend) : st;
        },
        [&](std::vector<ShardPiece> pass) { return inner_.WriteShardPieces(pass); });
  }

  // Each entry is a shard read of its drive (kShardRead: fails, is delayed, or has one byte of
  // what it read flipped); the entries that pass run as one LocalHost::ReadShardPieces.
  std::vector<Result<ShardPieceGot>> ReadShardPieces(
      const std::vector<ShardPieceRead>& reads) override {
    ++read_batches_;
    auto out = Batch<Result<ShardPieceGot>>(
        std::vector<ShardPieceRead>(reads),
        [](FaultDrive& d, const ShardPieceRead&) { return d.Inject(DriveOp::kShardRead); },
        [&](std::vector<ShardPieceRead> pass) { return inner_.ReadShardPieces(pass); });
    for (size_t j = 0; j < reads.size(); ++j) {
      if (out[j].ok() && out[j]->bytes > 0 &&
          faults_[reads[j].drive]->Get(DriveOp::kShardRead).corrupt)
        reads[j].buf[out[j]->bytes / 2] ^= 0x5a;  // a silent bit flip
    }
    return out;
  }

  // ReadShardPieces batches run.
  uint64_t read_batches() const { return read_batches_.load(); }

  // RenameData batches run (each one LocalHost::RenameData).
  uint64_t rename_batches() const { return rename_batches_.load(); }

 private:
  // Injects each entry's fault on its drive (inject(drive, entry): the entry's error, or ok),
  // then runs the entries that passed as one call of the LocalHost (run(entries)); the results
  // in the entries' order.
  template <class Out, class Entry, class Inject, class Run>
  std::vector<Out> Batch(std::vector<Entry> entries, Inject inject, Run run) {
    std::vector<Out> out(entries.size(), Out(ErrorCode::kInternalError));
    std::vector<Entry> pass;
    std::vector<size_t> at;
    for (size_t j = 0; j < entries.size(); ++j) {
      if (Status st = inject(*faults_[entries[j].drive], entries[j]); !st.ok()) {
        out[j] = st.error();
        continue;
      }
      pass.push_back(std::move(entries[j]));
      at.push_back(j);
    }
    auto done = run(std::move(pass));
    for (size_t k = 0; k < at.size(); ++k) out[at[k]] = std::move(done[k]);
    return out;
  }

  LocalHost inner_;
  const bool as_remote_;
  std::vector<std::unique_ptr<FaultDrive>> faults_;
  std::vector<Drive*> drives_;
  std::atomic<uint64_t> rename_batches_{0};
  std::atomic<uint64_t> read_batches_{0};
};

}  // namespace rdmastor::storage::testing
