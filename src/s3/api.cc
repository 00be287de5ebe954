#include "s3/api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "admin/logging.h"
#include "admin/metrics.h"
#include "common/hash.h"
#include "common/no_block.h"
#include "common/splice.h"
#include "common/uri.h"
#include "common/utf8.h"
#include "iam/actions.h"
#include "s3/access.h"
#include "s3/acl.h"
#include "s3/admin_api.h"
#include "s3/aws_chunked.h"
#include "s3/checksums.h"
#include "s3/cors.h"
#include "s3/handlers.h"
#include "s3/names.h"
#include "s3/operations.h"
#include "s3/post_policy.h"
#include "s3/rdma_request.h"
#include "s3/sigv4.h"
#include "s3/tagging.h"
#include "s3/unsupported.h"
#include "s3/versioning.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

// One request in flight: what its handler sees (S3Request), and where the reply goes.
struct S3Api::Context : S3Request {
  Context(const HttpRequest& r, BodySource& body, ResponseSink& out, std::string id)
      : S3Request(r, body, std::move(id)), sink(out) {}

  ResponseSink& sink;
  // Its name for metrics ("PutObject", ...); empty for health/metrics endpoints.
  std::string_view api = "unknown";
  // A browser POST's form fields as PutObject's headers: its policy condition keys (s3/access.h).
  const HeaderList* form = nullptr;
  bool rdma_declined = false;  // answered 501 with x-amz-rdma-reply: 501 (metrics)
  // The bucket's CORS answer to the request's Origin (s3/cors.h): on every response, errors too.
  HeaderList cors;
};

namespace {

// GET body bytes sent from the page cache without a user-space copy (ReadIntoPipe + WritePipe).
admin::Counter& SplicedBytes() {
  static admin::Counter& c = admin::GlobalRegistry()
                                 .AddCounter("rdmastor_s3_get_spliced_bytes_total",
                                             "GET body bytes sent from the page cache to the "
                                             "socket without a user-space copy",
                                             {})
                                 .With({});
  return c;
}

// Object GETs and HEADs tried on the I/O thread (S3Api::HandleInline): served there, or handed to
// a worker because a step would have waited.
admin::Counter& InlineRequests(bool served) {
  static auto& family = admin::GlobalRegistry().AddCounter(
      "rdmastor_s3_inline_requests_total",
      "GET and HEAD requests tried on the I/O thread that parsed them, by outcome: served there, "
      "or handed to a worker because a step would have waited (a read past the metadata cache, a "
      "lock held by a writer, a response too large to buffer)",
      {"result"});
  static admin::Counter& served_c = family.With({"served"});
  static admin::Counter& handed_c = family.With({"handed_off"});
  return served ? served_c : handed_c;
}

void SendBody(ResponseSink& sink, HttpResponseHead head, const std::string& body,
              std::string_view content_type) {
  if (!content_type.empty()) head.Set("Content-Type", std::string(content_type));
  head.content_length = body.size();
  if (sink.SendHead(head)) sink.Write(body.data(), body.size());
}

}  // namespace

S3Api::S3Api(ApiOptions opts, storage::ObjectLayer& store)
    : opts_(std::move(opts)),
      store_(store),
      iam_(std::make_unique<iam::IamStore>(store, opts_.access_key, opts_.iam)),
      env_{store, iam_.get(), &opts_.sse, opts_.rdma, opts_.region, opts_.region_configured},
      request_id_prefix_(hash::RandomHex(4)) {
  for (auto& c : request_id_prefix_) c = static_cast<char>(std::toupper(c));
  opts_.sse.secure_transport = opts_.secure_transport;
  opts_.ops.store = &store_;  // bucket usage for /minio/v2/metrics/bucket
  RegisterRdmaMetrics();
}

void S3Api::RenderFrontEndError(ErrorCode code, HttpResponseHead& head, std::string& body) {
  char id[32];
  std::snprintf(id, sizeof(id), "%s%08llX", request_id_prefix_.c_str(),
                static_cast<unsigned long long>(++request_counter_));
  const auto& info = GetErrorInfo(code);
  head = BaseHead(id, info.http_status);
  head.Set("Content-Type", "application/xml");
  body = ErrorXml(info.code, info.message, "/", id);
  head.content_length = body.size();
}

// ---------------------------------------------------------------------------------------------
// Entry point

