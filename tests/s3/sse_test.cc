// s3/sse.h: request parsing (SSE-C validation, SSE-S3, defaults, refusals), object keys sealed and
// opened with AWS's errors, and the decrypting reader over stored streams (single and multipart,
// every range around package boundaries, tampering detected).
#include "s3/sse.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/hash.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {
namespace {

std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  unsigned x = seed * 2654435761u + 7;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

class StringSource : public BodySource {
 public:
  explicit StringSource(std::string s) : s_(std::move(s)) {}
  Result<size_t> Read(char* buf, size_t len) override {
    size_t n = std::min(len, s_.size() - pos_);
    std::memcpy(buf, s_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string s_;
  size_t pos_ = 0;
};

std::string Encrypt(const std::string& plain, const crypto::Key& key) {
  StringSource in(plain);
  crypto::EncryptingSource enc(in, key);
  std::string out;
  char buf[7000];  // not a package multiple: exercises partial reads
  for (;;) {
    auto n = enc.Read(buf, sizeof(buf));
    EXPECT_TRUE(n.ok());
    if (!n.ok() || *n == 0) break;
    out.append(buf, *n);
  }
  return out;
}

// The stored bytes of an object, read back as the object layer's readers do (plaintext sizes in
// info(), like ObjectMeta::ToInfo reports them).
class StoredReader : public storage::ObjectReader {
 public:
  StoredReader(std::string stored, storage::ObjectInfo info)
      : stored_(std::move(stored)), info_(std::move(info)) {}
  const storage::ObjectInfo& info() const override { return info_; }
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    if (off >= stored_.size()) return size_t{0};
    size_t n = std::min<size_t>(len, stored_.size() - off);
    std::memcpy(buf, stored_.data() + off, n);
    return n;
  }
  std::string& stored() { return stored_; }

 private:
  std::string stored_;
  storage::ObjectInfo info_;
};

std::string ReadRange(storage::ObjectReader& r, uint64_t off, uint64_t len) {
  std::string out(len, '\0');
  uint64_t done = 0;
  while (done < len) {
    auto n = r.ReadAt(off + done, out.data() + done, len - done);
    EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
    if (!n.ok() || *n == 0) break;
    done += *n;
  }
  out.resize(done);
  return out;
}

HttpRequest WithHeaders(std::vector<std::pair<std::string, std::string>> h) {
  HttpRequest req;
  req.method = "PUT";
  for (auto& kv : h) req.headers.push_back(kv);
  return req;
}

std::vector<std::pair<std::string, std::string>> SsecHeaders(const std::string& raw) {
  return {{"x-amz-server-side-encryption-customer-algorithm", "AES256"},
          {"x-amz-server-side-encryption-customer-key", hash::Base64Encode(raw)},
          {"x-amz-server-side-encryption-customer-key-md5",
           hash::Base64Encode(hash::Digest(hash::Algo::kMD5, raw))}};
}

SseConfig Config(bool with_master = true) {
  SseConfig cfg;
  cfg.secure_transport = true;
  if (with_master) {
    auto mk = crypto::ParseMasterKey("k1:" + hash::Base64Encode(std::string(32, 'm')));
    EXPECT_TRUE(mk.ok());
    cfg.ring.emplace(*mk, std::vector<crypto::MasterKey>{});
  }
  return cfg;
}

// A configuration with a KMS holding the master key "k1" (its default) and nothing else.
SseConfig KmsConfig() {
  SseConfig cfg = Config();
  auto kms = crypto::LocalKms::Load(cfg.ring, "", "");
  EXPECT_TRUE(kms.ok());
  cfg.kms = std::move(*kms);
  return cfg;
}

TEST(SseTest, ParsesAndValidatesCustomerKeys) {
  const std::string key(32, 'c');
  auto ok = ParseSseCustomer(WithHeaders(SsecHeaders(key)), Config());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->kind, SseKind::kC);
  EXPECT_EQ(std::string(ok->customer_key.begin(), ok->customer_key.end()), key);

