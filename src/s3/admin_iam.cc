#include "s3/admin_iam.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/uri.h"
#include "s3/ops.h"

namespace rdmastor::s3 {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kPrefix = "/minio/admin/v3/";
constexpr size_t kMaxBody = 64 * 1024;

constexpr std::string_view kPaths[] = {
    "add-user",          "remove-user",          "list-users",
    "add-canned-policy", "remove-canned-policy", "list-canned-policies",
    "set-user-or-group-policy", "idp/builtin/policy/attach", "idp/builtin/policy/detach",
    "user-info",         "set-user-status",      "info-canned-policy"};

void SendJson(ResponseSink& sink, const std::string& request_id, const Json& doc) {
  auto head = BaseHead(request_id, 200);
  std::string body = doc.dump();
  head.Set("Content-Type", "application/json");
  head.content_length = body.size();
  if (sink.SendHead(head)) sink.Write(body.data(), body.size());
}

void SendOk(ResponseSink& sink, const std::string& request_id) {
  auto head = BaseHead(request_id, 200);
  head.content_length = 0;
  sink.SendHead(head);
}

// The body, checked against the signed SHA-256 (admin bodies carry secrets and policies: the
// payload must be signed).
Result<std::string> ReadBody(const HttpRequest& req, const AuthContext& auth, BodySource& body) {
  if (auth.payload_mode != PayloadMode::kSignedSha256)
    return MakeError(ErrorCode::kAccessDenied,
                     "Admin requests with a body must sign it (x-amz-content-sha256).");
  if (req.content_length && *req.content_length > kMaxBody)
    return MakeError(ErrorCode::kEntityTooLarge);
  std::string out;
  char buf[16 * 1024];
  for (;;) {
    auto n = body.Read(buf, sizeof(buf));
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    out.append(buf, *n);
    if (out.size() > kMaxBody) return MakeError(ErrorCode::kEntityTooLarge);
  }
  if (hash::Sha256Hex(out) != auth.content_sha256)
    return MakeError(ErrorCode::kContentSHA256Mismatch);
  return out;
}

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = std::min(s.find(',', pos), s.size());
    std::string item(s.substr(pos, comma - pos));
    if (!item.empty()) out.push_back(std::move(item));
    pos = comma + 1;
  }
  return out;
}

