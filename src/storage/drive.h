// One drive of an erasure-coded deployment as the erasure layer sees it, in the spirit of MinIO's
// StorageAPI: volumes (bucket directories), files addressed by paths relative to the drive root,
// shard files written into a staging directory and read back by range, the atomic commit of a
// staged version, listing, the format file, and disk state.
//
// LocalDrive (local_drive.h) implements it on a directory with fsutil/paths; cluster::RemoteDrive
// implements it by calling the peer node that owns the drive (peer RPC, src/cluster/). The calls
// of a request's hot path that the drives of one node share (metadata reads, shard pieces,
// commits) go through that node's DriveHost (drive_host.h) in batches instead. Paths are
// '/'-separated, relative to the drive root, never absolute and never containing a ".." segment
// (CheckRelPath); the helpers in `rel::` build them.
//
// Every call is blocking and thread-safe. Errors are values: a drive that cannot be reached
// (remote node down, local I/O error) answers an Error; callers count it as a missing drive.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "storage/format.h"
#include "storage/fsutil.h"
#include "storage/object_layer.h"

namespace rdmastor::storage {

// Drive-relative paths of the layout (paths.h gives the same below an absolute root).
namespace rel {
std::string Sys();                         // .rdmastor.sys
std::string Tmp();                         // .rdmastor.sys/tmp
std::string Staging(std::string_view id);  // .rdmastor.sys/tmp/<id>
std::string MultipartRoot();               // .rdmastor.sys/multipart
std::string MultipartBucket(std::string_view bucket);
std::string BucketsMeta();  // .rdmastor.sys/buckets
std::string BucketMeta(std::string_view bucket);
std::string Format();  // .rdmastor.sys/format.json
}  // namespace rel

// Refuses (kInvalidArgument) absolute paths, empty or ".." segments, NUL bytes. "" is the root.
Status CheckRelPath(std::string_view rel_path);

struct DiskInfo {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  bool online = false;  // the drive answers and its system area exists
};

// Appends to one new shard file (created exclusively). Finish() fsyncs; a writer dropped without
// Finish() leaves a partial file in staging, which the staging removal takes away. Close()
// completes the file for a RenameData that follows, whose first barrier makes it durable (a
// local drive, and a remote one whose node runs that barrier, then skip the file's own fsync; the
// default is Finish()).
class ShardWriter {
 public:
  virtual ~ShardWriter() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Finish() = 0;
  virtual Status Close() { return Finish(); }
};

// Reads ranges of one shard file. A local file is opened once (a concurrent overwrite cannot take
// it away); a remote one is read by path on every call.
class ShardFile {
 public:
  virtual ~ShardFile() = default;
  // Reads up to len bytes at off; returns the count (short at end of file).
  virtual Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) = 0;
  // Reads `head_len` bytes at off into `head` and the `len` bytes after them into `buf`: a framed
  // block's hash and its data, each into its own buffer (the GET path of a set without parity
  // reads the data straight into the response buffer). Returns the total count. A local file
  // does it in one preadv; the default reads twice.
  virtual Result<size_t> ReadFramedAt(uint64_t off, char* head, size_t head_len, char* buf,
                                      size_t len) {
    auto h = ReadAt(off, head, head_len);
    if (!h.ok() || *h < head_len) return h;
    auto n = ReadAt(off + head_len, buf, len);
    if (!n.ok()) return n;
    return head_len + *n;
  }
  // The first `size` bytes of the file as read-only memory, valid while this object lives, for
  // zero-copy sending: a local file maps them (the page cache's pages, not a copy). Empty when
  // the file cannot (a remote drive's) or holds fewer bytes.
  virtual std::string_view Map(uint64_t /*size*/) { return {}; }
};

