#include "s3/acl.h"

#include "common/text.h"
#include "s3/ownership.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kGrantHeaders[] = {"x-amz-grant-read", "x-amz-grant-write",
                                              "x-amz-grant-read-acp", "x-amz-grant-write-acp",
                                              "x-amz-grant-full-control"};

constexpr std::string_view kLogDeliveryUri = "http://acs.amazonaws.com/groups/s3/LogDelivery";

// AWS's 400 InvalidArgument for a grantee or owner that cannot exist ("Invalid id", "Invalid
// group uri"), naming the element and echoing (a bounded prefix of) the value.
Error InvalidGrantee(std::string message, std::string_view element, std::string_view value) {
  Error e = MakeError(ErrorCode::kInvalidArgument, std::move(message));
  e.details.emplace_back("ArgumentName", std::string(element));
  e.details.emplace_back("ArgumentValue", std::string(value.substr(0, 64)));
  return e;
}

// A canonical user id as AWS forms them: 64 hex digits.
bool IsCanonicalUserId(std::string_view id) {
  return id.size() == 64 && id.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

bool IsAwsGroup(std::string_view uri) {
  return uri == iam::kAllUsersUri || uri == iam::kAuthenticatedUsersUri || uri == kLogDeliveryUri;
}

// What AWS refuses in a well-formed document before looking at the grants' meaning: an owner or
// grantee id that is no canonical id, a group other than AWS's three, an e-mail grantee (no
// account here has an e-mail address, so none resolves).
Status CheckGrantees(const AclRequest& acl) {
  if (!IsCanonicalUserId(*acl.owner_id))
    return InvalidGrantee("Invalid id", "CanonicalUser/ID", *acl.owner_id);
  for (const auto& g : acl.grants) {
    if (g.group) {
      if (!IsAwsGroup(g.uri)) return InvalidGrantee("Invalid group uri", "Group/URI", g.uri);
    } else if (g.id.starts_with("email:")) {
      return MakeError(ErrorCode::kUnresolvableGrantByEmailAddress);
    } else if (!IsCanonicalUserId(g.id)) {
      return InvalidGrantee("Invalid id", "CanonicalUser/ID", g.id);
    }
  }
  return {};
}

// An x-amz-grant-* header's value as AWS checks it: comma-separated `id=`, `uri=` or
// `emailAddress=` grantees (values optionally quoted). Another form: InvalidArgument "Argument
// format not recognized"; an id or group that cannot exist and e-mail addresses as in bodies.
Status CheckGrantHeader(std::string_view header, std::string_view value) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view grantee = text::TrimBlanks(value.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = grantee.find('=');
    const std::string_view type = eq == std::string_view::npos ? "" : grantee.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? "" : grantee.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    if (type == "id") {
      if (!IsCanonicalUserId(v)) return InvalidGrantee("Invalid id", "id", v);
    } else if (type == "uri") {
      if (!IsAwsGroup(v)) return InvalidGrantee("Invalid group uri", "uri", v);
    } else if (type == "emailAddress") {
      return MakeError(ErrorCode::kUnresolvableGrantByEmailAddress);
    } else {
      return InvalidGrantee("Argument format not recognized", header, grantee);
    }
  }
  return {};
}

// The canned ACL a Put*Acl body stands for (its owner must be the resource's).
Result<iam::CannedAcl> AclFromBody(std::string_view body, const iam::AclOwner& owner) {
  auto parsed = ParseAccessControlPolicyXml(body);
  if (!parsed.ok()) return parsed.error();
  RS_RETURN_IF_ERROR(CheckGrantees(*parsed));
  if (*parsed->owner_id != owner.id) {
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

Result<std::optional<iam::CannedAcl>> RequestedAcl(const HttpRequest& req) {
  const std::string* canned = req.FindHeader("x-amz-acl");
  for (auto h : kGrantHeaders) {
    if (!req.FindHeader(h)) continue;
    if (canned) {
      return MakeError(ErrorCode::kInvalidRequest,
                       "Specifying both Canned ACLs and Header Grants is not allowed");
    }
    RS_RETURN_IF_ERROR(CheckGrantHeader(h, *req.FindHeader(h)));
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
  const bool object = api.ends_with("ObjectAcl");

  AclReply reply;
  std::optional<storage::ObjectInfo> info;
  if (object) {
    auto stat =
        version ? store.StatObjectVersion(bucket, key, *version) : store.StatObject(bucket, key);
    if (!stat.ok()) return stat.error();
    info = std::move(*stat);
    AddReadVersionHeader(reply.headers, store, bucket, version, *info);
  }
  // An object version's owner is its writer ("" recorded: the bucket's owner).
  const iam::AclOwner owner = iam::OwnerOf(
      object && !info->owner.empty() ? info->owner : access->owner, iam.root_access_key());

  if (api.starts_with("Get")) {
    const iam::CannedAcl acl = iam::AclFromStored(object ? info->acl : access->acl);
    reply.xml = AccessControlPolicyXml(owner, iam::GrantsOf(acl, owner));
    return reply;
  }

  // BucketOwnerEnforced: ACLs are disabled; only policies decide (AWS).
  if (ObjectOwnershipOf(store, bucket) == "BucketOwnerEnforced")
    return MakeError(ErrorCode::kAccessControlListNotSupported);
  auto requested = RequestedAcl(req);
  if (!requested.ok()) return requested.error();
  auto body = read_body();
  if (!body.ok()) return body.error();
  iam::CannedAcl acl = iam::CannedAcl::kPrivate;
  if (*requested) {
    if (body->find_first_not_of(" \t\r\n") != std::string::npos)
      return MakeError(ErrorCode::kUnexpectedContent);
    acl = **requested;
  } else if (body->empty()) {
    return MakeError(ErrorCode::kMissingSecurityHeader);
  } else {
    auto from_body = AclFromBody(*body, owner);
    if (!from_body.ok()) return from_body.error();
    acl = *from_body;
  }
  // BlockPublicAcls: no ACL that grants to everyone or every signed-in caller (AWS: 403).
  if (IsPublicAcl(acl) && PublicAccessBlockOf(store, bucket).block_public_acls)
    return MakeError(ErrorCode::kAccessDenied);
  if (object) {
    storage::PutOptions opts;
    opts.update = storage::FieldBit(storage::VersionField::acl);
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
