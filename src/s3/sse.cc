#include "s3/sse.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "admin/metrics.h"
#include "common/hash.h"
#include "common/text.h"
#include "common/thread_pool.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {

namespace {

constexpr const char* kSseS3 = "SSE-S3";
constexpr const char* kSseKms = "SSE-KMS";
constexpr const char* kSseC = "SSE-C";
constexpr const char* kKmsKeyHeader = "x-amz-server-side-encryption-aws-kms-key-id";
constexpr const char* kKmsContextHeader = "x-amz-server-side-encryption-context";
constexpr const char* kBucketKeyHeader = "x-amz-server-side-encryption-bucket-key-enabled";

Error Invalid(ErrorCode code, std::string message) { return MakeError(code, std::move(message)); }

// rdmastor_sse_bytes_total{op="encrypt|decrypt"}: plaintext bytes through the ciphers; and
// rdmastor_sse_auth_failures_total: packages that did not authenticate (tampering, bitrot that
// slipped past the shard checksums, a wrong key).
admin::Counter& SseBytes(const char* op) {
  static admin::CounterFamily& family = admin::GlobalRegistry().AddCounter(
      "rdmastor_sse_bytes_total", "Plaintext bytes encrypted or decrypted for SSE objects",
      {"op"});
  return family.With({op});
}
admin::Counter& SseAuthFailures() {
  static admin::Counter& c =
      admin::GlobalRegistry()
          .AddCounter("rdmastor_sse_auth_failures_total",
                      "Encrypted packages that failed to authenticate on read", {})
          .With({});
  return c;
}

// What a sealed key is bound to: the kind of encryption and the object's name, so a sealed key
// copied to another object (or read as the other kind) does not open.
std::string SealContext(const std::string& kind, const std::string& bucket,
                        const std::string& key) {
  return kind + "\n" + bucket + "\n" + key;
}
// SSE-KMS binds the sealed key to the request's encryption context too (as a KMS binds a data
// key to its context): a sealed key copied with another context does not open.
std::string KmsSealContext(const std::string& bucket, const std::string& key,
                           const std::string& context) {
  return SealContext(kSseKms, bucket, key) + "\n" + context;
}

// x-amz-server-side-encryption-context: base64 of a JSON object of strings (AWS).
Status CheckKmsContext(const std::string& b64) {
  const Error bad = MakeError(ErrorCode::kInvalidArgument,
                              "The header 'x-amz-server-side-encryption-context' shall be "
                              "Base64-encoded UTF-8 string holding JSON which represents a "
                              "string-string map");
  auto raw = hash::Base64Decode(b64);
  if (!raw) return bad;
  auto j = nlohmann::json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad;
  for (const auto& [k, v] : j.items())
    if (!v.is_string()) return bad;
  return {};
}

// The key an aws:kms write seals under: the request's, else the bucket's default, else the KMS's.
Result<std::string> KmsKeyFor(const SseConfig& cfg, const std::string* header,
                              const std::string& bucket_key_id) {
  std::string id = header && !header->empty() ? crypto::KmsKeyIdOf(*header) : bucket_key_id;
  if (id.empty()) id = cfg.kms->DefaultKeyId();
  if (!cfg.kms->HasKey(id))
    return MakeError(ErrorCode::kKmsNotFound, "Invalid keyId " + id);
  return id;
}

Error KmsNotConfigured() {
  return MakeError(ErrorCode::kNotImplemented,
                   "Server-side encryption with a KMS (aws:kms) is not configured: set "
                   "MINIO_KMS_SECRET_KEY or RDMASTOR_KMS_KEY_DIR. AES256 (SSE-S3) and SSE-C need "
                   "no KMS key directory.");
}

}  // namespace

