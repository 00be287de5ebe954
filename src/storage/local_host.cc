#include "storage/local_host.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>

namespace rdmastor::storage {

LocalHost::LocalHost(const std::vector<std::string>& roots) {
  for (const auto& r : roots) {
    local_.push_back(std::make_unique<LocalDrive>(r, MetaCacheBytes() / roots.size()));
    drives_.push_back(local_.back().get());
  }
}

std::optional<size_t> LocalHost::Find(std::string_view root) const {
  for (size_t i = 0; i < local_.size(); ++i)
    if (local_[i]->root() == root) return i;
  return std::nullopt;
}

Result<LocalDrive*> LocalHost::At(size_t i) {
  if (i >= local_.size())
    return MakeError(ErrorCode::kInvalidArgument,
                     "no drive " + std::to_string(i) + " on this node");
  return local_[i].get();
}

std::vector<Result<std::optional<std::string>>> LocalHost::ReadFiles(
    const std::vector<FileRead>& reads) {
  std::vector<Result<std::optional<std::string>>> out;
  out.reserve(reads.size());
  for (const auto& r : reads) {
    auto d = At(r.drive);
    out.push_back(d.ok() ? (*d)->ReadFile(r.path) : Result<std::optional<std::string>>(d.error()));
  }
  return out;
}

std::vector<Result<RenameDataResult>> LocalHost::RenameData(std::vector<RenameDataEntry> entries) {
  const size_t n = entries.size();
  std::vector<Result<RenameDataResult>> out(n, Result<RenameDataResult>(ErrorCode::kInternalError));
  std::vector<std::optional<LocalDrive::StagedRename>> staged(n);
  std::vector<LocalDrive*> local(n, nullptr);
  // Drives sharing a batcher (one file system) commit together, each step for all of them.
  std::vector<std::pair<std::shared_ptr<fsutil::SyncBatcher>, std::vector<size_t>>> by_fs;
  for (size_t i = 0; i < n; ++i) {
    auto d = At(entries[i].drive);
    if (!d.ok()) {
      out[i] = d.error();
      continue;
    }
    local[i] = *d;
    auto s = local[i]->StageRename(entries[i].req);
    if (!s.ok()) {
      out[i] = s.error();
      continue;
    }
    if (!s->plan) {
      out[i] = std::move(s->out);
      continue;
    }
    auto b = local[i]->Batcher();
    if (!b.ok()) {
      out[i] = b.error();
      continue;
    }
    staged[i] = std::move(*s);
    auto it =
        std::find_if(by_fs.begin(), by_fs.end(), [&](const auto& g) { return g.first == *b; });
    if (it == by_fs.end()) it = by_fs.insert(by_fs.end(), {*b, {}});
    it->second.push_back(i);
  }
  for (auto& [batcher, members] : by_fs) {
    std::vector<fsutil::CommitPlan> plans;
    plans.reserve(members.size());
    for (size_t i : members) plans.push_back(*staged[i]->plan);
    auto done = fsutil::CommitMany(plans, *batcher);
    for (size_t j = 0; j < members.size(); ++j) {
      const size_t i = members[j];
      local[i]->InvalidateMeta(entries[i].req);
      if (!done[j].ok()) {
        out[i] = done[j].error();
        continue;
      }
      out[i] = local[i]->FinishRename(*staged[i], entries[i].req);
    }
  }
  return out;
}

std::vector<Status> LocalHost::WriteShardPieces(const std::vector<ShardPiece>& pieces) {
  std::vector<Status> out;
  out.reserve(pieces.size());
  for (const auto& p : pieces) {
    auto d = At(p.drive);
    out.push_back(d.ok() ? (*d)->WriteShardAt(p.path, p.offset, p.data, p.create, p.sync)
                         : Status(d.error()));
  }
  return out;
}

Result<ShardPieceGot> LocalHost::ReadShardPiece(const ShardPieceRead& r) {
  auto d = At(r.drive);
  if (!d.ok()) return d.error();
  const std::string& root = (*d)->root();
  // The file an earlier piece of this read kept open (the same version, even if an overwrite
  // retired its data directory since), else the file at the path now.
  std::shared_ptr<ShardFile> file;
  uint64_t handle = 0;
  if (r.handle != 0 && (file = open_shards_.Find(r.handle, root, r.path))) handle = r.handle;
  if (!file) {
    auto f = (*d)->OpenShard(r.path, 0);
    if (!f.ok()) return f.error();
    file = std::move(f).value();
  }
  auto n = file->ReadAt(r.offset, r.buf, static_cast<size_t>(r.len));
  if (!n.ok()) return n.error();
  if (*n < r.len) std::memset(r.buf + *n, 0, static_cast<size_t>(r.len - *n));
  if (r.keep && handle == 0) {
    handle = open_shards_.Keep(std::move(file), root, r.path);
  } else if (!r.keep && handle != 0) {
    open_shards_.Release(handle, root, r.path);  // the read's last piece
    handle = 0;
  }
  return ShardPieceGot{static_cast<uint64_t>(*n), handle};
}

std::vector<Result<ShardPieceGot>> LocalHost::ReadShardPieces(
    const std::vector<ShardPieceRead>& reads) {
  std::vector<Result<ShardPieceGot>> out(reads.size(),
                                         Result<ShardPieceGot>(ErrorCode::kInternalError));
  uint64_t total = 0;
  for (const auto& r : reads) total += r.len;
  // A batch of a MiB or more waits on several disks: each entry after the first on a thread of
  // its own, so that the drives' reads overlap (from the page cache the hand-off would cost more
  // than it saves, hence the bound).
  std::vector<std::future<void>> running;
  if (reads.size() > 1 && total >= kPieceBytes) {
    for (size_t i = 1; i < reads.size(); ++i)
      running.push_back(
          std::async(std::launch::async, [&, i] { out[i] = ReadShardPiece(reads[i]); }));
  }
  if (!reads.empty()) out[0] = ReadShardPiece(reads[0]);
  if (running.empty())
    for (size_t i = 1; i < reads.size(); ++i) out[i] = ReadShardPiece(reads[i]);
  for (auto& f : running) f.get();
  return out;
}

}  // namespace rdmastor::storage
