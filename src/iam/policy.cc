#include "iam/policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/text.h"

namespace rdmastor::iam {

namespace {

using Json = nlohmann::json;

// The S3 actions AWS defines (lower case), plus MinIO's ListenBucketNotification.
constexpr std::string_view kS3Actions[] = {
    "s3:abortmultipartupload",
    "s3:bypassgovernanceretention",
    "s3:createbucket",
    "s3:deletebucket",
    "s3:deletebucketownershipcontrols",
    "s3:deletebucketpolicy",
    "s3:deletebucketwebsite",
    "s3:deleteobject",
    "s3:deleteobjecttagging",
    "s3:deleteobjectversion",
    "s3:deleteobjectversiontagging",
    "s3:forcedeletebucket",  // MinIO's, for x-minio-force-delete on DeleteBucket
    "s3:getaccelerateconfiguration",
    "s3:getanalyticsconfiguration",
    "s3:getbucketacl",
    "s3:getbucketcors",
    "s3:getbucketlocation",
    "s3:getbucketlogging",
    "s3:getbucketnotification",
    "s3:getbucketobjectlockconfiguration",
    "s3:getbucketownershipcontrols",
    "s3:getbucketpolicy",
    "s3:getbucketpolicystatus",
    "s3:getbucketpublicaccessblock",
    "s3:getbucketrequestpayment",
    "s3:getbuckettagging",
    "s3:getbucketversioning",
    "s3:getbucketwebsite",
    "s3:getencryptionconfiguration",
    "s3:getintelligenttieringconfiguration",
    "s3:getinventoryconfiguration",
    "s3:getlifecycleconfiguration",
    "s3:getmetricsconfiguration",
    "s3:getobject",
    "s3:getobjectacl",
    "s3:getobjectattributes",
    "s3:getobjectlegalhold",
    "s3:getobjectretention",
    "s3:getobjecttagging",
    "s3:getobjecttorrent",
    "s3:getobjectversion",
    "s3:getobjectversionacl",
    "s3:getobjectversionattributes",
    "s3:getobjectversionforreplication",
    "s3:getobjectversiontagging",
    "s3:getobjectversiontorrent",
    "s3:getreplicationconfiguration",
    "s3:listallmybuckets",
    "s3:listbucket",
    "s3:listbucketmultipartuploads",
    "s3:listbucketversions",
    "s3:listenbucketnotification",
    "s3:listmultipartuploadparts",
    "s3:objectowneroverridetobucketowner",
    "s3:putaccelerateconfiguration",
    "s3:putanalyticsconfiguration",
    "s3:putbucketacl",
    "s3:putbucketcors",
    "s3:putbucketlogging",
    "s3:putbucketnotification",
    "s3:putbucketobjectlockconfiguration",
    "s3:putbucketownershipcontrols",
    "s3:putbucketpolicy",
    "s3:putbucketpublicaccessblock",
    "s3:putbucketrequestpayment",
    "s3:putbuckettagging",
    "s3:putbucketversioning",
    "s3:putbucketwebsite",
    "s3:putencryptionconfiguration",
    "s3:putintelligenttieringconfiguration",
    "s3:putinventoryconfiguration",
    "s3:putlifecycleconfiguration",
    "s3:putmetricsconfiguration",
    "s3:putobject",
    "s3:putobjectacl",
    "s3:putobjectlegalhold",
    "s3:putobjectretention",
    "s3:putobjecttagging",
    "s3:putobjectversionacl",
    "s3:putobjectversiontagging",
    "s3:putreplicationconfiguration",
    "s3:replicatedelete",
    "s3:replicateobject",
    "s3:replicatetags",
    "s3:restoreobject",
};

constexpr std::string_view kS3Arn = "arn:aws:s3:::";

Error Malformed(std::string message) {
  return MakeError(ErrorCode::kMalformedPolicy, std::move(message));
}

// Deepest nesting of arrays/objects, counted on the raw bytes (strings skipped), so that a
// hostile document is refused before a parser recurses into it.
int NestingDepth(std::string_view s) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
      if (deepest > kMaxDepth) return deepest;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// A string or a non-empty list of strings.
Result<std::vector<std::string>> StringOrList(const Json& v, std::string_view field) {
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (!item.is_string()) return Malformed("Invalid " + std::string(field) + " in policy");
      out.push_back(item.get<std::string>());
    }
  } else {
    return Malformed("Invalid " + std::string(field) + " in policy");
  }
  if (out.empty()) return Malformed("Missing required field " + std::string(field));
  return out;
}

