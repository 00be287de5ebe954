// Multipart uploads: CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts.
#include "common/uri.h"
#include "s3/handlers.h"
#include "s3/xml.h"
#include "storage/object_meta.h"

namespace rdmastor::s3 {

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

Reply HandleCreateMultipartUpload(const Env& env, S3Request& ctx) {
  auto opts = ObjectOptionsFromHeaders(ctx.req);
  if (!opts.ok()) return ErrorReply(opts.error());
  // The upload's owner (its initiator, unless OwnershipControls say otherwise) owns the object.
  if (auto st = SetNewObjectOwner(env, ctx, *opts); !st.ok()) return ErrorReply(st.error());
  if (auto st = ParseMultipartChecksumHeaders(ctx.req, *opts); !st.ok())
    return ErrorReply(st.error());
  // The upload record keeps the lock; Complete gives it to the object.
  if (auto st = ApplyObjectLock(env.store, ctx.bucket, ctx.req, *opts, /*put=*/false, NowMs());
      !st.ok())
    return ErrorReply(st.error());
  auto sse = WriteEncryptionOf(env, ctx);
  if (!sse.ok()) return ErrorReply(sse.error());
  if (sse->kind != SseKind::kNone) {
    // Every part is a stream of its own under this one object key.
    auto nk = SealNewObjectKey(*env.sse, *sse, ctx.bucket, ctx.key);
    if (!nk.ok()) return ErrorReply(nk.error());
    opts->internal = std::move(nk->internal);
  }
  auto id = env.store.NewMultipartUpload(ctx.bucket, ctx.key, *opts);
  if (!id.ok()) return ErrorReply(id.error());
  HeaderList extra;
  AddSseHeaders(extra, sse->kind, *sse);
  if (auto algo = hash::ChecksumAlgoFromName(opts->checksum_algorithm)) {
    extra.emplace_back("x-amz-checksum-algorithm", checksum::UpperName(*algo));
    extra.emplace_back("x-amz-checksum-type", opts->checksum_type);
  }
  return XmlReply(InitiateMultipartUploadXml(ctx.bucket, ctx.key, *id), 200, extra);
}

Reply HandleUploadPart(const Env& env, S3Request& ctx) {
  auto pn = PartNumberOf(ctx);
  if (!pn.ok()) return ErrorReply(pn.error());
  std::string upload_id = ctx.Q("uploadId");
  auto rdma = RdmaPutBodyFor(ctx.req, ctx.auth, env.rdma);
  if (!rdma.ok()) return ErrorReply(rdma.error());
  // The upload's checksum algorithm decides what the part must declare and what is computed.
  auto upload = env.store.GetUploadOptions(ctx.bucket, ctx.key, upload_id);
  if (!upload.ok()) return ErrorReply(RdmaUploadError(rdma->get(), upload.error()));
  SseRequest sse;
  auto object_key = UploadKey(*env.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse);
  if (!object_key.ok()) return ErrorReply(RdmaUploadError(rdma->get(), object_key.error()));
  const SseKind kind = SseKindOf(upload->internal);
  auto up =
      PrepareUpload(ctx, rdma->get(), ChecksumRule{.upload = &*upload, .default_checksum = true});
  if (!up.ok()) return ErrorReply(up.error());
  StoredBody stored(*up->digest, *object_key);
  auto part =
      env.store.PutObjectPart(ctx.bucket, ctx.key, upload_id, *pn, *stored.body,
                              stored.Size(up->size), [&](uint64_t) -> Result<storage::CommitInfo> {
                                auto ci = FinishUpload(ctx, *up);
                                if (ci.ok()) ci->etag = WriteEtag(kind, *object_key, ci->etag);
                                return ci;
                              });
  if (!part.ok()) return ErrorReply(RdmaUploadError(rdma->get(), part.error()));
  HeaderList extra{{"ETag", Quote(part->etag)}};
  AddStoredSseHeaders(extra, upload->internal, sse);
  for (const auto& [algo, value] : part->checksums)
    extra.emplace_back("x-amz-checksum-" + algo, value);
  AddRdmaUploadReply(rdma->get(), extra, stored.enc ? stored.enc->plaintext_bytes() : 0);
  return EmptyReply(200, extra);
}

Reply HandleCompleteMultipartUpload(const Env& env, S3Request& ctx) {
  // x-amz-checksum-* here describe the object being completed, not the XML body.
  auto body = ReadXmlBody(ctx, ChecksumRule{false, nullptr});
  if (!body.ok()) return ErrorReply(body.error());
  auto parts = ParseCompleteMultipartXml(*body);
  if (!parts.ok()) return ErrorReply(parts.error());
  if (auto st = CheckCompletePartChecksums(*parts); !st.ok()) return ErrorReply(st.error());
  auto declared = ParseCompleteChecksumHeaders(ctx.req);
  if (!declared.ok()) return ErrorReply(declared.error());
  if (auto st = CollapseRepeatedParts(*parts); !st.ok()) return ErrorReply(st.error());
  // An SSE-C key sent with Complete must be the upload's; AWS requires it only when the upload
  // has a checksum algorithm.
  SseRequest sse;
  std::map<std::string, std::string> sse_internal;  // the upload's encryption, for the reply
  if (auto upload = env.store.GetUploadOptions(ctx.bucket, ctx.key, ctx.Q("uploadId"));
      upload.ok()) {
    sse_internal = upload->internal;
    auto object_key = UploadKey(*env.sse, ctx.req, *upload, ctx.bucket, ctx.key, &sse,
                                /*required=*/!upload->checksum_algorithm.empty());
    if (!object_key.ok()) return ErrorReply(object_key.error());
  }
  auto info = env.store.CompleteMultipartUpload(ctx.bucket, ctx.key, ctx.Q("uploadId"), *parts,
                                                ConditionalWrite(ctx.req), *declared);
  if (!info.ok() && info.error().code == ErrorCode::kNoSuchUpload) {
    // A retry (after a timeout) of a Complete that went through: the upload is gone, but the
    // object made of exactly these parts is there. Answer as the first time (AWS does).
    std::vector<std::string> etags;
    for (const auto& p : *parts) etags.push_back(Unquote(p.etag));
    auto current = env.store.OpenObject(ctx.bucket, ctx.key);
    if (!etags.empty() && current.ok() && (*current)->info().part_count > 0 &&
        (*current)->info().etag == storage::MultipartEtag(etags))
      info = (*current)->info();
  }
  if (!info.ok()) return ErrorReply(info.error());
  HeaderList extra;
  if (!info->version_id.empty()) extra.emplace_back("x-amz-version-id", info->version_id);
  if (sse_internal.empty()) sse_internal = info->internal;  // a retried Complete
  // SSE-C's headers only when the request brought the key (AWS).
  if (SseKindOf(sse_internal) != SseKind::kC || sse.kind == SseKind::kC)
    AddStoredSseHeaders(extra, sse_internal, sse);
  std::string location =
      "http://" + ctx.req.HeaderOr("host") + "/" + ctx.bucket + "/" + uri::Encode(ctx.key, false);
  return XmlReply(
      CompleteMultipartUploadXml(location, ctx.bucket, ctx.key, info->etag, info->checksums), 200,
      extra);
}

Reply HandleAbortMultipartUpload(const Env& env, S3Request& ctx) {
  auto st = env.store.AbortMultipartUpload(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!st.ok()) return ErrorReply(st.error());
  return EmptyReply(204);
}

Reply HandleListParts(const Env& env, S3Request& ctx) {
  auto max_parts = ParseMaxKeys(ctx, "max-parts");
  if (!max_parts.ok()) return ErrorReply(max_parts.error());
  int marker = 0;
  if (ctx.Has("part-number-marker")) {
    auto m = ParseInt(ctx.Q("part-number-marker"));
    if (!m || *m < 0)
      return ErrorReply(MakeError(ErrorCode::kInvalidArgument, "Invalid part-number-marker"));
    marker = static_cast<int>(std::min<int64_t>(*m, 10000));
  }
  auto parts = env.store.ListParts(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!parts.ok()) return ErrorReply(parts.error());
  auto upload = env.store.GetUploadOptions(ctx.bucket, ctx.key, ctx.Q("uploadId"));
  if (!upload.ok()) return ErrorReply(upload.error());
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
  const Owner initiator =
      OwnerShown(*env.iam, upload->owner, env.iam->CachedBucketAccess(ctx.bucket).owner);
  return XmlReply(ListPartsXml(p, *parts, initiator));  // pages from the marker
}

}  // namespace rdmastor::s3
