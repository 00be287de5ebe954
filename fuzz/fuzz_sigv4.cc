// SigV4: VerifyRequest (header and presigned auth) plus the canonicalisers, on a request given as
// text: "METHOD TARGET\nname: value\n...". The clock and the one known key are AWS's examples, so
// seeds built from them reach the signature comparison.
#include <string>

#include "fuzz_util.h"
#include "s3/sigv4.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  s3::HttpRequest req;
  size_t nl = in.find('\n');
  std::string_view first = in.substr(0, nl);
  size_t sp = first.find(' ');
  req.method = std::string(first.substr(0, sp));
  req.target = sp == std::string_view::npos ? "/" : std::string(first.substr(sp + 1));
  size_t q = req.target.find('?');
  req.raw_path = req.target.substr(0, q);
  req.raw_query = q == std::string::npos ? "" : req.target.substr(q + 1);
  while (nl != std::string_view::npos && req.headers.size() < 64) {
    size_t start = nl + 1;
    nl = in.find('\n', start);
    std::string_view line = in.substr(start, nl == std::string_view::npos ? in.npos : nl - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  auto lookup = [](std::string_view ak) -> std::optional<std::string> {
    if (ak == "AKIAIOSFODNN7EXAMPLE") return std::string("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    return std::nullopt;
  };
  auto r = s3::VerifyRequest(req, lookup, 1369353600);  // 20130524T000000Z
  if (r.ok()) fuzz::Check(r->access_key == "AKIAIOSFODNN7EXAMPLE", "verified an unknown key");
  (void)s3::CanonicalUri(req.raw_path);
  (void)s3::CanonicalQuery(req.raw_query, true);
  (void)s3::CanonicalQuery(req.raw_query, false);
  return 0;
}
