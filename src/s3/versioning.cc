#include "s3/versioning.h"

#include <utility>
#include <vector>

#include "s3/object_lock.h"
#include "s3/ownership.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {

Result<std::string> ParseVersionId(std::string_view value) {
  if (value == "null") return std::string();
  if (!storage::IsValidVersionId(value))
    return MakeError(ErrorCode::kInvalidArgument, "Invalid version id specified");
  return std::string(value);
}

Status PutBucketVersioning(storage::ObjectLayer& store, const std::string& bucket,
                           std::string_view body, bool mfa_header) {
  auto req = ParseVersioningXml(body);
  if (!req.ok()) return req.error();
  auto info = store.GetBucketInfo(bucket);
  if (!info.ok()) return info.error();
  if (req->mfa_delete && *req->mfa_delete) {
    if (!mfa_header)
      return MakeError(ErrorCode::kAccessDenied,
                       "Mfa Authentication must be used for this request");
    return MakeError(ErrorCode::kNotImplemented, "MFA delete is not supported by rdmastor.");
  }
  // MinIO's exclusions: at most 10 prefixes, and only on an Enabled bucket.
  auto illegal = [](const char* why) {
    return MakeError(
        ErrorCode::kIllegalVersioningConfiguration,
        std::string("Versioning configuration specified in the request is invalid. (") + why + ")");
  };
  constexpr size_t kMaxExcludedPrefixes = 10;
  if (req->excluded.prefixes.size() > kMaxExcludedPrefixes)
    return illegal("too many excluded prefixes");
  if (!req->excluded.prefixes.empty() && req->status != storage::Versioning::kEnabled)
    return illegal("excluded prefixes extension supported only when versioning is enabled");
  // Object Lock keeps a bucket versioned, everywhere in it (AWS; MinIO refuses exclusions too).
  if (auto lock = store.BucketConfig(bucket, kObjectLockConfigName);
      lock.ok() && ParseBucketLockRecord(*lock).enabled &&
      ((req->status && *req->status != storage::Versioning::kEnabled) ||
       !req->excluded.prefixes.empty() || req->excluded.folders))
    return MakeError(ErrorCode::kInvalidBucketState,
                     "An Object Lock configuration is present on this bucket, so the versioning "
                     "state cannot be changed.");
  // No Status: the state stays (a configuration that only says MfaDelete Disabled).
  if (!req->status) return {};
  return store.SetBucketVersioning(bucket, *req->status, req->excluded);
}

Result<std::string> ListVersionsPage(storage::ObjectLayer& store, const std::string& bucket,
                                     const ListVersionsQuery& q, const ListedMetadataFn& metadata,
                                     const ListingOwners* owners) {
  if (q.has_version_id_marker && !q.version_id_marker.empty() && q.key_marker.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "A version-id marker cannot be specified without a key marker.");
  std::optional<std::string> vmarker;
  if (q.has_version_id_marker && !q.version_id_marker.empty()) {
    auto v = ParseVersionId(q.version_id_marker);
    if (!v.ok()) return v.error();
    vmarker = std::move(*v);
  }
  storage::ListOptions lo;
  lo.prefix = q.prefix;
  lo.delimiter = q.delimiter;
  lo.start_after = q.key_marker;  // inclusive for versions: the marker key is filtered below
  // One key more than the page: the marker key's versions may all be behind the marker.
  lo.max_keys = q.max_keys < 1000000 ? q.max_keys + 1 : q.max_keys;
  lo.versions = true;
  storage::ListResult res;
  if (q.max_keys > 0) {
    auto listed = store.ListObjectVersions(bucket, lo);
    if (!listed.ok()) return listed.error();
    res = std::move(*listed);
  } else if (auto info = store.GetBucketInfo(bucket); !info.ok()) {
    return info.error();
  }

  // Drop what earlier pages returned: the marker key's versions up to and including the
  // version-id marker (all of them without one).
  std::vector<storage::ObjectInfo> versions;
  bool passed_marker = false;
  for (auto& o : res.objects) {
    if (!q.key_marker.empty() && o.key <= q.key_marker) {
      if (o.key < q.key_marker || !vmarker) continue;
      if (!passed_marker) {
        passed_marker = o.version_id == *vmarker;
        continue;
      }
    }
    versions.push_back(std::move(o));
  }

  // Versions and common prefixes in name order, cut at max-keys.
  ListVersionsParams p{bucket,     q.prefix,     q.delimiter,         q.key_marker,
                       q.max_keys, q.encode_url, q.version_id_marker, {},
                       {}};
  storage::ListResult page;
  size_t vi = 0, pi = 0;
  int count = 0;
  while (vi < versions.size() || pi < res.common_prefixes.size()) {
    const bool take_prefix = pi < res.common_prefixes.size() &&
                             (vi >= versions.size() || res.common_prefixes[pi] < versions[vi].key);
    if (count >= q.max_keys) {
      page.truncated = true;
      break;
    }
    ++count;
    if (take_prefix) {
      p.next_key_marker = res.common_prefixes[pi];
      p.next_version_id_marker.clear();
      page.common_prefixes.push_back(std::move(res.common_prefixes[pi++]));
    } else {
      p.next_key_marker = versions[vi].key;
      p.next_version_id_marker = versions[vi].version_id.empty() ? "null" : versions[vi].version_id;
      page.objects.push_back(std::move(versions[vi++]));
    }
  }
  page.truncated = page.truncated || (res.truncated && count > 0);
  if (metadata) p.extras = metadata(page.objects);
  return owners ? ListObjectVersionsXml(p, page, owners->bucket, &owners->names)
                : ListObjectVersionsXml(p, page, Owner{});
}

void AddVersionHeaders(HeaderList& headers, const storage::ObjectInfo& info) {
  headers.emplace_back("x-amz-version-id", info.version_id.empty() ? "null" : info.version_id);
  if (info.delete_marker) headers.emplace_back("x-amz-delete-marker", "true");
}

void AddReadVersionHeader(HeaderList& headers, storage::ObjectLayer& store,
                          const std::string& bucket, const storage::VersionSel& named,
                          const storage::ObjectInfo& info) {
  if (!named && info.version_id.empty()) {
    auto state = store.BucketVersioning(bucket);
    if (!state.ok() || *state == storage::Versioning::kUnversioned) return;
  }
  headers.emplace_back("x-amz-version-id", info.version_id.empty() ? "null" : info.version_id);
}

}  // namespace rdmastor::s3
