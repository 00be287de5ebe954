// What an S3 operation's handler sees and answers, without HTTP plumbing: it takes the request as
// a value (S3Request) and the server's parts (Env), and returns a Reply that S3Api sends. Handlers
// live in s3/{bucket,list,object,multipart,copy}.cc (declared in s3/handlers.h) and are unit-tested
// against a real object layer without a server. Nothing here includes Beast or Asio.
//
// Also here: the pieces several handlers share (upload bodies and their digests, stored headers,
// preconditions, copy sources).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "common/result.h"
#include "s3/access.h"
#include "s3/aws_chunked.h"
#include "s3/checksums.h"
#include "s3/http_types.h"
#include "s3/operations.h"
#include "s3/rdma_request.h"
#include "s3/sigv4.h"
#include "s3/sse.h"
#include "storage/object_layer.h"

namespace rdmastor::iam {
class IamStore;
}

namespace rdmastor::s3 {

inline constexpr size_t kIoChunk = 1 << 20;           // streaming buffer per request
inline constexpr size_t kMaxXmlBody = 4 << 20;        // DeleteObjects with 1000 long keys fits
inline constexpr size_t kMaxUserMetadata = 2 * 1024;  // S3's limit on x-amz-meta-* bytes
inline constexpr uint64_t kMaxPutSize = 5ULL << 30;   // single PUT / part

// The server's parts a handler uses.
struct Env {
  storage::ObjectLayer& store;
  iam::IamStore* iam = nullptr;  // bucket owners, ACLs, policies (CreateBucket, DeleteBucket)
  const SseConfig* sse = nullptr;
  rdma::S3RdmaService* rdma = nullptr;  // S3 over RDMA; null: token requests are declined
  std::string region = "us-east-1";
  bool region_configured = false;  // CreateBucket refuses another LocationConstraint
};

// One request, routed and authenticated.
struct S3Request {
  S3Request(const HttpRequest& r, BodySource& body, std::string id)
      : req(r), raw_body(body), request_id(std::move(id)) {}

  const HttpRequest& req;
  BodySource& raw_body;
  std::string request_id;
  S3Op op = S3Op::kUnknown;  // the request's operation (s3/operations.h)
  std::string bucket;
  std::string key;
  bool has_key = false;  // path named an object (possibly with an empty key -> invalid)
  std::vector<std::pair<std::string, std::string>> query;  // decoded
  AuthContext auth;             // the verified signature (payload mode, chunk signing)
  Caller caller;                // who signed the request (anonymous: nobody)
  storage::VersionSel version;  // ?versionId: nullopt = the latest, "" = the null version
  // May the caller do `action` on `key` of this bucket? (DeleteObjects checks each key.)
  std::function<Status(std::string_view action, const std::string& key)> allowed;

  bool Has(std::string_view name) const {
    for (const auto& [k, v] : query)
      if (k == name) return true;
    return false;
  }
  std::string Q(std::string_view name) const {
    for (const auto& [k, v] : query)
      if (k == name) return v;
    return {};
  }
  std::string Resource() const { return "/" + bucket + (bucket.empty() ? "" : "/") + key; }
};

// What a handler answers.
struct Reply {
  Reply() = default;
  // An S3 error (status and XML from the error table), with `extra` headers.
  Reply(Error e, HeaderList extra = {}) : headers(std::move(extra)), error(std::move(e)) {}

  int status = 200;
  HeaderList headers;
  std::string body;  // "" = none
  std::string content_type;
  std::optional<Error> error;
  // GetObject / HeadObject: the response is `length` bytes from `start` of `reader` (only the
  // head for HEAD).
  std::unique_ptr<storage::ObjectReader> reader;
  uint64_t start = 0, length = 0;
  bool rdma_declined = false;  // an S3-over-RDMA request answered 501 (metrics)

