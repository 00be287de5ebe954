#include "admin/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/clock.h"

namespace rdmastor::admin {

namespace {

// Prometheus text format: HELP text escapes backslash and newline; label values also quotes.
std::string Escape(std::string_view v, bool quotes) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || (c == '"' && quotes)) out += '\\';
    if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string JoinKey(std::initializer_list<std::string_view> values) {
  std::string key;
  for (auto v : values) {
    key.append(v);
    key.push_back('\0');
  }
  return key;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) { return Escape(v, /*quotes=*/true); }

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Integral values (all counters, byte gauges) print exactly and without an exponent.
  if (v == std::trunc(v) && std::fabs(v) < 9.007199254740992e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  }
  return buf;
}

void Sampled::RenderLines(std::string& out, const std::string& name,
                          const std::string& labels) const {
  out += name;
  if (!labels.empty()) out += '{' + labels + '}';
  out += ' ' + FormatSampleValue(Sample()) + '\n';
}

void Histogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBuckets && seconds > kBounds[i]) ++i;
  if (i < kBuckets) buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(seconds, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::RenderLines(std::string& out, const std::string& name,
                            const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    // The bound as written in kBounds ("0.0025", not its 17-digit binary expansion).
    char le[32];
    std::snprintf(le, sizeof(le), "%g", kBounds[i]);
    out += name + "_bucket{" + sep + "le=\"" + le + "\"} " +
           FormatSampleValue(static_cast<double>(cumulative)) + '\n';
  }
  // +Inf last: every observation, read after the buckets so it is never below them.
  const uint64_t n = std::max(count(), cumulative);
  out += name + "_bucket{" + sep + "le=\"+Inf\"} " + FormatSampleValue(static_cast<double>(n)) +
         '\n';
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + ' ' + FormatSampleValue(sum_.load(std::memory_order_relaxed)) +
         '\n';
  out += name + "_count" + braces + ' ' + FormatSampleValue(static_cast<double>(n)) + '\n';
}

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> labels,
                       Scope scope, std::string_view type)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      scope_(scope),
      type_(type) {}

void FamilyBase::Clear() {
  std::unique_lock lock(mu_);
  children_.clear();
}

Sampled& FamilyBase::Child(std::initializer_list<std::string_view> values) {
  std::string key = JoinKey(values);
  {
    std::shared_lock lock(mu_);
    if (auto it = children_.find(key); it != children_.end()) return *it->second;
  }
  std::unique_lock lock(mu_);
  auto& slot = children_[key];
  if (!slot) slot = NewChild();
  return *slot;
}

void FamilyBase::Render(std::string& out) const {
  out += "# HELP " + name_ + " " + Escape(help_, /*quotes=*/false) + "\n";
  out += "# TYPE " + name_ + " " + type_ + "\n";
  std::shared_lock lock(mu_);
  for (const auto& [key, child] : children_) {
    std::string labels;
    size_t pos = 0;
    for (size_t i = 0; i < labels_.size(); ++i) {
      size_t end = key.find('\0', pos);
      if (end == std::string::npos) end = key.size();
      if (i) labels += ',';
      labels += labels_[i] + "=\"" +
                EscapeLabelValue(std::string_view(key).substr(pos, end - pos)) + "\"";
      pos = end + 1;
    }
    child->RenderLines(out, name_, labels);
  }
}

CounterFamily& Registry::AddCounter(std::string name, std::string help,
                                    std::vector<std::string> labels, Scope scope) {
  bool no_labels = labels.empty();
  auto fam =
      std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(labels), scope);
  auto& ref = *fam;
  if (no_labels) ref.With();  // a label-less family always shows its one sample, even at 0
  std::lock_guard lock(mu_);
  families_.push_back(std::move(fam));
  return ref;
}

GaugeFamily& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> labels,
                                Scope scope) {
  bool no_labels = labels.empty();
  auto fam =
      std::make_unique<GaugeFamily>(std::move(name), std::move(help), std::move(labels), scope);
  auto& ref = *fam;
  if (no_labels) ref.With();
  std::lock_guard lock(mu_);
  families_.push_back(std::move(fam));
  return ref;
}

