// Service and bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
// GetBucketLocation, Get/PutBucketVersioning; the subresources of buckets and objects (tagging,
// ACLs, policies, default encryption).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "iam/store.h"
#include "s3/access.h"
#include "s3/acl.h"
#include "s3/handlers.h"
#include "s3/sse.h"
#include "s3/tagging.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

// The answer of an object or bucket subresource handler (?tagging, ?acl: a reply with `status`,
// `xml` ("" = no body) and `headers`); on an object a delete marker met answers as reads do.
template <typename SubReply>
Reply SubresourceReply(const S3Request& r, const Result<SubReply>& reply,
                       storage::ObjectLayer& store) {
  if (!reply.ok()) {
    if (r.has_key) return VersionErrorReply(r, reply.error(), store);
    return reply.error();
  }
  if (reply->xml.empty()) return EmptyReply(reply->status, reply->headers);
  return XmlReply(reply->xml, reply->status, reply->headers);
}

}  // namespace

Reply HandleListBuckets(const Env& env, S3Request& ctx) {
  // Pages as current SDKs ask for them: max-buckets, continuation-token (the base64 of the last
  // name listed: stateless, opaque to clients), prefix, bucket-region (every bucket is in ours).
  size_t max_buckets = SIZE_MAX;
  if (ctx.Has("max-buckets")) {
    auto v = ParseInt(ctx.Q("max-buckets"));
    if (!v || *v < 1 || *v > 10000) {
      Error e = MakeError(ErrorCode::kInvalidArgument,
                          "max-buckets must be an integer between 1 and 10000");
      e.details.emplace_back("ArgumentName", "max-buckets");
      return ErrorReply(e);
    }
    max_buckets = static_cast<size_t>(*v);
  }
  std::string after;
  if (!ctx.Q("continuation-token").empty()) {
    auto decoded = hash::Base64Decode(ctx.Q("continuation-token"));
    if (!decoded)
      return ErrorReply(
          MakeError(ErrorCode::kInvalidArgument, "The continuation token provided is incorrect"));
    after = *decoded;
  }
  const std::string prefix = ctx.Q("prefix");
  auto buckets = env.store.ListBuckets();
  if (!buckets.ok()) return ErrorReply(buckets.error());
  std::erase_if(*buckets, [](const auto& b) { return b.name == iam::kSystemBucket; });
  std::sort(buckets->begin(), buckets->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  ListBucketsParams p;
  if (ctx.Has("prefix")) p.prefix = prefix;
  p.region = env.region;
  std::vector<storage::BucketInfo> page;
  const bool other_region = ctx.Has("bucket-region") && ctx.Q("bucket-region") != env.region;
  for (auto& b : *buckets) {
    if (other_region || b.name <= after || !b.name.starts_with(prefix)) continue;
    if (page.size() == max_buckets) {
      p.continuation_token = hash::Base64Encode(page.back().name);
      break;
    }
    page.push_back(std::move(b));
  }
  return XmlReply(ListBucketsXml(page, OwnerShown(*env.iam, OwnerKeyOf(ctx.caller)), p));
}

namespace {

// CreateBucket on a name that exists. Someone else's bucket: 409 BucketAlreadyExists. The
// caller's own: in us-east-1, AWS's legacy 200 with the bucket kept as it is, provided the request
// asks for nothing the bucket does not already have (another ACL, Object Lock: 409
// BucketAlreadyExists, as RGW answers and s3-tests expects); in any other region 409
// BucketAlreadyOwnedByYou, as AWS and MinIO answer there.
Reply RecreateBucketReply(const Env& env, S3Request& ctx, const std::string& location,
                          iam::CannedAcl acl, bool lock) {
  auto existing = env.iam->GetBucketAccess(ctx.bucket);
  if (!existing.ok()) return ErrorReply(existing.error());
  const std::string caller = ctx.caller.root() ? std::string() : ctx.caller.access_key;
  if (existing->owner != caller) return ErrorReply(MakeError(ErrorCode::kBucketAlreadyExists));
  const std::string_view region = location.empty() ? std::string_view(env.region) : location;
  if (region != "us-east-1") return ErrorReply(MakeError(ErrorCode::kBucketAlreadyOwnedByYou));
  if (lock || existing->acl != iam::AclName(acl))
    return ErrorReply(MakeError(ErrorCode::kBucketAlreadyExists));
  return EmptyReply(200, {{"Location", "/" + ctx.bucket}});
}

}  // namespace

Reply HandleCreateBucket(const Env& env, S3Request& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return ErrorReply(body.error());
  auto location = ParseCreateBucketXml(*body);
  if (!location.ok()) return ErrorReply(location.error());
  if (env.region_configured && !location->empty() && *location != env.region) {
    return ErrorReply(MakeError(ErrorCode::kIllegalLocationConstraint,
                                "The " + *location +
                                    " location constraint is incompatible for the region "
                                    "specific endpoint this request was sent to."));
  }
  auto acl = RequestedAcl(ctx.req);
  if (!acl.ok()) return ErrorReply(acl.error());
  // x-amz-object-ownership: the bucket's OwnershipControls from the start (s3/ownership.h).
  const std::string* ownership = ctx.req.FindHeader("x-amz-object-ownership");
  if (ownership) {
    if (*ownership != "BucketOwnerEnforced" && *ownership != "BucketOwnerPreferred" &&
        *ownership != "ObjectWriter")
      return ErrorReply(MakeError(ErrorCode::kInvalidArgument, "Invalid x-amz-object-ownership header"));
    if (*ownership == "BucketOwnerEnforced" && *acl && IsPublicAcl(**acl))
      return ErrorReply(MakeError(ErrorCode::kInvalidBucketAclWithObjectOwnership));
  }
  // Object Lock at creation (AWS): it turns versioning on, and needs both actions besides.
  const std::string* lock_header = ctx.req.FindHeader("x-amz-bucket-object-lock-enabled");
  const bool lock = lock_header && ToLower(*lock_header) == "true";
  if (lock && !ctx.caller.root()) {
    for (const char* action : {"s3:PutBucketObjectLockConfiguration", "s3:PutBucketVersioning"})
      if (auto allowed = ctx.allowed(action, {}); !allowed.ok()) return ErrorReply(allowed.error());
  }
  auto st = env.store.MakeBucket(ctx.bucket);
  if (!st.ok() && st.error().code == ErrorCode::kBucketAlreadyOwnedByYou)
    return RecreateBucketReply(env, ctx, *location, acl->value_or(iam::CannedAcl::kPrivate), lock);
  if (!st.ok()) return ErrorReply(st.error());
  if (lock) {
    BucketLock enabled;
    enabled.enabled = true;
    Status on = env.store.SetBucketVersioning(ctx.bucket, storage::Versioning::kEnabled);
    if (on.ok())
      on = env.store.SetBucketConfig(ctx.bucket, kObjectLockConfigName, BucketLockRecord(enabled));
    if (!on.ok()) {
      // A bucket asked for with Object Lock must not exist without it.
      spdlog::warn("{}: bucket {} not created: Object Lock could not be enabled: {}",
                   ctx.request_id, ctx.bucket, on.error().message);
      (void)env.store.DeleteBucket(ctx.bucket);
      return ErrorReply(on.error());
    }
  }
  if (ownership) {
    if (auto st = env.store.SetBucketConfig(ctx.bucket, kOwnershipConfigName, *ownership);
        !st.ok()) {
      (void)env.store.DeleteBucket(ctx.bucket);  // not without the ownership it was asked with
      return ErrorReply(st.error());
    }
  }
  // A policy left by an earlier bucket of the same name (ForgetBucket is best effort) must not
  // apply to this one: removed now, or the bucket is not created.
  if (auto gone = env.iam->DeleteBucketPolicy(ctx.bucket); !gone.ok()) {
    spdlog::warn("{}: bucket {} not created: an earlier policy could not be removed: {}",
                 ctx.request_id, ctx.bucket, gone.error().message);
    (void)env.store.DeleteBucket(ctx.bucket);
    return ErrorReply(gone.error());
  }
  // The owner ("" for root) and the ACL, written for every new bucket so that no record left by
  // an earlier bucket of the same name (ForgetBucket is best effort) can apply to this one.
  const iam::BucketAccess access{
      ctx.caller.root() ? std::string() : ctx.caller.access_key,
      std::string(iam::AclName(acl->value_or(iam::CannedAcl::kPrivate)))};
  if (auto rec = env.iam->PutBucketAccess(ctx.bucket, access); !rec.ok()) {
    spdlog::warn("{}: bucket {} created but its owner and ACL not recorded: {}", ctx.request_id,
                 ctx.bucket, rec.error().message);
    // The bucket exists and is private; a client that asked for more must not believe it got it.
    if (access.acl != "private") return ErrorReply(rec.error());
  }
  return EmptyReply(200, {{"Location", "/" + ctx.bucket}});
}

Reply HandleHeadBucket(const Env& env, S3Request& ctx) {
  auto info = env.store.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return ErrorReply(info.error());
  return EmptyReply(200, {{"x-amz-bucket-region", env.region}});
}

Reply HandleDeleteBucket(const Env& env, S3Request& ctx) {
  auto st = env.store.DeleteBucket(ctx.bucket);
  if (!st.ok()) return ErrorReply(st.error());
  env.iam->ForgetBucket(ctx.bucket);  // its policy and ACL
  return EmptyReply(204);
}

Reply HandleGetBucketLocation(const Env& env, S3Request& ctx) {
  auto info = env.store.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return ErrorReply(info.error());
  return XmlReply(LocationXml(env.region));
}

Reply HandleGetBucketVersioning(const Env& env, S3Request& ctx) {
  auto info = env.store.GetBucketInfo(ctx.bucket);
  if (!info.ok()) return ErrorReply(info.error());
  return XmlReply(VersioningConfigurationXml(info->versioning, info->excluded));
}

Reply HandlePutBucketVersioning(const Env& env, S3Request& ctx) {
  auto body = ReadXmlBody(ctx);
  if (!body.ok()) return ErrorReply(body.error());
  auto st = s3::PutBucketVersioning(env.store, ctx.bucket, *body,
                                    ctx.req.FindHeader("x-amz-mfa") != nullptr);
  if (!st.ok()) return ErrorReply(st.error());
  return EmptyReply(200);
}

// ?tagging on a bucket or an object (s3/tagging.h).
Reply HandleTaggingRequest(const Env& env, S3Request& r) {
  return SubresourceReply(r,
                          HandleTagging(env.store, NameOf(r.op), r.bucket, r.key, r.version,
                                        [&] { return ReadXmlBody(r); }),
                          env.store);
}

// ?acl on a bucket or an object (s3/acl.h).
Reply HandleAclRequest(const Env& env, S3Request& r) {
  return SubresourceReply(r,
                          HandleAcl(*env.iam, env.store, NameOf(r.op), r.bucket, r.key, r.version,
                                    r.req, [&] { return ReadXmlBody(r); }),
                          env.store);
}

// ?policy and ?policyStatus on a bucket (s3/access.h).
Reply HandleBucketPolicyRequest(const Env& env, S3Request& r) {
  auto reply = HandleBucketPolicy(*env.iam, env.store, NameOf(r.op), r.bucket,
                                  [&] { return ReadXmlBody(r); });
  if (!reply.ok()) return reply.error();
  if (reply->body.empty()) return EmptyReply(reply->status);
  Reply out;
  out.status = reply->status;
  out.body = std::move(reply->body);
  out.content_type = reply->content_type;
  return out;
}

// ?encryption on a bucket: the default encryption of new objects (SSE-S3, or SSE-KMS with a KMS;
// SSE-C cannot be a default).
Reply HandleBucketEncryption(const Env& env, S3Request& r) {
  if (r.op == S3Op::kGetBucketEncryption) {
    auto info = env.store.GetBucketInfo(r.bucket);
    if (!info.ok()) return info.error();
    if (info->encryption.empty())
      return MakeError(ErrorCode::kServerSideEncryptionConfigurationNotFound);
    return XmlReply(EncryptionConfigXml(DecodeEncryptionDefault(info->encryption)));
  }
  if (r.op == S3Op::kDeleteBucketEncryption) {
    if (auto st = env.store.SetBucketEncryption(r.bucket, ""); !st.ok()) return st.error();
    return EmptyReply(204);
  }
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto def = ParseEncryptionConfig(*body, *env.sse);
  if (!def.ok()) return def.error();
  if (def->algorithm == "AES256" && !env.sse->ring)
    return MakeError(ErrorCode::kNotImplemented,
                     "Server side encryption specified but KMS is not configured: "
                     "set MINIO_KMS_SECRET_KEY to enable SSE-S3.");
  if (auto st = env.store.SetBucketEncryption(r.bucket, EncodeEncryptionDefault(*def)); !st.ok())
    return st.error();
  return EmptyReply(200);
}

}  // namespace rdmastor::s3
