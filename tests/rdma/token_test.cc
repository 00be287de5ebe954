#include "rdma/token.h"

#include <gtest/gtest.h>

#include <random>

namespace rdmastor::rdma {
namespace {

const std::string kGood =
    "00007f1234567000:00100000:deadbeef:0000:00abcd:1:00000000000000000000ffff7f000001";

TEST(TokenTest, ParsesEveryField) {
  ASSERT_EQ(kGood.size(), kTokenLength);
  auto t = ParseToken(kGood);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->raddr, 0x00007f1234567000u);
  EXPECT_EQ(t->rsize, 0x00100000u);
  EXPECT_EQ(t->rkey, 0xdeadbeefu);
  EXPECT_EQ(t->lid, 0);
  EXPECT_EQ(t->qpn, 0xabcdu);
  EXPECT_TRUE(t->has_gid);
  EXPECT_EQ(GidToIpv4(t->gid), 0x7f000001u);
}

TEST(TokenTest, FormatRoundTrips) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    RdmaToken t;
    t.rsize = static_cast<uint32_t>(rng());
    t.raddr = rng() % (UINT64_MAX - t.rsize);
    t.rkey = static_cast<uint32_t>(rng());
    t.lid = static_cast<uint16_t>(rng());
    t.qpn = static_cast<uint32_t>(rng()) & 0xffffff;
    t.has_gid = rng() & 1;
    for (auto& b : t.gid) b = static_cast<uint8_t>(rng());
    std::string s = FormatToken(t);
    ASSERT_EQ(s.size(), kTokenLength);
    auto back = ParseToken(s);
    ASSERT_TRUE(back.ok()) << s << ": " << back.error().message;
    EXPECT_EQ(*back, t);
  }
}

TEST(TokenTest, CanonicalFormatMatchesPrintf) { EXPECT_EQ(FormatToken(*ParseToken(kGood)), kGood); }

void ExpectBad(const std::string& s) {
  auto t = ParseToken(s);
  ASSERT_FALSE(t.ok()) << "accepted: " << s;
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidRDMAToken);
  EXPECT_FALSE(t.error().message.empty());
}

TEST(TokenTest, RejectsWrongLength) {
  ExpectBad("");
  ExpectBad(kGood.substr(0, 80));
  ExpectBad(kGood + "0");
  ExpectBad(kGood + " ");
  ExpectBad(" " + kGood.substr(1));
}

TEST(TokenTest, RejectsUpperCaseAndNonHex) {
  for (size_t i = 0; i < kGood.size(); ++i) {
    if (kGood[i] == ':') continue;
    for (char c : {'A', 'F', 'g', 'x', ' ', '-', '+', '\0', '\xff'}) {
      std::string s = kGood;
      s[i] = c;
      ExpectBad(s);
    }
  }
}

TEST(TokenTest, RejectsMisplacedSeparators) {
  // Every field width is exact: moving a colon by one (same total length) is rejected.
  for (size_t i = 0; i < kGood.size(); ++i) {
    if (kGood[i] != ':') continue;
    std::string left = kGood;
    std::swap(left[i], left[i - 1]);
    ExpectBad(left);
    std::string right = kGood;
    std::swap(right[i], right[i + 1]);
    ExpectBad(right);
    std::string gone = kGood;
    gone[i] = '0';
    ExpectBad(gone);
  }
}

TEST(TokenTest, RejectsHasGidOtherThanZeroOrOne) {
  std::string s = kGood;
  size_t pos = kGood.size() - 34;
  ASSERT_EQ(s[pos], '1');
  for (char c : {'2', '9', 'a', 'f'}) {
    s[pos] = c;
    ExpectBad(s);
  }
  s[pos] = '0';
  EXPECT_TRUE(ParseToken(s).ok());
}

TEST(TokenTest, RejectsWrappingBuffer) {
  RdmaToken t;
  t.raddr = UINT64_MAX - 10;
  t.rsize = 11;
  ExpectBad(FormatToken(t));
  t.rsize = 10;
  EXPECT_TRUE(ParseToken(FormatToken(t)).ok());
}

TEST(TokenTest, FuzzNeverCrashesAndIsStrict) {
  std::mt19937 rng(42);
  const std::string alphabet = "0123456789abcdefABCDEF:xg \t";
  for (int i = 0; i < 20000; ++i) {
    std::string s = kGood;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    auto t = ParseToken(s);
    if (t.ok()) {
      EXPECT_EQ(FormatToken(*t), s);  // anything accepted is canonical
    }
  }
}

TEST(TokenTest, Ipv4Gid) {
  auto gid = Ipv4ToGid(0x7f000002);
  EXPECT_EQ(GidToIpv4(gid), 0x7f000002u);
  gid[0] = 0xfe;  // a link-local GID is not IPv4-mapped
  EXPECT_FALSE(GidToIpv4(gid).has_value());
}

}  // namespace
}  // namespace rdmastor::rdma
