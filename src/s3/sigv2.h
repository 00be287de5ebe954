// AWS Signature Version 2 (HMAC-SHA1), header form ("Authorization: AWS AccessKey:Signature") and
// query form (AWSAccessKeyId, Signature, Expires), as S3 and MinIO accept it. Reached through
// VerifyRequest (s3/sigv4.h), the one authentication entry point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/http_types.h"
#include "s3/sigv4.h"

namespace rdmastor::s3 {

// True when the Authorization header names the V2 scheme ("AWS " followed by the credentials).
bool IsV2Authorization(std::string_view authorization);

// Header form. vhost_bucket: the bucket named by the Host header (virtual-host style), which the
// canonicalized resource starts with. Errors: AccessDenied (no valid Date / x-amz-date: "AWS
// authentication requires a valid Date or x-amz-date header"), InvalidArgument (header not of the
// form "AWS AccessKey:Signature"), InvalidAccessKeyId, RequestTimeTooSkewed (> 15 min),
// SignatureDoesNotMatch.
Result<AuthContext> VerifyV2Header(const HttpRequest& req, std::string_view authorization,
                                   const SecretLookup& lookup, int64_t now_unix,
                                   std::string_view vhost_bucket);

// Query form. Errors: AccessDenied "Query-string authentication requires the Signature, Expires
// and AWSAccessKeyId parameters" (one missing), AccessDenied "Invalid date (should be seconds
// since epoch): ..." (Expires not a number), AccessDenied "Request has expired",
// InvalidAccessKeyId, SignatureDoesNotMatch.
Result<AuthContext> VerifyV2Presigned(const HttpRequest& req, const SecretLookup& lookup,
                                      int64_t now_unix, std::string_view vhost_bucket);

// Building blocks, exposed for unit tests against AWS's published examples.
// "/bucket/key" plus the sub-resources S3 signs ("?acl", "?partNumber=2&uploadId=x"), sorted,
// values decoded.
std::string V2CanonicalResource(std::string_view raw_path, std::string_view raw_query,
                                std::string_view vhost_bucket);
// "x-amz-acl:public-read\nx-amz-meta-a:1,2\n": the x-amz-* headers, lower-cased and sorted, values
// of repeated headers joined with ','.
std::string V2CanonicalAmzHeaders(const HeaderList& headers, bool skip_amz_date = false);
// base64(HMAC-SHA1(secret, string_to_sign)).
std::string V2Sign(std::string_view secret, std::string_view string_to_sign);

}  // namespace rdmastor::s3