  bool ok() const { return !error; }
};

Reply XmlReply(std::string xml, int status = 200, HeaderList extra = {});
Reply EmptyReply(int status, HeaderList extra = {});
inline Reply ErrorReply(Error e, HeaderList extra = {}) {
  return Reply(std::move(e), std::move(extra));
}
// A read that met a delete marker: the latest version is one (404, with the marker's headers, as
// AWS answers) or the version named is one (405 MethodNotAllowed, Allow: DELETE).
Reply VersionErrorReply(const S3Request& r, const Error& err, storage::ObjectLayer& store);

// ---- Shared by several handlers ----

std::string ToLower(std::string_view s);
std::string Quote(std::string_view etag);
std::string Unquote(std::string_view s);
// If-Match / If-None-Match: "*" or a comma-separated list of (quoted) ETags.
bool EtagMatches(std::string_view header, std::string_view etag);
std::optional<int64_t> ParseInt(std::string_view s);
// Every line of a header, joined by commas (RFC 9110 5.3); nullopt when absent.
std::optional<std::string> JoinedHeader(const HttpRequest& req, std::string_view name);

// Headers S3 stores with an object and returns on GET/HEAD (besides x-amz-meta-*).
inline constexpr std::string_view kStoredHeaders[] = {
    "cache-control", "content-disposition", "content-encoding", "content-language", "expires"};

// Hashes the payload as it streams through: MD5 for the ETag, SHA-256 when the signature covers
// the payload, and the S3 checksum the client asked for.
class DigestingSource : public BodySource {
 public:
  DigestingSource(BodySource& in, bool sha256, std::optional<hash::Algo> checksum);
  Result<size_t> Read(char* buf, size_t len) override;
  uint64_t bytes() const { return bytes_; }
  std::string Md5() { return md5_->Final(); }
  std::string Sha256() { return sha256_ ? sha256_->Final() : std::string(); }
  std::string Checksum() { return checksum_ ? checksum_->Final() : std::string(); }

 private:
  BodySource& in_;
  std::unique_ptr<hash::Hasher> md5_, sha256_, checksum_;
  uint64_t bytes_ = 0;
};

// Streams an existing object (or a range of it) as a BodySource: the source of CopyObject and
// UploadPartCopy.
class ReaderSource : public BodySource {
 public:
  ReaderSource(storage::ObjectReader& reader, uint64_t start, uint64_t length)
      : reader_(reader), pos_(start), end_(start + length) {}
  Result<size_t> Read(char* buf, size_t len) override;

 private:
  storage::ObjectReader& reader_;
  uint64_t pos_, end_;
};

// What a write stores: the plaintext as it arrives, or its encryption under the object key
// (crypto/dare.h), one stream per object or part. Encryption comes before erasure coding: the
// storage layer sees only the stream.
struct StoredBody {
  std::optional<crypto::Key> key;  // set: encrypted
  std::unique_ptr<crypto::EncryptingSource> enc;
  BodySource* body = nullptr;

