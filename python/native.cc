// rdmastor._native: the Python binding of the client library (include/rdmastor/). One Native
// object wraps one RdmaS3Client (or a plain S3Client for rdma="off") and is used by one thread at
// a time; rdmastor.Client (Python) keeps one per thread and re-creates them after fork().
//
// Every transfer runs with the GIL released on memory the caller's buffer exporter keeps alive
// (the Py_buffer is held until the call returns). Errors become rdmastor's exceptions through
// rdmastor._errors.from_native, which gets the library's fields (Error::details: the S3 error
// document's Code, Message, RequestId, the HTTPStatus, a ClientFailure stage, buffer sizes) as a
// dict, not text to parse.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef RDMASTOR_PY_CUDA
#define RDMASTOR_PY_CUDA 0
#endif
#if RDMASTOR_PY_CUDA
// GPU memory through dma-buf (RDMA build configured where cuda.h is; python/CMakeLists.txt). The
// driver (libcuda.so.1) is loaded on first use, so the module imports on hosts without one; its
// logic is client/cuda_export.h. Never run on a GPU so far: see docs/python.md "GPU memory".
#include <cuda.h>
#include <dlfcn.h>

#include <type_traits>

#include "client/cuda_export.h"
#endif

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rdma/build_info.h"
#include "rdma/pci_affinity.h"
#include "rdmastor/rdma_client.h"
#include "rdmastor/s3_client.h"
#include "s3/sigv4.h"

namespace py = pybind11;
using rdmastor::Error;
using rdmastor::ErrorCode;
using rdmastor::HeaderList;
using rdmastor::client::ByteRange;
using rdmastor::client::RdmaS3Client;
using rdmastor::client::S3Client;