  auto h = SsecHeaders(key);
  h[2].second = hash::Base64Encode(std::string(16, 'x'));
  EXPECT_EQ(ParseSseCustomer(WithHeaders(h), Config()).error().code, ErrorCode::kInvalidArgument);
  h = SsecHeaders(std::string(31, 'c'));
  EXPECT_EQ(ParseSseCustomer(WithHeaders(h), Config()).error().code, ErrorCode::kInvalidArgument);
  h = SsecHeaders(key);
  h[0].second = "AES128";
  EXPECT_EQ(ParseSseCustomer(WithHeaders(h), Config()).error().code,
            ErrorCode::kInvalidEncryptionAlgorithm);
  h = SsecHeaders(key);
  h.erase(h.begin() + 1);
  EXPECT_EQ(ParseSseCustomer(WithHeaders(h), Config()).error().code, ErrorCode::kInvalidArgument);
  // Plain HTTP: refused unless allowed.
  SseConfig http = Config();
  http.secure_transport = false;
  EXPECT_EQ(ParseSseCustomer(WithHeaders(SsecHeaders(key)), http).error().code,
            ErrorCode::kInvalidRequest);
  http.allow_sse_c_over_http = true;
  EXPECT_TRUE(ParseSseCustomer(WithHeaders(SsecHeaders(key)), http).ok());
  // The copy-source form is separate.
  EXPECT_EQ(ParseSseCustomer(WithHeaders(SsecHeaders(key)), Config(), true)->kind, SseKind::kNone);
}

TEST(SseTest, WriteEncryptionChoices) {
  auto none = ParseSseWrite(WithHeaders({}), Config(), "");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->kind, SseKind::kNone);
  EXPECT_EQ(ParseSseWrite(WithHeaders({}), Config(), "AES256")->kind, SseKind::kS3);
  EXPECT_EQ(
      ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "AES256"}}), Config(), "")->kind,
      SseKind::kS3);
  EXPECT_EQ(ParseSseWrite(WithHeaders(SsecHeaders(std::string(32, 'c'))), Config(), "AES256")->kind,
            SseKind::kC);
  // aws:kms without a KMS: 501 naming the settings.
  auto no_kms = ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"}}), Config(), "");
  ASSERT_FALSE(no_kms.ok());
  EXPECT_EQ(no_kms.error().code, ErrorCode::kNotImplemented);
  EXPECT_NE(no_kms.error().message.find("RDMASTOR_KMS_KEY_DIR"), std::string::npos);
  EXPECT_EQ(ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "rot13"}}), Config(), "")
                .error()
                .code,
            ErrorCode::kInvalidArgument);
  auto no_master = ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "AES256"}}),
                                 Config(false), "");
  ASSERT_FALSE(no_master.ok());
  EXPECT_EQ(no_master.error().code, ErrorCode::kNotImplemented);
  EXPECT_NE(no_master.error().message.find("MINIO_KMS_SECRET_KEY"), std::string::npos);
  auto both = SsecHeaders(std::string(32, 'c'));
  both.emplace_back("x-amz-server-side-encryption", "AES256");
  EXPECT_EQ(ParseSseWrite(WithHeaders(both), Config(), "").error().code,
            ErrorCode::kInvalidArgument);
}

