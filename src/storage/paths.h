// The on-drive layout: where buckets, objects, multipart uploads and temporary data live, and the
// mapping from an object key to its directory. Every path the storage layer touches is built from
// components checked here, so a key can never resolve outside its bucket directory.
//
//   <drive>/<bucket>/                         bucket
//   <drive>/<bucket>/s1/.../sn/.rdmastor.meta object "s1/.../sn"  (JSON, see object_meta.h)
//   <drive>/<bucket>/s1/.../sn/.rdmastor.data.<id>/part.1..N   its data
//   <drive>/<bucket>/s1/.../sn/.rdmastor.dirmeta               object "s1/.../sn/"
//   <drive>/<bucket>/s1/.../sn/.rdmastor.dirdata.<id>/          its data
//   <drive>/.rdmastor.sys/buckets/<bucket>.json                bucket metadata
//   <drive>/.rdmastor.sys/multipart/<bucket>/<upload id>/      pending multipart upload:
//       upload.json, part.N.json (record, replaced atomically), part.N.<rand> (data it names)
//   <drive>/.rdmastor.sys/tmp/<id>/                            staging; wiped at startup
//
// Keys "a", "a/" and "a/b" therefore coexist: all three live in or under directory "a".
// Every internal name starts with ".rdmastor.", which object keys may not use as a segment.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::storage::paths {

inline constexpr std::string_view kInternalPrefix = ".rdmastor.";
inline constexpr std::string_view kSysDir = ".rdmastor.sys";
inline constexpr std::string_view kTmpDir = "tmp";
inline constexpr std::string_view kMultipartDir = "multipart";
inline constexpr std::string_view kBucketsDir = "buckets";
inline constexpr std::string_view kMetaFile = ".rdmastor.meta";
inline constexpr std::string_view kDirMetaFile = ".rdmastor.dirmeta";
inline constexpr std::string_view kDataPrefix = ".rdmastor.data.";
inline constexpr std::string_view kDirDataPrefix = ".rdmastor.dirdata.";

inline constexpr size_t kMaxKeyLength = 1024;
inline constexpr size_t kMaxSegmentLength = 255;  // NAME_MAX of Linux file systems

// True for names the layout reserves (never listed as buckets or keys).
bool IsInternalName(std::string_view name);

// The only names a commit may place, replace or retire inside a key directory. A metadata file is
// kMetaFile or kDirMetaFile; a data directory is kDataPrefix or kDirDataPrefix followed by 1..64
// letters or digits (what the stores generate). Both are one plain path component, so a name that
// crossed the wire (a peer's commit, a journal, a metadata file) can neither leave the key
// directory nor name a neighbouring key's directory.
bool IsMetaFileName(std::string_view name);
bool IsDataDirName(std::string_view name);

// Defense in depth for bucket names reaching the drive: 3..63 bytes of [a-z0-9.-], starting and
// ending with a letter or digit. (The S3 layer applies the full S3 rules before this.)
// Error: kInvalidBucketName.
Status ValidateBucketName(std::string_view bucket);

// Where one object key lives, relative to its bucket directory.
struct KeyLocation {
  std::string rel_dir;           // "s1/.../sn": key without a trailing '/'
  bool dir_key = false;          // key ended with '/'
  std::string_view meta_name;    // kMetaFile or kDirMetaFile
  std::string_view data_prefix;  // kDataPrefix or kDirDataPrefix
};

// Maps a key to its location, re-checking the key rules: 1..1024 bytes, no NUL, no leading '/',
// no empty, "." or ".." segment, no segment starting with ".rdmastor.", segments <= 255 bytes.
// Errors: kKeyTooLong, kInvalidObjectName.
Result<KeyLocation> MapKey(std::string_view key);

// True when `segment` may be a directory component of a key (same rules as MapKey).
bool IsValidSegment(std::string_view segment);

// Absolute paths below a drive root.
std::string SysDir(const std::string& root);
std::string TmpDir(const std::string& root);
std::string MultipartRoot(const std::string& root);
std::string BucketsMetaDir(const std::string& root);
std::string BucketDir(const std::string& root, std::string_view bucket);
std::string BucketMetaFile(const std::string& root, std::string_view bucket);
std::string MultipartBucketDir(const std::string& root, std::string_view bucket);

// "<a>/<b>"
std::string Join(std::string_view a, std::string_view b);

}  // namespace rdmastor::storage::paths
