// What an object layer without versions answers to the versioning calls: every object is its own
// null version and nothing can be versioned.
#include "storage/object_layer.h"

namespace rdmastor::storage {

namespace {

// MinIO's wildcard.MatchSimple: '*' matches any run of bytes, everything else itself.
bool MatchSimple(std::string_view pattern, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pattern.size() && pattern[p] == s[i]) {
      ++p, ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

Versioning VersioningFor(const BucketInfo& info, std::string_view key) {
  if (info.versioning != Versioning::kEnabled) return info.versioning;
  if (info.excluded.folders && key.ends_with('/')) return Versioning::kSuspended;
  for (const auto& prefix : info.excluded.prefixes)
    if (MatchSimple(prefix + "*", key)) return Versioning::kSuspended;
  return Versioning::kEnabled;
}

Status ObjectLayer::SetBucketEncryption(const std::string&, const std::string&) {
  return MakeError(ErrorCode::kNotImplemented, "bucket encryption needs the erasure layout");
}

Result<std::string> ObjectLayer::BucketEncryption(const std::string&) { return std::string(); }

Status ObjectLayer::SetBucketConfig(const std::string&, const std::string&, const std::string&) {
  return MakeError(ErrorCode::kNotImplemented, "bucket configurations need the erasure layout");
}

Result<std::string> ObjectLayer::BucketConfig(const std::string&, const std::string&) {
  return std::string();
}

Result<Versioning> ObjectLayer::BucketVersioning(const std::string&) {
  return Versioning::kUnversioned;
}

Status ObjectLayer::SetBucketVersioning(const std::string&, Versioning,
                                        const VersioningExclusions&) {
  return MakeError(ErrorCode::kNotImplemented, "bucket versioning needs the erasure layout");
}

Result<std::unique_ptr<ObjectReader>> ObjectLayer::OpenObjectVersion(
    const std::string& bucket, const std::string& key, const std::string& version_id) {
  if (!version_id.empty()) return MakeError(ErrorCode::kNoSuchVersion);
  return OpenObject(bucket, key);
}

Result<ObjectInfo> ObjectLayer::StatObjectVersion(const std::string& bucket, const std::string& key,
                                                  const std::string& version_id) {
  if (!version_id.empty()) return MakeError(ErrorCode::kNoSuchVersion);
  return StatObject(bucket, key);
}

Result<ObjectInfo> ObjectLayer::StatLatest(const std::string& bucket, const std::string& key,
                                           ObjectInfo*) {
  return StatObject(bucket, key);
}

Result<DeleteResult> ObjectLayer::DeleteObjectVersion(const std::string& bucket,
                                                      const std::string& key, const VersionSel& v,
                                                      const DeletePrecondition& precondition) {
  if (v && !v->empty()) return DeleteResult{*v, false, false};  // no such version: nothing to do
  if (precondition) {
    // An unversioned layer's only version is the latest and the removed one; this default has no
    // key lock to check it under (ErasureStore overrides it and does).
    auto current = StatObject(bucket, key);
    if (!current.ok() && current.error().code != ErrorCode::kNoSuchKey) return current.error();
    DeleteTarget t;
    if (current.ok()) t.latest = t.removed = &*current;
    RS_RETURN_IF_ERROR(precondition(t));
  }
  if (auto st = DeleteObject(bucket, key); !st.ok() && st.error().code != ErrorCode::kNoSuchKey)
    return st.error();
  return DeleteResult{};
}

Result<ListResult> ObjectLayer::ListObjectVersions(const std::string& bucket,
                                                   const ListOptions& opts) {
  ListOptions o = opts;
  o.versions = false;
  // start_after is inclusive for versions: the key itself may still have versions to list,
  // here only its null one, which the caller already returned.
  return ListObjects(bucket, o);
}

}  // namespace rdmastor::storage