namespace {

// Carries an Error out of a GIL-free section; made one of rdmastor's exceptions with the GIL held.
struct NativeError {
  Error error;
  // get_batch_into: the byte counts of the objects read before the failing one (its index is
  // their number), so that a caller can go on from there.
  std::optional<std::vector<uint64_t>> batch_done;
};

[[noreturn]] void Throw(const Error& e) { throw NativeError{e, std::nullopt}; }

template <class T>
T Unwrap(rdmastor::Result<T> r) {
  if (!r.ok()) Throw(r.error());
  return std::move(r).value();
}

// A contiguous view of a Python buffer, released on scope exit (needs the GIL to construct and
// destroy; the memory stays valid in between, also with the GIL released).
class BufferView {
 public:
  BufferView(py::handle obj, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) throw py::error_already_set();
  }
  ~BufferView() { PyBuffer_Release(&view_); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  char* data() const { return static_cast<char*>(view_.buf); }
  size_t size() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

HeaderList ToHeaders(const std::map<std::string, std::string>& h) {
  HeaderList out;
  for (const auto& [k, v] : h) {
    std::string lower = k;
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    out.emplace_back(std::move(lower), v);
  }
  return out;
}

py::dict HeadersDict(const HeaderList& h) {
  py::dict d;
  for (const auto& [k, v] : h) d[py::str(k)] = py::str(v);
  return d;
}

py::dict ResultDict(const rdmastor::client::TransferResult& r) {
  py::dict d;
  d["transport"] = std::string(rdmastor::client::TransportName(r.transport));
  d["status"] = r.status;
  d["bytes"] = r.bytes;
  d["etag"] = r.etag;
  if (r.object_size)
    d["object_size"] = *r.object_size;
  else
    d["object_size"] = py::none();
  return d;
}

std::optional<ByteRange> RangeOf(uint64_t offset, int64_t length) {
  if (offset == 0 && length < 0) return std::nullopt;
  ByteRange r{offset, {}};
  if (length >= 0) {
    if (length == 0) return r;  // callers never send an empty range (checked in Python)
    r.last = offset + static_cast<uint64_t>(length) - 1;
  }
  return r;
}

// Memory of an rdmastor.Buffer: anonymous, page-aligned, faulted in at allocation, and registered
// once with each native client that moves bytes through it (RdmaS3Client::RegisterMemory), the 3FS
// RDMABuf model: a loop reading into one such buffer registers nothing per call. Python owns it
// through the Buffer object, which numpy/torch views (np.frombuffer, torch.frombuffer) keep alive,
// so the memory cannot be freed, nor its address reused, while anything can still name it; when
// it is freed, every client of this process that registered it forgets it first, so no stale
// registration outlives it. Plain buffers (bytearray, numpy, tensors) are registered per call and
// forgotten on return instead: the caller may free them the moment a call returns.
class RegisteredMemory {
 public:
  explicit RegisteredMemory(size_t nbytes) : size_(nbytes) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    map_len_ = std::max<size_t>((nbytes + page - 1) / page * page, page);
    void* m = ::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mem_ = static_cast<char*>(m);
    std::lock_guard lock(Mutex());
    Registry()[reinterpret_cast<uintptr_t>(mem_)] = this;
  }

  ~RegisteredMemory() {
    std::vector<std::shared_ptr<RdmaS3Client>> clients;
    {
      std::lock_guard lock(Mutex());
      Registry().erase(reinterpret_cast<uintptr_t>(mem_));
      const pid_t pid = ::getpid();
      for (auto& u : users_)  // a forked child leaves its parent's clients alone (see ~Native)
        if (auto client = u.client.lock(); client && u.pid == pid) clients.push_back(client);
    }
    for (const auto& client : clients) client->Forget(mem_, map_len_);
    ::munmap(mem_, map_len_);
  }
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  char* data() const { return mem_; }
  size_t size() const { return size_; }

  // The live Buffer memory holding [p, p+len), or nullptr. Callers hold a buffer export of an
  // object that keeps that Buffer alive, so the pointer stays valid through their call.
  static RegisteredMemory* Find(const void* p, size_t len) {
    const auto lo = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(Mutex());
    auto& reg = Registry();
    auto it = reg.upper_bound(lo);
    if (it == reg.begin()) return nullptr;
    RegisteredMemory* m = std::prev(it)->second;
    const auto base = reinterpret_cast<uintptr_t>(m->mem_);
    return lo - base <= m->map_len_ && len <= m->map_len_ - (lo - base) ? m : nullptr;
  }

  // Registers this memory with `client` (used by the calling thread only) unless it already is;
  // false when that fails (the call then registers per call, as for plain buffers).
  bool RegisterWith(const std::shared_ptr<RdmaS3Client>& client) {
    {
      std::lock_guard lock(Mutex());
      for (const auto& u : users_)
        if (u.client.lock() == client) return true;
    }
    // Outside the lock: registration can take milliseconds on hardware.
    if (!client->RegisterMemory(mem_, map_len_).ok()) return false;
    std::lock_guard lock(Mutex());
    std::erase_if(users_, [](const User& u) { return u.client.expired(); });
    users_.push_back({client, ::getpid()});
    return true;
  }

  // After a failed transfer, which drops the memory's registrations with `client`.
  void Unregistered(const std::shared_ptr<RdmaS3Client>& client) {
    std::lock_guard lock(Mutex());
    std::erase_if(users_, [&](const User& u) { return u.client.lock() == client; });
  }

  // How many live clients of this process hold a registration of it.
  size_t clients() const {
    std::lock_guard lock(Mutex());
    const pid_t pid = ::getpid();
    return static_cast<size_t>(std::count_if(users_.begin(), users_.end(), [&](const User& u) {
      return u.pid == pid && !u.client.expired();
    }));
  }

  // Held only for short bookkeeping, never across a registration or a transfer; taken around
  // fork() (pthread_atfork in the module init) so that a child never inherits it locked.
  static std::mutex& Mutex() {
    static std::mutex mu;
    return mu;
  }

 private:
  struct User {
    std::weak_ptr<RdmaS3Client> client;
    pid_t pid;
  };
  static std::map<uintptr_t, RegisteredMemory*>& Registry() {  // by start address
    static std::map<uintptr_t, RegisteredMemory*> registry;
    return registry;
  }

  char* mem_ = nullptr;
  size_t size_;
  size_t map_len_ = 0;
  std::vector<User> users_;  // guarded by Mutex()
};

#if RDMASTOR_PY_CUDA
namespace cu = rdmastor::client::cuda;
// client/cuda_export.h restates the driver's types and enum values so that its logic is tested
// without cuda.h; they must be cuda.h's.
static_assert(std::is_same_v<cu::DevicePtr, CUdeviceptr> && std::is_same_v<cu::Device, CUdevice>);
static_assert(sizeof(cu::CuResult) == sizeof(CUresult) && cu::kCudaSuccess == CUDA_SUCCESS);
static_assert(cu::kPointerAttributeBufferId == CU_POINTER_ATTRIBUTE_BUFFER_ID &&
              cu::kPointerAttributeDeviceOrdinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
static_assert(cu::kDeviceAttributeFlushWritesOptions ==
                  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS &&
              cu::kDeviceAttributeWritesOrdering == CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING);
static_assert(cu::kFlushWritesOptionHost == CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST &&
              cu::kWritesOrderingOwner == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER &&
              cu::kFlushTargetCurrentCtx == CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX &&
              cu::kFlushToOwner == CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
              cu::kRangeHandleDmaBufFd == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);

// The driver entry points, from the libcuda.so.1 the process has (the caller's CUDA library
// loaded it already when it allocated the memory).
struct CudaDriver {
  cu::DriverTable table;
  std::string error;  // why the driver cannot be used
  std::unique_ptr<cu::Driver> driver;

  static const CudaDriver& Get() {
    static const CudaDriver d = [] {
      CudaDriver d;
      void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        d.error = "the NVIDIA driver's libcuda.so.1 cannot be loaded";
        return d;
      }
      auto sym = [h](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      };
      auto& t = d.table;
      sym(t.pointer_get_attribute, "cuPointerGetAttribute");
      sym(t.device_get, "cuDeviceGet");
      sym(t.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
      sym(t.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
      sym(t.ctx_get_current, "cuCtxGetCurrent");
      sym(t.ctx_set_current, "cuCtxSetCurrent");
      sym(t.get_address_range, "cuMemGetAddressRange_v2");
      sym(t.get_handle_for_address_range, "cuMemGetHandleForAddressRange");
      sym(t.device_get_attribute, "cuDeviceGetAttribute");
      sym(t.flush_gpudirect_rdma_writes, "cuFlushGPUDirectRDMAWrites");
      sym(t.stream_synchronize, "cuStreamSynchronize");
      sym(t.get_error_name, "cuGetErrorName");
      d.error = t.Missing();
      d.driver = std::make_unique<cu::Driver>(d.table);
      return d;
    }();
    return d;
  }
};

// The driver, or the reason it cannot be used as the call's error.
const cu::Driver& Cuda() {
  const auto& d = CudaDriver::Get();
  if (!d.error.empty()) Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument, d.error));
  return *d.driver;
}

// Device memory rdmastor.register_device pinned (process-wide; each client registers it once).
cu::DeviceRegistry<RdmaS3Client>& DeviceRegistrations() {
  static cu::DeviceRegistry<RdmaS3Client> registry;
  return registry;
}
#endif

class Native {
 public:
  // fabric: "soft" | "verbs" | "off". verbs_env: MINIO_RDMA_DEVICE / _PORT / _GID_INDEX / _DC_KEY /
  // _TRAFFIC_CLASS / _SERVICE_LEVEL / _PKEY_INDEX.
  Native(const std::string& endpoint, const std::string& access_key, const std::string& secret_key,
         const std::string& region, const std::string& fabric, bool allow_http_fallback,
         const std::map<std::string, std::string>& verbs_env, double connect_timeout_s,
         double io_timeout_s, const std::string& transport, int rc_port, bool lazy_device)
      : pid_(::getpid()), fabric_(fabric) {
    rdmastor::client::TlsClientOptions tls;
    auto s3cfg = Unwrap(rdmastor::client::S3ConfigFromEndpoint(endpoint, access_key, secret_key,
                                                               region, tls));
    s3cfg.http.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1000));
    s3cfg.http.io_timeout = std::chrono::milliseconds(static_cast<int64_t>(io_timeout_s * 1000));
    s3cfg.max_attempts = 1;  // the Python layer retries (botocore's modes, counted in stats())
    if (fabric == "off") {
      plain_ = std::make_unique<S3Client>(std::move(s3cfg));
      return;
    }
    rdmastor::client::RdmaClientConfig cfg;
    cfg.s3 = std::move(s3cfg);
    cfg.allow_http_fallback = allow_http_fallback;
    if (transport == "rc") {
      cfg.transport = rdmastor::client::RdmaTransport::kRc;
    } else if (transport != "dc") {
      Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument,
                                "transport must be dc or rc, not '" + transport + "'"));
    }
    if (rc_port < 1 || rc_port > 65535)
      Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument,
                                "rc_port must be from 1 to 65535, not " + std::to_string(rc_port)));
    cfg.rc_port = static_cast<uint16_t>(rc_port);
    cfg.lazy_rc_device = lazy_device;
    if (fabric == "verbs") {
      cfg.fabric = rdmastor::client::ClientFabric::kVerbs;
      cfg.verbs = Unwrap(rdmastor::client::VerbsClientSettingsFromEnv(verbs_env));
    } else if (fabric != "soft") {
      Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument,
                                "rdma must be auto, soft, verbs or off, not '" + fabric + "'"));
    }
    py::gil_scoped_release nogil;
    rdma_ = Unwrap(RdmaS3Client::Create(std::move(cfg)));
  }

  // After fork() the child owns a copy of this object whose helper threads (the soft fabric's
  // target) do not exist there: tearing it down would join threads that are gone. The child
  // leaks it instead (its sockets close with the process).
  ~Native() {
    if (::getpid() != pid_) {
      new std::shared_ptr<RdmaS3Client>(std::move(rdma_));  // leaked on purpose
      (void)plain_.release();
    }
  }

  const std::string& fabric() const { return fabric_; }

  // The plain HTTP client: for rdma="off", or for a call the caller sends over HTTP (a server that
  // declined RDMA a moment ago: rdmastor.Client's decline cache), on the same connection.
  S3Client& Http() { return rdma_ ? rdma_->http() : *plain_; }
  size_t registrations() const { return rdma_ ? rdma_->registrations() : 0; }

  // Runs transfer() (GIL released) over RDMA on host memory [p, p+len). Memory of an
  // rdmastor.Buffer stays registered with this client afterwards; any other is registered for
  // the call and forgotten before it returns (its owner may free it right after).
  template <class F>
  rdmastor::client::TransferResult OverRdma(const char* p, size_t len, F&& transfer) {
    RegisteredMemory* kept = RegisteredMemory::Find(p, len);
    const bool registered = kept && kept->RegisterWith(rdma_);
    rdmastor::Result<rdmastor::client::TransferResult> res = transfer();
    if (!registered) {
      rdma_->Forget(p, len);
    } else if (!res.ok() || res->transport != rdmastor::client::Transport::kRdma) {
      // A failed call, or an HTTP fallback, dropped its registrations; a batch may have
      // registered its later objects per call since: forget those too.
      rdma_->Forget(p, len);
      kept->Unregistered(rdma_);
    }
    return Unwrap(std::move(res));
  }

  py::dict Put(const std::string& bucket, const std::string& key, py::handle data,
               const std::map<std::string, std::string>& headers, bool http) {
    BufferView buf(data, /*writable=*/false);
    HeaderList h = ToHeaders(headers);
    rdmastor::client::TransferResult r;
    {
      py::gil_scoped_release nogil;
      if (rdma_ && !http) {
        r = OverRdma(buf.data(), buf.size(),
                     [&] { return rdma_->Put(bucket, key, buf.data(), buf.size(), h); });
      } else {
        auto p = Unwrap(Http().PutObject(bucket, key, std::string_view(buf.data(), buf.size()), h));
        r.transport = rdmastor::client::Transport::kHttp;
        r.status = 200;
        r.bytes = buf.size();
        r.etag = p.etag;
        r.headers = std::move(p.headers);
      }
    }
    return ResultDict(r);
  }

  py::dict UploadPart(const std::string& bucket, const std::string& key,
                      const std::string& upload_id, int part_number, py::handle data, bool http) {
    BufferView buf(data, /*writable=*/false);
    rdmastor::client::TransferResult r;
    {
      py::gil_scoped_release nogil;
      if (rdma_ && !http) {
        r = OverRdma(buf.data(), buf.size(), [&] {
          return rdma_->UploadPart(bucket, key, upload_id, part_number, buf.data(), buf.size());
        });
      } else {
        rdmastor::client::S3Request req;
        req.method = "PUT";
        req.bucket = bucket;
        req.key = key;
        req.raw_query = "partNumber=" + std::to_string(part_number) + "&uploadId=" + upload_id;
        req.body = std::string_view(buf.data(), buf.size());
        req.payload_sha256 = "UNSIGNED-PAYLOAD";
        auto resp = Unwrap(Http().Execute(req, rdmastor::client::ResponseTarget::Discard()));
        if (!resp.success())
          Throw(rdmastor::client::S3ErrorFromResponse(resp, "PUT part of " + key));
        r.transport = rdmastor::client::Transport::kHttp;
        r.status = resp.status;
        r.bytes = buf.size();
        if (const auto* e = resp.FindHeader("etag")) r.etag = *e;
      }
    }
    return ResultDict(r);
  }

  // GetObject (or bytes [offset, offset+length)) into the writable buffer `dst`.
  py::dict GetInto(const std::string& bucket, const std::string& key, py::handle dst,
                   uint64_t offset, int64_t length, bool http) {
    BufferView buf(dst, /*writable=*/true);
    size_t capacity = buf.size();
    if (length >= 0 && static_cast<uint64_t>(length) < capacity) capacity = static_cast<size_t>(length);
    auto range = RangeOf(offset, length);
    rdmastor::client::TransferResult r;
    {
      py::gil_scoped_release nogil;
      if (rdma_ && !http) {
        r = OverRdma(buf.data(), capacity,
                     [&] { return rdma_->Get(bucket, key, buf.data(), capacity, range); });
      } else {
        auto g = Unwrap(Http().GetObjectInto(bucket, key, range, buf.data(), capacity));
        r.transport = rdmastor::client::Transport::kHttp;
        r.status = g.status;
        r.bytes = g.bytes;
        r.etag = g.etag;
        r.object_size = g.object_size;
      }
    }
    return ResultDict(r);
  }

  // GetObject of every key in turn, key i into slot i of `dst` ([i*slot, (i+1)*slot)), in one
  // call with the GIL released throughout: a data loader's batch pays Python's per-call cost
  // (argument checks, views, the result) once instead of per object. Over RDMA the whole buffer
  // is registered once for the batch (an rdmastor.Buffer stays registered, as for GetInto). The
  // objects are read one after another on this thread's connection, exactly as GetInto would.
  // Returns the byte count of each object and the transport all of them used ("rdma", "http",
  // or "mixed"). An error stops the batch: the keys before it have been read, and the error
  // carries their byte counts (NativeError::batch_done). http: every object over HTTP.
  py::tuple GetBatchInto(const std::string& bucket, const std::vector<std::string>& keys,
                         py::handle dst, size_t slot, bool http) {
    BufferView buf(dst, /*writable=*/true);
    if (slot == 0 || keys.size() > buf.size() / slot)
      Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument,
                                "the buffer is smaller than " + std::to_string(keys.size()) +
                                    " slots of " + std::to_string(slot) + " bytes"));
    const size_t span = keys.size() * slot;
    std::vector<uint64_t> counts;
    counts.reserve(keys.size());
    bool rdma_seen = false, http_seen = false;
    {
      py::gil_scoped_release nogil;
      auto one = [&](size_t i) -> rdmastor::Result<rdmastor::client::TransferResult> {
        char* at = buf.data() + i * slot;
        if (rdma_ && !http) return rdma_->Get(bucket, keys[i], at, slot, std::nullopt);
        auto g = Http().GetObjectInto(bucket, keys[i], std::nullopt, at, slot);
        if (!g.ok()) return g.error();
        return rdmastor::client::TransferResult{rdmastor::client::Transport::kHttp, g->status,
                                                g->bytes, g->etag, g->object_size, {}};
      };
      auto all = [&]() -> rdmastor::Result<rdmastor::client::TransferResult> {
        rdmastor::client::TransferResult last;
        for (size_t i = 0; i < keys.size(); ++i) {
          auto r = one(i);
          if (!r.ok()) return r.error();
          (r->transport == rdmastor::client::Transport::kRdma ? rdma_seen : http_seen) = true;
          counts.push_back(r->bytes);
          last = std::move(r).value();
        }
        // A fallback released the batch's registration; OverRdma then forgets it everywhere.
        if (http_seen) last.transport = rdmastor::client::Transport::kHttp;
        return last;
      };
      try {
        if (rdma_ && !http && span > 0) {
          // Plain memory is registered once for the whole batch, not per object (OverRdma
          // forgets it on return); an rdmastor.Buffer is registered once per client.
          if (RegisteredMemory::Find(buf.data(), span) == nullptr)
            (void)rdma_->RegisterMemory(buf.data(), span);  // on failure, each Get says why
          OverRdma(buf.data(), span, all);
        } else {
          Unwrap(all());
        }
      } catch (NativeError& e) {
        e.batch_done = counts;
        throw;
      }
    }
    py::list out(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) out[i] = py::int_(counts[i]);
    const char* transport = rdma_seen && http_seen ? "mixed" : http_seen ? "http" : "rdma";
    if (counts.empty()) transport = "none";
    return py::make_tuple(out, transport);
  }

