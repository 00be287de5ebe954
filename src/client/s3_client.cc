// The S3 client: SigV4-signed path-style requests over HttpClient, S3 error documents decoded.
#include "rdmastor/s3_client.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <tuple>
#include <pugixml.hpp>
#include <random>
#include <thread>
#include <utility>

#include "common/hash.h"
#include "common/text.h"
#include "client/xml_body.h"
#include "common/uri.h"
#include "s3/sigv4.h"

namespace rdmastor::client {
namespace {

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

std::optional<uint64_t> ParseUnsigned(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// botocore's standard mode retries these statuses (with the throttling codes they carry).
bool RetryableStatus(int status) {
  return status == 500 || status == 502 || status == 503 || status == 504;
}

// Full jitter: uniform in [0, min(max_backoff, base_delay * 2^(attempt - 1))).
std::chrono::milliseconds RetryDelay(const S3ClientConfig& config, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double cap = std::min<double>(
      double(config.max_backoff.count()),
      double(config.base_delay.count()) * std::ldexp(1.0, std::min(attempt - 1, 30)));
  return std::chrono::milliseconds(
      int64_t(std::uniform_real_distribution<double>(0.0, std::max(cap, 0.0))(rng)));
}

}  // namespace

// --- S3 -------------------------------------------------------------------------------------

Result<S3ClientConfig> S3ConfigFromEndpoint(std::string_view endpoint_url, std::string access_key,
                                            std::string secret_key, std::string region,
                                            const TlsClientOptions& tls) {
  auto url = ParseHttpUrl(endpoint_url);
  if (!url.ok()) return url.error();
  if (!url->path.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "S3 endpoint '" + std::string(endpoint_url) + "' must not have a path");
  }
  S3ClientConfig c;
  c.host = url->host;
  c.port = url->port;
  c.access_key = std::move(access_key);
  c.secret_key = std::move(secret_key);
  c.region = std::move(region);
  if (url->tls) {
    auto ctx = TlsContext::Create(tls);
    if (!ctx.ok()) return ctx.error();
    c.http.tls = std::move(ctx).value();
  }
  return c;
}

std::string S3ObjectPath(std::string_view bucket, std::string_view key) {
  if (bucket.empty()) return "/";
  std::string path = "/" + uri::Encode(bucket);
  if (!key.empty()) path += "/" + uri::Encode(key, /*encode_slash=*/false);
  return path;
}

Error S3ErrorFromResponse(const HttpResponse& resp, std::string_view what) {
  std::string code_text, message, request_id;
  // The error document's elements, as fields for callers that pass them on (the Python binding:
  // code, message, request id, status without parsing the text below).
  std::vector<std::pair<std::string, std::string>> fields;
  if (!resp.body.empty()) {
    pugi::xml_document doc;
    if (doc.load_buffer(resp.body.data(), resp.body.size())) {
      pugi::xml_node err = doc.child("Error");
      code_text = err.child_value("Code");
      message = err.child_value("Message");
      request_id = err.child_value("RequestId");
      for (pugi::xml_node n : err.children())
        if (n.type() == pugi::node_element) fields.emplace_back(n.name(), n.child_value());
    }
  }
  if (request_id.empty()) {
    if (const std::string* id = resp.FindHeader("x-amz-request-id")) request_id = *id;
  }
  ErrorCode code = ErrorCode::kInternalError;
  if (!code_text.empty()) {
    static const std::pair<std::string_view, ErrorCode> kCodes[] = {
#define RDMASTOR_CODE_ENTRY(name, text, status, msg) {text, ErrorCode::name},
        RDMASTOR_ERROR_CODES(RDMASTOR_CODE_ENTRY)
#undef RDMASTOR_CODE_ENTRY
    };
    for (const auto& [text, c] : kCodes) {
      if (text == code_text) {
        code = c;
        break;
      }
    }
  } else {
    // No error document (HEAD, or not an S3 server): fall back on the status.
    static constexpr std::tuple<int, ErrorCode, std::string_view> kByStatus[] = {
        {403, ErrorCode::kAccessDenied, "AccessDenied"},
        {404, ErrorCode::kNoSuchKey, "NotFound"},
        {412, ErrorCode::kPreconditionFailed, "PreconditionFailed"},
        {416, ErrorCode::kInvalidRange, "InvalidRange"},
        {503, ErrorCode::kSlowDown, "SlowDown"}};
    code_text = "UnknownError";
    for (const auto& [status, c, text] : kByStatus) {
      if (status == resp.status) {
        code = c;
        code_text = text;
      }
    }
    if (message.empty()) {
      message = resp.body.empty() ? resp.reason : resp.body.substr(0, 200);
    }
  }
  std::string msg = "S3 " + code_text + " (HTTP " + std::to_string(resp.status) + "): " + message +
                    " [" + std::string(what);
  if (!request_id.empty()) msg += ", request-id " + request_id;
  msg += "]";
  Error e = MakeError(code, std::move(msg));
  e.details = std::move(fields);
  auto has = [&](std::string_view name) {
    return std::any_of(e.details.begin(), e.details.end(),
                       [&](const auto& f) { return f.first == name; });
  };
  if (!has("Code")) e.details.emplace_back("Code", code_text);
  if (!has("Message")) e.details.emplace_back("Message", message);
  if (!has("RequestId") && !request_id.empty()) e.details.emplace_back("RequestId", request_id);
  e.details.emplace_back("HTTPStatus", std::to_string(resp.status));
  return e;
}

S3Client::S3Client(S3ClientConfig config)
    : config_(std::move(config)), http_(config_.host, config_.port, config_.http) {}

Result<HttpResponse> S3Client::Execute(const S3Request& request, const ResponseTarget& target) {
  // A response that is not a success never reaches the target (it is kept in resp.body), so a
  // retried GET writes its sink or buffer once.
  const int attempts = request.body_pull ? 1 : std::max(1, config_.max_attempts);
  for (int attempt = 1;; ++attempt) {
    auto resp = SendSigned(request, target);
    if (!resp.ok() || attempt >= attempts || !RetryableStatus(resp->status)) return resp;
    ++retries_;
    std::this_thread::sleep_for(RetryDelay(config_, attempt));
  }
}

Result<HttpResponse> S3Client::SendSigned(const S3Request& request,
                                          const ResponseTarget& target) {
  std::string path = S3ObjectPath(request.bucket, request.key);
  s3::SignInput in;
  in.method = request.method;
  in.raw_path = path;
  in.raw_query = request.raw_query;
  in.headers.reserve(request.headers.size() + 1);
  in.headers.emplace_back("host", http_.host_header());
  for (const auto& [k, v] : request.headers) in.headers.emplace_back(text::ToLower(k), v);
  if (!request.payload_sha256.empty()) {
    in.payload_sha256 = request.payload_sha256;
  } else if (request.body_pull) {
    in.payload_sha256 = std::string(kUnsignedPayload);
  } else {
    in.payload_sha256 = hash::Sha256Hex(request.body);
  }
  in.access_key = config_.access_key;
  in.secret_key = config_.secret_key;
  in.region = config_.region;
  in.now_unix = static_cast<int64_t>(::time(nullptr));

  HttpRequest http;
  http.method = request.method;
  http.target = request.raw_query.empty() ? path : path + "?" + request.raw_query;
  http.headers = s3::SignRequest(in);
  http.body = request.body;
  http.body_pull = request.body_pull;
  http.body_size = request.body_size;
  return http_.Send(http, target);
}

Status S3Client::CreateBucket(std::string_view bucket) {
  S3Request req;
  req.method = "PUT";
  req.bucket = std::string(bucket);
  std::string body;
  if (config_.region != "us-east-1") {
    body =
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>" +
        config_.region +
        "</LocationConstraint>"
        "</CreateBucketConfiguration>";
  }
  req.body = body;
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "PUT /" + std::string(bucket));
  return {};
}

