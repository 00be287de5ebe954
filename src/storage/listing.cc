#include "storage/listing.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "storage/fsutil.h"
#include "storage/object_meta.h"
#include "storage/paths.h"

namespace rdmastor::storage {

namespace {

using paths::Join;

// ---- Listing ---------------------------------------------------------------------------------
//
// Walks key directories in key order. Inside a directory for key prefix P, child c contributes
// two items: the object P+c (sorting as "c") and the subtree P+c+"/..." (sorting as "c/"), so
// "a" < "a-x" < "a/b" < "a0" comes out right. Subtrees that cannot hold a key matching the prefix
// or beyond start_after are skipped without being read, and a subtree whose keys all roll up into
// one common prefix is emitted as that prefix without descending.
class Lister {
 public:
  Lister(std::string bucket, std::string bucket_dir, const ListOptions& opts)
      : bucket_(std::move(bucket)), bucket_dir_(std::move(bucket_dir)), o_(opts) {}

  Result<ListResult> Run() {
    if (o_.max_keys <= 0) return res_;
    // No key is longer than kMaxKeyLength, so a longer prefix matches nothing (as S3 answers); its
    // directory path could also exceed PATH_MAX.
    if (o_.prefix.size() > paths::kMaxKeyLength) return res_;
    // Start in the deepest directory the prefix names completely ("a/b/" for "a/b/c").
    size_t slash = o_.prefix.rfind('/');
    if (slash == std::string::npos) {
      Walk(bucket_dir_, "");
    } else {
      std::string base = o_.prefix.substr(0, slash + 1);
      std::string_view rel(base.data(), base.size() - 1);
      for (size_t pos = 0; pos <= rel.size();) {
        size_t next = rel.find('/', pos);
        if (next == std::string_view::npos) next = rel.size();
        if (!paths::IsValidSegment(rel.substr(pos, next - pos))) return res_;  // matches no key
        pos = next + 1;
      }
      ConsiderSubtree(base, Join(bucket_dir_, rel));
    }
    if (failed_) return err_;
    if (res_.truncated) res_.next_marker = last_entry_;
    return std::move(res_);
  }

 private:
  std::optional<std::string> CommonPrefix(const std::string& key) const {
    if (o_.delimiter.empty()) return std::nullopt;
    size_t idx = key.find(o_.delimiter, o_.prefix.size());
    if (idx == std::string::npos) return std::nullopt;
    return key.substr(0, idx + o_.delimiter.size());
  }

  bool Full() {
    if (entries_ < o_.max_keys) return false;
    res_.truncated = true;  // there is one more entry than fits
    done_ = true;
    return true;
  }

  void EmitPrefix(const std::string& cp) {
    if (Full()) return;
    res_.common_prefixes.push_back(cp);
    ++entries_;
    last_cp_ = cp;
    last_entry_ = cp;
  }

  void Fail(Error e) {
    failed_ = true;
    done_ = true;
    err_ = std::move(e);
  }

  void Walk(const std::string& dir, const std::string& p) {
    auto names = fsutil::ListDir(dir, /*dirs_only=*/true);
    if (!names.ok()) return Fail(names.error());
    std::vector<std::pair<std::string, bool>> items;  // (sort name, is subtree)
    items.reserve(names->size() * 2);
    for (auto& c : *names) {
      if (paths::IsInternalName(c)) continue;
      items.emplace_back(c + "/", true);
      items.emplace_back(std::move(c), false);
    }
    std::sort(items.begin(), items.end());
    for (const auto& [name, subtree] : items) {
      if (done_) return;
      if (subtree) {
        ConsiderSubtree(p + name, Join(dir, std::string_view(name).substr(0, name.size() - 1)));
      } else {
        ConsiderKey(p + name, Join(Join(dir, name), paths::kMetaFile));
      }
    }
  }

  void ConsiderKey(const std::string& key, const std::string& meta_path) {
    if (!key.starts_with(o_.prefix)) return;
    if (auto cp = CommonPrefix(key)) {
      if (*cp <= o_.start_after || *cp == last_cp_) return;
      if (fsutil::Exists(meta_path)) EmitPrefix(*cp);
      return;
    }
    // Versions resume inside the marker's key (the caller drops the versions already returned).
    if (o_.versions ? key < o_.start_after : key <= o_.start_after) return;
    if (entries_ >= o_.max_keys) {
      if (fsutil::Exists(meta_path)) Full();
      return;
    }
    auto raw = fsutil::ReadFileIfExists(meta_path);
    if (!raw.ok() || !raw->has_value()) return;  // deleted meanwhile (errors were logged)
    auto file = ParseObjectVersions(**raw, meta_path);
    if (!file.ok()) {
      spdlog::error("storage: listing skips {}: {}", key, file.error().message);
      return;
    }
    if (o_.versions) {
      bool latest = true;
      for (const auto& v : file->versions) {
        ObjectInfo info = v.ToInfo(bucket_, key);
        info.is_latest = latest;
        latest = false;
        res_.objects.push_back(std::move(info));
      }
    } else {
      // A key whose latest version is a delete marker is not listed.
      if (file->Latest()->delete_marker) return;
      res_.objects.push_back(file->Latest()->ToInfo(bucket_, key));
    }
    ++entries_;
    last_entry_ = key;
  }

