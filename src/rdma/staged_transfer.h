// A transfer through a registered staging buffer: the S3 GET path (object bytes -> client), the
// S3 PUT path (client -> object layer) and the inter-node shard pieces all move bytes this way.
// The buffer is cut into slots; each slot carries one range of the remote buffer at a time, in
// order, and is refilled only once the work requests that last used it have completed (its local
// memory is the NIC's until then). One loop for every caller, so the reuse rule lives here only.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "rdma/memory.h"
#include "rdma/transfer.h"

namespace rdmastor::rdma {

// Registered memory lent to one transfer: [data, data + size) inside mr, cut into slots of
// slot_bytes (clamped to [1, size]; at least one slot).
struct Staging {
  const MemoryRegion* mr = nullptr;
  char* data = nullptr;
  size_t size = 0;
  size_t slot_bytes = 0;

  static Staging Of(const BufferPool::Buffer& b, size_t slot_bytes) {
    return {&b.mr(), b.data(), b.size(), slot_bytes};
  }
};

class StagedTransfer {
 public:
  // Moves [0, length) of `remote` (offsets relative to its start). kWrite: use Push; kRead: Pull.
  StagedTransfer(Endpoint& endpoint, Opcode opcode, RemoteBuffer remote, TransferOptions options,
                 Staging staging, uint64_t length);

  // RDMA WRITE: fill(offset, stage, n) puts the source's bytes [offset, offset + n) at `stage` and
  // returns how many it put; fewer than n means the source ended, and the transfer ends there.
  // Returns the bytes moved once all of them completed. A fill error is returned as it is.
  using FillFn = std::function<Result<size_t>(uint64_t offset, char* stage, size_t n)>;
  Result<uint64_t> Push(const FillFn& fill);

  // RDMA READ: posts a read into every slot at once (a read-ahead as deep as the staging buffer).
  // Pull calls it when nobody did; call it early to see a refused transfer before consuming.
  Status ReadAhead();
  // RDMA READ: copies the next bytes, in order, into out (at most len; never past one slot) once
  // they have arrived, and re-posts each slot as it empties. 0 once all `length` bytes were pulled
  // (the last call waits for the whole transfer to complete).
  Result<size_t> Pull(char* out, size_t len);

  uint64_t length() const { return length_; }
  const Transfer& transfer() const { return transfer_; }

 private:
  struct Slot {
    uint64_t ticket = 0;  // Transfer ticket of the range it carries (0: none yet)
    uint64_t start = 0;   // that range's offset and length
    size_t len = 0;
  };
  char* Stage(size_t slot) const { return staging_.data + slot * staging_.slot_bytes; }
  size_t NextRange() const;
  Status PostSlot(size_t slot, size_t len);

  Transfer transfer_;
  Staging staging_;
  uint64_t length_;
  std::vector<Slot> slots_;
  uint64_t posted_ = 0;    // bytes posted so far: [0, posted_)
  uint64_t consumed_ = 0;  // Pull: bytes copied out so far
  size_t next_ = 0;        // Pull: the slot holding byte consumed_
  bool read_ahead_ = false;
};

}  // namespace rdmastor::rdma
