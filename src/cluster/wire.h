// The peer protocol, declared once: the table of storage calls (RDMASTOR_PEER_STORAGE_CALLS), their
// request and response types and how those travel, plus the JSON forms of the lock calls and
// errors as HTTP (an Error travels as its HTTP status, an `x-rdmastor-error` header with the S3
// code text and the message as body, and is decoded back into the same ErrorCode).
//
// A storage call is POST /minio/storage/v1/<wire name>?disk=PATH. Its request body is the request's
// JSON head, a newline, and the request's payload (the bytes JSON would mangle or copy: a shard
// piece, a file's contents, an object's metadata); JSON never contains a raw newline, so the first
// one ends the head. A response without a payload is its JSON head as the body; one with a payload
// carries the head in the `x-rdmastor-reply` header and the payload as the body (so a shard read
// lands in the caller's buffer). The whole body is covered by the peer signature (peer_auth.h).
//
// From the table come: the PeerCall enum and CallOf<> traits (here), RemoteDrive's calls
// (RemoteDrive::Invoke: encode, PeerClient::Call, decode), PeerServer's dispatch (decode, the
// table's expression on the LocalDrive, encode) and the round-trip test of every call. Adding a
// call is one line in the table (and the Drive method it runs).
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
// The commits of several drives of the serving node in one call (renamedatagroup): what a PUT
// ends with on every drive of a peer node. Each entry names its drive (a drive of the serving
// node, at most once) and carries what a renamedata call to it would; the answer holds one result
// per entry, in order. The serving node checks every entry before it runs any, and commits the
// drives that share a file system with one pair of barriers (LocalDrive::RenameDataGroup).
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
// Files of several drives of the serving node read in one call (readfilegroup): the metadata of
// a key on every drive of a peer node that a GET resolves. One result per entry, in order; an
// entry whose drive is not one of the serving node's refuses the whole call.
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
using Names = std::vector<std::string>;
using OptBytes = std::optional<std::string>;

}  // namespace peer

// X(Id, "wire name", Request, Response, what the serving node does)
// The last column is an expression over `d` (the served storage::LocalDrive&), `in` (the decoded
// request) and `srv` (the PeerServer, for the calls that move shard bytes or name several drives);
// it yields the Response, a Result of it, or a Status (Response Done).
#define RDMASTOR_PEER_STORAGE_CALLS(X)                                                         \
  X(Online, "online", peer::NoArgs, bool, d.IsOnline())                                        \
  X(DiskInfo, "diskinfo", peer::NoArgs, storage::DiskInfo, d.GetDiskInfo())                    \
  X(EnsureRoot, "ensureroot", peer::NoArgs, bool, d.EnsureRoot())                              \
  X(IsEmpty, "isempty", peer::NoArgs, bool, d.IsEmpty())                                       \
  X(ReadFormat, "readformat", peer::NoArgs, storage::DriveFormat, d.ReadFormat())              \
  X(WriteFormat, "writeformat", storage::DriveFormat, peer::Done, d.WriteFormat(in))           \
  X(MakeVol, "makevol", peer::MakeVolArgs, bool, d.MakeVol(in.bucket, in.payload))             \
  X(StatVol, "statvol", peer::BucketArgs, bool, d.StatVol(in.bucket))                          \
  X(ListVols, "listvols", peer::NoArgs, peer::Names, d.ListVols())                             \
  X(ReadVolMeta, "readvolmeta", peer::BucketArgs, peer::OptBytes, d.ReadVolMeta(in.bucket))    \
  X(VolHasObjects, "volhasobjects", peer::BucketArgs, bool, d.VolHasObjects(in.bucket))        \
  X(DeleteVol, "deletevol", peer::BucketArgs, peer::Done, d.DeleteVol(in.bucket))              \
  X(ReadFile, "readfile", peer::PathArgs, peer::OptBytes, d.ReadFile(in.path))                 \
  X(ReadFileGroup, "readfilegroup", peer::ReadFileBatch, peer::ReadFileResults,                \
    srv.ReadFileGroup(in))                                                                     \
  X(WriteFile, "writefile", peer::WriteFileArgs, peer::Done, d.WriteFile(in.path, in.payload)) \
  X(Exists, "exists", peer::PathArgs, bool, d.Exists(in.path))                                 \
  X(IsDir, "isdir", peer::PathArgs, bool, d.IsDir(in.path))                                    \
  X(ListDir, "listdir", peer::ListDirArgs, peer::Names, d.ListDir(in.path, in.dirs_only))      \
  X(MakeDir, "mkdir", peer::PathArgs, peer::Done, d.MakeDir(in.path))                          \
  X(MakeDirAll, "mkdirall", peer::TwoPaths, peer::Done, d.MakeDirAll(in.a, in.b))              \
  X(Rename, "rename", peer::TwoPaths, peer::Done, d.Rename(in.a, in.b))                        \
  X(Link, "link", peer::TwoPaths, peer::Done, d.Link(in.a, in.b))                              \
  X(Unlink, "unlink", peer::PathArgs, peer::Done, d.Unlink(in.path))                           \
  X(RemoveAll, "removeall", peer::PathArgs, peer::Done, d.RemoveAll(in.path))                  \
  X(FsyncDir, "fsyncdir", peer::PathArgs, peer::Done, d.FsyncDir(in.path))                     \
  X(Prune, "prune", peer::TwoPaths, peer::Done, (d.PruneEmptyDirs(in.a, in.b), peer::Done{}))  \
  X(Commit, "commit", storage::fsutil::CommitPlan, peer::Done, d.Commit(in))                   \
  X(RenameData, "renamedata", storage::RenameDataRequest, storage::RenameDataResult,           \
    d.RenameData(in))                                                                          \
  X(RenameDataGroup, "renamedatagroup", peer::RenameDataBatch, peer::RenameDataResults,        \
    srv.RenameDataGroup(in))                                                                   \
  X(ListObjects, "listobjects", peer::ListObjectsArgs, storage::ListResult,                    \
    d.ListObjects(in.bucket, in.opts))                                                         \
  X(ShardWrite, "shardwrite", peer::ShardWriteArgs, peer::Done, srv.ShardWrite(d, in))         \
  X(ShardRead, "shardread", peer::ShardReadArgs, peer::ShardBytes, srv.ShardRead(d, in))

enum class PeerCall : uint8_t {
#define RDMASTOR_PEER_CALL_ENUM(id, name, Req, Rsp, expr) k##id,
  RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_ENUM)
#undef RDMASTOR_PEER_CALL_ENUM
};

template <PeerCall C>
struct CallOf;
#define RDMASTOR_PEER_CALL_TRAITS(id, wire, Req_, Rsp_, expr) \
  template <>                                                 \
  struct CallOf<PeerCall::k##id> {                            \
    using Req = Req_;                                         \
    using Rsp = Rsp_;                                         \
    static constexpr std::string_view name = wire;            \
  };
RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_TRAITS)
#undef RDMASTOR_PEER_CALL_TRAITS

// Every call's wire name, in table order (the metric's label values, the dispatch, the tests).
inline constexpr std::array kPeerCallNames = {
#define RDMASTOR_PEER_CALL_NAME(id, wire, Req, Rsp, expr) std::string_view(wire),
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
  X(peer::ReadFileResults, true)

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
