// Operations endpoints served next to S3 (health probes, Prometheus metrics) and the per-request
// accounting that feeds the metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "admin/health.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

struct OpsOptions {
  bool prometheus_public = false;      // MINIO_PROMETHEUS_AUTH_TYPE=public
  std::string access_key, secret_key;  // verify the metrics bearer token (JWT)
  // Drive/quorum state for /minio/health/cluster; unset = always healthy.
  std::function<admin::ClusterHealth()> cluster_health;
  // Walked for /minio/v2/metrics/bucket (objects and bytes per bucket); null: no such endpoint.
  storage::ObjectLayer* store = nullptr;
};

// Response head every S3 and ops response carries (Server, x-amz-request-id, Date).
HttpResponseHead BaseHead(const std::string& request_id, int status);

// Serves /minio/health/{live,ready,cluster,cluster/read} and /minio/v2/metrics/{cluster,node};
// returns false (and sends nothing) for any other path.
bool ServeOps(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
              const OpsOptions& opts);

// Sends `err` as S3 error XML (head only for HEAD), as the ops and admin endpoints answer.
void SendOpsError(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                  const Error& err);

// Counts the payload bytes a handler reads.
class MeteredBody final : public BodySource {
 public:
  explicit MeteredBody(BodySource& in) : in_(in) {}
  Result<size_t> Read(char* buf, size_t len) override;
  uint64_t bytes() const { return bytes_; }

 private:
  BodySource& in_;
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point head_at_{};
};

// Records the status and the payload bytes a handler sends.
class MeteredSink final : public ResponseSink {
 public:
  explicit MeteredSink(ResponseSink& out) : out_(out) {}
  bool SendHead(const HttpResponseHead& head) override;
  bool Write(const char* data, size_t len) override;
  bool head_sent() const override { return out_.head_sent(); }
  bool CanWritePipe() const override { return out_.CanWritePipe(); }
  bool WritePipe(SplicePipe& pipe) override;
  int status() const { return status_; }
  uint64_t bytes() const { return bytes_; }
  // When the response head went out (time to first byte); the epoch when it did not.
  std::chrono::steady_clock::time_point head_at() const { return head_at_; }
  // False when the client went away before the whole response (or HEAD's head) went out.
  bool complete(bool head_request) const {
    return sent_head_ && (head_request || bytes_ == content_length_);
  }

 private:
  ResponseSink& out_;
  int status_ = 0;
  bool sent_head_ = false;
  uint64_t content_length_ = 0;
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point head_at_{};
};

}  // namespace rdmastor::s3
