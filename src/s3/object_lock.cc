// S3 Object Lock (s3/object_lock.h): the bucket configuration, the lock of new versions, the delete
// checks, and the handlers of ?object-lock, ?retention and ?legal-hold.
#include "s3/object_lock.h"

#include <chrono>
#include <sstream>

#include "s3/handlers.h"
#include "s3/xml.h"

namespace rdmastor::s3 {

namespace {

constexpr int64_t kMsPerDay = 86'400'000;

Error MissingLockConfig() {
  return MakeError(ErrorCode::kInvalidRequest, "Bucket is missing Object Lock Configuration");
}

Error Locked() {
  return MakeError(ErrorCode::kAccessDenied,
                   "Access Denied because object protected by object lock.");
}

bool IsLockMode(std::string_view m) { return m == "GOVERNANCE" || m == "COMPLIANCE"; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ToLower(a) == ToLower(b);
}

// `now_ms` plus a default retention period (calendar years, as AWS counts them).
int64_t RetainUntil(const BucketLock& lock, int64_t now_ms) {
  if (lock.days > 0) return now_ms + lock.days * kMsPerDay;
  using namespace std::chrono;
  const int64_t day = now_ms >= 0 ? now_ms / kMsPerDay : (now_ms - kMsPerDay + 1) / kMsPerDay;
  const year_month_day ymd{sys_days{days{day}}};
  year_month_day later = ymd + std::chrono::years{static_cast<int>(lock.years)};
  if (!later.ok()) later = later.year() / later.month() / last;  // Feb 29 + 1 year
  return sys_days(later).time_since_epoch().count() * kMsPerDay + (now_ms - day * kMsPerDay);
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string BucketLockRecord(const BucketLock& lock) {
  if (!lock.enabled) return {};
  if (lock.mode.empty()) return "Enabled";
  return "Enabled " + lock.mode + (lock.days > 0 ? " Days " + std::to_string(lock.days)
                                                 : " Years " + std::to_string(lock.years));
}

BucketLock ParseBucketLockRecord(std::string_view record) {
  BucketLock lock;
  std::istringstream in{std::string(record)};
  std::string enabled, mode, unit;
  int64_t n = 0;
  in >> enabled;
  lock.enabled = enabled == "Enabled";
  if (lock.enabled && (in >> mode >> unit >> n) && IsLockMode(mode) && n > 0) {
    lock.mode = mode;
    (unit == "Days" ? lock.days : lock.years) = n;
  }
  return lock;
}

Result<BucketLock> BucketLockOf(storage::ObjectLayer& store, const std::string& bucket) {
  auto record = store.BucketConfig(bucket, kObjectLockConfigName);
  if (!record.ok()) return record.error();
  return ParseBucketLockRecord(*record);
}

Status ApplyObjectLock(storage::ObjectLayer& store, const std::string& bucket,
                       const HttpRequest& req, storage::PutOptions& opts, bool put,
                       int64_t now_ms) {
  const std::string* mode = req.FindHeader("x-amz-object-lock-mode");
  const std::string* until = req.FindHeader("x-amz-object-lock-retain-until-date");
  const std::string* hold = req.FindHeader("x-amz-object-lock-legal-hold");
  auto lock = BucketLockOf(store, bucket);
  if (!lock.ok()) return lock.error();
  if (!lock->enabled) {
    if (mode || until || hold) return MissingLockConfig();
    return {};
  }
  if (put && (mode || until || hold) && !DeclaresIntegrity(req))
    return MakeError(ErrorCode::kInvalidRequest,
                     "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object "
                     "requests with Object Lock parameters");
  if (mode || until) {
    if (!mode || !until)
      return MakeError(ErrorCode::kInvalidArgument,
                       "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both "
                       "be supplied");
    if (!IsLockMode(*mode))
      return MakeError(ErrorCode::kInvalidArgument, "Unknown wormMode directive.");
    auto ms = ParseIso8601Ms(*until);
    if (!ms)
      return MakeError(ErrorCode::kInvalidArgument,
                       "The retain until date must be provided in ISO 8601 format");
    if (*ms <= now_ms)
      return MakeError(ErrorCode::kInvalidArgument, "The retain until date must be in the future!");
    opts.lock_mode = *mode;
    opts.lock_until_ms = *ms;
  } else if (!lock->mode.empty()) {
    opts.lock_mode = lock->mode;
    opts.lock_until_ms = RetainUntil(*lock, now_ms);
  }
  if (hold) {
    if (*hold != "ON" && *hold != "OFF")
      return MakeError(ErrorCode::kInvalidArgument, "Legal Hold must be either of 'ON' or 'OFF'");
    opts.legal_hold = *hold;
  }
  return {};
}

Status CheckRemovable(const storage::ObjectInfo& v, bool bypass, int64_t now_ms) {
  if (v.delete_marker) return {};
  if (v.legal_hold == "ON") return Locked();
  if (v.lock_mode.empty() || v.lock_until_ms <= now_ms) return {};
  if (v.lock_mode == "GOVERNANCE" && bypass) return {};
  return Locked();
}

bool BypassesGovernance(const S3Request& r, const std::string& key) {
  const std::string* h = r.req.FindHeader("x-amz-bypass-governance-retention");
  return h && EqualsNoCase(*h, "true") && r.allowed("s3:BypassGovernanceRetention", key).ok();
}

Result<storage::DeleteResult> DeleteVersionChecked(storage::ObjectLayer& store,
                                                   const std::string& bucket,
                                                   const std::string& key,
                                                   const storage::VersionSel& version, bool bypass,
                                                   const std::optional<std::string>& if_match) {
  auto lock = BucketLockOf(store, bucket);
  if (!lock.ok()) return lock.error();
  // Versions carry a lock only in lock-enabled buckets; elsewhere nothing to check.
  const bool locked_bucket = lock->enabled;
  if (!locked_bucket && !if_match) return store.DeleteObjectVersion(bucket, key, version);
  return store.DeleteObjectVersion(
      bucket, key, version, [&](const storage::DeleteTarget& t) -> Status {
        if (if_match) {
          const storage::ObjectInfo* against = version ? t.removed : t.latest;
          if (!against)
            return MakeError(version ? ErrorCode::kNoSuchVersion : ErrorCode::kNoSuchKey);
          if (against->delete_marker)  // no object, nothing to match
            return MakeError(version ? ErrorCode::kPreconditionFailed : ErrorCode::kNoSuchKey);
          if (!EtagMatches(*if_match, against->etag))
            return MakeError(ErrorCode::kPreconditionFailed);
        }
        // What a delete removes for good: the version named, or where the key is not versioned
        // the null version (a plain delete in an Enabled bucket only adds a marker).
        if (locked_bucket && t.removed) return CheckRemovable(*t.removed, bypass, NowMs());
        return {};
      });
}

Result<storage::DeleteResult> DeleteVersionUnderLock(const Env& env, const S3Request& r,
                                                     const std::string& key,
                                                     const storage::VersionSel& version,
                                                     const std::optional<std::string>& if_match) {
  return DeleteVersionChecked(env.store, r.bucket, key, version, BypassesGovernance(r, key),
                              if_match);
}

void AddObjectLockHeaders(HeaderList& out, const storage::ObjectInfo& info) {
  if (!info.lock_mode.empty()) {
    out.emplace_back("x-amz-object-lock-mode", info.lock_mode);
    out.emplace_back("x-amz-object-lock-retain-until-date", Iso8601Ms(info.lock_until_ms));
  }
  if (!info.legal_hold.empty()) out.emplace_back("x-amz-object-lock-legal-hold", info.legal_hold);
}

// ---- handlers ----

// ?object-lock on a bucket: Put/GetObjectLockConfiguration.
Reply HandleObjectLockConfiguration(const Env& env, S3Request& r) {
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return info.error();
  auto lock = BucketLockOf(env.store, r.bucket);
  if (!lock.ok()) return lock.error();
  if (r.op == S3Op::kGetBucketObjectLockConfig) {
    if (!lock->enabled) return MakeError(ErrorCode::kObjectLockConfigurationNotFound);
    return XmlReply(ObjectLockConfigXml({lock->mode, lock->days, lock->years}));
  }
  if (auto st = RequireIntegrity(r.req); !st.ok()) return st.error();
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto doc = ParseObjectLockConfigXml(*body);
  if (!doc.ok()) return doc.error();
  // AWS: a bucket without Object Lock gets it only when its versioning is Enabled (MinIO: and
  // nothing excluded from it, as versions there could be removed by a plain delete).
  if (!lock->enabled &&
      (info->versioning != storage::Versioning::kEnabled || !info->excluded.prefixes.empty() ||
       info->excluded.folders))
    return MakeError(ErrorCode::kInvalidBucketState,
                     "Versioning must be 'Enabled' on the bucket to apply a Object Lock "
                     "configuration");
  BucketLock updated{true, doc->mode, doc->days, doc->years};
  if (auto st = env.store.SetBucketConfig(r.bucket, kObjectLockConfigName,
                                          BucketLockRecord(updated));
      !st.ok())
    return st.error();
  return EmptyReply(200);
}

namespace {

// The version a ?retention / ?legal-hold request addresses, in a lock-enabled bucket.
Result<storage::ObjectInfo> LockedObject(const Env& env, const S3Request& r) {
  auto lock = BucketLockOf(env.store, r.bucket);
  if (!lock.ok()) return lock.error();
  if (!lock->enabled) return MissingLockConfig();
  return r.version ? env.store.StatObjectVersion(r.bucket, r.key, *r.version)
                   : env.store.StatObject(r.bucket, r.key);
}

HeaderList VersionHeader(const storage::ObjectInfo& info) {
  if (info.version_id.empty()) return {};
  return {{"x-amz-version-id", info.version_id}};
}

}  // namespace

// ?retention on an object: Put/GetObjectRetention.
Reply HandleObjectRetention(const Env& env, S3Request& r) {
  auto current = LockedObject(env, r);
  if (!current.ok()) return VersionErrorReply(r, current.error(), env.store);
  if (r.op == S3Op::kGetObjectRetention) {
    if (current->lock_mode.empty()) return MakeError(ErrorCode::kNoSuchObjectLockConfiguration);
    return XmlReply(RetentionXml(current->lock_mode, current->lock_until_ms), 200,
                    VersionHeader(*current));
  }
  if (auto st = RequireIntegrity(r.req); !st.ok()) return st.error();
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto doc = ParseRetentionXml(*body);
  if (!doc.ok()) return doc.error();
  const int64_t now = NowMs();
  if (doc->until_ms && *doc->until_ms <= now)
    return MakeError(ErrorCode::kInvalidArgument, "The retain until date must be in the future!");
  const bool bypass = BypassesGovernance(r, r.key);
  storage::PutOptions opts;
  opts.update = storage::FieldMask(storage::VersionField::lock_mode,
                                   storage::VersionField::lock_until_ms);
  opts.version = current->version_id;
  opts.lock_mode = doc->mode;
  opts.lock_until_ms = doc->until_ms.value_or(0);
  // Checked against the version as it is under the key's write lock: a COMPLIANCE retention
  // only grows (same mode, a later or equal date); a GOVERNANCE one may change otherwise only
  // with the bypass.
  opts.precondition = [&](const storage::ObjectInfo* v) -> Status {
    if (!v || v->lock_mode.empty() || v->lock_until_ms <= now) return {};
    const bool keeps =
        doc->mode == v->lock_mode && doc->until_ms && *doc->until_ms >= v->lock_until_ms;
    if (keeps) return {};
    if (v->lock_mode == "GOVERNANCE" && bypass) return {};
    return Locked();
  };
  auto updated = env.store.UpdateMetadata(r.bucket, r.key, opts);
  if (!updated.ok()) return VersionErrorReply(r, updated.error(), env.store);
  return EmptyReply(200, VersionHeader(*updated));
}

// ?legal-hold on an object: Put/GetObjectLegalHold.
Reply HandleObjectLegalHold(const Env& env, S3Request& r) {
  auto current = LockedObject(env, r);
  if (!current.ok()) return VersionErrorReply(r, current.error(), env.store);
  if (r.op == S3Op::kGetObjectLegalHold) {
    if (current->legal_hold.empty()) return MakeError(ErrorCode::kNoSuchObjectLockConfiguration);
    return XmlReply(LegalHoldXml(current->legal_hold), 200, VersionHeader(*current));
  }
  if (auto st = RequireIntegrity(r.req); !st.ok()) return st.error();
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto status = ParseLegalHoldXml(*body);
  if (!status.ok()) return status.error();
  storage::PutOptions opts;
  opts.update = storage::FieldMask(storage::VersionField::legal_hold);
  opts.version = current->version_id;
  opts.legal_hold = *status;
  auto updated = env.store.UpdateMetadata(r.bucket, r.key, opts);
  if (!updated.ok()) return VersionErrorReply(r, updated.error(), env.store);
  return EmptyReply(200, VersionHeader(*updated));
}

}  // namespace rdmastor::s3
