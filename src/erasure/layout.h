// How a drive list is cut into erasure sets, and each set's parity.
//
// Set size (MinIO's rule for one pool): the largest divisor of the drive count in 2..16; so 4
// drives are one set of 4, 16 one set of 16, 24 two sets of 12, 32 two of 16, 18 two of 9. A count
// with no such divisor (17, 19, 23, ... or more than 16 prime factors' worth) is refused. MinIO
// further checks that multi-node layouts are symmetric across hosts; with local drives only that
// check has nothing to act on. Drives are assigned to sets in order: set 0 takes the first
// `set_size`.
//
// Parity defaults (DESIGN.md §5): EC:1 for sets of 2-3 drives, EC:2 for 4-5, EC:3 for 6-7, EC:4 for
// 8 and more; MINIO_STORAGE_CLASS_STANDARD=EC:N overrides it with 1 <= N <= set size / 2.
// Quorums per object: read = data shards; write = data shards, +1 when data == parity (so two
// writes that disagree cannot both reach quorum).
#pragma once

#include <string>

#include "common/result.h"

namespace rdmastor::erasure {

struct SetLayout {
  int set_count = 1;
  int set_size = 1;  // drives per set
  int parity = 0;

  int data() const { return set_size - parity; }
};

inline int ReadQuorum(int data, int parity) { return data; }
inline int WriteQuorum(int data, int parity) { return data == parity ? data + 1 : data; }

int DefaultParity(int set_size);

// `drives` >= 2; `storage_class` is MINIO_STORAGE_CLASS_STANDARD ("" when unset). Errors
// (kInvalidArgument) name what is wrong and what is accepted.
Result<SetLayout> PlanLayout(int drives, const std::string& storage_class);

}  // namespace rdmastor::erasure
