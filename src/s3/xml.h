// S3 XML documents (pugixml): response bodies and the request bodies clients send.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "iam/acl.h"
#include "storage/object_layer.h"

namespace pugi {
class xml_node;
}

namespace rdmastor::s3 {

// Text content of a leaf element (all text and CDATA pieces joined). nullopt when the element has
// child elements: structure where a value belongs is malformed.
std::optional<std::string> LeafText(const pugi::xml_node& n);

// `details` are extra elements placed after Message (Error::details).
std::string ErrorXml(std::string_view code, std::string_view message, std::string_view resource,
                     std::string_view request_id,
                     const std::vector<std::pair<std::string, std::string>>& details = {});

// ISO-8601 with milliseconds, UTC: 2024-01-02T03:04:05.678Z
std::string Iso8601(int64_t unix_ns);
// RFC 7231 HTTP date: Tue, 02 Jan 2024 03:04:05 GMT
std::string HttpDate(int64_t unix_ns);
// Parses an HTTP date (RFC 7231 / RFC 850 / asctime); nullopt when malformed. Returns unix seconds.
std::optional<int64_t> ParseHttpDate(std::string_view s);

struct Owner {
  std::string id = std::string(iam::kRootCanonicalId);
  std::string display_name = std::string(iam::kRootDisplayName);
};
// The owner an entry's recorded owner (ObjectInfo::owner, UploadInfo::owner: an access key) is
// shown as. Listings take the bucket owner's Owner for entries recorded without one ("") and ask
// `names` (when given) for the others (s3/ownership.h).
using OwnerNames = std::function<Owner(std::string_view owner_key)>;

// ListBuckets: `buckets` is the page to list; the rest describes the page.
struct ListBucketsParams {
  std::optional<std::string> prefix;  // echoed when the request had one
  std::string continuation_token;     // the next page's token; empty on the last page
  std::string region;                 // every bucket's BucketRegion; empty: none written
};
std::string ListBucketsXml(const std::vector<storage::BucketInfo>& buckets, const Owner& owner,
                           const ListBucketsParams& p = {});
std::string LocationXml(std::string_view region);  // <LocationConstraint>; "" for us-east-1

// encode_url: keys, prefixes, delimiter, markers are URL-encoded (encoding-type=url).
struct ListV1Params {
  std::string bucket, prefix, delimiter, marker;
  int max_keys = 1000;
  bool encode_url = false;
};
std::string ListObjectsV1Xml(const ListV1Params& p, const storage::ListResult& r,
                             const Owner& owner, const OwnerNames* names = nullptr);

// MinIO's listings with metadata=true: what one listed object shows besides (UserMetadata: the
// element name and value of each entry; UserTags: the tags' query form). Empty: nothing.
struct ListedMetadata {
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string tags;
};

struct ListV2Params {
  std::string bucket, prefix, delimiter, start_after, continuation_token;
  int max_keys = 1000;
  bool encode_url = false;
  bool fetch_owner = false;
  std::string next_continuation_token;   // set by the caller when r.truncated
  bool continuation_token_sent = false;  // echo continuation_token even when empty (as AWS)
  std::vector<ListedMetadata> extras;    // metadata=true: one per r.objects entry; else empty
};
std::string ListObjectsV2Xml(const ListV2Params& p, const storage::ListResult& r,
                             const Owner& owner, const OwnerNames* names = nullptr);

// ListObjectVersions: `r.objects` are the page's versions (delete markers included) in key order,
// newest first per key; version_id "" is written as "null".
struct ListVersionsParams {
  std::string bucket, prefix, delimiter, key_marker;
  int max_keys = 1000;
  bool encode_url = false;
  std::string version_id_marker;                        // as sent
  std::string next_key_marker, next_version_id_marker;  // when truncated
  std::vector<ListedMetadata> extras;  // metadata=true: one per r.objects entry; else empty
};
std::string ListObjectVersionsXml(const ListVersionsParams& p, const storage::ListResult& r,
                                  const Owner& owner, const OwnerNames* names = nullptr);

// `checksums`: the new object's / part's stored checksums (algorithm -> base64), written as
// ChecksumCRC32 etc. (and ChecksumType for objects).
std::string CopyObjectResultXml(std::string_view etag, int64_t mtime_ns,
                                const std::map<std::string, std::string>& checksums = {});
std::string CopyPartResultXml(std::string_view etag, int64_t mtime_ns,
                              const std::map<std::string, std::string>& checksums = {});
std::string InitiateMultipartUploadXml(std::string_view bucket, std::string_view key,
                                       std::string_view upload_id);
std::string CompleteMultipartUploadXml(std::string_view location, std::string_view bucket,
                                       std::string_view key, std::string_view etag,
                                       const std::map<std::string, std::string>& checksums = {});
// POST Object with success_action_status 201.
std::string PostResponseXml(std::string_view location, std::string_view bucket,
                            std::string_view key, std::string_view etag);

struct ListPartsParams {
  std::string bucket, key, upload_id;
  int part_number_marker = 0;
  int max_parts = 1000;
  std::string storage_class;       // the upload's; "" = STANDARD
  std::string checksum_algorithm;  // the upload's, upper case ("CRC32"); "" = none
  std::string checksum_type;       // "COMPOSITE" | "FULL_OBJECT" when an algorithm is set
};
// `parts` may be the upload's full part list: parts above part_number_marker are listed in number
// order, at most max_parts, with IsTruncated/NextPartNumberMarker set accordingly.
std::string ListPartsXml(const ListPartsParams& p, const std::vector<storage::PartInfo>& parts,
                         const Owner& owner);

struct ListUploadsParams {
  std::string bucket, prefix, delimiter, key_marker, upload_id_marker;
  int max_uploads = 1000;
  bool encode_url = false;
};
// `uploads` may be every upload in the bucket (any order): prefix, key/upload-id markers, delimiter
// grouping and max_uploads are applied here, in (key, upload id) order.
std::string ListMultipartUploadsXml(const ListUploadsParams& p,
                                    const std::vector<storage::UploadInfo>& uploads,
                                    const Owner& owner, const OwnerNames* names = nullptr);

struct DeleteEntry {
  std::string key;
  std::string version_id;
  std::optional<std::string> etag;  // <ETag>: a conditional delete of this key (If-Match)
};
struct DeleteRequest {
  bool quiet = false;
  std::vector<DeleteEntry> objects;
};
// Parses a <Delete> body; kMalformedXML on bad XML, a DOCTYPE, missing or empty <Key>, no objects,
// or more than 1000 objects.
Result<DeleteRequest> ParseDeleteXml(std::string_view body);

struct DeleteOutcome {
  std::string key;
  bool deleted = false;
  std::string code, message;   // when !deleted
  std::string version_id;      // <VersionId>: the version the request named ("null" included)
  bool delete_marker = false;  // <DeleteMarker>: a marker was removed or created
  std::string delete_marker_version_id;  // <DeleteMarkerVersionId>: the created marker's id
};
std::string DeleteResultXml(const std::vector<DeleteOutcome>& outcomes, bool quiet);

// Parses <CompleteMultipartUpload>; kMalformedXML on bad XML, missing PartNumber/ETag, or no parts;
// kInvalidArgument for a part number outside 1..10000. ETags are returned with surrounding quotes
// removed. Part order is kept as sent (checking it is the object layer's job).
Result<std::vector<storage::CompletePart>> ParseCompleteMultipartXml(std::string_view body);

// Parses an optional <CreateBucketConfiguration><LocationConstraint>; empty body -> "".
// kMalformedXML on bad XML.
Result<std::string> ParseCreateBucketXml(std::string_view body);

// GetObjectAttributes: the attributes asked for (x-amz-object-attributes), parts paged like
// ListParts (ObjectParts only for a multipart object).
struct ObjectAttributesParams {
  bool etag = false, checksum = false, object_parts = false, storage_class = false,
       object_size = false;
  std::string storage_class_name = "STANDARD";
  int part_number_marker = 0;
  int max_parts = 1000;
};
std::string GetObjectAttributesXml(const ObjectAttributesParams& p,
                                   const storage::ObjectInfo& info);

// <VersioningConfiguration>: empty for a bucket never versioned, else <Status>, and MinIO's
// <ExcludedPrefixes><Prefix>, <ExcludeFolders> where set.
std::string VersioningConfigurationXml(
    storage::Versioning state = storage::Versioning::kUnversioned,
    const storage::VersioningExclusions& excluded = {});
// PutBucketVersioning's body: Status and MfaDelete as sent (nullopt when absent), MinIO's
// ExcludedPrefixes (each <ExcludedPrefixes><Prefix>p</Prefix></ExcludedPrefixes>) and
// ExcludeFolders; kMalformedXML on bad XML or a value other than Enabled/Suspended (Status),
// Enabled/Disabled (MfaDelete), true/false (ExcludeFolders).
struct VersioningRequest {
  std::optional<storage::Versioning> status;
  std::optional<bool> mfa_delete;
  storage::VersioningExclusions excluded;
};
Result<VersioningRequest> ParseVersioningXml(std::string_view body);

// <AccessControlPolicy>: GetBucketAcl / GetObjectAcl's answer, grants in the order given.
std::string AccessControlPolicyXml(const iam::AclOwner& owner,
                                   const std::vector<iam::Grant>& grants);
// PutBucketAcl / PutObjectAcl's body. Grantees of a type other than CanonicalUser and Group
// (AmazonCustomerByEmail) are returned as a grant no canned ACL has (by id "email:ADDRESS").
// kMalformedACLError (AWS's code for a bad ACL document) on bad XML, a DOCTYPE, no Owner or no
// AccessControlList, a grant without grantee or permission, a grantee type or permission AWS does
// not define, or more than 100 grants (AWS's limit).
struct AclRequest {
  std::optional<std::string> owner_id;  // <Owner><ID>; "" for an Owner without one
  std::vector<iam::Grant> grants;
};
Result<AclRequest> ParseAccessControlPolicyXml(std::string_view body);

// An ISO 8601 / RFC 3339 instant ("2030-01-01T00:00:00Z", fractions of a second and a numeric
// offset allowed) as ms since the epoch; nullopt when malformed.
std::optional<int64_t> ParseIso8601Ms(std::string_view s);
// The other way: "2030-01-01T00:00:00.000Z" (any year a retain-until date may name).
std::string Iso8601Ms(int64_t unix_ms);

// Object Lock (s3/object_lock.h). The bucket configuration: <ObjectLockConfiguration>
// <ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode/>
// <Days/>|<Years/></DefaultRetention></Rule>. `mode` "" = no Rule.
struct ObjectLockConfigDoc {
  std::string mode;  // "GOVERNANCE" | "COMPLIANCE"
  int64_t days = 0, years = 0;  // one of them, when mode is set
};
// MalformedXML for anything but the schema (ObjectLockEnabled other than Enabled, an unknown
// mode, Days and Years together or neither); InvalidRetentionPeriod for a period that is not
// positive or too long.
Result<ObjectLockConfigDoc> ParseObjectLockConfigXml(std::string_view body);
std::string ObjectLockConfigXml(const ObjectLockConfigDoc& c);
// <Retention><Mode/><RetainUntilDate/></Retention>: both or neither (removing a retention);
// `until_ms` nullopt = neither. MalformedXML otherwise.
struct RetentionDoc {
  std::string mode;
  std::optional<int64_t> until_ms;
};
Result<RetentionDoc> ParseRetentionXml(std::string_view body);
std::string RetentionXml(std::string_view mode, int64_t until_ms);
// <LegalHold><Status>ON|OFF</Status></LegalHold>.
Result<std::string> ParseLegalHoldXml(std::string_view body);
std::string LegalHoldXml(std::string_view status);

// Bucket CORS (s3/cors.h): one <CORSRule>.
struct CorsRule {
  std::string id;
  std::vector<std::string> origins, methods, headers, expose;
  std::optional<int64_t> max_age;
};
inline constexpr size_t kMaxCorsRules = 100;
// A <CORSConfiguration> document: MalformedXML for anything but the schema (a rule without
// AllowedOrigin or AllowedMethod, more than kMaxCorsRules rules), InvalidRequest for a method S3
// does not allow (GET, PUT, HEAD, POST, DELETE) or an origin or header with more than one '*',
// as AWS answers.
Result<std::vector<CorsRule>> ParseCorsXml(std::string_view body);
std::string CorsXml(const std::vector<CorsRule>& rules);

// Bucket lifecycle (s3/lifecycle.h): one <Rule> of a <LifecycleConfiguration>.
struct LifecycleRule {
  std::string id;  // a rule sent without one gets a generated id (as AWS)
  bool enabled = false;
  // How the rule names its objects: the rule-level <Prefix> of the first schema, a <Filter> with
  // at most one predicate, or a <Filter><And>. Kept so GET returns the rule as it was sent.
  enum class Form : uint8_t { kPrefix, kFilter, kAnd };
  Form form = Form::kFilter;
  std::optional<std::string> prefix;
  std::vector<std::pair<std::string, std::string>> tags;
  std::optional<int64_t> size_gt, size_lt;  // ObjectSizeGreaterThan / ObjectSizeLessThan (bytes)
  // Expiration: Days, Date (ms since the epoch, midnight UTC), ExpiredObjectDeleteMarker.
  std::optional<int64_t> days, date_ms;
  std::optional<bool> expired_object_delete_marker;
  // NoncurrentVersionExpiration: NoncurrentDays, NewerNoncurrentVersions.
  std::optional<int64_t> noncurrent_days, newer_noncurrent;
  // AbortIncompleteMultipartUpload: DaysAfterInitiation.
  std::optional<int64_t> abort_days;
};
inline constexpr size_t kMaxLifecycleRules = 1000;
inline constexpr size_t kMaxLifecycleIdBytes = 255;
// A <LifecycleConfiguration> document, checked as AWS checks it: MalformedXML for anything but
// the schema (no rule or more than kMaxLifecycleRules, a Status other than Enabled / Disabled,
// Prefix and Filter together or neither, a Filter with more than one predicate, an Expiration
// with none or more than one of Days / Date / ExpiredObjectDeleteMarker, a Date that is not an
// ISO 8601 instant); InvalidArgument for an ID over 255 bytes, an ID used twice, a number of
// days that is not positive, a Date not at midnight UTC, a negative or empty size range;
// InvalidRequest for a rule with no action, repeated tag keys, tags with
// AbortIncompleteMultipartUpload or ExpiredObjectDeleteMarker; NotImplemented for transitions
// (no storage tiers here). Rules without an ID get one.
Result<std::vector<LifecycleRule>> ParseLifecycleXml(std::string_view body);
std::string LifecycleXml(const std::vector<LifecycleRule>& rules);

// OwnershipControls (s3/ownership.h): the one rule's ObjectOwnership, as sent
// ("BucketOwnerEnforced" | "BucketOwnerPreferred" | "ObjectWriter"). MalformedXML for anything
// else, or a document without exactly one rule (AWS).
Result<std::string> ParseOwnershipControlsXml(std::string_view body);
std::string OwnershipControlsXml(std::string_view object_ownership);

// PublicAccessBlockConfiguration (s3/ownership.h): absent fields are false. MalformedXML for an
// unknown element or a value other than true / false.
struct PublicAccessBlock {
  bool block_public_acls = false;
  bool ignore_public_acls = false;
  bool block_public_policy = false;
  bool restrict_public_buckets = false;
  bool operator==(const PublicAccessBlock&) const = default;
};
Result<PublicAccessBlock> ParsePublicAccessBlockXml(std::string_view body);
std::string PublicAccessBlockXml(const PublicAccessBlock& block);

}  // namespace rdmastor::s3
