#include "s3/sse.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <pugixml.hpp>

#include "admin/metrics.h"
#include "common/hash.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {

namespace {

constexpr const char* kSseS3 = "SSE-S3";
constexpr const char* kSseC = "SSE-C";

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
  if (!kms && (req.FindHeader("x-amz-server-side-encryption-aws-kms-key-id") ||
               req.FindHeader("x-amz-server-side-encryption-context")))
    return Invalid(ErrorCode::kInvalidArgument,
                   "Server Side Encryption with AWS KMS managed key requires HTTP header "
                   "x-amz-server-side-encryption : aws:kms");
  std::string algo = sse ? *sse : bucket_default;
  if (algo.empty()) return customer;  // kNone
  if (algo == "aws:kms" || algo == "aws:kms:dsse")
    return Invalid(ErrorCode::kNotImplemented,
                   "Server-side encryption with a KMS (aws:kms) is not implemented by rdmastor: "
                   "no KMS is configured. Use AES256 (SSE-S3) or SSE-C.");
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
  return it->second == kSseC ? SseKind::kC : SseKind::kS3;
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
  if (kind == SseKind::kC) {
    out.emplace_back("x-amz-server-side-encryption-customer-algorithm", "AES256");
    out.emplace_back("x-amz-server-side-encryption-customer-key-MD5", sse.key_md5);
  }
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
    for (bool more = true; more && !stop;) {
      auto page = store.ListObjects(b.name, opts);
      if (!page.ok()) {
        spdlog::error("SSE-S3 re-seal: cannot list {}: {}", b.name, page.error().message);
        ++stats.failed;
        break;
      }
      for (const auto& o : page->objects) {
        if (stop) break;
        if (SseKindOf(o.internal) != SseKind::kS3) continue;
        ++stats.scanned;
        auto id = o.internal.find(storage::kInternalKekId);
        if (id != o.internal.end() && id->second == current.id) continue;
        auto key = OpenObjectKey(SseConfig{ring, true, false}, SseRequest{}, o.internal, b.name,
                                 o.key);
        if (!key.ok() || !*key) {
          ++stats.failed;
          continue;
        }
        storage::PutOptions update;
        update.tags_only = true;  // content type, metadata and mtime stay
        update.tags = o.tags;
        update.replace_internal = true;
        update.internal = o.internal;
        update.internal[storage::kInternalKekId] = current.id;
        update.internal[storage::kInternalSealedKey] =
            crypto::SealKey(current.key, **key, SealContext(kSseS3, b.name, o.key));
        // Only the version this walk read: not one written or re-tagged since.
        update.precondition = [seen = o](const storage::ObjectInfo* now) -> Status {
          if (!now || now->version_id != seen.version_id || now->internal != seen.internal ||
              now->tags != seen.tags)
            return MakeError(ErrorCode::kPreconditionFailed);
          return {};
        };
        auto done = store.UpdateMetadata(b.name, o.key, update);
        if (done.ok()) {
          ++stats.resealed;
        } else if (done.error().code != ErrorCode::kPreconditionFailed) {
          spdlog::warn("SSE-S3 re-seal: {}/{}: {}", b.name, o.key, done.error().message);
          ++stats.failed;
        }
      }
      more = page->truncated && !page->next_marker.empty();
      opts.start_after = page->next_marker;
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

Result<std::string> ParseEncryptionConfig(const std::string& xml) {
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
  for (const auto& f : Elements(rules[0])) {
    if (LocalNameOf(f) == "BucketKeyEnabled") {
      const std::string v = f.text().get();
      if (v != "true" && v != "false") return malformed;
      continue;
    }
    if (LocalNameOf(f) != "ApplyServerSideEncryptionByDefault" || !algorithm.empty())
      return malformed;
    for (const auto& g : Elements(f)) {
      if (LocalNameOf(g) == "SSEAlgorithm" && algorithm.empty())
        algorithm = g.text().get();
      else if (LocalNameOf(g) == "KMSMasterKeyID")
        has_kms_key = true;
      else
        return malformed;
    }
  }
  if (algorithm == "aws:kms" || algorithm == "aws:kms:dsse")
    return MakeError(ErrorCode::kNotImplemented,
                     "Server-side encryption with a KMS (aws:kms) is not implemented by rdmastor: "
                     "no KMS is configured. Use AES256 (SSE-S3).");
  if (algorithm != "AES256") return malformed;
  if (has_kms_key)
    return MakeError(ErrorCode::kInvalidArgument,
                     "a KMSMasterKeyID is not applicable if the default sse algorithm is not "
                     "aws:kms or aws:kms:dsse");
  return algorithm;
}

std::string EncryptionConfigXml(const std::string& algorithm) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
         "<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
         "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>" +
         algorithm +
         "</SSEAlgorithm></ApplyServerSideEncryptionByDefault>"
         "<BucketKeyEnabled>false</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>";
}

namespace {

// Bounds the scratch buffer of one ReadAt (callers loop over short reads).
constexpr uint64_t kMaxReadPackages = 64;  // 4 MiB of plaintext

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

