#include "storage/paths.h"

namespace rdmastor::storage::paths {

namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool IsInternalName(std::string_view name) { return name.starts_with(kInternalPrefix); }

bool IsMetaFileName(std::string_view name) { return name == kMetaFile || name == kDirMetaFile; }

bool IsDataDirName(std::string_view name) {
  std::string_view id;
  if (name.starts_with(kDataPrefix)) {
    id = name.substr(kDataPrefix.size());
  } else if (name.starts_with(kDirDataPrefix)) {
    id = name.substr(kDirDataPrefix.size());
  } else {
    return false;
  }
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!IsLowerAlnum(c) && !(c >= 'A' && c <= 'Z')) return false;
  }
  return true;
}

Status ValidateBucketName(std::string_view bucket) {
  bool ok = bucket.size() >= 3 && bucket.size() <= 63 && IsLowerAlnum(bucket.front()) &&
            IsLowerAlnum(bucket.back());
  for (char c : bucket) {
    if (!ok) break;
    ok = IsLowerAlnum(c) || c == '.' || c == '-';
  }
  if (!ok) {
    return MakeError(ErrorCode::kInvalidBucketName,
                     "bucket name not usable on a drive: " + std::string(bucket));
  }
  return {};
}

bool IsValidSegment(std::string_view segment) {
  return !segment.empty() && segment.size() <= kMaxSegmentLength && segment != "." &&
         segment != ".." && !IsInternalName(segment) &&
         segment.find('\0') == std::string_view::npos &&
         segment.find('/') == std::string_view::npos;
}

Result<KeyLocation> MapKey(std::string_view key) {
  if (key.size() > kMaxKeyLength) return MakeError(ErrorCode::kKeyTooLong);
  if (key.empty()) return MakeError(ErrorCode::kInvalidObjectName, "empty object key");
  if (key.find('\0') != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidObjectName, "object key contains NUL");
  }
  if (key.front() == '/') {
    return MakeError(ErrorCode::kInvalidObjectName, "object key starts with '/'");
  }
  KeyLocation loc;
  std::string_view rel = key;
  if (rel.back() == '/') {
    loc.dir_key = true;
    rel.remove_suffix(1);
  }
  // Check every segment: this is what keeps the key inside its bucket directory.
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    std::string_view seg = rel.substr(pos, slash - pos);
    if (seg.size() > kMaxSegmentLength) {
      return MakeError(ErrorCode::kKeyTooLong,
                       "object key has a path segment longer than 255 bytes");
    }
    if (!IsValidSegment(seg)) {
      return MakeError(ErrorCode::kInvalidObjectName,
                       "object key has an empty, '.', '..' or reserved path segment");
    }
    pos = slash + 1;
  }
  loc.rel_dir = std::string(rel);
  loc.meta_name = loc.dir_key ? kDirMetaFile : kMetaFile;
  loc.data_prefix = loc.dir_key ? kDirDataPrefix : kDataPrefix;
  return loc;
}

std::string Join(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(a.size() + 1 + b.size());
  out.append(a);
  out += '/';
  out.append(b);
  return out;
}

std::string SysDir(const std::string& root) { return Join(root, kSysDir); }
std::string TmpDir(const std::string& root) { return Join(SysDir(root), kTmpDir); }
std::string MultipartRoot(const std::string& root) { return Join(SysDir(root), kMultipartDir); }
std::string BucketsMetaDir(const std::string& root) { return Join(SysDir(root), kBucketsDir); }
std::string BucketDir(const std::string& root, std::string_view bucket) {
  return Join(root, bucket);
}
std::string BucketMetaFile(const std::string& root, std::string_view bucket) {
  return Join(BucketsMetaDir(root), std::string(bucket) + ".json");
}
std::string MultipartBucketDir(const std::string& root, std::string_view bucket) {
  return Join(MultipartRoot(root), bucket);
}

}  // namespace rdmastor::storage::paths
