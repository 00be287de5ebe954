#include "s3/api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "admin/logging.h"
#include "admin/metrics.h"
#include "common/hash.h"
#include "common/uri.h"
#include "common/utf8.h"
#include "iam/actions.h"
#include "s3/access.h"
#include "s3/acl.h"
#include "s3/admin_api.h"
#include "s3/aws_chunked.h"
#include "s3/checksums.h"
#include "s3/names.h"
#include "s3/post_policy.h"
#include "s3/range.h"
#include "s3/rdma_request.h"
#include "s3/sigv4.h"
#include "s3/tagging.h"
#include "s3/unsupported.h"
#include "s3/versioning.h"
#include "s3/xml.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {

namespace {

constexpr size_t kIoChunk = 1 << 20;           // streaming buffer per request
constexpr size_t kMaxXmlBody = 4 << 20;        // DeleteObjects with 1000 long keys fits
constexpr size_t kMaxUserMetadata = 2 * 1024;  // S3's limit on x-amz-meta-* bytes
constexpr uint64_t kMaxPutSize = 5ULL << 30;   // single PUT / part
constexpr int64_t kNsPerSec = 1'000'000'000;

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Quote(std::string_view etag) { return "\"" + std::string(etag) + "\""; }

std::string Unquote(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == 'W' && s[1] == '/') s.remove_prefix(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

// If-Match / If-None-Match: "*" or a comma-separated list of (quoted) ETags.
bool EtagMatches(std::string_view header, std::string_view etag) {
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t comma = header.find(',', pos);
    auto item = Unquote(
        header.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (item == "*" || item == etag) return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return std::nullopt;
  }
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

// Hashes the payload as it streams through: MD5 for the ETag, SHA-256 when the signature covers
// the payload, and the S3 checksum the client asked for.
class DigestingSource : public BodySource {
 public:
  DigestingSource(BodySource& in, bool sha256, std::optional<hash::Algo> checksum)
      : in_(in), md5_(hash::NewHasher(hash::Algo::kMD5)) {
    if (sha256) sha256_ = hash::NewHasher(hash::Algo::kSHA256);
    if (checksum) checksum_ = hash::NewHasher(*checksum);
  }
  Result<size_t> Read(char* buf, size_t len) override {
    auto n = in_.Read(buf, len);
    if (!n.ok() || *n == 0) return n;
    md5_->Update(buf, *n);
    if (sha256_) sha256_->Update(buf, *n);
    if (checksum_) checksum_->Update(buf, *n);
    bytes_ += *n;
    return n;
  }
  uint64_t bytes() const { return bytes_; }
  std::string Md5() { return md5_->Final(); }
  std::string Sha256() { return sha256_ ? sha256_->Final() : std::string(); }
  std::string Checksum() { return checksum_ ? checksum_->Final() : std::string(); }

 private:
  BodySource& in_;
  std::unique_ptr<hash::Hasher> md5_, sha256_, checksum_;
  uint64_t bytes_ = 0;
};

// Streams an existing object (or a range of it) as a BodySource: the source of CopyObject and
// UploadPartCopy.
class ReaderSource : public BodySource {
 public:
  ReaderSource(storage::ObjectReader& reader, uint64_t start, uint64_t length)
      : reader_(reader), pos_(start), end_(start + length) {}
  Result<size_t> Read(char* buf, size_t len) override {
    if (pos_ >= end_) return size_t{0};
    size_t want = static_cast<size_t>(std::min<uint64_t>(len, end_ - pos_));
    auto n = reader_.ReadAt(pos_, buf, want);
    if (!n.ok()) return n;
    if (*n == 0) return MakeError(ErrorCode::kInternalError, "object shorter than its metadata");
    pos_ += *n;
    return n;
  }

 private:
  storage::ObjectReader& reader_;
  uint64_t pos_, end_;
};

// What a write stores: the plaintext as it arrives, or its encryption under the object key
// (crypto/dare.h), one stream per object or part. Encryption comes before erasure coding: the
// storage layer sees only the stream.
struct StoredBody {
  std::optional<crypto::Key> key;  // set: encrypted
  std::unique_ptr<crypto::EncryptingSource> enc;
  BodySource* body = nullptr;

  StoredBody(BodySource& plain, const std::optional<crypto::Key>& object_key) : key(object_key) {
    if (key) enc = std::make_unique<crypto::EncryptingSource>(plain, *key);
    body = enc ? static_cast<BodySource*>(enc.get()) : &plain;
  }
  ~StoredBody() {
    if (enc) CountEncrypted(enc->plaintext_bytes());
  }
  StoredBody(const StoredBody&) = delete;
  StoredBody& operator=(const StoredBody&) = delete;
  // The declared plaintext size as stored.
  std::optional<uint64_t> Size(std::optional<uint64_t> plain) const {
    if (!key || !plain) return plain;
    return crypto::EncryptedSize(*plain);
  }
};

// The ETag a write records from its plaintext MD5 (hex): SSE-C data gets a keyed digest (AWS:
// not the MD5 of the data); SSE-S3 and plain data the MD5.
std::string WriteEtag(SseKind kind, const std::optional<crypto::Key>& key, std::string md5_hex) {
  if (kind == SseKind::kC && key) return SseCEtag(*key, md5_hex);
  return md5_hex;
}

void SetHeaders(HttpResponseHead& head, const HeaderList& headers) {
  for (const auto& [k, v] : headers) head.Set(k, v);
}

// Headers S3 stores with an object and returns on GET/HEAD (besides x-amz-meta-*).
constexpr std::string_view kStoredHeaders[] = {"cache-control", "content-disposition",
                                               "content-encoding", "content-language", "expires"};

}  // namespace

struct S3Api::Context {
  const HttpRequest& req;
  BodySource& raw_body;
  ResponseSink& sink;
  std::string request_id;
  std::string bucket;
  std::string key;
  bool has_key = false;  // path named an object (possibly with an empty key -> invalid)
  std::vector<std::pair<std::string, std::string>> query;
  AuthContext auth;
  Caller caller;  // who signed the request (anonymous: nobody)
  // MinIO's API name for metrics ("PutObject", ...); empty for health/metrics endpoints.
  std::string_view api = "unknown";
  storage::VersionSel version;  // ?versionId: nullopt = the latest, "" = the null version
  // A browser POST's form fields as PutObject's headers: its policy condition keys (s3/access.h).
  const HeaderList* form = nullptr;
  bool rdma_declined = false;  // answered 501 with x-amz-rdma-reply: 501 (metrics)

  bool Has(std::string_view name) const {
    for (const auto& [k, v] : query)
      if (k == name) return true;
    return false;
  }
  std::string Q(std::string_view name) const {
    for (const auto& [k, v] : query)
      if (k == name) return v;
    return {};
  }
  std::string Resource() const { return "/" + bucket + (bucket.empty() ? "" : "/") + key; }
};

namespace {

void SendBody(ResponseSink& sink, HttpResponseHead head, const std::string& body,
              std::string_view content_type) {
  if (!content_type.empty()) head.Set("Content-Type", std::string(content_type));
  head.content_length = body.size();
  if (sink.SendHead(head)) sink.Write(body.data(), body.size());
}

}  // namespace

S3Api::S3Api(ApiOptions opts, storage::ObjectLayer& store)
    : opts_(std::move(opts)),
      store_(store),
      iam_(std::make_unique<iam::IamStore>(store, opts_.access_key, opts_.iam)),
      request_id_prefix_(hash::RandomHex(4)) {
  for (auto& c : request_id_prefix_) c = static_cast<char>(std::toupper(c));
  opts_.sse.secure_transport = opts_.secure_transport;
  RegisterRdmaMetrics();
}

void S3Api::RenderFrontEndError(ErrorCode code, HttpResponseHead& head, std::string& body) {
  char id[32];
  std::snprintf(id, sizeof(id), "%s%08llX", request_id_prefix_.c_str(),
                static_cast<unsigned long long>(++request_counter_));
  const auto& info = GetErrorInfo(code);
  head = BaseHead(id, info.http_status);
  head.Set("Content-Type", "application/xml");
  body = ErrorXml(info.code, info.message, "/", id);
  head.content_length = body.size();
}

// ---------------------------------------------------------------------------------------------
// Entry point

namespace {

void SendErrorImpl(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                   const std::string& resource, const Error& err, const HeaderList& extra = {}) {
  if (sink.head_sent()) return;  // too late: the connection will be closed mid-body
  const auto& info = GetErrorInfo(err.code);
  auto head = BaseHead(request_id, info.http_status);
  for (const auto& [k, v] : extra) head.Set(k, v);
  // S3 over RDMA: a token request that cannot be served over RDMA says so (DESIGN.md §3).
  if (IsRdmaDecline(err.code)) head.Set("x-amz-rdma-reply", "501");
  std::string message = err.message.empty() ? std::string(info.message) : err.message;
  if (req.method == "HEAD" || info.http_status == 304) {
    head.content_length = 0;
    sink.SendHead(head);
    return;
  }
  SendBody(sink, std::move(head), ErrorXml(info.code, message, resource, request_id, err.details),
           "application/xml");
}

// At most `n` bytes of `s` for a log line: request targets and error details can carry client
// input of many kilobytes.
std::string Bounded(std::string s, size_t n = 512) {
  if (s.size() > n) s = s.substr(0, n) + "...(" + std::to_string(s.size()) + " bytes)";
  return s;
}

void SendError(S3Api::Context& ctx, const Error& err, const HeaderList& extra = {}) {
  if (err.code == ErrorCode::kInternalError)
    spdlog::error("{} {} {} -> InternalError: {}", ctx.request_id, ctx.req.method,
                  Bounded(admin::RedactTarget(ctx.req.target)), Bounded(err.message));
  ctx.rdma_declined = ctx.rdma_declined || IsRdmaDecline(err.code);
  SendErrorImpl(ctx.req, ctx.sink, ctx.request_id, ctx.Resource(), err, extra);
}

void SendXml(S3Api::Context& ctx, const std::string& xml, int status = 200,
             const HeaderList& extra = {}) {
  auto head = BaseHead(ctx.request_id, status);
  for (const auto& [k, v] : extra) head.Set(k, v);
  SendBody(ctx.sink, std::move(head), xml, "application/xml");
}

void SendEmpty(S3Api::Context& ctx, int status, const HeaderList& extra = {}) {
  auto head = BaseHead(ctx.request_id, status);
  for (const auto& [k, v] : extra) head.Set(k, v);
  head.content_length = 0;
  ctx.sink.SendHead(head);
}

// The encryption a new object gets (SSE-C / x-amz-server-side-encryption headers, else the
// bucket's default).
Result<SseRequest> WriteEncryptionOf(S3Api::Context& ctx, storage::ObjectLayer& store,
                                     const SseConfig& cfg) {
  auto bucket_default = store.BucketEncryption(ctx.bucket);
  if (!bucket_default.ok()) return bucket_default.error();
  return ParseSseWrite(ctx.req, cfg, *bucket_default);
}

// The object key of a stored object about to be read (nullopt: not encrypted).
Result<std::optional<crypto::Key>> ReadKey(const SseConfig& cfg, const storage::ObjectInfo& info,
                                           const SseRequest& sse) {
  return OpenObjectKey(cfg, sse, info.internal, info.bucket, info.key);
}

// A read that met a delete marker: the latest version is one (404, with the marker's headers, as
// AWS answers) or the version named is one (405 MethodNotAllowed, Allow: DELETE).
void SendVersionError(S3Api::Context& ctx, const Error& err, storage::ObjectLayer& store) {
  HeaderList extra;
  if (err.code == ErrorCode::kMethodNotAllowed && ctx.version) {
    extra = {{"x-amz-delete-marker", "true"},
             {"x-amz-version-id", ctx.version->empty() ? "null" : *ctx.version},
             {"Allow", "DELETE"}};
  } else if (err.code == ErrorCode::kNoSuchKey && !ctx.version) {
    storage::ObjectInfo marker;
    auto latest = store.StatLatest(ctx.bucket, ctx.key, &marker);
    if (!latest.ok() && marker.delete_marker) AddVersionHeaders(extra, marker);
  }
  SendError(ctx, err, extra);
}

// The answer of an object or bucket subresource handler (?tagging, ?acl: a reply with `status`,
// `xml` ("" = no body) and `headers`); on an object a delete marker met answers as reads do.
template <typename Reply>
void SendSubresourceReply(S3Api::Context& ctx, const Result<Reply>& reply,
                          storage::ObjectLayer& store) {
  if (!reply.ok()) {
    if (ctx.has_key) return SendVersionError(ctx, reply.error(), store);
    return SendError(ctx, reply.error());
  }
  if (reply->xml.empty()) return SendEmpty(ctx, reply->status, reply->headers);
  SendXml(ctx, reply->xml, reply->status, reply->headers);
}

// A copy source: a named version (a delete marker cannot be copied) or the latest.
Result<std::unique_ptr<storage::ObjectReader>> OpenSource(storage::ObjectLayer& store,
                                                          const std::string& bucket,
                                                          const std::string& key,
                                                          const storage::VersionSel& version) {
  if (!version) return store.OpenObject(bucket, key);
  auto r = store.OpenObjectVersion(bucket, key, *version);
  if (!r.ok() && r.error().code == ErrorCode::kMethodNotAllowed)
    return MakeError(ErrorCode::kInvalidRequest,
                     "The source of a copy request may not specifically refer to a delete marker "
                     "by version id.");
  return r;
}

// Everything an upload (PutObject, UploadPart, XML bodies) needs to take the body apart and check
// it: de-chunking of aws-chunked bodies, hashing, and the digests the client declared.
struct UploadBody {
  std::unique_ptr<AwsChunkedSource> chunked;
  std::unique_ptr<DigestingSource> digest;
  std::optional<uint64_t> size;  // decoded payload size when declared
  DeclaredChecksum declared;     // x-amz-checksum-* the client sent (header or trailer)
  std::optional<hash::Algo> checksum_algo;  // computed as the body streams, and stored
  std::string content_md5;        // raw 16 bytes when Content-MD5 was sent
};

// How x-amz-checksum-* apply to a body.
struct ChecksumRule {
  // CompleteMultipartUpload: the headers describe the object being completed, not the XML body.
  bool headers_describe_body = true;
  const storage::PutOptions* upload = nullptr;  // UploadPart: the upload's recorded algorithm
  // Object data (PutObject, UploadPart): a body that declares no checksum gets S3's default one
  // (checksum::kDefaultAlgo), computed as it streams.
  bool default_checksum = false;
};

// `rdma`: the payload comes over RDMA (exactly rdma->size() bytes) instead of the HTTP body.
Result<UploadBody> PrepareUpload(S3Api::Context& ctx, RdmaPutBody* rdma = nullptr,
                                 const ChecksumRule& rule = {}) {
  const auto& req = ctx.req;
  UploadBody up;
  if (const auto* md5 = req.FindHeader("content-md5")) {
    auto raw = hash::Base64Decode(*md5);
    if (!raw || raw->size() != 16) return MakeError(ErrorCode::kInvalidDigest);
    up.content_md5 = *raw;
  }
  if (rule.headers_describe_body) {
    auto declared = ParseDeclaredChecksum(req);
    if (!declared.ok()) return declared.error();
    up.declared = std::move(*declared);
    up.checksum_algo = up.declared.algo;
  }
  if (rule.upload) {
    auto algo = PartChecksumAlgo(up.declared, rule.upload->checksum_algorithm,
                                 rule.upload->checksum_type);
    if (!algo.ok()) return algo.error();
    up.checksum_algo = *algo;
  }
  if (!up.checksum_algo && rule.default_checksum) up.checksum_algo = checksum::kDefaultAlgo;

  const auto mode = ctx.auth.payload_mode;
  bool streaming = mode == PayloadMode::kStreamingSigned ||
                   mode == PayloadMode::kStreamingSignedTrailer ||
                   mode == PayloadMode::kStreamingUnsignedTrailer;
  BodySource* source = &ctx.raw_body;
  if (rdma) {
    up.size = rdma->size();
    source = rdma;
  } else if (streaming) {
    const auto* dlen = req.FindHeader("x-amz-decoded-content-length");
    if (!dlen)
      return MakeError(ErrorCode::kMissingContentLength, "missing x-amz-decoded-content-length");
    auto v = ParseInt(*dlen);
    if (!v || *v < 0)
      return MakeError(ErrorCode::kInvalidArgument, "bad x-amz-decoded-content-length");
    up.size = static_cast<uint64_t>(*v);
    up.chunked = std::make_unique<AwsChunkedSource>(ctx.raw_body, ctx.auth);
    source = up.chunked.get();
  } else if (req.content_length) {
    up.size = *req.content_length;
  } else if (!req.chunked) {
    return MakeError(ErrorCode::kMissingContentLength);
  }
  if (up.size && *up.size > kMaxPutSize) return MakeError(ErrorCode::kEntityTooLarge);
  up.digest = std::make_unique<DigestingSource>(*source, mode == PayloadMode::kSignedSha256,
                                                up.checksum_algo);
  return up;
}

// Verifies what the client declared against what arrived; returns what the object records.
Result<storage::CommitInfo> FinishUpload(S3Api::Context& ctx, UploadBody& up) {
  storage::CommitInfo info;
  if (ctx.auth.payload_mode == PayloadMode::kSignedSha256) {
    if (hash::HexEncode(up.digest->Sha256()) != ctx.auth.content_sha256)
      return MakeError(ErrorCode::kContentSHA256Mismatch);
  }
  std::string md5 = up.digest->Md5();
  if (!up.content_md5.empty() && md5 != up.content_md5) return MakeError(ErrorCode::kBadDigest);
  info.etag = hash::HexEncode(md5);
  if (up.checksum_algo) {
    const std::string name(hash::ChecksumName(*up.checksum_algo));
    const std::string computed = up.digest->Checksum();
    std::string trailer_value;
    if (up.declared.trailer && up.chunked) {
      auto it = up.chunked->trailers().find("x-amz-checksum-" + name);
      if (it != up.chunked->trailers().end()) trailer_value = it->second;
    }
    if (auto st = VerifyDeclaredChecksum(up.declared, trailer_value, computed); !st.ok())
      return st.error();
    info.checksums[name] = hash::Base64Encode(computed);
  }
  return info;
}

Result<std::string> ReadXmlBody(S3Api::Context& ctx, const ChecksumRule& rule = {}) {
  auto up = PrepareUpload(ctx, nullptr, rule);
  if (!up.ok()) {
    if (up.error().code != ErrorCode::kMissingContentLength) return up.error();
    return std::string();  // no body at all
  }
  if (up->size && *up->size > kMaxXmlBody) return MakeError(ErrorCode::kEntityTooLarge);
  std::string body;
  char buf[64 * 1024];
  for (;;) {
    auto n = up->digest->Read(buf, sizeof(buf));
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    body.append(buf, *n);
    if (body.size() > kMaxXmlBody) return MakeError(ErrorCode::kEntityTooLarge);
  }
  auto fin = FinishUpload(ctx, *up);
  if (!fin.ok()) return fin.error();
  return body;
}

// Every line of a header, joined by commas (RFC 9110 5.3); nullopt when absent.
std::optional<std::string> JoinedHeader(const HttpRequest& req, std::string_view name) {
  std::optional<std::string> out;
  for (const auto& [k, v] : req.headers) {
    if (k != name) continue;
    if (out)
      *out += "," + v;
    else
      out = v;
  }
  return out;
}

// Content-Encoding without aws-chunked, which is transfer framing, not a property of the object;
// the rest stays exactly as sent ("deflate, gzip" comes back as such).
std::string WithoutAwsChunked(const std::string& value) {
  std::string kept;
  bool dropped = false;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = std::min(value.find(',', pos), value.size());
    std::string item = value.substr(pos, comma - pos);
    std::string trimmed = item;
    trimmed.erase(0, trimmed.find_first_not_of(" \t"));
    trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
    if (ToLower(trimmed) == "aws-chunked") {
      dropped = true;
    } else if (!trimmed.empty()) {
      kept += (kept.empty() ? "" : ",") + item;
    }
    pos = comma + 1;
  }
  if (!dropped) return value;
  kept.erase(0, kept.find_first_not_of(" \t"));
  return kept;
}

// x-amz-storage-class as stored: "" for STANDARD (or none); RefuseUnimplemented has refused
// values other than STANDARD and REDUCED_REDUNDANCY.
std::string StorageClassOf(const HttpRequest& req) {
  std::string sc = req.HeaderOr("x-amz-storage-class");
  return sc == "STANDARD" ? std::string() : sc;
}

// Content-Type, stored headers and user metadata from a PUT / CreateMultipartUpload / REPLACE copy.
// Values are kept byte for byte; a header sent on several lines is joined with commas.
Result<storage::PutOptions> ObjectOptionsFromHeaders(const HttpRequest& req) {
  storage::PutOptions opts;
  opts.content_type = req.HeaderOr("content-type", "binary/octet-stream");
  size_t meta_bytes = 0;
  for (const auto& [name, value] : req.headers) {
    if (name.rfind("x-amz-meta-", 0) == 0 && !opts.user_metadata.count(name)) {
      std::string joined = *JoinedHeader(req, name);
      meta_bytes += name.size() - 11 + joined.size();
      opts.user_metadata[name] = std::move(joined);
    }
  }
  for (auto stored : kStoredHeaders) {
    auto value = JoinedHeader(req, stored);
    if (!value) continue;
    if (stored == "content-encoding") {
      *value = WithoutAwsChunked(*value);
      if (value->empty()) continue;
    }
    opts.user_metadata[std::string(stored)] = std::move(*value);
  }
  if (meta_bytes > kMaxUserMetadata) return MakeError(ErrorCode::kMetadataTooLarge);
  if (const std::string* tagging = req.FindHeader("x-amz-tagging")) {
    auto tags = ParseTaggingHeader(*tagging);
    if (!tags.ok()) return tags.error();
    opts.tags = std::move(*tags);
  }
  opts.storage_class = StorageClassOf(req);
  auto acl = RequestedAcl(req);
  if (!acl.ok()) return acl.error();
  opts.acl = iam::StoredAcl(acl->value_or(iam::CannedAcl::kPrivate));
  return opts;
}

// Standard object headers for GET/HEAD responses.
void AddObjectHeaders(HttpResponseHead& head, const storage::ObjectInfo& info) {
  head.Set("ETag", Quote(info.etag));
  head.Set("Last-Modified", HttpDate(info.mtime_ns));
  head.Set("Accept-Ranges", "bytes");
  head.Set("Content-Type", info.content_type.empty() ? "binary/octet-stream" : info.content_type);
  for (const auto& [k, v] : info.user_metadata) {
    if (k.rfind("x-amz-checksum-algorithm", 0) == 0) continue;
    head.Set(k, v);
  }
  if (info.part_count > 0) head.Set("x-amz-mp-parts-count", std::to_string(info.part_count));
  if (!info.tags.empty()) head.Set("x-amz-tagging-count", std::to_string(TagCount(info.tags)));
  // As AWS: the header only for a class other than STANDARD.
  if (!info.storage_class.empty()) head.Set("x-amz-storage-class", info.storage_class);
}

// Applies GET/HEAD preconditions; returns an error (304/412) when the request must stop here.
Status CheckPreconditions(const HttpRequest& req, const storage::ObjectInfo& info) {
  int64_t mtime_s = info.mtime_ns / kNsPerSec;
  const auto* if_match = req.FindHeader("if-match");
  const auto* if_none_match = req.FindHeader("if-none-match");
  if (if_match) {
    if (!EtagMatches(*if_match, info.etag)) return MakeError(ErrorCode::kPreconditionFailed);
  } else if (const auto* ius = req.FindHeader("if-unmodified-since")) {
    auto t = ParseHttpDate(*ius);
    if (t && mtime_s > *t) return MakeError(ErrorCode::kPreconditionFailed);
  }
  if (if_none_match) {
    if (EtagMatches(*if_none_match, info.etag)) return MakeError(ErrorCode::kNotModified);
  } else if (const auto* ims = req.FindHeader("if-modified-since")) {
    auto t = ParseHttpDate(*ims);
    if (t && mtime_s <= *t) return MakeError(ErrorCode::kNotModified);
  }
  return {};
}

// If-Match / If-None-Match on a write (PutObject, CompleteMultipartUpload), checked by the object
// layer under the key's lock against the object the write would replace. If-Match on a missing key
// is NoSuchKey (AWS); If-None-Match: * fails on any existing object.
storage::WritePrecondition ConditionalWrite(const HttpRequest& req) {
  const auto* if_match = req.FindHeader("if-match");
  const auto* if_none_match = req.FindHeader("if-none-match");
  if (!if_match && !if_none_match) return {};
  std::optional<std::string> match, none_match;
  if (if_match) match = *if_match;
  if (if_none_match) none_match = *if_none_match;
  return [match, none_match](const storage::ObjectInfo* current) -> Status {
    if (match) {
      if (!current) return MakeError(ErrorCode::kNoSuchKey);
      if (!EtagMatches(*match, current->etag)) return MakeError(ErrorCode::kPreconditionFailed);
    }
    if (none_match && current && EtagMatches(*none_match, current->etag))
      return MakeError(ErrorCode::kPreconditionFailed);
    return {};
  };
}

Status CheckCopyPreconditions(const HttpRequest& req, const storage::ObjectInfo& info) {
  int64_t mtime_s = info.mtime_ns / kNsPerSec;
  if (const auto* v = req.FindHeader("x-amz-copy-source-if-match")) {
    if (!EtagMatches(*v, info.etag)) return MakeError(ErrorCode::kPreconditionFailed);
  } else if (const auto* v2 = req.FindHeader("x-amz-copy-source-if-unmodified-since")) {
    auto t = ParseHttpDate(*v2);
    if (t && mtime_s > *t) return MakeError(ErrorCode::kPreconditionFailed);
  }
  if (const auto* v = req.FindHeader("x-amz-copy-source-if-none-match")) {
    if (EtagMatches(*v, info.etag)) return MakeError(ErrorCode::kPreconditionFailed);
  } else if (const auto* v2 = req.FindHeader("x-amz-copy-source-if-modified-since")) {
    auto t = ParseHttpDate(*v2);
    if (t && mtime_s <= *t) return MakeError(ErrorCode::kPreconditionFailed);
  }
  return {};
}

// "bucket/key" or "/bucket/key", URL-encoded, optionally "?versionId=<id>|null" (into `version`).
Result<std::pair<std::string, std::string>> ParseCopySource(std::string_view header,
                                                            storage::VersionSel* version) {
  std::string_view raw = header;
  auto q = raw.find('?');
  if (q != std::string_view::npos) {
    auto params = uri::ParseQuery(raw.substr(q + 1));
    if (!params) return MakeError(ErrorCode::kInvalidArgument, "Invalid copy source");
    for (const auto& [k, v] : *params) {
      if (k != "versionId") continue;
      auto id = ParseVersionId(v);
      if (!id.ok()) return id.error();
      *version = std::move(*id);
    }
    raw = raw.substr(0, q);
  }
  auto decoded = uri::Decode(raw);
  if (!decoded) return MakeError(ErrorCode::kInvalidArgument, "Invalid copy source encoding");
  std::string_view s = *decoded;
  if (!s.empty() && s.front() == '/') s.remove_prefix(1);
  auto slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= s.size())
    return MakeError(ErrorCode::kInvalidArgument,
                     "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  return std::make_pair(std::string(s.substr(0, slash)), std::string(s.substr(slash + 1)));
}

Result<int> ParseMaxKeys(const S3Api::Context& ctx, std::string_view name) {
  if (!ctx.Has(name)) return 1000;
  auto v = ParseInt(ctx.Q(name));
  if (!v || *v < 0)
    return MakeError(
        ErrorCode::kInvalidArgument,
        "Argument " + std::string(name) + " must be an integer between 0 and 2147483647");
  return static_cast<int>(std::min<int64_t>(*v, 1000));
}

}  // namespace

namespace {

// Subresources we do not implement: answered NotImplemented rather than acting on the
// bucket/object.
const char* UnsupportedSubresource(const S3Api::Context& ctx) {
  static const char* kUnsupported[] = {"policy",
                                       "lifecycle",
                                       "cors",
                                       "encryption",
                                       "replication",
                                       "website",
                                       "logging",
                                       "notification",
                                       "object-lock",
                                       "retention",
                                       "legal-hold",
                                       "accelerate",
                                       "requestPayment",
                                       "inventory",
                                       "analytics",
                                       "metrics",
                                       "torrent",
                                       "restore",
                                       "select",
                                       "ownershipControls",
                                       "publicAccessBlock",
                                       "intelligent-tiering"};
  for (const char* sub : kUnsupported) {
    if (!ctx.has_key && std::string_view(sub) == "policy") continue;  // s3/access.h
    if (!ctx.has_key && std::string_view(sub) == "encryption") continue;  // s3/sse.h
    if (ctx.Has(sub)) return sub;
  }
  return nullptr;
}

// No credentials of any kind: no Authorization header, no presigned query (V4 or V2).
bool IsAnonymous(const S3Api::Context& ctx) {
  if (ctx.req.FindHeader("authorization")) return false;
  for (const char* p :
       {"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "AWSAccessKeyId", "Signature"})
    if (ctx.Has(p)) return false;
  return true;
}

// The route of a request, named as MinIO names its APIs (metrics labels, request log). Decided
// before authentication so that rejected requests are counted under the API they tried. "unknown"
// means no route (405 MethodNotAllowed) or an unsupported subresource.
std::string_view ApiName(const S3Api::Context& ctx) {
  const std::string& m = ctx.req.method;
  // MinIO's ListenBucketNotification (on a bucket or the root); refused by RefuseUnimplemented.
  if (m == "GET" && !ctx.has_key && ctx.Has("events")) return "ListenNotification";
  if (ctx.bucket.empty()) return m == "GET" ? "ListBuckets" : "unknown";
  if (UnsupportedSubresource(ctx)) return "unknown";
  if (ctx.Has("tagging")) return TaggingApiName(m, ctx.has_key);
  if (ctx.Has("acl")) return AclApiName(m, ctx.has_key);
  if (!ctx.has_key && (ctx.Has("policy") || ctx.Has("policyStatus")))
    return PolicyApiName(m, ctx.Has("policyStatus"));
  if (!ctx.has_key && ctx.Has("encryption")) {
    if (m == "GET") return "GetBucketEncryption";
    if (m == "PUT") return "PutBucketEncryption";
    if (m == "DELETE") return "DeleteBucketEncryption";
    return "unknown";
  }
  if (!ctx.has_key) {
    if (m == "PUT") return ctx.Has("versioning") ? "PutBucketVersioning" : "PutBucket";
    if (m == "HEAD") return "HeadBucket";
    if (m == "DELETE") return "DeleteBucket";
    if (m == "POST" && ctx.Has("delete")) return "DeleteMultipleObjects";
    // A browser-form upload: the form, not the request, carries the signature (POST policy).
    if (m == "POST" &&
        ToLower(ctx.req.HeaderOr("content-type")).starts_with("multipart/form-data"))
      return "PostPolicyBucket";
    if (m == "GET") {
      if (ctx.Has("location")) return "GetBucketLocation";
      if (ctx.Has("versioning")) return "GetBucketVersioning";
      if (ctx.Has("uploads")) return "ListMultipartUploads";
      if (ctx.Has("versions")) return "ListObjectVersions";
      if (ctx.Q("list-type") == "2") return "ListObjectsV2";
      return "ListObjectsV1";
    }
    return "unknown";
  }
  bool copy = ctx.req.FindHeader("x-amz-copy-source") != nullptr;
  if (m == "GET") {
    if (ctx.Has("attributes")) return "GetObjectAttributes";
    return ctx.Has("uploadId") ? "ListObjectParts" : "GetObject";
  }
  if (m == "HEAD") return "HeadObject";
  if (m == "PUT") {
    if (ctx.Has("uploadId") || ctx.Has("partNumber"))
      return copy ? "CopyObjectPart" : "PutObjectPart";
    return copy ? "CopyObject" : "PutObject";
  }
  if (m == "POST") {
    if (ctx.Has("uploads")) return "NewMultipartUpload";
    if (ctx.Has("uploadId")) return "CompleteMultipartUpload";
    return "unknown";
  }
  if (m == "DELETE") return ctx.Has("uploadId") ? "AbortMultipartUpload" : "DeleteObject";
  return "unknown";
}

}  // namespace

void S3Api::Handle(const HttpRequest& req, BodySource& body, ResponseSink& sink) {
  char id[32];
  std::snprintf(id, sizeof(id), "%s%08llX", request_id_prefix_.c_str(),
                static_cast<unsigned long long>(++request_counter_));
  MeteredBody metered_body(body);
  MeteredSink metered_sink(sink);
  Context ctx{req, metered_body, metered_sink, id, {}, {}, false, {}, {}, {}};
  auto started = std::chrono::steady_clock::now();
  Dispatch(ctx);
  if (!ctx.api.empty()) {
    admin::RecordS3Request(ctx.api, metered_sink.status(),
                           !metered_sink.complete(req.method == "HEAD"), ctx.rdma_declined);
    if (metered_sink.head_at() != std::chrono::steady_clock::time_point{})
      admin::RecordS3Ttfb(ctx.api,
                          std::chrono::duration<double>(metered_sink.head_at() - started).count());
    admin::AddS3Traffic(admin::Transport::kTcp, metered_body.bytes(), metered_sink.bytes());
  }
  admin::LogRequest({ctx.request_id, req.remote_ip, req.method, req.target, ctx.api,
                     metered_sink.status(), metered_body.bytes(), metered_sink.bytes(),
                     std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - started)
                         .count()});
}

namespace {

constexpr std::string_view kReservedBucket = "minio";

// The front end only removes the chunked coding; a body under any other transfer coding (gzip,
// deflate, ...) would be stored still encoded, so it is refused as S3 does (501).
Status CheckTransferCodings(const HttpRequest& req) {
  for (const auto& [name, value] : req.headers) {
    if (name != "transfer-encoding") continue;
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = std::min(value.find(',', pos), value.size());
      std::string coding = ToLower(value.substr(pos, comma - pos));
      coding.erase(0, coding.find_first_not_of(" \t"));
      coding.erase(coding.find_last_not_of(" \t") + 1);
      if (!coding.empty() && coding != "chunked") {
        Error e = MakeError(ErrorCode::kNotImplemented);
        e.details.emplace_back("Header", "Transfer-Encoding");
        return e;
      }
      pos = comma + 1;
    }
  }
  return {};
}

// Every query parameter S3 defines is defined once. A repeated one is refused before anything
// reads it: policy conditions (s3:prefix, s3:versionid, ...) and the handlers must see one value,
// and a signature covers both copies, so "which copy wins" would split authorization from what
// is served.
Status RefuseRepeatedParameters(const std::vector<std::pair<std::string, std::string>>& query) {
  if (query.size() < 2) return {};
  std::vector<std::string_view> names;
  names.reserve(query.size());
  for (const auto& [k, v] : query) names.push_back(k);
  std::sort(names.begin(), names.end());
  auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice == names.end()) return {};
  const std::string name = Bounded(std::string(*twice), 64);
  Error e = MakeError(ErrorCode::kInvalidArgument,
                      "The query parameter '" + name + "' was specified more than once.");
  e.details.emplace_back("ArgumentName", name);
  return e;
}

}  // namespace