// The commit of one staged version in one call (MinIO's RenameData): what a PUT, a metadata
// update and a delete end with on every drive. The drive, in order: creates `staging` when missing
// (an inline object's write never touched the drive before), reads the key's current metadata file
// (the version being replaced), writes `meta` into staging, and runs fsutil::Commit: <staging>/data
// becomes <key_dir>/<data_name>, the metadata file is replaced (or removed when `meta` is nullopt)
// and the replaced version's data directory is retired into <staging>/old. The staging directory is
// then removed, unless it holds retired data of a replaced version: the caller removes it
// (RemoveAll) once the write has its quorum, or restores the old version from it (a rollback). A
// delete (`meta` nullopt) is not rolled back: its staging directory always goes (or is kept for
// reuse, emptied of the retired data, with keep_staging). Names are checked
// as fsutil::Commit checks them (paths::IsMetaFileName / IsDataDirName); `staging` must lie in the
// staging area.
//
// Versions: `mode` says how `meta` combines with the key's current file (object_meta.h, format 2),
// so that each drive merges into its own file (which holds its own shard index and inline shards):
// kReplace writes `meta` as the whole file (heal, unversioned callers) and retires the data
// directory of the current latest version that `meta` no longer names; kAddVersion takes `meta` as
// a file of one version and puts it first in the current file, replacing (and retiring the data of)
// the version with the same id; kRemoveVersion (`meta` nullopt) removes `version_id` from the file,
// and the file with its last version.
enum class RenameMode { kReplace = 0, kAddVersion = 1, kRemoveVersion = 2 };

struct RenameDataRequest {
  std::string staging;              // drive-relative: rel::Staging(id)
  std::string bucket;               // must exist (kNoSuchBucket otherwise)
  std::string key_dir;              // drive-relative, below bucket: created when missing
  std::string meta_name;            // the metadata file inside key_dir
  std::string data_name;            // "" = no data directory to move in (inline object, delete)
  std::optional<std::string> meta;  // the new metadata file; nullopt = remove the version
  bool keep_data = false;           // a metadata-only update: the current data directory stays
  bool prune = false;  // afterwards remove key_dir and its parents when left empty (delete)
  RenameMode mode = RenameMode::kReplace;
  std::string version_id = {};  // kRemoveVersion: the version to remove ("" = the null version)
  // After a commit that leaves no retired data to the caller, keep the staging directory (holding
  // only the commit's journal) instead of removing it, for a later write to reuse: the next commit
  // in it overwrites the journal in place, so a write costs no staging mkdir, journal create,
  // unlink and rmdir (inode churn that is most of a small PUT's CPU on ext4 without a journal).
  bool keep_staging = false;
};

// Refuses (kInvalidArgument) a request whose names are not of the drive layout (what RenameData
// checks before it touches anything): `staging` one directory directly in the staging area, the
// meta and data names of paths::IsMetaFileName / IsDataDirName, a valid bucket name, and relative
// paths without ".." (CheckRelPath).
Status CheckRenameDataRequest(const RenameDataRequest& req);

struct RenameDataResult {
  std::optional<std::string> old_meta;  // the metadata file the commit replaced, when there was one
  // The data directory retired into <staging>/old; "" when none (then staging is gone or kept).
  std::string old_data_name;
  // The staging directory was kept for reuse (keep_staging): it holds only the commit's journal.
  bool staging_kept = false;
};