namespace {

void SendErrorImpl(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                   const std::string& resource, const Error& err, const HeaderList& extra = {}) {
  if (sink.head_sent()) return;  // too late: the connection will be closed mid-body
  const auto& info = GetErrorInfo(err.code);
  auto head = BaseHead(request_id, info.http_status);
  for (const auto& [k, v] : extra) head.Set(k, v);
  // S3 over RDMA: a token request that cannot be served over RDMA says so (DESIGN.md §3).
  if (IsRdmaDecline(err.code)) head.Set("x-amz-rdma-reply", "501");
  std::string message = err.message.empty() ? std::string(info.message) : err.message;
  if (req.method == "HEAD" || info.http_status == 304) {
    head.content_length = 0;
    sink.SendHead(head);
    return;
  }
  SendBody(sink, std::move(head), ErrorXml(info.code, message, resource, request_id, err.details),
           "application/xml");
}

// At most `n` bytes of `s` for a log line: request targets and error details can carry client
// input of many kilobytes.
std::string Bounded(std::string s, size_t n = 512) {
  if (s.size() > n) s = s.substr(0, n) + "...(" + std::to_string(s.size()) + " bytes)";
  return s;
}

// The head of a response to `ctx`: its own headers, then the CORS ones.
HttpResponseHead HeadFor(const S3Api::Context& ctx, int status, const HeaderList& extra) {
  auto head = BaseHead(ctx.request_id, status);
  for (const auto& [k, v] : extra) head.Set(k, v);
  for (const auto& [k, v] : ctx.cors) head.Set(k, v);
  return head;
}

void SendError(S3Api::Context& ctx, const Error& err, const HeaderList& extra = {}) {
  if (err.code == ErrorCode::kInternalError)
    spdlog::error("{} {} {} -> InternalError: {}", ctx.request_id, ctx.req.method,
                  Bounded(admin::RedactTarget(ctx.req.target)), Bounded(err.message));
  ctx.rdma_declined = ctx.rdma_declined || IsRdmaDecline(err.code);
  HeaderList headers = extra;
  headers.insert(headers.end(), ctx.cors.begin(), ctx.cors.end());
  SendErrorImpl(ctx.req, ctx.sink, ctx.request_id, ctx.Resource(), err, headers);
}

void SendXml(S3Api::Context& ctx, const std::string& xml, int status = 200,
             const HeaderList& extra = {}) {
  SendBody(ctx.sink, HeadFor(ctx, status, extra), xml, "application/xml");
}

void SendEmpty(S3Api::Context& ctx, int status, const HeaderList& extra = {}) {
  auto head = HeadFor(ctx, status, extra);
  head.content_length = 0;
  ctx.sink.SendHead(head);
}

// Sends what a handler answered (s3/handler.h): an error, a body, or an object's bytes.
void SendReply(S3Api::Context& ctx, Reply reply) {
  if (reply.error) return SendError(ctx, *reply.error, reply.headers);
  if (!reply.reader) {
    if (reply.body.empty()) return SendEmpty(ctx, reply.status, reply.headers);
    return SendBody(ctx.sink, HeadFor(ctx, reply.status, reply.headers), reply.body,
                    reply.content_type);
  }
  auto head = HeadFor(ctx, reply.status, reply.headers);
  head.content_length = reply.length;
  if (!ctx.sink.SendHead(head) || ctx.req.method == "HEAD") return;
  uint64_t pos = reply.start, end = reply.start + reply.length;
  // Plain HTTP: whole stripes go from the page cache to the socket without a user-space copy,
  // checked while a pipe holds them (ObjectReader::ReadIntoPipe); the bytes before the first
  // stripe start (a range), TLS, SSE and erasure-split objects through `buf`.
  uint64_t pipeable = ctx.sink.CanWritePipe() ? reply.reader->PipeableFrom(pos) : UINT64_MAX;
  SplicePipe::Ptr pipe = pipeable < end ? SplicePipe::Acquire() : nullptr;
  std::vector<char> buf;
  while (pos < end) {
    if (pipe && pos == pipeable) {
      auto n = reply.reader->ReadIntoPipe(pos, static_cast<size_t>(end - pos), *pipe);
      if (n.ok() && *n > 0) {
        if (!ctx.sink.WritePipe(*pipe)) return;
        SplicedBytes().Inc(*n);
        pos += *n;
        pipeable = pos;
        continue;
      }
      // This stripe takes the copy path, which reads a block that failed its check again (rebuilt
      // from parity, or reported). A pipe holding such bytes is dropped unsent, never reused.
      if (pipe->held() > 0) {
        pipe.reset();
        pipe = SplicePipe::Acquire();
      }
      pipeable = reply.reader->PipeableFrom(pos + 1);
    }
    if (buf.empty()) buf.resize(std::min<uint64_t>(kIoChunk, std::max<uint64_t>(end - pos, 1)));
    const uint64_t stop = pipe ? std::min(end, pipeable) : end;  // pipeable > pos here
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), stop - pos));
    auto n = reply.reader->ReadAt(pos, buf.data(), want);
    if (!n.ok() || *n == 0) {
      spdlog::error("GET {}/{} failed at offset {}: {}", ctx.bucket, ctx.key, pos,
                    n.ok() ? "short read" : n.error().message);
      return;  // the connection closes with a short body: the client sees the failure
    }
    if (!ctx.sink.Write(buf.data(), *n)) return;
    pos += *n;
  }
}

}  // namespace