Result<SseRequest> ParseSseCustomer(const HttpRequest& req, const SseConfig& cfg,
                                    bool copy_source) {
  const std::string prefix = copy_source ? "x-amz-copy-source-server-side-encryption-customer-"
                                         : "x-amz-server-side-encryption-customer-";
  const std::string* algo = req.FindHeader(prefix + "algorithm");
  const std::string* key = req.FindHeader(prefix + "key");
  const std::string* md5 = req.FindHeader(prefix + "key-md5");
  SseRequest out;
  if (!algo && !key && !md5) return out;
  if (!cfg.secure_transport && !cfg.allow_sse_c_over_http)
    return Invalid(ErrorCode::kInvalidRequest,
                   "Requests specifying Server Side Encryption with Customer provided keys must "
                   "be made over a secure connection.");
  if (!algo)
    return Invalid(ErrorCode::kInvalidArgument,
                   "Requests specifying Server Side Encryption with Customer provided keys must "
                   "provide a valid encryption algorithm.");
  if (*algo != "AES256") return MakeError(ErrorCode::kInvalidEncryptionAlgorithm);
  if (!key)
    return Invalid(ErrorCode::kInvalidArgument,
                   "Requests specifying Server Side Encryption with Customer provided keys must "
                   "provide an appropriate secret key.");
  if (!md5)
    return Invalid(ErrorCode::kInvalidArgument,
                   "Requests specifying Server Side Encryption with Customer provided keys must "
                   "provide the client calculated MD5 of the secret key.");
  auto raw = hash::Base64Decode(*key);
  if (!raw || raw->size() != crypto::kKeySize)
    return Invalid(ErrorCode::kInvalidArgument,
                   "The secret key was invalid for the specified algorithm.");
  auto want = hash::Base64Decode(*md5);
  if (!want || *want != hash::Digest(hash::Algo::kMD5, *raw))
    return Invalid(ErrorCode::kInvalidArgument,
                   "The calculated MD5 hash of the key did not match the hash that was provided.");
  out.kind = SseKind::kC;
  std::memcpy(out.customer_key.data(), raw->data(), crypto::kKeySize);
  out.key_md5 = *md5;
  return out;
}

Result<SseRequest> ParseSseWrite(const HttpRequest& req, const SseConfig& cfg,
                                 const std::string& bucket_default) {
  auto customer = ParseSseCustomer(req, cfg);
  if (!customer.ok()) return customer.error();
  const std::string* sse = req.FindHeader("x-amz-server-side-encryption");
  if (sse && customer->kind == SseKind::kC)
    return Invalid(ErrorCode::kInvalidArgument,
                   "Server Side Encryption with Customer provided key is incompatible with the "
                   "encryption method specified");
  if (customer->kind == SseKind::kC) return customer;
  const bool kms = sse && (*sse == "aws:kms" || *sse == "aws:kms:dsse");
  if (!kms && (req.FindHeader(kKmsKeyHeader) || req.FindHeader(kKmsContextHeader)))
    return Invalid(ErrorCode::kInvalidArgument,
                   "Server Side Encryption with AWS KMS managed key requires HTTP header "
                   "x-amz-server-side-encryption : aws:kms");
  std::optional<bool> bucket_key_header;
  if (const std::string* bk = req.FindHeader(kBucketKeyHeader)) {
    const std::string v = text::ToLower(*bk);
    if (v != "true" && v != "false")
      return Invalid(ErrorCode::kInvalidArgument,
                     "Invalid value for header x-amz-server-side-encryption-bucket-key-enabled");
    bucket_key_header = v == "true";
  }
  const EncryptionDefault def = DecodeEncryptionDefault(bucket_default);
  std::string algo = sse ? *sse : def.algorithm;
  if (algo.empty()) return customer;  // kNone
  if (algo == "aws:kms:dsse")
    return Invalid(ErrorCode::kNotImplemented,
                   "Dual-layer server-side encryption (aws:kms:dsse) is not implemented: use "
                   "aws:kms.");
  if (algo == "aws:kms") {
    if (!cfg.kms) return KmsNotConfigured();
    SseRequest out;
    out.kind = SseKind::kKms;
    auto id = KmsKeyFor(cfg, req.FindHeader(kKmsKeyHeader), sse ? "" : def.kms_key_id);
    if (!id.ok()) return id.error();
    out.kms_key_id = *id;
    if (const std::string* ctx = req.FindHeader(kKmsContextHeader)) {
      if (auto st = CheckKmsContext(*ctx); !st.ok()) return st.error();
      out.kms_context = *ctx;
    }
    out.bucket_key = bucket_key_header.value_or(sse ? false : def.bucket_key);
    return out;
  }
  if (algo != "AES256")
    return Invalid(ErrorCode::kInvalidArgument,
                   "The encryption method specified is not supported");
  if (!cfg.ring)
    return Invalid(ErrorCode::kNotImplemented,
                   "Server side encryption specified but KMS is not configured: set "
                   "MINIO_KMS_SECRET_KEY to enable SSE-S3.");
  SseRequest out;
  out.kind = SseKind::kS3;
  return out;
}

void CountEncrypted(uint64_t plaintext_bytes) { SseBytes("encrypt").Inc(plaintext_bytes); }

