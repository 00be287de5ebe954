// The JSON records the storage layer keeps on a drive: object metadata (.rdmastor.meta /
// .rdmastor.dirmeta), multipart upload records (upload.json) and part records (part.N.json).
// Parsing never throws; a malformed record is a kInternalError naming the file.
//
// Metadata file format 2 holds every version of one key, newest first:
//   {"version":2,"versions":[{<ObjectMeta fields>}, ...],"checksum":"<crc32c>"}
// Each version has its own data directory (none for a delete marker). A format 1 file (one
// object, its fields at the top level) reads as a file holding one null version; it is rewritten
// in format 2 by the next write of its key.
//
// Format 3 (server-side encryption, issue 16) is format 2 with an optional per-version member
//   "internal": {"sse": "SSE-S3"|"SSE-KMS"|"SSE-C", "sse-sealed-key": <base64>, "sse-kek-id": <name>,
//                "sse-kms-context": <base64 JSON>, "sse-bucket-key": "true"}
// (absent = the version's data is stored as sent). An encrypted version's "size" and part sizes
// are the stored (encrypted) sizes; the plaintext sizes follow from them (crypto::DecryptedSize)
// and are what ToInfo reports. A file is written as format 3 only when one of its versions has
// "internal": a reader that predates it refuses such a file ("unsupported metadata version")
// instead of serving ciphertext as the object, and files without encrypted versions stay
// format 2, readable by older binaries. Migration: none needed; a downgrade makes encrypted
// objects unreadable (500) until the newer binary is back, unencrypted ones stay readable.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "storage/object_layer.h"
#include "storage/version_record.h"

namespace rdmastor::storage {

inline constexpr int kMetaFormatVersion = 2;
inline constexpr int kMetaFormatEncrypted = 3;  // a version carries "internal" (see above)

// Keys of ObjectMeta::internal / ObjectInfo::internal / UploadRecord::internal.
inline constexpr const char* kInternalSse = "sse";                   // "SSE-S3" | "SSE-C"
inline constexpr const char* kInternalSealedKey = "sse-sealed-key";  // crypto::SealKey's form
inline constexpr const char* kInternalKekId = "sse-kek-id";  // SSE-S3/KMS: the sealing key's name
inline constexpr const char* kInternalKmsContext = "sse-kms-context";  // SSE-KMS context, as sent
inline constexpr const char* kInternalBucketKey = "sse-bucket-key";    // "true": bucket key asked
// True when the data is stored encrypted (sizes in the metadata are the stored sizes).
bool IsEncrypted(const std::map<std::string, std::string>& internal);

// Version ids the stores generate and accept from a file or a request: 1..64 bytes of
// [A-Za-z0-9-]. The null version (unversioned / Suspended writes) has the id "" (S3's "null").
inline constexpr size_t kMaxVersionIdLength = 64;
bool IsValidVersionId(std::string_view id);
// A new random version id: a UUID (version 4) in its 36-character text form.
std::string GenerateVersionId();

// A multipart object's ETag from its parts' ETags (hex MD5s, unquoted): the MD5 of the
// concatenated binary MD5s, "-N". A part ETag that is not hex (foreign) is hashed as text.
std::string MultipartEtag(const std::vector<std::string>& part_etags);

struct PartMeta {
  int number = 0;  // 1..N: position in the object (multipart objects are renumbered densely)
  uint64_t size = 0;
  std::string etag;
  std::map<std::string, std::string> checksums;  // the part's S3 checksums; written when present

  bool operator==(const PartMeta&) const = default;
};

// How an erasure-coded object is stored (absent for the single-drive layout). Every drive of the
// set holds one shard per part: shard file <data_dir>/part.N, or `inline_shard` for small objects.
struct ErasureMeta {
  int data = 0;
  int parity = 0;
  uint64_t stripe_size = 0;
  int index = 0;                  // shard index (0-based) this drive holds
  std::vector<int> distribution;  // shard index held by each drive position of the set
  std::string bitrot;             // per-block checksum algorithm of the shard files: "xxh3-64"
  bool is_inline = false;         // the shard is `inline_shard`, no data directory exists
  std::string inline_shard;       // framed shard bytes (base64 in the file)
  // The shard as a canonical file held it (base64, not yet decoded), when inline_shard is empty:
  // a commit that moves a version from one file into another (RenameData's kAddVersion on every
  // drive of a PUT) copies the text and never decodes it. Decoding and re-encoding were 16% of a
  // cluster node's CPU in a 1 MiB PUT on 4x4 (inline shards of 87 KiB).
  std::string inline_b64;

  // Moves inline_b64's bytes into inline_shard, decoded; false when it is not valid base64 (a
  // damaged copy). A no-op for a shard already decoded.
  bool DecodeInline();
  // Sets the shard's bytes (dropping any undecoded text).
  void SetInline(std::string bytes) {
    inline_shard = std::move(bytes);
    inline_b64.clear();
  }
  // Shards compare by their bytes, however each is held.
  bool operator==(const ErasureMeta& o) const;
};

// One version of an object (the per-version record of the metadata file): every field of
// storage/version_record.h, and the format of the file it was read from.
struct ObjectMeta {
  int version = kMetaFormatVersion;
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_ALL)

