#include "iam/store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/hash.h"
#include "common/no_block.h"
#include "common/text.h"

namespace rdmastor::iam {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxDocBytes = 64 * 1024;  // any record here; policies are <= 20 KiB
constexpr size_t kMaxCacheEntries = 10000;   // per map: a flood of names cannot grow it without end

const std::string kSys(kSystemBucket);

std::string UserKey(std::string_view ak) { return "iam/users/" + std::string(ak) + ".json"; }
std::string PolicyKey(std::string_view name) { return "iam/policies/" + std::string(name) + ".json"; }
std::string BucketPolicyKey(std::string_view b) { return "buckets/" + std::string(b) + "/policy.json"; }
std::string BucketAclKey(std::string_view b) { return "buckets/" + std::string(b) + "/acl.json"; }

constexpr std::pair<std::string_view, std::string_view> kBuiltins[] = {
    {"readwrite",
     R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]})"},
    {"readonly",
     R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetBucketLocation","s3:GetObject"],"Resource":["arn:aws:s3:::*"]}]})"},
    {"writeonly",
     R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::*"]}]})"},
};

class StringSource final : public BodySource {
 public:
  explicit StringSource(std::string_view s) : s_(s) {}
  Result<size_t> Read(char* buf, size_t len) override {
    size_t n = std::min(len, s_.size() - pos_);
    std::copy_n(s_.data() + pos_, n, buf);
    pos_ += n;
    return n;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

bool Absent(const Error& e) {
  return e.code == ErrorCode::kNoSuchKey || e.code == ErrorCode::kNoSuchBucket;
}

template <typename Map>
void Bound(Map& m) {
  if (m.size() >= kMaxCacheEntries) m.clear();
}

}  // namespace

std::string UserToJson(const User& user) {
  return Json{{"version", 1},
              {"accessKey", user.access_key},
              {"secretKey", user.secret_key},
              {"policies", user.policies},
              {"createdNs", user.created_ns},
              {"status", user.disabled ? "disabled" : "enabled"}}
      .dump();
}

Result<User> UserFromJson(std::string_view json) {
  Json j = Json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return MakeError(ErrorCode::kInternalError, "user record is not JSON");
  try {
    User u;
    u.access_key = j.at("accessKey").get<std::string>();
    u.secret_key = j.at("secretKey").get<std::string>();
    u.policies = j.value("policies", std::vector<std::string>{});
    u.created_ns = j.value("createdNs", int64_t{0});
    u.disabled = j.value("status", std::string("enabled")) == "disabled";
    return u;
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, std::string("user record: ") + e.what());
  }
}

IamStore::IamStore(storage::ObjectLayer& store, std::string root_access_key, StoreOptions opts)
    : store_(store),
      root_(std::move(root_access_key)),
      opts_(opts),
      tokens_{static_cast<double>(opts.unknown_key_lookup_burst), Clock::now()} {}

Status IamStore::ValidateAccessKey(std::string_view ak) {
  // Characters safe in an object key and in a SigV4 credential scope.
  bool ok = ak.size() >= 3 && ak.size() <= 128;
  for (char c : ak) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == '@' || c == '+');
  }
  if (!ok)
    return MakeError(ErrorCode::kInvalidArgument,
                     "An access key has 3 to 128 characters: letters, digits and - _ . @ +");
  return {};
}

Status IamStore::ValidateSecretKey(std::string_view sk) {
  bool ok = sk.size() >= 8 && sk.size() <= 128;
  for (char c : sk) ok = ok && c > ' ' && c < 0x7f;
  if (!ok)
    return MakeError(ErrorCode::kInvalidArgument,
                     "A secret key has 8 to 128 printable ASCII characters and no spaces");
  return {};
}

Status IamStore::ValidatePolicyName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 128;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == '+' || c == '@' || c == '=' || c == ',');
  }
  if (!ok || name == "." || name == "..")
    return MakeError(ErrorCode::kInvalidArgument,
                     "A policy name has 1 to 128 characters: letters, digits and - _ . + @ = ,");
  return {};
}

