#include "s3/operations.h"

namespace rdmastor::s3 {

namespace {

bool Has(const RouteRequest& req, std::string_view name) {
  if (!req.query) return false;
  for (const auto& [k, v] : *req.query)
    if (k == name) return true;
  return false;
}

// "" | "a" | "a=v" | "a|b" (operations.h).
bool ParamsMatch(const RouteRequest& req, std::string_view spec) {
  if (spec.empty()) return true;
  if (auto eq = spec.find('='); eq != std::string_view::npos) {
    const auto name = spec.substr(0, eq), value = spec.substr(eq + 1);
    if (!req.query) return false;
    for (const auto& [k, v] : *req.query)
      if (k == name) return v == value;
    return false;
  }
  for (size_t pos = 0;;) {
    size_t bar = spec.find('|', pos);
    if (Has(req, spec.substr(pos, bar == std::string_view::npos ? bar : bar - pos))) return true;
    if (bar == std::string_view::npos) return false;
    pos = bar + 1;
  }
}

bool AtMatches(At at, const RouteRequest& req) {
  switch (at) {
    case At::kRoot:
      return req.root;
    case At::kBucket:
      return !req.root && !req.has_key;
    case At::kObject:
      return req.has_key;
    case At::kBucketOrRoot:
      return !req.has_key;
  }
  return false;
}

// Is `sub` a subresource some operation at the request's level declares?
bool Declared(const RouteRequest& req, std::string_view sub) {
  for (const auto& op : kOperations)
    if (op.subresource == sub && AtMatches(op.at, req)) return true;
  return false;
}

}  // namespace

const char* UnsupportedSubresource(const RouteRequest& req) {
  static const char* kUnsupported[] = {"policy",
                                       "lifecycle",
                                       "cors",
                                       "encryption",
                                       "replication",
                                       "website",
                                       "logging",
                                       "notification",
                                       "object-lock",
                                       "retention",
                                       "legal-hold",
                                       "accelerate",
                                       "requestPayment",
                                       "inventory",
                                       "analytics",
                                       "metrics",
                                       "torrent",
                                       "restore",
                                       "select",
                                       "ownershipControls",
                                       "publicAccessBlock",
                                       "intelligent-tiering"};
  if (req.root) return nullptr;
  for (const char* sub : kUnsupported) {
    // Implemented where the table declares it (?policy and ?encryption on a bucket).
    if (Has(req, sub) && !Declared(req, sub)) return sub;
  }
  return nullptr;
}

S3Op RouteOf(const RouteRequest& req) {
  // The first declared subresource the request carries claims it.
  std::string_view claimed;
  for (const auto& op : kOperations) {
    if (!op.subresource.empty() && AtMatches(op.at, req) && Has(req, op.subresource)) {
      claimed = op.subresource;
      break;
    }
  }
  bool claims_apply = false;
  for (const auto& op : kOperations) {
    if (!claims_apply && !op.subresource.empty()) {
      claims_apply = true;
      if (UnsupportedSubresource(req)) return S3Op::kUnknown;
    }
    if (claims_apply && op.subresource != claimed) continue;
    if (op.method != req.method || !AtMatches(op.at, req) || !ParamsMatch(req, op.params)) continue;
    if (op.when == When::kCopySource && !req.copy_source) continue;
    if (op.when == When::kFormUpload && !req.form_upload) continue;
    if (op.when == When::kForceDelete && !req.force_delete) continue;
    return op.op;
  }
  return S3Op::kUnknown;
}

}  // namespace rdmastor::s3
