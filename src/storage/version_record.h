// The per-version record, declared once (issue 36). Each line of RDMASTOR_VERSION_RECORD is one
// field of an object version; from it come:
//   - the members of ObjectMeta (storage/object_meta.h: the record on a drive), and of
//     ObjectInfo and PutOptions (storage/object_layer.h) as the field's scope says;
//   - the metadata file's writer and both readers' name dispatch (storage/object_meta.cc: the
//     general JSON reader and the canonical fast reader), and the multipart upload record's
//     declared attributes (upload.json);
//   - ObjectMeta::ToInfo, the copies of declared attributes (PUT, Complete, UpdateMetadata's
//     field mask) and the peer codec of ObjectInfo (cluster/wire.cc);
//   - tests/storage/version_record_test.cc, which walks the list through every codec.
// docs/architecture.md shows adding a field as a worked example.
//
// X(member, "json name", type, codec, presence, scope)
//   codec: how the value is spelled in JSON (object_meta.cc's codecs: Int, Str, Bool, Map,
//     UserMeta = a map whose non-UTF-8 entries go base64 under "<name>_b64", Parts, Erasure).
//   presence: kRequired = always written, a file without it is malformed; kAlways = always
//     written, read as the default when absent; kNonDefault = written only when not the default
//     (so files written before the field existed, and older readers, are unaffected).
//   scope: kDeclared = sent by the client and kept as sent (ObjectMeta, ObjectInfo, PutOptions,
//     the upload record); kRecord = computed by the store (ObjectMeta, ObjectInfo); kLayout =
//     where the data lies (ObjectMeta only).
// The JSON names are the on-disk names of format 2/3 (object_meta.h): a new field takes a new
// name, kNonDefault, and needs no format change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmastor::storage {

enum class FieldPresence { kRequired, kAlways, kNonDefault };
enum class FieldScope { kDeclared, kRecord, kLayout };

using StringMap = std::map<std::string, std::string>;

// Field notes (what a comment inside the macro cannot say):
//   etag: without quotes. mtime_ns: ns since epoch. content_type: as sent.
//   user_metadata: headers kept as sent (x-amz-meta-*, content-encoding, cache-control,
//     content-disposition, content-language, expires), lower-case names.
//   checksums: the client's checksum (base64) per algorithm ("crc32" | "crc32c" | "crc64nvme" |
//     "sha1" | "sha256"); multipart objects: the checksum of checksums with "-N", as S3 does.
//   storage_class: "" = STANDARD, else as sent (REDUCED_REDUNDANCY).
//   parts: data files part.1..part.N in data_dir (a single PUT has one); data_dir: next to the
//     metadata file; erasure: the shard layout (object_meta.h).
//   tags: canonical URL-encoded query form ("k1=v1&k2=v2", keys sorted); "" = none.
//   acl: the version's canned ACL (x-amz-acl: "public-read", ...); "" = private (iam/acl.h).
//   owner: the access key of the user who owns the version (who wrote it, or the bucket's owner
//     under OwnershipControls, s3/ownership.h); "" = the bucket's owner (versions written before
//     the field existed). Set by the server, not the client, but carried like the declared
//     attributes (PutOptions, the upload record: the upload's initiator).
//   version_id: "" = the null version (S3's "null"). delete_marker: no data (size 0).
//   internal: server-side state never sent to clients as such: the encryption of the data
//     (object_meta.h names the keys; s3/sse.h gives them meaning). Empty = unencrypted.
//   lock_mode, lock_until_ms, legal_hold: S3 Object Lock (s3/object_lock.h): the retention mode
//     ("" none, "GOVERNANCE", "COMPLIANCE"), its retain-until date (ms since epoch) and the legal
//     hold ("" never set, "ON", "OFF"). Part of the record, so heal and peers copy them with the version.
#define RDMASTOR_VERSION_RECORD(X)                                                                \
  X(size, "size", uint64_t, Int, kRequired, kRecord)                                              \
  X(etag, "etag", std::string, Str, kRequired, kRecord)                                           \
  X(mtime_ns, "mtime_ns", int64_t, Int, kRequired, kRecord)                                       \
  X(content_type, "content_type", std::string, Str, kAlways, kDeclared)                           \
  X(user_metadata, "user_metadata", ::rdmastor::storage::StringMap, UserMeta, kAlways, kDeclared) \
  X(checksums, "checksums", ::rdmastor::storage::StringMap, Map, kAlways, kRecord)                \
  X(storage_class, "storage_class", std::string, Str, kNonDefault, kDeclared)                     \
  X(multipart, "multipart", bool, Bool, kAlways, kLayout)                                         \
  X(parts, "parts", std::vector<::rdmastor::storage::PartMeta>, Parts, kRequired, kLayout)        \
  X(data_dir, "data_dir", std::string, Str, kRequired, kLayout)                                   \
  X(erasure, "erasure", std::optional<::rdmastor::storage::ErasureMeta>, Erasure, kNonDefault,    \
    kLayout)                                                                                      \
  X(tags, "tags", std::string, Str, kNonDefault, kDeclared)                                       \
  X(acl, "acl", std::string, Str, kNonDefault, kDeclared)                                         \
  X(version_id, "version_id", std::string, Str, kNonDefault, kRecord)                             \
  X(delete_marker, "delete_marker", bool, Bool, kNonDefault, kRecord)                             \
  X(internal, "internal", ::rdmastor::storage::StringMap, Map, kNonDefault, kDeclared)          \
  X(lock_mode, "lock_mode", std::string, Str, kNonDefault, kDeclared)                             \
  X(lock_until_ms, "lock_until_ms", int64_t, Int, kNonDefault, kDeclared)                         \
  X(legal_hold, "legal_hold", std::string, Str, kNonDefault, kDeclared)                           \
  X(owner, "owner", std::string, Str, kNonDefault, kDeclared)