Result<NewObjectKey> SealNewObjectKey(const SseConfig& cfg, const SseRequest& sse,
                                      const std::string& bucket, const std::string& key) {
  NewObjectKey out;
  out.key = crypto::RandomKey();
  if (sse.kind == SseKind::kC) {
    out.internal[storage::kInternalSse] = kSseC;
    out.internal[storage::kInternalSealedKey] =
        crypto::SealKey(sse.customer_key, out.key, SealContext(kSseC, bucket, key));
    return out;
  }
  if (sse.kind == SseKind::kKms && cfg.kms) {
    auto sealed = cfg.kms->Seal(sse.kms_key_id, out.key,
                                KmsSealContext(bucket, key, sse.kms_context));
    if (!sealed.ok()) return sealed.error();
    out.internal[storage::kInternalSse] = kSseKms;
    out.internal[storage::kInternalKekId] = sse.kms_key_id;
    out.internal[storage::kInternalSealedKey] = *sealed;
    if (!sse.kms_context.empty()) out.internal[storage::kInternalKmsContext] = sse.kms_context;
    if (sse.bucket_key) out.internal[storage::kInternalBucketKey] = "true";
    return out;
  }
  if (sse.kind != SseKind::kS3 || !cfg.ring)
    return MakeError(ErrorCode::kInternalError, "no encryption to seal a key for");
  const auto& master = cfg.ring->current();
  out.internal[storage::kInternalSse] = kSseS3;
  out.internal[storage::kInternalKekId] = master.id;
  out.internal[storage::kInternalSealedKey] =
      crypto::SealKey(master.key, out.key, SealContext(kSseS3, bucket, key));
  return out;
}

SseKind SseKindOf(const std::map<std::string, std::string>& internal) {
  auto it = internal.find(storage::kInternalSse);
  if (it == internal.end()) return SseKind::kNone;
  if (it->second == kSseC) return SseKind::kC;
  return it->second == kSseKms ? SseKind::kKms : SseKind::kS3;
}

Result<std::optional<crypto::Key>> OpenObjectKey(const SseConfig& cfg, const SseRequest& sse,
                                                 const std::map<std::string, std::string>& internal,
                                                 const std::string& bucket,
                                                 const std::string& key) {
  const SseKind kind = SseKindOf(internal);
  if (kind == SseKind::kNone) {
    if (sse.kind == SseKind::kC)
      return Invalid(ErrorCode::kInvalidRequest,
                     "The encryption parameters are not applicable to this object.");
    return std::optional<crypto::Key>();
  }
  auto sealed = internal.find(storage::kInternalSealedKey);
  if (sealed == internal.end())
    return Invalid(ErrorCode::kInternalError, "encrypted object without its sealed key");
  if (kind == SseKind::kC) {
    if (sse.kind != SseKind::kC)
      return Invalid(ErrorCode::kInvalidRequest,
                     "The object was stored using a form of Server Side Encryption. The correct "
                     "parameters must be provided to retrieve the object.");
    auto k = crypto::UnsealKey(sse.customer_key, sealed->second, SealContext(kSseC, bucket, key));
    if (!k.ok()) {
      if (k.error().code == ErrorCode::kAccessDenied) return MakeError(ErrorCode::kAccessDenied);
      return k.error();
    }
    return std::optional<crypto::Key>(*k);
  }
  if (sse.kind == SseKind::kC)
    return Invalid(ErrorCode::kInvalidRequest,
                   "The encryption parameters are not applicable to this object.");
  auto id = internal.find(storage::kInternalKekId);
  if (kind == SseKind::kKms) {
    const std::string key_id = id == internal.end() ? "" : id->second;
    if (!cfg.kms) {
      spdlog::error("SSE-KMS object {}/{}: no KMS is configured (key '{}')", bucket, key, key_id);
      return KmsNotConfigured();
    }
    auto ctx = internal.find(storage::kInternalKmsContext);
    auto k = cfg.kms->Unseal(key_id, sealed->second,
                             KmsSealContext(bucket, key, ctx == internal.end() ? "" : ctx->second));
    if (!k.ok()) {
      spdlog::error("SSE-KMS object {}/{}: key '{}': {}", bucket, key, key_id,
                    k.error().message);
      if (k.error().code == ErrorCode::kKmsNotFound) return k.error();
      return MakeError(ErrorCode::kInternalError);
    }
    return std::optional<crypto::Key>(*k);
  }
  const crypto::MasterKey* master =
      cfg.ring && id != internal.end() ? cfg.ring->Find(id->second) : nullptr;
  if (!master) {
    spdlog::error("SSE-S3 object {}/{}: master key '{}' is not configured", bucket, key,
                  id == internal.end() ? "" : id->second);
    return Invalid(ErrorCode::kInternalError,
                   "The object is encrypted with a master key this server does not have "
                   "(MINIO_KMS_SECRET_KEY / RDMASTOR_KMS_PREVIOUS_SECRET_KEYS).");
  }
  auto k = crypto::UnsealKey(master->key, sealed->second, SealContext(kSseS3, bucket, key));
  if (!k.ok()) {
    spdlog::error("SSE-S3 object {}/{}: sealed key does not open: {}", bucket, key,
                  k.error().message);
    return MakeError(ErrorCode::kInternalError);
  }
  return std::optional<crypto::Key>(*k);
}

