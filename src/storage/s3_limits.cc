#include "storage/s3_limits.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/clock.h"
#include "common/hash.h"
#include "crypto/dare.h"

namespace rdmastor::storage {

uint64_t MaxStoredPutSize(const std::map<std::string, std::string>& internal) {
  return IsEncrypted(internal) ? crypto::EncryptedSize(kMaxPutSize) : kMaxPutSize;
}

uint64_t PlaintextSize(uint64_t stored, const std::map<std::string, std::string>& internal) {
  if (!IsEncrypted(internal)) return stored;
  auto plain = crypto::DecryptedSize(stored);
  return plain.ok() ? *plain : stored;
}

Result<UploadRecord> NewUploadRecord(const std::string& key, const PutOptions& opts) {
  UploadRecord rec;
  rec.key = key;
  rec.initiated_ns = NowNs();
  CopyDeclared(opts, rec);
  // CreateMultipartUpload's x-amz-checksum-algorithm / -type (checked by the S3 layer).
  if (!opts.checksum_algorithm.empty()) {
    if (!hash::ChecksumAlgoFromName(opts.checksum_algorithm)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "unsupported checksum algorithm " + opts.checksum_algorithm);
    }
    rec.checksum_algorithm = opts.checksum_algorithm;
    rec.checksum_type = opts.checksum_type;
  }

  return rec;
}

}  // namespace rdmastor::storage