void S3Api::Dispatch(Context& ctx) {
  const auto& req = ctx.req;
  if (auto st = CheckTransferCodings(req); !st.ok()) return SendError(ctx, st.error());
  // Health and metrics endpoints authenticate (or not) on their own and are not S3 requests.
  if (req.raw_path.starts_with("/minio/") && ServeOps(req, ctx.sink, ctx.request_id, opts_.ops)) {
    ctx.api = {};
    return;
  }
  // The admin API (root credentials only) is not an S3 request either.
  if (req.raw_path.starts_with("/minio/admin/") &&
      ServeAdmin(req, ctx.sink, ctx.request_id,
                 AdminOptions{opts_.access_key, opts_.secret_key, opts_.heal, opts_.rdma,
                              iam_.get()},
                 ctx.raw_body)) {
    ctx.api = {};
    return;
  }

  auto query = uri::ParseQuery(req.raw_query);
  if (!query)
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument, "malformed query string"));
  ctx.query = std::move(*query);
  if (auto st = RefuseRepeatedParameters(ctx.query); !st.ok()) return SendError(ctx, st.error());
  auto path = uri::Decode(req.raw_path);
  if (!path || path->empty() || (*path)[0] != '/')
    return SendError(ctx, MakeError(ErrorCode::kInvalidRequest, "malformed request path"));
  // A path that is not UTF-8 once decoded names no bucket or key: AWS refuses it before
  // authentication, whoever asks.
  if (!IsValidUtf8(*path)) return SendError(ctx, MakeError(ErrorCode::kInvalidURI));

  // Virtual-host style: bucket.<MINIO_DOMAIN>.
  std::string host = ToLower(req.HeaderOr("host"));
  if (auto colon = host.rfind(':');
      colon != std::string::npos && host.find(']') == std::string::npos)
    host.resize(colon);
  bool vhost = false;
  for (const auto& domain : opts_.domains) {
    if (host.size() > domain.size() + 1 && host.ends_with("." + domain)) {
      ctx.bucket = host.substr(0, host.size() - domain.size() - 1);
      std::string_view rest = std::string_view(*path).substr(1);
      ctx.has_key = !rest.empty();
      ctx.key = std::string(rest);
      vhost = true;
      break;
    }
  }
  if (!vhost) {
    std::string_view rest = std::string_view(*path).substr(1);
    auto slash = rest.find('/');
    ctx.bucket = std::string(rest.substr(0, slash));
    if (ctx.bucket.empty() && !rest.empty()) {
      // "//etc/passwd": an empty bucket segment, not the service root.
      return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
    }
    if (slash != std::string_view::npos) {
      ctx.key = std::string(rest.substr(slash + 1));
      ctx.has_key = !ctx.key.empty();
    }
  }

  ctx.api = ApiName(ctx);

  // "minio" is reserved as in MinIO: its paths belong to the server's own endpoints (health,
  // metrics, admin), so a bucket of that name could be created but not all its keys reached.
  // The system bucket (users, policies) is as unreachable through S3.
  if (ctx.bucket == kReservedBucket || ctx.bucket == iam::kSystemBucket)
    return SendError(ctx, MakeError(ErrorCode::kAllAccessDisabled));

  if (ctx.api == "PostPolicyBucket") return PostObject(ctx);

  auto auth = VerifyRequest(
      req,
      [this, &req](std::string_view ak) -> std::optional<std::string> {
        if (ak == opts_.access_key) return opts_.secret_key;
        return iam_->SecretFor(ak, req.remote_ip);
      },
      static_cast<int64_t>(std::time(nullptr)), vhost ? std::string_view(ctx.bucket) : "");
  if (!auth.ok()) {
    if (!IsAnonymous(ctx)) return SendError(ctx, auth.error());
    // S3 over RDMA steers server reads and writes into the token's memory: the token (and the
    // agent asking for it) must be signed, so an unsigned request cannot carry them.
    for (const char* h : {"x-amz-rdma-token", "x-amz-rdma-agent"}) {
      if (!req.FindHeader(h)) continue;
      Error e = MakeError(ErrorCode::kAccessDenied,
                          "There were headers present in the request which were not signed");
      e.details.emplace_back("HeadersNotSigned", h);
      return SendError(ctx, e);
    }
    // AWS tells an anonymous caller that a bucket does not exist (404) before refusing access;
    // an existing bucket's policy and ACL decide what the caller may do (Authorized below).
    if (!IsValidBucketName(ctx.bucket)) return SendError(ctx, auth.error());
    auto info = store_.GetBucketInfo(ctx.bucket);
    if (!info.ok()) {
      if (info.error().code == ErrorCode::kNoSuchBucket) return SendError(ctx, info.error());
      return SendError(ctx, auth.error());
    }
    ctx.caller = Caller{Caller::Kind::kAnonymous, {}};
    // Before any other check, as AWS: an anonymous caller learns nothing more than "denied".
    if (!Authorized(ctx)) return;
  } else {
    ctx.auth = std::move(auth).value();
    ctx.caller = Caller{ctx.auth.access_key == opts_.access_key ? Caller::Kind::kRoot
                                                                : Caller::Kind::kUser,
                        ctx.auth.access_key};
  }

  if (!ctx.bucket.empty() && !IsValidBucketName(ctx.bucket)) {
    // An existing bucket is never invalid, so name rules answer every operation.
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  }
  if (ctx.has_key) {
    auto st = ValidateObjectKey(ctx.key);
    if (!st.ok()) return SendError(ctx, st.error());
  }
  if (const char* sub = UnsupportedSubresource(ctx); sub && !ctx.bucket.empty()) {
    return SendError(
        ctx, MakeError(ErrorCode::kNotImplemented,
                       std::string("The ") + sub + " subresource is not implemented by rdmastor."));
  }
  if (!ctx.bucket.empty() && ctx.Has("versionId")) {
    auto v = ParseVersionId(ctx.Q("versionId"));
    if (!v.ok()) return SendError(ctx, v.error());
    ctx.version = std::move(*v);
  }
  if (!ctx.caller.anonymous() && !Authorized(ctx)) return;
  if (auto st = RefuseUnimplemented(ctx.api, req); !st.ok()) return SendError(ctx, st.error());
  using Handler = void (*)(S3Api&, Context&);
  static const std::pair<std::string_view, Handler> kRoutes[] = {
      {"ListBuckets", [](S3Api& a, Context& c) { a.ListBuckets(c); }},
      {"PutBucket", [](S3Api& a, Context& c) { a.CreateBucket(c); }},
      {"HeadBucket", [](S3Api& a, Context& c) { a.HeadBucket(c); }},
      {"DeleteBucket", [](S3Api& a, Context& c) { a.DeleteBucket(c); }},
      {"DeleteMultipleObjects", [](S3Api& a, Context& c) { a.DeleteObjects(c); }},
      {"GetBucketLocation", [](S3Api& a, Context& c) { a.GetBucketLocation(c); }},
      {"GetBucketVersioning", [](S3Api& a, Context& c) { a.GetBucketVersioning(c); }},
      {"PutBucketVersioning", [](S3Api& a, Context& c) { a.PutBucketVersioning(c); }},
      {"ListMultipartUploads", [](S3Api& a, Context& c) { a.ListMultipartUploads(c); }},
      {"ListObjectVersions", [](S3Api& a, Context& c) { a.ListObjectVersions(c); }},
      {"ListObjectsV2", [](S3Api& a, Context& c) { a.ListObjectsV2(c); }},
      {"ListObjectsV1", [](S3Api& a, Context& c) { a.ListObjectsV1(c); }},
      {"ListObjectParts", [](S3Api& a, Context& c) { a.ListParts(c); }},
      {"GetObject", [](S3Api& a, Context& c) { a.GetObject(c, false); }},
      {"HeadObject", [](S3Api& a, Context& c) { a.GetObject(c, true); }},
      {"GetObjectAttributes", [](S3Api& a, Context& c) { a.GetObjectAttributes(c); }},
      {"CopyObjectPart", [](S3Api& a, Context& c) { a.UploadPartCopy(c); }},
      {"PutObjectPart", [](S3Api& a, Context& c) { a.UploadPart(c); }},
      {"CopyObject", [](S3Api& a, Context& c) { a.CopyObject(c); }},
      {"PutObject", [](S3Api& a, Context& c) { a.PutObject(c); }},
      {"NewMultipartUpload", [](S3Api& a, Context& c) { a.CreateMultipartUpload(c); }},
      {"CompleteMultipartUpload", [](S3Api& a, Context& c) { a.CompleteMultipartUpload(c); }},
      {"AbortMultipartUpload", [](S3Api& a, Context& c) { a.AbortMultipartUpload(c); }},
      {"DeleteObject", [](S3Api& a, Context& c) { a.DeleteObject(c); }},
      {"PutObjectTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"GetObjectTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"DeleteObjectTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"PutBucketTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"GetBucketTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"DeleteBucketTagging", [](S3Api& a, Context& c) { a.Tagging(c); }},
      {"PutBucketPolicy", [](S3Api& a, Context& c) { a.BucketPolicy(c); }},
      {"GetBucketPolicy", [](S3Api& a, Context& c) { a.BucketPolicy(c); }},
      {"DeleteBucketPolicy", [](S3Api& a, Context& c) { a.BucketPolicy(c); }},
      {"GetBucketPolicyStatus", [](S3Api& a, Context& c) { a.BucketPolicy(c); }},
      {"GetBucketEncryption", [](S3Api& a, Context& c) { a.BucketEncryption(c); }},
      {"PutBucketEncryption", [](S3Api& a, Context& c) { a.BucketEncryption(c); }},
      {"DeleteBucketEncryption", [](S3Api& a, Context& c) { a.BucketEncryption(c); }},
      {"PutBucketAcl", [](S3Api& a, Context& c) { a.Acl(c); }},
      {"GetBucketAcl", [](S3Api& a, Context& c) { a.Acl(c); }},
      {"PutObjectAcl", [](S3Api& a, Context& c) { a.Acl(c); }},
      {"GetObjectAcl", [](S3Api& a, Context& c) { a.Acl(c); }},
  };
  for (const auto& [name, handler] : kRoutes) {
    if (ctx.api == name) return handler(*this, ctx);
  }
  return SendError(ctx, MakeError(ErrorCode::kMethodNotAllowed));
}

