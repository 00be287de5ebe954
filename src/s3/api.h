// The S3 API: authentication, routing and the operation handlers, over an ObjectLayer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "iam/store.h"
#include "s3/handler.h"
#include "s3/http_server.h"
#include "s3/ops.h"
#include "s3/sse.h"
#include "storage/object_layer.h"

namespace rdmastor::rdma {
class S3RdmaService;
}

namespace rdmastor::noblock {
class Scope;
}

namespace rdmastor::s3 {

class HealService;
class LifecycleScanner;

struct ApiOptions {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  // MINIO_REGION / MINIO_SITE_REGION set: CreateBucket refuses another LocationConstraint. Unset
  // (MinIO's default), any constraint is taken, so clients that send their own region (awscli v2
  // with none configured sends "aws-global") work against a trial server.
  bool region_configured = false;
  std::vector<std::string> domains;  // MINIO_DOMAIN: enables virtual-host-style requests
  OpsOptions ops;                    // health and metrics endpoints
  // S3 over RDMA (x-amz-rdma-token); null: every token request is answered 501.
  rdma::S3RdmaService* rdma = nullptr;
  // The admin API's heal (/minio/admin/v3/heal, s3/admin_api.h); null: heal requests are refused.
  HealService* heal = nullptr;
  // The lifecycle scanner, for `rdmastor admin info` (s3/lifecycle_scanner.h); null: none.
  LifecycleScanner* lifecycle = nullptr;
  // Users, bucket policies, ACLs (s3/access.h, iam/store.h).
  iam::StoreOptions iam;
  bool secure_transport = false;  // served over TLS: aws:SecureTransport
  // The deployment's account id (s3/access.h AccountId): x-amz-expected-bucket-owner.
  std::string account_id;
  // Server-side encryption (s3/sse.h): the master key ring and whether SSE-C may come over HTTP.
  // Its secure_transport is set from the field above.
  SseConfig sse;
};

class S3Api final : public RequestHandler {
 public:
  S3Api(ApiOptions opts, storage::ObjectLayer& store);

  void Handle(const HttpRequest& req, BodySource& body, ResponseSink& sink) override;
  // Object GETs and HEADs (not the server's /minio/ endpoints, not S3 over RDMA).
  bool MayServeInline(const HttpRequest& req) override;
  bool HandleInline(const HttpRequest& req, BodySource& body, ResponseSink& sink) override;
  void RenderFrontEndError(ErrorCode code, HttpResponseHead& head, std::string& body) override;

  struct Context;  // one request in flight (defined in api.cc)

 private:
  // Handle's body; `inline_scope`: the no-block scope of an inline attempt, whose tripping drops
  // the answer unrecorded.
  void Serve(const HttpRequest& req, BodySource& body, ResponseSink& sink,
             const noblock::Scope* inline_scope);
  void Dispatch(Context& ctx);

  // A browser-form upload with a POST policy: it authenticates its form itself, so it is the
  // one handler that needs the exchange; the others are functions returning a Reply
  // (s3/handlers.h).
  void PostObject(Context& ctx);
  // An operation the table routes but rdmastor refuses (RefuseUnimplemented answers it first).
  void NotImplemented(Context& ctx);
  // Runs the table's handler of the request's operation (s3/operations.h).
  void Run(Context& ctx, void (S3Api::*handler)(Context&)) { (this->*handler)(ctx); }
  void Run(Context& ctx, Reply (*handler)(const Env&, S3Request&));
  // Decides whether the request's caller may do what it asks (s3/access.h); sends the refusal.
  bool Authorized(Context& ctx);
  // May the caller do `action` on `key` (empty: the bucket) of `bucket` (empty: the request's)?
  // `version`: the object version addressed (nullopt: the latest), whose ACL may grant a read.
  Status Allowed(Context& ctx, std::string_view action, const std::string& key,
                 const std::string& bucket = {}, const storage::VersionSel& version = {});
  // GetObject / HeadObject of a key (or version) that does not exist, by a caller allowed
  // s3:ListBucket with the key as s3:prefix.
  bool MayListMissingKey(Context& ctx, const storage::VersionSel& version);

  ApiOptions opts_;
  storage::ObjectLayer& store_;
  std::unique_ptr<iam::IamStore> iam_;
  Env env_;  // what the handlers use: the store, IAM, SSE, RDMA, the region
  std::string request_id_prefix_;
  std::atomic<uint64_t> request_counter_{0};
};

}  // namespace rdmastor::s3