void AddSseHeaders(HeaderList& out, SseKind kind, const SseRequest& sse) {
  if (kind == SseKind::kS3) out.emplace_back("x-amz-server-side-encryption", "AES256");
  if (kind == SseKind::kKms) {
    out.emplace_back("x-amz-server-side-encryption", "aws:kms");
    out.emplace_back(kKmsKeyHeader, sse.kms_key_id);
    if (!sse.kms_context.empty()) out.emplace_back(kKmsContextHeader, sse.kms_context);
  }
  if (sse.bucket_key && (kind == SseKind::kKms || kind == SseKind::kS3))
    out.emplace_back(kBucketKeyHeader, "true");
  if (kind == SseKind::kC) {
    out.emplace_back("x-amz-server-side-encryption-customer-algorithm", "AES256");
    out.emplace_back("x-amz-server-side-encryption-customer-key-MD5", sse.key_md5);
  }
}

void AddStoredSseHeaders(HeaderList& out, const std::map<std::string, std::string>& internal,
                         const SseRequest& sse) {
  const SseKind kind = SseKindOf(internal);
  SseRequest stored = sse;
  if (kind == SseKind::kKms) {
    auto id = internal.find(storage::kInternalKekId);
    stored.kms_key_id = id == internal.end() ? "" : id->second;
    stored.kms_context.clear();  // AWS returns the context on writes only
  }
  stored.bucket_key = internal.count(storage::kInternalBucketKey) > 0;
  AddSseHeaders(out, kind, stored);
}

Status CheckNoSseOnRead(const HttpRequest& req) {
  for (const char* h : {"x-amz-server-side-encryption", kKmsKeyHeader, kKmsContextHeader,
                        kBucketKeyHeader})
    if (req.FindHeader(h))
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(h) + " header is not supported for this operation.");
  return {};
}

std::string SseCEtag(const crypto::Key& object_key, const std::string& plaintext_md5_hex) {
  const std::string k(reinterpret_cast<const char*>(object_key.data()), object_key.size());
  return hash::HexEncode(hash::HmacSha256(k, "SSE-C etag\n" + plaintext_md5_hex)).substr(0, 32);
}

ResealStats ResealObjectKeys(storage::ObjectLayer& store, const crypto::KeyRing& ring,
                             const std::atomic<bool>& stop) {
  ResealStats stats;
  auto buckets = store.ListBuckets();
  if (!buckets.ok()) {
    spdlog::error("SSE-S3 re-seal: cannot list buckets: {}", buckets.error().message);
    return stats;
  }
  const auto& current = ring.current();
  for (const auto& b : *buckets) {
    storage::ListOptions opts;
    opts.versions = true;  // every version: an older one sealed by a retired key would not open
    for (bool more = true; more && !stop;) {
      auto page = store.ListObjectVersions(b.name, opts);
      if (!page.ok()) {
        spdlog::error("SSE-S3 re-seal: cannot list {}: {}", b.name, page.error().message);
        ++stats.failed;
        break;
      }
      for (const auto& o : page->objects) {
        if (stop) break;
        if (o.delete_marker || SseKindOf(o.internal) != SseKind::kS3) continue;
        ++stats.scanned;
        auto id = o.internal.find(storage::kInternalKekId);
        if (id != o.internal.end() && id->second == current.id) continue;
        SseConfig with_ring;
        with_ring.ring = ring;
        auto key = OpenObjectKey(with_ring, SseRequest{}, o.internal, b.name, o.key);
        if (!key.ok() || !*key) {
          ++stats.failed;
          continue;
        }
        storage::PutOptions update;
        update.version = o.version_id;  // "" names the null version
        // The sealed key alone: content type, metadata, tags and mtime stay.
        update.update = storage::FieldBit(storage::VersionField::internal);
        update.internal = o.internal;
        update.internal[storage::kInternalKekId] = current.id;
        update.internal[storage::kInternalSealedKey] =
            crypto::SealKey(current.key, **key, SealContext(kSseS3, b.name, o.key));
        // Only the version as this walk read it: not one re-tagged or re-sealed since.
        update.precondition = [seen = o](const storage::ObjectInfo* now) -> Status {
          if (!now || now->version_id != seen.version_id || now->internal != seen.internal ||
              now->tags != seen.tags)
            return MakeError(ErrorCode::kPreconditionFailed);
          return {};
        };
        auto done = store.UpdateMetadata(b.name, o.key, update);
        if (done.ok()) {
          ++stats.resealed;
        } else if (done.error().code != ErrorCode::kPreconditionFailed &&
                   done.error().code != ErrorCode::kNoSuchVersion &&
                   done.error().code != ErrorCode::kNoSuchKey) {  // deleted meanwhile
          spdlog::warn("SSE-S3 re-seal: {}/{} version {}: {}", b.name, o.key,
                       o.version_id.empty() ? "null" : o.version_id, done.error().message);
          ++stats.failed;
        }
      }
      more = page->truncated && !page->objects.empty();
      // Inclusive for versions: the smallest name after the last key (keys hold no NUL).
      if (more) opts.start_after = page->objects.back().key + std::string(1, '\0');
    }
  }
  return stats;
}