Status Handle(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
              iam::IamStore& iam, const AuthContext& auth, BodySource& body, std::string_view op,
              const std::vector<std::pair<std::string, std::string>>& query) {
  auto q = [&](std::string_view name) {
    for (const auto& [k, v] : query)
      if (k == name) return v;
    return std::string();
  };
  auto need = [&](std::string_view method) -> Status {
    if (req.method != method) return MakeError(ErrorCode::kMethodNotAllowed);
    return {};
  };
  if (op == "add-user") {
    RS_RETURN_IF_ERROR(need("PUT"));
    auto raw = ReadBody(req, auth, body);
    if (!raw.ok()) return raw.error();
    Json j = Json::parse(*raw, nullptr, false);
    if (j.is_discarded() && !raw->empty() && (*raw)[0] != '{')
      // `mc admin user add` encrypts the body with the root secret (madmin's format); rdmastor's
      // admin API takes plain JSON over TLS or loopback (docs/migrating-from-minio.md).
      return MakeError(ErrorCode::kInvalidArgument,
                       "The body is not JSON: mc admin's encrypted bodies (madmin) are not "
                       "supported; use `rdmastor admin user add ACCESS_KEY SECRET_KEY`, or send "
                       "{\"secretKey\": \"...\"}.");
    if (!j.is_object() || !j.contains("secretKey") || !j["secretKey"].is_string())
      return MakeError(ErrorCode::kInvalidArgument, "The body is {\"secretKey\": \"...\"}.");
    RS_RETURN_IF_ERROR(iam.AddUser(q("accessKey"), j["secretKey"].get<std::string>()));
    spdlog::info("iam: user {} added (or its secret replaced)", q("accessKey"));
    SendOk(sink, request_id);
    return {};
  }
  if (op == "remove-user") {
    RS_RETURN_IF_ERROR(need("DELETE"));
    RS_RETURN_IF_ERROR(iam.RemoveUser(q("accessKey")));
    spdlog::info("iam: user {} removed", q("accessKey"));
    SendOk(sink, request_id);
    return {};
  }
  if (op == "list-users") {
    RS_RETURN_IF_ERROR(need("GET"));
    auto users = iam.ListUsers();
    if (!users.ok()) return users.error();
    Json out = Json::object();
    for (const auto& u : *users) {
      std::string names;
      for (const auto& p : u.policies) names += (names.empty() ? "" : ",") + p;
      out[u.access_key] = {{"policyName", names}, {"status", u.disabled ? "disabled" : "enabled"}};
    }
    SendJson(sink, request_id, out);
    return {};
  }
  if (op == "add-canned-policy") {
    RS_RETURN_IF_ERROR(need("PUT"));
    auto raw = ReadBody(req, auth, body);
    if (!raw.ok()) return raw.error();
    RS_RETURN_IF_ERROR(iam.PutPolicy(q("name"), *raw));
    spdlog::info("iam: policy {} created (or replaced)", q("name"));
    SendOk(sink, request_id);
    return {};
  }
  if (op == "remove-canned-policy") {
    RS_RETURN_IF_ERROR(need("DELETE"));
    RS_RETURN_IF_ERROR(iam.RemovePolicy(q("name")));
    SendOk(sink, request_id);
    return {};
  }
  if (op == "list-canned-policies") {
    RS_RETURN_IF_ERROR(need("GET"));
    auto all = iam.ListPolicies();
    if (!all.ok()) return all.error();
    Json out = Json::object();
    for (const auto& [name, doc] : *all) {
      Json parsed = Json::parse(doc, nullptr, false);
      out[name] = parsed.is_discarded() ? Json(doc) : parsed;
    }
    SendJson(sink, request_id, out);
    return {};
  }
  if (op == "set-user-or-group-policy") {
    RS_RETURN_IF_ERROR(need("PUT"));
    if (q("isGroup") == "true")
      return MakeError(ErrorCode::kNotImplemented, "Groups are not implemented by rdmastor.");
    RS_RETURN_IF_ERROR(iam.SetUserPolicies(q("userOrGroup"), SplitCommas(q("policyName"))));
    SendOk(sink, request_id);
    return {};
  }
  if (op == "user-info") {
    RS_RETURN_IF_ERROR(need("GET"));
    auto user = iam.GetUser(q("accessKey"));
    if (!user.ok()) return user.error();
    std::string names;
    for (const auto& p : user->policies) names += (names.empty() ? "" : ",") + p;
    SendJson(sink, request_id,
             {{"policyName", names}, {"status", user->disabled ? "disabled" : "enabled"}});
    return {};
  }
  if (op == "set-user-status") {
    RS_RETURN_IF_ERROR(need("PUT"));
    const std::string status = q("status");
    if (status != "enabled" && status != "disabled")
      return MakeError(ErrorCode::kInvalidArgument, "status is enabled or disabled");
    RS_RETURN_IF_ERROR(iam.SetUserEnabled(q("accessKey"), status == "enabled"));
    spdlog::info("iam: user {} {}", q("accessKey"), status);
    SendOk(sink, request_id);
    return {};
  }
  if (op == "info-canned-policy") {
    RS_RETURN_IF_ERROR(need("GET"));
    auto doc = iam.GetPolicy(q("name"));
    if (!doc.ok()) return doc.error();
    Json policy = Json::parse(*doc, nullptr, false);
    if (policy.is_discarded()) policy = *doc;
    // v=2 (current mc): the document wrapped with its name; otherwise the document itself.
    if (q("v") == "2") policy = {{"PolicyName", q("name")}, {"Policy", std::move(policy)}};
    SendJson(sink, request_id, policy);
    return {};
  }
  if (op == "idp/builtin/policy/attach" || op == "idp/builtin/policy/detach") {
    RS_RETURN_IF_ERROR(need("POST"));
    auto raw = ReadBody(req, auth, body);
    if (!raw.ok()) return raw.error();
    Json j = Json::parse(*raw, nullptr, false);
    if (!j.is_object() || !j.contains("user") || !j["user"].is_string() ||
        !j.contains("policies") || !j["policies"].is_array())
      return MakeError(ErrorCode::kInvalidArgument,
                       "The body is {\"policies\": [\"name\", ...], \"user\": \"AK\"}.");
    std::vector<std::string> names;
    for (const auto& p : j["policies"]) {
      if (!p.is_string()) return MakeError(ErrorCode::kInvalidArgument, "policy names are strings");
      names.push_back(p.get<std::string>());
    }
    if (names.empty()) return MakeError(ErrorCode::kInvalidArgument, "no policy named");
    const std::string user = j["user"].get<std::string>();
    if (op.ends_with("attach")) {
      RS_RETURN_IF_ERROR(iam.AttachPolicies(user, names));
      spdlog::info("iam: policies attached to user {}", user);
    } else {
      RS_RETURN_IF_ERROR(iam.DetachPolicies(user, names));
      spdlog::info("iam: policies detached from user {}", user);
    }
    SendOk(sink, request_id);
    return {};
  }
  return MakeError(ErrorCode::kNotImplemented);
}

}  // namespace

bool IsIamAdminPath(std::string_view raw_path) {
  if (!raw_path.starts_with(kPrefix)) return false;
  raw_path.remove_prefix(kPrefix.size());
  for (auto p : kPaths)
    if (raw_path == p) return true;
  return false;
}

void ServeIamAdmin(const HttpRequest& req, ResponseSink& sink, const std::string& request_id,
                   iam::IamStore& iam, const AuthContext& auth, BodySource& body) {
  auto query = uri::ParseQuery(req.raw_query);
  Status st;
  if (!query) {
    st = MakeError(ErrorCode::kInvalidArgument, "malformed query string");
  } else {
    st = Handle(req, sink, request_id, iam, auth, body,
                std::string_view(req.raw_path).substr(kPrefix.size()), *query);
  }
  if (!st.ok()) SendOpsError(req, sink, request_id, st.error());
}

}  // namespace rdmastor::s3
