// Access policies in the AWS policy language: parsing (with AWS's MalformedPolicy answers for
// documents that are not valid) and evaluation of one request against one policy.
//
// Supported: Version, Id, Statement (one or a list) with Sid, Effect, Principal (bucket policies:
// "*", {"AWS": "*"}, {"AWS": [user ARNs]}), Action / NotAction, Resource / NotResource (with `*`
// and `?` wildcards), and Condition blocks with the String*, Numeric*, Bool, IpAddress /
// NotIpAddress, Arn* and Null operators, their ...IfExists forms and the ForAnyValue: / ForAllValues:
// qualifiers. Every condition key is single-valued here (the request context holds one value).
//
// Cost is bounded: documents are at most kMaxPolicyBytes, nesting is refused beyond kMaxDepth
// before the JSON parser runs, and wildcard matching is linear in practice (one backtrack point,
// O(pattern x subject) at worst on a document of bounded size).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmastor::iam {

inline constexpr size_t kMaxPolicyBytes = 20 * 1024;  // AWS's limit on a bucket policy
inline constexpr int kMaxDepth = 8;                   // a valid document nests at most 5 deep

enum class PolicyKind {
  kBucket,    // a bucket policy: Principal required, resources inside the bucket
  kIdentity,  // a policy attached to a user: no Principal
};

enum class CondOp {
  kStringEquals,
  kStringNotEquals,
  kStringEqualsIgnoreCase,
  kStringNotEqualsIgnoreCase,
  kStringLike,
  kStringNotLike,
  kNumericEquals,
  kNumericNotEquals,
  kNumericLessThan,
  kNumericLessThanEquals,
  kNumericGreaterThan,
  kNumericGreaterThanEquals,
  kBool,
  kIpAddress,
  kNotIpAddress,
  kNull,
  kArnEquals,
  kArnLike,
  kArnNotEquals,
  kArnNotLike,
};

struct Condition {
  CondOp op = CondOp::kStringEquals;
  bool if_exists = false;   // ...IfExists: a key absent from the request matches
  bool for_all = false;     // ForAllValues: an absent key matches
  std::string key;          // lower case ("aws:sourceip", "s3:prefix")
  std::vector<std::string> values;
};

struct Statement {
  std::string sid;
  bool allow = true;
  bool any_principal = false;           // "*" or {"AWS": "*"}
  std::vector<std::string> principals;  // user names (access keys) from ARNs; "root" = root
  std::vector<std::string> actions;     // lower case ("s3:getobject", "s3:*", "*")
  bool not_action = false;
  std::vector<std::string> resources;   // the part after "arn:aws:s3:::" ("*" for "*")
  bool not_resource = false;
  std::vector<Condition> conditions;
};

struct Policy {
  std::string version;
  std::string id;
  std::vector<Statement> statements;
};

// Parses and validates a policy document. `bucket`: for kBucket, the bucket the policy is for
// (every Resource must be in it). Errors: kMalformedPolicy with AWS's message, kPolicyTooLarge.
Result<Policy> ParsePolicy(std::string_view json, PolicyKind kind, std::string_view bucket = {});

// Who is asking.
struct Principal {
  bool anonymous = false;
  bool root = false;
  std::string user;  // access key of a user (empty for anonymous)
};

// The request context conditions are evaluated against: lower-case key -> value
// ("aws:sourceip" -> "10.0.0.1", "aws:securetransport" -> "false", "s3:prefix" -> "photos/");
// a key naming a tag keeps the tag key's case after the '/' ("s3:existingobjecttag/Project").
using ConditionContext = std::map<std::string, std::string>;

struct Request {
  std::string_view action;    // "s3:GetObject"
  std::string_view resource;  // "bucket" or "bucket/key" (the ARN without arn:aws:s3:::)
  const Principal* principal = nullptr;
  const ConditionContext* context = nullptr;
};

enum class Decision { kNotApplicable, kAllow, kDeny };

// Evaluates `policy` for `req`: kDeny when a Deny statement matches (an explicit deny wins),
// else kAllow when an Allow statement matches, else kNotApplicable. Principals are checked for
// statements that name them (bucket policies); identity policies apply to the user they are
// attached to.
Decision Evaluate(const Policy& policy, const Request& req);

// Does a condition of `policy` use a key starting with `prefix` (lower case, "s3:existingobjecttag/")?
bool UsesConditionKey(const Policy& policy, std::string_view prefix);

// `*` matches any run of characters, `?` exactly one; case-sensitive unless fold_case.
bool WildcardMatch(std::string_view pattern, std::string_view subject, bool fold_case = false);

// Is `action` (any case) an S3 action AWS defines, or a wildcard pattern over them ("s3:Get*",
// "*")?
bool IsKnownAction(std::string_view action);

}  // namespace rdmastor::iam
