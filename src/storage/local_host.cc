#include "storage/local_host.h"

#include <algorithm>
#include <utility>

namespace rdmastor::storage {

LocalHost::LocalHost(const std::vector<std::string>& roots) {
  for (const auto& r : roots) {
    local_.push_back(std::make_unique<LocalDrive>(r));
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

}  // namespace rdmastor::storage
