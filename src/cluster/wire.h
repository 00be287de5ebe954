// The peer protocol, declared once: the table of storage calls (RDMASTOR_PEER_STORAGE_CALLS), their
// request and response types and how those travel, plus the JSON forms of the lock calls and
// errors as HTTP (an Error travels as its HTTP status, an `x-rdmastor-error` header with the S3
// code text and the message as body, and is decoded back into the same ErrorCode).
//
// A storage call is POST /minio/storage/v1/<wire name>?disk=PATH (a drive row) or
// POST /minio/storage/v1/<wire name> (a node row: a batch whose entries name drives). Its body is
// the request's JSON head, a newline, and the request's payload (the bytes JSON would mangle or
// copy: a shard piece, a file's contents, an object's metadata); JSON never contains a raw newline,
// so the first one ends the head. A response without a payload is its JSON head as the body; one
// with a payload carries the head in the `x-rdmastor-reply` header and the payload as the body (so
// a shard read lands in the caller's buffer). The whole body is covered by the peer signature
// (peer_auth.h).
//
// From the table come: the PeerCall enum and CallOf<> traits (here), the callers' side
// (SendCall / InvokeCall in remote_drive.h: encode, PeerClient::Call with the row's deadline,
// decode), PeerServer's dispatch (decode, the row's expression on the LocalDrive or LocalHost,
// encode) and the round-trip test of every call. Adding a call is one row in the table and the
// method it runs: a Drive method (drive row) or a DriveHost method (node row), which LocalHost
// and RemoteHost must both implement.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cluster/dsync.h"
#include "common/result.h"
#include "storage/drive.h"
#include "storage/drive_host.h"

