#include "s3/access.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "common/hash.h"
#include "common/text.h"
#include "common/uri.h"
#include "iam/actions.h"
#include "s3/ownership.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kXmlNs = "http://s3.amazonaws.com/doc/2006-03-01/";

std::string IsoNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Request headers AWS offers as s3: condition keys under their own name.
constexpr std::string_view kHeaderKeys[] = {
    "x-amz-acl",
    "x-amz-content-sha256",
    "x-amz-copy-source",
    "x-amz-metadata-directive",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-storage-class",
    "x-amz-grant-read",
    "x-amz-grant-write",
    "x-amz-grant-read-acp",
    "x-amz-grant-write-acp",
    "x-amz-grant-full-control",
};

// One key per tag of a canonical tag string: `prefix` + the tag's key -> its value.
void AddTagKeys(iam::ConditionContext& ctx, std::string_view prefix, std::string_view tags) {
  if (tags.empty()) return;
  auto parsed = uri::ParseQuery(tags);
  if (!parsed) return;
  for (auto& [k, v] : *parsed) ctx[std::string(prefix) + k] = std::move(v);
}

constexpr std::string_view kExistingTagKey = "s3:existingobjecttag/";

}  // namespace

std::string AccountId(std::string_view configured, std::string_view deployment_id) {
  if (!configured.empty()) return std::string(configured);
  const std::string digest = hash::Sha256Hex(std::string("rdmastor account ") +
                                             std::string(deployment_id));
  // 12 decimal digits from the digest's first 64 bits: stable for the deployment's life.
  const uint64_t n = std::stoull(digest.substr(0, 15), nullptr, 16) % 1000000000000ULL;
  std::string out = std::to_string(n);
  return std::string(12 - out.size(), '0') + out;
}

Status CheckExpectedBucketOwner(const HttpRequest& req, std::string_view account_id) {
  for (const char* h : {"x-amz-expected-bucket-owner", "x-amz-source-expected-bucket-owner"}) {
    const std::string* v = req.FindHeader(h);
    if (!v) continue;
    const bool digits = v->size() == 12 && std::all_of(v->begin(), v->end(), [](char c) {
                          return c >= '0' && c <= '9';
                        });
    if (!digits) return MakeError(ErrorCode::kInvalidBucketOwnerAWSAccountID);
    if (*v != account_id) return MakeError(ErrorCode::kAccessDenied);
  }
  return {};
}

iam::ConditionContext ConditionsFor(const HttpRequest& req,
                                    const std::vector<std::pair<std::string, std::string>>& query,
                                    bool secure_transport, const Caller& who,
                                    const AuthContext* auth, const HeaderList* form) {
  iam::ConditionContext ctx;
  ctx["aws:sourceip"] = req.remote_ip;
  ctx["aws:securetransport"] = secure_transport ? "true" : "false";
  ctx["aws:currenttime"] = IsoNow();
  ctx["aws:epochtime"] = std::to_string(std::time(nullptr));
  if (const auto* ua = req.FindHeader("user-agent")) ctx["aws:useragent"] = *ua;
  if (const auto* ref = req.FindHeader("referer")) ctx["aws:referer"] = *ref;
  switch (who.kind) {
    case Caller::Kind::kAnonymous:
      ctx["aws:principaltype"] = "Anonymous";
      break;
    case Caller::Kind::kRoot:
      ctx["aws:principaltype"] = "Account";
      ctx["aws:username"] = who.access_key;
      ctx["aws:userid"] = who.access_key;
      break;
    case Caller::Kind::kUser:
      ctx["aws:principaltype"] = "User";
      ctx["aws:username"] = who.access_key;
      ctx["aws:userid"] = who.access_key;
      break;
  }
  for (const auto& [k, v] : query) {
    if (k == "prefix") ctx["s3:prefix"] = v;
    if (k == "delimiter") ctx["s3:delimiter"] = v;
    if (k == "max-keys") ctx["s3:max-keys"] = v;
    if (k == "versionId") ctx["s3:versionid"] = v;
  }
  // A browser POST's keys are its form fields: its own HTTP headers are not signed and do not
  // decide what is stored.
  for (auto h : kHeaderKeys) {
    if (form) {
      for (const auto& [name, value] : *form)
        if (name == h) ctx["s3:" + std::string(h)] = value;
    } else if (const auto* v = req.FindHeader(h)) {
      ctx["s3:" + std::string(h)] = *v;
    }
  }
  if (form) {
    for (const auto& [name, value] : *form)
      if (name == "x-amz-tagging") AddTagKeys(ctx, "s3:requestobjecttag/", value);
  } else if (const auto* tagging = req.FindHeader("x-amz-tagging")) {
    AddTagKeys(ctx, "s3:requestobjecttag/", *tagging);
  }
  if (auth && !who.anonymous()) {
    ctx["s3:signatureversion"] = auth->signature_version == 2 ? "AWS" : "AWS4-HMAC-SHA256";
    ctx["s3:authtype"] = auth->presigned ? "REST-QUERY-STRING" : "REST-HEADER";
  }
  return ctx;
}