TEST(SseTest, KmsWritesNameTheirKey) {
  const auto cfg = KmsConfig();
  // No key named: the KMS's default; a named key, or its ARN; an unknown key: KMS.NotFoundException.
  auto def = ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"}}), cfg, "");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->kind, SseKind::kKms);
  EXPECT_EQ(def->kms_key_id, "k1");
  auto arn = ParseSseWrite(
      WithHeaders({{"x-amz-server-side-encryption", "aws:kms"},
                   {"x-amz-server-side-encryption-aws-kms-key-id",
                    "arn:aws:kms:us-east-1:123456789012:key/k1"}}),
      cfg, "");
  ASSERT_TRUE(arn.ok());
  EXPECT_EQ(arn->kms_key_id, "k1");
  auto unknown = ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"},
                                            {"x-amz-server-side-encryption-aws-kms-key-id", "nope"}}),
                               cfg, "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kKmsNotFound);
  // A key id without aws:kms, a context that is not base64 JSON of strings, dsse.
  EXPECT_EQ(ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption-aws-kms-key-id", "k1"}}), cfg,
                          "")
                .error()
                .code,
            ErrorCode::kInvalidArgument);
  for (const std::string bad : {std::string("%%%"), hash::Base64Encode("[1]"),
                                hash::Base64Encode("{\"a\":1}"), hash::Base64Encode("{")})
    EXPECT_EQ(ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"},
                                         {"x-amz-server-side-encryption-context", bad}}),
                            cfg, "")
                  .error()
                  .code,
              ErrorCode::kInvalidArgument)
        << bad;
  EXPECT_EQ(ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms:dsse"}}), cfg, "")
                .error()
                .code,
            ErrorCode::kNotImplemented);
  // The bucket's default names the key and the bucket key; a request's header wins.
  const std::string bucket_default =
      EncodeEncryptionDefault({.algorithm = "aws:kms", .kms_key_id = "k1", .bucket_key = true});
  auto from_bucket = ParseSseWrite(WithHeaders({}), cfg, bucket_default);
  ASSERT_TRUE(from_bucket.ok());
  EXPECT_EQ(from_bucket->kind, SseKind::kKms);
  EXPECT_EQ(from_bucket->kms_key_id, "k1");
  EXPECT_TRUE(from_bucket->bucket_key);
  EXPECT_EQ(ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "AES256"}}), cfg,
                          bucket_default)
                ->kind,
            SseKind::kS3);
}

TEST(SseTest, KmsObjectKeysAreBoundToKeyObjectAndContext) {
  const auto cfg = KmsConfig();
  const std::string ctx = hash::Base64Encode("{\"team\":\"ml\"}");
  auto req = ParseSseWrite(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"},
                                        {"x-amz-server-side-encryption-context", ctx}}),
                           cfg, "");
  ASSERT_TRUE(req.ok());
  auto sealed = SealNewObjectKey(cfg, *req, "b", "k");
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(SseKindOf(sealed->internal), SseKind::kKms);
  EXPECT_EQ(sealed->internal.at(storage::kInternalKekId), "k1");
  EXPECT_EQ(**OpenObjectKey(cfg, SseRequest{}, sealed->internal, "b", "k"), sealed->key);
  // Another object, another context, or the same sealed key read as SSE-S3: no key (500).
  EXPECT_EQ(OpenObjectKey(cfg, SseRequest{}, sealed->internal, "b", "k2").error().code,
            ErrorCode::kInternalError);
  auto other_ctx = sealed->internal;
  other_ctx[storage::kInternalKmsContext] = hash::Base64Encode("{\"team\":\"x\"}");
  EXPECT_EQ(OpenObjectKey(cfg, SseRequest{}, other_ctx, "b", "k").error().code,
            ErrorCode::kInternalError);
  auto as_s3 = sealed->internal;
  as_s3[storage::kInternalSse] = "SSE-S3";
  EXPECT_EQ(OpenObjectKey(cfg, SseRequest{}, as_s3, "b", "k").error().code,
            ErrorCode::kInternalError);
  // SSE-C parameters for an SSE-KMS object; a server without the KMS.
  auto c = ParseSseCustomer(WithHeaders(SsecHeaders(std::string(32, 'c'))), cfg);
  EXPECT_EQ(OpenObjectKey(cfg, *c, sealed->internal, "b", "k").error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(OpenObjectKey(Config(), SseRequest{}, sealed->internal, "b", "k").error().code,
            ErrorCode::kNotImplemented);
  // The headers a GET answers: the key id and no context.
  HeaderList h;
  AddStoredSseHeaders(h, sealed->internal, SseRequest{});
  EXPECT_EQ(h, (HeaderList{{"x-amz-server-side-encryption", "aws:kms"},
                           {"x-amz-server-side-encryption-aws-kms-key-id", "k1"}}));
}

