#include "rdma/transfer.h"

#include <algorithm>
#include <string>

#include "common/enum_names.h"

namespace rdmastor::rdma {

Transfer::Transfer(Endpoint& endpoint, Opcode opcode, RemoteBuffer remote, TransferOptions options)
    : ep_(endpoint), opcode_(opcode), remote_(remote), opt_(options) {
  opt_.max_outstanding = std::max(1, opt_.max_outstanding);
  opt_.signal_interval = std::clamp(opt_.signal_interval, 1, opt_.max_outstanding);
  opt_.max_wr_bytes = std::max<uint32_t>(1, opt_.max_wr_bytes);
}

Error Transfer::Fail(Error e) {
  if (!error_) error_ = std::move(e);
  return *error_;
}

Result<uint64_t> Transfer::Post(const MemoryRegion& mr, char* local, size_t len,
                                uint64_t remote_offset) {
  if (error_) return *error_;
  if (len == 0) return next_wr_id_ - 1;
  if (!mr.Contains(local, len))
    return Fail(MakeError(ErrorCode::kInternalError, "local range outside its memory region"));
  if (remote_offset > remote_.length || len > remote_.length - remote_offset)
    return Fail(MakeError(ErrorCode::kInternalError, "remote range outside the token's buffer"));
  size_t done = 0;
  while (done < len) {
    // Window full: wait for a signaled completion to free slots.
    while (next_wr_id_ - 1 - completed_through_ >= static_cast<uint64_t>(opt_.max_outstanding))
      RS_RETURN_IF_ERROR(Progress());
    uint32_t piece = static_cast<uint32_t>(std::min<size_t>(opt_.max_wr_bytes, len - done));
    WorkRequest wr;
    wr.wr_id = next_wr_id_;
    wr.opcode = opcode_;
    wr.local_addr = local + done;
    wr.length = piece;
    wr.lkey = mr.lkey();
    wr.remote_addr = remote_.addr + remote_offset + done;
    wr.rkey = remote_.rkey;
    uint64_t outstanding_after = next_wr_id_ - completed_through_;
    // Signal the last request of the range, every signal_interval-th one, and the one that fills
    // the window (otherwise nothing would ever tell us that slots became free).
    wr.signaled = done + piece == len ||
                  wr.wr_id - last_signaled_ >= static_cast<uint64_t>(opt_.signal_interval) ||
                  outstanding_after >= static_cast<uint64_t>(opt_.max_outstanding);
    if (auto st = ep_.PostSend(wr); !st.ok()) {
      // No initiator free within its wait (verbs: the DCI pool): busy, not broken; 503.
      if (st.error().code == ErrorCode::kSlowDown) return Fail(st.error());
      return Fail(CompletionError(WcStatus::kGeneralError, bytes_completed_ > 0,
                                  "post failed: " + st.error().message));
    }
    bytes_posted_ += piece;
    if (wr.signaled) {
      last_signaled_ = wr.wr_id;
      signaled_marks_.emplace_back(wr.wr_id, bytes_posted_);
      ++signaled_;
    }
    ++next_wr_id_;
    done += piece;
  }
  return next_wr_id_ - 1;
}

Status Transfer::WaitFor(uint64_t ticket) {
  while (!error_ && completed_through_ < ticket) RS_RETURN_IF_ERROR(Progress());
  if (error_) return *error_;
  return {};
}

Status Transfer::Progress() {
  if (error_) return *error_;
  auto limit = opt_.timeout;
  if (opt_.min_rate > 0)
    limit += std::chrono::milliseconds(uint64_t{opt_.max_wr_bytes} * 1000 / opt_.min_rate);
  auto deadline = std::chrono::steady_clock::now() + limit;
  Completion wc[16];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return Fail(
          CompletionError(WcStatus::kRetryExceeded, bytes_completed_ > 0,
                          "no completion within " + std::to_string(limit.count()) + " ms"));
    auto n = ep_.PollCompletions(wc, 16, std::min(left, std::chrono::milliseconds(100)));
    if (!n.ok()) return Fail(n.error());
    for (int i = 0; i < *n; ++i) {
      if (wc[i].status != WcStatus::kSuccess) {
        // Completions arrive in order, so requests before a failed one did land.
        bool moved = bytes_completed_ > 0 || wc[i].wr_id > completed_through_ + 1;
        std::string detail = "work request " + std::to_string(wc[i].wr_id) + " of " +
                             std::to_string(next_wr_id_ - 1);
        if (auto why = ep_.error_detail(); !why.empty()) detail += ": " + why;
        return Fail(CompletionError(wc[i].status, moved, detail));
      }
      // Requests on one endpoint complete in order: a signaled completion covers all before it.
      completed_through_ = std::max(completed_through_, wc[i].wr_id);
      while (!signaled_marks_.empty() && signaled_marks_.front().first <= completed_through_) {
        bytes_completed_ = signaled_marks_.front().second;
        signaled_marks_.pop_front();
      }
    }
    if (*n > 0) return {};
  }
}

