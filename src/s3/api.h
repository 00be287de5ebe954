// The S3 API: authentication, routing and the operation handlers, over an ObjectLayer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "iam/store.h"
#include "s3/http_server.h"
#include "s3/ops.h"
#include "s3/sse.h"
#include "storage/object_layer.h"

namespace rdmastor::rdma {
class S3RdmaService;
}

namespace rdmastor::s3 {

class HealService;

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
  void RenderFrontEndError(ErrorCode code, HttpResponseHead& head, std::string& body) override;

  struct Context;  // one request in flight (defined in api.cc)

 private:
  void Dispatch(Context& ctx);

  // Service and bucket level.
  void ListBuckets(Context& ctx);
  void CreateBucket(Context& ctx);
  void HeadBucket(Context& ctx);
  void DeleteBucket(Context& ctx);
  void GetBucketLocation(Context& ctx);
  void GetBucketVersioning(Context& ctx);
  void PutBucketVersioning(Context& ctx);
  void ListObjectsV1(Context& ctx);
  void ListObjectsV2(Context& ctx);
  void ListObjectVersions(Context& ctx);
  void ListMultipartUploads(Context& ctx);
  void DeleteObjects(Context& ctx);

  // Object level.
  void PutObject(Context& ctx);
  void PostObject(Context& ctx);  // browser-form upload with a POST policy
  void CopyObject(Context& ctx);
  void GetObject(Context& ctx, bool head);
  void GetObjectAttributes(Context& ctx);
  void DeleteObject(Context& ctx);
  void CreateMultipartUpload(Context& ctx);
  void UploadPart(Context& ctx);
  void UploadPartCopy(Context& ctx);
  void CompleteMultipartUpload(Context& ctx);
  void AbortMultipartUpload(Context& ctx);
  void ListParts(Context& ctx);
  void Tagging(Context& ctx);  // ?tagging on a bucket or an object (s3/tagging.h)
  void BucketPolicy(Context& ctx);  // ?policy, ?policyStatus (s3/access.h)
  void BucketEncryption(Context& ctx);  // ?encryption on a bucket: Get/Put/DeleteBucketEncryption
  void Acl(Context& ctx);           // ?acl on a bucket or an object (s3/acl.h)
  // Decides whether the request's caller may do what it asks (s3/access.h); sends the refusal.
  bool Authorized(Context& ctx);
  // May the caller do `action` on `key` (empty: the bucket) of `bucket` (empty: the request's)?
  // `version`: the object version addressed (nullopt: the latest), whose ACL may grant a read.
  Status Allowed(Context& ctx, std::string_view action, const std::string& key,
                 const std::string& bucket = {}, const storage::VersionSel& version = {});

  ApiOptions opts_;
  storage::ObjectLayer& store_;
  std::unique_ptr<iam::IamStore> iam_;
  std::string request_id_prefix_;
  std::atomic<uint64_t> request_counter_{0};
};

}  // namespace rdmastor::s3
