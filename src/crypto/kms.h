// SSE-KMS's key service: named keys that seal (and open) the object keys of aws:kms objects.
//
// The interface has the shape of a real KMS (KES, Vault, KMIP): callers name a key and hand over
// an object key and the context it is bound to; raw master keys never leave the service. The one
// implementation here, LocalKms, holds its keys in this process: MinIO's single-key form
// (MINIO_KMS_SECRET_KEY and the keys it replaced) and a key directory
// (RDMASTOR_KMS_KEY_DIR: one file per key, named by the key's id). A remote KMS would be
// another implementation of Kms; nothing above this header knows which one it talks to.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "crypto/dare.h"
#include "crypto/keys.h"

namespace rdmastor::crypto {

class Kms {
 public:
  virtual ~Kms() = default;
  // The key aws:kms uses when the request and the bucket's default name none (AWS's aws/s3 key).
  virtual const std::string& DefaultKeyId() const = 0;
  virtual bool HasKey(std::string_view id) const = 0;
  virtual std::vector<std::string> KeyIds() const = 0;
  // `object_key` sealed under key `id` for `context` (crypto::SealKey's form). kKmsNotFound when
  // the service has no key `id`.
  virtual Result<std::string> Seal(std::string_view id, const Key& object_key,
                                   std::string_view context) const = 0;
  // kKmsNotFound (no such key), kAccessDenied (does not open under that key and context),
  // kInternalError (malformed).
  virtual Result<Key> Unseal(std::string_view id, std::string_view sealed,
                             std::string_view context) const = 0;
};

// A key id as an S3 request may name it: the id itself, or a KMS key ARN
// ("arn:aws:kms:REGION:ACCOUNT:key/ID", or MinIO's "arn:aws:kms:ID"): the id.
std::string KmsKeyIdOf(std::string_view header_value);

// Key ids this service accepts in file names and headers: 1-128 of [A-Za-z0-9._-].
bool ValidKmsKeyId(std::string_view id);

class LocalKms final : public Kms {
 public:
  // The keys of `ring` (current and previous) and every key file in `key_dir` ("" for none). A
  // key file holds base64(32 bytes), whitespace around it ignored, and must not be readable by
  // group or others. `default_id` "" picks the ring's current key, else the only key in the
  // directory; kInvalidArgument names what is wrong (a bad file, a duplicate id, a default
  // that names no key, no keys at all).
  static Result<std::unique_ptr<LocalKms>> Load(const std::optional<KeyRing>& ring,
                                                const std::string& key_dir,
                                                std::string default_id);

  const std::string& DefaultKeyId() const override { return default_id_; }
  bool HasKey(std::string_view id) const override;
  std::vector<std::string> KeyIds() const override;
  Result<std::string> Seal(std::string_view id, const Key& object_key,
                           std::string_view context) const override;
  Result<Key> Unseal(std::string_view id, std::string_view sealed,
                     std::string_view context) const override;

 private:
  std::map<std::string, Key, std::less<>> keys_;
  std::string default_id_;
};

}  // namespace rdmastor::crypto
