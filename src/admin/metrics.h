// Prometheus metrics: a small registry of labelled counters and gauges, the families the server
// exposes (MinIO v2 names, so dashboards carry over), and text exposition (format 0.0.4).
//
// Cost on the request path: a label lookup takes a shared (reader) lock and one map search; the
// increment itself is a relaxed atomic add. Hot callers may keep the returned reference: a
// Counter/Gauge never moves once created.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rdmastor::admin {

// Which endpoint shows a family: /minio/v2/metrics/cluster, /minio/v2/metrics/node, both, or
// /minio/v2/metrics/bucket alone.
enum class Scope : uint8_t { kCluster = 1, kNode = 2, kBoth = 3, kBucket = 4 };

// What a family renders: one sample per child (a histogram: its buckets, sum and count).
class Sampled {
 public:
  virtual ~Sampled() = default;
  virtual double Sample() const = 0;
  // Appends the child's sample lines; `labels` is `k="v",...` (maybe empty).
  virtual void RenderLines(std::string& out, const std::string& name,
                           const std::string& labels) const;
};

class Counter final : public Sampled {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  // Up to `total` (never down): a counter that mirrors a total kept elsewhere, sampled at scrapes.
  void RaiseTo(uint64_t total) {
    uint64_t shown = v_.load(std::memory_order_relaxed);
    while (shown < total && !v_.compare_exchange_weak(shown, total, std::memory_order_relaxed)) {
    }
  }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }
  double Sample() const override { return static_cast<double>(value()); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge final : public Sampled {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  void Add(double d) { v_.fetch_add(d, std::memory_order_relaxed); }
  double value() const { return v_.load(std::memory_order_relaxed); }
  double Sample() const override { return value(); }

 private:
  std::atomic<double> v_{0};
};

// A Prometheus histogram of seconds with fixed buckets (1 ms to 10 s, for request latency):
// cumulative _bucket{le} lines, _sum and _count. Observe is lock-free.
class Histogram final : public Sampled {
 public:
  static constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,  0.5,    1,     2.5,  5,     10};
  static constexpr size_t kBuckets = std::size(kBounds);
  void Observe(double seconds);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double Sample() const override { return static_cast<double>(count()); }
  void RenderLines(std::string& out, const std::string& name,
                   const std::string& labels) const override;

 private:
  std::atomic<uint64_t> buckets_[kBuckets] = {};  // per bucket, not cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// A metric name with fixed label names; one child per distinct tuple of label values.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> labels, Scope scope,
             std::string_view type);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  Scope scope() const { return scope_; }
  // Appends "# HELP", "# TYPE" and one sample line per child.
  void Render(std::string& out) const;
  // Drops every child (a family whose label values come and go, e.g. buckets).
  void Clear();

 protected:
  virtual std::unique_ptr<Sampled> NewChild() const = 0;
  Sampled& Child(std::initializer_list<std::string_view> values);

 private:
  std::string name_, help_;
  std::vector<std::string> labels_;
  Scope scope_;
  std::string type_;
  mutable std::shared_mutex mu_;
  // Key: label values joined by '\0'. Children never move (heap allocated).
  std::map<std::string, std::unique_ptr<Sampled>, std::less<>> children_;
};

template <class M>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help, std::vector<std::string> labels, Scope scope)
      : FamilyBase(std::move(name), std::move(help), std::move(labels), scope,
                   std::is_same_v<M, Counter>     ? "counter"
                   : std::is_same_v<M, Histogram> ? "histogram"
                                                  : "gauge") {}
  // The child for these label values (one per label name, in order); created on first use.
  M& With(std::initializer_list<std::string_view> values = {}) {
    return static_cast<M&>(Child(values));
  }

 private:
  std::unique_ptr<Sampled> NewChild() const override { return std::make_unique<M>(); }
};
using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  CounterFamily& AddCounter(std::string name, std::string help, std::vector<std::string> labels,
                            Scope scope = Scope::kBoth);
  GaugeFamily& AddGauge(std::string name, std::string help, std::vector<std::string> labels,
                        Scope scope = Scope::kBoth);
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<std::string> labels, Scope scope = Scope::kBoth);
  // Runs before every Render(): refreshes gauges that are sampled rather than pushed (drive
  // space, health). Hooks run one scrape at a time.
  void AddScrapeHook(std::function<void()> hook);
  // Prometheus text exposition of every family visible at `scope`, in registration order.
  std::string Render(Scope scope);

 private:
  std::mutex mu_;  // guards families_/hooks_ changes and serialises scrapes
  std::vector<std::unique_ptr<FamilyBase>> families_;
  std::vector<std::function<void()>> hooks_;
};