Status S3Client::DeleteBucket(std::string_view bucket) {
  S3Request req;
  req.method = "DELETE";
  req.bucket = std::string(bucket);
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "DELETE /" + std::string(bucket));
  return {};
}

Status S3Client::DeleteObject(std::string_view bucket, std::string_view key) {
  S3Request req;
  req.method = "DELETE";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  auto resp = Execute(req, ResponseTarget::Discard());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, "DELETE " + S3ObjectPath(bucket, key));
  return {};
}

Result<pugi::xml_node> ParseXmlBody(pugi::xml_document& doc, const HttpResponse& resp,
                                    const char* root, std::string_view what) {
  if (!doc.load_buffer(resp.body.data(), resp.body.size()) || !doc.child(root)) {
    return MakeError(ErrorCode::kInternalError,
                     std::string(what) + ": the response is not a " + root + " document");
  }
  return doc.child(root);
}

Result<std::vector<BucketEntry>> S3Client::ListBuckets() {
  std::vector<BucketEntry> out;
  std::string token;
  // Bounded: each page must move on (a server repeating a token would loop forever).
  for (int page = 0; page < 1'000'000; ++page) {
    S3Request req;
    if (!token.empty()) req.raw_query = "continuation-token=" + uri::Encode(token);
    auto resp = Execute(req, ResponseTarget::String());
    if (!resp.ok()) return resp.error();
    if (!resp->success()) return S3ErrorFromResponse(*resp, "GET /");
    pugi::xml_document doc;
    auto root = ParseXmlBody(doc, *resp, "ListAllMyBucketsResult", "GET /");
    if (!root.ok()) return root.error();
    for (pugi::xml_node b : root->child("Buckets").children("Bucket"))
      out.push_back({b.child_value("Name"), b.child_value("CreationDate")});
    std::string next = root->child_value("ContinuationToken");
    if (next.empty()) return out;
    if (next == token)
      return MakeError(ErrorCode::kInternalError, "GET /: the server repeated its continuation token");
    token = std::move(next);
  }
  return MakeError(ErrorCode::kInternalError, "GET /: too many pages");
}