// ?tagging on a bucket or an object (s3/tagging.h).
void S3Api::Tagging(Context& ctx) {
  SendSubresourceReply(ctx, HandleTagging(store_, ctx.api, ctx.bucket, ctx.key, ctx.version,
                                           [&] { return ReadXmlBody(ctx); }),
                       store_);
}

// ?encryption on a bucket: the default encryption of new objects (SSE-S3 only: SSE-C cannot be a
// default, aws:kms needs a KMS).
void S3Api::BucketEncryption(Context& ctx) {
  if (ctx.api == "GetBucketEncryption") {
    auto algo = store_.GetBucketInfo(ctx.bucket);
    if (!algo.ok()) return SendError(ctx, algo.error());
    if (algo->encryption.empty())
      return SendError(ctx, MakeError(ErrorCode::kServerSideEncryptionConfigurationNotFound));
    return SendXml(ctx, EncryptionConfigXml(algo->encryption));
  }
  if (ctx.api == "DeleteBucketEncryption") {
    if (auto st = store_.SetBucketEncryption(ctx.bucket, ""); !st.ok())
      return SendError(ctx, st.error());
    return SendEmpty(ctx, 204);
  }
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return SendError(ctx, body.error());
  auto algo = ParseEncryptionConfig(*body);
  if (!algo.ok()) return SendError(ctx, algo.error());
  if (!opts_.sse.ring)
    return SendError(ctx, MakeError(ErrorCode::kNotImplemented,
                                    "Server side encryption specified but KMS is not configured: "
                                    "set MINIO_KMS_SECRET_KEY to enable SSE-S3."));
  if (auto st = store_.SetBucketEncryption(ctx.bucket, *algo); !st.ok())
    return SendError(ctx, st.error());
  SendEmpty(ctx, 200);
}

