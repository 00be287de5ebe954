// Copies: CopyObject and UploadPartCopy (x-amz-copy-source).
#include "common/uri.h"
#include "s3/acl.h"
#include "s3/handlers.h"
#include "s3/names.h"
#include "s3/tagging.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

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

// x-amz-copy-source (routing guarantees it is there): its bucket and key, which must be valid
// names; a versionId into `version`.
Result<std::pair<std::string, std::string>> CopySourceOf(const HttpRequest& req,
                                                         storage::VersionSel* version) {
  auto src = ParseCopySource(*req.FindHeader("x-amz-copy-source"), version);
  if (!src.ok()) return src.error();
  if (!IsValidBucketName(src->first)) return MakeError(ErrorCode::kInvalidBucketName);
  if (auto st = ValidateObjectKey(src->second); !st.ok()) return st.error();
  return src;
}

// The copy source, opened as both copies read it: decrypted with its SSE-C key (`src_sse`, the
// x-amz-copy-source-server-side-encryption-customer-* headers) or the server's, and the
// x-amz-copy-source-if-* preconditions checked against it.
Result<std::unique_ptr<storage::ObjectReader>> OpenCopySource(
    const Env& env, const HttpRequest& req, const std::string& bucket, const std::string& key,
    const storage::VersionSel& version, const SseRequest& src_sse) {
  auto reader = OpenSource(env.store, bucket, key, version);
  if (!reader.ok()) return reader.error();
  auto src_key = ReadKey(*env.sse, (*reader)->info(), src_sse);
  if (!src_key.ok()) return src_key.error();
  if (*src_key) *reader = NewDecryptingReader(std::move(*reader), **src_key);
  if (auto st = CheckCopyPreconditions(req, (*reader)->info()); !st.ok()) return st.error();
  return reader;
}

}  // namespace

