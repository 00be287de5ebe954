#include "crypto/dare.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "crypto/keys.h"

namespace rdmastor::crypto {
namespace {

// A body handed out in reads of at most `step` bytes (the HTTP front end's reads vary).
class StringSource : public BodySource {
 public:
  StringSource(std::string data, size_t step) : data_(std::move(data)), step_(step) {}
  Result<size_t> Read(char* buf, size_t len) override {
    size_t n = std::min({len, step_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

std::string Pattern(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string Encrypt(const std::string& plain, const Key& key, size_t in_step, size_t out_step) {
  StringSource src(plain, in_step);
  EncryptingSource enc(src, key);
  std::string out;
  std::string buf(out_step, '\0');
  for (;;) {
    auto n = enc.Read(buf.data(), buf.size());
    EXPECT_TRUE(n.ok());
    if (!n.ok() || *n == 0) break;
    out.append(buf.data(), *n);
  }
  EXPECT_EQ(enc.plaintext_bytes(), plain.size());
  return out;
}

// Decrypts plaintext [off, off+len) of a stream the way the S3 layer does: the packages of
// SpanOf, each opened with its sequence number and final flag.
Result<std::string> DecryptRange(const std::string& stream, const Key& key, uint64_t off,
                                 uint64_t len) {
  auto plain_size = DecryptedSize(stream.size());
  if (!plain_size.ok()) return plain_size.error();
  RS_RETURN_IF_ERROR(CheckStreamHeader(reinterpret_cast<const unsigned char*>(stream.data())));
  const auto span = SpanOf(*plain_size, off, len);
  const uint64_t packages =
      std::max<uint64_t>(1, (*plain_size + kPackageSize - 1) / kPackageSize);
  PackageCipher cipher(key);
  std::string plain;
  uint64_t pos = span.stored_offset;
  for (uint64_t i = 0; i < span.count; ++i) {
    const uint64_t seq = span.first + i;
    const size_t sealed = static_cast<size_t>(
        std::min<uint64_t>(kSealedPackageSize, span.stored_offset + span.stored_length - pos));
    std::string out(sealed - kTagSize, '\0');
    RS_RETURN_IF_ERROR(cipher.Open(reinterpret_cast<const unsigned char*>(stream.data()), seq,
                                   seq + 1 == packages, stream.data() + pos, sealed, out.data()));
    plain += out;
    pos += sealed;
  }
  const uint64_t skip = off - span.first * kPackageSize;
  return plain.substr(skip, len);
}

TEST(Dare, SizesRoundTrip) {
  for (uint64_t p : {0ULL, 1ULL, 65535ULL, 65536ULL, 65537ULL, 131072ULL, 5ULL << 30}) {
    auto back = DecryptedSize(EncryptedSize(p));
    ASSERT_TRUE(back.ok()) << p;
    EXPECT_EQ(*back, p);
  }
  EXPECT_EQ(EncryptedSize(0), kStreamHeaderSize + kTagSize);
  EXPECT_EQ(EncryptedSize(kPackageSize), kStreamHeaderSize + kSealedPackageSize);
  EXPECT_EQ(EncryptedSize(kPackageSize + 1), kStreamHeaderSize + kSealedPackageSize + 1 + kTagSize);
  // Sizes no plaintext encrypts to: cut inside a tag, or a header alone.
  EXPECT_FALSE(DecryptedSize(0).ok());
  EXPECT_FALSE(DecryptedSize(kStreamHeaderSize).ok());
  EXPECT_FALSE(DecryptedSize(kStreamHeaderSize + kSealedPackageSize + 5).ok());
}

TEST(Dare, RoundTripsAtPackageBoundaries) {
  const Key key = RandomKey();
  for (size_t size : {size_t{0}, size_t{1}, kPackageSize - 1, kPackageSize, kPackageSize + 1,
                      2 * kPackageSize, 3 * kPackageSize + 7}) {
    const std::string plain = Pattern(size, static_cast<unsigned>(size));
    for (auto [in_step, out_step] : {std::pair<size_t, size_t>{1 << 20, 1 << 20}, {1000, 333},
                                     {kPackageSize, kSealedPackageSize}, {7, 1 << 20}}) {
      const std::string stream = Encrypt(plain, key, in_step, out_step);
      ASSERT_EQ(stream.size(), EncryptedSize(size));
      auto back = DecryptRange(stream, key, 0, size);
      ASSERT_TRUE(back.ok()) << size << ": " << back.error().message;
      EXPECT_EQ(*back, plain) << size;
    }
  }
}

TEST(Dare, RangesAcrossPackages) {
  const Key key = RandomKey();
  const size_t size = 3 * kPackageSize + 100;
  const std::string plain = Pattern(size, 7);
  const std::string stream = Encrypt(plain, key, 1 << 20, 1 << 20);
  for (auto [off, len] : std::initializer_list<std::pair<uint64_t, uint64_t>>{
           {0, 1},
           {kPackageSize - 1, 2},
           {kPackageSize, kPackageSize},
           {kPackageSize - 1, kPackageSize + 2},
           {3 * kPackageSize, 100},
           {size - 1, 1},
           {5, size - 5}}) {
    auto got = DecryptRange(stream, key, off, len);
    ASSERT_TRUE(got.ok()) << off << "+" << len;
    EXPECT_EQ(*got, plain.substr(off, len)) << off << "+" << len;
  }
}

TEST(Dare, TamperingIsDetected) {
  const Key key = RandomKey();
  const std::string plain = Pattern(2 * kPackageSize + 10, 3);
  const std::string stream = Encrypt(plain, key, 1 << 20, 1 << 20);
  // Any flipped bit: in the header, a package's ciphertext, or its tag.
  for (size_t at : {size_t{2}, size_t{9}, kStreamHeaderSize, kStreamHeaderSize + kPackageSize + 3,
                    stream.size() - 1}) {
    std::string bad = stream;
    bad[at] ^= 0x01;
    EXPECT_FALSE(DecryptRange(bad, key, 0, plain.size()).ok()) << at;
  }
}

TEST(Dare, TruncationAndReorderingAreDetected) {
  const Key key = RandomKey();
  const std::string plain = Pattern(3 * kPackageSize, 5);
  const std::string stream = Encrypt(plain, key, 1 << 20, 1 << 20);
  // Cut after the second package: the sizes still add up, but package 1 is not the final one.
  const std::string cut = stream.substr(0, kStreamHeaderSize + 2 * kSealedPackageSize);
  ASSERT_TRUE(DecryptedSize(cut.size()).ok());
  EXPECT_FALSE(DecryptRange(cut, key, 0, 2 * kPackageSize).ok());
  // Packages 0 and 1 swapped.
  std::string swapped = stream;
  std::memcpy(swapped.data() + kStreamHeaderSize, stream.data() + kStreamHeaderSize + kSealedPackageSize,
              kSealedPackageSize);
  std::memcpy(swapped.data() + kStreamHeaderSize + kSealedPackageSize,
              stream.data() + kStreamHeaderSize, kSealedPackageSize);
  EXPECT_FALSE(DecryptRange(swapped, key, 0, kPackageSize).ok());
  EXPECT_FALSE(DecryptRange(swapped, key, kPackageSize, kPackageSize).ok());
  // A package from another stream of the same key (another part of the same object).
  const std::string other = Encrypt(plain, key, 1 << 20, 1 << 20);
  std::string spliced = stream;
  std::memcpy(spliced.data() + kStreamHeaderSize, other.data() + kStreamHeaderSize,
              kSealedPackageSize);
  EXPECT_FALSE(DecryptRange(spliced, key, 0, 1).ok());
  // An empty object cut to its header.
  const std::string empty = Encrypt("", key, 1, 1);
  EXPECT_FALSE(DecryptRange(empty.substr(0, kStreamHeaderSize), key, 0, 0).ok());
  // An extra package appended after the final one changes the sizes: the last is not final.
  const std::string small = Encrypt(Pattern(kPackageSize, 9), key, 1 << 20, 1 << 20);
  std::string extended = small + small.substr(kStreamHeaderSize);
  EXPECT_FALSE(DecryptRange(extended, key, 0, kPackageSize).ok());
}

TEST(Dare, WrongKeyFails) {
  const std::string plain = Pattern(1000, 1);
  const std::string stream = Encrypt(plain, RandomKey(), 1 << 20, 1 << 20);
  EXPECT_FALSE(DecryptRange(stream, RandomKey(), 0, plain.size()).ok());
}

TEST(Dare, SameKeyTwiceGivesDifferentCiphertext) {
  const Key key = RandomKey();
  const std::string plain = Pattern(100, 2);
  EXPECT_NE(Encrypt(plain, key, 100, 100), Encrypt(plain, key, 100, 100));
}

TEST(Keys, SealAndUnseal) {
  const Key kek = RandomKey();
  const Key object_key = RandomKey();
  const std::string sealed = SealKey(kek, object_key, "SSE-S3|bucket/key");
  auto back = UnsealKey(kek, sealed, "SSE-S3|bucket/key");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, object_key);
  // Another key-encryption key (a wrong customer key): AccessDenied.
  auto wrong = UnsealKey(RandomKey(), sealed, "SSE-S3|bucket/key");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kAccessDenied);
  // The sealed key of one object does not open for another.
  EXPECT_FALSE(UnsealKey(kek, sealed, "SSE-S3|bucket/other").ok());
  // Garbage.
  auto bad = UnsealKey(kek, "not base64!", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInternalError);
  std::string flipped = sealed;
  flipped[10] = flipped[10] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(UnsealKey(kek, flipped, "SSE-S3|bucket/key").ok());
}

TEST(Keys, ParseMasterKey) {
  // 32 zero bytes.
  auto ok = ParseMasterKey("my-key:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->id, "my-key");
  EXPECT_EQ(ok->key, Key{});
  EXPECT_FALSE(ParseMasterKey("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").ok());
  EXPECT_FALSE(ParseMasterKey(":AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").ok());
  EXPECT_FALSE(ParseMasterKey("k:AAAA").ok());          // 3 bytes
  EXPECT_FALSE(ParseMasterKey("k:not*base64").ok());
}

TEST(Keys, KeyRingFindsPreviousKeys) {
  auto a = ParseMasterKey("a:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  auto b = ParseMasterKey("b:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  ASSERT_TRUE(a.ok() && b.ok());
  KeyRing ring(*a, {*b});
  EXPECT_EQ(ring.Find("a"), &ring.current());
  ASSERT_NE(ring.Find("b"), nullptr);
  EXPECT_EQ(ring.Find("b")->key, b->key);
  EXPECT_EQ(ring.Find("c"), nullptr);
}

}  // namespace
}  // namespace rdmastor::crypto