// Prometheus text format helpers (exposed for tests).
std::string EscapeLabelValue(std::string_view v);  // \ " and newline
std::string FormatSampleValue(double v);           // integers without a fraction, NaN, +Inf

// ---------------------------------------------------------------------------------------------
// The server's families, registered once in the process-wide registry.

enum class Transport { kTcp, kRdma };
std::string_view TransportName(Transport t);  // "tcp" | "rdma"

Registry& GlobalRegistry();

// One finished S3 request: counted under its API name (MinIO's: "PutObject", "GetObject", ...)
// and status class. `canceled`: the client went away before a complete response.
// `rdma_declined`: a 501 with x-amz-rdma-reply: 501 (the server does not serve this token over
// RDMA; the client retries over TCP): counted as a request, not as an error, because
// minio_api_rdma_replies_total{code="501"} already counts it (a TCP-only server meeting a default
// client is not failing).
void RecordS3Request(std::string_view api, int status, bool canceled, bool rdma_declined = false);
// Time to first byte (the response head) of one S3 request, in seconds:
// minio_s3_requests_ttfb_seconds_distribution{api,le}, cumulative as MinIO's.
void RecordS3Ttfb(std::string_view api, double seconds);
// The whole time of one S3 request (until its response is sent), in seconds:
// rdmastor_s3_requests_duration_seconds{api}, a Prometheus histogram (_bucket, _sum, _count).
void RecordS3Duration(std::string_view api, double seconds);
// HTTP requests handed to the worker pool: waiting for a worker (their client's share of the
// workers, or a free one) and then running on one: minio_s3_requests_waiting_total and
// minio_s3_requests_inflight_total (every request the workers serve: S3, admin, metrics).
void RequestQueued();    // waiting + 1
void RequestStarted();   // waiting - 1, in flight + 1
void RequestFinished();  // in flight - 1
// Objects and bytes per bucket (minio_bucket_usage_object_total, minio_bucket_usage_total_bytes
// on /minio/v2/metrics/bucket), replacing the last sample (deleted buckets disappear).
struct BucketUsage {
  std::string bucket;
  uint64_t objects = 0, bytes = 0;
};
void SetBucketUsage(const std::vector<BucketUsage>& usage);
// Request/response payload bytes of S3 traffic by the path they took.
void AddS3Traffic(Transport t, uint64_t received, uint64_t sent);
// One S3-over-RDMA reply (x-amz-rdma-reply code: 200, 206, 501, ...).
void RecordRdmaReply(int code);
// Shard bytes exchanged with peers, by transport.
void AddInternodeTraffic(Transport t, uint64_t sent, uint64_t received);
// A transfer to `peer` that should have used RDMA went over TCP (the loud fallback). Counted in
// the node total, per peer and per reason: "fabric_unavailable" (no fabric, its device removed
// or its port down), "peer_degraded" (the peer's RDMA path failed lately), "transfer_failed"
// (this transfer failed and was resent), "busy" (a ceiling stayed full).
void RecordInternodeFallback(std::string_view peer, std::string_view reason);
// One shard exchanged with `peer` over transport `t` (the caller of a peer RPC counts it): bytes
// and shards per peer and transport, and the node totals of AddInternodeTraffic.
void AddInternodePeerShard(std::string_view peer, Transport t, uint64_t sent, uint64_t received);
// An inter-node RDMA channel opened toward `peer` (the serving side connects to the calling
// node's target): with persistent channels this stays at most peers x MINIO_RDMA_CHANNELS unless
// channels fail or idle out.
void RecordInternodeConnectionOpened(std::string_view peer);
// A failed inter-node RDMA transfer with `peer` (either role).
void RecordInternodeRdmaError(std::string_view peer);
// An inter-node RDMA connection this node's target refused before creating anything for it
// (issue 37 item 9), by reason: "no_proof" (none sent), "bad_proof" (malformed, stale or a MAC
// that does not verify), "replay" (its nonce was used), "unknown_node" (a node this node exposed
// nothing to).
void RecordInternodeConnectRefused(std::string_view reason);
// One peer RPC this node sent (storage call of the table in cluster/wire.h, lock call, config),
// by its wire name: calls per PUT/GET are counted from it.
void RecordPeerCall(std::string_view call);