#if RDMASTOR_PY_CUDA
  // GetObject (or a range) into CUDA device memory [ptr, ptr+len), over verbs only. The NIC's
  // writes are visible to kernels launched after it returns (flushed where the device needs it).
  py::dict GetIntoDevice(const std::string& bucket, const std::string& key, uintptr_t ptr,
                         size_t len, uint64_t offset, int64_t length) {
    rdmastor::client::TransferResult r;
    {
      py::gil_scoped_release nogil;
      r = OnDevice(ptr, len, /*flush=*/true, [&](char* p) {
        return rdma_->Get(bucket, key, p, len, RangeOf(offset, length));
      });
    }
    return ResultDict(r);
  }

  // PutObject (upload_id empty) or UploadPart from CUDA device memory [ptr, ptr+len).
  py::dict PutDevice(const std::string& bucket, const std::string& key, uintptr_t ptr, size_t len,
                     const std::map<std::string, std::string>& headers,
                     const std::string& upload_id, int part_number) {
    HeaderList h = ToHeaders(headers);
    rdmastor::client::TransferResult r;
    {
      py::gil_scoped_release nogil;
      r = OnDevice(ptr, len, /*flush=*/false, [&](char* p) {
        return upload_id.empty() ? rdma_->Put(bucket, key, p, len, h)
                                 : rdma_->UploadPart(bucket, key, upload_id, part_number, p, len);
      });
    }
    return ResultDict(r);
  }

  // Runs transfer(p) on device memory [ptr, ptr+len) registered with this client: through the
  // allocation rdmastor.register_device pinned, else the buffer's pages exported for this call
  // and forgotten after it. The device's primary context is current on this thread meanwhile
  // (a pool thread running a part has none of its own).
  template <class F>
  rdmastor::client::TransferResult OnDevice(uintptr_t ptr, size_t len, bool flush, F&& transfer) {
    char* p = RequireVerbs(ptr, len);
    const cu::Driver& drv = Cuda();
    auto scope = Unwrap(drv.Enter(ptr));
    auto run = [&]() -> rdmastor::Result<rdmastor::client::TransferResult> {
      if (DeviceRegistrations().Use(drv, ptr, len, rdma_)) return transfer(p);
      auto buf = drv.ExportSpan(ptr, len);
      if (!buf.ok()) return buf.error();
      if (auto st = rdma_->RegisterDeviceMemory(p, len, buf->fd(), buf->offset_of(ptr)); !st.ok())
        return st.error();
      auto res = transfer(p);
      rdma_->Forget(p, len);  // before the dma-buf closes
      return res;
    };
    auto r = Unwrap(run());
    if (flush)
      if (auto st = drv.FlushRdmaWrites(*scope); !st.ok()) Throw(st.error());
    return r;
  }

  char* RequireVerbs(uintptr_t ptr, size_t len) {
    if (!rdma_ || fabric_ != "verbs")
      Throw(rdmastor::MakeError(ErrorCode::kRDMANotSupported,
                                "GPU memory moves only over the verbs fabric"));
    if (ptr == 0 || len == 0)
      Throw(rdmastor::MakeError(ErrorCode::kInvalidArgument, "an empty device buffer"));
    return reinterpret_cast<char*>(ptr);
  }