std::optional<std::string_view> IamStore::BuiltinPolicy(std::string_view name) {
  for (const auto& [n, doc] : kBuiltins)
    if (n == name) return doc;
  return std::nullopt;
}

// ---- object I/O ----

Result<std::optional<std::string>> ReadSystemDoc(storage::ObjectLayer& store,
                                                 const std::string& key) {
  auto reader = store.OpenObject(kSys, key);
  if (!reader.ok()) {
    if (Absent(reader.error())) return std::optional<std::string>();
    return reader.error();
  }
  const uint64_t size = (*reader)->info().size;
  if (size > kMaxDocBytes)
    return MakeError(ErrorCode::kInternalError, kSys + "/" + key + " is larger than expected");
  std::string doc(size, '\0');
  size_t got = 0;
  while (got < size) {
    auto n = (*reader)->ReadAt(got, doc.data() + got, size - got);
    if (!n.ok()) return n.error();
    if (*n == 0) return MakeError(ErrorCode::kInternalError, "short read of " + key);
    got += *n;
  }
  return std::optional<std::string>(std::move(doc));
}

Result<std::optional<std::string>> IamStore::ReadDoc(const std::string& key) {
  return ReadSystemDoc(store_, key);
}

Status WriteSystemDoc(storage::ObjectLayer& store, const std::string& key,
                      const std::string& doc) {
  storage::PutOptions po;
  po.content_type = "application/json";
  po.size = doc.size();
  const std::string etag = hash::Md5Hex(doc);
  auto check = [&etag](uint64_t) -> Result<storage::CommitInfo> {
    storage::CommitInfo ci;
    ci.etag = etag;
    return ci;
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    StringSource body(doc);
    auto put = store.PutObject(kSys, key, body, po, check);
    if (put.ok()) return {};
    if (put.error().code != ErrorCode::kNoSuchBucket || attempt == 1) return put.error();
    // The first record: create the system bucket (another node may do so at the same time).
    auto made = store.MakeBucket(kSys);
    if (!made.ok() && made.error().code != ErrorCode::kBucketAlreadyOwnedByYou) return made;
  }
  return {};
}

Status IamStore::WriteDoc(const std::string& key, const std::string& doc) {
  return WriteSystemDoc(store_, key, doc);
}

Status IamStore::DeleteDoc(const std::string& key) {
  auto st = store_.DeleteObject(kSys, key);
  if (!st.ok() && !Absent(st.error())) return st;
  return {};
}

// ---- users ----

Result<std::optional<User>> IamStore::LoadUser(const std::string& access_key) {
  auto doc = ReadDoc(UserKey(access_key));
  if (!doc.ok()) return doc.error();
  if (!doc->has_value()) return std::optional<User>();
  auto user = UserFromJson(**doc);
  if (!user.ok()) return user.error();
  return std::optional<User>(std::move(*user));
}

Status IamStore::StoreUser(const User& user) {
  RS_RETURN_IF_ERROR(WriteDoc(UserKey(user.access_key), UserToJson(user)));
  std::lock_guard lock(mu_);
  Bound(users_);
  users_[user.access_key] = UserEntry{user, Clock::now()};
  absent_.erase(user.access_key);
  roster_.insert(user.access_key);
  return {};
}

Status IamStore::AddUser(const std::string& access_key, const std::string& secret_key) {
  RS_RETURN_IF_ERROR(ValidateAccessKey(access_key));
  RS_RETURN_IF_ERROR(ValidateSecretKey(secret_key));
  if (access_key == root_)
    return MakeError(ErrorCode::kInvalidArgument, "The root user's access key cannot be a user");
  // Bucket policies name the account's root "root" (arn:aws:iam::<account>:root).
  if (text::ToLower(access_key) == "root")
    return MakeError(ErrorCode::kInvalidArgument, "The user name root is reserved");
  auto current = LoadUser(access_key);
  if (!current.ok()) return current.error();
  User user = current->value_or(User{access_key, {}, {}, NowNs()});
  user.secret_key = secret_key;
  return StoreUser(user);
}

