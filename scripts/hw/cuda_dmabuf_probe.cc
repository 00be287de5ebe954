// Hardware probe (not part of the build): can this GPU export device memory as a dma-buf, the
// first half of registering CUDA memory with ibv_reg_dmabuf_mr? Prints the driver's answer, the
// exported fd's size, and whether the CPU can mmap it (the soft target maps dma-bufs; NVIDIA's
// normally refuse, which is why GPU memory needs the verbs target).
// Build and run where CUDA exists:  nvcc -o probe scripts/hw/cuda_dmabuf_probe.cc -lcuda && ./probe
#include <cuda.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

static int Fail(const char* what, CUresult r) {
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::printf("%s failed: %s\n", what, name ? name : "?");
  return 1;
}

int main() {
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) return Fail("cuInit", r);
  CUdevice dev;
  if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) return Fail("cuDeviceGet", r);
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, dev);
  int dmabuf_supported = 0;
  cuDeviceGetAttribute(&dmabuf_supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
  int driver = 0;
  cuDriverGetVersion(&driver);
  std::printf("device: %s, CUDA driver API %d, DMA_BUF_SUPPORTED=%d\n", name, driver,
              dmabuf_supported);
  CUcontext ctx;
  if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) return Fail("ctx", r);
  cuCtxSetCurrent(ctx);
  const size_t size = 64u << 20;
  CUdeviceptr ptr;
  if ((r = cuMemAlloc(&ptr, size)) != CUDA_SUCCESS) return Fail("cuMemAlloc", r);
  int fd = -1;
  r = cuMemGetHandleForAddressRange(&fd, ptr, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) return Fail("cuMemGetHandleForAddressRange(DMA_BUF_FD)", r);
  off_t end = lseek(fd, 0, SEEK_END);
  std::printf("exported 64 MiB of device memory as dma-buf fd %d (size %lld)\n", fd,
              static_cast<long long>(end));
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    std::printf("CPU mmap of the dma-buf: refused (%s)\n", std::strerror(errno));
  else
    std::printf("CPU mmap of the dma-buf: allowed\n");
  close(fd);
  cuMemFree(ptr);
  return 0;
}