TEST(SseTest, ReadsRefuseWriteEncryptionHeaders) {
  EXPECT_TRUE(CheckNoSseOnRead(WithHeaders(SsecHeaders(std::string(32, 'c')))).ok());
  EXPECT_EQ(CheckNoSseOnRead(WithHeaders({{"x-amz-server-side-encryption", "aws:kms"}}))
                .error()
                .code,
            ErrorCode::kInvalidArgument);
}

TEST(SseTest, ObjectKeysOpenOnlyForTheirKeyAndObject) {
  const auto cfg = Config();
  SseRequest s3;
  s3.kind = SseKind::kS3;
  auto sealed = SealNewObjectKey(cfg, s3, "b", "k");
  ASSERT_TRUE(sealed.ok());
  auto opened = OpenObjectKey(cfg, SseRequest{}, sealed->internal, "b", "k");
  ASSERT_TRUE(opened.ok() && opened->has_value());
  EXPECT_EQ(**opened, sealed->key);
  // Another object's name: the sealed key does not open (500, never the data).
  EXPECT_EQ(OpenObjectKey(cfg, SseRequest{}, sealed->internal, "b", "other").error().code,
            ErrorCode::kInternalError);

  auto req = ParseSseCustomer(WithHeaders(SsecHeaders(std::string(32, 'c'))), cfg);
  auto wrong = ParseSseCustomer(WithHeaders(SsecHeaders(std::string(32, 'w'))), cfg);
  auto c = SealNewObjectKey(cfg, *req, "b", "k");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(**OpenObjectKey(cfg, *req, c->internal, "b", "k"), c->key);
  EXPECT_EQ(OpenObjectKey(cfg, *wrong, c->internal, "b", "k").error().code,
            ErrorCode::kAccessDenied);
  EXPECT_EQ(OpenObjectKey(cfg, SseRequest{}, c->internal, "b", "k").error().code,
            ErrorCode::kInvalidRequest);
  // SSE-C parameters for an SSE-S3 or a plain object.
  EXPECT_EQ(OpenObjectKey(cfg, *req, sealed->internal, "b", "k").error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(OpenObjectKey(cfg, *req, {}, "b", "k").error().code, ErrorCode::kInvalidRequest);
  EXPECT_FALSE(OpenObjectKey(cfg, SseRequest{}, {}, "b", "k")->has_value());
}

TEST(SseTest, DecryptingReaderServesEveryRange) {
  const auto key = crypto::RandomKey();
  const uint64_t P = crypto::kPackageSize;
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, P - 1, P, P + 1, 3 * P + 17}) {
    SCOPED_TRACE(size);
    const std::string plain = Pattern(size, static_cast<unsigned>(size));
    storage::ObjectInfo info;
    info.size = size;
    auto reader = NewDecryptingReader(
        std::make_unique<StoredReader>(Encrypt(plain, key), info), key);
    EXPECT_EQ(ReadRange(*reader, 0, size), plain);
    for (uint64_t off : {uint64_t{0}, P - 1, P, P + 1, 2 * P}) {
      if (off >= size) continue;
      for (uint64_t len : {uint64_t{1}, uint64_t{2}, P, size - off}) {
        if (off + len > size) continue;
        EXPECT_EQ(ReadRange(*reader, off, len), plain.substr(off, len)) << off << "+" << len;
      }
    }
    EXPECT_GE(reader->bytes_copied(), size);
  }
}

