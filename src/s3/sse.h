// Server-side encryption for the S3 handlers (issue 16): which encryption a request asks for
// (SSE-S3 `x-amz-server-side-encryption: AES256`, SSE-KMS `aws:kms` with a named key,
// SSE-C `x-amz-server-side-encryption-customer-*`, a bucket's default), the object key of a new
// object sealed by the master key, a KMS key (crypto/kms.h) or the customer's key, the object key of a stored object opened for a read, and a reader that decrypts the stored
// streams (crypto/dare.h). The storage layer stores what it is given: encryption happens here,
// before erasure coding, and the sealed key travels in ObjectInfo::internal
// (storage/object_meta.h names the fields).
//
// The customer's key is never stored, nor any hash of it: the object key sealed under it is the
// check (AES-GCM), so a wrong key fails to open it (403 AccessDenied, as AWS).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "crypto/dare.h"
#include "crypto/keys.h"
#include "crypto/kms.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

enum class SseKind { kNone, kS3, kKms, kC };

// The operator's encryption configuration.
struct SseConfig {
  std::optional<crypto::KeyRing> ring;  // MINIO_KMS_SECRET_KEY; nullopt: SSE-S3 is refused
  std::shared_ptr<const crypto::Kms> kms;  // SSE-KMS's keys; null: aws:kms is refused (501)
  bool secure_transport = false;        // served over TLS
  bool allow_sse_c_over_http = false;   // RDMASTOR_SSE_C_ALLOW_HTTP=on
};

// What a request says about encryption (of the object it writes, or reads).
struct SseRequest {
  SseKind kind = SseKind::kNone;
  crypto::Key customer_key{};  // SSE-C
  std::string key_md5;         // SSE-C: base64 MD5 of the key, as sent (echoed in responses)
  std::string kms_key_id;      // SSE-KMS: the key's id (the request's, the bucket's, the default)
  std::string kms_context;     // SSE-KMS: x-amz-server-side-encryption-context as sent (base64 JSON)
  bool bucket_key = false;     // x-amz-server-side-encryption-bucket-key-enabled: true (echoed)
};

// A bucket's default encryption (PutBucketEncryption), stored in BucketInfo::encryption: "" none,
// "AES256" SSE-S3 without a bucket key (the form stored before SSE-KMS), else a JSON object.
struct EncryptionDefault {
  std::string algorithm;   // "" none, "AES256", "aws:kms"
  std::string kms_key_id;  // aws:kms: KMSMasterKeyID ("" the KMS's default key)
  bool bucket_key = false;
};
std::string EncodeEncryptionDefault(const EncryptionDefault& d);
EncryptionDefault DecodeEncryptionDefault(const std::string& stored);

// The SSE-C headers of a request: the object's (`copy_source` false) or the copy source's
// (x-amz-copy-source-server-side-encryption-customer-*). kNone when absent. Validated as AWS
// does (algorithm AES256, a 32-byte key, its MD5), and refused over plain HTTP unless allowed.
Result<SseRequest> ParseSseCustomer(const HttpRequest& req, const SseConfig& cfg,
                                    bool copy_source = false);

// The encryption a new object gets: SSE-C headers, x-amz-server-side-encryption, or else the
// bucket's default (`bucket_default`: BucketInfo::encryption). aws:kms without a KMS is
// NotImplemented and with an unknown key KMS.NotFoundException; SSE-S3 without a master key is
// refused naming the missing setting.
Result<SseRequest> ParseSseWrite(const HttpRequest& req, const SseConfig& cfg,
                                 const std::string& bucket_default);

// A new object key for `bucket`/`key` and the internal fields that record it sealed.
struct NewObjectKey {
  crypto::Key key{};
  std::map<std::string, std::string> internal;
};
Result<NewObjectKey> SealNewObjectKey(const SseConfig& cfg, const SseRequest& sse,
                                      const std::string& bucket, const std::string& key);

SseKind SseKindOf(const std::map<std::string, std::string>& internal);

// Adds to rdmastor_sse_bytes_total{op="encrypt"} (the writes count what they encrypted; reads
// count in the decrypting reader).
void CountEncrypted(uint64_t plaintext_bytes);

// The object key of a stored object (or upload: its internal fields) for a request that brings
// `sse` (SSE-C parameters or none); nullopt when the object is not encrypted. The errors are
// AWS's: an SSE-C object without the key (400 InvalidRequest), with another key (403), SSE-C
// parameters for an object that is not SSE-C (400 InvalidRequest). `copy_source`: the request
// reads a copy source (the messages say so).
Result<std::optional<crypto::Key>> OpenObjectKey(const SseConfig& cfg, const SseRequest& sse,
                                                 const std::map<std::string, std::string>& internal,
                                                 const std::string& bucket, const std::string& key);

// The response headers that describe an object's encryption (x-amz-server-side-encryption,
// -aws-kms-key-id, -bucket-key-enabled, -customer-algorithm, -customer-key-MD5): a write's, from
// the request that encrypted it.
void AddSseHeaders(HeaderList& out, SseKind kind, const SseRequest& sse);
// The same for a stored object or upload (its internal fields), read by a request bringing `sse`.
void AddStoredSseHeaders(HeaderList& out, const std::map<std::string, std::string>& internal,
                         const SseRequest& sse);
// GET and HEAD take no x-amz-server-side-encryption* header but SSE-C's (AWS: 400).
Status CheckNoSseOnRead(const HttpRequest& req);

// The ETag of SSE-C and SSE-KMS data: not the plaintext MD5 (AWS), a keyed digest of it instead,
// so that equal contents cannot be told apart by their ETags.
std::string SseCEtag(const crypto::Key& object_key, const std::string& plaintext_md5_hex);

// Reads the plaintext of an encrypted object through `inner` (which reads the stored streams):
// ReadAt decrypts only the packages the range touches. info() is the inner reader's (plaintext
// sizes). bytes_copied() adds the decrypted bytes to the inner reader's copies: decryption
// writes every byte once more before it reaches the caller's buffer.
std::unique_ptr<storage::ObjectReader> NewDecryptingReader(
    std::unique_ptr<storage::ObjectReader> inner, const crypto::Key& object_key);

// PutBucketEncryption's document. aws:kms needs a KMS (else NotImplemented) and a key it has
// (else KMS.NotFoundException); anything malformed is MalformedXML.
Result<EncryptionDefault> ParseEncryptionConfig(const std::string& xml, const SseConfig& cfg);
// GetBucketEncryption's document.
std::string EncryptionConfigXml(const EncryptionDefault& d);

// Master-key rotation: re-seals the object key of every SSE-S3 object version sealed by a master
// key other than the ring's current one, under the current one. Only the metadata changes (the
// sealed key and the key's name); data, ETag, mtime and tags stay. A version re-tagged or deleted
// meanwhile is left as it is (the update is conditional). `stop` ends the walk early.
struct ResealStats {
  uint64_t scanned = 0;   // SSE-S3 object versions seen
  uint64_t resealed = 0;  // re-sealed under the current key
  uint64_t failed = 0;    // sealed by a key the ring lacks, or the update failed
};
ResealStats ResealObjectKeys(storage::ObjectLayer& store, const crypto::KeyRing& ring,
                             const std::atomic<bool>& stop);

// Stored size of `plain` bytes of one stream: crypto::EncryptedSize.
inline uint64_t StoredSize(uint64_t plain) { return crypto::EncryptedSize(plain); }

}  // namespace rdmastor::s3