// ?policy and ?policyStatus on a bucket (s3/access.h).
void S3Api::BucketPolicy(Context& ctx) {
  auto reply =
      HandleBucketPolicy(*iam_, store_, ctx.api, ctx.bucket, [&] { return ReadXmlBody(ctx); });
  if (!reply.ok()) return SendError(ctx, reply.error());
  if (reply->body.empty()) return SendEmpty(ctx, reply->status);
  auto head = BaseHead(ctx.request_id, reply->status);
  SendBody(ctx.sink, std::move(head), reply->body, reply->content_type);
}

// ?acl on a bucket or an object (s3/acl.h).
void S3Api::Acl(Context& ctx) {
  SendSubresourceReply(ctx,
                       HandleAcl(*iam_, store_, ctx.api, ctx.bucket, ctx.key, ctx.version,
                                 ctx.req, [&] { return ReadXmlBody(ctx); }),
                       store_);
}

bool S3Api::Authorized(Context& ctx) {
  const bool copy = ctx.api == "CopyObject" || ctx.api == "CopyObjectPart";
  std::optional<std::pair<std::string, std::string>> source;
  storage::VersionSel src_version;
  if (copy) {
    auto src = ParseCopySource(ctx.req.HeaderOr("x-amz-copy-source"), &src_version);
    if (src.ok()) source = std::move(*src);
    // The system bucket cannot be read through a copy either, not even by root.
    if (source && source->first == iam::kSystemBucket) {
      SendError(ctx, MakeError(ErrorCode::kAccessDenied));
      return false;
    }
  }
  if (ctx.caller.root()) return true;
  // DeleteObjects: s3:DeleteObject is checked for each key it names (DeleteObjects).
  if (ctx.api == "DeleteMultipleObjects") return true;
  const bool object_action = ctx.has_key && !iam::IsBucketAction(iam::ActionFor(ctx.api));
  // An anonymous request is authorized before Dispatch parses its versionId: parsed here (a
  // malformed one is refused as for anyone; it tells nothing about the bucket).
  storage::VersionSel version = ctx.version;
  if (!version && object_action && ctx.Has("versionId")) {
    auto v = ParseVersionId(ctx.Q("versionId"));
    if (!v.ok()) {
      SendError(ctx, v.error());
      return false;
    }
    version = std::move(*v);
  }
  std::string_view action = iam::ActionFor(ctx.api);
  // A request naming a version needs the ...Version action (s3:GetObjectVersion, ...).
  if (object_action && version) action = iam::VersionAction(action);
  auto st = Allowed(ctx, action, object_action ? ctx.key : std::string(), {}, version);
  // As AWS: a write that sets the new object's ACL or tags also needs the actions that set them.
  if (st.ok() && (ctx.api == "PutObject" || ctx.api == "CopyObject" ||
                  ctx.api == "NewMultipartUpload" || ctx.api == "PostPolicyBucket")) {
    // An ACL that grants to others than the owners (public-read, public-read-write,
    // authenticated-read, or explicit grants) needs s3:PutObjectAcl; private, bucket-owner-* and
    // the other canned ACLs do not (AWS answers them with s3:PutObject alone).
    bool grants_others = false, tags = false;
    for (const auto& [name, value] : ctx.form ? *ctx.form : ctx.req.headers) {
      const std::string acl = name == "x-amz-acl" ? ToLower(value) : std::string();
      grants_others = grants_others || name.starts_with("x-amz-grant-") ||
                      acl == "public-read" || acl == "public-read-write" ||
                      acl == "authenticated-read";
      tags = tags || name.starts_with("x-amz-tagging");
    }
    if (grants_others) st = Allowed(ctx, "s3:PutObjectAcl", ctx.key, {}, {});
    if (st.ok() && tags) {
      // A copy that keeps its source's tags (the default directive) sets none.
      const bool copies_tags =
          ctx.api == "CopyObject" &&
          ToLower(ctx.req.HeaderOr("x-amz-tagging-directive", "COPY")) != "replace";
      if (!copies_tags) st = Allowed(ctx, "s3:PutObjectTagging", ctx.key, {}, {});
    }
  }
  // A copy reads its source: s3:GetObject (s3:GetObjectVersion for a named version) there too.
  if (st.ok() && source) {
    st = Allowed(ctx, src_version ? "s3:GetObjectVersion" : "s3:GetObject", source->second,
                 source->first, src_version);
  }
  if (!st.ok()) SendError(ctx, st.error());
  return st.ok();
}

Status S3Api::Allowed(Context& ctx, std::string_view action, const std::string& key,
                      const std::string& bucket, const storage::VersionSel& version) {
  if (ctx.caller.root()) return {};
  const auto conditions = ConditionsFor(ctx.req, ctx.query, opts_.secure_transport, ctx.caller,
                                        ctx.caller.anonymous() ? nullptr : &ctx.auth, ctx.form);
  const std::string& in_bucket = bucket.empty() ? ctx.bucket : bucket;
  // The ACL of the version read: a missing object (or version, or a delete marker) grants nothing.
  auto object_acl = [&]() {
    auto info = version ? store_.StatObjectVersion(in_bucket, key, *version)
                        : store_.StatObject(in_bucket, key);
    return info.ok() ? iam::AclFromStored(info->acl) : iam::CannedAcl::kPrivate;
  };
  return Authorize(*iam_, ctx.caller, action, in_bucket, key, conditions, object_acl);
}

// ---------------------------------------------------------------------------------------------
// Service and bucket operations

void S3Api::ListBuckets(Context& ctx) {
  // Pages as current SDKs ask for them: max-buckets, continuation-token (the base64 of the last
  // name listed: stateless, opaque to clients), prefix, bucket-region (every bucket is in ours).
  size_t max_buckets = SIZE_MAX;
  if (ctx.Has("max-buckets")) {
    auto v = ParseInt(ctx.Q("max-buckets"));
    if (!v || *v < 1 || *v > 10000) {
      Error e = MakeError(ErrorCode::kInvalidArgument,
                          "max-buckets must be an integer between 1 and 10000");
      e.details.emplace_back("ArgumentName", "max-buckets");
      return SendError(ctx, e);
    }
    max_buckets = static_cast<size_t>(*v);
  }
  std::string after;
  if (!ctx.Q("continuation-token").empty()) {
    auto decoded = hash::Base64Decode(ctx.Q("continuation-token"));
    if (!decoded)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "The continuation token provided is incorrect"));
    after = *decoded;
  }
  const std::string prefix = ctx.Q("prefix");
  auto buckets = store_.ListBuckets();
  if (!buckets.ok()) return SendError(ctx, buckets.error());
  std::erase_if(*buckets, [](const auto& b) { return b.name == iam::kSystemBucket; });
  std::sort(buckets->begin(), buckets->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  ListBucketsParams p;
  if (ctx.Has("prefix")) p.prefix = prefix;
  p.region = opts_.region;
  std::vector<storage::BucketInfo> page;
  const bool other_region = ctx.Has("bucket-region") && ctx.Q("bucket-region") != opts_.region;
  for (auto& b : *buckets) {
    if (other_region || b.name <= after || !b.name.starts_with(prefix)) continue;
    if (page.size() == max_buckets) {
      p.continuation_token = hash::Base64Encode(page.back().name);
      break;
    }
    page.push_back(std::move(b));
  }
  SendXml(ctx, ListBucketsXml(page, Owner{}, p));
}