HistogramFamily& Registry::AddHistogram(std::string name, std::string help,
                                        std::vector<std::string> labels, Scope scope) {
  auto fam = std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(labels),
                                               scope);
  auto& ref = *fam;
  std::lock_guard lock(mu_);
  families_.push_back(std::move(fam));
  return ref;
}

void Registry::AddScrapeHook(std::function<void()> hook) {
  std::lock_guard lock(mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::Render(Scope scope) {
  std::lock_guard lock(mu_);
  for (const auto& hook : hooks_) hook();
  std::string out;
  for (const auto& fam : families_) {
    if ((static_cast<uint8_t>(fam->scope()) & static_cast<uint8_t>(scope)) != 0) fam->Render(out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The server's families.

std::string_view TransportName(Transport t) { return t == Transport::kRdma ? "rdma" : "tcp"; }

Registry& GlobalRegistry() {
  static Registry registry;
  return registry;
}

namespace {

struct ServerFamilies {
  Registry& r = GlobalRegistry();
  // S3 API (both endpoints; single node: the cluster totals are this node's).
  CounterFamily& requests =
      r.AddCounter("minio_s3_requests_total", "Total number of S3 requests", {"api"});
  CounterFamily& errors =
      r.AddCounter("minio_s3_requests_errors_total",
                   "Total number of S3 requests with (4xx and 5xx) errors", {"api"});
  CounterFamily& errors_4xx =
      r.AddCounter("minio_s3_requests_4xx_errors_total",
                   "Total number of S3 requests with (4xx) errors", {"api"});
  CounterFamily& errors_5xx =
      r.AddCounter("minio_s3_requests_5xx_errors_total",
                   "Total number of S3 requests with (5xx) errors", {"api"});
  CounterFamily& ttfb = r.AddCounter("minio_s3_requests_ttfb_seconds_distribution",
                                     "Distribution of the time to first byte across API calls",
                                     {"api", "le"});
  CounterFamily& canceled =
      r.AddCounter("minio_s3_requests_canceled_total",
                   "Total number of S3 requests canceled by the client", {"api"});
  HistogramFamily& duration = r.AddHistogram(
      "rdmastor_s3_requests_duration_seconds",
      "Time from a request's header to the end of its response, by API", {"api"});
  GaugeFamily& inflight = r.AddGauge("minio_s3_requests_inflight_total",
                                     "Total number of requests currently running on a worker", {});
  GaugeFamily& waiting =
      r.AddGauge("minio_s3_requests_waiting_total",
                 "Total number of requests waiting for a worker (their client's share or a free one)",
                 {});
  GaugeFamily& bucket_objects = r.AddGauge(
      "minio_bucket_usage_object_total", "Total number of objects in a bucket", {"bucket"},
      Scope::kBucket);
  GaugeFamily& bucket_bytes = r.AddGauge("minio_bucket_usage_total_bytes",
                                         "Total bucket size in bytes", {"bucket"}, Scope::kBucket);
  CounterFamily& received = r.AddCounter(
      "minio_s3_traffic_received_bytes",
      "Total number of S3 payload bytes received, by transport (tcp: HTTP body, rdma: one-sided "
      "reads from client buffers)",
      {"transport"});
  CounterFamily& sent = r.AddCounter(
      "minio_s3_traffic_sent_bytes",
      "Total number of S3 payload bytes sent, by transport (tcp: HTTP body, rdma: one-sided "
      "writes into client buffers)",
      {"transport"});
  CounterFamily& rdma_replies = r.AddCounter(
      "minio_api_rdma_replies_total", "S3-over-RDMA replies by x-amz-rdma-reply code", {"code"});
  CounterFamily& internode_sent =
      r.AddCounter("minio_system_network_internode_sent_bytes_total",
                   "Total shard bytes sent to peers, by transport", {"transport"});
  CounterFamily& internode_recv =
      r.AddCounter("minio_system_network_internode_recv_bytes_total",
                   "Total shard bytes received from peers, by transport", {"transport"});
  CounterFamily& fallbacks = r.AddCounter(
      "minio_system_network_internode_rdma_fallbacks_total",
      "Inter-node transfers that should have used RDMA but went over TCP (peer RDMA path down)",
      {});
  CounterFamily& peer_fallbacks = r.AddCounter(
      "minio_system_network_internode_rdma_peer_fallbacks_total",
      "Inter-node transfers with a peer that should have used RDMA but went over TCP", {"peer"});
  CounterFamily& reason_fallbacks = r.AddCounter(
      "rdmastor_rdma_internode_fallbacks_total",
      "Inter-node transfers that should have used RDMA but went over TCP, by reason "
      "(fabric_unavailable: no fabric, device removed or port down; peer_degraded: the peer's "
      "RDMA path failed lately; transfer_failed: resent over TCP; busy: a ceiling stayed full)",
      {"reason"});
  CounterFamily& connections_opened = r.AddCounter(
      "rdmastor_rdma_internode_connections_opened_total",
      "Inter-node RDMA channels this node opened toward a peer's target, by peer", {"peer"});
  CounterFamily& peer_calls =
      r.AddCounter("rdmastor_peer_calls_total",
                   "Peer RPC calls this node sent to other nodes, by call", {"call"});
  CounterFamily& storage_syncs = r.AddCounter(
      "rdmastor_storage_syncs_total",
      "Syncs the storage layer issued on this node's drives, by kind (file: fsync of a file, dir: "
      "fsync of a directory, fs: syncfs of a file system, one per group commit)",
      {"kind"});
  CounterFamily& meta_cache = r.AddCounter(
      "rdmastor_meta_cache_reads_total",
      "Object metadata file reads of this node's drives, by result (hit: served from the metadata "
      "cache after one stat; miss: read from the drive)",
      {"result"});
  CounterFamily& rdma_errors = r.AddCounter("minio_system_network_internode_rdma_errors_total",
                                            "Failed inter-node RDMA transfers, by peer", {"peer"});
  CounterFamily& rdma_connects_refused = r.AddCounter(
      "rdmastor_internode_rdma_connects_refused_total",
      "Inter-node RDMA connections this node's target refused before creating a queue pair, by "
      "reason (no_proof, bad_proof, replay, unknown_node: docs/s3-over-rdma.md)",
      {"reason"});
  GaugeFamily& rdma_degraded =
      r.AddGauge("minio_system_network_internode_rdma_degraded",
                 "1 while the RDMA path to the peer is down and its shards go over TCP", {"peer"});
  GaugeFamily& rdma_degraded_peers =
      r.AddGauge("minio_system_network_internode_rdma_degraded_peers",
                 "Peers whose RDMA path is down (0: inter-node RDMA healthy or off)", {});
  CounterFamily& peer_sent =
      r.AddCounter("minio_system_network_internode_peer_sent_bytes_total",
                   "Shard bytes sent to a peer, by transport", {"peer", "transport"});
  CounterFamily& peer_recv =
      r.AddCounter("minio_system_network_internode_peer_recv_bytes_total",
                   "Shard bytes received from a peer, by transport", {"peer", "transport"});
  CounterFamily& peer_shards_sent =
      r.AddCounter("minio_system_network_internode_peer_shards_sent_total",
                   "Shards sent to a peer, by transport", {"peer", "transport"});
  CounterFamily& peer_shards_recv =
      r.AddCounter("minio_system_network_internode_peer_shards_recv_total",
                   "Shards received from a peer, by transport", {"peer", "transport"});
  GaugeFamily& rdma_fabric_ready = r.AddGauge(
      "rdmastor_rdma_fabric_ready",
      "1 while S3 over RDMA can serve; 0 when off, without a device, or degraded (port down, "
      "device failed): token requests get 501 meanwhile",
      {});
  CounterFamily& rdma_declined = r.AddCounter(
      "rdmastor_rdma_declined_total",
      "S3-over-RDMA token requests declined with 501 since start, by reason (origin: the token "
      "names another host than the requester's address and MINIO_RDMA_ALLOW does not list it)",
      {"reason"});
  CounterFamily& rdma_ceiling_hits = r.AddCounter(
      "rdmastor_rdma_ceiling_hits_total",
      "RDMA requests and inter-node shard pieces that found a concurrency ceiling full, by "
      "ceiling (transfers_max, transfers_per_client, internode_inflight, "
      "internode_inflight_bytes, internode_staging_buffers, channels: docs/settings.md) and "
      "outcome (waited: got in within the wait; refused: 503 SlowDown, or the piece went over "
      "TCP)",
      {"ceiling", "outcome"});
  GaugeFamily& rdma_rc_connections = r.AddGauge(
      "rdmastor_rdma_rc_connections",
      "S3-over-RDMA RC connections clients hold open now (docs/s3-over-rdma.md, RC transport)", {});
  GaugeFamily& rdma_rc_events = r.AddGauge(
      "rdmastor_rdma_rc_connection_events",
      "RC connections since start, by what happened to them (admitted, refused at the limits, "
      "closed idle, closed dead: the client went away, closed dirty: a transfer failed midway, "
      "foreign: requests refused for naming another source's connection)",
      {"event"});
  std::mutex degraded_mu;
  std::set<std::string, std::less<>> degraded_peers;
  // Drives and health.
  GaugeFamily& drives_online =
      r.AddGauge("minio_cluster_drive_online_total", "Total drives online in this cluster", {},
                 Scope::kCluster);
  GaugeFamily& drives_offline =
      r.AddGauge("minio_cluster_drive_offline_total", "Total drives offline in this cluster", {},
                 Scope::kCluster);
  GaugeFamily& drives_total =
      r.AddGauge("minio_cluster_drive_total", "Total drives in this cluster", {}, Scope::kCluster);
  GaugeFamily& capacity_total =
      r.AddGauge("minio_cluster_capacity_raw_total_bytes", "Total capacity online in the cluster",
                 {}, Scope::kCluster);
  GaugeFamily& capacity_free =
      r.AddGauge("minio_cluster_capacity_raw_free_bytes",
                 "Total free capacity online in the cluster", {}, Scope::kCluster);
  GaugeFamily& health =
      r.AddGauge("minio_cluster_health_status", "1 when the cluster has write quorum, 0 otherwise",
                 {}, Scope::kCluster);
  GaugeFamily& drive_online =
      r.AddGauge("rdmastor_node_drive_online", "1 when the drive is online (writable), 0 otherwise",
                 {"drive"}, Scope::kNode);
  GaugeFamily& drive_total = r.AddGauge("minio_node_drive_total_bytes", "Total storage on a drive",
                                        {"drive"}, Scope::kNode);
  GaugeFamily& drive_free = r.AddGauge(
      "minio_node_drive_free_bytes", "Total storage available on a drive", {"drive"}, Scope::kNode);
  GaugeFamily& drive_used = r.AddGauge("minio_node_drive_used_bytes",
                                       "Total storage used on a drive", {"drive"}, Scope::kNode);
  // Healing.
  GaugeFamily& heal_running =
      r.AddGauge("rdmastor_heal_running", "1 while healing runs", {}, Scope::kNode);
  GaugeFamily& heal_scanned =
      r.AddGauge("minio_heal_objects_total", "Objects scanned by the current or last heal run", {},
                 Scope::kNode);
  GaugeFamily& heal_healed =
      r.AddGauge("minio_heal_objects_heal_total", "Objects healed by the current or last heal run",
                 {}, Scope::kNode);
  GaugeFamily& heal_failed =
      r.AddGauge("minio_heal_objects_errors_total",
                 "Objects the current or last heal run failed to heal", {}, Scope::kNode);
  GaugeFamily& heal_shards =
      r.AddGauge("rdmastor_heal_shards_written_total",
                 "Drive copies (shards) rewritten by the current or last heal run", {},
                 Scope::kNode);
  GaugeFamily& heal_queue =
      r.AddGauge("rdmastor_heal_queue_size",
                 "Objects queued for healing by degraded reads and not yet healed", {},
                 Scope::kNode);
  CounterFamily& healed_objects =
      r.AddCounter("rdmastor_healed_objects_total",
                   "Objects healed since the server started (heal runs and heal-on-read)", {},
                   Scope::kNode);
  CounterFamily& healed_shards =
      r.AddCounter("rdmastor_healed_shards_total",
                   "Drive copies (shards) rewritten since the server started", {}, Scope::kNode);
  CounterFamily& drives_replaced =
      r.AddCounter("rdmastor_drives_replaced_total",
                   "Replaced drives (empty directories where formatted drives were) formatted into "
                   "their slot since the server started",
                   {}, Scope::kNode);
  GaugeFamily& heal_last = r.AddGauge("minio_heal_time_last_activity_nano_seconds",
                                      "Time elapsed (in nano seconds) since last self healing "
                                      "activity",
                                      {}, Scope::kNode);
  // The lifecycle scanner (s3/lifecycle_scanner.h): what this node did since it started.
  GaugeFamily& lifecycle_running =
      r.AddGauge("rdmastor_lifecycle_running", "1 while this node runs a lifecycle cycle", {},
                 Scope::kNode);
  CounterFamily& lifecycle_cycles =
      r.AddCounter("rdmastor_lifecycle_cycles_total",
                   "Lifecycle cycles this node ran to the end since it started", {}, Scope::kNode);
  CounterFamily& lifecycle_scanned =
      r.AddCounter("rdmastor_lifecycle_objects_scanned_total",
                   "Object versions the lifecycle scanner looked at on this node", {},
                   Scope::kNode);
  CounterFamily& lifecycle_expired =
      r.AddCounter("rdmastor_lifecycle_objects_expired_total",
                   "Object versions expired by lifecycle rules on this node (removed, or given a "
                   "delete marker; delete markers removed)",
                   {}, Scope::kNode);
  CounterFamily& lifecycle_aborted =
      r.AddCounter("rdmastor_lifecycle_uploads_aborted_total",
                   "Multipart uploads aborted by AbortIncompleteMultipartUpload rules", {},
                   Scope::kNode);
  CounterFamily& lifecycle_locked =
      r.AddCounter("rdmastor_lifecycle_locked_kept_total",
                   "Object versions due for expiry but kept under Object Lock", {}, Scope::kNode);
  CounterFamily& lifecycle_errors =
      r.AddCounter("rdmastor_lifecycle_errors_total",
                   "Lifecycle actions that failed (logged; tried again next cycle)", {},
                   Scope::kNode);
  GaugeFamily& lifecycle_last_end =
      r.AddGauge("rdmastor_lifecycle_last_cycle_end_seconds",
                 "When the last lifecycle cycle of this node ended (unix seconds; 0: none yet)", {},
                 Scope::kNode);
  // Process.
  GaugeFamily& start_time =
      r.AddGauge("minio_node_process_starttime_seconds",
                 "Start time for the server process (unix seconds)", {}, Scope::kNode);
  GaugeFamily& uptime = r.AddGauge("minio_node_process_uptime_seconds",
                                   "Uptime for the server process in seconds", {}, Scope::kNode);
  // MinIO's process families (a MinIO dashboard's CPU, memory and descriptor panels).
  GaugeFamily& cpu =
      r.AddGauge("minio_node_process_cpu_total_seconds",
                 "Total user and system CPU time spent in seconds", {}, Scope::kNode);
  GaugeFamily& resident = r.AddGauge("minio_node_process_resident_memory_bytes",
                                     "Resident memory size in bytes", {}, Scope::kNode);
  GaugeFamily& virtual_mem = r.AddGauge("minio_node_process_virtual_memory_bytes",
                                        "Virtual memory size in bytes", {}, Scope::kNode);
  GaugeFamily& fds_open = r.AddGauge("minio_node_file_descriptor_open_total",
                                     "Total number of open file descriptors by the MinIO Server "
                                     "process",
                                     {}, Scope::kNode);
  GaugeFamily& fds_limit = r.AddGauge("minio_node_file_descriptor_limit_total",
                                      "Limit on total number of open file descriptors for the "
                                      "MinIO Server process",
                                      {}, Scope::kNode);

  std::atomic<int64_t> heal_last_ns{0};
  int64_t started_ns = NowNs();

  // CPU time, memory and descriptors of this process, from getrusage, /proc/self/statm and
  // /proc/self/fd (Linux).
  void SampleProcess() {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
      auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
      cpu.With().Set(secs(ru.ru_utime) + secs(ru.ru_stime));
    }
    if (std::FILE* f = std::fopen("/proc/self/statm", "re")) {
      unsigned long long size = 0, rss = 0;
      if (std::fscanf(f, "%llu %llu", &size, &rss) == 2) {
        const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
        virtual_mem.With().Set(static_cast<double>(size) * page);
        resident.With().Set(static_cast<double>(rss) * page);
      }
      std::fclose(f);
    }
    std::error_code ec;
    double open = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      ++open;
    if (!ec) fds_open.With().Set(open - 1);  // less the directory being listed
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
      fds_limit.With().Set(lim.rlim_cur == RLIM_INFINITY ? 0.0 : static_cast<double>(lim.rlim_cur));
  }

  ServerFamilies() {
    // Present with zeros from the start, so dashboards and alerts see the series.
    for (auto t : {Transport::kTcp, Transport::kRdma}) {
      received.With({TransportName(t)});
      sent.With({TransportName(t)});
      internode_sent.With({TransportName(t)});
      internode_recv.With({TransportName(t)});
    }
    for (auto code : {"200", "206", "501"}) rdma_replies.With({code});
    for (auto* f : {&heal_running, &heal_scanned, &heal_healed, &heal_failed, &heal_shards,
                    &heal_queue})
      f->With();
    for (auto* f : {&healed_objects, &healed_shards, &drives_replaced}) f->With();
    for (auto* f : {&lifecycle_running, &lifecycle_last_end}) f->With();
    for (auto* f : {&lifecycle_cycles, &lifecycle_scanned, &lifecycle_expired, &lifecycle_aborted,
                    &lifecycle_locked, &lifecycle_errors})
      f->With();
    start_time.With().Set(static_cast<double>(started_ns / 1'000'000'000));
    r.AddScrapeHook([this] {
      int64_t now = NowNs();
      uptime.With().Set(static_cast<double>((now - started_ns) / 1'000'000'000));
      SampleProcess();
      int64_t last = heal_last_ns.load(std::memory_order_relaxed);
      heal_last.With().Set(last == 0 ? 0.0 : static_cast<double>(now - last));
    });
  }
};

ServerFamilies& Families() {
  static ServerFamilies families;
  return families;
}

// Registered before main() so both endpoints always list every family.
[[maybe_unused]] const ServerFamilies& kEagerFamilies = Families();

}  // namespace

void RecordS3Request(std::string_view api, int status, bool canceled, bool rdma_declined) {
  auto& f = Families();
  f.requests.With({api}).Inc();
  if (canceled) f.canceled.With({api}).Inc();
  if (status >= 400 && !rdma_declined) {
    f.errors.With({api}).Inc();
    (status >= 500 ? f.errors_5xx : f.errors_4xx).With({api}).Inc();
  }
}

void RecordS3Ttfb(std::string_view api, double seconds) {
  // MinIO's buckets; each request counts in every bucket at or above its time (cumulative).
  static constexpr std::pair<double, std::string_view> kBuckets[] = {
      {0.05, "0.05"}, {0.1, "0.1"}, {0.25, "0.25"}, {0.5, "0.5"}, {1, "1"},
      {2.5, "2.5"},   {5, "5"},     {10, "10"},     {HUGE_VAL, "+Inf"}};
  auto& f = Families().ttfb;
  for (const auto& [le, name] : kBuckets)
    if (seconds <= le) f.With({api, name}).Inc();
}

void RecordS3Duration(std::string_view api, double seconds) {
  Families().duration.With({api}).Observe(seconds);
}

void RequestQueued() { Families().waiting.With().Add(1); }

void RequestStarted() {
  auto& f = Families();
  f.waiting.With().Add(-1);
  f.inflight.With().Add(1);
}

void RequestFinished() { Families().inflight.With().Add(-1); }

void SetBucketUsage(const std::vector<BucketUsage>& usage) {
  auto& f = Families();
  f.bucket_objects.Clear();
  f.bucket_bytes.Clear();
  for (const auto& u : usage) {
    f.bucket_objects.With({u.bucket}).Set(static_cast<double>(u.objects));
    f.bucket_bytes.With({u.bucket}).Set(static_cast<double>(u.bytes));
  }
}

void AddS3Traffic(Transport t, uint64_t received, uint64_t sent) {
  auto& f = Families();
  if (received) f.received.With({TransportName(t)}).Inc(received);
  if (sent) f.sent.With({TransportName(t)}).Inc(sent);
}

void RecordRdmaReply(int code) { Families().rdma_replies.With({std::to_string(code)}).Inc(); }

void AddInternodeTraffic(Transport t, uint64_t sent, uint64_t received) {
  auto& f = Families();
  if (sent) f.internode_sent.With({TransportName(t)}).Inc(sent);
  if (received) f.internode_recv.With({TransportName(t)}).Inc(received);
}

void RecordInternodeFallback(std::string_view peer, std::string_view reason) {
  auto& f = Families();
  f.fallbacks.With().Inc();
  f.peer_fallbacks.With({peer}).Inc();
  f.reason_fallbacks.With({reason}).Inc();
}

void RecordInternodeConnectionOpened(std::string_view peer) {
  Families().connections_opened.With({peer}).Inc();
}

void AddInternodePeerShard(std::string_view peer, Transport t, uint64_t sent, uint64_t received) {
  auto& f = Families();
  AddInternodeTraffic(t, sent, received);
  auto tn = TransportName(t);
  if (sent) {
    f.peer_sent.With({peer, tn}).Inc(sent);
    f.peer_shards_sent.With({peer, tn}).Inc();
  }
  if (received) {
    f.peer_recv.With({peer, tn}).Inc(received);
    f.peer_shards_recv.With({peer, tn}).Inc();
  }
}

void RecordPeerCall(std::string_view call) { Families().peer_calls.With({call}).Inc(); }

void SetStorageSyncs(uint64_t file, uint64_t dir, uint64_t fs) {
  auto& f = Families();
  // The storage layer's totals only grow.
  for (auto [kind, total] : {std::pair{"file", file}, std::pair{"dir", dir}, std::pair{"fs", fs}})
    f.storage_syncs.With({kind}).RaiseTo(total);
}

void SetMetaCacheReads(uint64_t hits, uint64_t misses) {
  auto& f = Families();
  f.meta_cache.With({"hit"}).RaiseTo(hits);
  f.meta_cache.With({"miss"}).RaiseTo(misses);
}

void RecordInternodeRdmaError(std::string_view peer) { Families().rdma_errors.With({peer}).Inc(); }

void RecordInternodeConnectRefused(std::string_view reason) {
  Families().rdma_connects_refused.With({reason}).Inc();
}

void SetInternodeRdmaDegraded(std::string_view peer, bool degraded) {
  auto& f = Families();
  f.rdma_degraded.With({peer}).Set(degraded ? 1 : 0);
  std::lock_guard lock(f.degraded_mu);
  if (degraded)
    f.degraded_peers.emplace(peer);
  else if (auto it = f.degraded_peers.find(peer); it != f.degraded_peers.end())
    f.degraded_peers.erase(it);
  f.rdma_degraded_peers.With().Set(static_cast<double>(f.degraded_peers.size()));
}

void SetRdmaFabricReady(bool ready) { Families().rdma_fabric_ready.With().Set(ready ? 1 : 0); }

void SetRdmaOriginDeclines(uint64_t n) {
  Families().rdma_declined.With({"origin"}).RaiseTo(n);
}

void RecordRdmaCeilingHit(std::string_view ceiling, bool refused) {
  Families().rdma_ceiling_hits.With({ceiling, refused ? "refused" : "waited"}).Inc();
}

void SetRdmaCeilingHits(std::string_view ceiling, bool refused, uint64_t total) {
  Families().rdma_ceiling_hits.With({ceiling, refused ? "refused" : "waited"}).RaiseTo(total);
}

void SetRdmaRc(const RdmaRcCounts& c) {
  auto& f = Families();
  f.rdma_rc_connections.With().Set(static_cast<double>(c.open));
  for (auto [event, n] : {std::pair<const char*, uint64_t>{"admitted", c.admitted},
                          {"refused", c.refused},
                          {"closed_idle", c.closed_idle},
                          {"closed_dead", c.closed_dead},
                          {"closed_dirty", c.closed_dirty},
                          {"foreign", c.foreign}})
    f.rdma_rc_events.With({event}).Set(static_cast<double>(n));
}

void SetHealProgress(const HealProgress& p) {
  auto& f = Families();
  f.heal_running.With().Set(p.running ? 1 : 0);
  f.heal_scanned.With().Set(static_cast<double>(p.objects_scanned));
  f.heal_healed.With().Set(static_cast<double>(p.objects_healed));
  f.heal_failed.With().Set(static_cast<double>(p.objects_failed));
  f.heal_shards.With().Set(static_cast<double>(p.shards_written));
  f.heal_queue.With().Set(static_cast<double>(p.queue_size));
  f.heal_last_ns.store(p.last_activity_ns, std::memory_order_relaxed);
  // Totals that only grow.
  for (auto [family, total] : {std::pair{&f.healed_objects, p.total_objects_healed},
                               std::pair{&f.healed_shards, p.total_shards_written},
                               std::pair{&f.drives_replaced, p.drives_replaced}})
    family->With().RaiseTo(total);
}

void SetLifecycleProgress(const LifecycleProgress& p) {
  auto& f = Families();
  f.lifecycle_running.With().Set(p.running ? 1 : 0);
  f.lifecycle_last_end.With().Set(static_cast<double>(p.last_cycle_end_ns / 1'000'000'000));
  for (auto [family, total] : {std::pair{&f.lifecycle_cycles, p.cycles},
                               std::pair{&f.lifecycle_scanned, p.objects_scanned},
                               std::pair{&f.lifecycle_expired, p.objects_expired},
                               std::pair{&f.lifecycle_aborted, p.uploads_aborted},
                               std::pair{&f.lifecycle_locked, p.locked_kept},
                               std::pair{&f.lifecycle_errors, p.errors}})
    family->With().RaiseTo(total);
}

void SetDriveSamples(const std::vector<DriveSample>& drives, bool write_quorum) {
  auto& f = Families();
  double online = 0, total = 0, free = 0;
  for (const auto& d : drives) {
    f.drive_online.With({d.path}).Set(d.online ? 1 : 0);
    f.drive_total.With({d.path}).Set(static_cast<double>(d.total_bytes));
    f.drive_free.With({d.path}).Set(static_cast<double>(d.free_bytes));
    f.drive_used.With({d.path}).Set(static_cast<double>(d.total_bytes - d.free_bytes));
    if (!d.online) continue;
    online += 1;
    total += static_cast<double>(d.total_bytes);
    free += static_cast<double>(d.free_bytes);
  }
  f.drives_online.With().Set(online);
  f.drives_offline.With().Set(static_cast<double>(drives.size()) - online);
  f.drives_total.With().Set(static_cast<double>(drives.size()));
  f.capacity_total.With().Set(total);
  f.capacity_free.With().Set(free);
  f.health.With().Set(write_quorum ? 1 : 0);
}

}  // namespace rdmastor::admin