TEST(SseTest, DecryptingReaderOverPartsAndTampering) {
  const auto key = crypto::RandomKey();
  const std::string a = Pattern(2 * crypto::kPackageSize + 5, 1), b = Pattern(1000, 2),
                    c = Pattern(crypto::kPackageSize, 3);
  storage::ObjectInfo info;
  info.size = a.size() + b.size() + c.size();
  info.part_count = 3;
  info.part_sizes = {a.size(), b.size(), c.size()};
  auto stored = std::make_unique<StoredReader>(Encrypt(a, key) + Encrypt(b, key) + Encrypt(c, key),
                                               info);
  auto* raw = stored.get();
  auto reader = NewDecryptingReader(std::move(stored), key);
  const std::string whole = a + b + c;
  EXPECT_EQ(ReadRange(*reader, 0, whole.size()), whole);
  EXPECT_EQ(ReadRange(*reader, a.size() - 3, 10), whole.substr(a.size() - 3, 10));
  EXPECT_EQ(ReadRange(*reader, a.size() + b.size() - 1, 2), whole.substr(a.size() + b.size() - 1, 2));
  // One flipped ciphertext byte in part 2: reads touching it fail, others still succeed.
  raw->stored()[crypto::EncryptedSize(a.size()) + 100] ^= 1;
  char buf[16];
  EXPECT_FALSE(reader->ReadAt(a.size() + 10, buf, sizeof(buf)).ok());
  EXPECT_EQ(ReadRange(*reader, 5, 10), whole.substr(5, 10));
  // The wrong key opens nothing.
  storage::ObjectInfo single;
  single.size = a.size();
  auto wrong = NewDecryptingReader(std::make_unique<StoredReader>(Encrypt(a, key), single),
                                   crypto::RandomKey());
  EXPECT_FALSE(wrong->ReadAt(0, buf, sizeof(buf)).ok());
}

// A stored reader that can fail every read reaching `fail_from`, take `delay` per read, and
// counts reads made after its destruction (a read-ahead outliving its reader would make one).
class ProbeReader : public StoredReader {
 public:
  ProbeReader(std::string stored, storage::ObjectInfo info,
              std::shared_ptr<std::atomic<int>> reads_after_death)
      : StoredReader(std::move(stored), std::move(info)),
        reads_after_death_(std::move(reads_after_death)) {}
  ~ProbeReader() override { alive_ = false; }
  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    if (!alive_) ++*reads_after_death_;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (off + len > fail_from) return MakeError(ErrorCode::kInternalError, "drive failed");
    return StoredReader::ReadAt(off, buf, len);
  }
  uint64_t fail_from = UINT64_MAX;
  std::chrono::milliseconds delay{0};

 private:
  std::atomic<bool> alive_{true};
  std::shared_ptr<std::atomic<int>> reads_after_death_;
};

// Reads [off, off + len) in ReadAt calls of at most `chunk` bytes, as GET's loop does; stops at
// the first error and returns what it read then.
std::string ReadInChunks(storage::ObjectReader& r, uint64_t off, uint64_t len, size_t chunk,
                         Status* failed = nullptr) {
  std::string out;
  std::vector<char> buf(chunk);
  while (out.size() < len) {
    auto n = r.ReadAt(off + out.size(), buf.data(),
                      static_cast<size_t>(std::min<uint64_t>(chunk, len - out.size())));
    if (!n.ok()) {
      if (failed) *failed = n.error();
      break;
    }
    if (*n == 0) break;
    out.append(buf.data(), *n);
  }
  return out;
}