void S3Api::CreateBucket(Context& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return SendError(ctx, body.error());
  auto location = ParseCreateBucketXml(*body);
  if (!location.ok()) return SendError(ctx, location.error());
  if (opts_.region_configured && !location->empty() && *location != opts_.region) {
    return SendError(ctx, MakeError(ErrorCode::kIllegalLocationConstraint,
                                    "The " + *location +
                                        " location constraint is incompatible for the region "
                                        "specific endpoint this request was sent to."));
  }
  auto acl = RequestedAcl(ctx.req);
  if (!acl.ok()) return SendError(ctx, acl.error());
  auto st = store_.MakeBucket(ctx.bucket);
  if (!st.ok()) return SendError(ctx, st.error());
  // A policy left by an earlier bucket of the same name (ForgetBucket is best effort) must not
  // apply to this one: removed now, or the bucket is not created.
  if (auto gone = iam_->DeleteBucketPolicy(ctx.bucket); !gone.ok()) {
    spdlog::warn("{}: bucket {} not created: an earlier policy could not be removed: {}",
                 ctx.request_id, ctx.bucket, gone.error().message);
    (void)store_.DeleteBucket(ctx.bucket);
    return SendError(ctx, gone.error());
  }
  // The owner ("" for root) and the ACL, written for every new bucket so that no record left by
  // an earlier bucket of the same name (ForgetBucket is best effort) can apply to this one.
  const iam::BucketAccess access{ctx.caller.root() ? std::string() : ctx.caller.access_key,
                                 std::string(iam::AclName(acl->value_or(iam::CannedAcl::kPrivate)))};
  if (auto rec = iam_->PutBucketAccess(ctx.bucket, access); !rec.ok()) {
    spdlog::warn("{}: bucket {} created but its owner and ACL not recorded: {}", ctx.request_id,
                 ctx.bucket, rec.error().message);
    // The bucket exists and is private; a client that asked for more must not believe it got it.
    if (access.acl != "private") return SendError(ctx, rec.error());
  }
  SendEmpty(ctx, 200, {{"Location", "/" + ctx.bucket}});
}

void S3Api::HeadBucket(Context& ctx) {
  auto info = store_.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return SendError(ctx, info.error());
  SendEmpty(ctx, 200, {{"x-amz-bucket-region", opts_.region}});
}

void S3Api::DeleteBucket(Context& ctx) {
  auto st = store_.DeleteBucket(ctx.bucket);
  if (!st.ok()) return SendError(ctx, st.error());
  iam_->ForgetBucket(ctx.bucket);  // its policy and ACL
  SendEmpty(ctx, 204);
}

void S3Api::GetBucketLocation(Context& ctx) {
  auto info = store_.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return SendError(ctx, info.error());
  SendXml(ctx, LocationXml(opts_.region));
}

void S3Api::GetBucketVersioning(Context& ctx) {
  auto info = store_.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return SendError(ctx, info.error());
  SendXml(ctx, VersioningConfigurationXml(info->versioning));
}

void S3Api::PutBucketVersioning(Context& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return SendError(ctx, body.error());
  auto st = s3::PutBucketVersioning(store_, ctx.bucket, *body,
                                    ctx.req.FindHeader("x-amz-mfa") != nullptr);
  if (!st.ok()) return SendError(ctx, st.error());
  SendEmpty(ctx, 200);
}

void S3Api::ListObjectsV1(Context& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return SendError(ctx, max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "Invalid Encoding Method specified in Request"));
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), ctx.Q("marker"), *max_keys};
  auto res = store_.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return SendError(ctx, res.error());
  ListV1Params p{ctx.bucket, lo.prefix, lo.delimiter, lo.start_after, *max_keys, encoding == "url"};
  SendXml(ctx, ListObjectsV1Xml(p, *res, Owner{}));
}

void S3Api::ListObjectsV2(Context& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return SendError(ctx, max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "Invalid Encoding Method specified in Request"));
  std::string token = ctx.Q("continuation-token");
  std::string start_after = ctx.Q("start-after");
  std::string marker = start_after;
  if (!token.empty()) {
    // The token is the base64 of the last key returned: opaque to clients, stateless for us.
    // As AWS, a token replaces start-after (minio-py sends both on later pages, start-after set
    // to the token text): filtering by start-after too would hide every key sorting below it.
    // An empty token is the first page.
    auto decoded = hash::Base64Decode(token);
    if (!decoded)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "The continuation token provided is incorrect"));
    marker = *decoded;
  }
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), marker, *max_keys};
  auto res = store_.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return SendError(ctx, res.error());
  ListV2Params p;
  p.bucket = ctx.bucket;
  p.prefix = lo.prefix;
  p.delimiter = lo.delimiter;
  p.start_after = start_after;
  p.continuation_token = token;
  p.continuation_token_sent = ctx.Has("continuation-token");
  p.max_keys = *max_keys;
  p.encode_url = encoding == "url";
  p.fetch_owner = ctx.Q("fetch-owner") == "true";
  if (res->truncated) p.next_continuation_token = hash::Base64Encode(res->next_marker);
  SendXml(ctx, ListObjectsV2Xml(p, *res, Owner{}));
}

void S3Api::ListObjectVersions(Context& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return SendError(ctx, max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "Invalid Encoding Method specified in Request"));
  ListVersionsQuery q{ctx.Q("prefix"),       ctx.Q("delimiter"), ctx.Q("key-marker"),
                      ctx.Q("version-id-marker"), ctx.Has("version-id-marker"), *max_keys,
                      encoding == "url"};
  auto xml = ListVersionsPage(store_, ctx.bucket, q);
  if (!xml.ok()) return SendError(ctx, xml.error());
  SendXml(ctx, *xml);
}

void S3Api::ListMultipartUploads(Context& ctx) {
  auto max_uploads = ParseMaxKeys(ctx, "max-uploads");
  if (!max_uploads.ok()) return SendError(ctx, max_uploads.error());
  ListUploadsParams p;
  p.bucket = ctx.bucket;
  p.prefix = ctx.Q("prefix");
  p.delimiter = ctx.Q("delimiter");
  p.key_marker = ctx.Q("key-marker");
  p.upload_id_marker = ctx.Q("upload-id-marker");
  p.max_uploads = *max_uploads;
  p.encode_url = ctx.Q("encoding-type") == "url";
  auto uploads = store_.ListMultipartUploads(ctx.bucket, p.prefix);
  if (!uploads.ok()) return SendError(ctx, uploads.error());
  SendXml(ctx, ListMultipartUploadsXml(p, *uploads, Owner{}));  // pages and filters
}

void S3Api::DeleteObjects(Context& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return SendError(ctx, body.error());
  auto parsed = ParseDeleteXml(*body);
  if (!parsed.ok()) return SendError(ctx, parsed.error());
  auto bucket = store_.GetBucketInfo(ctx.bucket);
  if (!bucket.ok()) return SendError(ctx, bucket.error());
  std::vector<DeleteOutcome> outcomes;
  for (const auto& entry : parsed->objects) {
    DeleteOutcome out;
    out.key = entry.key;
    out.version_id = entry.version_id;
    Status st = ValidateObjectKey(entry.key);
    storage::VersionSel version;
    if (st.ok() && !entry.version_id.empty()) {
      // A malformed id names no version (AWS answers NoSuchVersion in the entry).
      if (auto v = ParseVersionId(entry.version_id); v.ok())
        version = std::move(*v);
      else
        st = MakeError(ErrorCode::kNoSuchVersion);
    }
    // Each key on its own; a named version needs s3:DeleteObjectVersion.
    if (st.ok())
      st = Allowed(ctx, version ? "s3:DeleteObjectVersion" : "s3:DeleteObject", entry.key);
    storage::DeleteResult done;
    if (st.ok()) {
      auto r = store_.DeleteObjectVersion(ctx.bucket, entry.key, version);
      if (r.ok()) done = *r; else st = r.error();
    }
    if (st.ok() || st.error().code == ErrorCode::kNoSuchKey) {
      out.deleted = true;  // deleting what is not there succeeds
      out.delete_marker = st.ok() && done.delete_marker;
      if (st.ok() && done.created_marker)
        out.delete_marker_version_id = done.version_id.empty() ? "null" : done.version_id;
    } else if (st.error().code == ErrorCode::kNoSuchVersion) {
      out.code = std::string(GetErrorInfo(st.error().code).code);
      out.message = std::string(GetErrorInfo(st.error().code).message);
    } else {
      const auto& info = GetErrorInfo(st.error().code);
      out.code = std::string(info.code);
      out.message = st.error().message.empty() ? std::string(info.message) : st.error().message;
    }
    outcomes.push_back(std::move(out));
  }
  SendXml(ctx, DeleteResultXml(outcomes, parsed->quiet));
}

// ---------------------------------------------------------------------------------------------
// Object operations

void S3Api::PutObject(Context& ctx) {
  auto opts = ObjectOptionsFromHeaders(ctx.req);
  if (!opts.ok()) return SendError(ctx, opts.error());
  auto rdma = RdmaPutBodyFor(ctx.req, ctx.auth, opts_.rdma);
  if (!rdma.ok()) return SendError(ctx, rdma.error());
  auto sse = WriteEncryptionOf(ctx, store_, opts_.sse);
  if (!sse.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), sse.error()));
  std::optional<crypto::Key> object_key;
  if (sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(opts_.sse, *sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), nk.error()));
    object_key = nk->key;
    opts->internal = std::move(nk->internal);
  }
  auto up = PrepareUpload(ctx, rdma->get(), ChecksumRule{.default_checksum = true});
  if (!up.ok()) return SendError(ctx, up.error());
  StoredBody stored(*up->digest, object_key);
  opts->size = stored.Size(up->size);
  opts->precondition = ConditionalWrite(ctx.req);
  auto info = store_.PutObject(ctx.bucket, ctx.key, *stored.body, *opts,
                               [&](uint64_t) -> Result<storage::CommitInfo> {
                                 auto ci = FinishUpload(ctx, *up);
                                 if (ci.ok()) ci->etag = WriteEtag(sse->kind, object_key, ci->etag);
                                 return ci;
                               });
  if (!info.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), info.error()));
  HeaderList extra{{"ETag", Quote(info->etag)}};
  AddSseHeaders(extra, sse->kind, *sse);
  if (!info->version_id.empty()) extra.emplace_back("x-amz-version-id", info->version_id);
  for (const auto& [algo, value] : info->checksums)
    extra.emplace_back("x-amz-checksum-" + algo, value);
  if (!info->checksums.empty()) extra.emplace_back("x-amz-checksum-type", "FULL_OBJECT");
  AddRdmaUploadReply(rdma->get(), extra, stored.enc ? stored.enc->plaintext_bytes() : 0);
  SendEmpty(ctx, 200, extra);
}

