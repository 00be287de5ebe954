// The drives of one node as the erasure layer reaches them: one DriveHost per node, whose batch
// calls carry the work of all of that node's drives a request touches (each entry names its drive,
// an index into drives()). A node is where transport, batching and durability happen: a remote
// node is one peer call per batch (cluster::RemoteHost), a local one commits the drives that share
// a file system with one pair of barriers (LocalHost). Per-drive work that is no request's hot
// path (format, volumes, listing, heal walks, rollbacks) goes through drives().
//
// Every call is blocking and thread-safe. Batch calls answer one result per entry, in order; a
// node that cannot be reached answers its error for every entry (callers count those drives as
// missing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "storage/drive.h"

namespace rdmastor::storage {

// ReadFile of `path` on drive `drive`.
struct FileRead {
  size_t drive = 0;
  std::string path;
};

// RenameData of `req` on drive `drive`.
struct RenameDataEntry {
  size_t drive = 0;
  RenameDataRequest req;
};

// `data` written at `offset` of the shard file `path` on drive `drive`. `create`: the file's first
// piece, which creates it exclusively with its missing directories in the staging area. `sync`:
// fsync the file after (a shard that no RenameData commits: multipart parts). `shard_size`: what
// the whole file will hold (0 = unknown), which picks a remote piece's transport (inter-node RDMA
// for shards of MINIO_RDMA_MIN_SIZE or more).
struct ShardPiece {
  size_t drive = 0;
  std::string path;
  uint64_t offset = 0;
  std::string_view data;
  bool create = false;
  bool sync = false;
  uint64_t shard_size = 0;
};

// `len` bytes at `offset` of the shard file `path` on drive `drive`, read into `buf` (which the
// caller owns; a short file leaves the rest of it zeroed). `shard_size`: the whole file's size (0 =
// unknown), which picks a remote read's transport as ShardPiece's does. `handle`: the file the
// host kept open for an earlier piece of this read (0: none, open `path`); `keep`: keep the file
// open after this piece (the result names its handle), so later pieces read the same version even
// after an overwrite retired its path; a piece without keep that names a handle releases it.
struct ShardPieceRead {
  size_t drive = 0;
  std::string path;
  uint64_t offset = 0;
  uint64_t len = 0;
  char* buf = nullptr;
  uint64_t shard_size = 0;
  uint64_t handle = 0;
  bool keep = false;
};

// What a ShardPieceRead got: the bytes read (fewer than len at the file's end) and the handle of
// the file kept open for the next piece (0: none).
struct ShardPieceGot {
  uint64_t bytes = 0;
  uint64_t handle = 0;
};

class DriveHost {
 public:
  virtual ~DriveHost() = default;

  // For messages: "local" or the peer's address.
  virtual const std::string& name() const = 0;
  virtual bool is_local() const = 0;
  // The node's drives, in the order the entries' indexes name them; owned by the host.
  virtual const std::vector<Drive*>& drives() const = 0;
  // The most a shard piece should hold (a writer buffers up to this per drive before a
  // WriteShardPieces): the inter-node piece size for a remote node.
  virtual size_t piece_bytes() const = 0;

  virtual std::vector<Result<std::optional<std::string>>> ReadFiles(
      const std::vector<FileRead>& reads) = 0;
  // The commits of several drives in one call: the drives of one file system run each step of
  // RenameData (drive.h) for all of them before the next, with one pair of barriers in all.
  virtual std::vector<Result<RenameDataResult>> RenameData(
      std::vector<RenameDataEntry> entries) = 0;
  virtual std::vector<Status> WriteShardPieces(const std::vector<ShardPiece>& pieces) = 0;
  // Pieces of shard files of several drives: a GET's stripe reads of the node's drives, one call
  // (a remote node: one peer call, one RDMA transfer, for all of them). Bitrot is the caller's to
  // verify: the bytes are the file's, hashes included.
  virtual std::vector<Result<ShardPieceGot>> ReadShardPieces(
      const std::vector<ShardPieceRead>& reads) = 0;
};

// A drive of a set: its host and its index in the host's drives().
struct DriveSlot {
  std::shared_ptr<DriveHost> host;
  size_t index = 0;
  Drive* drive() const { return host->drives()[index]; }
};

}  // namespace rdmastor::storage