Status IamStore::RemoveUser(const std::string& access_key) {
  RS_RETURN_IF_ERROR(GetUser(access_key));  // NoSuchUser unless it exists
  RS_RETURN_IF_ERROR(DeleteDoc(UserKey(access_key)));
  std::lock_guard lock(mu_);
  users_.erase(access_key);
  roster_.erase(access_key);
  RememberAbsent(access_key, Clock::now());
  return {};
}

Status IamStore::ForEachDoc(
    const std::string& prefix,
    const std::function<void(const std::string& name, const std::string& key)>& each) {
  storage::ListOptions lo;
  lo.prefix = prefix;
  for (;;) {
    auto page = store_.ListObjects(kSys, lo);
    if (!page.ok()) {
      if (page.error().code == ErrorCode::kNoSuchBucket) return {};
      return page.error();
    }
    for (const auto& obj : page->objects) {
      std::string name = obj.key.substr(prefix.size());
      if (!name.ends_with(".json")) continue;
      name.resize(name.size() - 5);
      each(name, obj.key);
    }
    if (!page->truncated || page->objects.empty()) return {};
    lo.start_after = page->objects.back().key;
  }
}

Result<std::vector<User>> IamStore::ListUsers() {
  std::vector<User> out;
  RS_RETURN_IF_ERROR(ForEachDoc("iam/users/", [&](const std::string& ak, const std::string&) {
    auto user = LoadUser(ak);
    if (user.ok() && user->has_value()) out.push_back(std::move(**user));
  }));
  return out;
}

Status IamStore::SetUserPolicies(const std::string& access_key,
                                 const std::vector<std::string>& policies) {
  RS_RETURN_IF_ERROR(ValidateAccessKey(access_key));
  for (const auto& p : policies) {
    RS_RETURN_IF_ERROR(ValidatePolicyName(p));
    if (BuiltinPolicy(p)) continue;
    auto doc = ReadDoc(PolicyKey(p));
    if (!doc.ok()) return doc.error();
    if (!doc->has_value())
      return MakeError(ErrorCode::kNoSuchPolicy, "The canned policy " + p + " does not exist.");
  }
  auto current = GetUser(access_key);
  if (!current.ok()) return current.error();
  User user = std::move(*current);
  user.policies.clear();
  for (const auto& p : policies)
    if (std::find(user.policies.begin(), user.policies.end(), p) == user.policies.end())
      user.policies.push_back(p);
  return StoreUser(user);
}

Status IamStore::AttachPolicies(const std::string& access_key,
                                const std::vector<std::string>& policies) {
  auto current = LoadUser(access_key);
  if (!current.ok()) return current.error();
  if (!current->has_value()) return MakeError(ErrorCode::kNoSuchUser);
  std::vector<std::string> all = (*current)->policies;
  all.insert(all.end(), policies.begin(), policies.end());
  return SetUserPolicies(access_key, all);
}

Status IamStore::DetachPolicies(const std::string& access_key,
                                const std::vector<std::string>& policies) {
  auto user = GetUser(access_key);
  if (!user.ok()) return user.error();
  std::vector<std::string> kept;
  for (const auto& p : user->policies)
    if (std::find(policies.begin(), policies.end(), p) == policies.end()) kept.push_back(p);
  if (kept.size() == user->policies.size())
    return MakeError(ErrorCode::kInvalidArgument,
                     "The specified policy change is already in effect: none of the policies is "
                     "attached to the user.");
  user->policies = std::move(kept);
  return StoreUser(*user);
}

Result<User> IamStore::GetUser(const std::string& access_key) {
  RS_RETURN_IF_ERROR(ValidateAccessKey(access_key));
  auto current = LoadUser(access_key);
  if (!current.ok()) return current.error();
  if (!current->has_value()) return MakeError(ErrorCode::kNoSuchUser);
  return std::move(**current);
}

Status IamStore::SetUserEnabled(const std::string& access_key, bool enabled) {
  auto user = GetUser(access_key);
  if (!user.ok()) return user.error();
  user->disabled = !enabled;
  return StoreUser(*user);
}

