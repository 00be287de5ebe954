// The one table of S3 error codes: enum, wire code, HTTP status, default message.
#pragma once

#include <string_view>

namespace rdmastor {

// X(enum, "S3 Code", http_status, "default message")
#define RDMASTOR_ERROR_CODES(X)                                                                    \
  X(kAccessDenied, "AccessDenied", 403, "Access Denied.")                                          \
  X(kAllAccessDisabled, "AllAccessDisabled", 403,                                                  \
    "All access to this Amazon S3 resource has been disabled.")                                    \
  X(kBadDigest, "BadDigest", 400, "The Content-MD5 you specified did not match what we received.") \
  X(kBucketAlreadyOwnedByYou, "BucketAlreadyOwnedByYou", 409,                                      \
    "Your previous request to create the named bucket succeeded and you already own it.")          \
  X(kBucketAlreadyExists, "BucketAlreadyExists", 409,                                              \
    "The requested bucket name is not available. The bucket namespace is shared by all users of "  \
    "the system. Please select a different name and try again.")                                   \
  X(kBucketNotEmpty, "BucketNotEmpty", 409, "The bucket you tried to delete is not empty.")        \
  X(kEntityTooLarge, "EntityTooLarge", 400,                                                        \
    "Your proposed upload exceeds the maximum allowed object size.")                               \
  X(kEntityTooSmall, "EntityTooSmall", 400,                                                        \
    "Your proposed upload is smaller than the minimum allowed object size.")                       \
  X(kExpiredToken, "ExpiredToken", 400, "The provided token has expired.")                         \
  X(kIncompleteBody, "IncompleteBody", 400,                                                        \
    "You did not provide the number of bytes specified by the Content-Length HTTP header.")        \
  X(kInternalError, "InternalError", 500, "We encountered an internal error, please try again.")   \
  X(kIllegalLocationConstraint, "IllegalLocationConstraintException", 400,                         \
    "The location constraint is incompatible for the region specific endpoint this request was "   \
    "sent to.")                                                                                    \
  X(kIllegalVersioningConfiguration, "IllegalVersioningConfigurationException", 400,               \
    "The versioning configuration specified in the request is invalid.")                           \
  X(kInvalidAccessKeyId, "InvalidAccessKeyId", 403,                                                \
    "The Access Key Id you provided does not exist in our records.")                               \
  X(kInvalidArgument, "InvalidArgument", 400, "Invalid Argument.")                                 \
  X(kInvalidBucketOwnerAWSAccountID, "InvalidBucketOwnerAWSAccountID", 400,                       \
    "The value of the expected bucket owner parameter must be an AWS Account ID...")              \
  X(kInvalidBucketName, "InvalidBucketName", 400, "The specified bucket is not valid.")            \
  X(kInvalidDigest, "InvalidDigest", 400, "The Content-MD5 you specified is not valid.")           \
  X(kInvalidObjectName, "XMinioInvalidObjectName", 400,                                            \
    "Object name contains unsupported characters.")                                                \
  X(kInvalidPart, "InvalidPart", 400,                                                              \
    "One or more of the specified parts could not be found.  The part may not have been "          \
    "uploaded, or the specified entity tag may not match the part's entity tag.")                  \
  X(kInvalidPartNumber, "InvalidPartNumber", 400, "The requested partnumber is not satisfiable")   \
  X(kInvalidPartOrder, "InvalidPartOrder", 400,                                                    \
    "The list of parts was not in ascending order. The parts list must be specified in order "     \
    "by part number.")                                                                             \
  X(kInvalidRange, "InvalidRange", 416, "The requested range is not satisfiable")                  \
  X(kInvalidRequest, "InvalidRequest", 400, "Invalid Request")                                     \
  X(kInvalidURI, "InvalidURI", 400, "Couldn't parse the specified URI.")                           \
  X(kInvalidStorageClass, "InvalidStorageClass", 400,                                              \
    "The storage class you specified is not valid.")                                               \
  X(kAuthorizationHeaderMalformed, "AuthorizationHeaderMalformed", 400,                            \
    "The authorization header is malformed.")                                                      \
  X(kAuthorizationQueryParametersError, "AuthorizationQueryParametersError", 400,                  \
    "Error parsing the X-Amz-Credential parameter.")                                               \
  X(kPresignExpiresOutOfRange, "AuthorizationQueryParametersError", 403,                           \
    "X-Amz-Expires must be between 0 and 604800 seconds.")                                         \
  X(kKeyTooLong, "KeyTooLongError", 400, "Your key is too long")                                   \
  X(kMalformedXML, "MalformedXML", 400,                                                            \
    "The XML you provided was not well-formed or did not validate against our published "          \
    "schema.")                                                                                     \
  X(kMalformedACLError, "MalformedACLError", 400,                                                  \
    "The XML you provided was not well-formed or did not validate against our published "          \
    "schema.")                                                                                     \
  X(kMalformedPOSTRequest, "MalformedPOSTRequest", 400,                                            \
    "The body of your POST request is not well-formed multipart/form-data.")                       \
  X(kMaxPostPreDataLengthExceeded, "MaxPostPreDataLengthExceeded", 400,                            \
    "Your POST request fields preceding the upload file were too large.")                          \
  X(kInvalidPolicyDocument, "InvalidPolicyDocument", 400,                                          \
    "The content of the form does not meet the conditions specified in the policy document.")      \
  X(kMetadataTooLarge, "MetadataTooLarge", 400,                                                    \
    "Your metadata headers exceed the maximum allowed metadata size.")                             \
  X(kMethodNotAllowed, "MethodNotAllowed", 405,                                                    \
    "The specified method is not allowed against this resource.")                                  \
  X(kMissingContentLength, "MissingContentLength", 411,                                            \
    "You must provide the Content-Length HTTP header.")                                            \
  X(kMissingSecurityHeader, "MissingSecurityHeader", 400,                                          \
    "Your request was missing a required header")                                                  \
  X(kUnexpectedContent, "UnexpectedContent", 400, "This request does not support content.")        \
  X(kUnresolvableGrantByEmailAddress, "UnresolvableGrantByEmailAddress", 400,                      \
    "The email address you provided does not match any account on record.")                       \
  X(kNoSuchBucket, "NoSuchBucket", 404, "The specified bucket does not exist")                     \
  X(kNoSuchKey, "NoSuchKey", 404, "The specified key does not exist.")                             \
  X(kNoSuchUpload, "NoSuchUpload", 404,                                                            \
    "The specified multipart upload does not exist. The upload ID may be invalid, or the "         \
    "upload may have been aborted or completed.")                                                  \
  X(kNoSuchVersion, "NoSuchVersion", 404,                                                          \
    "The specified version does not exist.")                                                       \
  X(kNotImplemented, "NotImplemented", 501,                                                        \
    "A header you provided implies functionality that is not implemented")                         \
  X(kNotModified, "NotModified", 304, "Not Modified")                                              \
  X(kPreconditionFailed, "PreconditionFailed", 412,                                                \
    "At least one of the pre-conditions you specified did not hold")                               \
  X(kRequestHeaderSectionTooLarge, "RequestHeaderSectionTooLarge", 400,                            \
    "Your request header section exceeds the maximum allowed size.")                               \
  X(kRequestTimeTooSkewed, "RequestTimeTooSkewed", 403,                                            \
    "The difference between the request time and the server's time is too large.")                 \
  X(kRequestTimeout, "RequestTimeout", 400,                                                        \
    "Your socket connection to the server was not read from or written to within the timeout "     \
    "period.")                                                                                     \
  X(kServiceUnavailable, "ServiceUnavailable", 503, "Please reduce your request rate.")            \
  X(kSignatureDoesNotMatch, "SignatureDoesNotMatch", 403,                                          \
    "The request signature we calculated does not match the signature you provided. Check "        \
    "your key and signing method.")                                                                \
  X(kSlowDown, "SlowDown", 503, "Please reduce your request rate.")                                \
  X(kContentSHA256Mismatch, "XAmzContentSHA256Mismatch", 400,                                      \
    "The provided 'x-amz-content-sha256' header does not match what was computed.")                \
  X(kInvalidChecksum, "XAmzContentChecksumMismatch", 400,                                          \
    "The provided 'x-amz-checksum' header does not match what was computed.")                      \
  X(kInvalidChunkSignature, "SignatureDoesNotMatch", 403,                                          \
    "The chunk signature we calculated does not match the signature you provided.")                \
  X(kMalformedChunkedEncoding, "IncompleteBody", 400, "The chunked request body is malformed.")    \
  X(kInsufficientWriteQuorum, "SlowDown", 503,                                                     \
    "Storage resources are insufficient for the write operation.")                                 \
  X(kInsufficientReadQuorum, "SlowDown", 503,                                                      \
    "Storage resources are insufficient for the read operation.")                                  \
  X(kDriveNotWritable, "XMinioStorageFull", 507, "Storage backend is not writable.")               \
  X(kInvalidRDMAToken, "InvalidRDMAToken", 400, "The x-amz-rdma-token header is malformed.")       \
  X(kRDMANotSupported, "RDMANotSupported", 501, "This request cannot be served over RDMA.")        \
  X(kRDMAPathMTUMismatch, "RDMAPathMTUMismatch", 501,                                              \
    "The client's RDMA port refused the server's packets: its path MTU is smaller than the "       \
    "server's.")                                                                                   \
  X(kRDMATransferFailed, "RDMATransferFailed", 500, "The RDMA transfer failed.")                   \
  X(kHealNotImplemented, "XMinioHealNotImplemented", 501,                                          \
    "Nothing to heal: this deployment has no erasure coding.")                                     \
  X(kHealAlreadyRunning, "XMinioHealAlreadyRunning", 400, "A heal is already running.")            \
  X(kHealNoSuchProcess, "XMinioHealNoSuchProcess", 400, "No such heal process is running.")       \
  X(kInvalidTag, "InvalidTag", 400, "The tag provided was not a valid tag.")                       \
  X(kBadRequest, "BadRequest", 400, "Bad Request")                                                 \
  X(kNoSuchTagSet, "NoSuchTagSet", 404, "The TagSet does not exist")                               \
  X(kMalformedPolicy, "MalformedPolicy", 400, "Policy has invalid resource.")                       \
  X(kPolicyTooLarge, "PolicyTooLarge", 400,                                                        \
    "Policy exceeds the maximum allowed document size.")                                           \
  X(kNoSuchBucketPolicy, "NoSuchBucketPolicy", 404, "The bucket policy does not exist")           \
  X(kNoSuchUser, "XMinioAdminNoSuchUser", 404, "The specified user does not exist.")               \
  X(kNoSuchPolicy, "XMinioAdminNoSuchPolicy", 404, "The canned policy does not exist.")     \
  X(kInvalidEncryptionAlgorithm, "InvalidEncryptionAlgorithmError", 400,                           \
    "The encryption request you specified is not valid. The valid value is AES256.")               \
  X(kKmsNotFound, "KMS.NotFoundException", 400, "Invalid keyId")                                   \
  X(kServerSideEncryptionConfigurationNotFound, "ServerSideEncryptionConfigurationNotFoundError",  \
    404, "The server side encryption configuration was not found")                              \
  X(kInvalidBucketState, "InvalidBucketState", 409,                                                \
    "The request is not valid with the current state of the bucket.")                              \
  X(kObjectLockConfigurationNotFound, "ObjectLockConfigurationNotFoundError", 404,                \
    "Object Lock configuration does not exist for this bucket")                                    \
  X(kNoSuchObjectLockConfiguration, "NoSuchObjectLockConfiguration", 404,                          \
    "The specified object does not have a ObjectLock configuration")                               \
  X(kInvalidRetentionPeriod, "InvalidRetentionPeriod", 400,                                        \
    "Default retention period must be a positive integer value.")                                  \
  X(kNoSuchCORSConfiguration, "NoSuchCORSConfiguration", 404,                                      \
    "The CORS configuration does not exist")                                                       \
  X(kNoSuchLifecycleConfiguration, "NoSuchLifecycleConfiguration", 404,                            \
    "The lifecycle configuration does not exist")                                                  \
  X(kOwnershipControlsNotFound, "OwnershipControlsNotFoundError", 404,                             \
    "The bucket ownership controls were not found")                                                \
  X(kNoSuchPublicAccessBlockConfiguration, "NoSuchPublicAccessBlockConfiguration", 404,            \
    "The public access block configuration was not found")                                         \
  X(kAccessControlListNotSupported, "AccessControlListNotSupported", 400,                          \
    "The bucket does not allow ACLs")                                                              \
  X(kInvalidBucketAclWithObjectOwnership, "InvalidBucketAclWithObjectOwnership", 400,              \
    "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")              \
  X(kCORSForbidden, "AccessForbidden", 403,                                                        \
    "CORSResponse: This CORS request is not allowed. This is usually because the evalution of "    \
    "Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers "    \
    "are not whitelisted by the resource's CORS spec.")                                            \
  /* Internal: a step that would wait (disk, peer, lock) on a thread that must not (common/    */ \
  /* no_block.h); the attempt's answer is dropped and the request runs on a worker instead.     */ \
  X(kWouldBlock, "InternalError", 500, "We encountered an internal error, please try again.")

enum class ErrorCode {
#define RDMASTOR_ENUM_ENTRY(name, code, status, msg) name,
  RDMASTOR_ERROR_CODES(RDMASTOR_ENUM_ENTRY)
#undef RDMASTOR_ENUM_ENTRY
};

struct ErrorInfo {
  std::string_view code;  // the S3 <Code> value
  int http_status;
  std::string_view message;  // default <Message>
};

const ErrorInfo& GetErrorInfo(ErrorCode code);

// The 501s that decline to move a payload over RDMA (x-amz-rdma-reply: 501; no byte moved): the
// client may redo the request without a token.
inline bool IsRdmaDecline(ErrorCode code) {
  return code == ErrorCode::kRDMANotSupported || code == ErrorCode::kRDMAPathMTUMismatch;
}

}  // namespace rdmastor