// A user ARN "arn:aws:iam::<account>:user/<name>" -> name; "arn:aws:iam::<account>:root" and a
// bare 12-digit account id -> "root" (there is one account here).
std::optional<std::string> PrincipalName(std::string_view arn) {
  constexpr std::string_view kIam = "arn:aws:iam::";
  auto all_digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (arn.size() == 12 && all_digits(arn)) return std::string("root");
  if (!arn.starts_with(kIam)) return std::nullopt;
  arn.remove_prefix(kIam.size());
  auto colon = arn.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view rest = arn.substr(colon + 1);
  if (rest == "root") return std::string("root");
  if (!rest.starts_with("user/") || rest.size() == 5) return std::nullopt;
  rest.remove_prefix(5);
  // A user path ("user/division/name") names the user by its last segment.
  if (auto slash = rest.rfind('/'); slash != std::string_view::npos) rest = rest.substr(slash + 1);
  if (rest.empty()) return std::nullopt;
  return std::string(rest);
}

Status ParsePrincipal(const Json& v, Statement& st) {
  const Error invalid = Malformed("Invalid principal in policy");
  if (v.is_string()) {
    if (v.get<std::string>() != "*") return invalid;
    st.any_principal = true;
    return {};
  }
  if (!v.is_object() || v.empty()) return invalid;
  for (const auto& [type, value] : v.items()) {
    if (type != "AWS") return invalid;  // Service, Federated, CanonicalUser: none here
    auto names = StringOrList(value, "Principal");
    if (!names.ok()) return invalid;
    for (const auto& n : *names) {
      if (n == "*") {
        st.any_principal = true;
        continue;
      }
      auto name = PrincipalName(n);
      if (!name) return invalid;
      st.principals.push_back(std::move(*name));
    }
  }
  return {};
}

std::optional<std::pair<CondOp, bool>> OpFromName(std::string_view name) {
  static const std::pair<std::string_view, CondOp> kOps[] = {
      {"StringEquals", CondOp::kStringEquals},
      {"StringNotEquals", CondOp::kStringNotEquals},
      {"StringEqualsIgnoreCase", CondOp::kStringEqualsIgnoreCase},
      {"StringNotEqualsIgnoreCase", CondOp::kStringNotEqualsIgnoreCase},
      {"StringLike", CondOp::kStringLike},
      {"StringNotLike", CondOp::kStringNotLike},
      {"NumericEquals", CondOp::kNumericEquals},
      {"NumericNotEquals", CondOp::kNumericNotEquals},
      {"NumericLessThan", CondOp::kNumericLessThan},
      {"NumericLessThanEquals", CondOp::kNumericLessThanEquals},
      {"NumericGreaterThan", CondOp::kNumericGreaterThan},
      {"NumericGreaterThanEquals", CondOp::kNumericGreaterThanEquals},
      {"Bool", CondOp::kBool},
      {"IpAddress", CondOp::kIpAddress},
      {"NotIpAddress", CondOp::kNotIpAddress},
      {"Null", CondOp::kNull},
      {"ArnEquals", CondOp::kArnEquals},
      {"ArnLike", CondOp::kArnLike},
      {"ArnNotEquals", CondOp::kArnNotEquals},
      {"ArnNotLike", CondOp::kArnNotLike},
  };
  bool if_exists = false;
  if (name.ends_with("IfExists")) {
    name.remove_suffix(8);
    if_exists = true;
  }
  for (const auto& [n, op] : kOps) {
    if (n == name) {
      if (if_exists && op == CondOp::kNull) return std::nullopt;  // no NullIfExists
      return std::make_pair(op, if_exists);
    }
  }
  return std::nullopt;
}

