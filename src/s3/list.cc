// Listings: ListObjects (V1, V2), ListObjectVersions, ListMultipartUploads.
#include "s3/handlers.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

Reply HandleListObjectsV1(const Env& env, S3Request& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return ErrorReply(max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return ErrorReply(
        MakeError(ErrorCode::kInvalidArgument, "Invalid Encoding Method specified in Request"));
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), ctx.Q("marker"), *max_keys};
  auto res = env.store.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return ErrorReply(res.error());
  ListV1Params p{ctx.bucket, lo.prefix, lo.delimiter, lo.start_after, *max_keys, encoding == "url"};
  return XmlReply(ListObjectsV1Xml(p, *res, Owner{}));
}

Reply HandleListObjectsV2(const Env& env, S3Request& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return ErrorReply(max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return ErrorReply(
        MakeError(ErrorCode::kInvalidArgument, "Invalid Encoding Method specified in Request"));
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
      return ErrorReply(
          MakeError(ErrorCode::kInvalidArgument, "The continuation token provided is incorrect"));
    marker = *decoded;
  }
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), marker, *max_keys};
  auto res = env.store.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return ErrorReply(res.error());
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
  return XmlReply(ListObjectsV2Xml(p, *res, Owner{}));
}

Reply HandleListObjectVersions(const Env& env, S3Request& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return ErrorReply(max_keys.error());
  std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return ErrorReply(
        MakeError(ErrorCode::kInvalidArgument, "Invalid Encoding Method specified in Request"));
  ListVersionsQuery q{ctx.Q("prefix"),
                      ctx.Q("delimiter"),
                      ctx.Q("key-marker"),
                      ctx.Q("version-id-marker"),
                      ctx.Has("version-id-marker"),
                      *max_keys,
                      encoding == "url"};
  auto xml = ListVersionsPage(env.store, ctx.bucket, q);
  if (!xml.ok()) return ErrorReply(xml.error());
  return XmlReply(*xml);
}

Reply HandleListMultipartUploads(const Env& env, S3Request& ctx) {
  auto max_uploads = ParseMaxKeys(ctx, "max-uploads");
  if (!max_uploads.ok()) return ErrorReply(max_uploads.error());
  ListUploadsParams p;
  p.bucket = ctx.bucket;
  p.prefix = ctx.Q("prefix");
  p.delimiter = ctx.Q("delimiter");
  p.key_marker = ctx.Q("key-marker");
  p.upload_id_marker = ctx.Q("upload-id-marker");
  p.max_uploads = *max_uploads;
  p.encode_url = ctx.Q("encoding-type") == "url";
  auto uploads = env.store.ListMultipartUploads(ctx.bucket, p.prefix);
  if (!uploads.ok()) return ErrorReply(uploads.error());
  return XmlReply(ListMultipartUploadsXml(p, *uploads, Owner{}));  // pages and filters
}

}  // namespace rdmastor::s3
