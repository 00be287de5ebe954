// The admin API's users and policies (root credentials only, SigV4 with a signed payload), under
// MinIO's paths. Bodies are plain JSON (MinIO's `mc` encrypts them with the root secret; use
// `rdmastor admin user|policy`, and TLS, with this server):
//
//   PUT    /minio/admin/v3/add-user?accessKey=AK            {"secretKey": "..."}
//   DELETE /minio/admin/v3/remove-user?accessKey=AK
//   GET    /minio/admin/v3/list-users                       {"AK": {"policyName": "a,b",
//                                                                  "status": "enabled"}, ...}
//   PUT    /minio/admin/v3/add-canned-policy?name=N         the policy document
//   DELETE /minio/admin/v3/remove-canned-policy?name=N
//   GET    /minio/admin/v3/list-canned-policies             {"N": <document>, ...}
//   PUT    /minio/admin/v3/set-user-or-group-policy?policyName=a,b&userOrGroup=AK&isGroup=false
//                                                           replaces the user's policies
//   POST   /minio/admin/v3/idp/builtin/policy/attach        {"policies": [...], "user": "AK"}
//                                                           adds to them
//   POST   /minio/admin/v3/idp/builtin/policy/detach        the same body: removes them
//                                                           (InvalidArgument when none was)
//   GET    /minio/admin/v3/user-info?accessKey=AK           {"policyName": "a,b", "status": ...}
//   PUT    /minio/admin/v3/set-user-status?accessKey=AK&status=enabled|disabled
//                                                           a disabled key is refused as unknown
//   GET    /minio/admin/v3/info-canned-policy?name=N[&v=2]  the document ({"PolicyName": N,
//                                                           "Policy": <document>} with v=2)
//
// Errors are S3 error XML: XMinioAdminNoSuchUser, XMinioAdminNoSuchPolicy, MalformedPolicy,
// InvalidArgument, MethodNotAllowed.
#pragma once

#include <string>
#include <string_view>

#include "iam/store.h"
#include "s3/http_types.h"
#include "s3/sigv4.h"

namespace rdmastor::s3 {

bool IsIamAdminPath(std::string_view raw_path);

// Serves one authenticated (root) request on an IsIamAdminPath path.
void ServeIamAdmin(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                   iam::IamStore& iam, const AuthContext& auth, BodySource& body);

}  // namespace rdmastor::s3
