#include "common/hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace rdmastor::hash {
namespace {

TEST(HashTest, DigestKnownVectors) {
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(HexEncode(Digest(Algo::kSHA1, "abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(HashTest, HmacSha256Rfc4231) {
  // RFC 4231 test case 2.
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// The HMAC context is reused per thread: each call has its own key, an empty one included (a null
// key would make OpenSSL keep the previous call's), and SHA-1 and SHA-256 do not mix.
TEST(HashTest, HmacKeysDoNotCarryOverBetweenCalls) {
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(HexEncode(HmacSha256(std::string_view(), "")),
              "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
    EXPECT_EQ(HexEncode(HmacSha1(std::string_view(), "")),
              "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d");
    // RFC 2202 test case 2.
    EXPECT_EQ(HexEncode(HmacSha1("Jefe", "what do ya want for nothing?")),
              "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    EXPECT_EQ(HexEncode(Digest(Algo::kSHA256, "abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(HexEncode(Digest(Algo::kMD5, "")), "d41d8cd98f00b204e9800998ecf8427e");
  }
}

TEST(HashTest, CrcCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32(check.data(), check.size()), 0xCBF43926u);
  EXPECT_EQ(Crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(Crc32(nullptr, 0), 0u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  // RFC 3720 appendix B.4: 32 bytes of zeros and of 0xff.
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(HashTest, CrcChainingMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += static_cast<char>(i * 7 + 3);
  uint32_t crc32_whole = Crc32(data.data(), data.size());
  uint32_t crc32c_whole = Crc32c(data.data(), data.size());
  for (size_t split : {size_t{0}, size_t{1}, size_t{13}, size_t{4096}, data.size()}) {
    SCOPED_TRACE(split);
    uint32_t a = Crc32(data.data(), split);
    EXPECT_EQ(Crc32(data.data() + split, data.size() - split, a), crc32_whole);
    uint32_t c = Crc32c(data.data(), split);
    EXPECT_EQ(Crc32c(data.data() + split, data.size() - split, c), crc32c_whole);
  }
}

TEST(HashTest, CrcDigestIsBigEndianAsS3Sends) {
  EXPECT_EQ(HexEncode(Digest(Algo::kCRC32, "123456789")), "cbf43926");
  EXPECT_EQ(HexEncode(Digest(Algo::kCRC32C, "123456789")), "e3069283");
  // x-amz-checksum-crc32 for "hello world".
  EXPECT_EQ(Base64Encode(Digest(Algo::kCRC32, "hello world")), "DUoRhQ==");
}

// CRC-64/NVME one bit at a time, straight from its catalogue parameters (poly 0xad93d23594c93659,
// reflected in and out, init and xorout all ones): the reference the table code must match.
uint64_t BitwiseCrc64Nvme(std::string_view data) {
  uint64_t crc = ~uint64_t{0};
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x9a6c9329ac4bc9b5ull : crc >> 1;
  }
  return ~crc;
}

TEST(HashTest, Crc64NvmeKnownVectors) {
  // The catalogue's check value, and the values AWS's SDKs test x-amz-checksum-crc64nvme with.
  EXPECT_EQ(Crc64Nvme("123456789", 9), 0xae8b14860a799888ull);
  EXPECT_EQ(Crc64Nvme(nullptr, 0), 0u);
  EXPECT_EQ(Base64Encode(Digest(Algo::kCRC64NVME, "")), "AAAAAAAAAAA=");
  EXPECT_EQ(Base64Encode(Digest(Algo::kCRC64NVME, "abc")), "BeXKuz/B+us=");
  EXPECT_EQ(Base64Encode(Digest(Algo::kCRC64NVME, "Hello world")), "OOJZ0D8xKts=");
  EXPECT_EQ(Base64Encode(Digest(Algo::kCRC64NVME, "123456789")), "rosUhgp5mIg=");
}

TEST(HashTest, Crc64NvmeMatchesBitwiseAtEveryLengthAndAlignment) {
  std::string data;
  for (int i = 0; i < 3000; ++i) data += static_cast<char>((i * 131 + 7) ^ (i >> 3));
  // Every length up to 200 (table path below 64 bytes, folding from 64 on, every tail length),
  // then sparser; at offsets 0..8 so unaligned loads are covered.
  for (size_t off = 0; off < 9; ++off) {
    for (size_t len = 0; off + len <= data.size(); len += (len < 200 ? 1 : 97)) {
      std::string_view piece(data.data() + off, len);
      ASSERT_EQ(Crc64Nvme(piece.data(), piece.size()), BitwiseCrc64Nvme(piece))
          << off << " " << len;
    }
  }
  // Chained in uneven pieces.
  uint64_t crc = 0;
  for (size_t pos = 0, step = 1; pos < data.size(); pos += step, step = step * 2 + 1)
    crc = Crc64Nvme(data.data() + pos, std::min(step, data.size() - pos), crc);
  EXPECT_EQ(crc, BitwiseCrc64Nvme(data));
}

TEST(HashTest, CrcCombineEqualsCrcOfConcatenation) {
  std::string data;
  for (int i = 0; i < 20000; ++i) data += static_cast<char>(i * 37 + (i >> 5));
  for (size_t split :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{4095}, size_t{12345}, data.size()}) {
    SCOPED_TRACE(split);
    const char* a = data.data();
    const char* b = data.data() + split;
    const size_t nb = data.size() - split;
    EXPECT_EQ(Crc32Combine(Crc32(a, split), Crc32(b, nb), nb), Crc32(a, data.size()));
    EXPECT_EQ(Crc32cCombine(Crc32c(a, split), Crc32c(b, nb), nb), Crc32c(a, data.size()));
    EXPECT_EQ(Crc64NvmeCombine(Crc64Nvme(a, split), Crc64Nvme(b, nb), nb),
              Crc64Nvme(a, data.size()));
  }
  // A long second part (64 MiB of zeros, CRCs chained over 1 MiB blocks).
  const std::string mib(1 << 20, '\0');
  uint64_t zeros64 = 0;
  uint32_t zeros32 = 0;
  for (int i = 0; i < 64; ++i) {
    zeros64 = Crc64Nvme(mib.data(), mib.size(), zeros64);
    zeros32 = Crc32(mib.data(), mib.size(), zeros32);
  }
  const uint64_t len = uint64_t{64} << 20;
  EXPECT_EQ(Crc64NvmeCombine(Crc64Nvme("abc", 3), zeros64, len),
            Crc64Nvme(mib.data(), mib.size(), [&] {
              uint64_t c = Crc64Nvme("abc", 3);
              for (int i = 0; i < 63; ++i) c = Crc64Nvme(mib.data(), mib.size(), c);
              return c;
            }()));
  uint32_t direct32 = Crc32("abc", 3);
  for (int i = 0; i < 64; ++i) direct32 = Crc32(mib.data(), mib.size(), direct32);
  EXPECT_EQ(Crc32Combine(Crc32("abc", 3), zeros32, len), direct32);
}

TEST(HashTest, IncrementalHasherMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += static_cast<char>(i % 251);
  for (Algo algo : {Algo::kMD5, Algo::kSHA1, Algo::kSHA256, Algo::kCRC32, Algo::kCRC32C}) {
    SCOPED_TRACE(static_cast<int>(algo));
    auto h = NewHasher(algo);
    size_t pos = 0, step = 1;
    while (pos < data.size()) {
      size_t n = std::min(step, data.size() - pos);
      h->Update(data.data() + pos, n);
      pos += n;
      step = step * 3 + 1;
    }
    h->Update(nullptr, 0);
    EXPECT_EQ(h->Final(), Digest(algo, data));
  }
}

TEST(HashTest, HexRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::string hex = HexEncode(all);
  EXPECT_EQ(hex.substr(0, 8), "00010203");
  EXPECT_EQ(hex.substr(hex.size() - 4), "feff");
  EXPECT_EQ(HexDecode(hex), all);
  EXPECT_EQ(HexDecode("ABcd"), std::string("\xab\xcd"));
  EXPECT_EQ(HexDecode(""), std::string());
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_FALSE(HexDecode("zz").has_value());
  EXPECT_FALSE(HexDecode("0x").has_value());
}

TEST(HashTest, Base64Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, b64] : vectors) {
    EXPECT_EQ(Base64Encode(plain), b64);
    EXPECT_EQ(Base64Decode(b64), std::string(plain));
    EXPECT_TRUE(IsBase64(b64)) << b64;
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(255 - i);
  EXPECT_EQ(Base64Decode(Base64Encode(all)), all);
  EXPECT_EQ(Base64Decode("+/+/"), std::string("\xfb\xff\xbf"));
}

TEST(HashTest, Base64StrictRejects) {
  for (const char* bad : {"Zg", "Zg=", "Z===", "====", "Zh==", "Zm9=", "Zm9v\n", "Zm 9v", "Zm=v",
                          "=Zm9", "Zm9vYg==Zm9v", "Zm9v-_==", "Zm9vYg=a"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
    EXPECT_FALSE(IsBase64(bad)) << bad;  // the check accepts exactly what the decoder does
  }
}

TEST(HashTest, ChecksumNames) {
  EXPECT_EQ(ChecksumAlgoFromName("crc32"), Algo::kCRC32);
  EXPECT_EQ(ChecksumAlgoFromName("crc32c"), Algo::kCRC32C);
  EXPECT_EQ(ChecksumAlgoFromName("sha1"), Algo::kSHA1);
  EXPECT_EQ(ChecksumAlgoFromName("sha256"), Algo::kSHA256);
  EXPECT_EQ(ChecksumAlgoFromName("crc64nvme"), Algo::kCRC64NVME);
  EXPECT_FALSE(ChecksumAlgoFromName("md5").has_value());
  EXPECT_FALSE(ChecksumAlgoFromName("CRC32").has_value());
  for (Algo a : {Algo::kCRC32, Algo::kCRC32C, Algo::kCRC64NVME, Algo::kSHA1, Algo::kSHA256}) {
    EXPECT_EQ(ChecksumAlgoFromName(ChecksumName(a)), a);
  }
}

TEST(HashTest, RandomHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string r = RandomHex(16);
    ASSERT_EQ(r.size(), 32u);
    EXPECT_TRUE(HexDecode(r).has_value());
    EXPECT_EQ(r.find_first_of("ABCDEF"), std::string::npos);
    seen.insert(r);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(RandomHex(0), "");
}

}  // namespace
}  // namespace rdmastor::hash