  void ConsiderSubtree(const std::string& s, const std::string& dir) {
    if (!s.starts_with(o_.prefix) && !o_.prefix.starts_with(s)) return;
    // Every key below is s + something: all <= start_after unless s leads to start_after.
    if (s < o_.start_after && !o_.start_after.starts_with(s)) return;
    if (!o_.delimiter.empty() && s.size() > o_.prefix.size()) {
      size_t idx = s.find(o_.delimiter, o_.prefix.size());
      if (idx != std::string::npos) {  // all keys below share this common prefix
        std::string cp = s.substr(0, idx + o_.delimiter.size());
        if (cp <= o_.start_after || cp == last_cp_) return;
        auto has = SubtreeHasObject(dir);
        if (!has.ok()) return Fail(has.error());
        if (*has) EmitPrefix(cp);
        return;
      }
    }
    ConsiderKey(s, Join(dir, paths::kDirMetaFile));
    if (!done_) Walk(dir, s);
  }

  const std::string bucket_;
  const std::string bucket_dir_;
  const ListOptions& o_;
  ListResult res_;
  std::string last_cp_;
  std::string last_entry_;
  int64_t entries_ = 0;  // keys and common prefixes emitted (what max_keys counts)
  bool done_ = false;
  bool failed_ = false;
  Error err_;
};

}  // namespace

Result<bool> SubtreeHasObject(const std::string& dir) {
  if (fsutil::Exists(Join(dir, paths::kDirMetaFile))) return true;
  auto children = fsutil::ListDir(dir, /*dirs_only=*/true);
  if (!children.ok()) return children.error();
  for (const auto& c : *children) {
    if (paths::IsInternalName(c)) continue;
    const std::string child = Join(dir, c);
    if (fsutil::Exists(Join(child, paths::kMetaFile))) return true;
    auto sub = SubtreeHasObject(child);
    if (!sub.ok() || *sub) return sub;
  }
  return false;
}

Result<ListResult> ListDrive(const std::string& bucket, const std::string& bucket_dir,
                             const ListOptions& opts) {
  return Lister(bucket, bucket_dir, opts).Run();
}

ListResult MergeListings(std::vector<ListResult> parts, int max_keys, int min_copies) {
  // Entry name -> (is prefix, versions seen: (etag, mtime) -> (count, info)).
  struct Entry {
    bool prefix = false;
    std::map<std::pair<std::string, int64_t>, std::pair<int, ObjectInfo>> versions;
  };
  std::map<std::string, Entry> all;
  bool truncated = false;
  for (auto& p : parts) {
    truncated = truncated || p.truncated;
    for (auto& cp : p.common_prefixes) all[cp].prefix = true;
    for (auto& o : p.objects) {
      auto& v = all[o.key].versions[{o.etag, o.mtime_ns}];
      if (v.first++ == 0) v.second = std::move(o);
    }
  }
  ListResult out;
  for (auto& [name, e] : all) {
    std::optional<ObjectInfo> pick;
    if (!e.prefix) {
      int best = 0;
      for (auto& [ver, cv] : e.versions) {
        if (cv.first > best || (cv.first == best && pick && cv.second.mtime_ns > pick->mtime_ns)) {
          best = cv.first;
          pick = cv.second;
        }
      }
      if (best < min_copies) continue;  // a leftover on too few drives: not an object
    }
    if (static_cast<int>(out.objects.size() + out.common_prefixes.size()) >= max_keys) {
      out.truncated = true;
      break;
    }
    if (e.prefix) {
      out.common_prefixes.push_back(name);
    } else {
      out.objects.push_back(std::move(*pick));
    }
    out.next_marker = name;
  }
  out.truncated = out.truncated || truncated;
  if (!out.truncated) out.next_marker.clear();
  return out;
}

ListResult MergeVersionListings(std::vector<ListResult> parts, int max_keys, int min_copies) {
  using VersionKey = std::tuple<std::string, int64_t, std::string, bool>;
  struct Entry {
    bool prefix = false;
    std::map<VersionKey, std::pair<int, ObjectInfo>> versions;
  };
  std::map<std::string, Entry> all;
  bool truncated = false;
  for (auto& p : parts) {
    truncated = truncated || p.truncated;
    for (auto& cp : p.common_prefixes) all[cp].prefix = true;
    for (auto& o : p.objects) {
      auto& v = all[o.key].versions[{o.version_id, o.mtime_ns, o.etag, o.delete_marker}];
      if (v.first++ == 0) v.second = std::move(o);
    }
  }
  ListResult out;
  int entries = 0;
  for (auto& [name, e] : all) {
    std::vector<ObjectInfo> kept;
    if (!e.prefix) {
      for (auto& [k, cv] : e.versions)
        if (cv.first >= min_copies) kept.push_back(std::move(cv.second));
      if (kept.empty()) continue;  // leftovers on too few drives
      std::sort(kept.begin(), kept.end(), [](const ObjectInfo& a, const ObjectInfo& b) {
        return std::tie(a.mtime_ns, a.version_id) > std::tie(b.mtime_ns, b.version_id);
      });
    }
    if (entries >= max_keys) {
      out.truncated = true;
      break;
    }
    ++entries;
    if (e.prefix) {
      out.common_prefixes.push_back(name);
    } else {
      for (size_t i = 0; i < kept.size(); ++i) {
        kept[i].is_latest = i == 0;
        out.objects.push_back(std::move(kept[i]));
      }
    }
    out.next_marker = name;
  }
  out.truncated = out.truncated || truncated;
  if (!out.truncated) out.next_marker.clear();
  return out;
}

}  // namespace rdmastor::storage
