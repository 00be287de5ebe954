#include "s3/sigv4.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/hash.h"
#include "common/text.h"
#include "common/uri.h"
#include "common/utf8.h"
#include "s3/sigv2.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
constexpr std::string_view kStreamingSigned = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
constexpr std::string_view kStreamingSignedTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr int64_t kMaxSkewS = 15 * 60;
constexpr int64_t kMaxPresignExpiresS = 7 * 24 * 3600;
constexpr size_t kMaxHeadersNotSignedLength = 512;

// Headers a client must not sign because proxies and HTTP stacks add, drop or rewrite them
// (the same list botocore uses).
bool IsUnsignableHeader(std::string_view name) {
  return name == "authorization" || name == "expect" || name == "transfer-encoding" ||
         name == "user-agent" || name == "x-amzn-trace-id";
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int ToInt(std::string_view digits) {
  int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// SigV4 "Trimall", appended to `out`: strip the ends and turn every inner run of blanks into one
// space.
void AppendTrimmedAll(std::string& out, std::string_view v) {
  v = Trim(v);
  bool in_space = false;
  for (char c : v) {
    if (IsSpace(c)) {
      in_space = true;
      continue;
    }
    if (in_space) out += ' ';
    in_space = false;
    out += c;
  }
}

// Seconds since the epoch from broken-down UTC; nullopt when a field is out of range (Feb 30 etc).
std::optional<int64_t> FromUtc(int year, int mon, int day, int hour, int min, int sec) {
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  // timegm normalises overflowing fields; a changed day or month means the date did not exist.
  if (tm.tm_mday != day || tm.tm_mon != mon - 1) return std::nullopt;
  return static_cast<int64_t>(t);
}

// RFC 1123 HTTP date: "Fri, 24 May 2013 00:00:00 GMT".
std::optional<int64_t> ParseHttpDate(std::string_view s) {
  s = Trim(s);
  size_t comma = s.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  s.remove_prefix(comma + 2);
  // "24 May 2013 00:00:00 GMT"
  if (s.size() != 24 || s[2] != ' ' || s[6] != ' ' || s[11] != ' ' || s[14] != ':' ||
      s[17] != ':' || s.substr(20) != " GMT") {
    return std::nullopt;
  }
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int mon = 0;
  for (int i = 0; i < 12; ++i) {
    if (s.substr(3, 3) == kMonths[i]) mon = i + 1;
  }
  if (mon == 0 || !IsDigits(s.substr(0, 2)) || !IsDigits(s.substr(7, 4)) ||
      !IsDigits(s.substr(12, 2)) || !IsDigits(s.substr(15, 2)) || !IsDigits(s.substr(18, 2))) {
    return std::nullopt;
  }
  return FromUtc(ToInt(s.substr(7, 4)), mon, ToInt(s.substr(0, 2)), ToInt(s.substr(12, 2)),
                 ToInt(s.substr(15, 2)), ToInt(s.substr(18, 2)));
}

std::string FormatAmzDate(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Query parameters decoded where possible; a malformed escape is kept literally so the canonical
// form is still defined (the signature then simply fails to match).
std::vector<std::pair<std::string, std::string>> SplitQuery(std::string_view raw) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const uri::RawQueryParam& p : uri::SplitRawQuery(raw)) {
    auto n = uri::Decode(p.name, /*plus_as_space=*/true);
    auto v = uri::Decode(p.value, /*plus_as_space=*/true);
    out.emplace_back(n ? std::move(*n) : std::string(p.name),
                     v ? std::move(*v) : std::string(p.value));
  }
  return out;
}

const std::string* FindParam(const std::vector<std::pair<std::string, std::string>>& params,
                             std::string_view name) {
  for (const auto& [k, v] : params)
    if (k == name) return &v;
  return nullptr;
}

// Python's http.client (under botocore) puts a non-ASCII header value on the wire as ISO-8859-1
// but the SDK signs its UTF-8 form. A value that is not valid UTF-8 cannot have been signed as the
// bytes themselves by such a client, so it is also tried that way (the bytes stored are the ones
// sent either way). nullopt: every value is UTF-8 already.
std::optional<HeaderList> Latin1HeadersAsUtf8(const HeaderList& headers) {
  std::optional<HeaderList> out;
  for (size_t i = 0; i < headers.size(); ++i) {
    const std::string& v = headers[i].second;
    if (IsValidUtf8(v)) continue;
    if (!out) out = headers;
    std::string utf8;
    for (unsigned char c : v) {
      if (c < 0x80) {
        utf8 += static_cast<char>(c);
      } else {
        utf8 += static_cast<char>(0xC0 | (c >> 6));
        utf8 += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    (*out)[i].second = std::move(utf8);
  }
  return out;
}

std::string JoinSignedHeaders(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ';';
    out += n;
  }
  return out;
}

// Builds the canonical request. Returns the name of a signed header missing from `headers` as an
// error instead.
Result<std::string> CanonicalRequest(std::string_view method, std::string_view raw_path,
                                     std::string_view canonical_query, const HeaderList& headers,
                                     const std::vector<std::string>& signed_headers,
                                     std::string_view payload) {
  std::string cr;
  cr.reserve(512);
  cr.append(method).append("\n");
  cr.append(CanonicalUri(raw_path)).append("\n");
  cr.append(canonical_query).append("\n");
  for (const auto& name : signed_headers) {
    // The header's value: every occurrence trimmed and joined with ','.
    cr.append(name).append(":");
    bool found = false;
    for (const auto& [k, v] : headers) {
      if (k != name) continue;
      if (found) cr += ',';
      AppendTrimmedAll(cr, v);
      found = true;
    }
    if (!found) {
      return MakeError(ErrorCode::kSignatureDoesNotMatch,
                       "Signed header '" + name + "' is missing from the request.");
    }
    cr.append("\n");
  }
  cr.append("\n");
  cr.append(JoinSignedHeaders(signed_headers)).append("\n");
  cr.append(payload);
  return cr;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string s;
  s.append(kAlgorithm).append("\n");
  s.append(amz_date).append("\n");
  s.append(scope).append("\n");
  s.append(hash::Sha256Hex(canonical_request));
  return s;
}

std::string SignHex(std::string_view signing_key, std::string_view string_to_sign) {
  return hash::HexEncode(hash::HmacSha256(signing_key, string_to_sign));
}

struct Credential {
  std::string access_key;
  std::string date;  // yyyymmdd
  std::string region;
  std::string scope;  // date/region/s3/aws4_request
};

// "AK/20130524/us-east-1/s3/aws4_request". The scope is the last four parts so that access keys
// containing '/' still parse (MinIO allows them).
Result<Credential> ParseCredential(std::string_view cred, ErrorCode err) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t slash = cred.find('/', pos);
    if (slash == std::string_view::npos) {
      parts.push_back(cred.substr(pos));
      break;
    }
    parts.push_back(cred.substr(pos, slash - pos));
    pos = slash + 1;
  }
  if (parts.size() < 5) {
    return MakeError(err, "Credential must be <access-key>/<date>/<region>/s3/aws4_request.");
  }
  size_t n = parts.size();
  std::string_view date = parts[n - 4], region = parts[n - 3], service = parts[n - 2],
                   terminal = parts[n - 1];
  Credential c;
  c.access_key = std::string(cred.substr(
      0, cred.size() - date.size() - region.size() - service.size() - terminal.size() - 4));
  if (c.access_key.empty()) return MakeError(err, "Credential has an empty access key.");
  if (date.size() != 8 || !IsDigits(date)) {
    return MakeError(err, "Credential date must be in yyyyMMdd format.");
  }
  if (region.empty()) return MakeError(err, "Credential has an empty region.");
  if (service != "s3") {
    return MakeError(err, "Credential should be scoped to the correct service: 's3'.");
  }
  if (terminal != "aws4_request") {
    return MakeError(err, "Credential should be scoped with a valid terminator: 'aws4_request'.");
  }
  c.date = std::string(date);
  c.region = std::string(region);
  c.scope = std::string(cred.substr(c.access_key.size() + 1));
  return c;
}

