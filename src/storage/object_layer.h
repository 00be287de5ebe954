// The object layer: buckets, objects, multipart uploads. The S3 handlers talk only to this
// interface. Its one implementation is the erasure-coded ErasureStore (storage/erasure_store.h);
// a single drive runs as a one-drive erasure set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/http_types.h"
#include "storage/version_record.h"

namespace rdmastor {
class SplicePipe;  // common/splice.h
}  // namespace rdmastor

namespace rdmastor::storage {

struct ObjectInfo {
  std::string bucket;
  std::string key;
  // The version's declared and record fields (storage/version_record.h). When encrypted
  // (`internal`), `size` and `part_sizes` are the plaintext sizes; the stored bytes (what an
  // ObjectReader reads) are the encrypted streams (crypto/dare.h), one per part.
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_DECLARED)
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_RECORD)
  int part_count = 0;                // 0 for a single PUT
  std::vector<uint64_t> part_sizes;  // per part, when multipart
  // Per part, when multipart and the parts had checksums (GetObjectAttributes, GET ?partNumber=).
  std::vector<std::map<std::string, std::string>> part_checksums;
  bool is_latest = true;  // ListObjectVersions: the key's newest version
};

// A bucket's versioning state (PutBucketVersioning). A bucket that was versioned never returns
// to kUnversioned.
enum class Versioning { kUnversioned = 0, kEnabled = 1, kSuspended = 2 };

// Which version a read or delete addresses: nullopt = the latest, "" = the null version, else a
// version id.
using VersionSel = std::optional<std::string>;

// What a DeleteObject did: the version it removed, or the delete marker it created.
struct DeleteResult {
  std::string version_id;      // "" = null
  bool delete_marker = false;  // the removed version, or the created one, is a delete marker
  bool created_marker = false;
};

// MinIO's extension of an Enabled bucket's versioning (ExcludedPrefixes, ExcludeFolders): keys
// matching one of `prefixes` (each a prefix that may hold '*' wildcards) and, with `folders`,
// keys ending in '/' are written and deleted as in a Suspended bucket (null versions).
struct VersioningExclusions {
  std::vector<std::string> prefixes;
  bool folders = false;
  bool operator==(const VersioningExclusions&) const = default;
};

struct BucketInfo {
  std::string name;
  int64_t created_ns = 0;
  std::string tags;  // bucket tags, canonical URL-encoded query form; "" = none
  Versioning versioning = Versioning::kUnversioned;
  VersioningExclusions excluded;  // with kEnabled only
  // Default encryption (PutBucketEncryption): "" none, "AES256" SSE-S3.
  std::string encryption;
  // The bucket's subresource configurations by name ("object-lock", "cors"), each in the form
  // its S3 handler keeps it (s3/object_lock.h, s3/cors.h); absent = none.
  StringMap configs;
};

// The versioning state writes and deletes of `key` see: the bucket's, but Suspended for a key its
// exclusions name.
Versioning VersioningFor(const BucketInfo& info, std::string_view key);

// Conditional writes (If-Match / If-None-Match on PutObject and CompleteMultipartUpload): run under
// the key's write lock right before the commit, with the object the write would replace (nullptr:
// there is none), so that racing writers see each other's commits. An error aborts the write and
// nothing becomes visible.
using WritePrecondition = std::function<Status(const ObjectInfo* current)>;

// What a delete acts on, read under the key's write lock before anything changes.
struct DeleteTarget {
  const ObjectInfo* latest = nullptr;   // the current version (a delete marker too); none: nullptr
  const ObjectInfo* removed = nullptr;  // the version removed for good; nullptr: none, or the
                                        // delete only adds a marker (versioning Enabled)
};
// Checked by DeleteObjectVersion under the key's write lock (Object Lock's retention, If-Match on
// a delete): an error leaves everything as it was, so a retention set or an object replaced
// between a caller's check and the delete cannot slip through.
using DeletePrecondition = std::function<Status(const DeleteTarget&)>;

// What PutObject knows before the body is read.
struct PutOptions {
  // The declared attributes recorded with the object (PutObject) or the upload
  // (NewMultipartUpload, then the object at Complete): storage/version_record.h.
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_DECLARED)
  // UpdateMetadata only: which fields it replaces with the ones above, on `version` (nullopt =
  // the latest). The default is a copy onto itself with REPLACE (kMetadataReplace); a
  // PutObjectTagging names tags alone, a PutObjectAcl acl alone, a master-key rotation internal
  // alone (s3/sse.h). mtime_ns in the mask sets the modification time to now.
  VersionFieldMask update = kMetadataReplace;
  std::optional<std::string> version;
  std::optional<uint64_t> size;  // declared decoded size, when known (checked against what arrived)
  WritePrecondition precondition;  // PutObject; UpdateMetadata too; empty: unconditional
  // Multipart uploads: CreateMultipartUpload's x-amz-checksum-algorithm (lower-case name) and
  // x-amz-checksum-type ("COMPOSITE" | "FULL_OBJECT"), recorded with the upload; "" = none.
  std::string checksum_algorithm;
  std::string checksum_type;
};

