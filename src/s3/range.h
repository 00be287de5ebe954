// HTTP Range header parsing for GetObject (RFC 9110 single byte ranges, as S3 supports).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

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

// The bytes of part `part_number` (the partNumber query parameter of GetObject/HeadObject) of an
// object of `size` bytes with `part_count` parts of `part_sizes` (part_count 0: a single PUT, its
// own part 1). nullopt for part 1 of an empty object (the whole, empty, object).
// kInvalidArgument when the number is malformed or outside 1..10000; kInvalidPartNumber for a
// part the object does not have; kInternalError when the part sizes disagree with the object.
Result<std::optional<ByteRange>> PartNumberRange(std::string_view part_number, uint64_t size,
                                                 int part_count,
                                                 const std::vector<uint64_t>& part_sizes);

}  // namespace rdmastor::s3