namespace {

// No credentials of any kind: no Authorization header, no presigned query (V4 or V2).
bool IsAnonymous(const S3Api::Context& ctx) {
  if (ctx.req.FindHeader("authorization")) return false;
  for (const char* p :
       {"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "AWSAccessKeyId", "Signature"})
    if (ctx.Has(p)) return false;
  return true;
}

}  // namespace

void S3Api::Handle(const HttpRequest& req, BodySource& body, ResponseSink& sink) {
  Serve(req, body, sink, nullptr);
}

bool S3Api::MayServeInline(const HttpRequest& req) {
  if (req.method != "GET" && req.method != "HEAD") return false;
  // Health, metrics, admin and peer calls stay on workers; a token's payload moves over RDMA.
  if (req.raw_path.starts_with("/minio/") || req.FindHeader("x-amz-rdma-token")) return false;
  return true;
}

bool S3Api::HandleInline(const HttpRequest& req, BodySource& body, ResponseSink& sink) {
  noblock::Scope scope;
  Serve(req, body, sink, &scope);
  InlineRequests(!scope.tripped()).Inc();
  return !scope.tripped();
}

void S3Api::Serve(const HttpRequest& req, BodySource& body, ResponseSink& sink,
                  const noblock::Scope* inline_scope) {
  char id[32];
  std::snprintf(id, sizeof(id), "%s%08llX", request_id_prefix_.c_str(),
                static_cast<unsigned long long>(++request_counter_));
  MeteredBody metered_body(body);
  MeteredSink metered_sink(sink);
  Context ctx(req, metered_body, metered_sink, id);
  ctx.allowed = [this, &ctx](std::string_view action, const std::string& key) {
    return Allowed(ctx, action, key);
  };
  auto started = std::chrono::steady_clock::now();
  Dispatch(ctx);
  if (inline_scope && inline_scope->tripped()) return;  // a worker serves it again
  if (!ctx.api.empty()) {
    admin::RecordS3Request(ctx.api, metered_sink.status(),
                           !metered_sink.complete(req.method == "HEAD"), ctx.rdma_declined);
    if (metered_sink.head_at() != std::chrono::steady_clock::time_point{})
      admin::RecordS3Ttfb(ctx.api,
                          std::chrono::duration<double>(metered_sink.head_at() - started).count());
    admin::AddS3Traffic(admin::Transport::kTcp, metered_body.bytes(), metered_sink.bytes());
    admin::RecordS3Duration(
        ctx.api, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  admin::LogRequest({ctx.request_id, req.remote_ip, req.method, req.target, ctx.api,
                     metered_sink.status(), metered_body.bytes(), metered_sink.bytes(),
                     std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - started)
                         .count()});
}

namespace {

constexpr std::string_view kReservedBucket = "minio";

// The front end only removes the chunked coding; a body under any other transfer coding (gzip,
// deflate, ...) would be stored still encoded, so it is refused as S3 does (501).
Status CheckTransferCodings(const HttpRequest& req) {
  for (const auto& [name, value] : req.headers) {
    if (name != "transfer-encoding") continue;
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = std::min(value.find(',', pos), value.size());
      std::string coding = ToLower(value.substr(pos, comma - pos));
      coding.erase(0, coding.find_first_not_of(" \t"));
      coding.erase(coding.find_last_not_of(" \t") + 1);
      if (!coding.empty() && coding != "chunked") {
        Error e = MakeError(ErrorCode::kNotImplemented);
        e.details.emplace_back("Header", "Transfer-Encoding");
        return e;
      }
      pos = comma + 1;
    }
  }
  return {};
}

// Every query parameter S3 defines is defined once. A repeated one is refused before anything
// reads it: policy conditions (s3:prefix, s3:versionid, ...) and the handlers must see one value,
// and a signature covers both copies, so "which copy wins" would split authorization from what
// is served.
Status RefuseRepeatedParameters(const std::vector<std::pair<std::string, std::string>>& query) {
  if (query.size() < 2) return {};
  std::vector<std::string_view> names;
  names.reserve(query.size());
  for (const auto& [k, v] : query) names.push_back(k);
  std::sort(names.begin(), names.end());
  auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice == names.end()) return {};
  const std::string name = Bounded(std::string(*twice), 64);
  Error e = MakeError(ErrorCode::kInvalidArgument,
                      "The query parameter '" + name + "' was specified more than once.");
  e.details.emplace_back("ArgumentName", name);
  return e;
}

}  // namespace

void S3Api::Dispatch(Context& ctx) {
  const auto& req = ctx.req;
  if (auto st = CheckTransferCodings(req); !st.ok()) return SendError(ctx, st.error());
  // Health and metrics endpoints authenticate (or not) on their own and are not S3 requests.
  if (req.raw_path.starts_with("/minio/") && ServeOps(req, ctx.sink, ctx.request_id, opts_.ops)) {
    ctx.api = {};
    return;
  }
  // The admin API (root credentials only) is not an S3 request either.
  if (req.raw_path.starts_with("/minio/admin/") &&
      ServeAdmin(req, ctx.sink, ctx.request_id,
                 AdminOptions{opts_.access_key, opts_.secret_key, opts_.heal, opts_.rdma,
                              iam_.get(), opts_.ops.cluster_health, opts_.lifecycle},
                 ctx.raw_body)) {
    ctx.api = {};
    return;
  }

  auto query = uri::ParseQuery(req.raw_query);
  if (!query)
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument, "malformed query string"));
  ctx.query = std::move(*query);
  if (auto st = RefuseRepeatedParameters(ctx.query); !st.ok()) return SendError(ctx, st.error());
  auto path = uri::Decode(req.raw_path);
  if (!path || path->empty() || (*path)[0] != '/')
    return SendError(ctx, MakeError(ErrorCode::kInvalidRequest, "malformed request path"));
  // A path that is not UTF-8 once decoded names no bucket or key: AWS refuses it before
  // authentication, whoever asks.
  if (!IsValidUtf8(*path)) return SendError(ctx, MakeError(ErrorCode::kInvalidURI));

  // Virtual-host style: bucket.<MINIO_DOMAIN>.
  std::string host = ToLower(req.HeaderOr("host"));
  if (auto colon = host.rfind(':');
      colon != std::string::npos && host.find(']') == std::string::npos)
    host.resize(colon);
  bool vhost = false;
  for (const auto& domain : opts_.domains) {
    if (host.size() > domain.size() + 1 && host.ends_with("." + domain)) {
      ctx.bucket = host.substr(0, host.size() - domain.size() - 1);
      std::string_view rest = std::string_view(*path).substr(1);
      ctx.has_key = !rest.empty();
      ctx.key = std::string(rest);
      vhost = true;
      break;
    }
  }
  if (!vhost) {
    std::string_view rest = std::string_view(*path).substr(1);
    auto slash = rest.find('/');
    ctx.bucket = std::string(rest.substr(0, slash));
    if (ctx.bucket.empty() && !rest.empty()) {
      // "//etc/passwd": an empty bucket segment, not the service root.
      return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
    }
    if (slash != std::string_view::npos) {
      ctx.key = std::string(rest.substr(slash + 1));
      ctx.has_key = !ctx.key.empty();
    }
  }

  RouteRequest route{req.method, ctx.bucket.empty(), ctx.has_key, &ctx.query,
                     req.FindHeader("x-amz-copy-source") != nullptr,
                     ToLower(req.HeaderOr("content-type")).starts_with("multipart/form-data"),
                     !req.HeaderOr("x-minio-force-delete").empty()};
  ctx.op = RouteOf(route);
  ctx.api = NameOf(ctx.op);

  // "minio" is reserved as in MinIO: its paths belong to the server's own endpoints (health,
  // metrics, admin), so a bucket of that name could be created but not all its keys reached.
  // The system bucket (users, policies) is as unreachable through S3.
  if (ctx.bucket == kReservedBucket || ctx.bucket == iam::kSystemBucket)
    return SendError(ctx, MakeError(ErrorCode::kAllAccessDisabled));

  // CORS: a preflight is answered before authentication (a browser sends no credentials with
  // it); any other request whose Origin a rule of the bucket allows gets the Access-Control-*
  // headers, on errors too (AWS).
  if (req.method == "OPTIONS" && !ctx.bucket.empty()) {
    auto allowed = Preflight(store_, ctx.bucket, req);
    if (!allowed.ok()) return SendError(ctx, allowed.error());
    return SendEmpty(ctx, 200, *allowed);
  }
  ctx.cors = CorsHeadersFor(store_, ctx.bucket, req);
  if (ctx.op == S3Op::kPostPolicyBucket) return PostObject(ctx);

  auto auth = VerifyRequest(
      req,
      [this, &req](std::string_view ak) -> std::optional<std::string> {
        if (ak == opts_.access_key) return opts_.secret_key;
        return iam_->SecretFor(ak, req.remote_ip);
      },
      static_cast<int64_t>(std::time(nullptr)), vhost ? std::string_view(ctx.bucket) : "");
  if (!auth.ok()) {
    if (!IsAnonymous(ctx)) return SendError(ctx, auth.error());
    // S3 over RDMA steers server reads and writes into the token's memory: the token (and the
    // agent asking for it) must be signed, so an unsigned request cannot carry them.
    for (const char* h : {"x-amz-rdma-token", "x-amz-rdma-agent"}) {
      if (!req.FindHeader(h)) continue;
      Error e = MakeError(ErrorCode::kAccessDenied,
                          "There were headers present in the request which were not signed");
      e.details.emplace_back("HeadersNotSigned", h);
      return SendError(ctx, e);
    }
    // AWS tells an anonymous caller that a bucket does not exist (404) before refusing access;
    // an existing bucket's policy and ACL decide what the caller may do (Authorized below).
    if (!IsValidBucketName(ctx.bucket)) return SendError(ctx, auth.error());
    auto info = store_.GetBucketInfo(ctx.bucket);
    if (!info.ok()) {
      if (info.error().code == ErrorCode::kNoSuchBucket) return SendError(ctx, info.error());
      return SendError(ctx, auth.error());
    }
    ctx.caller = Caller{Caller::Kind::kAnonymous, {}};
    // Before any other check, as AWS: an anonymous caller learns nothing more than "denied".
    if (!Authorized(ctx)) return;
  } else {
    ctx.auth = std::move(auth).value();
    ctx.caller = Caller{ctx.auth.access_key == opts_.access_key ? Caller::Kind::kRoot
                                                                : Caller::Kind::kUser,
                        ctx.auth.access_key};
  }

  if (!ctx.bucket.empty() && !IsValidBucketName(ctx.bucket)) {
    // An existing bucket is never invalid, so name rules answer every operation.
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  }
  if (ctx.has_key) {
    auto st = ValidateObjectKey(ctx.key);
    if (!st.ok()) return SendError(ctx, st.error());
  }
  if (const char* sub = UnsupportedSubresource(route); sub && !ctx.bucket.empty()) {
    return SendError(
        ctx, MakeError(ErrorCode::kNotImplemented,
                       std::string("The ") + sub + " subresource is not implemented by rdmastor."));
  }
  if (!ctx.bucket.empty() && ctx.Has("versionId")) {
    auto v = ParseVersionId(ctx.Q("versionId"));
    if (!v.ok()) return SendError(ctx, v.error());
    ctx.version = std::move(*v);
  }
  if (!ctx.caller.anonymous() && !Authorized(ctx)) return;
  if (!ctx.bucket.empty()) {
    // An anonymous caller learns nothing more than "denied" (AWS: 403 for any mismatch).
    if (auto st = CheckExpectedBucketOwner(req, opts_.account_id); !st.ok())
      return SendError(ctx, ctx.caller.anonymous() ? MakeError(ErrorCode::kAccessDenied)
                                                   : st.error());
  }
  if (auto st = RefuseUnimplemented(ctx.api, req); !st.ok()) return SendError(ctx, st.error());
  switch (ctx.op) {
#define RDMASTOR_S3_OP_DISPATCH(Name, method, at, sub, params, when, action, on, also, handler) \
  case S3Op::k##Name:                                                                          \
    return Run(ctx, handler);
    RDMASTOR_S3_OPERATIONS(RDMASTOR_S3_OP_DISPATCH)
#undef RDMASTOR_S3_OP_DISPATCH
    case S3Op::kUnknown:
      break;
  }
  return SendError(ctx, MakeError(ErrorCode::kMethodNotAllowed));
}