  ObjectInfo ToInfo(const std::string& bucket, const std::string& key) const;
  bool operator==(const ObjectMeta&) const = default;
};

// Copies the declared attributes in `mask` (storage/version_record.h) from one holder of them to
// another: PutOptions, UploadRecord, ObjectMeta, ObjectInfo.
template <class From, class To>
void CopyDeclared(const From& from, To& to, VersionFieldMask mask = kDeclaredFields) {
#define RDMASTOR_VERSION_COPY_DECLARED(member, name, T, codec, presence, scope) \
  if constexpr (FieldScope::scope == FieldScope::kDeclared) {                   \
    if (mask & FieldBit(VersionField::member)) to.member = from.member;         \
  }
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_COPY_DECLARED)
#undef RDMASTOR_VERSION_COPY_DECLARED
}

// UpdateMetadata's change to one version: the declared attributes in `opts.update` from `opts`,
// and the modification time set to `now_ns` when the mask holds mtime_ns.
void ApplyMetadataUpdate(const PutOptions& opts, ObjectMeta& meta, int64_t now_ns);

// The peer codec's JSON form of an ObjectInfo's version fields (cluster/wire.cc adds bucket, key
// and the part lists): the record's own codecs and names; a member an older peer does not send
// reads as its default. FromJson throws on a malformed member (the caller words the error).
void VersionFieldsToJson(const ObjectInfo& info, nlohmann::json& j);
void VersionFieldsFromJson(const nlohmann::json& j, ObjectInfo& info);

// Every version of one key, newest first (at most one per version id, the null one included).
struct ObjectVersions {
  std::vector<ObjectMeta> versions;

  const ObjectMeta* Latest() const { return versions.empty() ? nullptr : &versions.front(); }
  ObjectMeta* Latest() { return versions.empty() ? nullptr : &versions.front(); }
  // The version with this id ("" = the null version); nullptr when absent.
  const ObjectMeta* Find(std::string_view version_id) const;
  ObjectMeta* Find(std::string_view version_id);
  // Removes the version with this id; returns it (nullopt when absent).
  std::optional<ObjectMeta> Remove(std::string_view version_id);
  // Adds `v` in mtime order (newest first; before versions of the same mtime), replacing the
  // version with the same id; returns the replaced one.
  std::optional<ObjectMeta> Add(ObjectMeta v);
  // Data directories of all versions (delete markers have none).
  std::vector<std::string> DataDirs() const;
};

// The file carries "checksum": CRC32C (hex) of its own JSON without that field, so a torn or
// bit-rotten metadata file is detected (files written before the field existed have none).
std::string SerializeObjectVersions(const ObjectVersions& file);
// Reads format 2, and format 1 as one null version. An empty version list is malformed.
// A file in the exact layout SerializeObjectVersions writes is read by ParseCanonicalVersions;
// any other (another spelling, an older format, a damaged or hostile file) by
// ParseObjectVersionsGeneral, which also words every error.
Result<ObjectVersions> ParseObjectVersions(const std::string& text,
                                           const std::string& path_for_errors);
// The two readings, public for the tests that hold them equal. ParseCanonicalVersions declines
// (nullopt) whatever it does not read exactly as ParseObjectVersionsGeneral would, errors included.
std::optional<ObjectVersions> ParseCanonicalVersions(std::string_view text);
Result<ObjectVersions> ParseObjectVersionsGeneral(const std::string& text,
                                                  const std::string& path_for_errors);

// A file holding only `meta`, and the latest version of a file (a delete marker included).
std::string SerializeObjectMeta(const ObjectMeta& meta);
Result<ObjectMeta> ParseObjectMeta(const std::string& text, const std::string& path_for_errors);

// upload.json: the upload's declared attributes (storage/version_record.h, spelled as in the
// version record) are applied to the object at Complete.
struct UploadRecord {
  std::string key;
  int64_t initiated_ns = 0;
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_DECLARED)
  std::string checksum_algorithm;  // "" | "crc32" | "crc32c" | "crc64nvme" | "sha1" | "sha256"
  std::string checksum_type;       // "" (none) | "COMPOSITE" | "FULL_OBJECT"; written when set
  // Parity shards the parts are coded with (the class's parity when the upload began, so a
  // settings change meanwhile cannot mix geometries); absent in records of earlier releases,
  // whose parts all had the standard parity.
  std::optional<int> parity;
  // `internal` (the object's sealed key): every part is encrypted with the same object key. A
  // record with it is written with "version": 2 so that a reader of version 1 refuses the upload
  // rather than completing it into an object without its key.
};
std::string SerializeUploadRecord(const UploadRecord& rec);
Result<UploadRecord> ParseUploadRecord(const std::string& text, const std::string& path_for_errors);

// part.N.json
struct PartRecord {
  PartInfo info;
  std::string data_file;  // file name of the part's data in the upload directory
};
std::string SerializePartRecord(const PartRecord& rec);
Result<PartRecord> ParsePartRecord(const std::string& text, const std::string& path_for_errors);

}  // namespace rdmastor::storage