Result<ListObjectsPage> S3Client::ListObjectsV2(std::string_view bucket,
                                                const ListObjectsOptions& opts) {
  S3Request req;
  req.bucket = std::string(bucket);
  req.raw_query = "list-type=2&encoding-type=url&prefix=" + uri::Encode(opts.prefix);
  if (!opts.delimiter.empty()) req.raw_query += "&delimiter=" + uri::Encode(opts.delimiter);
  if (!opts.continuation_token.empty())
    req.raw_query += "&continuation-token=" + uri::Encode(opts.continuation_token);
  if (opts.max_keys > 0) req.raw_query += "&max-keys=" + std::to_string(opts.max_keys);
  const std::string what = "GET /" + std::string(bucket) + "?list-type=2";
  auto resp = Execute(req, ResponseTarget::String());
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  pugi::xml_document doc;
  auto root = ParseXmlBody(doc, *resp, "ListBucketResult", what);
  if (!root.ok()) return root.error();
  // With encoding-type=url the names come percent-encoded ('+' for a space from some servers);
  // a server that ignored the request type sends them as they are.
  const bool encoded = std::string_view(root->child_value("EncodingType")) == "url";
  auto name = [&](const char* text) -> Result<std::string> {
    if (!encoded) return std::string(text);
    auto d = uri::Decode(text, /*plus_as_space=*/true);
    if (!d) return MakeError(ErrorCode::kInternalError, what + ": malformed key '" + text + "'");
    return *d;
  };
  ListObjectsPage page;
  for (pugi::xml_node c : root->children("Contents")) {
    ObjectEntry e;
    auto key = name(c.child_value("Key"));
    if (!key.ok()) return key.error();
    e.key = std::move(*key);
    e.size = ParseUnsigned(c.child_value("Size")).value_or(0);
    e.etag = c.child_value("ETag");
    e.last_modified = c.child_value("LastModified");
    e.storage_class = c.child_value("StorageClass");
    page.objects.push_back(std::move(e));
  }
  for (pugi::xml_node p : root->children("CommonPrefixes")) {
    auto prefix = name(p.child_value("Prefix"));
    if (!prefix.ok()) return prefix.error();
    page.common_prefixes.push_back(std::move(*prefix));
  }
  page.truncated = std::string_view(root->child_value("IsTruncated")) == "true";
  page.next_continuation_token = root->child_value("NextContinuationToken");
  if (page.truncated && page.next_continuation_token.empty())
    return MakeError(ErrorCode::kInternalError,
                     what + ": a truncated page without a NextContinuationToken");
  return page;
}