// ---- named policies ----

Result<std::string> IamStore::GetPolicy(const std::string& name) {
  RS_RETURN_IF_ERROR(ValidatePolicyName(name));
  if (auto builtin = BuiltinPolicy(name)) return std::string(*builtin);
  auto doc = ReadDoc(PolicyKey(name));
  if (!doc.ok()) return doc.error();
  if (!doc->has_value())
    return MakeError(ErrorCode::kNoSuchPolicy, "The canned policy " + name + " does not exist.");
  return std::move(**doc);
}

Status IamStore::PutPolicy(const std::string& name, const std::string& document) {
  RS_RETURN_IF_ERROR(ValidatePolicyName(name));
  if (BuiltinPolicy(name))
    return MakeError(ErrorCode::kInvalidArgument, "The built-in policy " + name +
                                                      " cannot be replaced");
  return SavePolicy(named_policies_, name, PolicyKey(name), document,
                    ParsePolicy(document, PolicyKind::kIdentity));
}

Status IamStore::SavePolicy(std::map<std::string, PolicyEntry, std::less<>>& cache,
                            const std::string& name, const std::string& doc_key,
                            const std::string& document, Result<Policy> parsed) {
  if (!parsed.ok()) return parsed.error();
  RS_RETURN_IF_ERROR(WriteDoc(doc_key, document));
  std::lock_guard lock(mu_);
  Bound(cache);
  cache[name] =
      PolicyEntry{std::make_shared<const Policy>(std::move(*parsed)), Clock::now(), std::nullopt};
  return {};
}

Status IamStore::RemovePolicy(const std::string& name) {
  RS_RETURN_IF_ERROR(ValidatePolicyName(name));
  if (BuiltinPolicy(name))
    return MakeError(ErrorCode::kInvalidArgument, "The built-in policy " + name +
                                                      " cannot be removed");
  auto doc = ReadDoc(PolicyKey(name));
  if (!doc.ok()) return doc.error();
  if (!doc->has_value()) return MakeError(ErrorCode::kNoSuchPolicy);
  RS_RETURN_IF_ERROR(DeleteDoc(PolicyKey(name)));
  std::lock_guard lock(mu_);
  named_policies_[name] = PolicyEntry{nullptr, Clock::now(), std::nullopt};
  return {};
}

Result<std::map<std::string, std::string>> IamStore::ListPolicies() {
  std::map<std::string, std::string> out;
  for (const auto& [n, doc] : kBuiltins) out[std::string(n)] = std::string(doc);
  RS_RETURN_IF_ERROR(ForEachDoc("iam/policies/", [&](const std::string& name,
                                                     const std::string& key) {
    auto doc = ReadDoc(key);
    if (doc.ok() && doc->has_value()) out[name] = std::move(**doc);
  }));
  return out;
}

Result<std::shared_ptr<const Policy>> IamStore::LoadNamedPolicy(const std::string& name) {
  if (auto builtin = BuiltinPolicy(name)) {
    auto p = ParsePolicy(*builtin, PolicyKind::kIdentity);
    if (!p.ok()) return p.error();
    return std::make_shared<const Policy>(std::move(*p));
  }
  auto doc = ReadDoc(PolicyKey(name));
  if (!doc.ok()) return doc.error();
  if (!doc->has_value()) return std::shared_ptr<const Policy>();
  auto p = ParsePolicy(**doc, PolicyKind::kIdentity);
  if (!p.ok()) {
    spdlog::warn("iam: stored policy {} does not parse: {}", name, p.error().message);
    return std::shared_ptr<const Policy>();
  }
  return std::make_shared<const Policy>(std::move(*p));
}

std::shared_ptr<const Policy> IamStore::CachedNamedPolicy(const std::string& name) {
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = named_policies_.find(name);
    if (it != named_policies_.end() &&
        (BuiltinPolicy(name) || now - it->second.fetched < opts_.refresh))
      return it->second.policy;
  }
  auto loaded = LoadNamedPolicy(name);
  std::lock_guard lock(mu_);
  auto it = named_policies_.find(name);
  if (!loaded.ok()) {
    // Storage trouble: keep what we had rather than dropping a user's permissions.
    return it != named_policies_.end() ? it->second.policy : nullptr;
  }
  Bound(named_policies_);
  named_policies_[name] = PolicyEntry{*loaded, now, std::nullopt};
  return *loaded;
}