TEST(SseTest, SequentialReadsReadAheadAndServeEveryChunkSize) {
  const auto key = crypto::RandomKey();
  const uint64_t P = crypto::kPackageSize;
  const std::string plain = Pattern(80 * P + 12345, 9);  // more than one 4 MiB ReadAt
  storage::ObjectInfo info;
  info.size = plain.size();
  const std::string stored = Encrypt(plain, key);
  auto deaths = std::make_shared<std::atomic<int>>(0);
  auto reader =
      NewDecryptingReader(std::make_unique<ProbeReader>(stored, info, deaths), key);
  // GET's 1 MiB loop, a chunk that is no package multiple, chunks larger than one ReadAt serves,
  // and sequential reads from inside a package.
  for (size_t chunk : {size_t{1} << 20, size_t{100000}, size_t{5} << 20})
    EXPECT_EQ(ReadInChunks(*reader, 0, plain.size(), chunk), plain) << chunk;
  EXPECT_EQ(ReadInChunks(*reader, 0, 2 * P, 1000), plain.substr(0, 2 * P));
  EXPECT_EQ(ReadInChunks(*reader, P / 2, 20 * P, 1 << 20), plain.substr(P / 2, 20 * P));
  // Jumps between reads (what was read ahead is not what is asked for) and a read of the end.
  for (uint64_t off : {40 * P + 3, 2 * P, 79 * P, 0 * P, plain.size() - 10})
    EXPECT_EQ(ReadInChunks(*reader, off, std::min<uint64_t>(P + 9, plain.size() - off), 1 << 20),
              plain.substr(off, P + 9))
        << off;
  // Every byte returned was decrypted once: nothing is counted twice for read-ahead.
  EXPECT_GE(reader->bytes_copied(), plain.size());
  reader.reset();
  EXPECT_EQ(deaths->load(), 0);
}

TEST(SseTest, ReadAheadStillAuthenticatesEveryPackage) {
  const auto key = crypto::RandomKey();
  const uint64_t P = crypto::kPackageSize, S = crypto::kSealedPackageSize;
  const std::string plain = Pattern(48 * P, 4);
  storage::ObjectInfo info;
  info.size = plain.size();
  const std::string good = Encrypt(plain, key);
  auto deaths = std::make_shared<std::atomic<int>>(0);
  auto read_all = [&](std::string stored, Status* failed) {
    auto r = NewDecryptingReader(std::make_unique<ProbeReader>(std::move(stored), info, deaths),
                                 key);
    return ReadInChunks(*r, 0, plain.size(), 1 << 20, failed);
  };
  const size_t first = crypto::kStreamHeaderSize;  // package 0's stored offset
  // A flipped byte in package 20 (the second 1 MiB chunk, read ahead while the first is served):
  // the first chunk is served, the second fails as a whole.
  {
    std::string t = good;
    t[first + 20 * S + 7] ^= 0x40;
    Status failed;
    EXPECT_EQ(read_all(t, &failed), plain.substr(0, 16 * P));
    EXPECT_FALSE(failed.ok());
  }
  // Packages 33 and 34 swapped, the last package dropped (and the stream cut inside a package).
  {
    std::string t = good;
    std::string a = t.substr(first + 33 * S, S);
    t.replace(first + 33 * S, S, t.substr(first + 34 * S, S));
    t.replace(first + 34 * S, S, a);
    Status failed;
    EXPECT_EQ(read_all(t, &failed), plain.substr(0, 32 * P));
    EXPECT_FALSE(failed.ok());
  }
  for (size_t cut : {good.size() - S, good.size() - 100}) {
    Status failed;
    EXPECT_EQ(read_all(good.substr(0, cut), &failed), plain.substr(0, 32 * P)) << cut;
    EXPECT_FALSE(failed.ok()) << cut;
  }
  // A drive error under a read-ahead reaches the ReadAt that needs those bytes, and an earlier
  // range still reads afterwards.
  {
    auto probe = std::make_unique<ProbeReader>(good, info, deaths);
    probe->fail_from = first + 20 * S;
    auto r = NewDecryptingReader(std::move(probe), key);
    Status failed;
    EXPECT_EQ(ReadInChunks(*r, 0, plain.size(), 1 << 20, &failed), plain.substr(0, 16 * P));
    EXPECT_FALSE(failed.ok());
    EXPECT_EQ(ReadInChunks(*r, P, 2 * P, 1 << 20), plain.substr(P, 2 * P));
  }
  // A reader given up while it reads ahead (slow drives) waits for that read: nothing reads its
  // inner reader afterwards.
  {
    auto probe = std::make_unique<ProbeReader>(good, info, deaths);
    probe->delay = std::chrono::milliseconds(20);
    auto r = NewDecryptingReader(std::move(probe), key);
    char buf[4096];
    ASSERT_TRUE(r->ReadAt(0, buf, sizeof(buf)).ok());
  }
  EXPECT_EQ(deaths->load(), 0);
}