Reply HandleCopyObject(const Env& env, S3Request& ctx) {
  storage::VersionSel src_version;
  auto src = CopySourceOf(ctx.req, &src_version);
  if (!src.ok()) return ErrorReply(src.error());
  const auto& [src_bucket, src_key] = *src;
  std::string directive = ctx.req.HeaderOr("x-amz-metadata-directive", "COPY");
  if (directive != "COPY" && directive != "REPLACE")
    return ErrorReply(MakeError(ErrorCode::kInvalidArgument, "Unknown metadata directive."));
  bool replace = directive == "REPLACE";

  // The source's SSE-C key (x-amz-copy-source-server-side-encryption-customer-*) and the
  // destination's encryption: checked before any data moves.
  auto src_sse = ParseSseCustomer(ctx.req, *env.sse, /*copy_source=*/true);
  if (!src_sse.ok()) return ErrorReply(src_sse.error());
  auto dst_sse = WriteEncryptionOf(env, ctx);
  if (!dst_sse.ok()) return ErrorReply(dst_sse.error());
  auto reader = OpenCopySource(env, ctx.req, src_bucket, src_key, src_version, *src_sse);
  if (!reader.ok()) return ErrorReply(reader.error());
  const auto& src_info = (*reader)->info();
  HeaderList version_headers;
  if (src_version || !src_info.version_id.empty())
    version_headers.emplace_back("x-amz-copy-source-version-id",
                                 src_info.version_id.empty() ? "null" : src_info.version_id);

  storage::PutOptions opts;
  if (replace) {
    auto parsed = ObjectOptionsFromHeaders(ctx.req);
    if (!parsed.ok()) return ErrorReply(parsed.error());
    opts = std::move(parsed).value();
  } else {
    opts.content_type = src_info.content_type;
    opts.user_metadata = src_info.user_metadata;
    opts.storage_class = StorageClassOf(ctx.req);  // a copy is STANDARD unless it says otherwise
  }
  auto tags = CopyObjectTags(ctx.req, src_info.tags);
  if (!tags.ok()) return ErrorReply(tags.error());
  opts.tags = std::move(*tags);
  // The copy's ACL is the request's (private when it names none), never the source's (AWS).
  auto acl = RequestedAcl(ctx.req);
  if (!acl.ok()) return ErrorReply(acl.error());
  opts.acl = iam::StoredAcl(acl->value_or(iam::CannedAcl::kPrivate));
  // The copy belongs to its writer, never to the source's owner (AWS).
  if (auto st = SetNewObjectOwner(env, ctx, opts); !st.ok()) return ErrorReply(st.error());
  // The copy's lock is the request's (or the bucket's default), never the source's (AWS).
  if (auto st = ApplyObjectLock(env.store, ctx.bucket, ctx.req, opts, /*put=*/false, NowMs());
      !st.ok())
    return ErrorReply(st.error());
  // x-amz-checksum-algorithm: the copy gets a checksum of that algorithm, computed as it is copied.
  std::optional<hash::Algo> new_checksum;
  if (const auto* algo = ctx.req.FindHeader("x-amz-checksum-algorithm")) {
    new_checksum = checksum::AlgoFromAnyCase(*algo);
    if (!new_checksum)
      return ErrorReply(MakeError(ErrorCode::kInvalidRequest,
                                  "Checksum algorithm provided is unsupported. Please try "
                                  "again with any of the valid types: [CRC32, CRC32C, "
                                  "CRC64NVME, SHA1, SHA256]"));
  }
  // Copying a named version onto its own key makes it the latest again (a restore): a copy.
  bool same = src_bucket == ctx.bucket && src_key == ctx.key && !src_version;
  // Encrypted data is always rewritten: a copy gets its own object key (and onto itself the copy
  // changes the encryption, which AWS counts as a change).
  const bool reencrypt =
      dst_sse->kind != SseKind::kNone || SseKindOf(src_info.internal) != SseKind::kNone;
  // Onto itself: legal when it replaces the metadata or names a storage class (AWS), a checksum
  // algorithm or an encryption (which rewrite the data below).
  if (same && !new_checksum && !reencrypt && !replace &&
      !ctx.req.FindHeader("x-amz-storage-class")) {
    return ErrorReply(MakeError(ErrorCode::kInvalidRequest,
                                "This copy request is illegal because it is trying to copy "
                                "an object to itself without changing the object's "
                                "metadata, storage class, website redirect location or "
                                "encryption attributes."));
  }
  // A new storage class is a new parity: the data is rewritten (the copy below), not only the
  // metadata. So is a copy that locks its version (Object Lock: a new version of its own; an
  // update in place never changes a lock, storage/version_record.h).
  const bool locks = !opts.lock_mode.empty() || !opts.legal_hold.empty();
  if (same && !new_checksum && !reencrypt && !locks &&
      opts.storage_class == src_info.storage_class) {
    // Onto itself the destination is the source: its conditions hold against the source read.
    if (auto cond = ConditionalWrite(ctx.req)) {
      if (auto st = cond(&src_info); !st.ok()) return ErrorReply(st.error());
    }
    reader->reset();
    auto info = env.store.UpdateMetadata(ctx.bucket, ctx.key, opts);
    if (!info.ok()) return ErrorReply(info.error());
    if (!info->version_id.empty())
      version_headers.emplace_back("x-amz-version-id", info->version_id);
    return XmlReply(CopyObjectResultXml(info->etag, info->mtime_ns, info->checksums), 200,
                    version_headers);
  }

  std::optional<crypto::Key> dst_key;
  if (dst_sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(*env.sse, *dst_sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return ErrorReply(nk.error());
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
  auto info = env.store.PutObject(
      ctx.bucket, ctx.key, *stored.body, opts, [&](uint64_t) -> Result<storage::CommitInfo> {
        storage::CommitInfo ci;
        ci.etag = WriteEtag(dst_sse->kind, dst_key, hash::HexEncode(digest.Md5()));
        ci.checksums = kept;
        if (computed)
          ci.checksums[std::string(hash::ChecksumName(*computed))] =
              hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!info.ok()) return ErrorReply(info.error());
  if (!info->version_id.empty()) version_headers.emplace_back("x-amz-version-id", info->version_id);
  AddSseHeaders(version_headers, dst_sse->kind, *dst_sse);
  return XmlReply(CopyObjectResultXml(info->etag, info->mtime_ns, info->checksums), 200,
                  version_headers);
}

Reply HandleUploadPartCopy(const Env& env, S3Request& ctx) {
  auto pn = PartNumberOf(ctx);
  if (!pn.ok()) return ErrorReply(pn.error());
  std::string upload_id = ctx.Q("uploadId");
  storage::VersionSel src_version;
  auto src = CopySourceOf(ctx.req, &src_version);
  if (!src.ok()) return ErrorReply(src.error());
  const auto& [src_bucket, src_key] = *src;
  // Fail on a missing upload before reading any source data.
  auto upload = env.store.GetUploadOptions(ctx.bucket, ctx.key, upload_id);
  if (!upload.ok()) return ErrorReply(upload.error());
  // The part gets the upload's checksum (S3's default when it has none), computed as it is copied.
  const hash::Algo part_algo =
      hash::ChecksumAlgoFromName(upload->checksum_algorithm).value_or(checksum::kDefaultAlgo);
  SseRequest sse;
  auto object_key = UploadKey(*env.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse);
  if (!object_key.ok()) return ErrorReply(object_key.error());
  const SseKind kind = SseKindOf(upload->internal);
  auto src_sse = ParseSseCustomer(ctx.req, *env.sse, /*copy_source=*/true);
  if (!src_sse.ok()) return ErrorReply(src_sse.error());
  auto reader = OpenCopySource(env, ctx.req, src_bucket, src_key, src_version, *src_sse);
  if (!reader.ok()) return ErrorReply(reader.error());
  const auto& src_info = (*reader)->info();
  uint64_t start = 0, length = src_info.size;
  if (const auto* rh = ctx.req.FindHeader("x-amz-copy-source-range")) {
    // Must be exactly bytes=first-last within the object.
    std::string_view r = *rh;
    auto dash = r.find('-');
    if (r.rfind("bytes=", 0) != 0 || dash == std::string_view::npos)
      return ErrorReply(
          MakeError(ErrorCode::kInvalidArgument, "Range specified is not valid for source object"));
    auto first = ParseInt(r.substr(6, dash - 6));
    auto last = ParseInt(r.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first ||
        static_cast<uint64_t>(*last) >= src_info.size) {
      // AWS: 400 InvalidArgument naming the source's size (not GET's 416 InvalidRange).
      Error e = MakeError(ErrorCode::kInvalidArgument,
                          "Range specified is not valid for source object of size: " +
                              std::to_string(src_info.size));
      e.details.emplace_back("ArgumentName", "x-amz-copy-source-range");
      return ErrorReply(e);
    }
    start = static_cast<uint64_t>(*first);
    length = static_cast<uint64_t>(*last - *first + 1);
  }
  ReaderSource source(**reader, start, length);
  DigestingSource digest(source, false, part_algo);
  StoredBody stored(digest, *object_key);
  auto part = env.store.PutObjectPart(
      ctx.bucket, ctx.key, upload_id, *pn, *stored.body, stored.Size(length),
      [&](uint64_t) -> Result<storage::CommitInfo> {
        storage::CommitInfo ci;
        ci.etag = WriteEtag(kind, *object_key, hash::HexEncode(digest.Md5()));
        ci.checksums[std::string(hash::ChecksumName(part_algo))] =
            hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!part.ok()) return ErrorReply(part.error());
  HeaderList extra;
  AddStoredSseHeaders(extra, upload->internal, sse);
  return XmlReply(CopyPartResultXml(part->etag, part->mtime_ns, part->checksums), 200, extra);
}

}  // namespace rdmastor::s3