namespace {

// What an object's owner may do on it by its FULL_CONTROL grant (READ, READ_ACP, WRITE_ACP).
bool IsObjectOwnerAction(std::string_view lower_action) {
  static constexpr std::string_view kActions[] = {
      "s3:getobject",    "s3:getobjectversion",    "s3:getobjectacl",
      "s3:getobjectversionacl", "s3:putobjectacl", "s3:putobjectversionacl"};
  for (auto a : kActions)
    if (a == lower_action) return true;
  return false;
}

// What a multipart upload's initiator may always do on it.
bool IsInitiatorAction(std::string_view lower_action) {
  return lower_action == "s3:abortmultipartupload" ||
         lower_action == "s3:listmultipartuploadparts";
}

}  // namespace

Status Authorize(iam::IamStore& iam, const Caller& who, std::string_view action,
                 const std::string& bucket, const std::string& key,
                 const iam::ConditionContext& ctx, const ObjectAclReader& object_acl,
                 const PublicAccessReader& public_access) {
  if (who.root()) return {};
  if (action.empty()) return MakeError(ErrorCode::kAccessDenied);
  const std::string resource =
      bucket.empty() ? std::string("*") : (key.empty() ? bucket : bucket + "/" + key);
  const iam::Principal principal = who.principal();
  std::optional<ObjectAccess> object;
  auto object_access = [&]() -> const ObjectAccess& {
    if (!object) object = object_acl ? object_acl() : ObjectAccess{};
    return *object;
  };
  // s3:ExistingObjectTag/<key>: the object's tags, read only where a policy asks for them.
  iam::ConditionContext with_tags;
  const iam::ConditionContext* context = &ctx;
  if (!key.empty() && object_acl) {
    bool uses = false;
    if (auto policy = iam.BucketPolicy(bucket); policy.ok() && *policy)
      uses = iam::UsesConditionKey(**policy, kExistingTagKey);
    if (who.kind == Caller::Kind::kUser)
      for (const auto& policy : iam.PoliciesOf(who.access_key))
        uses = uses || iam::UsesConditionKey(*policy, kExistingTagKey);
    if (uses) {
      with_tags = ctx;
      AddTagKeys(with_tags, kExistingTagKey, object_access().tags);
      context = &with_tags;
    }
  }
  const iam::Request request{action, resource, &principal, context};
  std::optional<PublicAccess> settings;
  auto access_settings = [&]() -> const PublicAccess& {
    if (!settings) settings = public_access ? public_access() : PublicAccess{};
    return *settings;
  };
  bool allowed = false;
  // Explicit deny in any applicable policy wins; otherwise one allow is enough.
  if (!bucket.empty()) {
    auto policy = iam.BucketPolicy(bucket);
    if (!policy.ok()) return MakeError(ErrorCode::kAccessDenied);  // it may deny: fail closed
    if (*policy) {
      const iam::Decision d = iam::Evaluate(**policy, request);
      if (d == iam::Decision::kDeny) return MakeError(ErrorCode::kAccessDenied);
      // RestrictPublicBuckets: a public policy allows only callers of this deployment.
      allowed = d == iam::Decision::kAllow &&
                !(who.anonymous() && access_settings().restrict_public_buckets &&
                  PolicyIsPublic(**policy));
    }
  }
  if (who.kind == Caller::Kind::kUser) {
    for (const auto& policy : iam.PoliciesOf(who.access_key)) {
      const iam::Decision d = iam::Evaluate(*policy, request);
      if (d == iam::Decision::kDeny) return MakeError(ErrorCode::kAccessDenied);
      allowed = allowed || d == iam::Decision::kAllow;
    }
  }
  if (allowed || bucket.empty()) return allowed ? Status{} : MakeError(ErrorCode::kAccessDenied);
  // Allows applied after every explicit deny (none matched above): ownership, then ACL grants.
  const iam::BucketAccess bucket_access = iam.CachedBucketAccess(bucket);
  const std::string lower_action = text::ToLower(action);
  if (who.kind == Caller::Kind::kUser) {
    // The bucket's owner: everything on the bucket and every object in it (as if each carried
    // bucket-owner-full-control; docs/access-control.md).
    if (bucket_access.owner == who.access_key) return {};
    if (!key.empty() && (IsObjectOwnerAction(lower_action) || IsInitiatorAction(lower_action))) {
      const ObjectAccess& o = object_access();
      const std::string& owner = o.owner.empty() ? bucket_access.owner : o.owner;
      if (o.exists && owner == who.access_key) return {};
    }
  }
  if (access_settings().ignore_public_acls) return MakeError(ErrorCode::kAccessDenied);
  auto grants = [&](const iam::Policy& acl_policy) {
    return iam::Evaluate(acl_policy, request) == iam::Decision::kAllow;
  };
  const iam::CannedAcl bucket_acl = iam::AclFromStored(bucket_access.acl);
  if (grants(iam::BucketAclPolicy(bucket_acl, bucket))) return {};
  // Only an object read can be granted by the object's ACL: the metadata is read just for those.
  const bool object_read =
      lower_action == "s3:getobject" || lower_action == "s3:getobjectversion";
  if (!key.empty() && object_acl && object_read) {
    const ObjectAccess& o = object_access();
    if (o.exists && grants(iam::ObjectAclPolicy(o.acl, bucket, key))) return {};
  }
  return MakeError(ErrorCode::kAccessDenied);
}

