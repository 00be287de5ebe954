// Percent-encoding as S3 and SigV4 define it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmastor::uri {

// Decodes %XX escapes. With plus_as_space, '+' becomes ' ' (query strings from form encoders).
// nullopt on a malformed escape.
std::optional<std::string> Decode(std::string_view s, bool plus_as_space = false);

// AWS SigV4 encoding: every byte except A-Z a-z 0-9 - _ . ~ becomes %XX (upper-case hex); '/' is
// kept when encode_slash is false (object key paths).
std::string Encode(std::string_view s, bool encode_slash = true);

// One parameter of a raw query, still percent-encoded.
struct RawQueryParam {
  std::string_view name;
  std::string_view value;
  bool has_equals = false;  // "a=" rather than "a" (SigV2 canonicalises the two differently)
};

// Splits a raw query at '&' without decoding; empty segments ("a&&b") are skipped.
std::vector<RawQueryParam> SplitRawQuery(std::string_view raw);

// Splits a raw query "a=1&b&c=%20" into decoded (name, value) pairs in order; names without '='
// get an empty value, empty segments ("a&&b") are skipped, and '+' decodes to a space as S3 (and
// MinIO) treat it. nullopt when an escape is malformed.
std::optional<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw);

}  // namespace rdmastor::uri