// The fields by name, for field masks (PutOptions::update) and the tests.
enum class VersionField : unsigned {
#define RDMASTOR_VERSION_FIELD_ENUM(member, name, T, codec, presence, scope) member,
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_FIELD_ENUM)
#undef RDMASTOR_VERSION_FIELD_ENUM
      kCount
};
static_assert(static_cast<unsigned>(VersionField::kCount) <= 32, "VersionFieldMask is 32 bits");

using VersionFieldMask = uint32_t;
constexpr VersionFieldMask FieldBit(VersionField f) {
  return VersionFieldMask{1} << static_cast<unsigned>(f);
}
template <class... F>
constexpr VersionFieldMask FieldMask(F... f) {
  return (FieldBit(f) | ... | 0u);
}

// The fields of one scope (or presence), as a mask.
constexpr VersionFieldMask ScopeMask(FieldScope s) {
  VersionFieldMask m = 0;
#define RDMASTOR_VERSION_SCOPE_BIT(member, name, T, codec, presence, scope) \
  if (FieldScope::scope == s) m |= FieldBit(VersionField::member);
  RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_SCOPE_BIT)
#undef RDMASTOR_VERSION_SCOPE_BIT
  return m;
}
inline constexpr VersionFieldMask kDeclaredFields = ScopeMask(FieldScope::kDeclared);

// The Object Lock fields: changed only by Put/ObjectRetention and PutObjectLegalHold, under the
// rules of s3/object_lock.h.
inline constexpr VersionFieldMask kObjectLockFields =
    FieldMask(VersionField::lock_mode, VersionField::lock_until_ms, VersionField::legal_hold);

// What a copy onto itself with REPLACE changes (UpdateMetadata's default): every declared
// attribute but the encryption (kept unless asked for: a master-key rotation re-seals) and the
// Object Lock fields (a copy must not lift a lock), and the modification time (mtime_ns in a
// mask means "set to now").
inline constexpr VersionFieldMask kMetadataReplace =
    (kDeclaredFields & ~FieldBit(VersionField::internal) & ~kObjectLockFields) |
    FieldBit(VersionField::mtime_ns);

// Member declarations: RDMASTOR_VERSION_RECORD(RDMASTOR_VERSION_MEMBER_<SCOPE>) inside a struct
// declares the fields of that scope (ALL: every field), default-initialised.
#define RDMASTOR_VERSION_MEMBER_ALL(member, name, T, codec, presence, scope) T member{};
#define RDMASTOR_VERSION_MEMBER_DECLARED(member, name, T, codec, presence, scope) \
  RDMASTOR_VERSION_MEMBER_IF_##scope##_kDeclared(member, T)
#define RDMASTOR_VERSION_MEMBER_RECORD(member, name, T, codec, presence, scope) \
  RDMASTOR_VERSION_MEMBER_IF_##scope##_kRecord(member, T)
#define RDMASTOR_VERSION_MEMBER_IF_kDeclared_kDeclared(member, T) T member{};
#define RDMASTOR_VERSION_MEMBER_IF_kRecord_kRecord(member, T) T member{};
#define RDMASTOR_VERSION_MEMBER_IF_kLayout_kDeclared(member, T)
#define RDMASTOR_VERSION_MEMBER_IF_kLayout_kRecord(member, T)
#define RDMASTOR_VERSION_MEMBER_IF_kDeclared_kRecord(member, T)
#define RDMASTOR_VERSION_MEMBER_IF_kRecord_kDeclared(member, T)

}  // namespace rdmastor::storage