namespace rdmastor::cluster {

inline constexpr const char* kErrorHeader = "x-rdmastor-error";
// The JSON head of a response whose body is its payload.
inline constexpr const char* kReplyHeader = "x-rdmastor-reply";

namespace peer {

// Request and response types of the table that are not the storage layer's own.
struct NoArgs {};
struct Done {};
struct BucketArgs {
  std::string bucket;
};
struct MakeVolArgs {
  std::string bucket;
  std::string payload;  // the bucket record
};
struct PathArgs {
  std::string path;
};
struct WriteFileArgs {
  std::string path;
  std::string payload;  // the file's contents
};
struct ListDirArgs {
  std::string path;
  bool dirs_only = false;
};
struct TwoPaths {  // rename/link: from, to; mkdirall: base, path; prune: path, stop
  std::string a;
  std::string b;
};
struct ListObjectsArgs {
  std::string bucket;
  storage::ListOptions opts;
};
// A piece of a shard file: `payload` written at `offset` of `path` (create: exclusively, with its
// staging directories; sync: fsync after). Over inter-node RDMA the payload is empty and the
// serving node pulls the piece (the token and length travel in signed headers, peer_auth.h).
struct ShardWriteArgs {
  std::string path;
  uint64_t offset = 0;
  bool create = false;
  bool sync = false;
  std::string payload;
};
// handle: a file the serving node kept open for an earlier piece of this read (open_shards.h), 0
// for none; keep: keep the file open after this piece (the reply names its handle); a piece
// without keep that names a handle releases it.
struct ShardReadArgs {
  std::string path;
  uint64_t offset = 0;
  uint64_t len = 0;
  uint64_t handle = 0;
  bool keep = false;
};
// What a shard read returns: the bytes (TCP), or how many the server pushed (inter-node RDMA);
// and the handle of the file kept open for the next piece (0: none).
struct ShardBytes {
  uint64_t rdma_bytes = 0;
  uint64_t handle = 0;
  std::string payload;
};
// The calls addressed to the node (batches: each entry names one of the serving node's drives by
// its path, at most once per call; an entry naming a drive that is not one of the serving node's
// refuses the whole call). They run on the node's storage::LocalHost, the one DriveHost call the
// caller's cluster::RemoteHost made.
//
// renamedatagroup: the commits of a PUT, a metadata update or a delete on the serving node's
// drives. Each entry carries what a renamedata call to its drive would; one result per entry, in
// order. Every entry is checked before any runs.
struct RenameDataEntry {
  std::string disk;
  storage::RenameDataRequest req;
};
struct RenameDataBatch {
  std::vector<RenameDataEntry> entries;
};
struct RenameDataResults {
  std::vector<Result<storage::RenameDataResult>> results;
};
// readfilegroup: files of several drives (the metadata of a key that a GET resolves).
struct ReadFileEntry {
  std::string disk;
  std::string path;
};
struct ReadFileBatch {
  std::vector<ReadFileEntry> entries;
};
struct ReadFileResults {
  std::vector<Result<std::optional<std::string>>> results;
};
// shardwritegroup: a piece of a shard file on each of several drives (what shardwrite does for
// one), the pieces one after another in the payload, each `len` bytes. Over inter-node RDMA the
// payload is empty and the serving node pulls all pieces at once (the token and the total length
// travel in signed headers, peer_auth.h). One result per entry, in order.
struct ShardWriteEntry {
  std::string disk;
  std::string path;
  uint64_t offset = 0;
  uint64_t len = 0;
  bool create = false;
  bool sync = false;
};
struct ShardWriteBatch {
  std::vector<ShardWriteEntry> entries;
  std::string payload;
};
struct DoneResults {
  std::vector<Result<Done>> results;
};
// shardreadgroup: a piece of a shard file on each of several drives (what shardread does for one):
// a GET's stripe reads of the serving node's drives. The reply's payload holds each entry's `len`
// bytes in its slot, one after another (a short or failed entry's slot zeroed), so the bytes land
// where the caller asked; over inter-node RDMA the serving node pushes all the slots at once into
// the caller's buffer and the payload is empty. One result per entry, in order: the bytes read
// and the handle kept (ShardReadArgs' handle and keep, per entry).
struct ShardReadEntry {
  std::string disk;
  std::string path;
  uint64_t offset = 0;
  uint64_t len = 0;
  uint64_t handle = 0;
  bool keep = false;
};
struct ShardReadBatch {
  std::vector<ShardReadEntry> entries;
};
struct ShardReadResults {
  std::vector<Result<storage::ShardPieceGot>> results;
  std::string payload;
};
using Names = std::vector<std::string>;
using OptBytes = std::optional<std::string>;

}  // namespace peer

// Who a call addresses: one drive (?disk=PATH) or the node (a batch whose entries name drives).
enum class PeerAddr { kDrive, kNode };
// How long a caller waits: quick calls (small reads, no payload, no fsync) get a deadline of their
// own (MINIO_PEER_QUICK_TIMEOUT); slow ones may wait for a peer's busy disk up to the I/O timeout
// (a dead peer is found by the health check).
enum class PeerWait { kQuick, kSlow };

// X(Id, "wire name", address, wait, Request, Response, what the serving node does)
// The last column is an expression over `in` (the decoded request), `srv` (the PeerServer's call
// context, for the calls that move shard bytes or name several drives) and, for a drive row, `d`
// (the served storage::LocalDrive&) or, for a node row, `h` (the node's storage::LocalHost&): a
// node row's expression cannot compile with `d`. It yields the Response, a Result of it, or a
// Status (Response Done). A node row is the peer side of a storage::DriveHost method: the
// caller's half is cluster::RemoteHost's override of it, which the compiler requires as well.
#define RDMASTOR_PEER_STORAGE_CALLS(X)                                                            \
  X(Online, "online", kDrive, kQuick, peer::NoArgs, bool, d.IsOnline())                           \
  X(DiskInfo, "diskinfo", kDrive, kQuick, peer::NoArgs, storage::DiskInfo, d.GetDiskInfo())       \
  X(EnsureRoot, "ensureroot", kDrive, kSlow, peer::NoArgs, bool, d.EnsureRoot())                  \
  X(IsEmpty, "isempty", kDrive, kQuick, peer::NoArgs, bool, d.IsEmpty())                          \
  X(ReadFormat, "readformat", kDrive, kQuick, peer::NoArgs, storage::DriveFormat, d.ReadFormat()) \
  X(WriteFormat, "writeformat", kDrive, kSlow, storage::DriveFormat, peer::Done,                  \
    d.WriteFormat(in))                                                                            \
  X(MakeVol, "makevol", kDrive, kSlow, peer::MakeVolArgs, bool, d.MakeVol(in.bucket, in.payload)) \
  X(StatVol, "statvol", kDrive, kQuick, peer::BucketArgs, bool, d.StatVol(in.bucket))             \
  X(ListVols, "listvols", kDrive, kQuick, peer::NoArgs, peer::Names, d.ListVols())                \
  X(ReadVolMeta, "readvolmeta", kDrive, kQuick, peer::BucketArgs, peer::OptBytes,                 \
    d.ReadVolMeta(in.bucket))                                                                     \
  X(VolHasObjects, "volhasobjects", kDrive, kQuick, peer::BucketArgs, bool,                       \
    d.VolHasObjects(in.bucket))                                                                   \
  X(DeleteVol, "deletevol", kDrive, kSlow, peer::BucketArgs, peer::Done, d.DeleteVol(in.bucket))  \
  X(ReadFile, "readfile", kDrive, kQuick, peer::PathArgs, peer::OptBytes, d.ReadFile(in.path))    \
  X(ReadFileGroup, "readfilegroup", kNode, kQuick, peer::ReadFileBatch, peer::ReadFileResults,    \
    srv.ReadFiles(h, in))                                                                         \
  X(WriteFile, "writefile", kDrive, kSlow, peer::WriteFileArgs, peer::Done,                       \
    d.WriteFile(in.path, in.payload))                                                             \
  X(Exists, "exists", kDrive, kQuick, peer::PathArgs, bool, d.Exists(in.path))                    \
  X(IsDir, "isdir", kDrive, kQuick, peer::PathArgs, bool, d.IsDir(in.path))                       \
  X(ListDir, "listdir", kDrive, kSlow, peer::ListDirArgs, peer::Names,                            \
    d.ListDir(in.path, in.dirs_only))                                                             \
  X(MakeDir, "mkdir", kDrive, kSlow, peer::PathArgs, peer::Done, d.MakeDir(in.path))              \
  X(MakeDirAll, "mkdirall", kDrive, kSlow, peer::TwoPaths, peer::Done, d.MakeDirAll(in.a, in.b))  \
  X(Rename, "rename", kDrive, kSlow, peer::TwoPaths, peer::Done, d.Rename(in.a, in.b))            \
  X(Link, "link", kDrive, kSlow, peer::TwoPaths, peer::Done, d.Link(in.a, in.b))                  \
  X(Unlink, "unlink", kDrive, kSlow, peer::PathArgs, peer::Done, d.Unlink(in.path))               \
  X(RemoveAll, "removeall", kDrive, kSlow, peer::PathArgs, peer::Done, d.RemoveAll(in.path))      \
  X(FsyncDir, "fsyncdir", kDrive, kSlow, peer::PathArgs, peer::Done, d.FsyncDir(in.path))         \
  X(Prune, "prune", kDrive, kSlow, peer::TwoPaths, peer::Done,                                    \
    (d.PruneEmptyDirs(in.a, in.b), peer::Done{}))                                                 \
  X(Commit, "commit", kDrive, kSlow, storage::fsutil::CommitPlan, peer::Done, d.Commit(in))       \
  X(RenameData, "renamedata", kDrive, kSlow, storage::RenameDataRequest,                          \
    storage::RenameDataResult, d.RenameData(in))                                                  \
  X(RenameDataGroup, "renamedatagroup", kNode, kSlow, peer::RenameDataBatch,                      \
    peer::RenameDataResults, srv.RenameData(h, in))                                               \
  X(ListObjects, "listobjects", kDrive, kSlow, peer::ListObjectsArgs, storage::ListResult,        \
    d.ListObjects(in.bucket, in.opts))                                                            \
  X(ShardWrite, "shardwrite", kDrive, kSlow, peer::ShardWriteArgs, peer::Done,                    \
    srv.ShardWrite(d, in))                                                                        \
  X(ShardWriteGroup, "shardwritegroup", kNode, kSlow, peer::ShardWriteBatch, peer::DoneResults,   \
    srv.ShardWriteGroup(h, in))                                                                   \
  X(ShardRead, "shardread", kDrive, kSlow, peer::ShardReadArgs, peer::ShardBytes,                 \
    srv.ShardRead(d, h, in))                                                                      \
  X(ShardReadGroup, "shardreadgroup", kNode, kSlow, peer::ShardReadBatch, peer::ShardReadResults, \
    srv.ShardReadGroup(h, in))

enum class PeerCall : uint8_t {
#define RDMASTOR_PEER_CALL_ENUM(id, name, addr, wait, Req, Rsp, expr) k##id,
  RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_ENUM)
#undef RDMASTOR_PEER_CALL_ENUM
};

