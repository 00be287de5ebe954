// The transfer engine: moves bytes between local registered memory and one remote buffer over an
// Endpoint. It splits each posted range into work requests of at most max_wr_bytes, keeps at most
// max_outstanding in flight, signals only every signal_interval-th request (and the last of each
// Post, so callers can wait for a range), and turns every failure — a post error, an error
// completion, no progress for `timeout` — into one sticky error. The same code runs on verbs and
// soft.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

#include "rdma/fabric.h"

namespace rdmastor::rdma {

struct TransferOptions {
  uint32_t max_wr_bytes = 1u << 20;
  int max_outstanding = 16;
  int signal_interval = 8;
  // A transfer fails when no completion arrives for this long (a vanished or frozen peer) plus
  // the time one work request takes at min_rate (bytes/s; 0: not added): a peer moving bytes at
  // min_rate is never cut off here. The byte-level progress check is the endpoint's (soft fabric).
  std::chrono::milliseconds timeout{10000};
  uint64_t min_rate = 0;
};

class Transfer {
 public:
  Transfer(Endpoint& endpoint, Opcode opcode, RemoteBuffer remote, TransferOptions options = {});

  // Queues [local, local+len) (inside mr) <-> remote [remote_offset, remote_offset+len). Blocks
  // while the window is full. Returns a ticket for WaitFor.
  Result<uint64_t> Post(const MemoryRegion& mr, char* local, size_t len, uint64_t remote_offset);
  // Blocks until every request up to `ticket` has completed (so its local memory may be reused).
  Status WaitFor(uint64_t ticket);
  // Blocks until everything posted has completed.
  Status Finish() { return WaitFor(next_wr_id_ - 1); }

  uint64_t bytes_completed() const { return bytes_completed_; }
  uint64_t work_requests() const { return next_wr_id_ - 1; }
  uint64_t signaled_requests() const { return signaled_; }

 private:
  Status Progress();    // waits for and handles completions
  Error Fail(Error e);  // records the first error; returns it

  Endpoint& ep_;
  Opcode opcode_;
  RemoteBuffer remote_;
  TransferOptions opt_;
  uint64_t next_wr_id_ = 1;  // wr_id of the next request; ids are sequence numbers
  uint64_t completed_through_ = 0;
  uint64_t last_signaled_ = 0;
  uint64_t bytes_posted_ = 0, bytes_completed_ = 0, signaled_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> signaled_marks_;  // (wr_id, bytes posted through it)
  std::optional<Error> error_;
};

}  // namespace rdmastor::rdma
