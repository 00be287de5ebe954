// Canned ACLs in the S3 API: the x-amz-acl / x-amz-grant-* headers of requests that create a
// bucket or an object, and the ?acl subresource (Get/PutBucketAcl, Get/PutObjectAcl). What the
// ACLs mean and how they are enforced is iam/acl.h; where they are kept: a bucket's in its access
// record (iam/store.h, with its owner), an object version's in its metadata (ObjectInfo::acl).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "iam/acl.h"
#include "iam/store.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

// The canned ACL a creating request (CreateBucket, PutObject, CopyObject, CreateMultipartUpload,
// Put*Acl) names in x-amz-acl; nullopt when it names none. x-amz-grant-* headers: NotImplemented
// (explicit grants beyond canned ACLs are not implemented), or InvalidRequest together with
// x-amz-acl, InvalidArgument for a value AWS refuses (a form other than id= / uri= /
// emailAddress=, an id or group that cannot exist), UnresolvableGrantByEmailAddress for an
// e-mail grantee (as AWS). An x-amz-acl AWS does not define: InvalidArgument (iam::ParseCannedAcl).
Result<std::optional<iam::CannedAcl>> RequestedAcl(const HttpRequest& req);

struct AclReply {
  int status = 200;
  std::string xml;     // "" = no body
  HeaderList headers;  // x-amz-version-id of an object version
};

// Runs `api` (PutObjectAcl, GetBucketAcl, ...: s3/operations.h) on an existing bucket, or on bucket/key's `version` (nullopt: the
// latest). The owner shown is the bucket's (recorded at creation; root's when none was): objects
// belong to their bucket's owner here. Put* takes x-amz-acl, or a body equivalent to a canned ACL
// (another grant set: NotImplemented; both: UnexpectedContent; neither: MissingSecurityHeader; a
// malformed body: MalformedACLError; an id or group that cannot exist: InvalidArgument; an e-mail
// grantee: UnresolvableGrantByEmailAddress), as AWS answers.
Result<AclReply> HandleAcl(iam::IamStore& iam, storage::ObjectLayer& store, std::string_view api,
                           const std::string& bucket, const std::string& key,
                           const storage::VersionSel& version, const HttpRequest& req,
                           const std::function<Result<std::string>()>& read_body);

}  // namespace rdmastor::s3