  StoredBody(BodySource& plain, const std::optional<crypto::Key>& object_key);
  ~StoredBody();
  StoredBody(const StoredBody&) = delete;
  StoredBody& operator=(const StoredBody&) = delete;
  // The declared plaintext size as stored.
  std::optional<uint64_t> Size(std::optional<uint64_t> plain) const {
    if (!key || !plain) return plain;
    return crypto::EncryptedSize(*plain);
  }
};

// The ETag a write records from its plaintext MD5 (hex): SSE-C data gets a keyed digest (AWS:
// not the MD5 of the data); SSE-S3 and plain data the MD5.
std::string WriteEtag(SseKind kind, const std::optional<crypto::Key>& key, std::string md5_hex);

// Everything an upload (PutObject, UploadPart, XML bodies) needs to take the body apart and check
// it: de-chunking of aws-chunked bodies, hashing, and the digests the client declared.
struct UploadBody {
  std::unique_ptr<AwsChunkedSource> chunked;
  std::unique_ptr<DigestingSource> digest;
  std::optional<uint64_t> size;             // decoded payload size when declared
  DeclaredChecksum declared;                // x-amz-checksum-* the client sent (header or trailer)
  std::optional<hash::Algo> checksum_algo;  // computed as the body streams, and stored
  std::string content_md5;                  // raw 16 bytes when Content-MD5 was sent
};

// How x-amz-checksum-* apply to a body.
struct ChecksumRule {
  // CompleteMultipartUpload: the headers describe the object being completed, not the XML body.
  bool headers_describe_body = true;
  const storage::PutOptions* upload = nullptr;  // UploadPart: the upload's recorded algorithm
  // Object data (PutObject, UploadPart): a body that declares no checksum gets S3's default one
  // (checksum::kDefaultAlgo), computed as it streams.
  bool default_checksum = false;
};

// `rdma`: the payload comes over RDMA (exactly rdma->size() bytes) instead of the HTTP body.
Result<UploadBody> PrepareUpload(S3Request& r, RdmaPutBody* rdma = nullptr,
                                 const ChecksumRule& rule = {});
// Verifies what the client declared against what arrived; returns what the object records.
Result<storage::CommitInfo> FinishUpload(S3Request& r, UploadBody& up);
// The request's XML document (at most kMaxXmlBody; "" when there is no body).
Result<std::string> ReadXmlBody(S3Request& r, const ChecksumRule& rule = {});

// Content-MD5 or an S3 checksum (an x-amz-checksum-* header, the trailer announcing one, or
// x-amz-sdk-checksum-algorithm).
bool DeclaresIntegrity(const HttpRequest& req);
// What AWS answers a request that must declare one (the Object Lock and CORS configuration PUTs)
// and does not: 400 InvalidRequest.
Status RequireIntegrity(const HttpRequest& req);

// x-amz-storage-class as stored: "" for STANDARD (or none).
std::string StorageClassOf(const HttpRequest& req);
// Content-Type, stored headers, user metadata, tags, storage class and ACL from a PUT /
// CreateMultipartUpload / REPLACE copy. Values are kept byte for byte; a header sent on several
// lines is joined with commas.
Result<storage::PutOptions> ObjectOptionsFromHeaders(const HttpRequest& req);

// The owner of the object version (or upload) the request writes, into opts.owner, under the
// bucket's OwnershipControls and PublicAccessBlock (s3/ownership.h: NewObjectOwner).
Status SetNewObjectOwner(const Env& env, const S3Request& r, storage::PutOptions& opts);

// If-Match / If-None-Match on a write (PutObject, CompleteMultipartUpload, CopyObject), checked by
// the object layer under the key's lock against the object the write would replace.
storage::WritePrecondition ConditionalWrite(const HttpRequest& req);

// The encryption a new object gets (SSE-C / x-amz-server-side-encryption headers, else the
// bucket's default).
Result<SseRequest> WriteEncryptionOf(const Env& env, const S3Request& r);
// The object key of a stored object about to be read (nullopt: not encrypted).
Result<std::optional<crypto::Key>> ReadKey(const SseConfig& cfg, const storage::ObjectInfo& info,
                                           const SseRequest& sse);

// "bucket/key" or "/bucket/key", URL-encoded, optionally "?versionId=<id>|null" (into `version`).
Result<std::pair<std::string, std::string>> ParseCopySource(std::string_view header,
                                                            storage::VersionSel* version);

// max-keys and its kin: 1000 when absent, at most 1000.
Result<int> ParseMaxKeys(const S3Request& r, std::string_view name);

// ?partNumber= of UploadPart / UploadPartCopy: 1 to 10000.
Result<int> PartNumberOf(const S3Request& r);

// The object key of a multipart upload for a part (or Complete) request: an SSE-C upload needs
// the upload's key on every part (AWS), SSE-S3 and plain uploads take no SSE-C parameters.
// `required`: false where AWS lets the key be left out (Complete without checksums); a key that
// is sent is always checked.
Result<std::optional<crypto::Key>> UploadKey(const SseConfig& cfg, const HttpRequest& req,
                                             const storage::PutOptions& upload,
                                             const std::string& bucket, const std::string& key,
                                             SseRequest* sse_out, bool required = true);

}  // namespace rdmastor::s3