#endif

  // A presigned URL for method on /bucket/key (raw_query: extra parameters, already encoded),
  // valid for expires_s seconds from now (SigV4 query auth, UNSIGNED-PAYLOAD).
  std::string Presign(const std::string& method, const std::string& bucket, const std::string& key,
                      const std::string& raw_query, int64_t expires_s) {
    S3Client& s3 = Http();
    const auto& cfg = s3.config();
    rdmastor::s3::SignInput in;
    in.method = method;
    in.raw_path = rdmastor::client::S3ObjectPath(bucket, key);
    in.raw_query = raw_query;
    in.headers.emplace_back("host", s3.http().host_header());
    in.access_key = cfg.access_key;
    in.secret_key = cfg.secret_key;
    in.region = cfg.region;
    in.now_unix = static_cast<int64_t>(std::time(nullptr));
    return std::string(s3.http().tls() ? "https://" : "http://") + s3.http().host_header() +
           in.raw_path + "?" + rdmastor::s3::PresignQuery(in, expires_s);
  }

  // A request without a payload buffer (listing, HEAD, buckets, deletes, multipart control).
  // Returns (status, headers, body); the caller decodes errors (rdmastor._errors).
  py::tuple Request(const std::string& method, const std::string& bucket, const std::string& key,
                    const std::string& raw_query, const std::map<std::string, std::string>& headers,
                    const py::bytes& body) {
    std::string body_copy = body;
    rdmastor::client::S3Request req;
    req.method = method;
    req.bucket = bucket;
    req.key = key;
    req.raw_query = raw_query;
    req.headers = ToHeaders(headers);
    req.body = body_copy;
    rdmastor::client::HttpResponse resp;
    {
      py::gil_scoped_release nogil;
      S3Client& s3 = Http();
      auto target = method == "HEAD" ? rdmastor::client::ResponseTarget::Discard()
                                     : rdmastor::client::ResponseTarget::String();
      resp = Unwrap(s3.Execute(req, target));
    }
    return py::make_tuple(resp.status, HeadersDict(resp.headers), py::bytes(resp.body));
  }

 private:
  pid_t pid_;
  std::string fabric_;
  std::shared_ptr<RdmaS3Client> rdma_;  // shared with the Buffers it registered (weakly)
  std::unique_ptr<S3Client> plain_;
};

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "rdmastor client library binding (use the rdmastor package, not this module)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NativeError& e) {
      const auto& info = rdmastor::GetErrorInfo(e.error.code);
      py::dict fields;
      for (const auto& [name, value] : e.error.details) fields[py::str(name)] = py::str(value);
      py::object done = py::none();
      if (e.batch_done) {
        py::list l;
        for (uint64_t n : *e.batch_done) l.append(py::int_(n));
        done = l;
      }
      py::object from_native = py::module_::import("rdmastor._errors").attr("from_native");
      py::object exc = from_native(std::string(info.code), e.error.message, fields, done);
      PyErr_SetObject(exc.get_type().ptr(), exc.ptr());
    }
  });
  // A child of fork() must not inherit RegisteredMemory's lock held by another thread.
  ::pthread_atfork([] { RegisteredMemory::Mutex().lock(); },
                   [] { RegisteredMemory::Mutex().unlock(); },
                   [] { RegisteredMemory::Mutex().unlock(); });
  // The S3 error codes that decline RDMA (501, no byte moved; the call may be redone over HTTP):
  // the package's fallback reads them from here, so C++'s IsRdmaDecline stays the one list.
  py::list declines;