std::string_view WcStatusName(WcStatus s) {
  static constexpr EnumNames<WcStatus> kNames[] = {
      {"success", WcStatus::kSuccess},
      {"local length error", WcStatus::kLocalLengthError},
      {"local QP operation error", WcStatus::kLocalQpOpError},
      {"local protection error", WcStatus::kLocalProtectionError},
      {"work request flushed", WcStatus::kFlushed},
      {"remote invalid request", WcStatus::kRemoteInvalidRequest},
      {"remote access error", WcStatus::kRemoteAccessError},
      {"remote operation error", WcStatus::kRemoteOperationError},
      {"transport retry counter exceeded", WcStatus::kRetryExceeded},
      {"RNR retry counter exceeded", WcStatus::kRnrRetryExceeded},
      {"general error", WcStatus::kGeneralError}};
  return NameOf(kNames, s, "unknown");
}

Result<std::unique_ptr<MemoryRegion>> Target::RegisterDmabuf(int, uint64_t, size_t, uint64_t,
                                                             unsigned) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "this fabric cannot register dma-buf (GPU) memory: use the verbs fabric");
}

Result<std::unique_ptr<MemoryRegion>> Target::RegisterMemoryIn(uint32_t domain, void* addr,
                                                               size_t length, unsigned access) {
  if (domain == 0) return RegisterMemory(addr, length, access);
  return MakeError(ErrorCode::kRDMANotSupported, "this target has no protection domains per peer");
}

Result<std::unique_ptr<RcListener>> Fabric::ListenRc(const std::string&, uint16_t, RcAdmission) {
  return MakeError(ErrorCode::kRDMANotSupported,
                   "the " + std::string(name()) + " fabric has no RC listener yet");
}

Result<Target::RcConnectionInfo> Target::RcConnection(uint32_t, uint16_t, bool) {
  return MakeError(ErrorCode::kRDMANotSupported, "this target cannot open RC connections");
}

Error CompletionError(WcStatus status, bool bytes_moved, std::string_view detail) {
  std::string msg = "RDMA " + std::string(WcStatusName(status));
  if (!detail.empty()) msg += " (" + std::string(detail) + ")";
  // The token named memory the server may not access (wrong rkey, outside the registration,
  // missing remote permission): the client's error whatever moved already.
  if (status == WcStatus::kRemoteAccessError)
    return MakeError(ErrorCode::kInvalidRDMAToken,
                     msg + ": the token's rkey/raddr/rsize does not grant this access");
  // The target refused the packets themselves (NAK invalid request). With a valid token that is
  // a packet larger than the path MTU of the client's port: a configuration mismatch, not the
  // token's fault. Nothing was written or read when the first request failed, so the client may
  // redo it without a token (501); later, the transfer failed (500, which SDKs retry).
  if (status == WcStatus::kRemoteInvalidRequest) {
    constexpr std::string_view kWhy =
        ": the client's RDMA port refused the server's packets, most likely because its path MTU "
        "is smaller than the server's (cap the server's with MINIO_RDMA_MTU_MAX, or raise the "
        "client's: on RoCE the netdev MTU)";
    if (!bytes_moved)
      return MakeError(ErrorCode::kRDMAPathMTUMismatch,
                       msg + " before any byte moved" + std::string(kWhy));
    return MakeError(ErrorCode::kRDMATransferFailed, msg + " midway" + std::string(kWhy));
  }
  // No acknowledgement at all: besides an unreachable GID, DC targets silently drop packets
  // whose DC access key or partition differs from the server's.
  if (status == WcStatus::kRetryExceeded && !bytes_moved)
    return MakeError(ErrorCode::kRDMANotSupported,
                     msg +
                         " before any byte moved: the token's target never answered (its DC "
                         "access key, MINIO_RDMA_DC_KEY, or partition, MINIO_RDMA_PKEY_INDEX, "
                         "differs from the server's, or its GID is unreachable from the "
                         "server's port)");
  if (!bytes_moved) return MakeError(ErrorCode::kRDMANotSupported, msg + " before any byte moved");
  return MakeError(ErrorCode::kRDMATransferFailed, msg + " midway");
}

}  // namespace rdmastor::rdma