// The calls of a Drive, declared once: Drive declares each as a pure virtual, and LocalDrive and
// cluster::RemoteDrive their overrides with RDMASTOR_DRIVE_OVERRIDES, so that a new call is one
// line here plus its definitions (the compiler names an implementation that lacks one). Types
// are spelled as they resolve from any namespace of rdmastor (`storage::`).
// X(return type, name, (parameters))
#define RDMASTOR_DRIVE_CALLS(X)                                                                 \
  /* ---- state ---- */                                                                         \
  /* The system area exists (the drive is formatted or being used and answers). */              \
  X(bool, IsOnline, ())                                                                         \
  X(Result<storage::DiskInfo>, GetDiskInfo, ())                                                 \
  /* Creates the drive directory if missing; false when it is not a usable directory. */        \
  X(Result<bool>, EnsureRoot, ())                                                               \
  /* Creates the system directories and settles what a crash left in the staging area. */       \
  X(Status, Prepare, ())                                                                        \
  /* True when the directory holds nothing but an empty system area / lost+found. */            \
  X(Result<bool>, IsEmpty, ())                                                                  \
  /* ---- format ---- */                                                                        \
  X(Result<storage::DriveFormat>, ReadFormat, ()) /* kNoSuchKey when absent */                  \
  X(Status, WriteFormat, (const storage::DriveFormat& format))                                  \
  /* ---- volumes (bucket directories + their record in the system area) ---- */                \
  /* Creates the bucket directory (and writes `record` as its metadata when it has none). */    \
  /* Returns whether the directory existed. Fails when the drive is offline. */                 \
  X(Result<bool>, MakeVol, (const std::string& bucket, const std::string& record))              \
  X(bool, StatVol, (const std::string& bucket))                                                 \
  X(Result<std::vector<std::string>>, ListVols, ()) /* directory names at the root */           \
  X(Result<std::optional<std::string>>, ReadVolMeta, (const std::string& bucket))               \
  X(Result<bool>, VolHasObjects, (const std::string& bucket))                                   \
  /* Removes the bucket directory, its multipart area and its record (renamed away first). */   \
  X(Status, DeleteVol, (const std::string& bucket))                                             \
  /* ---- files (relative paths) ---- */                                                        \
  X(Result<std::optional<std::string>>, ReadFile, (const std::string& path))                    \
  /* Creates or truncates, writes, fsyncs (not atomic by itself: write in staging, then */      \
  /* rename). */                                                                                \
  X(Status, WriteFile, (const std::string& path, std::string_view data))                        \
  X(bool, Exists, (const std::string& path))                                                    \
  X(bool, IsDir, (const std::string& path))                                                     \
  X(Result<std::vector<std::string>>, ListDir, (const std::string& path, bool dirs_only))       \
  /* One mkdir (mode 0755); an existing directory is an error too. */                           \
  X(Status, MakeDir, (const std::string& path))                                                 \
  X(Status, MakeDirAll, (const std::string& base, const std::string& path))                     \
  X(Status, Rename, (const std::string& from, const std::string& to))                           \
  X(Status, Link, (const std::string& from, const std::string& to))                             \
  X(Status, Unlink, (const std::string& path))                                                  \
  X(Status, RemoveAll, (const std::string& path))                                               \
  X(Status, FsyncDir, (const std::string& path))                                                \
  X(void, PruneEmptyDirs, (const std::string& path, const std::string& stop))                   \
  /* ---- shards ---- */                                                                        \
  /* A shard file in a staging directory is created with its missing parent directories */      \
  /* inside the staging area (no separate mkdir per drive before a write). `size`: the shard */ \
  /* file's size as the erasure layer expects it (what a writer will append in all, what a */   \
  /* reader's file holds; 0 = unknown). A remote drive picks the shard's transport by it */     \
  /* (inter-node RDMA for shards >= MINIO_RDMA_MIN_SIZE) and never reads past it. */            \
  X(Result<std::unique_ptr<storage::ShardWriter>>, CreateShard,                                 \
    (const std::string& path, uint64_t size))                                                   \
  X(Result<std::unique_ptr<storage::ShardFile>>, OpenShard,                                     \
    (const std::string& path, uint64_t size))                                                   \
  /* ---- commit ---- */                                                                        \
  /* fsutil::Commit with drive-relative paths; plan.root is ignored (rollback, heal, */         \
  /* multipart). */                                                                             \
  X(Status, Commit, (const storage::fsutil::CommitPlan& plan))                                  \
  /* Metadata + data + retirement of the old version in one call (see RenameDataRequest). */    \
  X(Result<storage::RenameDataResult>, RenameData, (const storage::RenameDataRequest& req))     \
  /* ---- listing (ListDrive of one bucket) ---- */                                             \
  X(Result<storage::ListResult>, ListObjects,                                                   \
    (const std::string& bucket, const storage::ListOptions& opts))

class Drive {
 public:
  virtual ~Drive() = default;

  // Where the drive is, for messages: "/mnt/d1" or "http://node2:9000/mnt/d1".
  virtual const std::string& name() const = 0;
  virtual bool is_local() const = 0;

#define RDMASTOR_DRIVE_PURE(Ret, Name, Params) virtual Ret Name Params = 0;
  RDMASTOR_DRIVE_CALLS(RDMASTOR_DRIVE_PURE)
#undef RDMASTOR_DRIVE_PURE
};

// In an implementation's class body: the override of every call of RDMASTOR_DRIVE_CALLS.
#define RDMASTOR_DRIVE_OVERRIDE(Ret, Name, Params) Ret Name Params override;
#define RDMASTOR_DRIVE_OVERRIDES RDMASTOR_DRIVE_CALLS(RDMASTOR_DRIVE_OVERRIDE)

}  // namespace rdmastor::storage
