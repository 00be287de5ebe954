// The server's S3-over-RDMA data plane, above the backend boundary: for one request it opens an
// endpoint to the client named in the token and moves the payload between a registered staging
// buffer and the client's buffer, pipelined (the drive fills one slot while earlier slots are on
// the wire). Knows nothing of S3 semantics (which the handlers in s3/ own) beyond a BodySource.
//
// Copies: a GET reads from the drive straight into the registered staging slot (pread, no
// user-space copy) and the fabric sends from there: 0 user-space copies per byte. A PUT lands in
// the staging slot and is copied once into the object layer's write buffer: 1 per byte.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/http_types.h"
#include "rdma/fabric.h"
#include "rdma/memory.h"
#include "rdma/rc_sessions.h"
#include "rdma/token.h"
#include "rdma/staged_transfer.h"

namespace rdmastor::rdma {

class DeviceMonitor;

struct ServiceOptions {
  size_t staging_bytes = 4u << 20;  // one registered buffer per request...
  size_t slot_bytes = 1u << 20;     // ...split into pipeline slots of this size
  // RDMASTOR_RDMA_TRANSFERS_MAX: transfers the server runs at once; bounds staging memory:
  // max_buffers * staging_bytes. One more waits up to buffer_wait (RDMASTOR_RDMA_TRANSFERS_WAIT),
  // then 503 SlowDown.
  size_t max_buffers = 32;
  std::chrono::milliseconds buffer_wait{30000};
  // RDMASTOR_RDMA_TRANSFERS_PER_CLIENT: transfers one client address may run at once; more get
  // 503 SlowDown at once. Never more than half of max_buffers, so one client cannot take every
  // staging buffer (and with them every other client's RDMA requests).
  size_t transfers_per_client = 8;
  TransferOptions transfer;
  // S3 over RDMA on RC: the listener's address ("" or a name: 0.0.0.0; the S3 listener's host)
  // and the limits of the connections clients open there. The port is MINIO_RDMA_RC_PORT.
  std::string rc_bind_ip;
  RcLimits rc;
  // With a reopen function: how often the monitor looks at the fabric, and the first and longest
  // wait between attempts to open a device that went away (ReopenBackoff).
  std::chrono::milliseconds device_look{500};
  std::chrono::milliseconds reopen_first{250};
  std::chrono::milliseconds reopen_cap{4000};
};

// Counters the metrics layer reads (monotonic).
struct RdmaStats {
  std::atomic<uint64_t> transfers{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> bytes_to_clients{0};    // GET payload written into client buffers
  std::atomic<uint64_t> bytes_from_clients{0};  // PUT payload read from client buffers
  std::atomic<uint64_t> bytes_copied{0};        // user-space memcpy of payload on the server
  std::atomic<uint64_t> refused_per_client{0};  // 503: the client's transfer cap was reached
  // Transfers that found every staging buffer busy (the server's cap, max_buffers): they got one
  // within buffer_wait, or 503.
  std::atomic<uint64_t> staging_waited{0};
  std::atomic<uint64_t> staging_refused{0};
  std::atomic<uint64_t> origin_declined{0};     // 501: the token named another host (OriginDecline)
};

class S3RdmaService {
 public:
  // Creates the fabric again after its device failed (Fabric::NeedsReopen).
  using ReopenFn = std::function<Result<std::unique_ptr<Fabric>>()>;
  // `fabric` null: S3 over RDMA is unavailable and every token request is answered 501 naming
  // `unavailable_reason`.
  S3RdmaService(std::unique_ptr<Fabric> fabric, std::string unavailable_reason,
                ServiceOptions options = {}, ReopenFn reopen = nullptr);
  ~S3RdmaService();

  // Whether a token request can be served now: a fabric, and it is not degraded (port down,
  // device failed or removed). With a reopen function a monitor thread looks at the fabric every
  // 500 ms: a device that failed or was removed has everything made on it freed at once (RC
  // listener, RC connections, staging buffers, fabric: the kernel finishes removing a device only
  // then), and is opened again when it is back (ReopenBackoff), the RC listener on its port.
  bool available() const;
  std::string fabric_name() const;
  // Why not available() ("" when it is).
  std::string unavailable_reason() const;
  // The 501 a token request gets while not available(): DegradedDecline while a fabric is
  // degraded or its device is being reopened; a plain 501 when S3 over RDMA is off or never
  // started.
  Error Decline() const;
  RdmaStats& stats() { return stats_; }
  const RdmaStats& stats() const { return stats_; }
  // RC connections clients opened (null: this server serves no RC). A request whose origin names
  // one (RequestOrigin::rc_connection) moves its payload on it instead of a fabric Connect.
  void SetRcSessions(std::shared_ptr<RcSessions> sessions) { rc_sessions_ = std::move(sessions); }
  RcSessions* rc_sessions() const { return rc_sessions_.get(); }
  // Listens for RC connections on the fabric (options.rc_bind_ip, `port`; 0: any free port) with
  // a table of options.rc's limits. kRDMANotSupported where the fabric has no RC listener.
  Status ListenRc(uint16_t port);
  uint16_t rc_port() const { return rc_port_; }
  size_t transfers_per_client() const { return per_client_cap_; }

