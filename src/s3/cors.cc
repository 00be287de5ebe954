// Bucket CORS (s3/cors.h): rule matching, the preflight answer, the headers of other requests,
// and the ?cors handler.
#include "s3/cors.h"

#include <algorithm>

#include "s3/handlers.h"

namespace rdmastor::s3 {

namespace {

// `pattern` with at most one '*' (any run of characters) against `s`.
bool WildcardMatches(std::string_view pattern, std::string_view s) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == s;
  const std::string_view head = pattern.substr(0, star), tail = pattern.substr(star + 1);
  return s.size() >= head.size() + tail.size() && s.starts_with(head) && s.ends_with(tail);
}

std::vector<std::string> SplitList(std::string_view list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = std::min(list.find(',', pos), list.size());
    std::string item(list.substr(pos, comma - pos));
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(ToLower(item));
    pos = comma + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

Result<std::vector<CorsRule>> RulesOf(storage::ObjectLayer& store, const std::string& bucket) {
  auto stored = store.BucketConfig(bucket, kCorsConfigName);
  if (!stored.ok()) return stored.error();
  if (stored->empty()) return std::vector<CorsRule>{};
  return ParseCorsXml(*stored);
}

// The headers a matching rule gives a response (the preflight adds its own).
void AddAllowHeaders(HeaderList& out, const CorsRule& rule, bool star, std::string_view origin) {
  out.emplace_back("Access-Control-Allow-Origin", star ? "*" : std::string(origin));
  out.emplace_back("Access-Control-Allow-Methods", Join(rule.methods));
  if (!rule.expose.empty()) {
    std::string expose;
    for (const auto& e : rule.expose) expose += (expose.empty() ? "" : ", ") + e;
    out.emplace_back("Access-Control-Expose-Headers", expose);
  }
  if (!star) out.emplace_back("Access-Control-Allow-Credentials", "true");
}

constexpr const char* kVaryAll = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

}  // namespace

const CorsRule* MatchCors(const std::vector<CorsRule>& rules, std::string_view origin,
                          std::string_view method, std::string_view request_headers, bool* star) {
  const auto wanted = SplitList(request_headers);
  for (const auto& rule : rules) {
    const auto o = std::find_if(rule.origins.begin(), rule.origins.end(),
                                [&](const std::string& p) { return WildcardMatches(p, origin); });
    if (o == rule.origins.end()) continue;
    if (std::find(rule.methods.begin(), rule.methods.end(), method) == rule.methods.end()) continue;
    const bool headers_ok = std::all_of(wanted.begin(), wanted.end(), [&](const std::string& h) {
      return std::any_of(rule.headers.begin(), rule.headers.end(),
                         [&](const std::string& p) { return WildcardMatches(ToLower(p), h); });
    });
    if (!headers_ok) continue;
    if (star) *star = *o == "*";
    return &rule;
  }
  return nullptr;
}

HeaderList CorsResponseHeaders(const std::vector<CorsRule>& rules, const HttpRequest& req) {
  HeaderList out;
  const std::string* origin = req.FindHeader("origin");
  if (!origin || rules.empty()) return out;
  // As AWS: the method asked about (Access-Control-Request-Method) when the request names one,
  // else its own.
  const std::string method = req.HeaderOr("access-control-request-method", req.method);
  bool star = false;
  if (const CorsRule* rule = MatchCors(rules, *origin, method, "", &star))
    AddAllowHeaders(out, *rule, star, *origin);
  out.emplace_back("Vary", kVaryAll);
  return out;
}

Result<HeaderList> Preflight(storage::ObjectLayer& store, const std::string& bucket,
                             const HttpRequest& req) {
  const std::string* origin = req.FindHeader("origin");
  if (!origin)
    return MakeError(ErrorCode::kBadRequest,
                     "Insufficient information. Origin request header needed.");
  const std::string* method = req.FindHeader("access-control-request-method");
  static constexpr std::string_view kMethods[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};
  if (!method || std::find(std::begin(kMethods), std::end(kMethods), *method) == std::end(kMethods))
    return MakeError(ErrorCode::kBadRequest, "Invalid Access-Control-Request-Method: " +
                                                 (method ? *method : std::string("null")));
  auto info = store.GetBucketInfo(bucket);
  if (!info.ok()) return info.error();
  auto rules = RulesOf(store, bucket);
  if (!rules.ok()) return rules.error();
  if (rules->empty())
    return MakeError(ErrorCode::kCORSForbidden, "CORSResponse: CORS is not enabled for this bucket.");
  const std::string requested = req.HeaderOr("access-control-request-headers");
  bool star = false;
  const CorsRule* rule = MatchCors(*rules, *origin, *method, requested, &star);
  if (!rule) return MakeError(ErrorCode::kCORSForbidden);
  HeaderList out;
  AddAllowHeaders(out, *rule, star, *origin);
  if (const auto wanted = SplitList(requested); !wanted.empty())
    out.emplace_back("Access-Control-Allow-Headers", Join(wanted));
  if (rule->max_age) out.emplace_back("Access-Control-Max-Age", std::to_string(*rule->max_age));
  out.emplace_back("Vary", kVaryAll);
  return out;
}

HeaderList CorsHeadersFor(storage::ObjectLayer& store, const std::string& bucket,
                          const HttpRequest& req) {
  if (!req.FindHeader("origin") || bucket.empty()) return {};
  auto rules = RulesOf(store, bucket);
  if (!rules.ok()) return {};  // no bucket (the request's own answer says so), or unreadable
  return CorsResponseHeaders(*rules, req);
}

// ?cors on a bucket: Put/Get/DeleteBucketCors.
Reply HandleBucketCors(const Env& env, S3Request& r) {
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return info.error();
  if (r.op == S3Op::kGetBucketCors) {
    auto stored = env.store.BucketConfig(r.bucket, kCorsConfigName);
    if (!stored.ok()) return stored.error();
    if (stored->empty()) return MakeError(ErrorCode::kNoSuchCORSConfiguration);
    return XmlReply(*stored);
  }
  if (r.op == S3Op::kDeleteBucketCors) {
    if (auto st = env.store.SetBucketConfig(r.bucket, kCorsConfigName, ""); !st.ok())
      return st.error();
    return EmptyReply(204);
  }
  if (auto st = RequireIntegrity(r.req); !st.ok()) return st.error();
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto rules = ParseCorsXml(*body);
  if (!rules.ok()) return rules.error();
  if (auto st = env.store.SetBucketConfig(r.bucket, kCorsConfigName, CorsXml(*rules)); !st.ok())
    return st.error();
  return EmptyReply(200);
}

}  // namespace rdmastor::s3