// The storage layer's sync totals (storage::fsutil::GetSyncCounts), set before every scrape.
void SetStorageSyncs(uint64_t file, uint64_t dir, uint64_t fs);
// The metadata cache's totals (storage::MetaCacheReads), set before every scrape.
void SetMetaCacheReads(uint64_t hits, uint64_t misses);
// Whether `peer`'s RDMA path is down (traffic to it falls back to TCP); also keeps the count of
// degraded peers.
void SetInternodeRdmaDegraded(std::string_view peer, bool degraded);
// Whether S3 over RDMA can serve now (rdmastor_rdma_fabric_ready): 0 when it is off, has no
// device, or its fabric is degraded (port down, device failed and not yet reopened).
void SetRdmaFabricReady(bool ready);
// S3 over RDMA on RC: connections open now and what happened to them since start
// (rdma::RcStats), set before every scrape.
struct RdmaRcCounts {
  uint64_t open = 0, admitted = 0, refused = 0, closed_idle = 0, closed_dead = 0, closed_dirty = 0,
           foreign = 0;
};
void SetRdmaRc(const RdmaRcCounts& counts);
// S3-over-RDMA requests declined (501) for their token's origin since start
// (the counter rdmastor_rdma_declined_total{reason="origin"}), brought up to it before every scrape.
void SetRdmaOriginDeclines(uint64_t n);
// A request or shard piece found an RDMA concurrency ceiling full (rdma/ceilings.h; `ceiling`
// names it as rdmastor_rdma_ceiling_hits_total's label does): it waited and got in, or it was
// refused (503 SlowDown; a shard piece went over TCP).
void RecordRdmaCeilingHit(std::string_view ceiling, bool refused);
// The same counter raised to `total` (the S3-over-RDMA service's own counts, before a scrape).
void SetRdmaCeilingHits(std::string_view ceiling, bool refused, uint64_t total);

// Healing progress, set from the heal engine's state (the server samples it at every scrape;
// cheap: a few stores). Shown on /minio/v2/metrics/node.
struct HealProgress {
  // The current or last heal walk (admin heal, replaced-drive heal): gauges.
  bool running = false;          // rdmastor_heal_running
  uint64_t objects_scanned = 0;  // minio_heal_objects_total
  uint64_t objects_healed = 0;   // minio_heal_objects_heal_total
  uint64_t objects_failed = 0;   // minio_heal_objects_errors_total
  uint64_t shards_written = 0;   // rdmastor_heal_shards_written_total (drive copies rewritten)
  int64_t last_activity_ns = 0;  // unix ns of the last healed item; 0 = never
  uint64_t queue_size = 0;       // rdmastor_heal_queue_size: objects queued by degraded reads
  // Since the server started (walks plus heal-on-read): counters, never decreasing.
  uint64_t total_objects_healed = 0;  // rdmastor_healed_objects_total
  uint64_t total_shards_written = 0;  // rdmastor_healed_shards_total
  uint64_t drives_replaced = 0;       // rdmastor_drives_replaced_total
};
void SetHealProgress(const HealProgress& p);

// The lifecycle scanner's counts on this node (s3/lifecycle_scanner.h), sampled at every scrape.
struct LifecycleProgress {
  bool running = false;           // rdmastor_lifecycle_running
  uint64_t cycles = 0;            // rdmastor_lifecycle_cycles_total
  uint64_t objects_scanned = 0;   // rdmastor_lifecycle_objects_scanned_total
  uint64_t objects_expired = 0;   // rdmastor_lifecycle_objects_expired_total
  uint64_t uploads_aborted = 0;   // rdmastor_lifecycle_uploads_aborted_total
  uint64_t locked_kept = 0;       // rdmastor_lifecycle_locked_kept_total
  uint64_t errors = 0;            // rdmastor_lifecycle_errors_total
  int64_t last_cycle_end_ns = 0;  // rdmastor_lifecycle_last_cycle_end_seconds
};
void SetLifecycleProgress(const LifecycleProgress& p);

// Drive state as last sampled (see admin/health.h, which samples at every scrape).
struct DriveSample {
  std::string path;
  bool online = false;
  uint64_t total_bytes = 0, free_bytes = 0;
};
void SetDriveSamples(const std::vector<DriveSample>& drives, bool write_quorum);

}  // namespace rdmastor::admin