// S3's answer to a request with headers outside its signature (names: comma separated).
Error HeadersNotSigned(std::string names) {
  Error e = MakeError(ErrorCode::kAccessDenied,
                      "There were headers present in the request which were not signed");
  e.details.emplace_back("HeadersNotSigned", std::move(names));
  return e;
}

Result<std::vector<std::string>> ParseSignedHeaders(std::string_view list, ErrorCode err) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t semi = list.find(';', pos);
    if (semi == std::string_view::npos) semi = list.size();
    std::string_view name = Trim(list.substr(pos, semi - pos));
    pos = semi + 1;
    if (name.empty()) return MakeError(err, "SignedHeaders contains an empty header name.");
    out.push_back(text::ToLower(name));
  }
  if (std::find(out.begin(), out.end(), "host") == out.end()) return HeadersNotSigned("host");
  return out;
}

// S3 requires every x-amz-* header a request carries to be signed: otherwise whoever holds a
// presigned URL could add headers that change what it does (x-amz-copy-source turns a PUT into a
// copy of another bucket's object). Exempt are the headers whose value the signature covers anyway:
// x-amz-content-sha256 is the canonical request's payload line, and with header auth x-amz-date is
// in the string to sign.
Status CheckAmzHeadersSigned(const HeaderList& headers,
                             const std::vector<std::string>& signed_names, bool presigned) {
  std::string unsigned_names;
  for (const auto& [name, value] : headers) {
    if (!name.starts_with("x-amz-") || name == "x-amz-content-sha256") continue;
    if (!presigned && name == "x-amz-date") continue;
    if (std::find(signed_names.begin(), signed_names.end(), name) != signed_names.end()) continue;
    if (!unsigned_names.empty()) unsigned_names += ", ";
    // The list goes back in the error document: bounded, whatever the client piles up.
    if (unsigned_names.size() + name.size() > kMaxHeadersNotSignedLength) {
      unsigned_names += "...";
      break;
    }
    unsigned_names += name;
  }
  if (unsigned_names.empty()) return Status();
  return HeadersNotSigned(std::move(unsigned_names));
}

