#include "storage/format.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_int.h"
#include "storage/drive.h"
#include "storage/fsutil.h"
#include "storage/paths.h"

namespace rdmastor::storage {

namespace {

using nlohmann::json;

std::string NewId() {
  std::string h = hash::RandomHex(16);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

}  // namespace

Status WriteFormatFile(const std::string& root, const DriveFormat& f) {
  RS_RETURN_IF_ERROR(fsutil::MkdirAll(root, paths::SysDir(root)));
  // The system area a formatted drive needs (clusters: a peer may format it before its own node
  // prepares it, and writes into its staging area right away).
  for (const std::string& d :
       {paths::TmpDir(root), paths::MultipartRoot(root), paths::BucketsMetaDir(root)}) {
    RS_RETURN_IF_ERROR(fsutil::MkdirAll(root, d));
  }
  // A unique temporary name: two nodes may format the same drive at once (same contents).
  const std::string tmp = FormatPath(root) + "." + hash::RandomHex(8) + ".tmp";
  RS_RETURN_IF_ERROR(fsutil::WriteFileDurable(tmp, SerializeFormat(f)));
  if (fsutil::Rename(tmp, FormatPath(root)) != 0) {
    return fsutil::ErrnoError("rename", tmp, errno);
  }
  return fsutil::FsyncDir(paths::SysDir(root));
}

std::string FormatPath(const std::string& root) {
  return paths::Join(paths::SysDir(root), "format.json");
}

std::string SerializeFormat(const DriveFormat& f) {
  return json{{"version", kFormatVersion},
              {"format", "erasure"},
              {"deployment_id", f.deployment_id},
              {"drive_id", f.drive_id},
              {"set_index", f.set_index},
              {"drive_index", f.drive_index},
              {"sets", f.sets}}
      .dump(2);
}

Result<DriveFormat> ParseFormat(const std::string& text, const std::string& what) {
  try {
    json j = json::parse(text);
    if (json_int::At<int>(j, "version") != kFormatVersion) {
      return MakeError(ErrorCode::kInternalError, "unsupported format version in " + what);
    }
    DriveFormat f;
    f.deployment_id = j.at("deployment_id").get<std::string>();
    f.drive_id = j.at("drive_id").get<std::string>();
    f.set_index = json_int::At<int>(j, "set_index");
    f.drive_index = json_int::At<int>(j, "drive_index");
    f.sets = j.at("sets").get<std::vector<std::vector<std::string>>>();
    return f;
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, "malformed " + what + ": " + e.what());
  }
}

Result<DriveFormat> ReadFormat(const std::string& root) {
  const std::string path = FormatPath(root);
  auto raw = fsutil::ReadFileIfExists(path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return MakeError(ErrorCode::kNoSuchKey, "no format file " + path);
  return ParseFormat(**raw, path);
}

bool IsEmptyDrive(const std::string& root) {
  auto names = fsutil::ListDir(root, /*dirs_only=*/false);
  if (!names.ok()) return false;
  for (const auto& n : *names) {
    if (n == "lost+found") continue;
    if (n == paths::kSysDir) {
      // A system area without format or objects (e.g. staging left by a failed start).
      if (fsutil::Exists(FormatPath(root))) return false;
      auto buckets = fsutil::ListDir(paths::BucketsMetaDir(root), false);
      if (buckets.ok() && !buckets->empty()) return false;
      continue;
    }
    return false;
  }
  return true;
}

Status FormatInto(Drive& target, const std::string& deployment_id,
                  const std::vector<std::vector<std::string>>& sets, int set, int drive) {
  DriveFormat f{deployment_id, sets[static_cast<size_t>(set)][static_cast<size_t>(drive)], set,
                drive, sets};
  return target.WriteFormat(f);
}

Status FormatSingleDrive(Drive& drive) {
  const std::string id = NewId();
  return FormatInto(drive, NewId(), {{id}}, 0, 0);
}

Result<FormatResult> LoadOrFormat(const std::vector<Drive*>& drives,
                                  const erasure::SetLayout& layout, const FormatOptions& options) {
  const size_t n = drives.size();
  std::vector<std::string> roots;
  for (Drive* d : drives) roots.push_back(d->name());
  std::vector<std::optional<DriveFormat>> formats(n);
  FormatResult out;
  out.states.assign(n, DriveState::kOk);
  std::map<std::string, std::vector<std::string>> by_deployment;
  for (size_t i = 0; i < n; ++i) {
    auto usable = drives[i]->EnsureRoot();
    if (!usable.ok() || !*usable) {
      if (!usable.ok()) spdlog::warn("drive {} is offline: {}", roots[i], usable.error().message);
      out.states[i] = DriveState::kOffline;
      continue;
    }
    auto f = drives[i]->ReadFormat();
    if (f.ok()) {
      formats[i] = std::move(*f);
      by_deployment[formats[i]->deployment_id].push_back(roots[i]);
    } else if (f.error().code != ErrorCode::kNoSuchKey) {
      spdlog::warn("drive {} is offline: {}", roots[i], f.error().message);
      out.states[i] = DriveState::kOffline;
    }
  }
  if (by_deployment.size() > 1) {
    std::string msg = "drives belong to different deployments:";
    for (const auto& [id, drives] : by_deployment) {
      msg += " deployment " + id + " (";
      for (size_t k = 0; k < drives.size(); ++k) msg += (k ? ", " : "") + drives[k];
      msg += ");";
    }
    return MakeError(ErrorCode::kInvalidArgument,
                     msg + " a drive can serve only one deployment (wipe it to reuse it)");
  }
  const int set_size = layout.set_size;
  if (by_deployment.empty()) {  // a new deployment
    if (!options.may_create) {
      return MakeError(ErrorCode::kServiceUnavailable,
                       "no drive is formatted yet; waiting for the first node to format them");
    }
    if (options.fresh_needs_all) {
      for (size_t i = 0; i < n; ++i) {
        if (out.states[i] == DriveState::kOffline) {
          return MakeError(ErrorCode::kServiceUnavailable,
                           "drive " + roots[i] +
                               " is offline; a new deployment is formatted only when every "
                               "drive answers");
        }
      }
    }
    out.fresh = true;
    out.deployment_id = NewId();
    out.sets.assign(static_cast<size_t>(layout.set_count), {});
    for (auto& s : out.sets)
      for (int d = 0; d < set_size; ++d) s.push_back(NewId());
  } else {
    const DriveFormat* ref = nullptr;
    for (const auto& f : formats)
      if (f) ref = &*f;
    out.deployment_id = ref->deployment_id;
    out.sets = ref->sets;
    size_t total = 0;
    for (const auto& s : out.sets) total += s.size();
    if (static_cast<int>(out.sets.size()) != layout.set_count || total != n ||
        (!out.sets.empty() && static_cast<int>(out.sets[0].size()) != set_size)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the drives were formatted as " + std::to_string(out.sets.size()) +
                           " erasure set(s) of " +
                           std::to_string(out.sets.empty() ? 0 : out.sets[0].size()) +
                           " drives, but " + std::to_string(n) +
                           " drives were given: start with the original drive list");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const int set = static_cast<int>(i) / set_size, drive = static_cast<int>(i) % set_size;
    if (formats[i]) {
      const DriveFormat& f = *formats[i];
      if (f.set_index != set || f.drive_index != drive ||
          out.sets[static_cast<size_t>(set)][static_cast<size_t>(drive)] != f.drive_id) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "drive " + roots[i] + " is drive " + std::to_string(f.drive_index + 1) +
                             " of erasure set " + std::to_string(f.set_index + 1) +
                             " but was given at position " + std::to_string(i + 1) + " (set " +
                             std::to_string(set + 1) + ", drive " + std::to_string(drive + 1) +
                             "): give the drives in their original "
                             "order");
      }
      continue;
    }
    if (out.states[i] == DriveState::kOffline) continue;
    auto empty = drives[i]->IsEmpty();
    if (!empty.ok()) {
      spdlog::warn("drive {} is offline: {}", roots[i], empty.error().message);
      out.states[i] = DriveState::kOffline;
      continue;
    }
    if (!*empty) {
      // Another node (clusters: the first one) may have formatted it since we looked.
      if (auto again = drives[i]->ReadFormat();
          again.ok() && again->deployment_id == out.deployment_id && again->set_index == set &&
          again->drive_index == drive &&
          out.sets[static_cast<size_t>(set)][static_cast<size_t>(drive)] == again->drive_id) {
        continue;
      }
      return MakeError(ErrorCode::kInvalidArgument,
                       "drive " + roots[i] +
                           " holds data but no erasure format file (a single-drive server's "
                           "drive, or another program's directory): give an empty directory");
    }
    if (auto st = FormatInto(*drives[i], out.deployment_id, out.sets, set, drive); !st.ok()) {
      spdlog::warn("drive {} is offline: cannot format: {}", roots[i], st.error().message);
      out.states[i] = DriveState::kOffline;
      continue;
    }
    out.states[i] = DriveState::kFormatted;
    if (!out.fresh)
      spdlog::warn("drive {} was empty: formatted into its slot; it will be healed", roots[i]);
  }
  for (int s = 0; s < layout.set_count; ++s) {
    int usable = 0;
    for (int d = 0; d < set_size; ++d)
      usable += out.states[static_cast<size_t>(s * set_size + d)] != DriveState::kOffline;
    if (usable < layout.data()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "erasure set " + std::to_string(s + 1) + " has only " +
                           std::to_string(usable) + " usable drives; " +
                           std::to_string(layout.data()) + " needed to serve");
    }
  }
  return out;
}

}  // namespace rdmastor::storage
