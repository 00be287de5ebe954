// The S3 client over HttpClient (rdmastor/http_transport.h): path-style addressing, SigV4 header
// signing and S3 error decoding. Not thread-safe: one S3Client per thread (each owns one
// connection). The RDMA client (rdmastor/rdma_client.h) reuses its request building.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmastor/http_transport.h"
#include "rdmastor/result.h"

namespace rdmastor::client {

// --- S3 -------------------------------------------------------------------------------------

struct S3ClientConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 9000;
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  HttpClientOptions http;
  // Throttling and transient server errors (HTTP 500, 502, 503 SlowDown, 504) are retried as the
  // AWS SDKs' standard mode does: at most max_attempts tries in all, sleeping a random time below
  // min(max_backoff, base_delay * 2^(try - 1)) before each further one. A request whose body is
  // pulled from a stream is sent once (the stream cannot be replayed). 1: no retries (callers
  // with a retry policy of their own, benchmarks that count refusals).
  int max_attempts = 3;
  std::chrono::milliseconds base_delay{1000};
  std::chrono::milliseconds max_backoff{20000};
};

// Builds a config from "http://host:port" or "https://host:port" plus credentials; https sets
// http.tls to a context trusting `tls` (default: the system store).
Result<S3ClientConfig> S3ConfigFromEndpoint(std::string_view endpoint_url, std::string access_key,
                                            std::string secret_key,
                                            std::string region = "us-east-1",
                                            const TlsClientOptions& tls = {});

// Inclusive byte range as in "Range: bytes=first-last"; last unset means "to the end".
struct ByteRange {
  uint64_t first = 0;
  std::optional<uint64_t> last;

  // The Range header value: "bytes=first-" or "bytes=first-last".
  std::string HeaderValue() const {
    std::string value = "bytes=" + std::to_string(first) + "-";
    if (last) value += std::to_string(*last);
    return value;
  }
};

struct PutObjectResult {
  std::string etag;  // as sent by the server, quotes included
  HeaderList headers;
};

struct GetObjectResult {
  int status = 0;      // 200, or 206 for a ranged read
  uint64_t bytes = 0;  // body bytes received (checked against Content-Length)
  std::string etag;
  std::optional<uint64_t> object_size;  // from Content-Range (206) or Content-Length (200)
  HeaderList headers;
};

// ListBuckets: one entry per bucket.
struct BucketEntry {
  std::string name;
  std::string creation_date;  // ISO 8601, as the server sent it
};

// ListObjectsV2: what to ask for (values as they are: the client encodes them).
struct ListObjectsOptions {
  std::string prefix;
  std::string delimiter;
  std::string continuation_token;  // NextContinuationToken of the previous page; empty: first
  int max_keys = 0;                // 0: the server's default (1,000)
};

struct ObjectEntry {
  std::string key;  // decoded (the request asks for encoding-type=url)
  uint64_t size = 0;
  std::string etag;           // quotes included
  std::string last_modified;  // ISO 8601
  std::string storage_class;
};

struct ListObjectsPage {
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;  // decoded
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};

// One S3 request before signing. Path-style: "/bucket/key" (the key is percent-encoded here).
struct S3Request {
  std::string method = "GET";
  std::string bucket;     // empty: the service ("/")
  std::string key;        // empty: the bucket itself
  std::string raw_query;  // already encoded, without '?'
  HeaderList headers;     // lower-case names; all of them are signed
  // Body as in HttpRequest.
  std::string_view body;
  BodyPull body_pull;
  uint64_t body_size = 0;
  // x-amz-content-sha256; empty = SHA-256 of `body`, or UNSIGNED-PAYLOAD for pulled bodies.
  std::string payload_sha256;
};

// Maps an S3 error response (status + XML body) to an Error: the code is the ErrorCode whose S3
// code text matches <Code> (kInternalError when unknown); the message always names the S3 code
// text, the HTTP status, the server's message and the request id, e.g.
// "S3 NoSuchKey (HTTP 404): The specified key does not exist. [GET /b/k, request-id 17A...]".
// The same as fields in Error::details: the error document's elements in order (Code, Message,
// RequestId and any others, filled in from the status when there is no document), then
// ("HTTPStatus", "404").
Error S3ErrorFromResponse(const HttpResponse& resp, std::string_view what);

// A path-style S3 client over one keep-alive connection. Requests are signed with SigV4 header
// auth (s3::SignRequest). PUT bodies are sent with x-amz-content-sha256: UNSIGNED-PAYLOAD: the
// server does not hash the body to check a signed digest and the client does not hash it up
// front, so a PUT is as cheap as the transport allows (integrity comes from the ETag, which is
// the body's MD5 for single PUTs, and optional x-amz-checksum-* headers). All other requests sign
// the SHA-256 of their (empty or small) body.
class S3Client {
 public:
  explicit S3Client(S3ClientConfig config);

  Status Connect() { return http_.Connect(); }

  Status CreateBucket(std::string_view bucket);
  Status DeleteBucket(std::string_view bucket);
  Status DeleteObject(std::string_view bucket, std::string_view key);

  // ListBuckets, following continuation tokens until the last page.
  Result<std::vector<BucketEntry>> ListBuckets();
  // One page of ListObjectsV2 (encoding-type=url; keys and prefixes come back decoded). A
  // truncated page without a NextContinuationToken is an error (the listing could not go on).
  Result<ListObjectsPage> ListObjectsV2(std::string_view bucket, const ListObjectsOptions& opts);

  // PutObject from a buffer, or size bytes pulled from `pull` (streamed, never held whole).
  // extra_headers (lower-case names) are sent and signed, e.g. content-type, x-amz-meta-*.
  Result<PutObjectResult> PutObject(std::string_view bucket, std::string_view key,
                                    std::string_view data, const HeaderList& extra_headers = {});
  Result<PutObjectResult> PutObject(std::string_view bucket, std::string_view key, uint64_t size,
                                    BodyPull pull, const HeaderList& extra_headers = {});

  // GetObject streaming the body into `sink`, or straight into dst[0, capacity) (a larger body is
  // an error). The byte count is checked against Content-Length; with a range, the status must be
  // 206 unless the server chose to send the whole object (200, allowed by HTTP).
  Result<GetObjectResult> GetObject(std::string_view bucket, std::string_view key,
                                    std::optional<ByteRange> range, const BodySink& sink);
  Result<GetObjectResult> GetObjectInto(std::string_view bucket, std::string_view key,
                                        std::optional<ByteRange> range, char* dst, size_t capacity);

  // Signs and sends any request. Transport errors only: check the response status yourself (see
  // S3ErrorFromResponse).
  Result<HttpResponse> Execute(const S3Request& request, const ResponseTarget& target);

  HttpClient& http() { return http_; }
  const S3ClientConfig& config() const { return config_; }
  // Tries beyond the first, over this client's life (S3ClientConfig::max_attempts).
  uint64_t retries() const { return retries_; }

 private:
  Result<GetObjectResult> DoGet(std::string_view bucket, std::string_view key,
                                std::optional<ByteRange> range, const ResponseTarget& target);
  Result<PutObjectResult> DoPut(S3Request request);

  Result<HttpResponse> SendSigned(const S3Request& request, const ResponseTarget& target);

  S3ClientConfig config_;
  HttpClient http_;
  uint64_t retries_ = 0;
};

// "/bucket/key" with the key percent-encoded the way SigV4 canonicalises it ('/' kept).
std::string S3ObjectPath(std::string_view bucket, std::string_view key);

}  // namespace rdmastor::client