Result<PayloadMode> ModeFromContentSha(std::string_view v, std::string* content_sha256) {
  if (v.size() == 64 && IsHex(v)) {
    *content_sha256 = text::ToLower(v);
    return PayloadMode::kSignedSha256;
  }
  if (v == kUnsignedPayload) return PayloadMode::kUnsigned;
  if (v == kStreamingSigned) return PayloadMode::kStreamingSigned;
  if (v == kStreamingSignedTrailer) return PayloadMode::kStreamingSignedTrailer;
  if (v == kStreamingUnsignedTrailer) return PayloadMode::kStreamingUnsignedTrailer;
  return MakeError(
      ErrorCode::kInvalidArgument,
      "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-"
      "PAYLOAD[-TRAILER], STREAMING-UNSIGNED-PAYLOAD-TRAILER or a hex SHA-256 digest.");
}

// Signed headers a front end may legitimately have consumed: restore the value the client must
// have sent so the canonical request still matches (MinIO does the same for Expect). nullopt:
// nothing to restore, the request's own headers are the ones signed (no copy of them).
std::optional<HeaderList> WithRestoredHeaders(const HttpRequest& req,
                                              const std::vector<std::string>& signed_names) {
  std::optional<HeaderList> headers;
  for (const auto& name : signed_names) {
    if (req.FindHeader(name) != nullptr) continue;
    if (name == "expect") {
      if (!headers) headers = req.headers;
      headers->emplace_back("expect", "100-continue");
    }
    if (name == "content-length" && req.content_length) {
      if (!headers) headers = req.headers;
      headers->emplace_back("content-length", std::to_string(*req.content_length));
    }
  }
  return headers;
}

struct HeaderAuthFields {
  std::string credential, signed_headers, signature;
};