void S3Api::Run(Context& ctx, Reply (*handler)(const Env&, S3Request&)) {
  SendReply(ctx, handler(env_, ctx));
}

void S3Api::NotImplemented(Context& ctx) {
  SendError(ctx, MakeError(ErrorCode::kNotImplemented));
}

bool S3Api::Authorized(Context& ctx) {
  const OpInfo* op = InfoOf(ctx.op);
  const uint8_t also = op ? op->also : uint8_t{kNothingElse};
  const bool copy = also & kReadsSource;
  std::optional<std::pair<std::string, std::string>> source;
  storage::VersionSel src_version;
  if (copy) {
    auto src = ParseCopySource(ctx.req.HeaderOr("x-amz-copy-source"), &src_version);
    if (src.ok()) source = std::move(*src);
    // The system bucket cannot be read through a copy either, not even by root.
    if (source && source->first == iam::kSystemBucket) {
      SendError(ctx, MakeError(ErrorCode::kAccessDenied));
      return false;
    }
  }
  if (ctx.caller.root()) return true;
  // DeleteObjects: s3:DeleteObject is checked for each key it names (DeleteObjects).
  if (also & kPerObject) return true;
  const bool object_action = ctx.has_key && op && op->on == On::kObject;
  // An anonymous request is authorized before Dispatch parses its versionId: parsed here (a
  // malformed one is refused as for anyone; it tells nothing about the bucket).
  storage::VersionSel version = ctx.version;
  if (!version && object_action && ctx.Has("versionId")) {
    auto v = ParseVersionId(ctx.Q("versionId"));
    if (!v.ok()) {
      SendError(ctx, v.error());
      return false;
    }
    version = std::move(*v);
  }
  std::string_view action = op ? op->action : std::string_view();
  // A request naming a version needs the ...Version action (s3:GetObjectVersion, ...).
  if (object_action && version) action = iam::VersionAction(action);
  auto st = Allowed(ctx, action, object_action ? ctx.key : std::string(), {}, version);
  // A read of a key that is not there, by a caller who may list it: AWS answers 404 (the caller
  // could learn as much from a listing), where everyone else gets 403.
  if (!st.ok() && (ctx.op == S3Op::kGetObject || ctx.op == S3Op::kHeadObject) &&
      MayListMissingKey(ctx, version))
    st = Status{};
  // As AWS: a write that sets the new object's ACL or tags also needs the actions that set them.
  if (st.ok() && (also & kSetsAclAndTags)) {
    // An ACL that grants to others than the owners (public-read, public-read-write,
    // authenticated-read, or explicit grants) needs s3:PutObjectAcl; private, bucket-owner-* and
    // the other canned ACLs do not (AWS answers them with s3:PutObject alone).
    bool grants_others = false, tags = false, retention = false, legal_hold = false;
    for (const auto& [name, value] : ctx.form ? *ctx.form : ctx.req.headers) {
      retention = retention || name == "x-amz-object-lock-mode" ||
                  name == "x-amz-object-lock-retain-until-date";
      legal_hold = legal_hold || name == "x-amz-object-lock-legal-hold";
      const std::string acl = name == "x-amz-acl" ? ToLower(value) : std::string();
      grants_others = grants_others || name.starts_with("x-amz-grant-") ||
                      acl == "public-read" || acl == "public-read-write" ||
                      acl == "authenticated-read";
      tags = tags || name.starts_with("x-amz-tagging");
    }
    if (grants_others) st = Allowed(ctx, "s3:PutObjectAcl", ctx.key, {}, {});
    if (st.ok() && tags) {
      // A copy that keeps its source's tags (the default directive) sets none.
      const bool copies_tags =
          (also & kReadsSource) &&
          ToLower(ctx.req.HeaderOr("x-amz-tagging-directive", "COPY")) != "replace";
      if (!copies_tags) st = Allowed(ctx, "s3:PutObjectTagging", ctx.key, {}, {});
    }
    // A lock set by the write needs the actions that set it (AWS).
    if (st.ok() && retention) st = Allowed(ctx, "s3:PutObjectRetention", ctx.key, {}, {});
    if (st.ok() && legal_hold) st = Allowed(ctx, "s3:PutObjectLegalHold", ctx.key, {}, {});
  }
  // MinIO's force delete of a bucket needs s3:ForceDeleteBucket too, whatever the header's value.
  if (st.ok() && (also & kForceDeletes)) st = Allowed(ctx, "s3:ForceDeleteBucket", {}, {}, {});
  // A copy reads its source: s3:GetObject (s3:GetObjectVersion for a named version) there too.
  if (st.ok() && source) {
    st = Allowed(ctx, src_version ? "s3:GetObjectVersion" : "s3:GetObject", source->second,
                 source->first, src_version);
  }
  if (!st.ok()) SendError(ctx, st.error());
  return st.ok();
}