// Finishing hook run after the body was fully received (and written, fsynced) but before the
// object becomes visible. The S3 layer hashes the stream as it flows (it wraps the BodySource),
// verifies Content-MD5, x-amz-content-sha256 and x-amz-checksum-* here, and returns what to record;
// an error vetoes the commit and nothing becomes visible.
struct CommitInfo {
  std::string etag;                              // without quotes
  std::map<std::string, std::string> checksums;  // "crc32" | "crc32c" | "sha1" | "sha256" -> b64
};
using CommitCheck = std::function<Result<CommitInfo>(uint64_t bytes_received)>;

// A readable, consistent snapshot of one object's data (the object cannot change under it).
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual const ObjectInfo& info() const = 0;
  // Reads up to len bytes at object offset `off`. Returns bytes read (0 only at/after EOF).
  virtual Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) = 0;
  // Payload bytes this reader has copied in user space so far on their way into ReadAt's `buf`
  // (e.g. through a stripe cache). A reader that preads straight into `buf` copies none. The
  // S3-over-RDMA copy metric (minio_api_rdma_copied_bytes_total) adds this up per request.
  virtual uint64_t bytes_copied() const { return 0; }
  // Zero-copy reading for a GET over plain HTTP: puts up to `len` bytes at object offset `off`
  // into `pipe` by reference, checked (bitrot) before it returns. Returns the count; 0 where this
  // reader cannot (the caller uses ReadAt for those bytes). When it returns 0 or an error the
  // pipe may hold bytes that must never be sent: the caller drops the pipe.
  virtual Result<size_t> ReadIntoPipe(uint64_t /*off*/, size_t /*len*/, SplicePipe& /*pipe*/) {
    return size_t{0};
  }
  // The first offset at or after `off` where ReadIntoPipe can put bytes into a pipe (where its
  // unit, a stripe, starts); UINT64_MAX when nowhere. The caller reads up to there with ReadAt.
  virtual uint64_t PipeableFrom(uint64_t /*off*/) { return UINT64_MAX; }
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;
  std::string start_after;  // exclusive lower bound on keys (marker / continuation / start-after)
  int max_keys = 1000;
  // ListObjectVersions: every version of each key (ListResult::objects holds them newest first
  // per key, delete markers included, max_keys counting keys); start_after is then inclusive.
  // Otherwise a key whose latest version is a delete marker is not listed.
  bool versions = false;
};

struct ListResult {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_marker;  // last key or prefix returned, when truncated
};

struct PartInfo {
  int number = 0;
  std::string etag;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::map<std::string, std::string> checksums;
};

struct UploadInfo {
  std::string key;
  std::string upload_id;
  int64_t initiated_ns = 0;
  std::string storage_class;       // "" = STANDARD
  std::string checksum_algorithm;  // lower-case; "" = none
  std::string checksum_type;       // with an algorithm: "COMPOSITE" | "FULL_OBJECT"
  std::string owner;               // the initiator (storage/version_record.h `owner`)
};

struct CompletePart {
  int number = 0;
  std::string etag;  // without quotes
  // Checksum<ALGO> elements the client sent for the part: lower-case algorithm -> value as sent
  // (checked against the stored part at Complete).
  std::multimap<std::string, std::string> checksums;
};

// The object checksum a CompleteMultipartUpload request declares (x-amz-checksum-<algo>,
// x-amz-checksum-type); empty fields: not sent.
struct CompleteChecksum {
  std::string algo;   // lower-case algorithm name of the x-amz-checksum-<algo> header
  std::string value;  // as sent (a composite value may end in "-N")
  std::string type;   // x-amz-checksum-type as sent
};

class ObjectLayer {
 public:
  virtual ~ObjectLayer() = default;

  virtual Status MakeBucket(const std::string& bucket) = 0;
  virtual Result<BucketInfo> GetBucketInfo(const std::string& bucket) = 0;
  virtual Result<std::vector<BucketInfo>> ListBuckets() = 0;
  virtual Status DeleteBucket(const std::string& bucket) = 0;  // BucketNotEmpty when objects exist
  // Replaces the bucket's tags (BucketInfo::tags form; "" removes them), kept in its record.
  virtual Status SetBucketTags(const std::string& bucket, const std::string& tags) = 0;