  // One transfer counted against its client's cap while held.
  class ClientSlot {
   public:
    ClientSlot() = default;
    ClientSlot(ClientSlot&& o) noexcept : service_(o.service_), key_(std::move(o.key_)) {
      o.service_ = nullptr;
    }
    ClientSlot& operator=(ClientSlot&& o) noexcept {
      if (this != &o) {
        Release();
        service_ = o.service_;
        key_ = std::move(o.key_);
        o.service_ = nullptr;
      }
      return *this;
    }
    ~ClientSlot() { Release(); }

   private:
    friend class S3RdmaService;
    ClientSlot(S3RdmaService* s, std::string key) : service_(s), key_(std::move(key)) {}
    void Release();
    S3RdmaService* service_ = nullptr;
    std::string key_;
  };

  // GET: fills [0, length) through read_at (object offsets relative to the start of the range)
  // and writes it to the client's buffer at raddr. The caller checked length <= rsize.
  using ReadAtFn = std::function<Result<size_t>(uint64_t offset, char* buf, size_t len)>;
  struct PushResult {
    uint64_t bytes = 0;
    uint64_t bytes_copied = 0;
  };
  Result<PushResult> PushToClient(const RdmaToken& token, const RequestOrigin& origin,
                                  uint64_t length, const ReadAtFn& read_at);

  // One generation of the data plane: a fabric and the staging buffers registered with it. A
  // request holds its generation until it ends, so a reopen never pulls memory from under it.
  struct Plane {
    std::unique_ptr<Fabric> fabric;
    std::unique_ptr<BufferPool> pool;  // declared after the fabric: deregistered before it
  };

  // PUT / UploadPart: a body of exactly token.rsize bytes read from the client's buffer. Read()
  // fails with the transfer's S3 error (failure() keeps it for the handler).
  class ClientBody : public BodySource {
   public:
    ~ClientBody() override;
    Result<size_t> Read(char* buf, size_t len) override;
    uint64_t bytes() const { return consumed_; }
    uint64_t bytes_copied() const { return copied_; }
    const std::optional<Error>& failure() const { return failure_; }

   private:
    friend class S3RdmaService;
    ClientBody() = default;

    S3RdmaService* service_ = nullptr;
    std::shared_ptr<Plane> plane_;        // the generation this body uses: destroyed last
    ClientSlot client_slot_;              // released last
    BufferPool::Buffer buffer_;           // destroyed last: the endpoint may still reference it
    std::unique_ptr<Endpoint> endpoint_;  // destroyed before the buffer goes back to the pool
    std::unique_ptr<StagedTransfer> transfer_;
    uint64_t total_ = 0, consumed_ = 0, copied_ = 0;
    std::optional<Error> failure_;
  };
  Result<std::unique_ptr<ClientBody>> PullFromClient(const RdmaToken& token,
                                                     const RequestOrigin& origin);

 private:
  // kSlowDown when the origin already runs transfers_per_client transfers.
  Result<ClientSlot> AcquireClientSlot(const RequestOrigin& origin);
  // A staging buffer of `plane`, waiting up to buffer_wait when all are busy (counted in stats_);
  // kSlowDown naming the cap when none came free.
  Result<BufferPool::Buffer> AcquireStaging(Plane& plane);
  // The endpoint a request's payload travels on: its RC connection, or one the fabric connects.
  Result<std::unique_ptr<Endpoint>> EndpointFor(Plane& plane, const RdmaToken& token,
                                                const RequestOrigin& origin);
  static Result<std::shared_ptr<Plane>> MakePlane(std::unique_ptr<Fabric> fabric,
                                                  const ServiceOptions& options);
  std::shared_ptr<Plane> plane() const;
  // The RC listener on `plane`'s fabric, handing connections to rc_sessions_.
  Result<std::unique_ptr<RcListener>> StartRcListener(Plane& plane, uint16_t port);
  // Frees everything made on the current plane's device (the listener and connections now, the
  // plane when the requests still running on it end).
  void Release(const std::string& why);
  // Opens the device again; false while it is not back.
  bool Reopen();

  mutable std::mutex mu_;  // guards plane_ and gone_reason_
  std::shared_ptr<Plane> plane_;
  std::string gone_reason_;         // why plane_ was released ("" while it was not)
  std::string unavailable_reason_;  // fixed at start when there is no plane
  ServiceOptions options_;
  ReopenFn reopen_;
  std::unique_ptr<DeviceMonitor> monitor_;  // with reopen_: the device monitor (device_monitor.h)
  std::mutex rc_mu_;  // guards rc_listener_ (the monitor replaces it)
  std::atomic<uint16_t> rc_port_{0};
  size_t per_client_cap_ = 1;
  std::mutex clients_mu_;
  std::map<std::string, size_t> active_by_client_;
  // Client hosts whose origin decline was logged (once each; at most kOriginLogMax of them).
  static constexpr size_t kOriginLogMax = 1024;
  std::set<std::string> origin_logged_;
  RdmaStats stats_;
  std::shared_ptr<RcSessions> rc_sessions_;
  std::unique_ptr<RcListener> rc_listener_;  // stops accepting before the table goes
};

}  // namespace rdmastor::rdma