namespace {

std::string_view LocalNameOf(const pugi::xml_node& n) {
  std::string_view name = n.name();
  auto colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

// The element children of `n`.
std::vector<pugi::xml_node> Elements(const pugi::xml_node& n) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling())
    if (c.type() == pugi::node_element) out.push_back(c);
  return out;
}

}  // namespace

std::string EncodeEncryptionDefault(const EncryptionDefault& d) {
  if (d.algorithm.empty() || (d.algorithm == "AES256" && !d.bucket_key)) return d.algorithm;
  nlohmann::json j{{"algorithm", d.algorithm}};
  if (!d.kms_key_id.empty()) j["kms_key_id"] = d.kms_key_id;
  if (d.bucket_key) j["bucket_key"] = true;
  return j.dump();
}

EncryptionDefault DecodeEncryptionDefault(const std::string& stored) {
  EncryptionDefault d;
  if (stored.empty() || stored.front() != '{') {
    d.algorithm = stored;
    return d;
  }
  auto j = nlohmann::json::parse(stored, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    spdlog::error("bucket default encryption record is malformed: {}", stored);
    d.algorithm = "AES256";  // never store unencrypted what was meant to be encrypted
    return d;
  }
  d.algorithm = j.value("algorithm", std::string("AES256"));
  d.kms_key_id = j.value("kms_key_id", std::string());
  d.bucket_key = j.value("bucket_key", false);
  return d;
}

Result<EncryptionDefault> ParseEncryptionConfig(const std::string& xml, const SseConfig& cfg) {
  const Error malformed = MakeError(ErrorCode::kMalformedXML);
  pugi::xml_document doc;
  const unsigned opts = pugi::parse_default | pugi::parse_doctype;
  if (xml.empty() || !doc.load_buffer(xml.data(), xml.size(), opts, pugi::encoding_utf8))
    return malformed;
  pugi::xml_node root;
  for (pugi::xml_node c = doc.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_doctype) return malformed;
    if (c.type() == pugi::node_element) {
      if (root) return malformed;
      root = c;
    }
  }
  if (!root || LocalNameOf(root) != "ServerSideEncryptionConfiguration") return malformed;
  auto rules = Elements(root);
  // AWS takes exactly one rule.
  if (rules.size() != 1 || LocalNameOf(rules[0]) != "Rule") return malformed;
  std::string algorithm;
  bool has_kms_key = false;
  EncryptionDefault out;
  for (const auto& f : Elements(rules[0])) {
    if (LocalNameOf(f) == "BucketKeyEnabled") {
      const std::string v = f.text().get();
      if (v != "true" && v != "false") return malformed;
      out.bucket_key = v == "true";
      continue;
    }
    if (LocalNameOf(f) != "ApplyServerSideEncryptionByDefault" || !algorithm.empty())
      return malformed;
    for (const auto& g : Elements(f)) {
      if (LocalNameOf(g) == "SSEAlgorithm" && algorithm.empty())
        algorithm = g.text().get();
      else if (LocalNameOf(g) == "KMSMasterKeyID" && !has_kms_key) {
        has_kms_key = true;
        out.kms_key_id = crypto::KmsKeyIdOf(g.text().get());
      }
      else
        return malformed;
    }
  }
  if (algorithm == "aws:kms:dsse")
    return MakeError(ErrorCode::kNotImplemented,
                     "Dual-layer server-side encryption (aws:kms:dsse) is not implemented: use "
                     "aws:kms.");
  if (algorithm == "aws:kms") {
    if (!cfg.kms) return KmsNotConfigured();
    if (!out.kms_key_id.empty() && !cfg.kms->HasKey(out.kms_key_id))
      return MakeError(ErrorCode::kKmsNotFound, "Invalid keyId " + out.kms_key_id);
    out.algorithm = algorithm;
    return out;
  }
  if (algorithm != "AES256") return malformed;
  if (has_kms_key)
    return MakeError(ErrorCode::kInvalidArgument,
                     "a KMSMasterKeyID is not applicable if the default sse algorithm is not "
                     "aws:kms or aws:kms:dsse");
  out.algorithm = algorithm;
  return out;
}

