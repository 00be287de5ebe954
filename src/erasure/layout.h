// How a drive list is cut into erasure sets, and the parity of each storage class.
//
// Set size (MinIO's rule for one pool): the largest divisor of the drive count in 2..16; so 4
// drives are one set of 4, 16 one set of 16, 24 two sets of 12, 32 two of 16, 18 two of 9. A count
// with no such divisor (17, 19, 23, ... or more than 16 prime factors' worth) is refused. MinIO
// further checks that multi-node layouts are symmetric across hosts; with local drives only that
// check has nothing to act on. Drives are assigned to sets in order: set 0 takes the first
// `set_size`.
//
// Storage classes (MinIO's): objects written with x-amz-storage-class STANDARD (or none) get the
// standard parity, REDUCED_REDUNDANCY ones the RRS parity; every object version records its own
// data/parity counts, so a later change of these settings affects new writes only.
// Standard parity defaults (DESIGN.md §5): EC:1 for sets of 2-3 drives, EC:2 for 4-5, EC:3 for
// 6-7, EC:4 for 8 and more; RRS parity defaults to EC:1 (at most the standard parity).
// MINIO_STORAGE_CLASS_STANDARD / MINIO_STORAGE_CLASS_RRS = EC:N override them, 0 <= N <= set size
// / 2 (so data shards are never fewer than parity shards), RRS never above STANDARD.
// Inline data (MinIO's MINIO_STORAGE_CLASS_INLINE_BLOCK): a version whose shard file (framed
// blocks of every stripe, erasure::Geometry::ShardFileSize) would be at most the inline block is
// kept inside each drive's metadata file instead (one file and one commit call per drive); in a
// bucket with versioning Enabled at most an eighth of it, since that file then holds every version.
// Quorums per object: read = data shards; write = data shards, +1 when data == parity (so two
// writes that disagree cannot both reach quorum).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace rdmastor::erasure {

// MINIO_STORAGE_CLASS_INLINE_BLOCK: MinIO's default, above which MinIO warns that PUT and GET may
// slow down; the maximum bounds what every metadata read (HEAD, listing) and a PUT's in-memory
// shards carry per drive.
inline constexpr uint64_t kDefaultInlineBlock = 128 << 10;
inline constexpr uint64_t kMaxInlineBlock = 1 << 20;

// The largest shard file kept inline: `inline_block`, or an eighth of it in a versioned bucket.
inline uint64_t InlineShardLimit(uint64_t inline_block, bool versioned) {
  return versioned ? inline_block / 8 : inline_block;
}

// The storage-class settings as given; "" = unset (the default applies).
struct StorageClassSettings {
  std::string standard;  // MINIO_STORAGE_CLASS_STANDARD
  std::string rrs;       // MINIO_STORAGE_CLASS_RRS
  uint64_t inline_block = kDefaultInlineBlock;  // MINIO_STORAGE_CLASS_INLINE_BLOCK, bytes

  bool operator==(const StorageClassSettings&) const = default;
};

struct SetLayout {
  int set_count = 1;
  int set_size = 1;  // drives per set
  int parity = 0;    // STANDARD objects' parity shards
  int rrs_parity = 0;  // REDUCED_REDUNDANCY objects' parity shards
  uint64_t inline_block = kDefaultInlineBlock;  // StorageClassSettings::inline_block

  int data() const { return set_size - parity; }
  // Parity for an object of `storage_class` as stored ("" = STANDARD, "REDUCED_REDUNDANCY").
  int ParityFor(const std::string& storage_class) const {
    return storage_class == "REDUCED_REDUNDANCY" ? rrs_parity : parity;
  }
};

inline int ReadQuorum(int data, int parity) { return data; }
inline int WriteQuorum(int data, int parity) { return data == parity ? data + 1 : data; }

int DefaultParity(int set_size);

// `drives` >= 1. Errors (kInvalidArgument) name the setting that is wrong and what is accepted.
// One drive has no parity: only unset or EC:0 is accepted there.
Result<SetLayout> PlanLayout(int drives, const StorageClassSettings& classes = {});

}  // namespace rdmastor::erasure
