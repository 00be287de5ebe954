// Users, named policies, bucket policies and bucket ownership, kept as small JSON objects in a
// system bucket of the object layer (so erasure-coded, healed and shared by every node of a
// cluster like any object), with a per-node cache in front.
//
// Layout in kSystemBucket:
//   iam/users/<access key>.json     {"accessKey", "secretKey", "policies": [...], "createdNs"}
//   iam/policies/<name>.json        a custom identity policy document, as given
//   buckets/<bucket>/policy.json    the bucket policy, as given (GetBucketPolicy returns it)
//   buckets/<bucket>/acl.json       {"owner": <access key>, "acl": <canned ACL>}
//
// Consistency across nodes: every cached entry is re-read after `refresh` (so a change made
// through another node is seen within that time), and an access key this node does not know is
// looked up in storage at once, so a user added through one node authenticates through every
// other at once.
//
// Unauthenticated callers choose the access keys they present, so a flood of made-up keys must
// neither lock out real users nor become a storm of storage reads:
// - known users never compete with unknown keys: the names of every stored user (the roster, one
//   listing, re-read after `refresh`) and cached users are read without any limit;
// - a key outside the roster is read within a per-client token bucket (by source address) and a
//   node-wide one; when those refuse, the roster is listed again (at most once a second), which
//   finds every user added since, whatever the number of bogus keys;
// - keys found absent go to a bounded negative cache (oldest dropped first), apart from the
//   users, so a flood of names never evicts a real user.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "iam/policy.h"
#include "storage/object_layer.h"

namespace rdmastor::iam {

// A valid bucket name the S3 API refuses to touch (AllAccessDisabled, hidden from ListBuckets).
inline constexpr std::string_view kSystemBucket = "rdmastor.sys";

// A small record (at most 64 KiB) in kSystemBucket: nullopt when it (or the bucket) is absent.
// The write creates the system bucket on first use. Other services keep their state this way too
// (the lifecycle scanner's progress).
Result<std::optional<std::string>> ReadSystemDoc(storage::ObjectLayer& store,
                                                 const std::string& key);
Status WriteSystemDoc(storage::ObjectLayer& store, const std::string& key, const std::string& doc);

// The policies every deployment has (MinIO's canned policies).
inline constexpr std::string_view kBuiltinPolicies[] = {"readwrite", "readonly", "writeonly"};

struct StoreOptions {
  std::chrono::milliseconds refresh{5000};  // RDMASTOR_IAM_REFRESH
  // Storage reads for keys outside the roster: node-wide, and per client address.
  double unknown_key_lookups_per_second = 50;
  int unknown_key_lookup_burst = 100;
  double unknown_key_lookups_per_client_per_second = 5;
  int unknown_key_lookup_client_burst = 10;
  std::chrono::milliseconds negative_ttl{1000};  // an unknown key is not looked up again sooner
  size_t max_negative_entries = 10000;           // keys known absent, oldest dropped first
  // The roster is listed again for a key outside it (once the lookups above refuse) at most
  // this often.
  std::chrono::milliseconds roster_min_interval{1000};
};

struct User {
  std::string access_key;
  std::string secret_key;
  std::vector<std::string> policies;  // names: built-in or custom
  int64_t created_ns = 0;
  bool disabled = false;  // a disabled user's key is refused as unknown (InvalidAccessKeyId)
};

struct BucketAccess {
  std::string owner;            // access key of the creator ("" = root / unknown: created before)
  std::string acl = "private";  // canned ACL (iam/acl.h names)
};

class IamStore {
 public:
  IamStore(storage::ObjectLayer& store, std::string root_access_key, StoreOptions opts = {});

  const std::string& root_access_key() const { return root_; }

  // ---- administration (the admin API) ----
  // Creates the user or replaces its secret (its policies stay). Errors: kInvalidArgument for an
  // access key or secret outside the accepted form, or the root's access key.
  Status AddUser(const std::string& access_key, const std::string& secret_key);
  Status RemoveUser(const std::string& access_key);  // kNoSuchUser
  Result<std::vector<User>> ListUsers();
  // Sets the user's policies (replacing them); every name must exist (kNoSuchPolicy).
  Status SetUserPolicies(const std::string& access_key, const std::vector<std::string>& policies);
  // Adds policies to the user's (attach), keeping the ones it has.
  Status AttachPolicies(const std::string& access_key, const std::vector<std::string>& policies);
  // Removes policies from the user's (detach); kInvalidArgument when none of them is attached
  // ("The specified policy change is already in effect", MinIO's message).
  Status DetachPolicies(const std::string& access_key, const std::vector<std::string>& policies);
  // One user (kNoSuchUser).
  Result<User> GetUser(const std::string& access_key);
  // Enables or disables a user (kNoSuchUser). Every node refuses a disabled key within `refresh`.
  Status SetUserEnabled(const std::string& access_key, bool enabled);
  // The document of one policy, built-in or custom (kNoSuchPolicy).
  Result<std::string> GetPolicy(const std::string& name);
  // Creates or replaces a custom policy (kMalformedPolicy for an invalid document; built-in names
  // cannot be replaced: kInvalidArgument).
  Status PutPolicy(const std::string& name, const std::string& document);
  Status RemovePolicy(const std::string& name);  // kNoSuchPolicy
  // Every policy, built-in and custom: name -> document.
  Result<std::map<std::string, std::string>> ListPolicies();