bool S3Api::MayListMissingKey(Context& ctx, const storage::VersionSel& version) {
  auto info = version ? store_.StatObjectVersion(ctx.bucket, ctx.key, *version)
                      : store_.StatObject(ctx.bucket, ctx.key);
  if (info.ok() || info.error().code != (version ? ErrorCode::kNoSuchVersion : ErrorCode::kNoSuchKey))
    return false;
  // As a listing of exactly this key would be asked: s3:prefix is the key.
  auto conditions = ConditionsFor(ctx.req, {}, opts_.secure_transport, ctx.caller,
                                  ctx.caller.anonymous() ? nullptr : &ctx.auth, ctx.form);
  conditions["s3:prefix"] = ctx.key;
  return Authorize(*iam_, ctx.caller, "s3:ListBucket", ctx.bucket, "", conditions, {},
                   [&] { return PublicAccessOf(store_, ctx.bucket); })
      .ok();
}

Status S3Api::Allowed(Context& ctx, std::string_view action, const std::string& key,
                      const std::string& bucket, const storage::VersionSel& version) {
  if (ctx.caller.root()) return {};
  const auto conditions = ConditionsFor(ctx.req, ctx.query, opts_.secure_transport, ctx.caller,
                                        ctx.caller.anonymous() ? nullptr : &ctx.auth, ctx.form);
  const std::string& in_bucket = bucket.empty() ? ctx.bucket : bucket;
  // The ACL and owner of the version read (a missing object, version or a delete marker grants
  // nothing), or of the multipart upload the request names (its initiator).
  const bool upload = bucket.empty() && ctx.Has("uploadId");
  auto object_acl = [&]() -> ObjectAccess {
    if (upload) {
      auto opts = store_.GetUploadOptions(in_bucket, key, ctx.Q("uploadId"));
      if (!opts.ok()) return {};
      return ObjectAccess{iam::AclFromStored(opts->acl), opts->owner, opts->tags, true};
    }
    auto info = version ? store_.StatObjectVersion(in_bucket, key, *version)
                        : store_.StatObject(in_bucket, key);
    if (!info.ok()) return {};
    return ObjectAccess{iam::AclFromStored(info->acl), info->owner, info->tags, true};
  };
  auto public_access = [&]() { return PublicAccessOf(store_, in_bucket); };
  return Authorize(*iam_, ctx.caller, action, in_bucket, key, conditions, object_acl,
                   public_access);
}