// Per call: its types, wire name, address and wait, and Serve(d, h, srv, in), the table's
// expression (instantiated by the serving side only; d is a placeholder for a node row).
template <PeerCall C>
struct CallOf;
#define RDMASTOR_PEER_CALL_TRAITS(id, wire, addr_, wait_, Req_, Rsp_, expr)    \
  template <>                                                                  \
  struct CallOf<PeerCall::k##id> {                                             \
    using Req = Req_;                                                          \
    using Rsp = Rsp_;                                                          \
    static constexpr std::string_view name = wire;                             \
    static constexpr PeerAddr addr = PeerAddr::addr_;                          \
    static constexpr bool quick = PeerWait::wait_ == PeerWait::kQuick;         \
    static auto Serve([[maybe_unused]] auto& d, [[maybe_unused]] auto& h,      \
                      [[maybe_unused]] auto& srv, [[maybe_unused]] auto& in) { \
      return expr;                                                             \
    }                                                                          \
  };
RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_TRAITS)
#undef RDMASTOR_PEER_CALL_TRAITS

// Every call's wire name, in table order (the metric's label values, the dispatch, the tests).
inline constexpr std::array kPeerCallNames = {
#define RDMASTOR_PEER_CALL_NAME(id, wire, addr, wait, Req, Rsp, expr) std::string_view(wire),
    RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_NAME)
