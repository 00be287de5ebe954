// Bucket versioning in the S3 layer: the versionId parameter, PutBucketVersioning's rules, the
// ListObjectVersions page (markers, max-keys over versions), and the headers a version or a
// delete marker answers with. The object layer keeps the versions (storage/object_layer.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_types.h"
#include "common/result.h"
#include "s3/xml.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

// A versionId query parameter (or a copy source's): "null" is the null version (""); anything
// else must look like one of our ids, else InvalidArgument "Invalid version id specified".
Result<std::string> ParseVersionId(std::string_view value);

// PutBucketVersioning: `mfa_header` = the x-amz-mfa header was sent. MfaDelete Enabled is refused
// (AccessDenied without the header, as AWS answers; NotImplemented with it: no MFA devices here).
Status PutBucketVersioning(storage::ObjectLayer& store, const std::string& bucket,
                           std::string_view body, bool mfa_header);

struct ListingOwners;  // s3/ownership.h

struct ListVersionsQuery {
  std::string prefix, delimiter, key_marker, version_id_marker;
  bool has_version_id_marker = false;
  int max_keys = 1000;
  bool encode_url = false;
};
// What a listing with MinIO's metadata=true shows besides, one entry per listed version.
using ListedMetadataFn =
    std::function<std::vector<ListedMetadata>(const std::vector<storage::ObjectInfo>&)>;
// The ListObjectVersions document for one page; `metadata` (ListObjectVersionsM) adds each
// version's UserMetadata / UserTags.
// `owners`: how the versions' owners are shown (root's id for all when null).
Result<std::string> ListVersionsPage(storage::ObjectLayer& store, const std::string& bucket,
                                     const ListVersionsQuery& q,
                                     const ListedMetadataFn& metadata = nullptr,
                                     const ListingOwners* owners = nullptr);

// x-amz-version-id (the id, "null" for the null version) and, for a delete marker,
// x-amz-delete-marker: true.
void AddVersionHeaders(HeaderList& headers, const storage::ObjectInfo& info);

// The x-amz-version-id a read of a version answers with (GetObject, HeadObject, GetObjectAcl,
// Get/Put/DeleteObjectTagging): its id; for the null version "null" when a version was named or
// the bucket is versioned (Enabled or Suspended), nothing in a bucket never versioned, as AWS.
void AddReadVersionHeader(HeaderList& headers, storage::ObjectLayer& store,
                          const std::string& bucket, const storage::VersionSel& named,
                          const storage::ObjectInfo& info);

}  // namespace rdmastor::s3