#define RDMASTOR_DECLINE_ENTRY(name, code, status, msg) \
  if (rdmastor::IsRdmaDecline(rdmastor::ErrorCode::name)) declines.append(py::str(code));
  RDMASTOR_ERROR_CODES(RDMASTOR_DECLINE_ENTRY)
#undef RDMASTOR_DECLINE_ENTRY
  m.attr("RDMA_DECLINE_CODES") = py::frozenset(declines);
  m.def("built_with_verbs", &rdmastor::rdma::BuiltWithVerbs);
  // Whether this binding can move CUDA device memory (dma-buf export compiled in).
  m.def("cuda_built", [] { return RDMASTOR_PY_CUDA != 0; });
#if RDMASTOR_PY_CUDA
  // rdmastor.register_device / deregister_device / the stream synchronization before a transfer.
  m.def("register_device", [](uintptr_t ptr, size_t len) {
    py::gil_scoped_release nogil;
    const cu::Driver& drv = Cuda();
    auto scope = Unwrap(drv.Enter(ptr));
    if (auto st = DeviceRegistrations().Register(drv, ptr, len); !st.ok()) Throw(st.error());
  });
  m.def("deregister_device", [](uintptr_t ptr) {
    py::gil_scoped_release nogil;
    return DeviceRegistrations().Deregister(ptr);
  });
  m.def("device_registrations", [] { return DeviceRegistrations().size(); });
  m.def("device_sync", [](uintptr_t ptr, uintptr_t stream) {
    py::gil_scoped_release nogil;
    const cu::Driver& drv = Cuda();
    auto scope = Unwrap(drv.Enter(ptr));
    if (auto st = drv.SynchronizeStream(*scope, reinterpret_cast<cu::Stream>(stream)); !st.ok())
      Throw(st.error());
  });
