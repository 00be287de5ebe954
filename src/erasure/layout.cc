#include "erasure/layout.h"

#include "erasure/codec.h"

namespace rdmastor::erasure {

int DefaultParity(int set_size) {
  if (set_size <= 3) return 1;
  if (set_size <= 5) return 2;
  if (set_size <= 7) return 3;
  return 4;
}

Result<SetLayout> PlanLayout(int drives, const std::string& storage_class) {
  if (drives < 1) return MakeError(ErrorCode::kInvalidArgument, "no drive given");
  SetLayout l;
  if (drives == 1) {
    // One drive is a one-drive set without parity (MinIO's single-drive mode): the same object
    // layer, bitrot-checked, nothing to heal from.
    l.set_size = 1;
    l.set_count = 1;
    l.parity = 0;
    if (!storage_class.empty() && storage_class != "EC:0") {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MINIO_STORAGE_CLASS_STANDARD='" + storage_class +
                           "' is invalid: a single drive has no parity (leave it unset or EC:0)");
    }
    return l;
  }
  for (int size = kMaxShards; size >= 2; --size) {
    if (drives % size == 0) {
      l.set_size = size;
      break;
    }
  }
  if (l.set_size < 2) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::to_string(drives) +
                         " drives cannot be split into equal erasure sets of 2 to 16 drives; "
                         "use a drive count with such a divisor (e.g. 4, 8, 12, 16, 24, 32)");
  }
  l.set_count = drives / l.set_size;
  l.parity = DefaultParity(l.set_size);
  if (!storage_class.empty()) {
    const std::string bad =
        "MINIO_STORAGE_CLASS_STANDARD='" + storage_class +
        "' is invalid: use EC:N with 1 <= N <= " + std::to_string(l.set_size / 2) +
        " for erasure sets of " + std::to_string(l.set_size) + " drives";
    if (storage_class.size() < 4 || storage_class.compare(0, 3, "EC:") != 0 ||
        storage_class.size() > 5 ||
        storage_class.find_first_not_of("0123456789", 3) != std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument, bad);
    }
    int n = std::stoi(storage_class.substr(3));
    if (n < 1 || n > l.set_size / 2) return MakeError(ErrorCode::kInvalidArgument, bad);
    l.parity = n;
  }
  return l;
}

}  // namespace rdmastor::erasure