Result<PutObjectResult> S3Client::DoPut(S3Request request) {
  request.method = "PUT";
  auto resp = Execute(request, ResponseTarget::Discard());
  std::string what = "PUT " + S3ObjectPath(request.bucket, request.key);
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  const std::string* etag = resp->FindHeader("etag");
  if (etag == nullptr || etag->empty()) {
    return MakeError(ErrorCode::kInternalError,
                     what + ": HTTP " + std::to_string(resp->status) + " without an ETag");
  }
  return PutObjectResult{*etag, std::move(resp->headers)};
}

Result<PutObjectResult> S3Client::PutObject(std::string_view bucket, std::string_view key,
                                            std::string_view data,
                                            const HeaderList& extra_headers) {
  S3Request req;
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.headers = extra_headers;
  req.body = data;
  req.payload_sha256 = std::string(kUnsignedPayload);
  return DoPut(std::move(req));
}

Result<PutObjectResult> S3Client::PutObject(std::string_view bucket, std::string_view key,
                                            uint64_t size, BodyPull pull,
                                            const HeaderList& extra_headers) {
  S3Request req;
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.headers = extra_headers;
  req.body_pull = std::move(pull);
  req.body_size = size;
  req.payload_sha256 = std::string(kUnsignedPayload);
  return DoPut(std::move(req));
}

Result<GetObjectResult> S3Client::DoGet(std::string_view bucket, std::string_view key,
                                        std::optional<ByteRange> range,
                                        const ResponseTarget& target) {
  S3Request req;
  req.method = "GET";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  if (range) req.headers.emplace_back("range", range->HeaderValue());
  std::string what = "GET " + S3ObjectPath(bucket, key);
  auto resp = Execute(req, target);
  if (!resp.ok()) return resp.error();
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  if (resp->status != 200 && resp->status != 206) {
    return MakeError(ErrorCode::kInternalError,
                     what + ": unexpected HTTP " + std::to_string(resp->status));
  }
  GetObjectResult out;
  out.status = resp->status;
  out.bytes = resp->body_bytes;
  if (resp->content_length && *resp->content_length != out.bytes) {
    return MakeError(ErrorCode::kInternalError, what + ": received " + std::to_string(out.bytes) +
                                                    " bytes, Content-Length " +
                                                    std::to_string(*resp->content_length));
  }
  if (const std::string* etag = resp->FindHeader("etag")) out.etag = *etag;
  if (resp->status == 206) {
    const std::string* cr = resp->FindHeader("content-range");
    if (cr == nullptr)
      return MakeError(ErrorCode::kInternalError, what + ": 206 without Content-Range");
    size_t slash = cr->rfind('/');
    if (slash != std::string::npos) {
      out.object_size = ParseUnsigned(std::string_view(*cr).substr(slash + 1));
    }
  } else {
    out.object_size = out.bytes;
  }
  out.headers = std::move(resp->headers);
  return out;
}

Result<GetObjectResult> S3Client::GetObject(std::string_view bucket, std::string_view key,
                                            std::optional<ByteRange> range, const BodySink& sink) {
  return DoGet(bucket, key, range, ResponseTarget::Sink(sink));
}

Result<GetObjectResult> S3Client::GetObjectInto(std::string_view bucket, std::string_view key,
                                                std::optional<ByteRange> range, char* dst,
                                                size_t capacity) {
  return DoGet(bucket, key, range, ResponseTarget::Buffer(dst, capacity));
}

}  // namespace rdmastor::client
