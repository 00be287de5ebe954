// MinIO's ellipsis syntax for drive lists: `/mnt/disk{1...4}`, `/mnt/{a...d}/x`, zero-padded
// `/mnt/disk{01...16}`, several ellipses in one argument (expanded left to right, the leftmost
// varying slowest) and several plain arguments. Validation happens here, once, at start.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace rdmastor::cli {

// True when `arg` holds at least one `{x...y}` pattern.
bool HasEllipses(const std::string& arg);

// Expands every `{x...y}` of one argument. x and y are both decimal numbers (zero-padded when x
// has a leading zero: both ends then need the same width) or both single letters; x <= y.
// Braces without `...` are literal. Errors (kInvalidArgument) name the argument.
Result<std::vector<std::string>> ExpandEllipses(const std::string& arg);

// The drive list of `rdmastor server ARG...` (or MINIO_VOLUMES split into words): several plain
// arguments, or exactly one argument with ellipses. URLs (http://HOST:PORT/PATH) select
// distributed mode (cluster/topology.h lays them out). Refused with a clear message: URLs mixed
// with plain directories, several arguments with ellipses (server pools are a later release),
// duplicate drives (compared after lexical normalisation), empty expansions.
Result<std::vector<std::string>> ExpandDriveArgs(const std::vector<std::string>& args);

}  // namespace rdmastor::cli