namespace {

// Counts the file part's bytes and stops the upload as soon as it exceeds what the policy (or
// S3's single-upload limit) allows, so an oversized file is not read to its end.
class LimitedSource : public BodySource {
 public:
  LimitedSource(BodySource& in, uint64_t max) : in_(in), max_(max) {}
  Result<size_t> Read(char* buf, size_t len) override {
    auto n = in_.Read(buf, len);
    if (!n.ok()) return n;
    bytes_ += *n;
    if (bytes_ > max_) {
      Error e = MakeError(ErrorCode::kEntityTooLarge,
                          "Your proposed upload exceeds the maximum allowed size");
      e.details.emplace_back("MaxSizeAllowed", std::to_string(max_));
      return e;
    }
    return n;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  BodySource& in_;
  uint64_t max_;
  uint64_t bytes_ = 0;
};

// success_action_redirect: an absolute http(s) URL without blanks or control characters (it
// becomes a Location header); anything else is ignored, as S3 ignores a redirect it cannot use.
bool UsableRedirect(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) return false;
  return std::none_of(url.begin(), url.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
}

}  // namespace

void S3Api::PostObject(Context& ctx) {
  // The form fields before the file, part headers included (S3's limit on them is of this size).
  constexpr size_t kMaxPreFileBytes = 20 * 1024;
  if (!IsValidBucketName(ctx.bucket))
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  if (ctx.has_key) return SendError(ctx, MakeError(ErrorCode::kMethodNotAllowed));
  auto boundary = FormBoundary(ctx.req.HeaderOr("content-type"));
  if (!boundary.ok()) return SendError(ctx, boundary.error());
  FormReader form(ctx.raw_body, *boundary);
  std::map<std::string, std::string> fields;  // lower-case names
  std::optional<FormReader::Part> file;
  size_t budget = kMaxPreFileBytes;
  for (;;) {
    auto part = form.Next(budget);
    if (!part.ok()) return SendError(ctx, part.error());
    if (!*part) break;
    std::string name = ToLower((*part)->name);
    // S3 takes the first file part as the upload and ignores every field after it.
    if (name == "file") {
      file = std::move(**part);
      break;
    }
    auto value = form.ReadValue(budget);
    if (!value.ok()) return SendError(ctx, value.error());
    if (!fields.emplace(name, std::move(*value)).second) {
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "POST form field '" + name + "' appears more than once."));
    }
  }

  auto now = static_cast<int64_t>(std::time(nullptr));
  auto ak = VerifyPostSignature(fields, [&](std::string_view k) -> std::optional<std::string> {
    if (k == opts_.access_key) return opts_.secret_key;
    return iam_->SecretFor(k, ctx.req.remote_ip);
  });
  if (!ak.ok()) return SendError(ctx, ak.error());
  auto policy = ParsePostPolicy(fields["policy"]);
  if (!policy.ok()) return SendError(ctx, policy.error());
  if (!file) {
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "POST requires exactly one file upload per request."));
  }
  auto key_field = fields.find("key");
  if (key_field == fields.end()) {
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "Bucket POST must contain a field named 'key'.  If it is "
                                    "specified, please check the order of the fields."));
  }
  // ${filename}: the name of the file the browser sent.
  const std::string key_as_sent = key_field->second;
  std::string key = key_as_sent;
  const std::string filename = file->filename.value_or("");
  for (size_t at = key.find("${filename}"); at != std::string::npos;
       at = key.find("${filename}", at + filename.size()))
    key.replace(at, 11, filename);
  key_field->second = key;
  fields["bucket"] = ctx.bucket;
  if (auto st = CheckPostPolicy(*policy, fields, now, key_as_sent); !st.ok())
    return SendError(ctx, st.error());
  if (auto st = ValidateObjectKey(key); !st.ok()) return SendError(ctx, st.error());
  ctx.key = key;
  ctx.has_key = true;
  ctx.caller = Caller{*ak == opts_.access_key ? Caller::Kind::kRoot : Caller::Kind::kUser, *ak};
  // The form's fields are the upload's headers, for the policy conditions (s3:x-amz-acl, ...) as
  // for what is stored: the POST's own HTTP headers are not signed and decide nothing.
  HttpRequest as_put;
  as_put.method = "PUT";
  for (const auto& [name, value] : fields) {
    if (name == "file" || name == "policy" || name == "key" || name == "bucket") continue;
    if (name == "tagging") continue;  // an XML document, applied below
    // The canned ACL is the "acl" field; a field named x-amz-acl stores nothing, so it decides
    // nothing either.
    if (name == "x-amz-acl" || name == "x-amz-tagging") continue;
    as_put.headers.emplace_back(name == "acl" ? "x-amz-acl" : name, value);
  }
  // Tags set by the upload need s3:PutObjectTagging (Authorized).
  if (fields.contains("tagging")) as_put.headers.emplace_back("x-amz-tagging", "");
  ctx.form = &as_put.headers;
  if (!Authorized(ctx)) return;

  // Fields that become response headers on GET: a header on the wire can carry neither control
  // characters nor (in its name) separators, but a form field can, so they are refused here.
  auto header_safe = [](std::string_view v) {
    return std::none_of(v.begin(), v.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return (u < 0x20 && c != '\t') || u == 0x7f;
    });
  };
  auto token = [](std::string_view n) {
    return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
  };
  for (const auto& [name, value] : fields) {
    bool becomes_header =
        name == "content-type" || name.starts_with("x-amz-meta-") ||
        std::find(std::begin(kStoredHeaders), std::end(kStoredHeaders), name) !=
            std::end(kStoredHeaders);
    if (becomes_header && (!token(name) || !header_safe(value))) {
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "POST form field '" + Bounded(name, 64) +
                                          "' is not a valid HTTP header name or value."));
    }
  }

  // What PutObject refuses (encryption, storage classes, Object Lock, ...) is refused here too,
  // never silently dropped.
  if (auto st = RefuseUnimplemented("PutObject", as_put); !st.ok())
    return SendError(ctx, st.error());
  // Encryption fields as PutObject's headers (SSE-S3, SSE-C); none: the bucket's default decides.
  auto bucket_default = store_.BucketEncryption(ctx.bucket);
  if (!bucket_default.ok()) return SendError(ctx, bucket_default.error());
  auto sse = ParseSseWrite(as_put, opts_.sse, *bucket_default);
  if (!sse.ok()) return SendError(ctx, sse.error());

  storage::PutOptions opts;
  opts.content_type = fields.count("content-type") ? fields["content-type"] : "binary/octet-stream";
  size_t meta_bytes = 0;
  for (const auto& [name, value] : fields) {
    if (name.starts_with("x-amz-meta-")) {
      meta_bytes += name.size() - 11 + value.size();
      opts.user_metadata[name] = value;
    }
  }
  if (meta_bytes > kMaxUserMetadata) return SendError(ctx, MakeError(ErrorCode::kMetadataTooLarge));
  for (auto stored : kStoredHeaders) {
    if (auto it = fields.find(std::string(stored)); it != fields.end())
      opts.user_metadata[std::string(stored)] = it->second;
  }
  if (auto it = fields.find("acl"); it != fields.end()) {  // a canned ACL, as x-amz-acl
    auto acl = iam::ParseCannedAcl(it->second);
    if (!acl.ok()) return SendError(ctx, acl.error());
    opts.acl = iam::StoredAcl(*acl);
  }
  if (auto it = fields.find("tagging"); it != fields.end()) {  // a <Tagging> document, as AWS
    auto tags = ParseTaggingXml(it->second, /*object=*/true);
    if (!tags.ok()) return SendError(ctx, tags.error());
    opts.tags = std::move(*tags);
  }

  uint64_t max_size = kMaxPutSize;
  int64_t min_size = 0;
  if (policy->length_range) {
    min_size = policy->length_range->first;
    max_size = std::min<uint64_t>(max_size, static_cast<uint64_t>(policy->length_range->second));
  }
  std::optional<crypto::Key> object_key;
  if (sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(opts_.sse, *sse, ctx.bucket, key);
    if (!nk.ok()) return SendError(ctx, nk.error());
    object_key = nk->key;
    opts.internal = std::move(nk->internal);
  }
  LimitedSource limited(form.Content(), max_size);
  DigestingSource digest(limited, false, checksum::kDefaultAlgo);  // S3's default checksum
  StoredBody stored(digest, object_key);
  auto info = store_.PutObject(
      ctx.bucket, key, *stored.body, opts, [&](uint64_t) -> Result<storage::CommitInfo> {
        if (static_cast<int64_t>(limited.bytes()) < min_size) {
          Error e = MakeError(ErrorCode::kEntityTooSmall,
                              "Your proposed upload is smaller than the minimum allowed size");
          e.details.emplace_back("ProposedSize", std::to_string(limited.bytes()));
          e.details.emplace_back("MinSizeAllowed", std::to_string(min_size));
          return e;
        }
        storage::CommitInfo ci;
        ci.etag = WriteEtag(sse->kind, object_key, hash::HexEncode(digest.Md5()));
        ci.checksums[std::string(hash::ChecksumName(checksum::kDefaultAlgo))] =
            hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!info.ok()) return SendError(ctx, info.error());

  std::string location = "http://" + ctx.req.HeaderOr("host") + "/" + ctx.bucket + "/" +
                         uri::Encode(key, /*encode_slash=*/false);
  HeaderList extra{{"ETag", Quote(info->etag)}, {"Location", location}};
  AddSseHeaders(extra, sse->kind, *sse);
  std::string redirect = fields.count("success_action_redirect")
                             ? fields["success_action_redirect"]
                             : fields.count("redirect") ? fields["redirect"] : std::string();
  if (UsableRedirect(redirect)) {
    std::string url = redirect + (redirect.find('?') == std::string::npos ? "?" : "&") +
                      "bucket=" + uri::Encode(ctx.bucket) + "&key=" + uri::Encode(key) +
                      "&etag=" + uri::Encode(Quote(info->etag));
    return SendEmpty(ctx, 303, {{"ETag", Quote(info->etag)}, {"Location", url}});
  }
  std::string status = fields["success_action_status"];
  if (status == "201")
    return SendXml(ctx, PostResponseXml(location, ctx.bucket, key, info->etag), 201, extra);
  SendEmpty(ctx, status == "200" ? 200 : 204, extra);
}

