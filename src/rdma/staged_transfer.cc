#include "rdma/staged_transfer.h"

#include <algorithm>
#include <cstring>

namespace rdmastor::rdma {

StagedTransfer::StagedTransfer(Endpoint& endpoint, Opcode opcode, RemoteBuffer remote,
                               TransferOptions options, Staging staging, uint64_t length)
    : transfer_(endpoint, opcode, remote, options), staging_(staging), length_(length) {
  staging_.slot_bytes =
      std::clamp<size_t>(staging_.slot_bytes, 1, std::max<size_t>(1, staging_.size));
  slots_.resize(std::max<size_t>(1, staging_.size / staging_.slot_bytes));
}

size_t StagedTransfer::NextRange() const {
  return static_cast<size_t>(std::min<uint64_t>(staging_.slot_bytes, length_ - posted_));
}

Status StagedTransfer::PostSlot(size_t slot, size_t len) {
  auto ticket = transfer_.Post(*staging_.mr, Stage(slot), len, posted_);
  if (!ticket.ok()) return ticket.error();
  slots_[slot] = {*ticket, posted_, len};
  posted_ += len;
  return {};
}

Result<uint64_t> StagedTransfer::Push(const FillFn& fill) {
  for (size_t i = 0; posted_ < length_; ++i) {
    const size_t slot = i % slots_.size();
    // The slot's previous range must be on the wire before the slot is refilled.
    RS_RETURN_IF_ERROR(transfer_.WaitFor(slots_[slot].ticket));
    size_t n = NextRange();
    auto filled = fill(posted_, Stage(slot), n);
    if (!filled.ok()) return filled.error();
    if (*filled < n) length_ = posted_ + (n = *filled);  // the source ended: so does the transfer
    RS_RETURN_IF_ERROR(PostSlot(slot, n));
  }
  RS_RETURN_IF_ERROR(transfer_.Finish());
  return length_;
}

Status StagedTransfer::ReadAhead() {
  if (read_ahead_) return {};
  read_ahead_ = true;
  for (size_t slot = 0; slot < slots_.size() && posted_ < length_; ++slot)
    RS_RETURN_IF_ERROR(PostSlot(slot, NextRange()));
  return {};
}

Result<size_t> StagedTransfer::Pull(char* out, size_t len) {
  if (consumed_ >= length_ || len == 0) return size_t{0};
  RS_RETURN_IF_ERROR(ReadAhead());
  const Slot& s = slots_[next_];
  RS_RETURN_IF_ERROR(transfer_.WaitFor(s.ticket));
  const uint64_t in_slot = consumed_ - s.start;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(len, s.len - in_slot));
  std::memcpy(out, Stage(next_) + in_slot, n);
  consumed_ += n;
  if (in_slot + n == s.len) {  // emptied: it carries the next range not yet posted, if any
    const size_t emptied = next_;
    next_ = (next_ + 1) % slots_.size();
    if (posted_ < length_) RS_RETURN_IF_ERROR(PostSlot(emptied, NextRange()));
  }
  if (consumed_ == length_) RS_RETURN_IF_ERROR(transfer_.Finish());
  return n;
}

}  // namespace rdmastor::rdma