Result<HeaderAuthFields> ParseAuthorizationHeader(std::string_view v) {
  v = Trim(v);
  constexpr auto kMalformed = ErrorCode::kAuthorizationHeaderMalformed;
  if (v.substr(0, kAlgorithm.size()) != kAlgorithm ||
      (v.size() > kAlgorithm.size() && !IsSpace(v[kAlgorithm.size()]) &&
       v[kAlgorithm.size()] != ',')) {
    return MakeError(ErrorCode::kInvalidRequest,
                     "The authorization mechanism you have provided is not supported. Please use "
                     "AWS4-HMAC-SHA256.");
  }
  v.remove_prefix(kAlgorithm.size());
  HeaderAuthFields f;
  bool have_cred = false, have_signed = false, have_sig = false;
  // Components are separated by commas and/or blanks; clients differ in which they use.
  size_t pos = 0;
  auto is_sep = [](char c) { return c == ',' || IsSpace(c); };
  while (pos < v.size()) {
    while (pos < v.size() && is_sep(v[pos])) ++pos;
    if (pos >= v.size()) break;
    size_t end = pos;
    while (end < v.size() && !is_sep(v[end])) ++end;
    std::string_view comp = v.substr(pos, end - pos);
    pos = end;
    size_t eq = comp.find('=');
    if (eq == std::string_view::npos) {
      return MakeError(kMalformed, "Authorization component '" + std::string(comp) +
                                       "' is not of the form Name=Value.");
    }
    std::string_view key = comp.substr(0, eq);
    std::string_view value = comp.substr(eq + 1);
    std::string* dst = nullptr;
    bool* seen = nullptr;
    if (key == "Credential") {
      dst = &f.credential;
      seen = &have_cred;
    } else if (key == "SignedHeaders") {
      dst = &f.signed_headers;
      seen = &have_signed;
    } else if (key == "Signature") {
      dst = &f.signature;
      seen = &have_sig;
    } else {
      return MakeError(kMalformed, "Unknown authorization component '" + std::string(key) + "'.");
    }
    if (*seen) {
      return MakeError(
          kMalformed, "Authorization component '" + std::string(key) + "' appears more than once.");
    }
    *seen = true;
    *dst = std::string(value);
  }
  if (!have_cred || !have_signed || !have_sig || f.credential.empty() || f.signed_headers.empty() ||
      f.signature.empty()) {
    return MakeError(kMalformed,
                     "The authorization header requires Credential, SignedHeaders and Signature.");
  }
  return f;
}

// The context of a request whose signature matched: who signed, how, and what the streaming
// modes' chunk signature chain needs.
AuthContext Verified(AuthContext ctx, Credential cred, PayloadMode mode,
                     std::vector<std::string> signed_headers, bool presigned, std::string signature,
                     std::string signing_key, std::string amz_date) {
  ctx.access_key = std::move(cred.access_key);
  ctx.payload_mode = mode;
  ctx.signed_headers = std::move(signed_headers);
  ctx.presigned = presigned;
  ctx.seed_signature = std::move(signature);
  ctx.signing_key = std::move(signing_key);
  ctx.amz_date = std::move(amz_date);
  ctx.scope = std::move(cred.scope);
  return ctx;
}

Result<AuthContext> VerifyHeaderAuth(const HttpRequest& req, std::string_view authz,
                                     const SecretLookup& lookup, int64_t now_unix) {
  constexpr auto kMalformed = ErrorCode::kAuthorizationHeaderMalformed;
  auto fields = ParseAuthorizationHeader(authz);
  if (!fields.ok()) return fields.error();
  auto cred = ParseCredential(fields->credential, kMalformed);
  if (!cred.ok()) return cred.error();
  auto signed_headers = ParseSignedHeaders(fields->signed_headers, kMalformed);
  if (!signed_headers.ok()) return signed_headers.error();
  if (auto st = CheckAmzHeadersSigned(req.headers, *signed_headers, false); !st.ok())
    return st.error();
  std::string provided = text::ToLower(fields->signature);
  if (provided.size() != 64 || !IsHex(provided)) {
    return MakeError(kMalformed, "Signature must be 64 hexadecimal characters.");
  }

  AuthContext ctx;
  // Without x-amz-content-sha256 (generic SigV4 signers such as curl --aws-sigv4) the payload
  // is taken to be empty, as MinIO does: the hash is then verified like any signed payload.
  static const std::string kEmptySha256 =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const std::string* content_sha = req.FindHeader("x-amz-content-sha256");
  if (content_sha == nullptr) content_sha = &kEmptySha256;
  auto mode = ModeFromContentSha(*content_sha, &ctx.content_sha256);
  if (!mode.ok()) return mode.error();

  // x-amz-date wins over Date; with Date the string to sign carries its ISO 8601 form.
  std::optional<int64_t> req_time;
  std::string amz_date;
  if (const std::string* d = req.FindHeader("x-amz-date")) {
    req_time = ParseAmzDate(Trim(*d));
    amz_date = std::string(Trim(*d));
  } else if (const std::string* d = req.FindHeader("date")) {
    req_time = ParseHttpDate(*d);
    if (req_time) amz_date = FormatAmzDate(*req_time);
  }
  if (!req_time) {
    return MakeError(ErrorCode::kAccessDenied,
                     "AWS authentication requires a valid Date or x-amz-date header");
  }
  if (amz_date.substr(0, 8) != cred->date) {
    return MakeError(kMalformed, "Invalid credential date. Date is not the same as X-Amz-Date.");
  }

  auto secret = lookup(cred->access_key);
  if (!secret) return ErrorCode::kInvalidAccessKeyId;

  int64_t skew = *req_time - now_unix;
  if (skew > kMaxSkewS || skew < -kMaxSkewS) return ErrorCode::kRequestTimeTooSkewed;

  const std::optional<HeaderList> restored = WithRestoredHeaders(req, *signed_headers);
  const HeaderList& headers = restored ? *restored : req.headers;
  const std::string query = CanonicalQuery(req.raw_query, false);
  auto cr =
      CanonicalRequest(req.method, req.raw_path, query, headers, *signed_headers, *content_sha);
  if (!cr.ok()) return cr.error();
  std::string key = DeriveSigningKey(*secret, cred->date, cred->region, "s3");
  std::string expected = SignHex(key, StringToSign(amz_date, cred->scope, *cr));
  if (!hash::ConstantTimeEquals(expected, provided)) {
    auto latin1 = Latin1HeadersAsUtf8(headers);
    if (!latin1) return ErrorCode::kSignatureDoesNotMatch;
    cr = CanonicalRequest(req.method, req.raw_path, query, *latin1, *signed_headers, *content_sha);
    if (!cr.ok()) return cr.error();
    expected = SignHex(key, StringToSign(amz_date, cred->scope, *cr));
    if (!hash::ConstantTimeEquals(expected, provided)) return ErrorCode::kSignatureDoesNotMatch;
  }

  return Verified(std::move(ctx), std::move(*cred), *mode, std::move(*signed_headers),
                  /*presigned=*/false, std::move(provided), std::move(key), std::move(amz_date));
}