#endif
  m.def("nearest_rdma_device", [](const std::string& pci_address) {
    return Unwrap(rdmastor::rdma::NearestRdmaDevice("/sys", pci_address));
  });
  m.def("rdma_devices", [] {
    auto probe = rdmastor::rdma::ProbeDevices();
    return py::make_tuple(probe.devices, probe.error);
  });
  py::class_<RegisteredMemory, std::shared_ptr<RegisteredMemory>>(
      m, "Buffer",
      "Buffer(nbytes): host memory for transfers that repeat into (or from) the same memory, "
      "registered for RDMA once per client thread instead of on every call. Any buffer-protocol "
      "view of it works: np.frombuffer(b, np.uint8), torch.frombuffer(b, dtype=torch.uint8) "
      "(rdmastor.torch.registered_tensor), memoryview(b). It stays registered until the Buffer "
      "and every view of it are gone; the registrations are dropped before the memory is freed.",
      py::buffer_protocol())
      .def(py::init<size_t>(), py::arg("nbytes"))
      .def_buffer([](RegisteredMemory& b) {
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {1}, /*readonly=*/false);
      })
      .def("__len__", &RegisteredMemory::size)
      .def_property_readonly("clients", &RegisteredMemory::clients);
  py::class_<Native>(m, "Native")
      .def(py::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    const std::string&, bool, const std::map<std::string, std::string>&, double,
                    double, const std::string&, int, bool>(),
           py::arg("endpoint"), py::arg("access_key"), py::arg("secret_key"), py::arg("region"),
           py::arg("fabric"), py::arg("allow_http_fallback"), py::arg("verbs_env"),
           py::arg("connect_timeout"), py::arg("io_timeout"), py::arg("transport") = "dc",
           py::arg("rc_port") = 9100, py::arg("lazy_device") = false)
      .def_property_readonly("fabric", &Native::fabric)
      .def_property_readonly("registrations", &Native::registrations)
      .def("put", &Native::Put, py::arg("bucket"), py::arg("key"), py::arg("data"),
           py::arg("headers"), py::arg("http") = false)
      .def("upload_part", &Native::UploadPart, py::arg("bucket"), py::arg("key"),
           py::arg("upload_id"), py::arg("part_number"), py::arg("data"), py::arg("http") = false)
      .def("get_into", &Native::GetInto, py::arg("bucket"), py::arg("key"), py::arg("dst"),
           py::arg("offset"), py::arg("length"), py::arg("http") = false)
      .def("get_batch_into", &Native::GetBatchInto, py::arg("bucket"), py::arg("keys"),
           py::arg("dst"), py::arg("slot"), py::arg("http") = false)
#if RDMASTOR_PY_CUDA
      .def("get_into_device", &Native::GetIntoDevice)
      .def("put_device", &Native::PutDevice)
#endif
      .def("presign", &Native::Presign)
      .def("request", &Native::Request);
}