void S3Api::CopyObject(Context& ctx) {
  storage::VersionSel src_version;
  auto src = ParseCopySource(*ctx.req.FindHeader("x-amz-copy-source"), &src_version);
  if (!src.ok()) return SendError(ctx, src.error());
  const auto& [src_bucket, src_key] = *src;
  if (!IsValidBucketName(src_bucket))
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  if (auto st = ValidateObjectKey(src_key); !st.ok()) return SendError(ctx, st.error());
  std::string directive = ctx.req.HeaderOr("x-amz-metadata-directive", "COPY");
  if (directive != "COPY" && directive != "REPLACE")
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument, "Unknown metadata directive."));
  bool replace = directive == "REPLACE";

  // The source's SSE-C key (x-amz-copy-source-server-side-encryption-customer-*) and the
  // destination's encryption: checked before any data moves.
  auto src_sse = ParseSseCustomer(ctx.req, opts_.sse, /*copy_source=*/true);
  if (!src_sse.ok()) return SendError(ctx, src_sse.error());
  auto dst_sse = WriteEncryptionOf(ctx, store_, opts_.sse);
  if (!dst_sse.ok()) return SendError(ctx, dst_sse.error());
  auto reader = OpenSource(store_, src_bucket, src_key, src_version);
  if (!reader.ok()) return SendError(ctx, reader.error());
  auto src_key_r = ReadKey(opts_.sse, (*reader)->info(), *src_sse);
  if (!src_key_r.ok()) return SendError(ctx, src_key_r.error());
  if (*src_key_r) *reader = NewDecryptingReader(std::move(*reader), **src_key_r);
  const auto& src_info = (*reader)->info();
  if (auto st = CheckCopyPreconditions(ctx.req, src_info); !st.ok())
    return SendError(ctx, st.error());
  HeaderList version_headers;
  if (src_version || !src_info.version_id.empty())
    version_headers.emplace_back("x-amz-copy-source-version-id",
                                 src_info.version_id.empty() ? "null" : src_info.version_id);

  storage::PutOptions opts;
  if (replace) {
    auto parsed = ObjectOptionsFromHeaders(ctx.req);
    if (!parsed.ok()) return SendError(ctx, parsed.error());
    opts = std::move(parsed).value();
  } else {
    opts.content_type = src_info.content_type;
    opts.user_metadata = src_info.user_metadata;
    opts.storage_class = StorageClassOf(ctx.req);  // a copy is STANDARD unless it says otherwise
  }
  auto tags = CopyObjectTags(ctx.req, src_info.tags);
  if (!tags.ok()) return SendError(ctx, tags.error());
  opts.tags = std::move(*tags);
  // The copy's ACL is the request's (private when it names none), never the source's (AWS).
  auto acl = RequestedAcl(ctx.req);
  if (!acl.ok()) return SendError(ctx, acl.error());
  opts.acl = iam::StoredAcl(acl->value_or(iam::CannedAcl::kPrivate));
  // x-amz-checksum-algorithm: the copy gets a checksum of that algorithm, computed as it is copied.
  std::optional<hash::Algo> new_checksum;
  if (const auto* algo = ctx.req.FindHeader("x-amz-checksum-algorithm")) {
    new_checksum = checksum::AlgoFromAnyCase(*algo);
    if (!new_checksum)
      return SendError(ctx, MakeError(ErrorCode::kInvalidRequest,
                                      "Checksum algorithm provided is unsupported. Please try "
                                      "again with any of the valid types: [CRC32, CRC32C, "
                                      "CRC64NVME, SHA1, SHA256]"));
  }
  // Copying a named version onto its own key makes it the latest again (a restore): a copy.
  bool same = src_bucket == ctx.bucket && src_key == ctx.key && !src_version;
  // Encrypted data is always rewritten: a copy gets its own object key (and onto itself the copy
  // changes the encryption, which AWS counts as a change).
  const bool reencrypt = dst_sse->kind != SseKind::kNone || SseKindOf(src_info.internal) !=
                                                                 SseKind::kNone;
  // Onto itself: legal when it replaces the metadata or names a storage class (AWS), a checksum
  // algorithm or an encryption (which rewrite the data below).
  if (same && !new_checksum && !reencrypt && !replace &&
      !ctx.req.FindHeader("x-amz-storage-class")) {
    return SendError(ctx, MakeError(ErrorCode::kInvalidRequest,
                                    "This copy request is illegal because it is trying to copy "
                                    "an object to itself without changing the object's "
                                    "metadata, storage class, website redirect location or "
                                    "encryption attributes."));
  }
  // A new storage class is a new parity: the data is rewritten (the copy below), not only the
  // metadata.
  if (same && !new_checksum && !reencrypt && opts.storage_class == src_info.storage_class) {
    // Onto itself the destination is the source: its conditions hold against the source read.
    if (auto cond = ConditionalWrite(ctx.req)) {
      if (auto st = cond(&src_info); !st.ok()) return SendError(ctx, st.error());
    }
    reader->reset();
    auto info = store_.UpdateMetadata(ctx.bucket, ctx.key, opts);
    if (!info.ok()) return SendError(ctx, info.error());
    if (!info->version_id.empty()) version_headers.emplace_back("x-amz-version-id", info->version_id);
    return SendXml(ctx, CopyObjectResultXml(info->etag, info->mtime_ns, info->checksums), 200,
                   version_headers);
  }

  std::optional<crypto::Key> dst_key;
  if (dst_sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(opts_.sse, *dst_sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return SendError(ctx, nk.error());
    dst_key = nk->key;
    opts.internal = std::move(nk->internal);
  }
  // If-Match / If-None-Match name the destination, as on PutObject (checked at commit).
  opts.precondition = ConditionalWrite(ctx.req);
  // Checksums: x-amz-checksum-algorithm's, computed as the bytes are copied; else the source's
  // full-object ones are kept and a composite one (which describes parts, not a single PUT) is
  // computed again over the whole object; with none at all, S3's default.
  std::map<std::string, std::string> kept;
  std::optional<hash::Algo> computed = new_checksum;
  for (const auto& [name, value] : src_info.checksums) {
    if (new_checksum) break;
    if (value.find('-') == std::string::npos)
      kept[name] = value;
    else
      computed = hash::ChecksumAlgoFromName(name);
  }
  if (!computed && kept.empty()) computed = checksum::kDefaultAlgo;
  ReaderSource source(**reader, 0, src_info.size);
  DigestingSource digest(source, false, computed);
  StoredBody stored(digest, dst_key);
  opts.size = stored.Size(src_info.size);
  // A single-part source keeps its ETag (its MD5); a multipart source gets the MD5 of its bytes,
  // as S3 does for copies.
  auto info = store_.PutObject(
      ctx.bucket, ctx.key, *stored.body, opts, [&](uint64_t) -> Result<storage::CommitInfo> {
        storage::CommitInfo ci;
        ci.etag = WriteEtag(dst_sse->kind, dst_key, hash::HexEncode(digest.Md5()));
        ci.checksums = kept;
        if (computed)
          ci.checksums[std::string(hash::ChecksumName(*computed))] =
              hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!info.ok()) return SendError(ctx, info.error());
  if (!info->version_id.empty()) version_headers.emplace_back("x-amz-version-id", info->version_id);
  AddSseHeaders(version_headers, dst_sse->kind, *dst_sse);
  SendXml(ctx, CopyObjectResultXml(info->etag, info->mtime_ns, info->checksums), 200,
          version_headers);
}

namespace {

// The response-* query parameters S3 documents for GetObject / HeadObject, and the header each
// overrides. No others are honoured.
constexpr std::pair<const char*, const char*> kResponseOverrides[] = {
    {"response-content-type", "Content-Type"},
    {"response-content-language", "Content-Language"},
    {"response-expires", "Expires"},
    {"response-cache-control", "Cache-Control"},
    {"response-content-disposition", "Content-Disposition"},
    {"response-content-encoding", "Content-Encoding"}};

// An override value becomes a response header verbatim: a control character (CR/LF above all)
// would let the URL's author inject headers or a body, so such a value is refused outright.
Status CheckResponseOverrides(const S3Api::Context& ctx) {
  for (const auto& [param, header] : kResponseOverrides) {
    if (!ctx.Has(param)) continue;
    // As S3: whoever may read a public object must not choose how it is served (text/plain as
    // text/html); the overrides are for signed requests.
    if (ctx.caller.anonymous())
      return MakeError(ErrorCode::kInvalidRequest,
                       "Request specific response headers cannot be used for anonymous GET "
                       "requests.");
    const std::string& v = ctx.Q(param);
    if (std::any_of(v.begin(), v.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      Error e = MakeError(ErrorCode::kInvalidArgument,
                          std::string(param) + " must not contain control characters");
      e.details.emplace_back("ArgumentName", param);
      return e;
    }
  }
  return {};
}

}  // namespace

namespace {

// The checksums that describe the bytes a GET/HEAD returns: the object's when they are the whole
// object (a Range covering all of it included, as AWS), a part's for ?partNumber= of a multipart
// object whose parts have them, none for other ranges.
std::map<std::string, std::string> ResponseChecksums(const storage::ObjectInfo& info,
                                                     bool part_number, uint64_t start,
                                                     uint64_t length) {
  if (start == 0 && length == info.size && (!part_number || info.part_count <= 1))
    return info.checksums;
  if (!part_number || info.part_count == 0 || info.checksums.empty() ||
      info.part_checksums.size() != info.part_sizes.size())
    return {};
  uint64_t offset = 0;
  for (size_t i = 0; i < info.part_sizes.size(); ++i) {
    if (offset == start && info.part_sizes[i] == length) return info.part_checksums[i];
    offset += info.part_sizes[i];
  }
  return {};
}

}  // namespace

void S3Api::GetObject(Context& ctx, bool head) {
  if (auto st = CheckResponseOverrides(ctx); !st.ok()) return SendError(ctx, st.error());
  std::optional<rdma::RdmaToken> rdma_token;  // S3 over RDMA (HEAD ignores the token)
  if (!head) {
    auto token = RdmaTokenOf(ctx.req, ctx.auth, opts_.rdma, /*is_put=*/false);
    if (!token.ok()) {
      // Declined GETs are counted in the RDMA family as declined PUTs are (RdmaPutBodyFor).
      if (token.error().code == ErrorCode::kRDMANotSupported) RecordRdmaOutcome(501, 0, 0, 0);
      return SendError(ctx, token.error());
    }
    rdma_token = *token;
  }
  auto sse = ParseSseCustomer(ctx.req, opts_.sse);
  if (!sse.ok()) return SendError(ctx, sse.error());
  auto reader_r = ctx.version ? store_.OpenObjectVersion(ctx.bucket, ctx.key, *ctx.version)
                              : store_.OpenObject(ctx.bucket, ctx.key);
  if (!reader_r.ok()) return SendVersionError(ctx, reader_r.error(), store_);
  std::unique_ptr<storage::ObjectReader> reader_ptr = std::move(*reader_r);
  auto object_key = ReadKey(opts_.sse, reader_ptr->info(), *sse);
  if (!object_key.ok()) return SendError(ctx, object_key.error());
  if (*object_key) reader_ptr = NewDecryptingReader(std::move(reader_ptr), **object_key);
  auto& reader = *reader_ptr;
  const auto& info = reader.info();
  if (auto st = CheckPreconditions(ctx.req, info); !st.ok()) {
    if (st.error().code == ErrorCode::kNotModified) {
      return SendEmpty(ctx, 304,
                       {{"ETag", Quote(info.etag)}, {"Last-Modified", HttpDate(info.mtime_ns)}});
    }
    return SendError(ctx, st.error());
  }

  std::optional<ByteRange> range;
  if (ctx.Has("partNumber") && ctx.req.FindHeader("range"))
    return SendError(ctx, MakeError(ErrorCode::kInvalidRequest,
                                    "Cannot specify both Range header and partNumber query "
                                    "parameter"));
  if (ctx.Has("partNumber")) {
    auto pr = PartNumberRange(ctx.Q("partNumber"), info.size, info.part_count, info.part_sizes);
    if (!pr.ok()) return SendError(ctx, pr.error());
    range = *pr;
  } else if (const auto* rh = ctx.req.FindHeader("range")) {
    auto r = ParseRange(*rh, info.size);
    if (!r.ok()) {
      auto head_resp = BaseHead(ctx.request_id, 416);
      head_resp.Set("Content-Range", "bytes */" + std::to_string(info.size));
      if (head) {
        head_resp.content_length = 0;
        ctx.sink.SendHead(head_resp);
        return;
      }
      const auto& ei = GetErrorInfo(ErrorCode::kInvalidRange);
      return SendBody(ctx.sink, std::move(head_resp),
                      ErrorXml(ei.code, ei.message, ctx.Resource(), ctx.request_id),
                      "application/xml");
    }
    range = *r;
  }

  bool partial = range.has_value() && (ctx.Has("partNumber") || ctx.req.FindHeader("range"));
  uint64_t start = range ? range->start : 0;
  uint64_t length = range ? range->length : info.size;
  auto resp = BaseHead(ctx.request_id, partial ? 206 : 200);
  AddObjectHeaders(resp, info);
  {
    HeaderList sse_headers;
    AddSseHeaders(sse_headers, SseKindOf(info.internal), *sse);
    SetHeaders(resp, sse_headers);
  }
  if (ToLower(ctx.req.HeaderOr("x-amz-checksum-mode")) == "enabled" && !info.checksums.empty()) {
    // A part of a composite object is still described as COMPOSITE.
    AddChecksumHeaders(resp, ResponseChecksums(info, ctx.Has("partNumber"), start, length),
                       checksum::TypeOfValue(info.checksums.begin()->second));
  }
  {
    HeaderList version_header;
    AddReadVersionHeader(version_header, store_, ctx.bucket, ctx.version, info);
    SetHeaders(resp, version_header);
  }
  if (partial) {
    resp.Set("Content-Range", "bytes " + std::to_string(start) + "-" +
                                  std::to_string(start + length - 1) + "/" +
                                  std::to_string(info.size));
  }
  // response-* query parameters override headers (signed requests only, as S3).
  for (const auto& [param, header] : kResponseOverrides) {
    if (!ctx.Has(param)) continue;
    std::string lower = ToLower(header);
    auto& hs = resp.headers;
    hs.erase(std::remove_if(hs.begin(), hs.end(),
                            [&](const auto& h) { return ToLower(h.first) == lower; }),
             hs.end());
    resp.Set(header, ctx.Q(param));
  }
  if (rdma_token) {
    // The payload goes into the client's buffer; the response carries headers only.
    auto moved =
        RdmaGet(*opts_.rdma, *rdma_token, ctx.req, ctx.auth, reader, start, length, resp.status);
    if (!moved.ok()) return SendError(ctx, moved.error());
    resp.Set("x-amz-rdma-reply", std::to_string(resp.status));
    if (ctx.req.FindHeader("x-amz-rdma-agent")) resp.Set("x-amz-rdma-agent", "cuobj");
    resp.Set("x-amz-rdma-bytes-transferred", std::to_string(*moved));
    resp.content_length = 0;
    ctx.sink.SendHead(resp);
    return;
  }
  resp.content_length = length;
  if (!ctx.sink.SendHead(resp) || head) return;

  std::vector<char> buf(std::min<uint64_t>(kIoChunk, std::max<uint64_t>(length, 1)));
  uint64_t pos = start, end = start + length;
  while (pos < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - pos));
    auto n = reader.ReadAt(pos, buf.data(), want);
    if (!n.ok() || *n == 0) {
      spdlog::error("GET {}/{} failed at offset {}: {}", ctx.bucket, ctx.key, pos,
                    n.ok() ? "short read" : n.error().message);
      return;  // the connection closes with a short body: the client sees the failure
    }
    if (!ctx.sink.Write(buf.data(), *n)) return;
    pos += *n;
  }
}

void S3Api::GetObjectAttributes(Context& ctx) {
  ObjectAttributesParams p;
  auto names = JoinedHeader(ctx.req, "x-amz-object-attributes");
  bool any = false;
  size_t pos = 0;
  while (names && pos <= names->size()) {
    size_t comma = std::min(names->find(',', pos), names->size());
    std::string name = names->substr(pos, comma - pos);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    pos = comma + 1;
    if (name.empty()) continue;
    if (name == "ETag") {
      p.etag = true;
    } else if (name == "Checksum") {
      p.checksum = true;
    } else if (name == "ObjectParts") {
      p.object_parts = true;
    } else if (name == "StorageClass") {
      p.storage_class = true;
    } else if (name == "ObjectSize") {
      p.object_size = true;
    } else {
      return SendError(ctx,
                       MakeError(ErrorCode::kInvalidArgument, "Invalid attribute name specified."));
    }
    any = true;
  }
  if (!any)
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "The x-amz-object-attributes header specifying the attributes "
                                    "to be retrieved is either missing or empty"));
  if (const auto* v = ctx.req.FindHeader("x-amz-max-parts")) {
    auto n = ParseInt(*v);
    if (!n || *n < 0)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "Argument max-parts must be an integer between 0 and "
                                      "2147483647"));
    p.max_parts = static_cast<int>(std::min<int64_t>(*n, 1000));
  }
  if (const auto* v = ctx.req.FindHeader("x-amz-part-number-marker")) {
    auto n = ParseInt(*v);
    if (!n || *n < 0)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "Argument part-number-marker must be an integer between 0 "
                                      "and 2147483647"));
    p.part_number_marker = static_cast<int>(std::min<int64_t>(*n, 10000));
  }
  auto info = ctx.version ? store_.StatObjectVersion(ctx.bucket, ctx.key, *ctx.version)
                          : store_.StatObject(ctx.bucket, ctx.key);
  if (!info.ok()) return SendVersionError(ctx, info.error(), store_);
  {
    auto sse = ParseSseCustomer(ctx.req, opts_.sse);
    if (!sse.ok()) return SendError(ctx, sse.error());
    auto object_key = ReadKey(opts_.sse, *info, *sse);
    if (!object_key.ok()) return SendError(ctx, object_key.error());
  }
  if (auto st = CheckPreconditions(ctx.req, *info); !st.ok()) {
    if (st.error().code == ErrorCode::kNotModified)
      return SendEmpty(ctx, 304, {{"ETag", Quote(info->etag)}});
    return SendError(ctx, st.error());
  }
  if (!info->storage_class.empty()) p.storage_class_name = info->storage_class;
  SendXml(ctx, GetObjectAttributesXml(p, *info), 200,
          {{"Last-Modified", HttpDate(info->mtime_ns)}});
}

void S3Api::DeleteObject(Context& ctx) {
  auto r = store_.DeleteObjectVersion(ctx.bucket, ctx.key, ctx.version);
  if (!r.ok() && r.error().code != ErrorCode::kNoSuchKey) return SendError(ctx, r.error());
  HeaderList extra;
  if (r.ok() && (ctx.version || r->created_marker)) {
    storage::ObjectInfo v;
    v.version_id = r->version_id;
    v.delete_marker = r->delete_marker;
    AddVersionHeaders(extra, v);
  }
  SendEmpty(ctx, 204, extra);
}

