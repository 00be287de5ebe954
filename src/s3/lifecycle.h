// Bucket lifecycle, as AWS documents it: the configuration (Put/Get/DeleteBucketLifecycle
// Configuration, kept in the bucket record as BucketInfo::configs["lifecycle"] in LifecycleXml's
// form; the rules and their document are in s3/xml.h) and what a rule says about one object
// version or upload. The scanner that applies the rules is s3/lifecycle_scanner.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/http_types.h"
#include "s3/xml.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

inline constexpr const char* kLifecycleConfigName = "lifecycle";

// The bucket's rules (none when it has no configuration).
Result<std::vector<LifecycleRule>> LifecycleRulesOf(storage::ObjectLayer& store,
                                                   const std::string& bucket);

// Whether `rule`'s filter (prefix, every tag, size bounds) takes the object `key` with `tags`
// (BucketInfo::tags' query form) and `size`.
bool LifecycleFilterMatches(const LifecycleRule& rule, std::string_view key, std::string_view tags,
                            uint64_t size);

// The instant (unix ms) at which `days` have passed since `since_ms`, counted as AWS counts them:
// the object's time plus the days, rounded up to the next midnight UTC. `day_ms` is the length
// of a day (86400000; shorter in tests: RDMASTOR_LIFECYCLE_DAY_SECONDS), the rounding then to a
// multiple of it.
int64_t LifecycleDue(int64_t since_ms, int64_t days, int64_t day_ms);

// x-amz-expiration on PutObject and on GET / HEAD of the latest version (AWS): the expiry of
// `info` by the enabled Expiration rule (Days or Date) whose filter takes it and that expires it
// first: `expiry-date="<HTTP date>", rule-id="<ID>"`. Days are real days here (86400 s, whatever
// RDMASTOR_LIFECYCLE_DAY_SECONDS says). Nothing when no rule takes it.
void AddExpirationHeader(HeaderList& out, storage::ObjectLayer& store, const std::string& bucket,
                         const storage::ObjectInfo& info);

}  // namespace rdmastor::s3
