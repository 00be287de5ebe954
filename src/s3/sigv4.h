// AWS Signature Version 4: verification of header-signed and presigned requests, the streaming
// (aws-chunked) chunk signature chain, and signing for our own clients and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/http_types.h"

namespace rdmastor::s3 {

// Returns the secret key for an access key, or nullopt when unknown (-> InvalidAccessKeyId).
using SecretLookup = std::function<std::optional<std::string>(std::string_view access_key)>;

enum class PayloadMode {
  kSignedSha256,             // x-amz-content-sha256: <hex>; body must hash to it
  kUnsigned,                 // UNSIGNED-PAYLOAD (also presigned URLs)
  kStreamingSigned,          // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
  kStreamingSignedTrailer,   // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  kStreamingUnsignedTrailer  // STREAMING-UNSIGNED-PAYLOAD-TRAILER
};

struct AuthContext {
  std::string access_key;
  PayloadMode payload_mode = PayloadMode::kUnsigned;
  std::string content_sha256;        // expected hex digest for kSignedSha256
  std::vector<std::string> signed_headers;  // lower-case, as listed in SignedHeaders
  bool presigned = false;
  int signature_version = 4;         // 2: legacy HMAC-SHA1 (s3/sigv2.h), payload unsigned
  // For the streaming modes: what the chunk signature chain needs.
  std::string seed_signature;        // the request's own signature (hex)
  std::string signing_key;           // raw key derived from the secret (DeriveSigningKey)
  std::string amz_date;              // x-amz-date, e.g. 20130524T000000Z
  std::string scope;                 // 20130524/us-east-1/s3/aws4_request
};

// RFC 1123 date as SigV2 Date headers carry it ("Fri, 24 May 2013 00:00:00 GMT"); nullopt otherwise.
std::optional<int64_t> ParseRfc1123Date(std::string_view s);

// Verifies the request's signature (Authorization header or X-Amz-* query parameters).
// now_unix is the server clock (tests inject it). Errors: AccessDenied (no auth at all:
// "anonymous access denied"; no valid date; host or another x-amz-* header present but not signed,
// with HeadersNotSigned in Error::details; x-amz-content-sha256 is exempt, and x-amz-date with
// header auth), AuthorizationHeaderMalformed /
// AuthorizationQueryParametersError, InvalidRequest (other auth schemes; header auth
// without x-amz-content-sha256), InvalidAccessKeyId, SignatureDoesNotMatch (also a signed header
// missing from the request), RequestTimeTooSkewed (|skew| > 15 min; presigned: dated > 15 min
// ahead), AccessDenied "Request has expired" for an expired presigned URL, kInvalidArgument for an
// unknown payload mode or both auth mechanisms at once. Presigned requests use UNSIGNED-PAYLOAD
// unless they carry an x-amz-content-sha256 header.
//
// Signature Version 2 (s3/sigv2.h) is verified here too: "Authorization: AWS AK:Signature" and
// the AWSAccessKeyId/Signature/Expires query; vhost_bucket is the bucket a virtual-host-style
// Host header names (V2 signs "/bucket" in front of the path). V2 results carry
// signature_version 2 and an unsigned payload.
Result<AuthContext> VerifyRequest(const HttpRequest& req, const SecretLookup& lookup,
                                  int64_t now_unix, std::string_view vhost_bucket = {});

// ISO 8601 basic format as SigV4 writes x-amz-date (20130524T000000Z); nullopt when malformed.
std::optional<int64_t> ParseAmzDate(std::string_view s);

// POST Object (browser form) authentication: the signature over the base64 policy field, from
// x-amz-algorithm, x-amz-credential, x-amz-date and x-amz-signature (V4) or AWSAccessKeyId and
// signature (V2). `fields`: the form fields by lower-case name. Returns the access key. Errors:
// AccessDenied (no signature fields: an anonymous POST, which needs a bucket policy we do not
// have), InvalidArgument (a V4 field missing or malformed, policy missing), InvalidAccessKeyId,
// SignatureDoesNotMatch. The policy's expiration and conditions are checked by
// s3/post_policy.h.
Result<std::string> VerifyPostSignature(const std::map<std::string, std::string>& fields,
                                        const SecretLookup& lookup);

// Building blocks, exposed for unit tests against AWS's published examples.
std::string CanonicalUri(std::string_view raw_path);  // decode then SigV4-encode, '/' kept
std::string CanonicalQuery(std::string_view raw_query, bool drop_signature);
std::string DeriveSigningKey(std::string_view secret, std::string_view date,
                             std::string_view region, std::string_view service);
// The string to sign for one aws-chunked chunk (data = the chunk payload).
std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature, std::string_view chunk_data);
// The string to sign for the trailer chunk of kStreamingSignedTrailer.
std::string TrailerStringToSign(std::string_view amz_date, std::string_view scope,
                                std::string_view previous_signature,
                                std::string_view canonical_trailers);

// Client side: signs a request with header auth. `headers` must include host; x-amz-date and
// x-amz-content-sha256 are added (replacing any given; an empty payload_sha256 means the SHA-256 of
// an empty body). Every header is signed except authorization, expect, transfer-encoding,
// user-agent and x-amzn-trace-id (as botocore). Returns the headers to send, lower-case names,
// including authorization.
struct SignInput {
  std::string method;
  std::string raw_path;   // already percent-encoded as it will be sent
  std::string raw_query;  // already encoded
  HeaderList headers;     // lower-case names
  std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD", or a STREAMING-* constant
  std::string access_key, secret_key, region = "us-east-1";
  int64_t now_unix = 0;
};
HeaderList SignRequest(const SignInput& in);
// Client side: a presigned URL query string (without '?') valid for expires_s seconds: the X-Amz-*
// parameters, in.raw_query, then X-Amz-Signature. Signs UNSIGNED-PAYLOAD (payload_sha256 is
// ignored) unless in.headers has x-amz-content-sha256, which the request must then send.
std::string PresignQuery(const SignInput& in, int64_t expires_s);

}  // namespace rdmastor::s3