namespace {

// The object key of a multipart upload for a part (or Complete) request: an SSE-C upload needs
// the upload's key on every part (AWS), SSE-S3 and plain uploads take no SSE-C parameters.
// `required`: false where AWS lets the key be left out (Complete without checksums); a key that
// is sent is always checked.
Result<std::optional<crypto::Key>> UploadKey(const SseConfig& cfg, const HttpRequest& req,
                                             const storage::PutOptions& upload,
                                             const std::string& bucket, const std::string& key,
                                             SseRequest* sse_out, bool required = true) {
  auto sse = ParseSseCustomer(req, cfg);
  if (!sse.ok()) return sse.error();
  *sse_out = *sse;
  const SseKind kind = SseKindOf(upload.internal);
  if (kind == SseKind::kC && sse->kind == SseKind::kNone) {
    if (!required) return std::optional<crypto::Key>();
    return MakeError(ErrorCode::kInvalidRequest,
                     "The multipart upload initiate requested encryption. Subsequent part "
                     "requests must include the appropriate encryption parameters.");
  }
  if (kind != SseKind::kC && sse->kind == SseKind::kC)
    return MakeError(ErrorCode::kInvalidRequest,
                     "The multipart upload initiate did not request encryption with customer "
                     "provided keys. Subsequent part requests must not include them.");
  auto k = OpenObjectKey(cfg, *sse, upload.internal, bucket, key);
  if (!k.ok() && k.error().code == ErrorCode::kAccessDenied)
    return MakeError(ErrorCode::kInvalidRequest,
                     "The provided encryption parameters did not match the ones used originally.");
  return k;
}

}  // namespace

void S3Api::CreateMultipartUpload(Context& ctx) {
  auto opts = ObjectOptionsFromHeaders(ctx.req);
  if (!opts.ok()) return SendError(ctx, opts.error());
  if (auto st = ParseMultipartChecksumHeaders(ctx.req, *opts); !st.ok())
    return SendError(ctx, st.error());
  auto sse = WriteEncryptionOf(ctx, store_, opts_.sse);
  if (!sse.ok()) return SendError(ctx, sse.error());
  if (sse->kind != SseKind::kNone) {
    // Every part is a stream of its own under this one object key.
    auto nk = SealNewObjectKey(opts_.sse, *sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return SendError(ctx, nk.error());
    opts->internal = std::move(nk->internal);
  }
  auto id = store_.NewMultipartUpload(ctx.bucket, ctx.key, *opts);
  if (!id.ok()) return SendError(ctx, id.error());
  HeaderList extra;
  AddSseHeaders(extra, sse->kind, *sse);
  if (auto algo = hash::ChecksumAlgoFromName(opts->checksum_algorithm)) {
    extra.emplace_back("x-amz-checksum-algorithm", checksum::UpperName(*algo));
    extra.emplace_back("x-amz-checksum-type", opts->checksum_type);
  }
  SendXml(ctx, InitiateMultipartUploadXml(ctx.bucket, ctx.key, *id), 200, extra);
}

namespace {
Result<int> PartNumberOf(const S3Api::Context& ctx) {
  auto pn = ParseInt(ctx.Q("partNumber"));
  if (!pn || *pn < 1 || *pn > 10000)
    return MakeError(ErrorCode::kInvalidArgument,
                     "Part number must be an integer between 1 and 10000, inclusive");
  return static_cast<int>(*pn);
}
}  // namespace

void S3Api::UploadPart(Context& ctx) {
  auto pn = PartNumberOf(ctx);
  if (!pn.ok()) return SendError(ctx, pn.error());
  std::string upload_id = ctx.Q("uploadId");
  auto rdma = RdmaPutBodyFor(ctx.req, ctx.auth, opts_.rdma);
  if (!rdma.ok()) return SendError(ctx, rdma.error());
  // The upload's checksum algorithm decides what the part must declare and what is computed.
  auto upload = store_.GetUploadOptions(ctx.bucket, ctx.key, upload_id);
  if (!upload.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), upload.error()));
  SseRequest sse;
  auto object_key = UploadKey(opts_.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse);
  if (!object_key.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), object_key.error()));
  const SseKind kind = SseKindOf(upload->internal);
  auto up = PrepareUpload(ctx, rdma->get(),
                          ChecksumRule{.upload = &*upload, .default_checksum = true});
  if (!up.ok()) return SendError(ctx, up.error());
  StoredBody stored(*up->digest, *object_key);
  auto part = store_.PutObjectPart(ctx.bucket, ctx.key, upload_id, *pn, *stored.body,
                                   stored.Size(up->size),
                                   [&](uint64_t) -> Result<storage::CommitInfo> {
                                     auto ci = FinishUpload(ctx, *up);
                                     if (ci.ok()) ci->etag = WriteEtag(kind, *object_key, ci->etag);
                                     return ci;
                                   });
  if (!part.ok()) return SendError(ctx, RdmaUploadError(rdma->get(), part.error()));
  HeaderList extra{{"ETag", Quote(part->etag)}};
  AddSseHeaders(extra, kind, sse);
  for (const auto& [algo, value] : part->checksums)
    extra.emplace_back("x-amz-checksum-" + algo, value);
  AddRdmaUploadReply(rdma->get(), extra, stored.enc ? stored.enc->plaintext_bytes() : 0);
  SendEmpty(ctx, 200, extra);
}

void S3Api::UploadPartCopy(Context& ctx) {
  auto pn = PartNumberOf(ctx);
  if (!pn.ok()) return SendError(ctx, pn.error());
  std::string upload_id = ctx.Q("uploadId");
  storage::VersionSel src_version;
  auto src = ParseCopySource(*ctx.req.FindHeader("x-amz-copy-source"), &src_version);
  if (!src.ok()) return SendError(ctx, src.error());
  const auto& [src_bucket, src_key] = *src;
  if (!IsValidBucketName(src_bucket))
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  if (auto st = ValidateObjectKey(src_key); !st.ok()) return SendError(ctx, st.error());
  // Fail on a missing upload before reading any source data.
  auto upload = store_.GetUploadOptions(ctx.bucket, ctx.key, upload_id);
  if (!upload.ok()) return SendError(ctx, upload.error());
  // The part gets the upload's checksum (S3's default when it has none), computed as it is copied.
  const hash::Algo part_algo =
      hash::ChecksumAlgoFromName(upload->checksum_algorithm).value_or(checksum::kDefaultAlgo);
  SseRequest sse;
  auto object_key = UploadKey(opts_.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse);
  if (!object_key.ok()) return SendError(ctx, object_key.error());
  const SseKind kind = SseKindOf(upload->internal);
  auto src_sse = ParseSseCustomer(ctx.req, opts_.sse, /*copy_source=*/true);
  if (!src_sse.ok()) return SendError(ctx, src_sse.error());
  auto reader = OpenSource(store_, src_bucket, src_key, src_version);
  if (!reader.ok()) return SendError(ctx, reader.error());
  auto src_key_r = ReadKey(opts_.sse, (*reader)->info(), *src_sse);
  if (!src_key_r.ok()) return SendError(ctx, src_key_r.error());
  if (*src_key_r) *reader = NewDecryptingReader(std::move(*reader), **src_key_r);
  const auto& src_info = (*reader)->info();
  if (auto st = CheckCopyPreconditions(ctx.req, src_info); !st.ok())
    return SendError(ctx, st.error());
  uint64_t start = 0, length = src_info.size;
  if (const auto* rh = ctx.req.FindHeader("x-amz-copy-source-range")) {
    // Must be exactly bytes=first-last within the object.
    std::string_view r = *rh;
    auto dash = r.find('-');
    if (r.rfind("bytes=", 0) != 0 || dash == std::string_view::npos)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "Range specified is not valid for source object"));
    auto first = ParseInt(r.substr(6, dash - 6));
    auto last = ParseInt(r.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first ||
        static_cast<uint64_t>(*last) >= src_info.size) {
      // AWS: 400 InvalidArgument naming the source's size (not GET's 416 InvalidRange).
      Error e = MakeError(ErrorCode::kInvalidArgument,
                          "Range specified is not valid for source object of size: " +
                              std::to_string(src_info.size));
      e.details.emplace_back("ArgumentName", "x-amz-copy-source-range");
      return SendError(ctx, e);
    }
    start = static_cast<uint64_t>(*first);
    length = static_cast<uint64_t>(*last - *first + 1);
  }
  ReaderSource source(**reader, start, length);
  DigestingSource digest(source, false, part_algo);
  StoredBody stored(digest, *object_key);
  auto part = store_.PutObjectPart(
      ctx.bucket, ctx.key, upload_id, *pn, *stored.body, stored.Size(length),
      [&](uint64_t) -> Result<storage::CommitInfo> {
        storage::CommitInfo ci;
        ci.etag = WriteEtag(kind, *object_key, hash::HexEncode(digest.Md5()));
        ci.checksums[std::string(hash::ChecksumName(part_algo))] =
            hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!part.ok()) return SendError(ctx, part.error());
  HeaderList extra;
  AddSseHeaders(extra, kind, sse);
  SendXml(ctx, CopyPartResultXml(part->etag, part->mtime_ns, part->checksums), 200, extra);
}

namespace {
// Part numbers must not go down. A number listed more than once is a part uploaded again while an
// earlier upload of it was still in flight: clients list the uploads in the order they finished,
// and the one that finished last is the part stored, so the last entry of the run stands.
Status CollapseRepeatedParts(std::vector<storage::CompletePart>& parts) {
  std::vector<storage::CompletePart> out;
  for (auto& p : parts) {
    if (!out.empty() && p.number < out.back().number)
      return MakeError(ErrorCode::kInvalidPartOrder);
    if (!out.empty() && p.number == out.back().number)
      out.back() = std::move(p);
    else
      out.push_back(std::move(p));
  }
  parts = std::move(out);
  return {};
}
}  // namespace

void S3Api::CompleteMultipartUpload(Context& ctx) {
  // x-amz-checksum-* here describe the object being completed, not the XML body.
  auto body = ReadXmlBody(ctx, ChecksumRule{false, nullptr});
  if (!body.ok()) return SendError(ctx, body.error());
  auto parts = ParseCompleteMultipartXml(*body);
  if (!parts.ok()) return SendError(ctx, parts.error());
  if (auto st = CheckCompletePartChecksums(*parts); !st.ok()) return SendError(ctx, st.error());
  auto declared = ParseCompleteChecksumHeaders(ctx.req);
  if (!declared.ok()) return SendError(ctx, declared.error());
  if (auto st = CollapseRepeatedParts(*parts); !st.ok()) return SendError(ctx, st.error());
  // An SSE-C key sent with Complete must be the upload's; AWS requires it only when the upload
  // has a checksum algorithm.
  SseRequest sse;
  SseKind kind = SseKind::kNone;
  if (auto upload = store_.GetUploadOptions(ctx.bucket, ctx.key, ctx.Q("uploadId"));
      upload.ok()) {
    kind = SseKindOf(upload->internal);
    auto object_key = UploadKey(opts_.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse,
                                /*required=*/!upload->checksum_algorithm.empty());
    if (!object_key.ok()) return SendError(ctx, object_key.error());
  }
  auto info = store_.CompleteMultipartUpload(ctx.bucket, ctx.key, ctx.Q("uploadId"), *parts,
                                             ConditionalWrite(ctx.req), *declared);
  if (!info.ok() && info.error().code == ErrorCode::kNoSuchUpload) {
    // A retry (after a timeout) of a Complete that went through: the upload is gone, but the
    // object made of exactly these parts is there. Answer as the first time (AWS does).
    std::vector<std::string> etags;
    for (const auto& p : *parts) etags.push_back(Unquote(p.etag));
    auto current = store_.OpenObject(ctx.bucket, ctx.key);
    if (!etags.empty() && current.ok() && (*current)->info().part_count > 0 &&
        (*current)->info().etag == storage::MultipartEtag(etags))
      info = (*current)->info();
  }
  if (!info.ok()) return SendError(ctx, info.error());
  HeaderList extra;
  if (!info->version_id.empty()) extra.emplace_back("x-amz-version-id", info->version_id);
  if (kind == SseKind::kNone) kind = SseKindOf(info->internal);  // a retried Complete
  if (kind == SseKind::kS3 || sse.kind == SseKind::kC) AddSseHeaders(extra, kind, sse);
  std::string location =
      "http://" + ctx.req.HeaderOr("host") + "/" + ctx.bucket + "/" + uri::Encode(ctx.key, false);
  SendXml(ctx, CompleteMultipartUploadXml(location, ctx.bucket, ctx.key, info->etag,
                                          info->checksums),
          200, extra);
}

void S3Api::AbortMultipartUpload(Context& ctx) {
  auto st = store_.AbortMultipartUpload(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!st.ok()) return SendError(ctx, st.error());
  SendEmpty(ctx, 204);
}

void S3Api::ListParts(Context& ctx) {
  auto max_parts = ParseMaxKeys(ctx, "max-parts");
  if (!max_parts.ok()) return SendError(ctx, max_parts.error());
  int marker = 0;
  if (ctx.Has("part-number-marker")) {
    auto m = ParseInt(ctx.Q("part-number-marker"));
    if (!m || *m < 0)
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument, "Invalid part-number-marker"));
    marker = static_cast<int>(std::min<int64_t>(*m, 10000));
  }
  auto parts = store_.ListParts(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!parts.ok()) return SendError(ctx, parts.error());
  auto upload = store_.GetUploadOptions(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!upload.ok()) return SendError(ctx, upload.error());
  if (storage::IsEncrypted(upload->internal)) {
    // Parts are stored encrypted: list the sizes the client uploaded.
    for (auto& part : *parts)
      if (auto plain = crypto::DecryptedSize(part.size); plain.ok()) part.size = *plain;
  }
  ListPartsParams p;
  p.bucket = ctx.bucket;
  p.key = ctx.key;
  p.upload_id = ctx.Q("uploadId");
  p.part_number_marker = marker;
  p.max_parts = *max_parts;
  p.storage_class = upload->storage_class;
  if (auto algo = hash::ChecksumAlgoFromName(upload->checksum_algorithm)) {
    p.checksum_algorithm = checksum::UpperName(*algo);
    p.checksum_type = upload->checksum_type;
  }
  SendXml(ctx, ListPartsXml(p, *parts, Owner{}));  // pages from the marker
}

}  // namespace rdmastor::s3
