#include "s3/rdma_request.h"

#include "admin/metrics.h"

namespace rdmastor::s3 {

Result<std::optional<rdma::RdmaToken>> RdmaTokenOf(const HttpRequest& req, const AuthContext& auth,
                                                   const rdma::S3RdmaService* service,
                                                   bool is_put) {
  const std::string* text = req.FindHeader(kRdmaTokenHeader);
  if (!text) return std::optional<rdma::RdmaToken>();
  // The token steers server writes into client memory: VerifyRequest has already refused it
  // unless it is among the signed headers (as every x-amz-* header).
  auto token = rdma::ParseToken(*text);
  if (!token.ok()) return token.error();
  // The RC connection is named explicitly (and, as an x-amz-* header, signed): never guessed.
  if (const auto* conn = req.FindHeader(rdma::kRdmaConnectionHeader)) {
    if (auto id = rdma::ParseRcConnectionId(*conn); !id.ok()) return id.error();
  }
  if (const auto* agent = req.FindHeader("x-amz-rdma-agent"); agent && *agent != "cuobj")
    return MakeError(ErrorCode::kRDMANotSupported,
                     "x-amz-rdma-agent '" + *agent + "' is not supported (only cuobj)");
  if (is_put) {
    if ((req.content_length && *req.content_length > 0) || req.chunked)
      return MakeError(ErrorCode::kInvalidRequest,
                       "a request with x-amz-rdma-token carries its payload over RDMA: send "
                       "Content-Length: 0");
    if (auth.payload_mode != PayloadMode::kUnsigned &&
        auth.payload_mode != PayloadMode::kSignedSha256)
      return MakeError(ErrorCode::kInvalidRequest,
                       "aws-chunked streaming cannot be combined with x-amz-rdma-token");
  }
  if (!service) return MakeError(ErrorCode::kRDMANotSupported, "S3 over RDMA is not configured");
  if (!service->available()) return service->Decline();
  return std::optional<rdma::RdmaToken>(*token);
}

rdma::RequestOrigin RdmaOriginOf(const HttpRequest& req, const AuthContext& auth) {
  rdma::RequestOrigin origin{req.remote_ip, req.local_ip};
  if (const auto* conn = req.FindHeader(rdma::kRdmaConnectionHeader))
    if (auto id = rdma::ParseRcConnectionId(*conn); id.ok()) origin.rc_connection = *id;
  origin.principal = auth.access_key;
  return origin;
}

Result<uint64_t> RdmaGet(rdma::S3RdmaService& service, const rdma::RdmaToken& token,
                         const HttpRequest& req, const AuthContext& auth,
                         storage::ObjectReader& reader, uint64_t start, uint64_t length,
                         int reply_code) {
  if (length > token.rsize) {
    RecordRdmaOutcome(501, 0, 0, 0);
    Error e = MakeError(ErrorCode::kRDMANotSupported,
                        "the " + std::to_string(length) +
                            " bytes requested do not fit the token's buffer (rsize " +
                            std::to_string(token.rsize) + "); read it in ranges");
    // As elements of the error document: a client tells this per-request decline (its buffer is
    // too small) from a server that does not offer RDMA at all, and says by how much.
    e.details.emplace_back("RequestedBytes", std::to_string(length));
    e.details.emplace_back("BufferBytes", std::to_string(token.rsize));
    return e;
  }
  // Copies the object layer makes (a stripe cache, say) count as much as the data plane's own.
  const uint64_t reader_copied_before = reader.bytes_copied();
  auto moved = service.PushToClient(
      token, RdmaOriginOf(req, auth), length,
      [&](uint64_t off, char* buf, size_t len) { return reader.ReadAt(start + off, buf, len); });
  const uint64_t reader_copied = reader.bytes_copied() - reader_copied_before;
  if (!moved.ok()) {
    RecordRdmaOutcome(GetErrorInfo(moved.error().code).http_status, 0, 0, reader_copied);
    return moved.error();
  }
  RecordRdmaOutcome(reply_code, 0, moved->bytes, moved->bytes_copied + reader_copied);
  return moved->bytes;
}

RdmaPutBody::~RdmaPutBody() = default;

Result<size_t> RdmaPutBody::Read(char* buf, size_t len) {
  if (failure_) return *failure_;
  if (!body_) {
    auto b = service_.PullFromClient(token_, origin_);
    if (!b.ok()) {
      failure_ = b.error();
      return *failure_;
    }
    body_ = std::move(b).value();
  }
  auto n = body_->Read(buf, len);
  if (!n.ok()) failure_ = n.error();
  return n;
}

Result<std::unique_ptr<RdmaPutBody>> RdmaPutBodyFor(const HttpRequest& req, const AuthContext& auth,
                                                    rdma::S3RdmaService* service) {
  auto token = RdmaTokenOf(req, auth, service, /*is_put=*/true);
  if (!token.ok()) {
    if (token.error().code == ErrorCode::kRDMANotSupported) RecordRdmaOutcome(501, 0, 0, 0);
    return token.error();
  }
  if (!*token) return std::unique_ptr<RdmaPutBody>();
  auto body = std::make_unique<RdmaPutBody>(*service, **token, RdmaOriginOf(req, auth));
  body->echo_agent = req.FindHeader("x-amz-rdma-agent") != nullptr;  // validated: cuobj
  return body;
}

Error RdmaUploadError(const RdmaPutBody* body, const Error& store_error) {
  if (!body) return store_error;
  Error e = body->failure() ? *body->failure() : store_error;
  RecordRdmaOutcome(GetErrorInfo(e.code).http_status, body->bytes(), 0, body->bytes());
  return e;
}

void AddRdmaUploadReply(const RdmaPutBody* body, HeaderList& headers, uint64_t extra_copied) {
  if (!body) return;
  headers.emplace_back("x-amz-rdma-reply", "200");
  if (body->echo_agent) headers.emplace_back("x-amz-rdma-agent", "cuobj");
  headers.emplace_back("x-amz-rdma-bytes-transferred", std::to_string(body->bytes()));
  RecordRdmaOutcome(200, body->bytes(), 0, body->bytes() + extra_copied);
}

namespace {
admin::Counter& CopiedBytesCounter() {
  static admin::Counter& copied_bytes =
      admin::GlobalRegistry()
          .AddCounter("minio_api_rdma_copied_bytes_total",
                      "Payload bytes the server copied in user space for S3-over-RDMA requests "
                      "(data plane and object layer)",
                      {})
          .With({});
  return copied_bytes;
}
}  // namespace

void RegisterRdmaMetrics() { (void)CopiedBytesCounter(); }

void RecordRdmaOutcome(int reply_code, uint64_t received, uint64_t sent, uint64_t copied) {
  admin::RecordRdmaReply(reply_code);
  admin::AddS3Traffic(admin::Transport::kRdma, received, sent);
  if (copied) CopiedBytesCounter().Inc(copied);
}

}  // namespace rdmastor::s3
