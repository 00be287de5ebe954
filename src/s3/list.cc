// Listings: ListObjects (V1, V2, V2M), ListObjectVersions (and M), ListMultipartUploads.
#include "common/utf8.h"
#include "s3/handlers.h"
#include "s3/sse.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

// A stored header name as MinIO lists it: content-type as is, others in Go's canonical form
// (x-amz-meta-color -> X-Amz-Meta-Color).
std::string ListedName(std::string_view name) {
  std::string out(name);
  if (out == "content-type") return out;
  bool upper = true;
  for (auto& c : out) {
    c = upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
              : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    upper = c == '-';
  }
  return out;
}

// Can `name` be an XML element name and `value` XML text? A header name may hold characters
// no element name may ('!', '#', ...), a value bytes that are not UTF-8 or C0 controls: such
// an entry is left out of the listing (GET/HEAD return it).
bool Listable(std::string_view name, std::string_view value) {
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  for (unsigned char c : value)
    if (c < 0x20 && c != '\t') return false;
  return IsValidUtf8(value);
}

// MinIO's metadata=true (ListObjectsV2M, ListObjectVersionsM): each object's content type, user
// metadata, stored headers and encryption where the caller may s3:GetObject it, its tags where it
// may s3:GetObjectTagging them; in a version listing s3:GetObjectVersion and
// s3:GetObjectVersionTagging, the actions that read a named version. A delete marker shows
// neither (it has none).
std::vector<ListedMetadata> ListedMetadataOf(S3Request& r,
                                             const std::vector<storage::ObjectInfo>& objects,
                                             bool versions) {
  const std::string_view read = versions ? "s3:GetObjectVersion" : "s3:GetObject";
  const std::string_view tagging = versions ? "s3:GetObjectVersionTagging" : "s3:GetObjectTagging";
  std::vector<ListedMetadata> out(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    const storage::ObjectInfo& o = objects[i];
    if (o.delete_marker) continue;
    if (r.allowed(read, o.key).ok()) {
      auto& m = out[i].metadata;
      switch (SseKindOf(o.internal)) {
        case SseKind::kS3:
          m.emplace_back("X-Amz-Server-Side-Encryption", "AES256");
          break;
        case SseKind::kKms:
          m.emplace_back("X-Amz-Server-Side-Encryption", "aws:kms");
          break;
        case SseKind::kC:
          m.emplace_back("X-Amz-Server-Side-Encryption-Customer-Algorithm", "AES256");
          break;
        case SseKind::kNone:
          break;
      }
      if (!o.content_type.empty()) m.emplace_back("content-type", o.content_type);
      for (const auto& [name, value] : o.user_metadata)
        if (Listable(name, value)) m.emplace_back(ListedName(name), value);
    }
    if (!o.tags.empty() && r.allowed(tagging, o.key).ok()) out[i].tags = o.tags;
  }
  return out;
}

// max-keys and encoding-type, as the object listings take them: "url" or none, else
// InvalidArgument.
struct Paging {
  int max_keys;
  bool encode_url;
};
Result<Paging> ParsePaging(const S3Request& ctx) {
  auto max_keys = ParseMaxKeys(ctx, "max-keys");
  if (!max_keys.ok()) return max_keys.error();
  const std::string encoding = ctx.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return MakeError(ErrorCode::kInvalidArgument, "Invalid Encoding Method specified in Request");
  return Paging{*max_keys, !encoding.empty()};
}

}  // namespace

Reply HandleListObjectsV1(const Env& env, S3Request& ctx) {
  auto page = ParsePaging(ctx);
  if (!page.ok()) return ErrorReply(page.error());
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), ctx.Q("marker"), page->max_keys};
  auto res = env.store.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return ErrorReply(res.error());
  ListV1Params p{ctx.bucket,     lo.prefix,      lo.delimiter,
                 lo.start_after, page->max_keys, page->encode_url};
  const ListingOwners owners = ListingOwnersOf(*env.iam, ctx.bucket);
  return XmlReply(ListObjectsV1Xml(p, *res, owners.bucket, &owners.names));
}

Reply HandleListObjectsV2(const Env& env, S3Request& ctx) {
  auto page = ParsePaging(ctx);
  if (!page.ok()) return ErrorReply(page.error());
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
  storage::ListOptions lo{ctx.Q("prefix"), ctx.Q("delimiter"), marker, page->max_keys};
  auto res = env.store.ListObjects(ctx.bucket, lo);
  if (!res.ok()) return ErrorReply(res.error());
  ListV2Params p;
  p.bucket = ctx.bucket;
  p.prefix = lo.prefix;
  p.delimiter = lo.delimiter;
  p.start_after = start_after;
  p.continuation_token = token;
  p.continuation_token_sent = ctx.Has("continuation-token");
  p.max_keys = page->max_keys;
  p.encode_url = page->encode_url;
  p.fetch_owner = ctx.Q("fetch-owner") == "true";
  if (res->truncated) p.next_continuation_token = hash::Base64Encode(res->next_marker);
  if (ctx.op == S3Op::kListObjectsV2M) p.extras = ListedMetadataOf(ctx, res->objects, false);
  const ListingOwners owners = ListingOwnersOf(*env.iam, ctx.bucket);
  return XmlReply(ListObjectsV2Xml(p, *res, owners.bucket, &owners.names));
}

Reply HandleListObjectVersions(const Env& env, S3Request& ctx) {
  auto page = ParsePaging(ctx);
  if (!page.ok()) return ErrorReply(page.error());
  ListVersionsQuery q{ctx.Q("prefix"),
                      ctx.Q("delimiter"),
                      ctx.Q("key-marker"),
                      ctx.Q("version-id-marker"),
                      ctx.Has("version-id-marker"),
                      page->max_keys,
                      page->encode_url};
  ListedMetadataFn metadata;
  if (ctx.op == S3Op::kListObjectVersionsM)
    metadata = [&ctx](const std::vector<storage::ObjectInfo>& versions) {
      return ListedMetadataOf(ctx, versions, true);
    };
  const ListingOwners owners = ListingOwnersOf(*env.iam, ctx.bucket);
  auto xml = ListVersionsPage(env.store, ctx.bucket, q, metadata, &owners);
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
  const ListingOwners owners = ListingOwnersOf(*env.iam, ctx.bucket);
  return XmlReply(ListMultipartUploadsXml(p, *uploads, owners.bucket, &owners.names));
}

}  // namespace rdmastor::s3