bool IsNumericOp(CondOp op) {
  return op == CondOp::kNumericEquals || op == CondOp::kNumericNotEquals ||
         op == CondOp::kNumericLessThan || op == CondOp::kNumericLessThanEquals ||
         op == CondOp::kNumericGreaterThan || op == CondOp::kNumericGreaterThanEquals;
}

std::optional<double> ParseNumber(std::string_view s) {
  if (s.empty() || s.size() > 32) return std::nullopt;
  std::string tmp(s);
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

// An IPv4 or IPv6 address or CIDR block: 16 bytes (IPv4 mapped) and a prefix length.
struct IpNet {
  std::array<unsigned char, 16> addr{};
  int prefix = 128;
};

std::optional<std::array<unsigned char, 16>> ParseIp(std::string_view s) {
  if (s.empty() || s.size() > 45) return std::nullopt;
  std::string tmp(s);
  std::array<unsigned char, 16> out{};
  in_addr v4{};
  if (inet_pton(AF_INET, tmp.c_str(), &v4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, tmp.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  return std::nullopt;
}

std::optional<IpNet> ParseNet(std::string_view s) {
  IpNet net;
  auto slash = s.find('/');
  auto ip = ParseIp(s.substr(0, slash));
  if (!ip) return std::nullopt;
  net.addr = *ip;
  const bool v4 = s.substr(0, slash).find(':') == std::string_view::npos;
  const int max = v4 ? 32 : 128;
  int len = max;
  if (slash != std::string_view::npos) {
    std::string_view l = s.substr(slash + 1);
    if (l.empty() || l.size() > 3) return std::nullopt;
    len = 0;
    for (char c : l) {
      if (c < '0' || c > '9') return std::nullopt;
      len = len * 10 + (c - '0');
    }
    if (len > max) return std::nullopt;
  }
  net.prefix = v4 ? len + 96 : len;
  return net;
}

bool NetContains(const IpNet& net, const std::array<unsigned char, 16>& ip) {
  int bits = net.prefix;
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
    if ((net.addr[i] & mask) != (ip[i] & mask)) return false;
  }
  return true;
}

Status ParseConditions(const Json& v, Statement& st) {
  if (!v.is_object()) return Malformed("Invalid Condition in policy");
  for (const auto& [op_name, block] : v.items()) {
    std::string_view name = op_name;
    bool for_all = false;
    if (name.starts_with("ForAllValues:")) {
      for_all = true;
      name.remove_prefix(13);
    } else if (name.starts_with("ForAnyValue:")) {
      name.remove_prefix(12);
    }
    auto op = OpFromName(name);
    if (!op) return Malformed("Invalid Condition type : " + op_name);
    if (!block.is_object() || block.empty())
      return Malformed("Invalid Condition block for " + op_name);
    for (const auto& [key, values] : block.items()) {
      Condition c;
      c.op = op->first;
      c.if_exists = op->second;
      c.for_all = for_all;
      // Keys are case-insensitive, but not what follows a '/' (a tag key: s3:ExistingObjectTag/K).
      const size_t slash = key.find('/');
      c.key = text::ToLower(std::string_view(key).substr(0, slash));
      if (slash != std::string::npos) c.key += key.substr(slash);
      auto colon = c.key.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == c.key.size())
        return Malformed("Policy has an invalid condition key");
      // Values: strings, numbers or booleans, one or a list.
      auto add = [&](const Json& x) -> bool {
        if (x.is_string()) {
          c.values.push_back(x.get<std::string>());
        } else if (x.is_boolean()) {
          c.values.push_back(x.get<bool>() ? "true" : "false");
        } else if (x.is_number()) {
          c.values.push_back(x.dump());
        } else {
          return false;
        }
        return true;
      };
      bool ok = true;
      if (values.is_array()) {
        for (const auto& x : values) ok = ok && add(x);
      } else {
        ok = add(values);
      }
      if (!ok || c.values.empty())
        return Malformed("Invalid Condition value for " + op_name + " " + key);
      for (const auto& val : c.values) {
        if ((c.op == CondOp::kIpAddress || c.op == CondOp::kNotIpAddress) && !ParseNet(val))
          return Malformed("Invalid IP address or CIDR in condition: " + val);
        if (IsNumericOp(c.op) && !ParseNumber(val))
          return Malformed("Invalid numeric value in condition: " + val);
        if ((c.op == CondOp::kBool || c.op == CondOp::kNull) &&
            text::ToLower(val) != "true" && text::ToLower(val) != "false")
          return Malformed("Invalid boolean value in condition: " + val);
      }
      st.conditions.push_back(std::move(c));
    }
  }
  return {};
}

Status ParseActions(const Json& v, bool not_action, PolicyKind kind, Statement& st) {
  auto list = StringOrList(v, not_action ? "NotAction" : "Action");
  if (!list.ok()) return Malformed("Policy has invalid action");
  for (const auto& a : *list) {
    std::string lower = text::ToLower(a);
    const bool other_service = kind == PolicyKind::kIdentity &&
                               (lower.starts_with("admin:") || lower.starts_with("kms:") ||
                                lower.starts_with("sts:"));
    if (!IsKnownAction(lower) && !other_service) return Malformed("Policy has invalid action");
    st.actions.push_back(std::move(lower));
  }
  st.not_action = not_action;
  return {};
}

Status ParseResources(const Json& v, bool not_resource, PolicyKind kind, std::string_view bucket,
                      Statement& st) {
  auto list = StringOrList(v, not_resource ? "NotResource" : "Resource");
  if (!list.ok()) return Malformed("Policy has invalid resource");
  for (const auto& r : *list) {
    if (r == "*") {
      st.resources.push_back("*");
      continue;
    }
    if (!r.starts_with(kS3Arn) || r.size() == kS3Arn.size())
      return Malformed("Policy has invalid resource");
    std::string rest = r.substr(kS3Arn.size());
    if (kind == PolicyKind::kBucket) {
      // Every resource of a bucket policy lies in that bucket.
      std::string_view bucket_part = std::string_view(rest).substr(0, rest.find('/'));
      if (!WildcardMatch(bucket_part, bucket)) return Malformed("Policy has invalid resource");
    }
    st.resources.push_back(std::move(rest));
  }
  st.not_resource = not_resource;
  return {};
}

Result<Statement> ParseStatement(const Json& j, PolicyKind kind, std::string_view bucket) {
  if (!j.is_object()) return Malformed("Policies must be valid JSON and the first byte must be '{'");
  Statement st;
  bool have_effect = false, have_action = false, have_resource = false, have_principal = false;
  for (const auto& [field, v] : j.items()) {
    if (field == "Sid") {
      if (!v.is_string()) return Malformed("Invalid Sid in policy");
      st.sid = v.get<std::string>();
    } else if (field == "Effect") {
      if (!v.is_string()) return Malformed("Invalid effect");
      const auto e = v.get<std::string>();
      if (e != "Allow" && e != "Deny") return Malformed("Invalid effect: " + e);
      st.allow = e == "Allow";
      have_effect = true;
    } else if (field == "Principal") {
      if (kind == PolicyKind::kIdentity)
        return Malformed("Policy document should not specify a principal.");
      RS_RETURN_IF_ERROR(ParsePrincipal(v, st));
      have_principal = true;
    } else if (field == "NotPrincipal") {
      return Malformed("NotPrincipal is not supported");
    } else if (field == "Action" || field == "NotAction") {
      if (have_action) return Malformed("Statement has both Action and NotAction");
      RS_RETURN_IF_ERROR(ParseActions(v, field == "NotAction", kind, st));
      have_action = true;
    } else if (field == "Resource" || field == "NotResource") {
      if (have_resource) return Malformed("Statement has both Resource and NotResource");
      RS_RETURN_IF_ERROR(ParseResources(v, field == "NotResource", kind, bucket, st));
      have_resource = true;
    } else if (field == "Condition") {
      RS_RETURN_IF_ERROR(ParseConditions(v, st));
    } else {
      return Malformed("Unknown field " + field);
    }
  }
  if (!have_effect) return Malformed("Missing required field Effect");
  if (kind == PolicyKind::kBucket && !have_principal)
    return Malformed("Missing required field Principal");
  if (!have_action) return Malformed("Missing required field Action");
  if (!have_resource) return Malformed("Missing required field Resource");
  return st;
}

bool ActionMatches(const Statement& st, std::string_view action) {
  bool any = false;
  for (const auto& pattern : st.actions) {
    if (WildcardMatch(pattern, action, /*fold_case=*/true)) {
      any = true;
      break;
    }
  }
  return st.not_action ? !any : any;
}

bool ResourceMatches(const Statement& st, std::string_view resource) {
  bool any = false;
  for (const auto& pattern : st.resources) {
    if (WildcardMatch(pattern, resource)) {
      any = true;
      break;
    }
  }
  return st.not_resource ? !any : any;
}

bool PrincipalMatches(const Statement& st, const Principal& p) {
  if (st.any_principal) return true;
  for (const auto& name : st.principals) {
    if (p.root && name == "root") return true;
    // "root" names the account's root: never a user, whatever a stored user is called.
    if (!p.anonymous && !p.root && name != "root" && name == p.user) return true;
  }
  return false;
}

bool Negated(CondOp op) {
  return op == CondOp::kStringNotEquals || op == CondOp::kStringNotEqualsIgnoreCase ||
         op == CondOp::kStringNotLike || op == CondOp::kNumericNotEquals ||
         op == CondOp::kNotIpAddress || op == CondOp::kArnNotEquals ||
         op == CondOp::kArnNotLike;
}

// One value against one policy value, for the positive form of the operator.
bool ValueMatches(CondOp op, std::string_view have, std::string_view want) {
  switch (op) {
    case CondOp::kStringEquals:
    case CondOp::kStringNotEquals:
      return have == want;
    case CondOp::kStringEqualsIgnoreCase:
    case CondOp::kStringNotEqualsIgnoreCase:
      return text::ToLower(have) == text::ToLower(want);
    case CondOp::kStringLike:
    case CondOp::kStringNotLike:
    // ARNs match with wildcards in every field (AWS: ArnEquals and ArnLike behave alike).
    case CondOp::kArnEquals:
    case CondOp::kArnLike:
    case CondOp::kArnNotEquals:
    case CondOp::kArnNotLike:
      return WildcardMatch(want, have);
    case CondOp::kBool:
      return text::ToLower(have) == text::ToLower(want);
    case CondOp::kIpAddress:
    case CondOp::kNotIpAddress: {
      auto ip = ParseIp(have);
      auto net = ParseNet(want);
      return ip && net && NetContains(*net, *ip);
    }
    default:
      break;
  }
  auto h = ParseNumber(have), w = ParseNumber(want);
  if (!h || !w) return false;
  switch (op) {
    case CondOp::kNumericEquals:
    case CondOp::kNumericNotEquals:
      return *h == *w;
    case CondOp::kNumericLessThan:
      return *h < *w;
    case CondOp::kNumericLessThanEquals:
      return *h <= *w;
    case CondOp::kNumericGreaterThan:
      return *h > *w;
    case CondOp::kNumericGreaterThanEquals:
      return *h >= *w;
    default:
      return false;
  }
}

bool ConditionHolds(const Condition& c, const ConditionContext* ctx) {
  const std::string* have = nullptr;
  if (ctx) {
    auto it = ctx->find(c.key);
    if (it != ctx->end()) have = &it->second;
  }
  if (c.op == CondOp::kNull) {
    // "true": the key must be absent; "false": present.
    const bool want_absent = text::ToLower(c.values.front()) == "true";
    return want_absent == (have == nullptr);
  }
  if (!have) return c.if_exists || c.for_all || Negated(c.op);
  bool any = false;
  for (const auto& want : c.values) {
    if (ValueMatches(c.op, *have, want)) {
      any = true;
      break;
    }
  }
  return Negated(c.op) ? !any : any;
}

}  // namespace