bool PolicyIsPublic(const iam::Policy& policy) {
  // Keys whose fixed values make a grant to "*" non-public (AWS's list, those that apply here).
  static constexpr std::string_view kLimiting[] = {
      "aws:sourceip",     "aws:sourcearn",  "aws:sourcevpc",        "aws:sourcevpce",
      "aws:sourceaccount", "aws:principalorgid", "aws:userid", "aws:principalaccount",
      "aws:username"};
  for (const auto& st : policy.statements) {
    if (!st.allow || !st.any_principal) continue;
    bool limited = false;
    for (const auto& c : st.conditions) {
      const bool positive = c.op == iam::CondOp::kStringEquals ||
                            c.op == iam::CondOp::kStringEqualsIgnoreCase ||
                            c.op == iam::CondOp::kIpAddress;
      bool fixed = positive && !c.if_exists;
      for (const auto& v : c.values) fixed = fixed && v.find_first_of("*?") == std::string::npos;
      // An address block counts as fixed unless it is the whole address space.
      if (c.op == iam::CondOp::kIpAddress) {
        for (const auto& v : c.values)
          if (v.ends_with("/0")) fixed = false;
      }
      for (auto k : kLimiting)
        if (fixed && c.key == k) limited = true;
    }
    if (!limited) return true;
  }
  return false;
}

Result<PolicyReply> HandleBucketPolicy(iam::IamStore& iam, storage::ObjectLayer& store,
                                       std::string_view api, const std::string& bucket,
                                       const std::function<Result<std::string>()>& read_body) {
  auto info = store.GetBucketInfo(bucket);
  if (!info.ok()) return info.error();
  PolicyReply reply;
  if (api == "PutBucketPolicy") {
    auto body = read_body();
    if (!body.ok()) return body.error();
    if (body->size() > iam::kMaxPolicyBytes) return MakeError(ErrorCode::kPolicyTooLarge);
    // BlockPublicPolicy: a policy that makes the bucket public is refused (AWS: 403), for its
    // owner too. A document that does not parse is refused below as malformed.
    if (PublicAccessBlockOf(store, bucket).block_public_policy) {
      auto parsed = iam::ParsePolicy(*body, iam::PolicyKind::kBucket, bucket);
      if (parsed.ok() && PolicyIsPublic(*parsed)) return MakeError(ErrorCode::kAccessDenied);
    }
    RS_RETURN_IF_ERROR(iam.PutBucketPolicy(bucket, *body));
    reply.status = 204;
    return reply;
  }
  if (api == "DeleteBucketPolicy") {
    RS_RETURN_IF_ERROR(iam.DeleteBucketPolicy(bucket));
    reply.status = 204;
    return reply;
  }
  auto doc = iam.GetBucketPolicy(bucket);
  if (api == "GetBucketPolicyStatus") {
    // Public through the policy or, without IgnorePublicAcls, through the bucket's ACL (AWS).
    if (!doc.ok() && doc.error().code != ErrorCode::kNoSuchBucketPolicy) return doc.error();
    bool is_public = false;
    if (doc.ok()) {
      auto parsed = iam::ParsePolicy(*doc, iam::PolicyKind::kBucket, bucket);
      is_public = parsed.ok() && PolicyIsPublic(*parsed);
    }
    if (!is_public && !PublicAccessBlockOf(store, bucket).ignore_public_acls)
      is_public = IsPublicAcl(iam::AclFromStored(iam.CachedBucketAccess(bucket).acl));
    reply.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PolicyStatus xmlns=\"" +
                 std::string(kXmlNs) + "\"><IsPublic>" + (is_public ? "true" : "false") +
                 "</IsPublic></PolicyStatus>";
    reply.content_type = "application/xml";
    return reply;
  }
  if (!doc.ok()) return doc.error();
  if (api == "GetBucketPolicy") {
    reply.body = std::move(*doc);
    reply.content_type = "application/json";
    return reply;
  }
  return MakeError(ErrorCode::kMethodNotAllowed);
}

}  // namespace rdmastor::s3