  // ---- the request path ----
  // The secret of a user (not root), or nullopt when the key is unknown. `client`: the caller's
  // address, for the per-client limit on lookups of keys outside the roster.
  std::optional<std::string> SecretFor(std::string_view access_key, std::string_view client = {});
  // The parsed policies attached to a user (empty for an unknown user).
  std::vector<std::shared_ptr<const Policy>> PoliciesOf(std::string_view access_key);

  // ---- bucket policies and ownership ----
  Result<std::string> GetBucketPolicy(const std::string& bucket);  // kNoSuchBucketPolicy
  Status PutBucketPolicy(const std::string& bucket, const std::string& document);
  Status DeleteBucketPolicy(const std::string& bucket);  // no error when there is none
  // The parsed bucket policy, cached; nullptr when the bucket has none. An error when a policy is
  // stored but cannot be read (and none was cached) or does not parse: the caller must deny, since
  // the policy it cannot see may deny (fail closed).
  Result<std::shared_ptr<const Policy>> BucketPolicy(const std::string& bucket);
  // The bucket's owner and canned ACL as stored (defaults when there is no record).
  Result<BucketAccess> GetBucketAccess(const std::string& bucket);
  Status PutBucketAccess(const std::string& bucket, const BucketAccess& access);
  // The same for the request path, cached like bucket policies (re-read after `refresh`; when
  // storage cannot be read, what was cached, else private).
  BucketAccess CachedBucketAccess(const std::string& bucket);
  // Removes what a deleted bucket leaves here (policy, ACL); best effort.
  void ForgetBucket(const std::string& bucket);

  // Storage reads made for unknown access keys, and lookups refused by the rate limit (tests and
  // the logs watch them).
  uint64_t unknown_key_reads() const;
  uint64_t unknown_key_refusals() const;

  static Status ValidateAccessKey(std::string_view access_key);
  static Status ValidateSecretKey(std::string_view secret_key);
  static Status ValidatePolicyName(std::string_view name);
  // The document of a built-in policy, or nullopt.
  static std::optional<std::string_view> BuiltinPolicy(std::string_view name);

 private:
  using Clock = std::chrono::steady_clock;
  struct UserEntry {
    User user;
    Clock::time_point fetched;
  };
  struct TokenBucket {
    double tokens;
    Clock::time_point at;
    // Refills at `rate` up to `burst`; takes one token when there is one.
    bool Take(Clock::time_point now, double rate, int burst);
  };
  struct PolicyEntry {
    std::shared_ptr<const Policy> policy;  // nullptr: none
    Clock::time_point fetched;
    std::optional<Error> broken;  // stored but unreadable or unparsable: every request denied
  };
  struct AccessEntry {
    BucketAccess access;
    Clock::time_point fetched;
  };

  // Object I/O in the system bucket. ReadDoc: nullopt when the object (or the bucket) is absent.
  Result<std::optional<std::string>> ReadDoc(const std::string& key);
  // Calls `each(name, key)` for every stored "<prefix><name>.json", page by page (an absent system
  // bucket is an empty list).
  Status ForEachDoc(const std::string& prefix,
                    const std::function<void(const std::string& name, const std::string& key)>& each);
  Status WriteDoc(const std::string& key, const std::string& doc);
  Status DeleteDoc(const std::string& key);  // absent is fine

  Result<std::optional<User>> LoadUser(const std::string& access_key);
  Status StoreUser(const User& user);
  Result<std::shared_ptr<const Policy>> LoadNamedPolicy(const std::string& name);
  // Stores a parsed policy document under doc_key and caches it in `cache` as `name`.
  Status SavePolicy(std::map<std::string, PolicyEntry, std::less<>>& cache, const std::string& name,
                    const std::string& doc_key, const std::string& document, Result<Policy> parsed);
  std::shared_ptr<const Policy> CachedNamedPolicy(const std::string& name);
  // Called with mu_ held: a lookup of a key outside the roster may read storage now.
  bool TakeLookupToken(std::string_view client, Clock::time_point now);
  void RememberAbsent(const std::string& access_key, Clock::time_point now);  // mu_ held
  // Lists the stored users again when the roster is older than `max_age` (one caller lists,
  // the others go on with what there is, except before the first listing).
  void RefreshRoster(std::chrono::milliseconds max_age);

  storage::ObjectLayer& store_;
  std::string root_;
  StoreOptions opts_;

  mutable std::mutex mu_;
  std::map<std::string, UserEntry, std::less<>> users_;  // users read, by access key
  // Keys found absent (time of the lookup), and their order for dropping the oldest.
  std::map<std::string, Clock::time_point, std::less<>> absent_;
  std::deque<std::string> absent_order_;
  std::set<std::string, std::less<>> roster_;  // the access key of every stored user
  std::optional<Clock::time_point> roster_at_;  // when it was listed; nullopt: never
  std::mutex roster_mu_;                        // held while listing (not with mu_)
  std::unordered_map<std::string, TokenBucket> client_tokens_;
  std::map<std::string, PolicyEntry, std::less<>> named_policies_;
  std::map<std::string, PolicyEntry, std::less<>> bucket_policies_;
  std::map<std::string, AccessEntry, std::less<>> bucket_access_;
  TokenBucket tokens_;
  uint64_t unknown_reads_ = 0, unknown_refusals_ = 0;
};

// The JSON a user record is stored as, and back (exposed for tests).
std::string UserToJson(const User& user);
Result<User> UserFromJson(std::string_view json);

}  // namespace rdmastor::iam
