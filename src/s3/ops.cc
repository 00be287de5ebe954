#include "s3/ops.h"

#include <chrono>
#include <ctime>
#include <mutex>

#include "admin/jwt.h"
#include "admin/metrics.h"
#include "common/clock.h"
#include "common/error_code.h"
#include "common/splice.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

void Send(ResponseSink& sink, HttpResponseHead head, const std::string& body,
          const char* content_type) {
  if (!body.empty()) head.Set("Content-Type", content_type);
  head.content_length = body.size();
  if (sink.SendHead(head) && !body.empty()) sink.Write(body.data(), body.size());
}

void SendError(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
               const Error& err) {
  const auto& info = GetErrorInfo(err.code);
  auto head = BaseHead(request_id, info.http_status);
  std::string body;
  if (req.method != "HEAD") {
    body = ErrorXml(info.code, err.message.empty() ? std::string(info.message) : err.message,
                    req.raw_path, request_id, err.details);
  }
  Send(sink, std::move(head), body, "application/xml");
}

void ServeHealth(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                 const OpsOptions& opts, bool need_write) {
  auto head = BaseHead(request_id, 200);
  if (opts.cluster_health) {
    auto h = opts.cluster_health();
    bool ok = need_write ? h.HasWriteQuorum() : h.HasReadQuorum();
    head.status = ok ? 200 : 503;
    // MinIO tells load balancers the quorum it needs.
    if (need_write) head.Set("X-Minio-Write-Quorum", std::to_string(h.write_quorum));
  }
  Send(sink, std::move(head), "", "");
}

// Objects and bytes of every bucket (the latest version of each key), walked through the store
// for /minio/v2/metrics/bucket. MinIO's scanner keeps these in the background; here a scrape walks
// the namespace, at most once a second however often scrapes come (docs/runbook.md says to
// scrape this endpoint rarely on large deployments). A bucket that cannot be listed is left out.
void SampleBucketUsage(storage::ObjectLayer& store) {
  static std::mutex mu;
  static std::chrono::steady_clock::time_point last;
  std::lock_guard lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (last.time_since_epoch().count() != 0 && now - last < std::chrono::seconds(1)) return;
  std::vector<admin::BucketUsage> usage;
  auto buckets = store.ListBuckets();
  if (buckets.ok()) {
    for (const auto& b : *buckets) {
      admin::BucketUsage u{b.name};
      storage::ListOptions lo;
      bool listed = true;
      // Bounded by the namespace: each page moves past its last key.
      for (;;) {
        auto page = store.ListObjects(b.name, lo);
        if (!page.ok()) {
          listed = false;
          break;
        }
        for (const auto& o : page->objects) {
          ++u.objects;
          u.bytes += o.size;
        }
        if (!page->truncated || page->next_marker.empty() || page->next_marker <= lo.start_after)
          break;
        lo.start_after = page->next_marker;
      }
      if (listed) usage.push_back(std::move(u));
    }
  }
  admin::SetBucketUsage(usage);
  last = std::chrono::steady_clock::now();
}

}  // namespace

void SendOpsError(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                  const Error& err) {
  SendError(req, sink, request_id, err);
}

HttpResponseHead BaseHead(const std::string& request_id, int status) {
  HttpResponseHead head;
  head.status = status;
  head.Set("Server", "rdmastor");
  head.Set("x-amz-request-id", request_id);
  head.Set("x-amz-id-2", request_id);
  head.Set("Date", HttpDate(NowNs()));
  return head;
}

bool ServeOps(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
              const OpsOptions& opts) {
  const std::string& p = req.raw_path;
  bool health = p == "/minio/health/live" || p == "/minio/health/ready" ||
                p == "/minio/health/cluster" || p == "/minio/health/cluster/read";
  const bool bucket_metrics = p == "/minio/v2/metrics/bucket" && opts.store != nullptr;
  bool metrics =
      p == "/minio/v2/metrics/cluster" || p == "/minio/v2/metrics/node" || bucket_metrics;
  if (!health && !metrics &&
      (p.starts_with("/minio/v2/metrics/") || p == "/minio/metrics/v3" ||
       p.starts_with("/minio/metrics/v3/"))) {
    // MinIO's other metrics endpoints (resource, v3): a clear 404 rather than the S3 layer's 403
    // (bucket "minio"), so a scrape configured for them says what to change.
    Send(sink, BaseHead(request_id, 404),
         p + " is not served by rdmastor: scrape /minio/v2/metrics/cluster, "
             "/minio/v2/metrics/node (process, drive, S3 and RDMA families) and "
             "/minio/v2/metrics/bucket (bucket usage); docs/runbook.md, \"Monitor\"\n",
         "text/plain; charset=utf-8");
    return true;
  }
  if (!health && !metrics) return false;
  if (req.method != "GET" && req.method != "HEAD") {
    SendError(req, sink, request_id, MakeError(ErrorCode::kMethodNotAllowed));
    return true;
  }
  // Health probes are unauthenticated, as in MinIO.
  if (p == "/minio/health/cluster" || p == "/minio/health/cluster/read") {
    ServeHealth(req, sink, request_id, opts, p == "/minio/health/cluster");
    return true;
  }
  if (health) {
    Send(sink, BaseHead(request_id, 200), "", "");
    return true;
  }
  if (!opts.prometheus_public) {
    auto st = admin::VerifyPrometheusBearer(req.HeaderOr("authorization"), opts.access_key,
                                            opts.secret_key, std::time(nullptr));
    if (!st.ok()) {
      SendError(req, sink, request_id, st.error());
      return true;
    }
  }
  auto scope = p.ends_with("/node")     ? admin::Scope::kNode
               : p.ends_with("/bucket") ? admin::Scope::kBucket
                                        : admin::Scope::kCluster;
  if (bucket_metrics && req.method == "GET") SampleBucketUsage(*opts.store);
  std::string text = admin::GlobalRegistry().Render(scope);
  auto head = BaseHead(request_id, 200);
  if (req.method == "HEAD") {
    head.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    sink.SendHead(head);
    return true;
  }
  Send(sink, std::move(head), text, "text/plain; version=0.0.4; charset=utf-8");
  return true;
}

Result<size_t> MeteredBody::Read(char* buf, size_t len) {
  auto n = in_.Read(buf, len);
  if (n.ok()) bytes_ += *n;
  return n;
}

bool MeteredSink::SendHead(const HttpResponseHead& head) {
  bool ok = out_.SendHead(head);
  if (ok) {
    sent_head_ = true;
    head_at_ = std::chrono::steady_clock::now();
    status_ = head.status;
    content_length_ = head.content_length;
  }
  return ok;
}

bool MeteredSink::Write(const char* data, size_t len) {
  bool ok = out_.Write(data, len);
  if (ok) bytes_ += len;
  return ok;
}

bool MeteredSink::WritePipe(SplicePipe& pipe) {
  const size_t len = pipe.held();
  bool ok = out_.WritePipe(pipe);
  if (ok) bytes_ += len;
  return ok;
}

}  // namespace rdmastor::s3
