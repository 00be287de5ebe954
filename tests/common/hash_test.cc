#include "common/hash.h"

#include <gtest/gtest.h>

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
  }
}

TEST(HashTest, ChecksumNames) {
  EXPECT_EQ(ChecksumAlgoFromName("crc32"), Algo::kCRC32);
  EXPECT_EQ(ChecksumAlgoFromName("crc32c"), Algo::kCRC32C);
  EXPECT_EQ(ChecksumAlgoFromName("sha1"), Algo::kSHA1);
  EXPECT_EQ(ChecksumAlgoFromName("sha256"), Algo::kSHA256);
  EXPECT_FALSE(ChecksumAlgoFromName("md5").has_value());
  EXPECT_FALSE(ChecksumAlgoFromName("CRC32").has_value());
  for (Algo a : {Algo::kCRC32, Algo::kCRC32C, Algo::kSHA1, Algo::kSHA256}) {
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
