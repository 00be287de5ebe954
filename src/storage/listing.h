// Listing one drive's key directories (LocalDrive::ListObjects; the erasure layer lists every drive
// of a set and merges), and merging sorted listings.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "storage/object_layer.h"

namespace rdmastor::storage {

// Lists objects of `bucket` stored below `bucket_dir` (layout in paths.h), in key order, applying
// prefix / delimiter / start_after / max_keys.
Result<ListResult> ListDrive(const std::string& bucket, const std::string& bucket_dir,
                             const ListOptions& opts);

// True when the key directory `dir` holds an object: its own "dir/" object or any object in its
// subtree. Directories a crash left empty hold none.
Result<bool> SubtreeHasObject(const std::string& dir);

// Merges listings of the same request taken from several drives or erasure sets. An object is
// kept when at least `min_copies` listings report the same version (etag + mtime) of it; common
// prefixes are united. The result is cut at max_keys; it is truncated when the union was longer or
// any input was truncated (every input is complete up to its own last entry, so the first
// max_keys merged entries are exact).
ListResult MergeListings(std::vector<ListResult> parts, int max_keys, int min_copies);

// The same for version listings (ListOptions::versions): per key, a version (id, mtime, ETag,
// marker) is kept when at least `min_copies` listings report it; a key's versions come out newest
// first with is_latest on the first; max_keys counts keys and common prefixes.
ListResult MergeVersionListings(std::vector<ListResult> parts, int max_keys, int min_copies);

}  // namespace rdmastor::storage