TEST(SseTest, BucketEncryptionDocuments) {
  auto algo = ParseEncryptionConfig(EncryptionConfigXml({.algorithm = "AES256"}), Config());
  ASSERT_TRUE(algo.ok());
  EXPECT_EQ(algo->algorithm, "AES256");
  EXPECT_EQ(EncodeEncryptionDefault(*algo), "AES256");  // the form stored before SSE-KMS
  const std::string kms_doc =
      "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
      "<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>K</KMSMasterKeyID>"
      "</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule>"
      "</ServerSideEncryptionConfiguration>";
  EXPECT_EQ(ParseEncryptionConfig(kms_doc, Config()).error().code, ErrorCode::kNotImplemented);
  EXPECT_EQ(ParseEncryptionConfig(kms_doc, KmsConfig()).error().code, ErrorCode::kKmsNotFound);
  std::string k1_doc = kms_doc;
  k1_doc.replace(k1_doc.find(">K<"), 3, ">k1<");
  auto kms = ParseEncryptionConfig(k1_doc, KmsConfig());
  ASSERT_TRUE(kms.ok());
  EXPECT_EQ(kms->kms_key_id, "k1");
  EXPECT_TRUE(kms->bucket_key);
  // Stored and read back whole; the document round-trips.
  auto back = DecodeEncryptionDefault(EncodeEncryptionDefault(*kms));
  EXPECT_EQ(back.algorithm, "aws:kms");
  EXPECT_EQ(back.kms_key_id, "k1");
  EXPECT_TRUE(back.bucket_key);
  EXPECT_EQ(ParseEncryptionConfig(EncryptionConfigXml(back), KmsConfig())->kms_key_id, "k1");
  for (const char* bad :
       {"", "<x/>", "<ServerSideEncryptionConfiguration/>",
        "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
        "<SSEAlgorithm>DES</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
        "</ServerSideEncryptionConfiguration>",
        "<!DOCTYPE x [<!ENTITY a 'b'>]><ServerSideEncryptionConfiguration/>"})
    EXPECT_EQ(ParseEncryptionConfig(bad, Config()).error().code, ErrorCode::kMalformedXML) << bad;
}

TEST(SseTest, MetadataCarriesInternalFieldsAsFormat3) {
  storage::ObjectMeta m;
  m.size = crypto::EncryptedSize(100);
  m.etag = "e";
  m.data_dir = "";
  m.parts.push_back({1, m.size, "e", {}});
  m.internal = {{storage::kInternalSse, "SSE-S3"}, {storage::kInternalSealedKey, "x"}};
  const std::string text = storage::SerializeObjectMeta(m);
  EXPECT_NE(text.find("\"version\":3"), std::string::npos);
  EXPECT_EQ(m.ToInfo("b", "k").size, 100u);  // plaintext size
  storage::ObjectMeta plain = m;
  plain.internal.clear();
  EXPECT_NE(storage::SerializeObjectMeta(plain).find("\"version\":2"), std::string::npos);
  EXPECT_EQ(plain.ToInfo("b", "k").size, crypto::EncryptedSize(100));
}

}  // namespace
}  // namespace rdmastor::s3
