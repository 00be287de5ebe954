#include "s3/handler.h"

#include <algorithm>
#include <cctype>

#include "common/uri.h"
#include "iam/acl.h"
#include "s3/acl.h"
#include "s3/ownership.h"
#include "s3/tagging.h"
#include "s3/versioning.h"

namespace rdmastor::s3 {

Reply XmlReply(std::string xml, int status, HeaderList extra) {
  Reply r;
  r.status = status;
  r.headers = std::move(extra);
  r.body = std::move(xml);
  r.content_type = "application/xml";
  return r;
}

Reply EmptyReply(int status, HeaderList extra) {
  Reply r;
  r.status = status;
  r.headers = std::move(extra);
  return r;
}

DigestingSource::DigestingSource(BodySource& in, bool sha256, std::optional<hash::Algo> checksum)
    : in_(in), md5_(hash::NewHasher(hash::Algo::kMD5)) {
  if (sha256) sha256_ = hash::NewHasher(hash::Algo::kSHA256);
  if (checksum) checksum_ = hash::NewHasher(*checksum);
}

Result<size_t> DigestingSource::Read(char* buf, size_t len) {
  auto n = in_.Read(buf, len);
  if (!n.ok() || *n == 0) return n;
  md5_->Update(buf, *n);
  if (sha256_) sha256_->Update(buf, *n);
  if (checksum_) checksum_->Update(buf, *n);
  bytes_ += *n;
  return n;
}

Result<size_t> ReaderSource::Read(char* buf, size_t len) {
  if (pos_ >= end_) return size_t{0};
  size_t want = static_cast<size_t>(std::min<uint64_t>(len, end_ - pos_));
  auto n = reader_.ReadAt(pos_, buf, want);
  if (!n.ok()) return n;
  if (*n == 0) return MakeError(ErrorCode::kInternalError, "object shorter than its metadata");
  pos_ += *n;
  return n;
}

StoredBody::StoredBody(BodySource& plain, const std::optional<crypto::Key>& object_key)
    : key(object_key) {
  if (key) enc = std::make_unique<crypto::EncryptingSource>(plain, *key);
  body = enc ? static_cast<BodySource*>(enc.get()) : &plain;
}

StoredBody::~StoredBody() {
  if (enc) CountEncrypted(enc->plaintext_bytes());
}

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
// The ETag a write records from its plaintext MD5 (hex): SSE-C and SSE-KMS data get a keyed
// digest (AWS: not the MD5 of the data); SSE-S3 and plain data the MD5.
std::string WriteEtag(SseKind kind, const std::optional<crypto::Key>& key, std::string md5_hex) {
  if ((kind == SseKind::kC || kind == SseKind::kKms) && key) return SseCEtag(*key, md5_hex);
  return md5_hex;
}
// The encryption a new object gets (SSE-C / x-amz-server-side-encryption headers, else the
// bucket's default).
Result<SseRequest> WriteEncryptionOf(const Env& env, const S3Request& ctx) {
  auto bucket_default = env.store.BucketEncryption(ctx.bucket);
  if (!bucket_default.ok()) return bucket_default.error();
  return ParseSseWrite(ctx.req, *env.sse, *bucket_default);
}
// The object key of a stored object about to be read (nullopt: not encrypted).
Result<std::optional<crypto::Key>> ReadKey(const SseConfig& cfg, const storage::ObjectInfo& info,
                                           const SseRequest& sse) {
  return OpenObjectKey(cfg, sse, info.internal, info.bucket, info.key);
}
// A read that met a delete marker: the latest version is one (404, with the marker's headers, as
// AWS answers) or the version named is one (405 MethodNotAllowed, Allow: DELETE).
Reply VersionErrorReply(const S3Request& ctx, const Error& err, storage::ObjectLayer& store) {
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
  return ErrorReply(err, extra);
}
// `rdma`: the payload comes over RDMA (exactly rdma->size() bytes) instead of the HTTP body.
Result<UploadBody> PrepareUpload(S3Request& ctx, RdmaPutBody* rdma, const ChecksumRule& rule) {
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
    auto algo =
        PartChecksumAlgo(up.declared, rule.upload->checksum_algorithm, rule.upload->checksum_type);
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
Result<storage::CommitInfo> FinishUpload(S3Request& ctx, UploadBody& up) {
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
Result<std::string> ReadXmlBody(S3Request& ctx, const ChecksumRule& rule) {
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
Status SetNewObjectOwner(const Env& env, const S3Request& r, storage::PutOptions& opts) {
  if (!env.iam) return {};  // handler tests without IAM: the bucket's owner
  bool grants = false;
  for (const auto& [name, value] : r.req.headers) grants = grants || name.starts_with("x-amz-grant-");
  auto owner = NewObjectOwner(*env.iam, env.store, r.bucket, r.caller, r.req.FindHeader("x-amz-acl"),
                              grants);
  if (!owner.ok()) return owner.error();
  opts.owner = std::move(*owner);
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
Result<int> ParseMaxKeys(const S3Request& ctx, std::string_view name) {
  if (!ctx.Has(name)) return 1000;
  auto v = ParseInt(ctx.Q(name));
  if (!v || *v < 0)
    return MakeError(
        ErrorCode::kInvalidArgument,
        "Argument " + std::string(name) + " must be an integer between 0 and 2147483647");
  return static_cast<int>(std::min<int64_t>(*v, 1000));
}

// The object key of a multipart upload for a part (or Complete) request: an SSE-C upload needs
// the upload's key on every part (AWS), SSE-S3 and plain uploads take no SSE-C parameters.
// `required`: false where AWS lets the key be left out (Complete without checksums); a key that
// is sent is always checked.
Result<std::optional<crypto::Key>> UploadKey(const SseConfig& cfg, const HttpRequest& req,
                                             const storage::PutOptions& upload,
                                             const std::string& bucket, const std::string& key,
                                             SseRequest* sse_out, bool required) {
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
Result<int> PartNumberOf(const S3Request& ctx) {
  auto pn = ParseInt(ctx.Q("partNumber"));
  if (!pn || *pn < 1 || *pn > 10000)
    return MakeError(ErrorCode::kInvalidArgument,
                     "Part number must be an integer between 1 and 10000, inclusive");
  return static_cast<int>(*pn);
}

bool DeclaresIntegrity(const HttpRequest& req) {
  for (const auto& [name, value] : req.headers) {
    if (name == "content-md5" || name == "x-amz-sdk-checksum-algorithm") return true;
    if (name.starts_with("x-amz-checksum-") && name != "x-amz-checksum-type" &&
        name != "x-amz-checksum-algorithm")
      return true;
    if (name == "x-amz-trailer" && ToLower(value).find("x-amz-checksum-") != std::string::npos)
      return true;
  }
  return false;
}

Status RequireIntegrity(const HttpRequest& req) {
  if (DeclaresIntegrity(req)) return {};
  return MakeError(ErrorCode::kInvalidRequest,
                   "Missing required header for this request: Content-MD5");
}

}  // namespace rdmastor::s3