bool WildcardMatch(std::string_view pattern, std::string_view subject, bool fold_case) {
  auto eq = [fold_case](char a, char b) {
    return a == b || (fold_case && text::LowerAscii(a) == text::LowerAscii(b));
  };
  // Greedy with one backtrack point (the last star): O(|pattern| x |subject|) at worst.
  size_t p = 0, s = 0, star = std::string_view::npos, mark = 0;
  while (s < subject.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || (pattern[p] != '*' && eq(pattern[p], subject[s])))) {
      ++p;
      ++s;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool UsesConditionKey(const Policy& policy, std::string_view prefix) {
  for (const auto& st : policy.statements)
    for (const auto& c : st.conditions)
      if (c.key.starts_with(prefix)) return true;
  return false;
}

bool IsKnownAction(std::string_view action) {
  std::string lower = text::ToLower(action);
  if (lower == "*") return true;
  if (lower.find_first_of("*?") != std::string::npos) return lower.starts_with("s3:");
  return std::find(std::begin(kS3Actions), std::end(kS3Actions), lower) != std::end(kS3Actions);
}

Result<Policy> ParsePolicy(std::string_view json, PolicyKind kind, std::string_view bucket) {
  if (json.size() > kMaxPolicyBytes) return MakeError(ErrorCode::kPolicyTooLarge);
  size_t first = json.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || json[first] != '{')
    return Malformed("Policies must be valid JSON and the first byte must be '{'");
  if (NestingDepth(json) > kMaxDepth) return Malformed("Policy document is nested too deeply");
  Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return Malformed("Policies must be valid JSON and the first byte must be '{'");
  Policy policy;
  bool have_statement = false;
  for (const auto& [field, v] : doc.items()) {
    if (field == "Version") {
      if (!v.is_string()) return Malformed("Invalid Version in policy");
      policy.version = v.get<std::string>();
      if (policy.version != "2012-10-17" && policy.version != "2008-10-17")
        return Malformed("The policy must contain a valid version string");
    } else if (field == "Id") {
      if (!v.is_string()) return Malformed("Invalid Id in policy");
      policy.id = v.get<std::string>();
    } else if (field == "Statement") {
      have_statement = true;
      if (v.is_object()) {
        auto st = ParseStatement(v, kind, bucket);
        if (!st.ok()) return st.error();
        policy.statements.push_back(std::move(*st));
      } else if (v.is_array()) {
        for (const auto& s : v) {
          auto st = ParseStatement(s, kind, bucket);
          if (!st.ok()) return st.error();
          policy.statements.push_back(std::move(*st));
        }
      } else {
        return Malformed("Invalid Statement in policy");
      }
    } else {
      return Malformed("Unknown field " + field);
    }
  }
  if (!have_statement || policy.statements.empty())
    return Malformed("Missing required field Statement");
  return policy;
}

Decision Evaluate(const Policy& policy, const Request& req) {
  static const Principal kAnonymous{true, false, {}};
  const Principal& who = req.principal ? *req.principal : kAnonymous;
  bool allowed = false;
  for (const auto& st : policy.statements) {
    if ((st.any_principal || !st.principals.empty()) && !PrincipalMatches(st, who)) continue;
    if (!ActionMatches(st, req.action)) continue;
    if (!ResourceMatches(st, req.resource)) continue;
    bool holds = true;
    for (const auto& c : st.conditions) {
      if (!ConditionHolds(c, req.context)) {
        holds = false;
        break;
      }
    }
    if (!holds) continue;
    if (!st.allow) return Decision::kDeny;
    allowed = true;
  }
  return allowed ? Decision::kAllow : Decision::kNotApplicable;
}

}  // namespace rdmastor::iam
