// HTTP Range header parsing for GetObject (RFC 9110 single byte ranges, as S3 supports).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"

namespace rdmastor::s3 {

struct ByteRange {
  uint64_t start = 0;   // first byte
  uint64_t length = 0;  // number of bytes (>= 1)
};

// Parses "bytes=a-b", "bytes=a-", "bytes=-n" against an object of `size` bytes.
// - nullopt value (ok) when the header should be ignored: syntactically invalid or multi-range
//   headers are ignored by S3 (the whole object is returned with 200).
// - kInvalidRange when syntactically valid but unsatisfiable (start >= size, or suffix of 0,
//   or any range on an empty object).
// - b beyond the end is clamped to size-1; a suffix longer than the object returns the whole object.
Result<std::optional<ByteRange>> ParseRange(std::string_view header, uint64_t size);

}  // namespace rdmastor::s3
