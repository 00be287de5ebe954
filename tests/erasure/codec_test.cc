#include "erasure/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace rdmastor::erasure {
namespace {

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Calls f(mask) for every subset of {0..n) with at most `max_size` members.
template <class F>
void ForEachErasure(int n, int max_size, F f) {
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) <= max_size) f(mask);
  }
}

// Every (data, parity) the server can choose: set sizes 2..16 with the default parity, and every
// EC:N override (1 <= N <= set size / 2).
std::vector<std::pair<int, int>> ServerGeometries() {
  std::vector<std::pair<int, int>> out;
  for (int n = 2; n <= kMaxShards; ++n) {
    for (int p = 1; p <= n / 2; ++p) out.emplace_back(n - p, p);
  }
  return out;
}

void RoundTrip(int k, int m, size_t len, int max_erasure_set_size, uint32_t seed) {
  auto codec = Codec::Create(k, m);
  ASSERT_TRUE(codec.ok());
  const int n = k + m;
  std::vector<std::string> original(static_cast<size_t>(n), std::string(len, '\0'));
  std::vector<uint8_t*> ptrs(static_cast<size_t>(n));
  for (int i = 0; i < k; ++i) original[static_cast<size_t>(i)] = RandomBytes(len, seed + i);
  for (int i = 0; i < n; ++i)
    ptrs[static_cast<size_t>(i)] =
        reinterpret_cast<uint8_t*>(original[static_cast<size_t>(i)].data());
  (*codec)->Encode(ptrs.data(), len);

  auto check = [&](uint32_t mask) {
    std::vector<std::string> work = original;
    std::vector<bool> present(static_cast<size_t>(n), true);
    std::vector<uint8_t*> wp(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      wp[static_cast<size_t>(i)] = reinterpret_cast<uint8_t*>(work[static_cast<size_t>(i)].data());
      if (mask & (1u << i)) {
        present[static_cast<size_t>(i)] = false;
        std::memset(wp[static_cast<size_t>(i)], 0xA5, len);
      }
    }
    auto st = (*codec)->Reconstruct(wp.data(), present, len, /*data_only=*/false);
    ASSERT_TRUE(st.ok()) << k << "+" << m << " mask " << mask;
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(work[static_cast<size_t>(i)], original[static_cast<size_t>(i)])
          << k << "+" << m << " mask " << mask << " shard " << i;
    }
  };
  if (max_erasure_set_size >= 0) {
    ForEachErasure(n, max_erasure_set_size, check);
  } else {  // large geometries: every single erasure, the first/last `m`, and random m-subsets
    for (int i = 0; i < n; ++i) check(1u << i);
    check((1u << m) - 1);
    check(((1u << m) - 1) << k);
    std::mt19937 rng(seed);
    for (int t = 0; t < 20; ++t) {
      uint32_t mask = 0;
      while (__builtin_popcount(mask) < m) mask |= 1u << (rng() % static_cast<uint32_t>(n));
      check(mask);
    }
  }
}

TEST(Codec, EveryServerGeometryRoundTrips) {
  for (auto [k, m] : ServerGeometries()) {
    SCOPED_TRACE(std::to_string(k) + "+" + std::to_string(m));
    // Small geometries: every combination of up to `parity` erasures.
    RoundTrip(k, m, 1031, k + m <= 10 ? m : -1, static_cast<uint32_t>(k * 31 + m));
  }
}

TEST(Codec, TooManyErasuresFail) {
  auto codec = Codec::Create(4, 2);
  ASSERT_TRUE(codec.ok());
  std::vector<std::string> bufs(6, std::string(64, 'x'));
  std::vector<uint8_t*> ptrs;
  for (auto& b : bufs) ptrs.push_back(reinterpret_cast<uint8_t*>(b.data()));
  std::vector<bool> present = {false, true, false, true, false, true};
  auto st = (*codec)->Reconstruct(ptrs.data(), present, 64, false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInsufficientReadQuorum);
}

TEST(Codec, RejectsBadGeometry) {
  EXPECT_FALSE(Codec::Create(0, 1).ok());
  EXPECT_FALSE(Codec::Create(4, -1).ok());
  EXPECT_FALSE(Codec::Create(12, 5).ok());
  EXPECT_TRUE(Codec::Create(1, 0).ok());
}

