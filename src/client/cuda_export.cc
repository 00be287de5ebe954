#include "client/cuda_export.h"

namespace rdmastor::client::cuda {

std::string DriverTable::Missing() const {
  const std::pair<const void*, const char*> required[] = {
      {reinterpret_cast<const void*>(pointer_get_attribute), "cuPointerGetAttribute"},
      {reinterpret_cast<const void*>(device_get), "cuDeviceGet"},
      {reinterpret_cast<const void*>(primary_ctx_retain), "cuDevicePrimaryCtxRetain"},
      {reinterpret_cast<const void*>(primary_ctx_release), "cuDevicePrimaryCtxRelease_v2"},
      {reinterpret_cast<const void*>(ctx_get_current), "cuCtxGetCurrent"},
      {reinterpret_cast<const void*>(ctx_set_current), "cuCtxSetCurrent"},
      {reinterpret_cast<const void*>(get_address_range), "cuMemGetAddressRange_v2"},
      {reinterpret_cast<const void*>(get_handle_for_address_range), "cuMemGetHandleForAddressRange"},
      {reinterpret_cast<const void*>(device_get_attribute), "cuDeviceGetAttribute"},
      {reinterpret_cast<const void*>(stream_synchronize), "cuStreamSynchronize"},
      {reinterpret_cast<const void*>(get_error_name), "cuGetErrorName"},
  };
  for (const auto& [fn, name] : required)
    if (fn == nullptr)
      return std::string("the NVIDIA driver lacks ") + name +
             " (dma-buf export needs CUDA 11.7+ and a matching driver)";
  return {};
}

std::pair<DevicePtr, size_t> PageSpan(DevicePtr ptr, size_t len, size_t page) {
  const DevicePtr start = ptr / page * page;
  const DevicePtr end = (ptr + len + page - 1) / page * page;
  return {start, static_cast<size_t>(end - start)};
}

Status Driver::Check(CuResult r, std::string_view what) const {
  if (r == kCudaSuccess) return {};
  const char* name = nullptr;
  if (t_.get_error_name == nullptr || t_.get_error_name(r, &name) != kCudaSuccess) name = nullptr;
  return MakeError(ErrorCode::kInvalidArgument,
                   std::string(what) + " (" + (name ? name : "CUDA error " + std::to_string(r)) + ")");
}

ContextScope::~ContextScope() {
  t_.ctx_set_current(previous_);
  t_.primary_ctx_release(dev_);
}

Result<std::unique_ptr<ContextScope>> Driver::Enter(DevicePtr ptr) const {
  // The ordinal comes from the pointer alone (unified addressing): no context needed yet.
  int ordinal = -1;
  if (auto st = Check(t_.pointer_get_attribute(&ordinal, kPointerAttributeDeviceOrdinal, ptr),
                      "the pointer is not CUDA device memory");
      !st.ok())
    return st.error();
  Device dev = 0;
  if (auto st = Check(t_.device_get(&dev, ordinal), "no CUDA device for the pointer"); !st.ok())
    return st.error();
  Context previous = nullptr;
  if (auto st = Check(t_.ctx_get_current(&previous), "cannot read the thread's CUDA context");
      !st.ok())
    return st.error();
  Context primary = nullptr;
  if (auto st = Check(t_.primary_ctx_retain(&primary, dev),
                      "cannot retain the device's primary CUDA context");
      !st.ok())
    return st.error();
  if (auto st = Check(t_.ctx_set_current(primary), "cannot make the device's CUDA context current");
      !st.ok()) {
    t_.primary_ctx_release(dev);
    return st.error();
  }
  return std::unique_ptr<ContextScope>(new ContextScope(t_, ordinal, dev, previous));
}

Result<DmaBuf> Driver::ExportRange(DevicePtr start, size_t len) const {
  int fd = -1;
  if (auto st = Check(t_.get_handle_for_address_range(&fd, start, len, kRangeHandleDmaBufFd, 0),
                      "cannot export the device memory as a dma-buf (needs CUDA 11.7+, a driver "
                      "with dma-buf support and Linux 5.12+)");
      !st.ok())
    return st.error();
  return DmaBuf(fd, start, len);
}

Result<DmaBuf> Driver::ExportSpan(DevicePtr ptr, size_t len) const {
  auto [start, span] = PageSpan(ptr, len, page_);
  return ExportRange(start, span);
}

Result<std::pair<DevicePtr, size_t>> Driver::AllocationOf(DevicePtr ptr, size_t len) const {
  DevicePtr base = 0;
  size_t size = 0;
  if (auto st = Check(t_.get_address_range(&base, &size, ptr), "the pointer is not CUDA device memory");
      !st.ok())
    return st.error();
  if (ptr + len <= base + size) {
    auto [start, span] = PageSpan(base, size, page_);  // cuMemAlloc's ranges are aligned already
    return std::pair{start, span};
  }
  auto [start, span] = PageSpan(ptr, len, page_);
  return std::pair{start, span};
}

Result<uint64_t> Driver::BufferId(DevicePtr ptr) const {
  unsigned long long id = 0;
  if (auto st = Check(t_.pointer_get_attribute(&id, kPointerAttributeBufferId, ptr),
                      "the pointer is not CUDA device memory");
      !st.ok())
    return st.error();
  return static_cast<uint64_t>(id);
}

Status Driver::FlushRdmaWrites(const ContextScope& scope) const {
  bool needs = false;
  {
    std::lock_guard lock(mu_);
    auto it = needs_flush_.find(scope.ordinal());
    if (it == needs_flush_.end()) {
      // Once per device. A device that orders remote writes for its owner needs no flush; one
      // that does not, but cannot flush from the host either, has nothing better to offer.
      int ordering = 0, options = 0;
      if (t_.device_get_attribute(&ordering, kDeviceAttributeWritesOrdering, scope.dev_) !=
          kCudaSuccess)
        ordering = 0;
      if (t_.device_get_attribute(&options, kDeviceAttributeFlushWritesOptions, scope.dev_) !=
          kCudaSuccess)
        options = 0;
      it = needs_flush_
               .emplace(scope.ordinal(), ordering < kWritesOrderingOwner &&
                                             (options & kFlushWritesOptionHost) != 0 &&
                                             t_.flush_gpudirect_rdma_writes != nullptr)
               .first;
    }
    needs = it->second;
  }
  if (!needs) return {};
  return Check(t_.flush_gpudirect_rdma_writes(kFlushTargetCurrentCtx, kFlushToOwner),
               "cannot flush the NIC's writes into GPU memory");
}

Status Driver::SynchronizeStream(const ContextScope&, Stream stream) const {
  return Check(t_.stream_synchronize(stream), "cannot synchronize the buffer's CUDA stream");
}

}  // namespace rdmastor::client::cuda
