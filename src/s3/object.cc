// Object operations: PutObject, GetObject, HeadObject, GetObjectAttributes, DeleteObject,
// DeleteObjects.
#include <algorithm>

#include "s3/handlers.h"
#include "s3/lifecycle.h"
#include "s3/names.h"
#include "s3/object_lock.h"
#include "s3/range.h"
#include "s3/tagging.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

void SetHeaders(HttpResponseHead& head, const HeaderList& headers) {
  for (const auto& [k, v] : headers) head.Set(k, v);
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
Status CheckResponseOverrides(const S3Request& ctx) {
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

Reply HandlePutObject(const Env& env, S3Request& ctx) {
  auto opts = ObjectOptionsFromHeaders(ctx.req);
  if (!opts.ok()) return ErrorReply(opts.error());
  if (auto st = SetNewObjectOwner(env, ctx, *opts); !st.ok()) return ErrorReply(st.error());
  auto rdma = RdmaPutBodyFor(ctx.req, ctx.auth, env.rdma);
  if (!rdma.ok()) return ErrorReply(rdma.error());
  if (auto st = ApplyObjectLock(env.store, ctx.bucket, ctx.req, *opts, /*put=*/true, NowMs());
      !st.ok())
    return ErrorReply(RdmaUploadError(rdma->get(), st.error()));
  auto sse = WriteEncryptionOf(env, ctx);
  if (!sse.ok()) return ErrorReply(RdmaUploadError(rdma->get(), sse.error()));
  std::optional<crypto::Key> object_key;
  if (sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(*env.sse, *sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return ErrorReply(RdmaUploadError(rdma->get(), nk.error()));
    object_key = nk->key;
    opts->internal = std::move(nk->internal);
  }
  auto up = PrepareUpload(ctx, rdma->get(), ChecksumRule{.default_checksum = true});
  if (!up.ok()) return ErrorReply(up.error());
  StoredBody stored(*up->digest, object_key);
  opts->size = stored.Size(up->size);
  opts->precondition = ConditionalWrite(ctx.req);
  auto info = env.store.PutObject(ctx.bucket, ctx.key, *stored.body, *opts,
                                  [&](uint64_t) -> Result<storage::CommitInfo> {
                                    auto ci = FinishUpload(ctx, *up);
                                    if (ci.ok())
                                      ci->etag = WriteEtag(sse->kind, object_key, ci->etag);
                                    return ci;
                                  });
  if (!info.ok()) return ErrorReply(RdmaUploadError(rdma->get(), info.error()));
  HeaderList extra{{"ETag", Quote(info->etag)}};
  AddSseHeaders(extra, sse->kind, *sse);
  if (!info->version_id.empty()) extra.emplace_back("x-amz-version-id", info->version_id);
  AddExpirationHeader(extra, env.store, ctx.bucket, *info);
  for (const auto& [algo, value] : info->checksums)
    extra.emplace_back("x-amz-checksum-" + algo, value);
  if (!info->checksums.empty()) extra.emplace_back("x-amz-checksum-type", "FULL_OBJECT");
  AddRdmaUploadReply(rdma->get(), extra, stored.enc ? stored.enc->plaintext_bytes() : 0);
  return EmptyReply(200, extra);
}

namespace {

Reply ReadObject(const Env& env, S3Request& ctx, bool head) {
  if (auto st = CheckResponseOverrides(ctx); !st.ok()) return ErrorReply(st.error());
  std::optional<rdma::RdmaToken> rdma_token;  // S3 over RDMA (HEAD ignores the token)
  if (!head) {
    auto token = RdmaTokenOf(ctx.req, ctx.auth, env.rdma, /*is_put=*/false);
    if (!token.ok()) {
      // Declined GETs are counted in the RDMA family as declined PUTs are (RdmaPutBodyFor).
      if (token.error().code == ErrorCode::kRDMANotSupported) RecordRdmaOutcome(501, 0, 0, 0);
      return ErrorReply(token.error());
    }
    rdma_token = *token;
  }
  if (auto st = CheckNoSseOnRead(ctx.req); !st.ok()) return ErrorReply(st.error());
  auto sse = ParseSseCustomer(ctx.req, *env.sse);
  if (!sse.ok()) return ErrorReply(sse.error());
  auto reader_r = ctx.version ? env.store.OpenObjectVersion(ctx.bucket, ctx.key, *ctx.version)
                              : env.store.OpenObject(ctx.bucket, ctx.key);
  if (!reader_r.ok()) return VersionErrorReply(ctx, reader_r.error(), env.store);
  std::unique_ptr<storage::ObjectReader> reader_ptr = std::move(*reader_r);
  auto object_key = ReadKey(*env.sse, reader_ptr->info(), *sse);
  if (!object_key.ok()) return ErrorReply(object_key.error());
  if (*object_key) reader_ptr = NewDecryptingReader(std::move(reader_ptr), **object_key);
  auto& reader = *reader_ptr;
  const auto& info = reader.info();
  if (auto st = CheckPreconditions(ctx.req, info); !st.ok()) {
    if (st.error().code == ErrorCode::kNotModified) {
      return EmptyReply(304,
                        {{"ETag", Quote(info.etag)}, {"Last-Modified", HttpDate(info.mtime_ns)}});
    }
    return ErrorReply(st.error());
  }

  std::optional<ByteRange> range;
  if (ctx.Has("partNumber") && ctx.req.FindHeader("range"))
    return ErrorReply(MakeError(ErrorCode::kInvalidRequest,
                                "Cannot specify both Range header and partNumber query "
                                "parameter"));
  if (ctx.Has("partNumber")) {
    auto pr = PartNumberRange(ctx.Q("partNumber"), info.size, info.part_count, info.part_sizes);
    if (!pr.ok()) return ErrorReply(pr.error());
    range = *pr;
  } else if (const auto* rh = ctx.req.FindHeader("range")) {
    auto r = ParseRange(*rh, info.size);
    if (!r.ok()) {
      return ErrorReply(MakeError(ErrorCode::kInvalidRange),
                        {{"Content-Range", "bytes */" + std::to_string(info.size)}});
    }
    range = *r;
  }

  bool partial = range.has_value() && (ctx.Has("partNumber") || ctx.req.FindHeader("range"));
  uint64_t start = range ? range->start : 0;
  uint64_t length = range ? range->length : info.size;
  HttpResponseHead resp;  // the head's status and headers, collected for the reply
  resp.status = partial ? 206 : 200;
  AddObjectHeaders(resp, info);
  {
    HeaderList sse_headers;
    AddStoredSseHeaders(sse_headers, info.internal, *sse);
    SetHeaders(resp, sse_headers);
  }
  // The lock headers where the caller may read the lock (AWS).
  if (!info.lock_mode.empty() || !info.legal_hold.empty()) {
    storage::ObjectInfo lock;
    if (ctx.allowed("s3:GetObjectRetention", ctx.key).ok()) {
      lock.lock_mode = info.lock_mode;
      lock.lock_until_ms = info.lock_until_ms;
    }
    if (ctx.allowed("s3:GetObjectLegalHold", ctx.key).ok()) lock.legal_hold = info.legal_hold;
    HeaderList lock_headers;
    AddObjectLockHeaders(lock_headers, lock);
    SetHeaders(resp, lock_headers);
  }
  if (ToLower(ctx.req.HeaderOr("x-amz-checksum-mode")) == "enabled" && !info.checksums.empty()) {
    // A part of a composite object is still described as COMPOSITE.
    AddChecksumHeaders(resp, ResponseChecksums(info, ctx.Has("partNumber"), start, length),
                       checksum::TypeOfValue(info.checksums.begin()->second));
  }
  {
    HeaderList version_header;
    AddReadVersionHeader(version_header, env.store, ctx.bucket, ctx.version, info);
    if (!ctx.version) AddExpirationHeader(version_header, env.store, ctx.bucket, info);
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
        RdmaGet(*env.rdma, *rdma_token, ctx.req, ctx.auth, reader, start, length, resp.status);
    if (!moved.ok()) return ErrorReply(moved.error());
    resp.Set("x-amz-rdma-reply", std::to_string(resp.status));
    if (ctx.req.FindHeader("x-amz-rdma-agent")) resp.Set("x-amz-rdma-agent", "cuobj");
    resp.Set("x-amz-rdma-bytes-transferred", std::to_string(*moved));
    return EmptyReply(resp.status, std::move(resp.headers));
  }
  Reply out;
  out.status = resp.status;
  out.headers = std::move(resp.headers);
  out.reader = std::move(reader_ptr);
  out.start = start;
  out.length = length;
  return out;
}

}  // namespace

Reply HandleGetObject(const Env& env, S3Request& ctx) { return ReadObject(env, ctx, false); }

Reply HandleHeadObject(const Env& env, S3Request& ctx) { return ReadObject(env, ctx, true); }

Reply HandleGetObjectAttributes(const Env& env, S3Request& ctx) {
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
      return ErrorReply(
          MakeError(ErrorCode::kInvalidArgument, "Invalid attribute name specified."));
    }
    any = true;
  }
  if (!any)
    return ErrorReply(MakeError(ErrorCode::kInvalidArgument,
                                "The x-amz-object-attributes header specifying the attributes "
                                "to be retrieved is either missing or empty"));
  // x-amz-max-parts, x-amz-part-number-marker: 0 to 2^31-1 accepted, at most `cap` used.
  auto count = [&](std::string_view arg, int64_t cap, int& out) -> Status {
    const auto* v = ctx.req.FindHeader("x-amz-" + std::string(arg));
    if (!v) return {};
    auto n = ParseInt(*v);
    if (!n || *n < 0)
      return MakeError(ErrorCode::kInvalidArgument, "Argument " + std::string(arg) +
                                                        " must be an integer between 0 and "
                                                        "2147483647");
    out = static_cast<int>(std::min<int64_t>(*n, cap));
    return {};
  };
  if (auto st = count("max-parts", 1000, p.max_parts); !st.ok()) return ErrorReply(st.error());
  if (auto st = count("part-number-marker", 10000, p.part_number_marker); !st.ok())
    return ErrorReply(st.error());
  auto info = ctx.version ? env.store.StatObjectVersion(ctx.bucket, ctx.key, *ctx.version)
                          : env.store.StatObject(ctx.bucket, ctx.key);
  if (!info.ok()) return VersionErrorReply(ctx, info.error(), env.store);
  {
    auto sse = ParseSseCustomer(ctx.req, *env.sse);
    if (!sse.ok()) return ErrorReply(sse.error());
    auto object_key = ReadKey(*env.sse, *info, *sse);
    if (!object_key.ok()) return ErrorReply(object_key.error());
  }
  if (auto st = CheckPreconditions(ctx.req, *info); !st.ok()) {
    if (st.error().code == ErrorCode::kNotModified)
      return EmptyReply(304, {{"ETag", Quote(info->etag)}});
    return ErrorReply(st.error());
  }
  if (!info->storage_class.empty()) p.storage_class_name = info->storage_class;
  return XmlReply(GetObjectAttributesXml(p, *info), 200,
                  {{"Last-Modified", HttpDate(info->mtime_ns)}});
}

namespace {
// A conditional delete compares ETags, which is reading the object: AWS asks for s3:GetObject
// beside s3:DeleteObject unless the condition is only "it exists" (*).
Status AllowedToMatch(const S3Request& ctx, const std::string& key, const storage::VersionSel& v,
                      const std::optional<std::string>& if_match) {
  if (!if_match || *if_match == "*") return {};
  return ctx.allowed(v ? "s3:GetObjectVersion" : "s3:GetObject", key);
}
}  // namespace

Reply HandleDeleteObject(const Env& env, S3Request& ctx) {
  std::optional<std::string> if_match;
  if (const std::string* h = ctx.req.FindHeader("if-match")) if_match = *h;
  if (auto st = AllowedToMatch(ctx, ctx.key, ctx.version, if_match); !st.ok())
    return ErrorReply(st.error());
  auto r = DeleteVersionUnderLock(env, ctx, ctx.key, ctx.version, if_match);
  // Deleting what is not there succeeds, unless the delete was conditional on it being there.
  if (!r.ok() && (r.error().code != ErrorCode::kNoSuchKey || if_match))
    return ErrorReply(r.error());
  HeaderList extra;
  if (r.ok() && (ctx.version || r->created_marker)) {
    storage::ObjectInfo v;
    v.version_id = r->version_id;
    v.delete_marker = r->delete_marker;
    AddVersionHeaders(extra, v);
  }
  return EmptyReply(204, extra);
}

Reply HandleDeleteObjects(const Env& env, S3Request& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return ErrorReply(body.error());
  auto parsed = ParseDeleteXml(*body);
  if (!parsed.ok()) return ErrorReply(parsed.error());
  auto bucket = env.store.GetBucketInfo(ctx.bucket);
  if (!bucket.ok()) return ErrorReply(bucket.error());
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
      st = ctx.allowed(version ? "s3:DeleteObjectVersion" : "s3:DeleteObject", entry.key);
    if (st.ok()) st = AllowedToMatch(ctx, entry.key, version, entry.etag);
    storage::DeleteResult done;
    if (st.ok()) {
      auto r = DeleteVersionUnderLock(env, ctx, entry.key, version, entry.etag);
      if (r.ok())
        done = *r;
      else
        st = r.error();
    }
    if (st.ok() || (st.error().code == ErrorCode::kNoSuchKey && !entry.etag)) {
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
  return XmlReply(DeleteResultXml(outcomes, parsed->quiet));
}

}  // namespace rdmastor::s3