// ---- the request path ----

bool IamStore::TokenBucket::Take(Clock::time_point now, double rate, int burst) {
  const double elapsed = std::chrono::duration<double>(now - at).count();
  tokens = std::min<double>(burst, tokens + elapsed * rate);
  at = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

bool IamStore::TakeLookupToken(std::string_view client, Clock::time_point now) {
  auto it = client_tokens_.find(std::string(client));
  if (it == client_tokens_.end()) {
    if (client_tokens_.size() >= kMaxCacheEntries) {
      // Forget the clients whose bucket has refilled: they lose nothing by it.
      std::erase_if(client_tokens_, [&](auto& entry) {
        auto probe = entry.second;
        probe.Take(now, opts_.unknown_key_lookups_per_client_per_second,
                   opts_.unknown_key_lookup_client_burst);
        return probe.tokens + 1 >= opts_.unknown_key_lookup_client_burst;
      });
    }
    if (client_tokens_.size() >= kMaxCacheEntries) return false;  // the node-wide limit rules
    it = client_tokens_
             .emplace(std::string(client),
                      TokenBucket{static_cast<double>(opts_.unknown_key_lookup_client_burst), now})
             .first;
  }
  // The client's own token first: a client over its share does not spend the node's.
  if (!it->second.Take(now, opts_.unknown_key_lookups_per_client_per_second,
                       opts_.unknown_key_lookup_client_burst))
    return false;
  return tokens_.Take(now, opts_.unknown_key_lookups_per_second, opts_.unknown_key_lookup_burst);
}

void IamStore::RememberAbsent(const std::string& access_key, Clock::time_point now) {
  if (absent_.insert_or_assign(access_key, now).second) absent_order_.push_back(access_key);
  while (absent_.size() > opts_.max_negative_entries && !absent_order_.empty()) {
    absent_.erase(absent_order_.front());
    absent_order_.pop_front();
  }
  // Keys re-added after being dropped can leave stale names behind: bounded all the same.
  if (absent_order_.size() > 2 * opts_.max_negative_entries + 16) {
    absent_order_.clear();
    for (const auto& [k, t] : absent_) absent_order_.push_back(k);
  }
}

void IamStore::RefreshRoster(std::chrono::milliseconds max_age) {
  bool never;
  {
    std::lock_guard lock(mu_);
    if (roster_at_ && Clock::now() - *roster_at_ < max_age) return;
    never = !roster_at_;
  }
  // Before the first listing every caller waits for it (a restarted node's users must not look
  // unknown); afterwards one lists and the others go on with the roster they have.
  std::unique_lock listing(roster_mu_, std::defer_lock);
  if (never) {
    listing.lock();
  } else if (!listing.try_lock()) {
    return;
  }
  const auto started = Clock::now();
  {
    std::lock_guard lock(mu_);
    if (roster_at_ && started - *roster_at_ < max_age) return;  // listed while we waited
  }
  std::set<std::string, std::less<>> names;
  auto st = ForEachDoc("iam/users/", [&](const std::string& ak, const std::string&) {
    if (ValidateAccessKey(ak).ok()) names.insert(ak);
  });
  // An inline attempt on an I/O thread (common/no_block.h) that would have had to read the
  // drives (their refusal arrives here as a quorum error): the attempt is dropped and runs again
  // on a worker, so nothing is recorded and nothing logged (recording the try would keep the
  // worker's retry from listing, and an existing user would look unknown).
  if (!st.ok() && !noblock::MayWait()) return;
  std::lock_guard lock(mu_);
  if (!st.ok()) {
    spdlog::warn("iam: cannot list the users: {}", st.error().message);
    if (!roster_at_) roster_at_ = started;  // tried: the next try waits its turn
    return;
  }
  // Users added or removed through this node while listing are already right in the roster.
  for (const auto& ak : names) absent_.erase(ak);
  roster_ = std::move(names);
  roster_at_ = started;
}

namespace {

// What authenticates a user: its secret, or nothing while it is disabled.
std::optional<std::string> SecretOf(const User& u) {
  if (u.disabled) return std::nullopt;
  return u.secret_key;
}

}  // namespace

std::optional<std::string> IamStore::SecretFor(std::string_view access_key,
                                               std::string_view client) {
  if (access_key == root_ || !ValidateAccessKey(access_key).ok()) return std::nullopt;
  RefreshRoster(opts_.refresh);
  const auto now = Clock::now();
  std::optional<User> cached;
  {
    std::unique_lock lock(mu_);
    auto it = users_.find(access_key);
    if (it != users_.end()) {
      if (now - it->second.fetched < opts_.refresh) return SecretOf(it->second.user);
      cached = it->second.user;  // known: read again, without any limit
    } else if (auto gone = absent_.find(access_key);
               gone != absent_.end() && now - gone->second < opts_.negative_ttl) {
      return std::nullopt;
    } else if (!roster_.contains(access_key)) {
      // Outside the roster: a user added through another node since the last listing, or a
      // made-up key. A storage read within the limits, else a new listing (rate limited).
      if (!TakeLookupToken(client, now)) {
        ++unknown_refusals_;
        lock.unlock();
        RefreshRoster(opts_.roster_min_interval);
        lock.lock();
        if (!roster_.contains(access_key)) return std::nullopt;
      } else {
        ++unknown_reads_;
      }
    }
  }
  const std::string ak(access_key);
  auto loaded = LoadUser(ak);
  if (!loaded.ok() && !noblock::MayWait()) return std::nullopt;  // dropped attempt: as above
  std::lock_guard lock(mu_);
  if (!loaded.ok()) {
    spdlog::warn("iam: cannot read user {}: {}", ak, loaded.error().message);
    if (cached) return SecretOf(*cached);  // keep serving a known user
    return std::nullopt;
  }
  if (!loaded->has_value()) {
    users_.erase(ak);
    roster_.erase(ak);
    RememberAbsent(ak, now);
    return std::nullopt;
  }
  Bound(users_);
  users_[ak] = UserEntry{**loaded, now};
  roster_.insert(ak);
  return SecretOf(**loaded);
}

std::vector<std::shared_ptr<const Policy>> IamStore::PoliciesOf(std::string_view access_key) {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    auto it = users_.find(access_key);
    if (it == users_.end()) return {};
    names = it->second.user.policies;
  }
  std::vector<std::shared_ptr<const Policy>> out;
  for (const auto& n : names) {
    if (auto p = CachedNamedPolicy(n)) out.push_back(std::move(p));
  }
  return out;
}

