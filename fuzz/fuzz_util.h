// Helpers shared by the fuzz targets.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "s3/http_types.h"

namespace rdmastor::fuzz {

// A request body handed out in pieces of 1..max_piece bytes (sizes from a simple LCG seeded by the
// input), so framing code meets every split of its lines and chunks.
class PieceBody : public s3::BodySource {
 public:
  PieceBody(std::string_view data, uint32_t seed, size_t max_piece)
      : data_(data), seed_(seed), max_piece_(max_piece ? max_piece : 1) {}
  Result<size_t> Read(char* buf, size_t len) override {
    if (pos_ >= data_.size() || len == 0) return size_t{0};
    seed_ = seed_ * 1103515245u + 12345u;
    size_t n = std::min<size_t>({len, data_.size() - pos_, 1 + (seed_ >> 8) % max_piece_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  uint32_t seed_;
  size_t max_piece_;
};

// Aborts (a crash for libFuzzer) when an invariant the code promises does not hold.
inline void Check(bool ok, const char* what) {
  if (!ok) {
    __builtin_printf("invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace rdmastor::fuzz