// ---------------------------------------------------------------------------------------------
// Service and bucket operations

// ---------------------------------------------------------------------------------------------
// Object operations


namespace {

// Counts the file part's bytes and stops the upload as soon as it exceeds what the policy (or
// S3's single-upload limit) allows, so an oversized file is not read to its end.
class LimitedSource : public BodySource {
 public:
  LimitedSource(BodySource& in, uint64_t max) : in_(in), max_(max) {}
  Result<size_t> Read(char* buf, size_t len) override {
    auto n = in_.Read(buf, len);
    if (!n.ok()) return n;
    bytes_ += *n;
    if (bytes_ > max_) {
      Error e = MakeError(ErrorCode::kEntityTooLarge,
                          "Your proposed upload exceeds the maximum allowed size");
      e.details.emplace_back("MaxSizeAllowed", std::to_string(max_));
      return e;
    }
    return n;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  BodySource& in_;
  uint64_t max_;
  uint64_t bytes_ = 0;
};

// success_action_redirect: an absolute http(s) URL without blanks or control characters (it
// becomes a Location header); anything else is ignored, as S3 ignores a redirect it cannot use.
bool UsableRedirect(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) return false;
  return std::none_of(url.begin(), url.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
}

}  // namespace

void S3Api::PostObject(Context& ctx) {
  // The form fields before the file, part headers included (S3's limit on them is of this size).
  constexpr size_t kMaxPreFileBytes = 20 * 1024;
  if (!IsValidBucketName(ctx.bucket))
    return SendError(ctx, MakeError(ErrorCode::kInvalidBucketName));
  if (ctx.has_key) return SendError(ctx, MakeError(ErrorCode::kMethodNotAllowed));
  auto boundary = FormBoundary(ctx.req.HeaderOr("content-type"));
  if (!boundary.ok()) return SendError(ctx, boundary.error());
  FormReader form(ctx.raw_body, *boundary);
  std::map<std::string, std::string> fields;  // lower-case names
  std::optional<FormReader::Part> file;
  size_t budget = kMaxPreFileBytes;
  for (;;) {
    auto part = form.Next(budget);
    if (!part.ok()) return SendError(ctx, part.error());
    if (!*part) break;
    std::string name = ToLower((*part)->name);
    // S3 takes the first file part as the upload and ignores every field after it.
    if (name == "file") {
      file = std::move(**part);
      break;
    }
    auto value = form.ReadValue(budget);
    if (!value.ok()) return SendError(ctx, value.error());
    if (!fields.emplace(name, std::move(*value)).second) {
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "POST form field '" + name + "' appears more than once."));
    }
  }

  auto now = static_cast<int64_t>(std::time(nullptr));
  auto ak = VerifyPostSignature(fields, [&](std::string_view k) -> std::optional<std::string> {
    if (k == opts_.access_key) return opts_.secret_key;
    return iam_->SecretFor(k, ctx.req.remote_ip);
  });
  if (!ak.ok()) return SendError(ctx, ak.error());
  auto policy = ParsePostPolicy(fields["policy"]);
  if (!policy.ok()) return SendError(ctx, policy.error());
  if (!file) {
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "POST requires exactly one file upload per request."));
  }
  auto key_field = fields.find("key");
  if (key_field == fields.end()) {
    return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                    "Bucket POST must contain a field named 'key'.  If it is "
                                    "specified, please check the order of the fields."));
  }
  // ${filename}: the name of the file the browser sent.
  const std::string key_as_sent = key_field->second;
  std::string key = key_as_sent;
  const std::string filename = file->filename.value_or("");
  for (size_t at = key.find("${filename}"); at != std::string::npos;
       at = key.find("${filename}", at + filename.size()))
    key.replace(at, 11, filename);
  key_field->second = key;
  fields["bucket"] = ctx.bucket;
  if (auto st = CheckPostPolicy(*policy, fields, now, key_as_sent); !st.ok())
    return SendError(ctx, st.error());
  if (auto st = ValidateObjectKey(key); !st.ok()) return SendError(ctx, st.error());
  ctx.key = key;
  ctx.has_key = true;
  ctx.caller = Caller{*ak == opts_.access_key ? Caller::Kind::kRoot : Caller::Kind::kUser, *ak};
  // The form's fields are the upload's headers, for the policy conditions (s3:x-amz-acl, ...) as
  // for what is stored: the POST's own HTTP headers are not signed and decide nothing.
  HttpRequest as_put;
  as_put.method = "PUT";
  for (const auto& [name, value] : fields) {
    if (name == "file" || name == "policy" || name == "key" || name == "bucket") continue;
    if (name == "tagging") continue;  // an XML document, applied below
    // The canned ACL is the "acl" field; a field named x-amz-acl stores nothing, so it decides
    // nothing either.
    if (name == "x-amz-acl" || name == "x-amz-tagging") continue;
    as_put.headers.emplace_back(name == "acl" ? "x-amz-acl" : name, value);
  }
  // Tags set by the upload need s3:PutObjectTagging (Authorized).
  if (fields.contains("tagging")) as_put.headers.emplace_back("x-amz-tagging", "");
  ctx.form = &as_put.headers;
  if (!Authorized(ctx)) return;

  // Fields that become response headers on GET: a header on the wire can carry neither control
  // characters nor (in its name) separators, but a form field can, so they are refused here.
  auto header_safe = [](std::string_view v) {
    return std::none_of(v.begin(), v.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return (u < 0x20 && c != '\t') || u == 0x7f;
    });
  };
  auto token = [](std::string_view n) {
    return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
  };
  for (const auto& [name, value] : fields) {
    bool becomes_header =
        name == "content-type" || name.starts_with("x-amz-meta-") ||
        std::find(std::begin(kStoredHeaders), std::end(kStoredHeaders), name) !=
            std::end(kStoredHeaders);
    if (becomes_header && (!token(name) || !header_safe(value))) {
      return SendError(ctx, MakeError(ErrorCode::kInvalidArgument,
                                      "POST form field '" + Bounded(name, 64) +
                                          "' is not a valid HTTP header name or value."));
    }
  }

  // What PutObject refuses (encryption, storage classes, Object Lock, ...) is refused here too,
  // never silently dropped.
  if (auto st = RefuseUnimplemented("PutObject", as_put); !st.ok())
    return SendError(ctx, st.error());
  // Encryption fields as PutObject's headers (SSE-S3, SSE-C); none: the bucket's default decides.
  auto bucket_default = store_.BucketEncryption(ctx.bucket);
  if (!bucket_default.ok()) return SendError(ctx, bucket_default.error());
  auto sse = ParseSseWrite(as_put, opts_.sse, *bucket_default);
  if (!sse.ok()) return SendError(ctx, sse.error());

  storage::PutOptions opts;
  opts.content_type = fields.count("content-type") ? fields["content-type"] : "binary/octet-stream";
  size_t meta_bytes = 0;
  for (const auto& [name, value] : fields) {
    if (name.starts_with("x-amz-meta-")) {
      meta_bytes += name.size() - 11 + value.size();
      opts.user_metadata[name] = value;
    }
  }
  if (meta_bytes > kMaxUserMetadata) return SendError(ctx, MakeError(ErrorCode::kMetadataTooLarge));
  for (auto stored : kStoredHeaders) {
    if (auto it = fields.find(std::string(stored)); it != fields.end())
      opts.user_metadata[std::string(stored)] = it->second;
  }
  if (auto it = fields.find("acl"); it != fields.end()) {  // a canned ACL, as x-amz-acl
    auto acl = iam::ParseCannedAcl(it->second);
    if (!acl.ok()) return SendError(ctx, acl.error());
    opts.acl = iam::StoredAcl(*acl);
  }
  {
    auto it = fields.find("acl");
    auto owner = NewObjectOwner(*iam_, store_, ctx.bucket, ctx.caller,
                                it == fields.end() ? nullptr : &it->second, false);
    if (!owner.ok()) return SendError(ctx, owner.error());
    opts.owner = std::move(*owner);
  }
  if (auto it = fields.find("tagging"); it != fields.end()) {  // a <Tagging> document, as AWS
    auto tags = ParseTaggingXml(it->second, /*object=*/true);
    if (!tags.ok()) return SendError(ctx, tags.error());
    opts.tags = std::move(*tags);
  }
  // Object Lock fields as PutObject's headers; none: the bucket's default retention.
  if (auto st = ApplyObjectLock(store_, ctx.bucket, as_put, opts, /*put=*/false, NowMs());
      !st.ok())
    return SendError(ctx, st.error());

  uint64_t max_size = kMaxPutSize;
  int64_t min_size = 0;
  if (policy->length_range) {
    min_size = policy->length_range->first;
    max_size = std::min<uint64_t>(max_size, static_cast<uint64_t>(policy->length_range->second));
  }
  std::optional<crypto::Key> object_key;
  if (sse->kind != SseKind::kNone) {
    auto nk = SealNewObjectKey(opts_.sse, *sse, ctx.bucket, key);
    if (!nk.ok()) return SendError(ctx, nk.error());
    object_key = nk->key;
    opts.internal = std::move(nk->internal);
  }
  LimitedSource limited(form.Content(), max_size);
  DigestingSource digest(limited, false, checksum::kDefaultAlgo);  // S3's default checksum
  StoredBody stored(digest, object_key);
  auto info = store_.PutObject(
      ctx.bucket, key, *stored.body, opts, [&](uint64_t) -> Result<storage::CommitInfo> {
        if (static_cast<int64_t>(limited.bytes()) < min_size) {
          Error e = MakeError(ErrorCode::kEntityTooSmall,
                              "Your proposed upload is smaller than the minimum allowed size");
          e.details.emplace_back("ProposedSize", std::to_string(limited.bytes()));
          e.details.emplace_back("MinSizeAllowed", std::to_string(min_size));
          return e;
        }
        storage::CommitInfo ci;
        ci.etag = WriteEtag(sse->kind, object_key, hash::HexEncode(digest.Md5()));
        ci.checksums[std::string(hash::ChecksumName(checksum::kDefaultAlgo))] =
            hash::Base64Encode(digest.Checksum());
        return ci;
      });
  if (!info.ok()) return SendError(ctx, info.error());

  std::string location = "http://" + ctx.req.HeaderOr("host") + "/" + ctx.bucket + "/" +
                         uri::Encode(key, /*encode_slash=*/false);
  HeaderList extra{{"ETag", Quote(info->etag)}, {"Location", location}};
  AddSseHeaders(extra, sse->kind, *sse);
  std::string redirect = fields.count("success_action_redirect")
                             ? fields["success_action_redirect"]
                             : fields.count("redirect") ? fields["redirect"] : std::string();
  if (UsableRedirect(redirect)) {
    std::string url = redirect + (redirect.find('?') == std::string::npos ? "?" : "&") +
                      "bucket=" + uri::Encode(ctx.bucket) + "&key=" + uri::Encode(key) +
                      "&etag=" + uri::Encode(Quote(info->etag));
    return SendEmpty(ctx, 303, {{"ETag", Quote(info->etag)}, {"Location", url}});
  }
  std::string status = fields["success_action_status"];
  if (status == "201")
    return SendXml(ctx, PostResponseXml(location, ctx.bucket, key, info->etag), 201, extra);
  SendEmpty(ctx, status == "200" ? 200 : 204, extra);
}


namespace {


}  // namespace

namespace {


}  // namespace

namespace {


}  // namespace


namespace {
}  // namespace

namespace {
}  // namespace

}  // namespace rdmastor::s3