// ---- bucket policies ----

Result<std::string> IamStore::GetBucketPolicy(const std::string& bucket) {
  auto doc = ReadDoc(BucketPolicyKey(bucket));
  if (!doc.ok()) return doc.error();
  if (!doc->has_value()) return MakeError(ErrorCode::kNoSuchBucketPolicy);
  return std::move(**doc);
}

Status IamStore::PutBucketPolicy(const std::string& bucket, const std::string& document) {
  return SavePolicy(bucket_policies_, bucket, BucketPolicyKey(bucket), document,
                    ParsePolicy(document, PolicyKind::kBucket, bucket));
}

Status IamStore::DeleteBucketPolicy(const std::string& bucket) {
  RS_RETURN_IF_ERROR(DeleteDoc(BucketPolicyKey(bucket)));
  std::lock_guard lock(mu_);
  bucket_policies_[bucket] = PolicyEntry{nullptr, Clock::now(), std::nullopt};
  return {};
}

Result<std::shared_ptr<const Policy>> IamStore::BucketPolicy(const std::string& bucket) {
  const auto now = Clock::now();
  std::shared_ptr<const Policy> stale;
  bool had = false;
  {
    std::lock_guard lock(mu_);
    auto it = bucket_policies_.find(bucket);
    if (it != bucket_policies_.end()) {
      if (now - it->second.fetched < opts_.refresh) {
        if (it->second.broken) return *it->second.broken;
        return it->second.policy;
      }
      stale = it->second.policy;
      had = !it->second.broken;
    }
  }
  auto doc = ReadDoc(BucketPolicyKey(bucket));
  PolicyEntry entry{nullptr, now, std::nullopt};
  if (!doc.ok()) {
    spdlog::warn("iam: cannot read the policy of bucket {}: {}", bucket, doc.error().message);
    // What was read before stands in; with nothing read before, the policy is unknown.
    if (had)
      entry.policy = stale;
    else
      entry.broken = MakeError(ErrorCode::kAccessDenied, "the bucket policy cannot be read");
  } else if (doc->has_value()) {
    auto parsed = ParsePolicy(**doc, PolicyKind::kBucket, bucket);
    if (parsed.ok()) {
      entry.policy = std::make_shared<const Policy>(std::move(*parsed));
    } else {
      spdlog::warn("iam: stored policy of bucket {} does not parse: {}", bucket,
                   parsed.error().message);
      entry.broken = MakeError(ErrorCode::kAccessDenied, "the bucket policy cannot be read");
    }
  }
  std::lock_guard lock(mu_);
  Bound(bucket_policies_);
  bucket_policies_[bucket] = entry;
  if (entry.broken) return *entry.broken;
  return entry.policy;
}

