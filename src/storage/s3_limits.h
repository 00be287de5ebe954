// S3's size and count limits and the rules both object layers share (AWS's documented limits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"
#include "storage/object_layer.h"
#include "storage/object_meta.h"

namespace rdmastor::storage {

inline constexpr uint64_t kMaxPutSize = 5ULL << 30;     // single PUT / one part: 5 GiB
inline constexpr uint64_t kMaxObjectSize = 5ULL << 40;  // whole object: 5 TiB
inline constexpr uint64_t kMinPartSize = 5ULL << 20;    // every part but the last: 5 MiB
inline constexpr int kMaxPartNumber = 10000;
// The user_metadata key that carries a multipart upload's checksum algorithm: NewMultipartUpload
// takes it from there (removed from the stored user metadata, kept as its own field) and
// GetUploadOptions hands it back under the same key.
inline constexpr const char* kChecksumAlgorithmKey = "x-amz-checksum-algorithm";

// S3's size limits are on what the client sends, the plaintext; an encrypted object stores a
// longer stream (crypto::EncryptedSize). For data with the internal fields `internal`
// (ObjectMeta::internal): the largest stored size one PUT or part may have, and the plaintext
// size of `stored` bytes (a stored size no plaintext encrypts to counts as stored).
uint64_t MaxStoredPutSize(const std::map<std::string, std::string>& internal);
uint64_t PlaintextSize(uint64_t stored, const std::map<std::string, std::string>& internal);

// The record of a new multipart upload of `key` (both object layers): the checksum algorithm moves
// out of the user metadata into its own field; an unknown one is kInvalidArgument.
Result<UploadRecord> NewUploadRecord(const std::string& key, const PutOptions& opts);

}  // namespace rdmastor::storage
