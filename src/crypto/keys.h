// Object keys, the keys that seal them (a master key for SSE-S3, the customer's key for SSE-C),
// and the master key configuration (MINIO_KMS_SECRET_KEY).
//
// Every encrypted object has its own random 256-bit object key, which encrypts its data
// (crypto/dare.h). Only the object key sealed by a key-encryption key is stored: sealing derives
// a one-time key from the key-encryption key, a random 32-byte IV and the context (which object,
// which kind of encryption), and encrypts the object key with AES-256-GCM under it, so a sealed
// key copied onto another object, or opened with another key-encryption key, fails to open.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "crypto/dare.h"

namespace rdmastor::crypto {

Key RandomKey();

// base64(IV | encrypted object key | tag).
std::string SealKey(const Key& kek, const Key& object_key, std::string_view context);
// kAccessDenied when the sealed key does not open with `kek` for `context` (a wrong key);
// kInternalError when it is malformed.
Result<Key> UnsealKey(const Key& kek, std::string_view sealed, std::string_view context);

// A named master key, as MinIO's single-key KMS takes it: "name:base64(32 bytes)".
struct MasterKey {
  std::string id;
  Key key{};
};
// kInvalidArgument naming what is wrong (no name, not base64, not 32 bytes).
Result<MasterKey> ParseMasterKey(std::string_view spec);

// The master key that seals new object keys, and earlier ones that still open keys sealed before a
// rotation (until those are re-sealed).
class KeyRing {
 public:
  KeyRing(MasterKey current, std::vector<MasterKey> previous)
      : current_(std::move(current)), previous_(std::move(previous)) {}
  const MasterKey& current() const { return current_; }
  const std::vector<MasterKey>& previous() const { return previous_; }
  const MasterKey* Find(std::string_view id) const;

 private:
  MasterKey current_;
  std::vector<MasterKey> previous_;
};

// The key ring from MINIO_KMS_SECRET_KEY and RDMASTOR_KMS_PREVIOUS_SECRET_KEYS (comma-separated
// "name:base64" keys); nullopt when no master key is configured.
Result<std::optional<KeyRing>> KeyRingFromEnv();
// The same from the two values (null or empty: unset).
Result<std::optional<KeyRing>> ParseKeyRing(const char* current, const char* previous);

}  // namespace rdmastor::crypto
