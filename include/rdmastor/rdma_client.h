// rdmastor client library: S3 over RDMA (DESIGN.md §3) with SigV4, on top of the HTTP S3 client.
//
// The application hands its own buffers to Get/Put/UploadPart. The library registers them (an MR
// cache keeps registrations across calls; call Forget() before freeing a buffer it has seen),
// sends the signed request with the buffer's x-amz-rdma-token, and the server moves the payload
// straight into / out of the buffer; the HTTP response carries only headers. When the server
// answers 501 (no RDMA there, object larger than the buffer, ...) the library retries over plain
// HTTP if the caller allowed it, and says which transport was used.
//
// Fabrics: `soft` (TCP emulation, any host) and `verbs` (RDMA build, an mlx5 NIC: the client runs
// a DC target the server's DC initiators reach with the same DC access key). GPU memory: with
// verbs, RegisterDeviceMemory registers a CUDA allocation exported as a dma-buf (the application
// gets the fd from cuMemGetHandleForAddressRange), after which Get/Put/UploadPart take the device
// pointer like host memory; such buffers are never read or written by the library itself, so an
// HTTP fallback for them is refused.
// Not thread-safe (but Forget): one RdmaS3Client per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmastor/s3_client.h"
#include "rdmastor/result.h"

namespace rdmastor::client {

enum class ClientFabric { kSoft, kVerbs };

// The verbs fabric's knobs (the server's MINIO_RDMA_DEVICE / _PORT / _GID_INDEX / _DC_KEY /
// _TRAFFIC_CLASS / _SERVICE_LEVEL / _PKEY_INDEX mean the same). dc_key must equal the server's;
// the DC target answers (RDMA READ responses, ACKs) in traffic_class / service_level, and must be
// in the server's partition (pkey_index), so set those as on the server too.
struct VerbsClientSettings {
  std::string device;  // "" = the first device
  int port = 1;
  int gid_index = -1;  // -1 = a RoCE v2 IPv4-mapped entry (0 on InfiniBand)
  uint64_t dc_key = 0xffeeddcc;
  int traffic_class = 0;  // GRH traffic class, 0..255
  int service_level = 0;  // SL (IB) / Ethernet priority (RoCE), 0..15
  int pkey_index = 0;     // P_Key table index
};
// The knobs above from MINIO_RDMA_DEVICE, _PORT, _GID_INDEX, _DC_KEY, _TRAFFIC_CLASS,
// _SERVICE_LEVEL and _PKEY_INDEX in `env` (unset: the defaults), validated as the server
// validates them: an invalid value is an error naming the variable.
Result<VerbsClientSettings> VerbsClientSettingsFromEnv(
    const std::map<std::string, std::string>& env);

// How the server reaches the client's buffers. kDefault: the server connects to the client's
// target itself (DC on verbs: a ConnectX client keeps DC; soft: the server dials the client).
// kRc: the client opens one persistent RC connection to the server (rdma_cm on verbs, its TCP
// emulation on soft) and names it in every request (signed x-amz-rdma-connection): for devices
// without DC, or when asked. See docs/s3-over-rdma.md, "RC transport".
enum class RdmaTransport { kDefault, kRc };

struct RdmaClientConfig {
  S3ClientConfig s3;  // endpoint and credentials (S3ConfigFromEndpoint)
  ClientFabric fabric = ClientFabric::kSoft;
  // soft: the IPv4 address the server connects back to (the address it sees requests from);
  // verbs RC: the address its RC connections leave from (the GID its tokens carry); empty = the
  // local address of the HTTP connection.
  std::string soft_bind_ip;
  VerbsClientSettings verbs;
  // On 501 from the server, redo the request over HTTP instead of failing.
  bool allow_http_fallback = false;
  size_t mr_cache_entries = 64;
  RdmaTransport transport = RdmaTransport::kDefault;
  uint16_t rc_port = 9100;  // the server's MINIO_RDMA_RC_PORT (kRc)
  // Verbs RC: when no device can be opened now (its port is down, it was removed), Create still
  // succeeds and each call tries again (at most once a second), failing meanwhile with a client
  // transport error (RDMAStep "open device") that the caller may redo over HTTP. Off: Create
  // fails. A device that goes away later is always reopened this way.
  bool lazy_rc_device = false;
};

enum class Transport { kRdma, kHttp };
std::string_view TransportName(Transport t);  // "rdma" | "http"

struct TransferResult {
  Transport transport = Transport::kRdma;
  int status = 0;                       // 200, or 206 for a range
  uint64_t bytes = 0;                   // payload bytes moved
  std::string etag;                     // quotes included, as sent
  std::optional<uint64_t> object_size;  // GET: the whole object's size
  HeaderList headers;                   // response headers (lower-case names)
};

class RdmaS3Client {
 public:
  static Result<std::unique_ptr<RdmaS3Client>> Create(RdmaClientConfig config);
  ~RdmaS3Client();

  // GetObject (optionally a range) into dst[0, capacity). Over RDMA the whole object (or range)
  // must fit: otherwise the server answers 501 (and nothing is written).
  Result<TransferResult> Get(std::string_view bucket, std::string_view key, char* dst,
                             size_t capacity, std::optional<ByteRange> range = {});
  // PutObject of data[0, len). extra_headers (lower-case) are signed and sent: content-type,
  // x-amz-meta-*, x-amz-checksum-* (over the raw bytes; the server verifies it).
  Result<TransferResult> Put(std::string_view bucket, std::string_view key, const char* data,
                             size_t len, const HeaderList& extra_headers = {});
  Result<TransferResult> UploadPart(std::string_view bucket, std::string_view key,
                                    std::string_view upload_id, int part_number, const char* data,
                                    size_t len);

  // Multipart helpers (over HTTP: no payload).
  Result<std::string> CreateMultipartUpload(std::string_view bucket, std::string_view key);
  // parts: (part number, ETag as returned). Returns the object's ETag.
  Result<std::string> CompleteMultipartUpload(
      std::string_view bucket, std::string_view key, std::string_view upload_id,
      const std::vector<std::pair<int, std::string>>& parts);

  // Registers host memory [p, p+len) once for transfers in both directions and keeps it until
  // Forget() (the cache may evict its entries; this one stays): for a buffer the application
  // allocates to reuse, so that no later call registers or checks it again (3FS's RDMABuf model).
  // Get/Put/UploadPart into any part of it use this registration.
  Status RegisterMemory(void* p, size_t len);

  // Drops every registration overlapping [p, p+len) (cached, RegisterMemory's, device memory):
  // call before freeing such a buffer. Unlike the rest of the class, safe to call from another
  // thread while this client transfers (it only drops registrations; a transfer in flight on
  // the memory being forgotten fails).
  void Forget(const void* p, size_t len);
  // How many registrations this client holds now (cached and kept): for tests and diagnostics.
  size_t registrations() const;

  // Registers device memory [device_ptr, device_ptr + len) exported as the dma-buf `dmabuf_fd`
  // (starting `dmabuf_offset` bytes into it) for Get/Put/UploadPart. Verbs fabric only (others:
  // RDMANotSupported). Forget() releases it; keep the fd and the allocation alive until then.
  Status RegisterDeviceMemory(void* device_ptr, size_t len, int dmabuf_fd, uint64_t dmabuf_offset);
  // The plain HTTP client on the same connection (bucket operations, listing, deletes).
  S3Client& http();

  // The x-amz-rdma-token for [p, p+len) (registers it): for callers building their own requests.
  Result<std::string> TokenFor(const void* p, size_t len, bool remote_write);

  struct Impl;

 private:
  explicit RdmaS3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmastor::client
