#include "s3/acl.h"

#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kGrantHeaders[] = {"x-amz-grant-read", "x-amz-grant-write",
                                              "x-amz-grant-read-acp", "x-amz-grant-write-acp",
                                              "x-amz-grant-full-control"};

// The canned ACL a Put*Acl body stands for (its owner must be the resource's).
Result<iam::CannedAcl> AclFromBody(std::string_view body, const iam::AclOwner& owner) {
  auto parsed = ParseAccessControlPolicyXml(body);
  if (!parsed.ok()) return parsed.error();
  if (parsed->owner_id && *parsed->owner_id != owner.id) {
    return MakeError(ErrorCode::kNotImplemented,
                     "Changing the owner of a bucket or object is not implemented by rdmastor.");
  }
  auto acl = iam::FromGrants(parsed->grants, owner);
  if (!acl) {
    return MakeError(ErrorCode::kNotImplemented,
                     "Only grant sets equal to a canned ACL (private, public-read, "
                     "public-read-write, authenticated-read) are implemented by rdmastor.");
  }
  return *acl;
}

}  // namespace

std::string_view AclApiName(std::string_view method, bool has_key) {
  if (method == "PUT") return has_key ? "PutObjectAcl" : "PutBucketAcl";
  if (method == "GET") return has_key ? "GetObjectAcl" : "GetBucketAcl";
  return "unknown";
}

Result<std::optional<iam::CannedAcl>> RequestedAcl(const HttpRequest& req) {
  const std::string* canned = req.FindHeader("x-amz-acl");
  for (auto h : kGrantHeaders) {
    if (!req.FindHeader(h)) continue;
    if (canned) {
      return MakeError(ErrorCode::kInvalidRequest,
                       "Specifying both Canned ACLs and Header Grants is not allowed");
    }
    return MakeError(ErrorCode::kNotImplemented,
                     "Explicit grants (" + std::string(h) +
                         ") are not implemented by rdmastor; use a canned ACL (x-amz-acl).");
  }
  if (!canned) return std::optional<iam::CannedAcl>();
  auto acl = iam::ParseCannedAcl(*canned);
  if (!acl.ok()) return acl.error();
  return std::optional<iam::CannedAcl>(*acl);
}

Result<AclReply> HandleAcl(iam::IamStore& iam, storage::ObjectLayer& store, std::string_view api,
                           const std::string& bucket, const std::string& key,
                           const storage::VersionSel& version, const HttpRequest& req,
                           const std::function<Result<std::string>()>& read_body) {
  auto bucket_info = store.GetBucketInfo(bucket);
  if (!bucket_info.ok()) return bucket_info.error();
  auto access = iam.GetBucketAccess(bucket);
  if (!access.ok()) return access.error();
  const iam::AclOwner owner = iam::OwnerOf(access->owner, iam.root_access_key());
  const bool object = api.ends_with("ObjectAcl");

  AclReply reply;
  std::optional<storage::ObjectInfo> info;
  if (object) {
    auto stat =
        version ? store.StatObjectVersion(bucket, key, *version) : store.StatObject(bucket, key);
    if (!stat.ok()) return stat.error();
    info = std::move(*stat);
    if (version || !info->version_id.empty())
      reply.headers.emplace_back("x-amz-version-id",
                                 info->version_id.empty() ? "null" : info->version_id);
  }

  if (api.starts_with("Get")) {
    const iam::CannedAcl acl = iam::AclFromStored(object ? info->acl : access->acl);
    reply.xml = AccessControlPolicyXml(owner, iam::GrantsOf(acl, owner));
    return reply;
  }

  auto requested = RequestedAcl(req);
  if (!requested.ok()) return requested.error();
  auto body = read_body();
  if (!body.ok()) return body.error();
  iam::CannedAcl acl = iam::CannedAcl::kPrivate;
  if (*requested) {
    if (body->find_first_not_of(" \t\r\n") != std::string::npos)
      return MakeError(ErrorCode::kInvalidRequest, "This request does not support content");
    acl = **requested;
  } else if (body->empty()) {
    return MakeError(ErrorCode::kMissingSecurityHeader);
  } else {
    auto from_body = AclFromBody(*body, owner);
    if (!from_body.ok()) return from_body.error();
    acl = *from_body;
  }
  if (object) {
    storage::PutOptions opts;
    opts.acl_only = true;
    opts.acl = iam::StoredAcl(acl);
    // The version resolved above: a new latest version written meanwhile keeps its own ACL.
    opts.version = info->version_id;
    auto updated = store.UpdateMetadata(bucket, key, opts);
    if (!updated.ok()) return updated.error();
    return reply;
  }
  access->acl = std::string(iam::AclName(acl));
  RS_RETURN_IF_ERROR(iam.PutBucketAccess(bucket, *access));
  return reply;
}

}  // namespace rdmastor::s3
