// Range header and partNumber: [8 bytes object size][1 byte part count][part sizes...]
// then "\n"-separated Range header and partNumber text.
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "s3/range.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9 || size > 4096) return 0;
  uint64_t object_size = 0;
  std::memcpy(&object_size, data, 8);
  // Mostly small objects (interesting boundaries), sometimes any 64-bit size.
  if (!(object_size & 1)) object_size = (object_size >> 1) % 100000;
  int part_count = data[8] % 16;
  size_t pos = 9;
  std::vector<uint64_t> sizes;
  for (int i = 0; i < part_count && pos + 2 <= size; ++i, pos += 2)
    sizes.push_back(uint64_t{data[pos]} | uint64_t{data[pos + 1]} << 8);
  std::string_view text(reinterpret_cast<const char*>(data) + pos, size - pos);
  size_t nl = text.find('\n');
  std::string_view header = text.substr(0, nl);
  std::string_view part = nl == text.npos ? std::string_view() : text.substr(nl + 1);
  if (auto r = s3::ParseRange(header, object_size); r.ok() && r->has_value()) {
    const auto& b = **r;
    fuzz::Check(b.length >= 1 && b.start < object_size && b.length <= object_size - b.start,
                "range outside the object");
  }
  if (auto r = s3::PartNumberRange(part, object_size, part_count, sizes); r.ok() && r->has_value()) {
    const auto& b = **r;
    fuzz::Check(b.start <= object_size && b.length <= object_size - b.start,
                "part range outside the object");
  }
  return 0;
}
