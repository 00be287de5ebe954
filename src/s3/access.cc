#include "s3/access.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "common/hash.h"
#include "common/text.h"
#include "iam/actions.h"

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
  if (auth && !who.anonymous()) {
    ctx["s3:signatureversion"] = auth->signature_version == 2 ? "AWS" : "AWS4-HMAC-SHA256";
    ctx["s3:authtype"] = auth->presigned ? "REST-QUERY-STRING" : "REST-HEADER";
  }
  return ctx;
}

Status Authorize(iam::IamStore& iam, const Caller& who, std::string_view action,
                 const std::string& bucket, const std::string& key,
                 const iam::ConditionContext& ctx, const ObjectAclReader& object_acl) {
  if (who.root()) return {};
  if (action.empty()) return MakeError(ErrorCode::kAccessDenied);
  const std::string resource =
      bucket.empty() ? std::string("*") : (key.empty() ? bucket : bucket + "/" + key);
  const iam::Principal principal = who.principal();
  const iam::Request request{action, resource, &principal, &ctx};
  bool allowed = false;
  // Explicit deny in any applicable policy wins; otherwise one allow is enough.
  auto denies = [&](const iam::Policy& policy) {
    const iam::Decision d = iam::Evaluate(policy, request);
    allowed = allowed || d == iam::Decision::kAllow;
    return d == iam::Decision::kDeny;
  };
  if (!bucket.empty()) {
    auto policy = iam.BucketPolicy(bucket);
    if (!policy.ok()) return MakeError(ErrorCode::kAccessDenied);  // it may deny: fail closed
    if (*policy && denies(**policy)) return MakeError(ErrorCode::kAccessDenied);
  }
  if (who.kind == Caller::Kind::kUser) {
    for (const auto& policy : iam.PoliciesOf(who.access_key))
      if (denies(*policy)) return MakeError(ErrorCode::kAccessDenied);
  }
  if (allowed || bucket.empty()) return allowed ? Status{} : MakeError(ErrorCode::kAccessDenied);
  // ACL grants: allows applied after every explicit deny (none matched above).
  auto grants = [&](const iam::Policy& acl_policy) {
    return iam::Evaluate(acl_policy, request) == iam::Decision::kAllow;
  };
  const iam::CannedAcl bucket_acl = iam::AclFromStored(iam.CachedBucketAccess(bucket).acl);
  if (grants(iam::BucketAclPolicy(bucket_acl, bucket))) return {};
  // Only an object read can be granted by the object's ACL: the metadata is read just for those.
  const std::string lower_action = text::ToLower(action);
  const bool object_read =
      lower_action == "s3:getobject" || lower_action == "s3:getobjectversion";
  if (!key.empty() && object_acl && object_read &&
      grants(iam::ObjectAclPolicy(object_acl(), bucket, key)))
    return {};
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
  if (!doc.ok()) return doc.error();
  if (api == "GetBucketPolicy") {
    reply.body = std::move(*doc);
    reply.content_type = "application/json";
    return reply;
  }
  if (api == "GetBucketPolicyStatus") {
    auto parsed = iam::ParsePolicy(*doc, iam::PolicyKind::kBucket, bucket);
    const bool is_public = parsed.ok() && PolicyIsPublic(*parsed);
    reply.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PolicyStatus xmlns=\"" +
                 std::string(kXmlNs) + "\"><IsPublic>" + (is_public ? "true" : "false") +
                 "</IsPublic></PolicyStatus>";
    reply.content_type = "application/xml";
    return reply;
  }
  return MakeError(ErrorCode::kMethodNotAllowed);
}

}  // namespace rdmastor::s3
