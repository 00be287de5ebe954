#include "iam/acl.h"

#include <algorithm>
#include <tuple>

#include "common/enum_names.h"
#include "common/hash.h"

namespace rdmastor::iam {

namespace {

constexpr EnumNames<CannedAcl> kNames[] = {
    {"private", CannedAcl::kPrivate},
    {"public-read", CannedAcl::kPublicRead},
    {"public-read-write", CannedAcl::kPublicReadWrite},
    {"authenticated-read", CannedAcl::kAuthenticatedRead},
    // The object owner is the bucket owner here, so the bucket owner's grant adds nothing (and
    // on a bucket AWS ignores these two).
    {"bucket-owner-read", CannedAcl::kPrivate},
    {"bucket-owner-full-control", CannedAcl::kPrivate},
};

Grant GroupGrant(std::string_view uri, std::string_view permission) {
  return Grant{true, {}, {}, std::string(uri), std::string(permission)};
}

// A statement allowing `actions` (lower case) on `resource` to every principal; authenticated
// callers only when `authenticated`.
Statement AllowEveryone(std::vector<std::string> actions, std::string resource,
                        bool authenticated) {
  Statement st;
  st.allow = true;
  st.any_principal = true;
  st.actions = std::move(actions);
  st.resources = {std::move(resource)};
  if (authenticated) {
    Condition c;
    c.op = CondOp::kStringNotEquals;
    c.key = "aws:principaltype";
    c.values = {"Anonymous"};
    st.conditions.push_back(std::move(c));
  }
  return st;
}

}  // namespace

Result<CannedAcl> ParseCannedAcl(std::string_view value) {
  if (auto acl = ValueOf(kNames, value)) return *acl;
  if (value == "aws-exec-read" || value == "log-delivery-write") {
    return MakeError(ErrorCode::kNotImplemented,
                     "The canned ACL " + std::string(value) +
                         " grants access to AWS services and is not implemented by rdmastor.");
  }
  Error e = MakeError(ErrorCode::kInvalidArgument, "");
  e.details.emplace_back("ArgumentName", "x-amz-acl");
  e.details.emplace_back("ArgumentValue", std::string(value.substr(0, 64)));
  return e;
}

std::string_view AclName(CannedAcl acl) { return NameOf(kNames, acl, "private"); }

std::string StoredAcl(CannedAcl acl) {
  return acl == CannedAcl::kPrivate ? std::string() : std::string(AclName(acl));
}

CannedAcl AclFromStored(std::string_view stored) {
  return ValueOf(kNames, stored).value_or(CannedAcl::kPrivate);
}

AclOwner OwnerOf(std::string_view owner_access_key, std::string_view root_access_key) {
  if (owner_access_key.empty() || owner_access_key == kRootOwner ||
      owner_access_key == root_access_key)
    return {std::string(kRootCanonicalId), std::string(kRootDisplayName)};
  return {hash::Sha256Hex("rdmastor-user:" + std::string(owner_access_key)),
          std::string(owner_access_key)};
}

std::vector<Grant> GrantsOf(CannedAcl acl, const AclOwner& owner) {
  std::vector<Grant> out;
  switch (acl) {
    case CannedAcl::kPrivate:
      break;
    case CannedAcl::kPublicRead:
      out.push_back(GroupGrant(kAllUsersUri, "READ"));
      break;
    case CannedAcl::kPublicReadWrite:
      out.push_back(GroupGrant(kAllUsersUri, "READ"));
      out.push_back(GroupGrant(kAllUsersUri, "WRITE"));
      break;
    case CannedAcl::kAuthenticatedRead:
      out.push_back(GroupGrant(kAuthenticatedUsersUri, "READ"));
      break;
  }
  out.push_back(Grant{false, owner.id, owner.display_name, {}, "FULL_CONTROL"});
  return out;
}

std::optional<CannedAcl> FromGrants(const std::vector<Grant>& grants, const AclOwner& owner) {
  // Compared by grantee and permission only: a display name sent back may differ or be absent.
  auto key = [](const Grant& g) {
    return std::make_tuple(g.group, g.group ? g.uri : g.id, g.permission);
  };
  using Key = decltype(key(grants.front()));
  auto normal = [&](const std::vector<Grant>& gs) {
    std::vector<Key> ks;
    for (const auto& g : gs) ks.push_back(key(g));
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    return ks;
  };
  const auto wanted = normal(grants);
  for (CannedAcl acl : {CannedAcl::kPrivate, CannedAcl::kPublicRead, CannedAcl::kPublicReadWrite,
                        CannedAcl::kAuthenticatedRead}) {
    if (normal(GrantsOf(acl, owner)) == wanted) return acl;
  }
  return std::nullopt;
}

Policy BucketAclPolicy(CannedAcl acl, std::string_view bucket) {
  Policy p;
  if (acl == CannedAcl::kPrivate) return p;
  const bool authenticated = acl == CannedAcl::kAuthenticatedRead;
  p.statements.push_back(
      AllowEveryone({"s3:listbucket", "s3:listbucketversions", "s3:listbucketmultipartuploads"},
                    std::string(bucket), authenticated));
  if (acl == CannedAcl::kPublicReadWrite) {
    p.statements.push_back(
        AllowEveryone({"s3:putobject", "s3:deleteobject"}, std::string(bucket) + "/*", false));
  }
  return p;
}

Policy ObjectAclPolicy(CannedAcl acl, std::string_view bucket, std::string_view key) {
  Policy p;
  if (acl == CannedAcl::kPrivate) return p;
  // The resource is the one object (its key can hold `*` or `?`, which then match themselves).
  p.statements.push_back(AllowEveryone({"s3:getobject", "s3:getobjectversion"},
                                       std::string(bucket) + "/" + std::string(key),
                                       acl == CannedAcl::kAuthenticatedRead));
  return p;
}

}  // namespace rdmastor::iam