std::string EncryptionConfigXml(const EncryptionDefault& d) {
  // Stored only after HasKey: an id of [A-Za-z0-9._-], nothing to escape.
  std::string kms_key;
  if (!d.kms_key_id.empty()) kms_key = "<KMSMasterKeyID>" + d.kms_key_id + "</KMSMasterKeyID>";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
         "<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
         "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>" +
         d.algorithm + "</SSEAlgorithm>" + kms_key +
         "</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>" +
         (d.bucket_key ? "true" : "false") +
         "</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>";
}

namespace {

// Bounds the stored bytes one ReadAt reads (callers loop over short reads).
constexpr uint64_t kMaxReadPackages = 64;  // 4 MiB of plaintext

// Threads that read an encrypted object's next stored bytes while its reader decrypts (and the
// request sends) the current ones: without them, drive reads and decryption take turns. Shared
// and bounded; a read-ahead still queued when its reader needs it is taken back and read on the
// reader's thread, so a busy pool never makes a GET wait for other GETs' reads.
ThreadPool& ReadAheadPool() {
  static ThreadPool pool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 16u)));
  return pool;
}

// Reads exactly `len` stored bytes at `off`.
Status ReadStoredFully(storage::ObjectReader& inner, uint64_t off, char* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    auto r = inner.ReadAt(off + got, buf + got, len - got);
    if (!r.ok()) return r.error();
    if (*r == 0) return MakeError(ErrorCode::kInternalError, "encrypted object is truncated");
    got += *r;
  }
  return {};
}

// Stored bytes [offset, offset + length) of the object's streams and the buffer holding them
// (never zero-filled: every byte used is read first).
struct StoredChunk {
  uint64_t offset = 0;
  size_t length = 0;
  std::unique_ptr<char[]> data;
  size_t capacity = 0;

  void Reserve(size_t n) {
    if (capacity >= n) return;
    data.reset(new char[n]);
    capacity = n;
  }
  bool Holds(uint64_t off, size_t len) const {
    return off >= offset && off + len <= offset + length;
  }
};

// One read-ahead on ReadAheadPool: queued, running, done; or taken back before it ran.
struct ReadAhead {
  enum State { kQueued, kRunning, kDone, kTakenBack };
  StoredChunk chunk;
  Status status;
  std::mutex mu;
  std::condition_variable cv;
  State state = kQueued;  // guarded by mu
};

// Decrypts as it reads: every package is authenticated (AES-GCM) before ReadAt returns any of
// its bytes, and a package that does not authenticate fails the whole ReadAt, so the caller sends
// nothing of it. Whole packages decrypt straight into the caller's buffer; a package the range
// cuts decrypts into a package-sized scratch first. While the caller sends one chunk, the stored
// bytes of the next are read ahead (sequential reads only: a read from offset 0 or where the last
// one ended).
class DecryptingReader final : public storage::ObjectReader {
 public:
  DecryptingReader(std::unique_ptr<storage::ObjectReader> inner, const crypto::Key& key)
      : inner_(std::move(inner)), cipher_(key) {
    const auto& info = inner_->info();
    if (info.part_count > 0 && !info.part_sizes.empty())
      plain_sizes_ = info.part_sizes;
    else
      plain_sizes_ = {info.size};
    uint64_t plain = 0, stored = 0;
    for (uint64_t n : plain_sizes_) {
      plain_offsets_.push_back(plain);
      stored_offsets_.push_back(stored);
      plain += n;
      stored += crypto::EncryptedSize(n);
    }
    headers_.resize(plain_sizes_.size());
    have_header_.resize(plain_sizes_.size(), false);
  }
  ~DecryptingReader() override { SettleReadAhead(); }
  DecryptingReader(const DecryptingReader&) = delete;
  DecryptingReader& operator=(const DecryptingReader&) = delete;