Result<BucketAccess> IamStore::GetBucketAccess(const std::string& bucket) {
  auto doc = ReadDoc(BucketAclKey(bucket));
  if (!doc.ok()) return doc.error();
  BucketAccess access;
  if (!doc->has_value()) return access;
  Json j = Json::parse(**doc, nullptr, false);
  if (j.is_object()) {
    access.owner = j.value("owner", std::string());
    access.acl = j.value("acl", std::string("private"));
  }
  return access;
}

Status IamStore::PutBucketAccess(const std::string& bucket, const BucketAccess& access) {
  RS_RETURN_IF_ERROR(
      WriteDoc(BucketAclKey(bucket),
               Json{{"version", 1}, {"owner", access.owner}, {"acl", access.acl}}.dump()));
  std::lock_guard lock(mu_);
  Bound(bucket_access_);
  bucket_access_[bucket] = AccessEntry{access, Clock::now()};
  return {};
}

BucketAccess IamStore::CachedBucketAccess(const std::string& bucket) {
  const auto now = Clock::now();
  std::optional<BucketAccess> stale;
  {
    std::lock_guard lock(mu_);
    auto it = bucket_access_.find(bucket);
    if (it != bucket_access_.end()) {
      if (now - it->second.fetched < opts_.refresh) return it->second.access;
      stale = it->second.access;
    }
  }
  auto read = GetBucketAccess(bucket);
  if (!read.ok()) {
    spdlog::warn("iam: cannot read the ACL of bucket {}: {}", bucket, read.error().message);
    if (!stale) return BucketAccess{};  // not cached: refused for a retry, private meanwhile
  }
  BucketAccess access = read.ok() ? std::move(*read) : *stale;
  std::lock_guard lock(mu_);
  Bound(bucket_access_);
  bucket_access_[bucket] = AccessEntry{access, now};
  return access;
}

void IamStore::ForgetBucket(const std::string& bucket) {
  for (const auto& key : {BucketPolicyKey(bucket), BucketAclKey(bucket)}) {
    if (auto st = DeleteDoc(key); !st.ok())
      spdlog::warn("iam: could not remove {}/{}: {}", kSys, key, st.error().message);
  }
  std::lock_guard lock(mu_);
  bucket_policies_.erase(bucket);
  bucket_access_.erase(bucket);
}

uint64_t IamStore::unknown_key_reads() const {
  std::lock_guard lock(mu_);
  return unknown_reads_;
}

uint64_t IamStore::unknown_key_refusals() const {
  std::lock_guard lock(mu_);
  return unknown_refusals_;
}

}  // namespace rdmastor::iam