  const storage::ObjectInfo& info() const override { return inner_->info(); }
  uint64_t bytes_copied() const override { return inner_->bytes_copied() + decrypted_; }

  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    const uint64_t size = inner_->info().size;
    if (off >= size || len == 0) return size_t{0};
    size_t part = static_cast<size_t>(
        std::upper_bound(plain_offsets_.begin(), plain_offsets_.end(), off) -
        plain_offsets_.begin() - 1);
    while (part < plain_sizes_.size() && off - plain_offsets_[part] >= plain_sizes_[part]) ++part;
    if (part >= plain_sizes_.size()) return size_t{0};
    const uint64_t part_plain = plain_sizes_[part];
    const uint64_t in_part = off - plain_offsets_[part];
    uint64_t n = std::min<uint64_t>(len, part_plain - in_part);
    // At most kMaxReadPackages packages per call.
    const uint64_t first_pkg = in_part / crypto::kPackageSize;
    n = std::min<uint64_t>(n, (first_pkg + kMaxReadPackages) * crypto::kPackageSize - in_part);
    RS_RETURN_IF_ERROR(LoadHeader(part));
    const crypto::PackageSpan span = crypto::SpanOf(part_plain, in_part, n);
    scratch_.resize(static_cast<size_t>(span.stored_length));
    RS_RETURN_IF_ERROR(ReadStored(stored_offsets_[part] + span.stored_offset, scratch_.data(),
                                  scratch_.size()));
    const uint64_t packages = std::max<uint64_t>(
        1, (part_plain + crypto::kPackageSize - 1) / crypto::kPackageSize);
    size_t done = 0;
    for (uint64_t i = 0; i < span.count; ++i) {
      const uint64_t seq = span.first + i;
      const size_t at = static_cast<size_t>(i * crypto::kSealedPackageSize);
      const size_t sealed_len =
          std::min<size_t>(crypto::kSealedPackageSize, scratch_.size() - at);
      char* p = scratch_.data() + at;
      auto st = cipher_.Open(headers_[part].data(), seq, seq + 1 == packages, p, sealed_len, p);
      if (!st.ok()) {
        SseAuthFailures().Inc(1);
        spdlog::error("SSE: {}/{} part {} package {} does not authenticate",
                      inner_->info().bucket, inner_->info().key, part + 1, seq);
        return MakeError(ErrorCode::kInternalError, "encrypted data does not authenticate");
      }
      // The slice of this package's plaintext the caller asked for.
      const uint64_t pkg_start = seq * crypto::kPackageSize;
      const uint64_t from = std::max(pkg_start, in_part) - pkg_start;
      const uint64_t to =
          std::min<uint64_t>(sealed_len - crypto::kTagSize, in_part + n - pkg_start);
      if (to > from) {
        std::memcpy(buf + done, p + from, static_cast<size_t>(to - from));
        done += static_cast<size_t>(to - from);
      }
    }
    decrypted_ += done;
    SseBytes("decrypt").Inc(done);
    return done;
  }

 private:
  Status ReadStored(uint64_t off, char* buf, size_t len) {
    size_t got = 0;
    while (got < len) {
      auto r = inner_->ReadAt(off + got, buf + got, len - got);
      if (!r.ok()) return r.error();
      if (*r == 0) return MakeError(ErrorCode::kInternalError, "encrypted object is truncated");
      got += *r;
    }
    return {};
  }

  Status LoadHeader(size_t part) {
    if (have_header_[part]) return {};
    RS_RETURN_IF_ERROR(ReadStored(stored_offsets_[part],
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
  std::vector<char> scratch_;
  uint64_t decrypted_ = 0;
};

}  // namespace

std::unique_ptr<storage::ObjectReader> NewDecryptingReader(
    std::unique_ptr<storage::ObjectReader> inner, const crypto::Key& object_key) {
  return std::make_unique<DecryptingReader>(std::move(inner), object_key);
}

}  // namespace rdmastor::s3
