#include "storage/s3_limits.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/hash.h"

namespace rdmastor::storage {

Result<UploadRecord> NewUploadRecord(const std::string& key, const PutOptions& opts) {
  UploadRecord rec;
  rec.key = key;
  rec.initiated_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  rec.content_type = opts.content_type;
  rec.user_metadata = opts.user_metadata;
  rec.tags = opts.tags;
  rec.storage_class = opts.storage_class;
  if (auto it = rec.user_metadata.find(kChecksumAlgorithmKey); it != rec.user_metadata.end()) {
    std::string algo = it->second;
    std::transform(algo.begin(), algo.end(), algo.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!hash::ChecksumAlgoFromName(algo)) {
      return MakeError(ErrorCode::kInvalidArgument, "unsupported checksum algorithm " + algo);
    }
    rec.checksum_algorithm = algo;
    rec.user_metadata.erase(it);
  }
  return rec;
}

}  // namespace rdmastor::storage