Result<AuthContext> VerifyPresigned(const HttpRequest& req,
                                    const std::vector<std::pair<std::string, std::string>>& params,
                                    const SecretLookup& lookup, int64_t now_unix) {
  constexpr auto kQueryErr = ErrorCode::kAuthorizationQueryParametersError;
  const std::string* algo = FindParam(params, "X-Amz-Algorithm");
  const std::string* credential = FindParam(params, "X-Amz-Credential");
  const std::string* date = FindParam(params, "X-Amz-Date");
  const std::string* expires = FindParam(params, "X-Amz-Expires");
  const std::string* signed_list = FindParam(params, "X-Amz-SignedHeaders");
  const std::string* signature = FindParam(params, "X-Amz-Signature");
  if (!algo || !credential || !date || !expires || !signed_list || !signature) {
    return MakeError(kQueryErr,
                     "Query-string authentication version 4 requires the X-Amz-Algorithm, "
                     "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and "
                     "X-Amz-Expires parameters.");
  }
  if (*algo != kAlgorithm) {
    return MakeError(kQueryErr, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
  }
  auto cred = ParseCredential(*credential, kQueryErr);
  if (!cred.ok()) return cred.error();
  auto signed_headers = ParseSignedHeaders(*signed_list, kQueryErr);
  if (!signed_headers.ok()) return signed_headers.error();
  if (auto st = CheckAmzHeadersSigned(req.headers, *signed_headers, true); !st.ok())
    return st.error();
  std::string provided = text::ToLower(*signature);
  if (provided.size() != 64 || !IsHex(provided)) {
    return MakeError(kQueryErr, "X-Amz-Signature must be 64 hexadecimal characters.");
  }
  auto req_time = ParseAmzDate(*date);
  if (!req_time) {
    return MakeError(kQueryErr,
                     "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  }
  // AWS answers an out-of-range expiry with 403 (not the 400 of the other parameter errors).
  constexpr auto kExpiresErr = ErrorCode::kPresignExpiresOutOfRange;
  if (expires->starts_with('-') && IsDigits(expires->substr(1)))
    return MakeError(kExpiresErr, "X-Amz-Expires must be non-negative");
  if (!IsDigits(*expires)) {
    return MakeError(kQueryErr, "X-Amz-Expires should be a number");
  }
  if (expires->size() > 7 || ToInt(*expires) > kMaxPresignExpiresS) {
    return MakeError(kExpiresErr,
                     "X-Amz-Expires must be less than a week (in seconds); that is, the given "
                     "X-Amz-Expires must be less than 604800 seconds");
  }
  int64_t expires_s = ToInt(*expires);
  if (date->substr(0, 8) != cred->date) {
    return MakeError(kQueryErr, "Invalid credential date. Date is not the same as X-Amz-Date.");
  }

  AuthContext ctx;
  // Presigned URLs are normally unsigned-payload; a client may still send the header (and must
  // then have signed with it).
  std::string payload(kUnsignedPayload);
  if (const std::string* v = req.FindHeader("x-amz-content-sha256")) payload = *v;
  auto mode = ModeFromContentSha(payload, &ctx.content_sha256);
  if (!mode.ok()) return mode.error();

  auto secret = lookup(cred->access_key);
  if (!secret) return ErrorCode::kInvalidAccessKeyId;

  if (*req_time - now_unix > kMaxSkewS) return ErrorCode::kRequestTimeTooSkewed;
  if (expires_s == 0 || now_unix > *req_time + expires_s) {  // 0: valid for no time at all
    return MakeError(ErrorCode::kAccessDenied, "Request has expired");
  }

  const std::optional<HeaderList> restored = WithRestoredHeaders(req, *signed_headers);
  auto cr = CanonicalRequest(req.method, req.raw_path, CanonicalQuery(req.raw_query, true),
                             restored ? *restored : req.headers, *signed_headers, payload);
  if (!cr.ok()) return cr.error();
  std::string key = DeriveSigningKey(*secret, cred->date, cred->region, "s3");
  std::string expected = SignHex(key, StringToSign(*date, cred->scope, *cr));
  if (!hash::ConstantTimeEquals(expected, provided)) return ErrorCode::kSignatureDoesNotMatch;

  return Verified(std::move(ctx), std::move(*cred), *mode, std::move(*signed_headers),
                  /*presigned=*/true, std::move(provided), std::move(key), *date);
}

// Headers as a client sends them: lower-case names, x-amz-date and x-amz-content-sha256 replaced.
HeaderList ClientHeaders(const SignInput& in, std::string_view amz_date,
                         std::optional<std::string_view> payload) {
  HeaderList out;
  for (const auto& [k, v] : in.headers) {
    std::string name = text::ToLower(k);
    if (name == "authorization" || name == "x-amz-date") continue;
    if (payload && name == "x-amz-content-sha256") continue;
    out.emplace_back(std::move(name), v);
  }
  if (!amz_date.empty()) out.emplace_back("x-amz-date", std::string(amz_date));
  if (payload) out.emplace_back("x-amz-content-sha256", std::string(*payload));
  return out;
}

std::vector<std::string> NamesToSign(const HeaderList& headers) {
  std::vector<std::string> names;
  for (const auto& [k, v] : headers)
    if (!IsUnsignableHeader(k)) names.push_back(k);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

// ISO 8601 basic format as SigV4 uses it: 20130524T000000Z.
std::optional<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  if (!IsDigits(s.substr(0, 8)) || !IsDigits(s.substr(9, 6))) return std::nullopt;
  return FromUtc(ToInt(s.substr(0, 4)), ToInt(s.substr(4, 2)), ToInt(s.substr(6, 2)),
                 ToInt(s.substr(9, 2)), ToInt(s.substr(11, 2)), ToInt(s.substr(13, 2)));
}

std::optional<int64_t> ParseRfc1123Date(std::string_view s) { return ParseHttpDate(s); }

Result<AuthContext> VerifyRequest(const HttpRequest& req, const SecretLookup& lookup,
                                  int64_t now_unix, std::string_view vhost_bucket) {
  const std::string* authz = req.FindHeader("authorization");
  auto params = SplitQuery(req.raw_query);
  bool presigned = FindParam(params, "X-Amz-Algorithm") != nullptr;
  bool presigned_v2 = !presigned && (FindParam(params, "AWSAccessKeyId") != nullptr ||
                                     FindParam(params, "Signature") != nullptr);
  if (authz != nullptr && (presigned || presigned_v2)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
                     "Signature query string parameter or the Authorization header should be "
                     "specified");
  }
  if (authz != nullptr && IsV2Authorization(*authz))
    return VerifyV2Header(req, *authz, lookup, now_unix, vhost_bucket);
  if (authz != nullptr) return VerifyHeaderAuth(req, *authz, lookup, now_unix);
  if (presigned) return VerifyPresigned(req, params, lookup, now_unix);
  if (presigned_v2) return VerifyV2Presigned(req, lookup, now_unix, vhost_bucket);
  return MakeError(ErrorCode::kAccessDenied, "anonymous access denied");
}

Result<std::string> VerifyPostSignature(const std::map<std::string, std::string>& fields,
                                        const SecretLookup& lookup) {
  auto field = [&](std::string_view name) -> const std::string* {
    auto it = fields.find(std::string(name));
    return it == fields.end() ? nullptr : &it->second;
  };
  const std::string* policy = field("policy");
  const std::string* v4_sig = field("x-amz-signature");
  const std::string* v2_key = field("awsaccesskeyid");
  if (v4_sig == nullptr && v2_key == nullptr && field("x-amz-credential") == nullptr) {
    return MakeError(ErrorCode::kAccessDenied, "Access Denied.");
  }
  if (policy == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "Bucket POST must contain a field named 'policy'.  If it is specified, "
                     "please check the order of the fields.");
  }
  if (v4_sig == nullptr && v2_key != nullptr) {
    const std::string* sig = field("signature");
    if (sig == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Bucket POST must contain a field named 'Signature'.  If it is specified, "
                       "please check the order of the fields.");
    }
    auto secret = lookup(*v2_key);
    if (!secret) return ErrorCode::kInvalidAccessKeyId;
    std::string expected = hash::Base64Encode(hash::HmacSha1(*secret, *policy));
    if (!hash::ConstantTimeEquals(expected, Trim(*sig))) return ErrorCode::kSignatureDoesNotMatch;
    return *v2_key;
  }
  constexpr auto kErr = ErrorCode::kInvalidArgument;
  for (const char* name :
       {"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature"}) {
    if (field(name) == nullptr) {
      return MakeError(kErr, std::string("Bucket POST must contain a field named '") + name +
                                 "'.  If it is specified, please check the order of the fields.");
    }
  }
  if (*field("x-amz-algorithm") != kAlgorithm)
    return MakeError(kErr, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
  auto cred = ParseCredential(*field("x-amz-credential"), kErr);
  if (!cred.ok()) return cred.error();
  const std::string& date = *field("x-amz-date");
  if (!ParseAmzDate(date))
    return MakeError(kErr,
                     "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  if (date.substr(0, 8) != cred->date)
    return MakeError(kErr, "Invalid credential date. Date is not the same as X-Amz-Date.");
  std::string provided = text::ToLower(*v4_sig);
  if (provided.size() != 64 || !IsHex(provided))
    return MakeError(kErr, "X-Amz-Signature must be 64 hexadecimal characters.");
  auto secret = lookup(cred->access_key);
  if (!secret) return ErrorCode::kInvalidAccessKeyId;
  std::string key = DeriveSigningKey(*secret, cred->date, cred->region, "s3");
  if (!hash::ConstantTimeEquals(SignHex(key, *policy), provided))
    return ErrorCode::kSignatureDoesNotMatch;
  return cred->access_key;
}

std::string CanonicalUri(std::string_view raw_path) {
  if (raw_path.empty()) return "/";
  // S3 signs the path encoded once: decode what the client sent, then encode each byte.
  auto decoded = uri::Decode(raw_path);
  return uri::Encode(decoded ? *decoded : std::string(raw_path), /*encode_slash=*/false);
}

std::string CanonicalQuery(std::string_view raw_query, bool drop_signature) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [name, value] : SplitQuery(raw_query)) {
    if (drop_signature && name == "X-Amz-Signature") continue;
    encoded.emplace_back(uri::Encode(name), uri::Encode(value));
  }
  // Sorting the encoded pairs is what the AWS SDKs do (byte order of name, then value).
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

namespace {

// A signing key depends on the secret and the scope only, so it changes once a day per
// credential; deriving it is four HMACs on every request. Derived keys are kept, as AWS SDKs and
// MinIO keep them, in a bounded map (emptied when full: scopes that vary on every request, as
// a hostile client's may, only cost the derivation they would cost anyway).
class SigningKeyCache {
 public:
  static constexpr size_t kMaxKeys = 1024;

  std::string Get(std::string_view secret, std::string_view date, std::string_view region,
                  std::string_view service) {
    std::string id;  // length-prefixed parts: no two scopes share an id
    id.reserve(secret.size() + date.size() + region.size() + service.size() + 16);
    for (std::string_view part : {secret, date, region, service}) {
      id += std::to_string(part.size());
      id += ':';
      id += part;
    }
    {
      std::lock_guard lock(mu_);
      if (auto it = keys_.find(id); it != keys_.end()) return it->second;
    }
    std::string k = hash::HmacSha256("AWS4" + std::string(secret), date);
    k = hash::HmacSha256(k, region);
    k = hash::HmacSha256(k, service);
    k = hash::HmacSha256(k, "aws4_request");
    std::lock_guard lock(mu_);
    if (keys_.size() >= kMaxKeys) keys_.clear();
    keys_.emplace(std::move(id), k);
    return k;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::string> keys_;
};

}  // namespace

std::string DeriveSigningKey(std::string_view secret, std::string_view date,
                             std::string_view region, std::string_view service) {
  static SigningKeyCache cache;
  return cache.Get(secret, date, region, service);
}

std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature, std::string_view chunk_data) {
  std::string s;
  s.reserve(256);
  s.append("AWS4-HMAC-SHA256-PAYLOAD\n");
  s.append(amz_date).append("\n");
  s.append(scope).append("\n");
  s.append(previous_signature).append("\n");
  s.append(kEmptySha256).append("\n");
  s.append(hash::Sha256Hex(chunk_data));
  return s;
}

std::string TrailerStringToSign(std::string_view amz_date, std::string_view scope,
                                std::string_view previous_signature,
                                std::string_view canonical_trailers) {
  std::string s;
  s.reserve(256);
  s.append("AWS4-HMAC-SHA256-TRAILER\n");
  s.append(amz_date).append("\n");
  s.append(scope).append("\n");
  s.append(previous_signature).append("\n");
  s.append(hash::Sha256Hex(canonical_trailers));
  return s;
}

HeaderList SignRequest(const SignInput& in) {
  std::string amz_date = FormatAmzDate(in.now_unix);
  std::string payload = in.payload_sha256.empty() ? std::string(kEmptySha256) : in.payload_sha256;
  HeaderList headers = ClientHeaders(in, amz_date, payload);
  std::vector<std::string> names = NamesToSign(headers);
  std::string date = amz_date.substr(0, 8);
  std::string scope = date + "/" + in.region + "/s3/aws4_request";
  auto cr = CanonicalRequest(in.method, in.raw_path, CanonicalQuery(in.raw_query, false), headers,
                             names, payload);
  // Every name comes from `headers`, so building the canonical request cannot fail.
  std::string key = DeriveSigningKey(in.secret_key, date, in.region, "s3");
  std::string signature = SignHex(key, StringToSign(amz_date, scope, *cr));
  headers.emplace_back("authorization", std::string(kAlgorithm) + " Credential=" + in.access_key +
                                            "/" + scope + ", SignedHeaders=" +
                                            JoinSignedHeaders(names) + ", Signature=" + signature);
  return headers;
}

std::string PresignQuery(const SignInput& in, int64_t expires_s) {
  std::string amz_date = FormatAmzDate(in.now_unix);
  std::string date = amz_date.substr(0, 8);
  std::string scope = date + "/" + in.region + "/s3/aws4_request";
  // The verifier uses an x-amz-content-sha256 header when the request carries one, otherwise
  // UNSIGNED-PAYLOAD; payload_sha256 is not used here.
  HeaderList headers = ClientHeaders(in, "", std::nullopt);
  std::string payload(kUnsignedPayload);
  for (const auto& [k, v] : headers)
    if (k == "x-amz-content-sha256") payload = v;
  std::vector<std::string> names = NamesToSign(headers);

  std::string query = "X-Amz-Algorithm=" + std::string(kAlgorithm);
  query += "&X-Amz-Credential=" + uri::Encode(in.access_key + "/" + scope);
  query += "&X-Amz-Date=" + amz_date;
  query += "&X-Amz-Expires=" + std::to_string(expires_s);
  query += "&X-Amz-SignedHeaders=" + uri::Encode(JoinSignedHeaders(names));
  if (!in.raw_query.empty()) query += "&" + in.raw_query;

  auto cr = CanonicalRequest(in.method, in.raw_path, CanonicalQuery(query, true), headers, names,
                             payload);
  std::string key = DeriveSigningKey(in.secret_key, date, in.region, "s3");
  std::string signature = SignHex(key, StringToSign(amz_date, scope, *cr));
  return query + "&X-Amz-Signature=" + signature;
}

}  // namespace rdmastor::s3
