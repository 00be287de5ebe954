#include "s3/sigv2.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/hash.h"
#include "common/text.h"
#include "common/uri.h"

namespace rdmastor::s3 {

namespace {

constexpr int64_t kMaxSkewS = 15 * 60;

// The query parameters S3 signs in V2's canonicalized resource: AWS's documented list, with the
// later additions botocore and MinIO sign too. Sorted (the resource lists them in this order).
constexpr std::string_view kSubResources[] = {"accelerate",
                                              "acl",
                                              "analytics",
                                              "cors",
                                              "defaultObjectAcl",
                                              "delete",
                                              "encryption",
                                              "inventory",
                                              "legal-hold",
                                              "lifecycle",
                                              "location",
                                              "logging",
                                              "metrics",
                                              "notification",
                                              "object-lock",
                                              "partNumber",
                                              "policy",
                                              "replication",
                                              "requestPayment",
                                              "response-cache-control",
                                              "response-content-disposition",
                                              "response-content-encoding",
                                              "response-content-language",
                                              "response-content-type",
                                              "response-expires",
                                              "restore",
                                              "retention",
                                              "select",
                                              "select-type",
                                              "storageClass",
                                              "tagging",
                                              "torrent",
                                              "uploadId",
                                              "uploads",
                                              "versionId",
                                              "versioning",
                                              "versions",
                                              "website"};

bool IsSubResource(std::string_view name) {
  return std::binary_search(std::begin(kSubResources), std::end(kSubResources), name);
}

using uri::SplitRawQuery;

std::optional<std::string> QueryParam(std::string_view raw_query, std::string_view name) {
  for (const auto& p : SplitRawQuery(raw_query)) {
    auto n = uri::Decode(p.name, true);
    if (!n || *n != name) continue;
    auto v = uri::Decode(p.value, true);
    return v ? *v : std::string(p.value);
  }
  return std::nullopt;
}

// The resource with its sub-resources. decoded: values decoded and "name=" kept as sent (AWS,
// botocore); otherwise values as sent and an empty value written as the bare name (MinIO's
// reading, which some of its SDKs sign).
std::string CanonicalResource(std::string_view raw_path, std::string_view raw_query,
                              std::string_view vhost_bucket, bool decoded) {
  std::string out;
  if (!vhost_bucket.empty()) out.append("/").append(vhost_bucket);
  out.append(raw_path.empty() ? std::string_view("/") : raw_path);
  std::vector<std::pair<std::string, std::string>> subs;  // name, "=value" or ""
  for (const auto& p : SplitRawQuery(raw_query)) {
    if (!IsSubResource(p.name)) continue;
    std::string value;
    if (decoded) {
      auto v = uri::Decode(p.value, true);
      if (p.has_equals) value = "=" + (v ? *v : std::string(p.value));
    } else if (!p.value.empty()) {
      value = "=" + std::string(p.value);
    }
    subs.emplace_back(std::string(p.name), std::move(value));
  }
  std::stable_sort(subs.begin(), subs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  char sep = '?';
  for (const auto& [name, value] : subs) {
    out += sep;
    out += name;
    out += value;
    sep = '&';
  }
  return out;
}

std::string StringToSign(std::string_view method, const HttpRequest& req, std::string_view date,
                         std::string_view amz_headers, std::string_view resource) {
  std::string s;
  s.append(method).append("\n");
  s.append(text::TrimBlanks(req.HeaderOr("content-md5"))).append("\n");
  s.append(text::TrimBlanks(req.HeaderOr("content-type"))).append("\n");
  s.append(date).append("\n");
  s.append(amz_headers);
  s.append(resource);
  return s;
}

// The dates V2 clients send: RFC 1123 with "GMT" or a numeric zone ("+0000", AWS's examples).
std::optional<int64_t> ParseV2Date(std::string_view s) {
  s = text::TrimBlanks(s);
  if (s.size() > 6 && (s[s.size() - 5] == '+' || s[s.size() - 5] == '-') &&
      s[s.size() - 6] == ' ') {
    std::string_view zone = s.substr(s.size() - 4);
    if (!std::all_of(zone.begin(), zone.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    int offset = ((zone[0] - '0') * 10 + (zone[1] - '0')) * 3600 +
                 ((zone[2] - '0') * 10 + (zone[3] - '0')) * 60;
    if (s[s.size() - 5] == '-') offset = -offset;
    auto t = ParseRfc1123Date(std::string(s.substr(0, s.size() - 5)) + "GMT");
    if (!t) return std::nullopt;
    return *t - offset;
  }
  if (auto t = ParseRfc1123Date(s)) return t;
  return ParseAmzDate(s);  // ISO 8601 basic, as V4 clients write x-amz-date
}

// The signature the client must have sent, for each reading of the string to sign that S3 and
// MinIO clients use; the caller compares each in constant time.
std::vector<std::string> Candidates(const HttpRequest& req, std::string_view secret,
                                    std::string_view date_line, bool presigned,
                                    std::string_view vhost_bucket) {
  std::set<std::string> resources;
  std::vector<std::string_view> paths = {req.raw_path};
  // A path-style bucket request ("/bucket"): botocore signs it as "/bucket/".
  std::string with_slash = req.raw_path + "/";
  if (vhost_bucket.empty() && req.raw_path.size() > 1 &&
      req.raw_path.find('/', 1) == std::string::npos)
    paths.push_back(with_slash);
  for (auto path : paths) {
    resources.insert(CanonicalResource(path, req.raw_query, vhost_bucket, true));
    resources.insert(CanonicalResource(path, req.raw_query, vhost_bucket, false));
  }
  std::vector<std::pair<std::string, std::string>> dated;  // date line, amz headers
  dated.emplace_back(date_line, V2CanonicalAmzHeaders(req.headers));
  const std::string* amz_date = req.FindHeader("x-amz-date");
  if (!presigned && amz_date != nullptr) {
    // AWS: with x-amz-date the Date line is empty ... or, in its own examples, carries the
    // x-amz-date value while x-amz-date leaves the canonical headers.
    dated.emplace_back("", V2CanonicalAmzHeaders(req.headers));
    dated.emplace_back(std::string(text::TrimBlanks(*amz_date)), V2CanonicalAmzHeaders(req.headers, true));
  }
  std::vector<std::string> out;
  for (const auto& resource : resources)
    for (const auto& [date, amz] : dated)
      out.push_back(V2Sign(secret, StringToSign(req.method, req, date, amz, resource)));
  return out;
}

bool AnyMatches(const std::vector<std::string>& expected, std::string_view provided) {
  bool match = false;
  for (const auto& e : expected) match |= hash::ConstantTimeEquals(e, provided);
  return match;
}

AuthContext V2Context(std::string access_key, bool presigned) {
  AuthContext ctx;
  ctx.access_key = std::move(access_key);
  ctx.payload_mode = PayloadMode::kUnsigned;  // V2 does not sign the payload (Content-MD5 may)
  ctx.presigned = presigned;
  ctx.signature_version = 2;
  return ctx;
}

// Streaming (aws-chunked) signatures chain from a V4 seed signature; V2 has none.
Status CheckNoStreaming(const HttpRequest& req) {
  const std::string* sha = req.FindHeader("x-amz-content-sha256");
  if (sha != nullptr && sha->starts_with("STREAMING-"))
    return MakeError(ErrorCode::kInvalidRequest,
                     "Streaming (aws-chunked) uploads require Signature Version 4.");
  return {};
}

}  // namespace

bool IsV2Authorization(std::string_view authorization) {
  authorization = text::TrimBlanks(authorization);
  return authorization.starts_with("AWS ") || authorization.starts_with("AWS\t");
}

std::string V2CanonicalResource(std::string_view raw_path, std::string_view raw_query,
                                std::string_view vhost_bucket) {
  return CanonicalResource(raw_path, raw_query, vhost_bucket, true);
}

std::string V2CanonicalAmzHeaders(const HeaderList& headers, bool skip_amz_date) {
  std::map<std::string, std::string> amz;
  for (const auto& [name, value] : headers) {
    std::string lower = text::ToLower(name);
    if (!lower.starts_with("x-amz-") || (skip_amz_date && lower == "x-amz-date")) continue;
    // Folded (multi-line) values are unfolded: each line break with its indent becomes a space.
    std::string v;
    bool blank = false;
    for (char c : text::TrimBlanks(value)) {
      if (c == '\r' || c == '\n' || c == ' ' || c == '\t') {
        blank = true;
        continue;
      }
      if (blank && !v.empty()) v += ' ';
      blank = false;
      v += c;
    }
    auto [it, inserted] = amz.emplace(std::move(lower), v);
    if (!inserted) it->second += "," + v;
  }
  std::string out;
  for (const auto& [name, value] : amz) out.append(name).append(":").append(value).append("\n");
  return out;
}

std::string V2Sign(std::string_view secret, std::string_view string_to_sign) {
  return hash::Base64Encode(hash::HmacSha1(secret, string_to_sign));
}

Result<AuthContext> VerifyV2Header(const HttpRequest& req, std::string_view authorization,
                                   const SecretLookup& lookup, int64_t now_unix,
                                   std::string_view vhost_bucket) {
  std::string_view v = text::TrimBlanks(text::TrimBlanks(authorization).substr(3));
  size_t colon = v.rfind(':');  // access keys may contain ':', signatures (base64) never do
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == v.size())
    return MakeError(ErrorCode::kInvalidArgument,
                     "Authorization header is invalid -- one and only one ' ' (space) required");
  std::string access_key(v.substr(0, colon));
  std::string_view provided = v.substr(colon + 1);
  if (auto st = CheckNoStreaming(req); !st.ok()) return st.error();

  // x-amz-date wins over Date (AWS); either gives the request time.
  std::optional<int64_t> req_time;
  if (const std::string* d = req.FindHeader("x-amz-date")) {
    req_time = ParseV2Date(*d);
  } else if (const std::string* d2 = req.FindHeader("date")) {
    req_time = ParseV2Date(*d2);
  }
  if (!req_time) {
    return MakeError(ErrorCode::kAccessDenied,
                     "AWS authentication requires a valid Date or x-amz-date header");
  }
  auto secret = lookup(access_key);
  if (!secret) return ErrorCode::kInvalidAccessKeyId;
  int64_t skew = *req_time - now_unix;
  if (skew > kMaxSkewS || skew < -kMaxSkewS) return ErrorCode::kRequestTimeTooSkewed;

  std::string date_line(text::TrimBlanks(req.HeaderOr("date")));
  if (!AnyMatches(Candidates(req, *secret, date_line, false, vhost_bucket), provided))
    return ErrorCode::kSignatureDoesNotMatch;
  return V2Context(std::move(access_key), false);
}

Result<AuthContext> VerifyV2Presigned(const HttpRequest& req, const SecretLookup& lookup,
                                      int64_t now_unix, std::string_view vhost_bucket) {
  auto access_key = QueryParam(req.raw_query, "AWSAccessKeyId");
  auto signature = QueryParam(req.raw_query, "Signature");
  auto expires = QueryParam(req.raw_query, "Expires");
  if (!access_key || !signature || !expires || access_key->empty() || signature->empty()) {
    return MakeError(ErrorCode::kAccessDenied,
                     "Query-string authentication requires the Signature, Expires and "
                     "AWSAccessKeyId parameters");
  }
  // An unencoded '+' of the base64 signature arrives as a space after form decoding.
  std::replace(signature->begin(), signature->end(), ' ', '+');
  if (expires->empty() || expires->size() > 18 ||
      !std::all_of(expires->begin(), expires->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return MakeError(ErrorCode::kAccessDenied,
                     "Invalid date (should be seconds since epoch): " + expires->substr(0, 64));
  }
  if (auto st = CheckNoStreaming(req); !st.ok()) return st.error();
  auto secret = lookup(*access_key);
  if (!secret) return ErrorCode::kInvalidAccessKeyId;
  if (now_unix > std::stoll(*expires))
    return MakeError(ErrorCode::kAccessDenied, "Request has expired");
  if (!AnyMatches(Candidates(req, *secret, *expires, true, vhost_bucket), *signature))
    return ErrorCode::kSignatureDoesNotMatch;
  return V2Context(std::move(*access_key), true);
}

}  // namespace rdmastor::s3
