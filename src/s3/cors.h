// Bucket CORS, as AWS documents it: the configuration (Put/Get/DeleteBucketCors, kept in the
// bucket record as BucketInfo::configs["cors"], CorsXml's form), the answer to a browser's
// preflight OPTIONS (served before authentication: a browser sends no credentials with it), and
// the Access-Control-* headers of any other request that carries an Origin a rule allows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/http_types.h"
#include "s3/xml.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

inline constexpr const char* kCorsConfigName = "cors";

// (The rules and their document, ParseCorsXml / CorsXml, are in s3/xml.h.)

// The first rule allowing `origin`, `method` and every header of `request_headers` (the
// Access-Control-Request-Headers list); nullptr when none does. `star` is set when the rule allows
// every origin ("*").
const CorsRule* MatchCors(const std::vector<CorsRule>& rules, std::string_view origin,
                          std::string_view method, std::string_view request_headers, bool* star);

// The Access-Control-* headers (and Vary) of a response to a request with `origin` on a bucket
// with `rules` (none when no rule allows it; Vary: Origin all the same).
HeaderList CorsResponseHeaders(const std::vector<CorsRule>& rules, const HttpRequest& req);

// CorsResponseHeaders for `bucket`'s rules (none without an Origin, a bucket or rules).
HeaderList CorsHeadersFor(storage::ObjectLayer& store, const std::string& bucket,
                          const HttpRequest& req);

// A preflight (OPTIONS) on `bucket`: its status and headers, or the error AWS answers (400
// without Origin or Access-Control-Request-Method, 403 when CORS is off or no rule allows it).
Result<HeaderList> Preflight(storage::ObjectLayer& store, const std::string& bucket,
                             const HttpRequest& req);

}  // namespace rdmastor::s3
