// S3 over RDMA at the S3 layer (DESIGN.md §3): which requests carry a usable token, the GET data
// path from an ObjectReader to the client's buffer, and the PUT/UploadPart body read from it.
// The handlers in api.cc call these; the data plane itself is rdma::S3RdmaService.
#pragma once

#include <memory>
#include <optional>

#include "common/result.h"
#include "rdma/s3_service.h"
#include "rdma/token.h"
#include "s3/http_types.h"
#include "s3/sigv4.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

inline constexpr std::string_view kRdmaTokenHeader = "x-amz-rdma-token";

// The token of a GetObject / PutObject / UploadPart request: nullopt when there is none (plain
// HTTP). Errors: 403 AccessDenied when the token header is not signed, 400 InvalidRDMAToken when
// malformed, 400 InvalidRequest when a token request also carries a body or uses aws-chunked
// streaming, 501 RDMANotSupported when x-amz-rdma-agent is not "cuobj" or the server cannot do
// S3 over RDMA (`service` null or without a fabric).
// With x-amz-rdma-connection (signed like the token: S3 over RDMA on RC), also 400
// InvalidRDMAToken when that header is malformed.
Result<std::optional<rdma::RdmaToken>> RdmaTokenOf(const HttpRequest& req, const AuthContext& auth,
                                                   const rdma::S3RdmaService* service, bool is_put);

// What the data plane knows of a token request: its addresses, the RC connection it named
// (x-amz-rdma-connection, validated by RdmaTokenOf; 0 without one) and its access key.
rdma::RequestOrigin RdmaOriginOf(const HttpRequest& req, const AuthContext& auth);

// GET: writes object bytes [start, start+length) into the client's buffer. 501 when the range is
// larger than rsize (nothing written). Returns the bytes moved. Records the outcome in the
// metrics (`reply_code`: 200 or 206 on success).
Result<uint64_t> RdmaGet(rdma::S3RdmaService& service, const rdma::RdmaToken& token,
                         const HttpRequest& req, const AuthContext& auth,
                         storage::ObjectReader& reader, uint64_t start, uint64_t length,
                         int reply_code);

// PUT / UploadPart body: exactly rsize bytes pulled from the client's buffer. The endpoint opens
// on the first Read, so requests rejected before the body is read never touch the client.
class RdmaPutBody final : public BodySource {
 public:
  RdmaPutBody(rdma::S3RdmaService& service, const rdma::RdmaToken& token,
              rdma::RequestOrigin origin)
      : service_(service), token_(token), origin_(std::move(origin)) {}
  ~RdmaPutBody() override;
  Result<size_t> Read(char* buf, size_t len) override;
  uint64_t size() const { return token_.rsize; }
  uint64_t bytes() const { return body_ ? body_->bytes() : 0; }
  // The transfer's own error, when the upload failed because of it (preferred over whatever
  // error the object layer made of it).
  const std::optional<Error>& failure() const { return failure_; }
  // The request carried x-amz-rdma-agent (cuobj): the reply echoes it.
  bool echo_agent = false;

 private:
  rdma::S3RdmaService& service_;
  rdma::RdmaToken token_;
  rdma::RequestOrigin origin_;
  std::unique_ptr<rdma::S3RdmaService::ClientBody> body_;
  std::optional<Error> failure_;
};

// PutObject / UploadPart: the RDMA body of a token request, null for plain HTTP (errors as
// RdmaTokenOf).
Result<std::unique_ptr<RdmaPutBody>> RdmaPutBodyFor(const HttpRequest& req, const AuthContext& auth,
                                                    rdma::S3RdmaService* service);
// The error to answer a failed upload with: the transfer's own error when it caused the failure.
Error RdmaUploadError(const RdmaPutBody* body, const Error& store_error);
// Adds x-amz-rdma-reply / x-amz-rdma-bytes-transferred to a successful upload's reply.
// `extra_copied`: payload bytes copied on top of the transfer's own copy (encryption writes every
// byte once more), counted by the copy metric too.
void AddRdmaUploadReply(const RdmaPutBody* body, HeaderList& headers, uint64_t extra_copied = 0);

// Records a finished RDMA request in the metrics: reply code (200, 206, 501, ...), payload
// bytes moved and user-space bytes copied.
void RecordRdmaOutcome(int reply_code, uint64_t received, uint64_t sent, uint64_t copied);
// Registers the S3-over-RDMA metric families this file owns, so they are exported (at 0) before
// the first RDMA request.
void RegisterRdmaMetrics();

}  // namespace rdmastor::s3