#undef RDMASTOR_PEER_CALL_NAME
};

// One message of a call as it travels: its JSON head and its payload ("" for types without one).
struct Frame {
  std::string head;
  std::string payload;
};

// How each type of the table is framed: specialised in wire.cc for every type of
// RDMASTOR_PEER_WIRE_TYPES (declared here, so every user sees them).
template <class T>
struct Wire {
  static Frame Encode(const T& v);
  static Result<T> Decode(Frame f);
};

// X(type, has a payload): every request and response type of the call table. A response type
// with a payload carries its head in kReplyHeader.
#define RDMASTOR_PEER_WIRE_TYPES(X)     \
  X(peer::NoArgs, false)                \
  X(peer::Done, false)                  \
  X(bool, false)                        \
  X(peer::Names, false)                 \
  X(peer::BucketArgs, false)            \
  X(peer::MakeVolArgs, true)            \
  X(peer::PathArgs, false)              \
  X(peer::WriteFileArgs, true)          \
  X(peer::ListDirArgs, false)           \
  X(peer::TwoPaths, false)              \
  X(peer::ListObjectsArgs, false)       \
  X(peer::ShardWriteArgs, true)         \
  X(peer::ShardReadArgs, false)         \
  X(peer::ShardBytes, true)             \
  X(peer::OptBytes, true)               \
  X(storage::DiskInfo, false)           \
  X(storage::DriveFormat, false)        \
  X(storage::fsutil::CommitPlan, false) \
  X(storage::ListResult, false)         \
  X(storage::RenameDataRequest, true)   \
  X(storage::RenameDataResult, true)    \
  X(peer::RenameDataBatch, true)        \
  X(peer::RenameDataResults, true)      \
  X(peer::ReadFileBatch, false)         \
  X(peer::ReadFileResults, true)        \
  X(peer::ShardWriteBatch, true)        \
  X(peer::DoneResults, false)           \
  X(peer::ShardReadBatch, false)        \
  X(peer::ShardReadResults, true)

template <class T>
inline constexpr bool kHasPayload = false;
#define RDMASTOR_PEER_WIRE_DECLARE(T, payload) \
  template <>                                  \
  Frame Wire<T>::Encode(const T& v);           \
  template <>                                  \
  Result<T> Wire<T>::Decode(Frame f);          \
  template <>                                  \
  inline constexpr bool kHasPayload<T> = payload;
RDMASTOR_PEER_WIRE_TYPES(RDMASTOR_PEER_WIRE_DECLARE)
#undef RDMASTOR_PEER_WIRE_DECLARE

// A request body: head "\n" payload.
template <class T>
std::string EncodeRequest(const T& v) {
  Frame f = Wire<T>::Encode(v);
  f.head += '\n';
  f.head += f.payload;
  return std::move(f.head);
}
template <class T>
Result<T> DecodeRequest(std::string body) {
  const size_t nl = body.find('\n');
  Frame f;
  if (nl == std::string::npos) {
    f.head = std::move(body);
  } else {
    f.head = body.substr(0, nl);
    body.erase(0, nl + 1);
    f.payload = std::move(body);
  }
  return Wire<T>::Decode(std::move(f));
}

std::string EncodeListOptions(const storage::ListOptions& o);
Result<storage::ListOptions> DecodeListOptions(const std::string& text);
std::string EncodeListResult(const storage::ListResult& r);
Result<storage::ListResult> DecodeListResult(const std::string& text);
std::string EncodeLockArgs(const LockArgs& a);
Result<LockArgs> DecodeLockArgs(const std::string& text);

// The ErrorCode whose S3 code text is `name` (kInternalError when unknown).
ErrorCode ErrorCodeFromName(const std::string& name);

}  // namespace rdmastor::cluster
