// Bucket lifecycle (s3/lifecycle.h): the ?lifecycle handler and what a rule takes.
#include "s3/lifecycle.h"

#include <algorithm>

#include "common/uri.h"
#include "s3/handlers.h"

namespace rdmastor::s3 {

Result<std::vector<LifecycleRule>> LifecycleRulesOf(storage::ObjectLayer& store,
                                                   const std::string& bucket) {
  auto stored = store.BucketConfig(bucket, kLifecycleConfigName);
  if (!stored.ok()) return stored.error();
  if (stored->empty()) return std::vector<LifecycleRule>{};
  return ParseLifecycleXml(*stored);
}

bool LifecycleFilterMatches(const LifecycleRule& rule, std::string_view key, std::string_view tags,
                            uint64_t size) {
  if (rule.prefix && !key.starts_with(*rule.prefix)) return false;
  if (rule.size_gt && size <= static_cast<uint64_t>(*rule.size_gt)) return false;
  if (rule.size_lt && size >= static_cast<uint64_t>(*rule.size_lt)) return false;
  if (rule.tags.empty()) return true;
  const auto have = uri::ParseQuery(tags);
  if (!have) return false;
  return std::all_of(rule.tags.begin(), rule.tags.end(), [&](const auto& want) {
    return std::find(have->begin(), have->end(), want) != have->end();
  });
}

int64_t LifecycleDue(int64_t since_ms, int64_t days, int64_t day_ms) {
  const int64_t at = since_ms + days * day_ms;
  return (at + day_ms - 1) / day_ms * day_ms;  // the next day boundary (UTC midnight)
}

void AddExpirationHeader(HeaderList& out, storage::ObjectLayer& store, const std::string& bucket,
                         const storage::ObjectInfo& info) {
  if (info.delete_marker) return;
  auto rules = LifecycleRulesOf(store, bucket);
  if (!rules.ok()) return;  // no bucket or an unreadable record: the request's answer says so
  const LifecycleRule* first = nullptr;
  int64_t first_due = 0;
  for (const auto& r : *rules) {
    if (!r.enabled || (!r.days && !r.date_ms)) continue;
    if (!LifecycleFilterMatches(r, info.key, info.tags, info.size)) continue;
    const int64_t due = r.days ? LifecycleDue(info.mtime_ns / 1'000'000, *r.days, 86'400'000)
                               : *r.date_ms;
    if (!first || due < first_due) {
      first = &r;
      first_due = due;
    }
  }
  if (first)
    out.emplace_back("x-amz-expiration", "expiry-date=\"" + HttpDate(first_due * 1'000'000) +
                                             "\", rule-id=\"" + first->id + "\"");
}

// ?lifecycle on a bucket: Put/Get/DeleteBucketLifecycle(Configuration).
Reply HandleBucketLifecycle(const Env& env, S3Request& r) {
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return info.error();
  if (r.op == S3Op::kGetBucketLifecycle) {
    auto stored = env.store.BucketConfig(r.bucket, kLifecycleConfigName);
    if (!stored.ok()) return stored.error();
    if (stored->empty()) return MakeError(ErrorCode::kNoSuchLifecycleConfiguration);
    return XmlReply(*stored);
  }
  if (r.op == S3Op::kDeleteBucketLifecycle) {
    if (auto st = env.store.SetBucketConfig(r.bucket, kLifecycleConfigName, ""); !st.ok())
      return st.error();
    return EmptyReply(204);
  }
  if (auto st = RequireIntegrity(r.req); !st.ok()) return st.error();
  auto body = ReadXmlBody(r);
  if (!body.ok()) return body.error();
  auto rules = ParseLifecycleXml(*body);
  if (!rules.ok()) return rules.error();
  if (auto st = env.store.SetBucketConfig(r.bucket, kLifecycleConfigName, LifecycleXml(*rules));
      !st.ok())
    return st.error();
  return EmptyReply(200);
}

}  // namespace rdmastor::s3