TEST(Geometry, Sizes) {
  Geometry g{4, 2};
  EXPECT_EQ(g.StripeCount(0), 0u);
  EXPECT_EQ(g.StripeCount(1), 1u);
  EXPECT_EQ(g.StripeCount(kStripeSize), 1u);
  EXPECT_EQ(g.StripeCount(kStripeSize + 1), 2u);
  EXPECT_EQ(g.ShardFileSize(0), 0u);
  EXPECT_EQ(g.ShardFileSize(1), kBitrotHashSize + 1);
  EXPECT_EQ(g.ShardFileSize(kStripeSize), kBitrotHashSize + kStripeSize / 4);
  EXPECT_EQ(g.ShardFileSize(kStripeSize + 5), 2 * kBitrotHashSize + kStripeSize / 4 + 2);
  EXPECT_EQ(g.ShardOffset(3 * kStripeSize, 2), 2 * (kBitrotHashSize + kStripeSize / 4));
  EXPECT_EQ(g.StripeBytes(kStripeSize + 5, 1), 5u);
}

TEST(Bitrot, FramedStripesVerifyAndDetectFlips) {
  auto codec = Codec::Create(3, 2);
  ASSERT_TRUE(codec.ok());
  const std::string data = RandomBytes(10000, 7);
  std::vector<std::string> shards(5);
  std::vector<uint8_t> scratch;
  EncodeStripe(**codec, data.data(), data.size(), shards, scratch);
  const size_t block = (10000 + 2) / 3;
  for (auto& s : shards) {
    ASSERT_EQ(s.size(), kBitrotHashSize + block);
    EXPECT_TRUE(VerifyFramedBlock(s.data(), block));
  }
  // The data shards are the stripe's consecutive slices.
  EXPECT_EQ(shards[0].substr(kBitrotHashSize, block), data.substr(0, block));
  for (size_t pos : {size_t{0}, size_t{5}, kBitrotHashSize, kBitrotHashSize + block - 1}) {
    for (uint8_t bit : {0x01, 0x80}) {
      std::string bad = shards[1];
      bad[pos] = static_cast<char>(bad[pos] ^ bit);
      EXPECT_FALSE(VerifyFramedBlock(bad.data(), block)) << pos;
    }
  }
}

// EncodeStripe reads whole data blocks from the caller's buffer and reuses its scratch between
// stripes: every length (exact multiples, a padded last block, a block of zeros only) must give
// the shards a fresh zero-padded copy of the stripe gives, whatever the scratch held before.
TEST(Bitrot, EncodeStripeMatchesAZeroPaddedEncodeForEveryTail) {
  auto codec = Codec::Create(4, 2);
  ASSERT_TRUE(codec.ok());
  std::vector<uint8_t> scratch(1 << 16, 0xEE);  // stale bytes from an earlier stripe
  for (size_t len : {size_t{1}, size_t{3}, size_t{8}, size_t{9}, size_t{4096}, size_t{4097},
                     size_t{10001}, size_t{65536}}) {
    const std::string data = RandomBytes(len, static_cast<uint32_t>(len));
    std::vector<std::string> shards(6);
    EncodeStripe(**codec, data.data(), data.size(), shards, scratch);
    const size_t block = (len + 3) / 4;
    std::vector<uint8_t> padded(block * 6, 0);
    std::memcpy(padded.data(), data.data(), len);
    std::vector<uint8_t*> ptrs(6);
    for (size_t i = 0; i < 6; ++i) ptrs[i] = padded.data() + i * block;
    (*codec)->Encode(ptrs.data(), block);
    for (size_t i = 0; i < 6; ++i) {
      ASSERT_EQ(shards[i].size(), kBitrotHashSize + block) << len;
      EXPECT_EQ(shards[i].substr(kBitrotHashSize),
                std::string(reinterpret_cast<const char*>(ptrs[i]), block))
          << "len " << len << " shard " << i;
      EXPECT_TRUE(VerifyFramedBlock(shards[i].data(), block));
    }
    std::fill(scratch.begin(), scratch.end(), uint8_t{0xEE});
  }
}

}  // namespace
}  // namespace rdmastor::erasure