  // Streams the body into storage; the object becomes visible atomically after `check` passes.
  virtual Result<ObjectInfo> PutObject(const std::string& bucket, const std::string& key,
                                       BodySource& body, const PutOptions& opts,
                                       const CommitCheck& check) = 0;
  virtual Result<std::unique_ptr<ObjectReader>> OpenObject(const std::string& bucket,
                                                           const std::string& key) = 0;
  virtual Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key) = 0;
  virtual Status DeleteObject(const std::string& bucket, const std::string& key) = 0;
  // Replaces metadata only (CopyObject onto itself with REPLACE).
  virtual Result<ObjectInfo> UpdateMetadata(const std::string& bucket, const std::string& key,
                                            const PutOptions& opts) = 0;
  virtual Result<ListResult> ListObjects(const std::string& bucket, const ListOptions& opts) = 0;

  // Multipart.
  virtual Result<std::string> NewMultipartUpload(const std::string& bucket, const std::string& key,
                                                 const PutOptions& opts) = 0;
  virtual Result<PartInfo> PutObjectPart(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, int part_number,
                                         BodySource& body, std::optional<uint64_t> size,
                                         const CommitCheck& check) = 0;
  virtual Result<std::vector<PartInfo>> ListParts(const std::string& bucket,
                                                  const std::string& key,
                                                  const std::string& upload_id) = 0;
  virtual Result<std::vector<UploadInfo>> ListMultipartUploads(const std::string& bucket,
                                                               const std::string& prefix) = 0;
  virtual Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) = 0;
  // Checks parts (InvalidPart, InvalidPartOrder, EntityTooSmall for any but the last < 5 MiB)
  // and their checksums against the upload's (storage/multipart_checksum.h), and publishes the
  // object atomically.
  virtual Result<ObjectInfo> CompleteMultipartUpload(const std::string& bucket,
                                                     const std::string& key,
                                                     const std::string& upload_id,
                                                     const std::vector<CompletePart>& parts,
                                                     const WritePrecondition& precondition = {},
                                                     const CompleteChecksum& declared = {}) = 0;
  // Metadata recorded at NewMultipartUpload (content type, user metadata, checksum algorithm).
  virtual Result<PutOptions> GetUploadOptions(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id) = 0;

  // ---- versioning (an unversioned layer holds only null versions) ----
  virtual Status SetBucketVersioning(const std::string& bucket, Versioning state,
                                     const VersioningExclusions& excluded = {});
  // A specific version (`version_id` "" = null). A delete marker opens/stats as kMethodNotAllowed
  // (the S3 layer adds the marker headers); a missing version is kNoSuchVersion.
  virtual Result<std::unique_ptr<ObjectReader>> OpenObjectVersion(const std::string& bucket,
                                                                  const std::string& key,
                                                                  const std::string& version_id);
  virtual Result<ObjectInfo> StatObjectVersion(const std::string& bucket, const std::string& key,
                                               const std::string& version_id);
  // The latest version, or when it is a delete marker kNoSuchKey and `marker` set to it.
  virtual Result<ObjectInfo> StatLatest(const std::string& bucket, const std::string& key,
                                        ObjectInfo* marker);
  // nullopt: a delete as the bucket's versioning state makes it (a delete marker when Enabled or
  // Suspended); a version id: that version removed for good.
  virtual Result<DeleteResult> DeleteObjectVersion(const std::string& bucket,
                                                   const std::string& key, const VersionSel& v,
                                                   const DeletePrecondition& precondition = {});
  // Lists every version (ListOptions::versions is set by the caller).
  virtual Result<ListResult> ListObjectVersions(const std::string& bucket, const ListOptions& opts);

  // The bucket's versioning state as writes see it, cheap enough for every read (may be a few
  // seconds stale when changed through another node). An unversioned layer: kUnversioned.
  virtual Result<Versioning> BucketVersioning(const std::string& bucket);

  // ---- default encryption (BucketInfo::encryption) ----
  virtual Status SetBucketEncryption(const std::string& bucket, const std::string& algorithm);
  // The bucket's default encryption, cheap enough for every PUT (may be a few seconds stale when
  // changed through another node).
  virtual Result<std::string> BucketEncryption(const std::string& bucket);

  // ---- subresource configurations (BucketInfo::configs) ----
  // Sets the configuration `name` ("" removes it), kept in the bucket's record.
  virtual Status SetBucketConfig(const std::string& bucket, const std::string& name,
                                 const std::string& value);
  // The configuration `name` ("" = none), cheap enough for every request (may be a few seconds
  // stale when changed through another node).
  virtual Result<std::string> BucketConfig(const std::string& bucket, const std::string& name);
};

}  // namespace rdmastor::storage