  const storage::ObjectInfo& info() const override { return inner_->info(); }
  uint64_t bytes_copied() const override {
    SettleReadAhead();  // the inner reader's count is not to be read while it reads
    return inner_->bytes_copied() + decrypted_;
  }

  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    const uint64_t size = inner_->info().size;
    if (off >= size || len == 0) return size_t{0};
    size_t part = static_cast<size_t>(
        std::upper_bound(plain_offsets_.begin(), plain_offsets_.end(), off) -
        plain_offsets_.begin() - 1);
    while (part < plain_sizes_.size() && off - plain_offsets_[part] >= plain_sizes_[part]) ++part;
    if (part >= plain_sizes_.size()) return size_t{0};
    const uint64_t in_part = off - plain_offsets_[part];
    const uint64_t n = Plan(part, in_part, len);
    RS_RETURN_IF_ERROR(LoadHeader(part));
    const crypto::PackageSpan span = crypto::SpanOf(plain_sizes_[part], in_part, n);
    const uint64_t stored_off = stored_offsets_[part] + span.stored_offset;
    const auto stored_len = static_cast<size_t>(span.stored_length);
    RS_RETURN_IF_ERROR(Fetch(stored_off, stored_len));
    const bool sequential = off == 0 || off == next_off_;
    if (sequential && in_part + n < plain_sizes_[part]) StartReadAhead(part, in_part + n, len);
    auto done = Decrypt(part, span, in_part, n, cur_.data.get() + (stored_off - cur_.offset),
                        stored_len, buf);
    if (!done.ok()) return done.error();
    next_off_ = off + *done;
    decrypted_ += *done;
    SseBytes("decrypt").Inc(*done);
    return *done;
  }

 private:
  // Plaintext bytes one ReadAt serves from `in_part` of `part` for a caller wanting `len`: at most
  // kMaxReadPackages packages, and ending on a package boundary unless it ends the part, so that
  // the next sequential read starts on one (no package read and decrypted twice).
  uint64_t Plan(size_t part, uint64_t in_part, uint64_t len) const {
    const uint64_t P = crypto::kPackageSize;
    uint64_t n = std::min<uint64_t>(len, plain_sizes_[part] - in_part);
    n = std::min<uint64_t>(n, (in_part / P + kMaxReadPackages) * P - in_part);
    const uint64_t end = in_part + n;
    if (end < plain_sizes_[part] && end / P * P > in_part) n = end / P * P - in_part;
    return n;
  }

  // Makes cur_ hold the stored bytes [off, off + len): the read-ahead's when it read them, else
  // read here. Every ReadAt reads (nothing is served again from an earlier read).
  Status Fetch(uint64_t off, size_t len) {
    SettleReadAhead();
    if (ahead_) {
      auto job = std::move(ahead_);
      std::swap(cur_, job->chunk);
      spare_ = std::move(job->chunk);  // the buffer the next read-ahead fills
      if (job->state == ReadAhead::kDone && cur_.Holds(off, len)) {
        if (job->status.ok()) return {};
        cur_.length = 0;
        return job->status;
      }
    }
    cur_.Reserve(len);
    cur_.offset = off;
    cur_.length = 0;  // holds nothing until read
    RS_RETURN_IF_ERROR(ReadStoredFully(*inner_, off, cur_.data.get(), len));
    cur_.length = len;
    return {};
  }

  // Queues the read of the stored bytes the next sequential ReadAt (from `in_part`, wanting
  // `len`) will need.
  void StartReadAhead(size_t part, uint64_t in_part, uint64_t len) {
    const uint64_t n = Plan(part, in_part, len);
    const crypto::PackageSpan span = crypto::SpanOf(plain_sizes_[part], in_part, n);
    auto job = std::make_shared<ReadAhead>();
    job->chunk = std::move(spare_);
    job->chunk.offset = stored_offsets_[part] + span.stored_offset;
    job->chunk.length = static_cast<size_t>(span.stored_length);
    job->chunk.Reserve(job->chunk.length);
    ahead_ = job;
    ReadAheadPool().Submit([job, inner = inner_.get()] {
      {
        std::lock_guard lock(job->mu);
        if (job->state != ReadAhead::kQueued) return;  // taken back: the reader may be gone
        job->state = ReadAhead::kRunning;
      }
      Status st = ReadStoredFully(*inner, job->chunk.offset, job->chunk.data.get(),
                                  job->chunk.length);
      {
        std::lock_guard lock(job->mu);
        job->status = std::move(st);
        job->state = ReadAhead::kDone;
      }
      job->cv.notify_all();
    });
  }

  // After this, no pool thread uses the inner reader: a queued read-ahead is taken back, a running
  // one waited for (ahead_ stays, done or taken back).
  void SettleReadAhead() const {
    if (!ahead_) return;
    std::unique_lock lock(ahead_->mu);
    if (ahead_->state == ReadAhead::kQueued) ahead_->state = ReadAhead::kTakenBack;
    ahead_->cv.wait(lock, [&] { return ahead_->state != ReadAhead::kRunning; });
  }

  // Authenticates and decrypts the packages of `span` (its stored bytes at `stored`) into `buf`:
  // the plaintext [in_part, in_part + n) of `part`. Returns n.
  Result<size_t> Decrypt(size_t part, const crypto::PackageSpan& span, uint64_t in_part,
                         uint64_t n, const char* stored, size_t stored_len, char* buf) {
    const uint64_t part_plain = plain_sizes_[part];
    const uint64_t packages = std::max<uint64_t>(
        1, (part_plain + crypto::kPackageSize - 1) / crypto::kPackageSize);
    size_t done = 0;
    for (uint64_t i = 0; i < span.count; ++i) {
      const uint64_t seq = span.first + i;
      const size_t at = static_cast<size_t>(i * crypto::kSealedPackageSize);
      const size_t sealed_len = std::min<size_t>(crypto::kSealedPackageSize, stored_len - at);
      const uint64_t plain_len = sealed_len - crypto::kTagSize;
      // The slice of this package's plaintext the caller asked for.
      const uint64_t pkg_start = seq * crypto::kPackageSize;
      const uint64_t from = std::max(pkg_start, in_part) - pkg_start;
      const uint64_t to = std::min<uint64_t>(plain_len, in_part + n - pkg_start);
      const bool whole = from == 0 && to == plain_len;
      if (!whole && !package_) package_ = std::make_unique<char[]>(crypto::kPackageSize);
      char* out = whole ? buf + done : package_.get();
      auto st = cipher_.Open(headers_[part].data(), seq, seq + 1 == packages, stored + at,
                             sealed_len, out);
      if (!st.ok()) {
        SseAuthFailures().Inc(1);
        spdlog::error("SSE: {}/{} part {} package {} does not authenticate",
                      inner_->info().bucket, inner_->info().key, part + 1, seq);
        return MakeError(ErrorCode::kInternalError, "encrypted data does not authenticate");
      }
      if (!whole && to > from)
        std::memcpy(buf + done, package_.get() + from, static_cast<size_t>(to - from));
      done += static_cast<size_t>(to > from ? to - from : 0);
    }
    return done;
  }

  Status LoadHeader(size_t part) {
    if (have_header_[part]) return {};
    SettleReadAhead();
    RS_RETURN_IF_ERROR(ReadStoredFully(*inner_, stored_offsets_[part],
                                       reinterpret_cast<char*>(headers_[part].data()),
                                       crypto::kStreamHeaderSize));
    RS_RETURN_IF_ERROR(crypto::CheckStreamHeader(headers_[part].data()));
    have_header_[part] = true;
    return {};
  }

  std::unique_ptr<storage::ObjectReader> inner_;
  crypto::PackageCipher cipher_;
  std::vector<uint64_t> plain_sizes_, plain_offsets_, stored_offsets_;
  std::vector<std::array<unsigned char, crypto::kStreamHeaderSize>> headers_;
  std::vector<bool> have_header_;
  StoredChunk cur_;    // the stored bytes being decrypted
  StoredChunk spare_;  // a buffer for the next read-ahead
  std::shared_ptr<ReadAhead> ahead_;  // the read-ahead in flight (or settled, not yet used)
  std::unique_ptr<char[]> package_;   // a cut package's plaintext
  uint64_t next_off_ = 0;             // where the last ReadAt ended
  uint64_t decrypted_ = 0;
};

}  // namespace

std::unique_ptr<storage::ObjectReader> NewDecryptingReader(
    std::unique_ptr<storage::ObjectReader> inner, const crypto::Key& object_key) {
  return std::make_unique<DecryptingReader>(std::move(inner), object_key);
}

}  // namespace rdmastor::s3
