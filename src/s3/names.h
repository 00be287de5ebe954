// Bucket-name and object-key rules.
#pragma once

#include <string_view>

#include "common/result.h"

namespace rdmastor::s3 {

// S3 bucket naming rules: 3-63 chars, lower-case letters, digits, '.', '-'; starts and ends with a
// letter or digit; no "..", no ".-" / "-."; not formatted like an IPv4 address.
bool IsValidBucketName(std::string_view name);

// Object keys the server accepts: 1..1024 bytes of valid UTF-8, no NUL, not starting with '/',
// no empty path segments ("a//b"), no "." or ".." segments, no segment starting with the reserved
// prefix ".rdmastor." (internal files). Errors: kKeyTooLong, kInvalidObjectName.
Status ValidateObjectKey(std::string_view key);

}  // namespace rdmastor::s3
