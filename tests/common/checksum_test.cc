#include "common/checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmastor::checksum {
namespace {

std::string Raw(Algo algo, std::string_view data) { return hash::Digest(algo, data); }

TEST(ChecksumTest, NamesAndTypes) {
  EXPECT_EQ(UpperName(Algo::kCRC64NVME), "CRC64NVME");
  EXPECT_EQ(AlgoFromAnyCase("CRC64NVME"), Algo::kCRC64NVME);
  EXPECT_EQ(AlgoFromAnyCase("Sha256"), Algo::kSHA256);
  EXPECT_FALSE(AlgoFromAnyCase("md5").has_value());
  EXPECT_FALSE(AlgoFromAnyCase("CRC32,CRC32C").has_value());
  EXPECT_EQ(TypeFromName("full_object"), Type::kFullObject);
  EXPECT_EQ(TypeFromName("COMPOSITE"), Type::kComposite);
  EXPECT_FALSE(TypeFromName("TEST").has_value());
  EXPECT_EQ(DefaultMultipartType(Algo::kCRC64NVME), Type::kFullObject);
  EXPECT_EQ(DefaultMultipartType(Algo::kCRC32), Type::kComposite);
  EXPECT_FALSE(Allows(Algo::kSHA1, Type::kFullObject));
  EXPECT_FALSE(Allows(Algo::kCRC64NVME, Type::kComposite));
  EXPECT_TRUE(Allows(Algo::kCRC32C, Type::kFullObject));
  EXPECT_EQ(TypeOfValue("7kxlUA==-1"), Type::kComposite);
  EXPECT_EQ(TypeOfValue("y/Q5Jg=="), Type::kFullObject);
}

TEST(ChecksumTest, DecodeValueIsStrictAboutLengthAndBits) {
  EXPECT_TRUE(DecodeValue(Algo::kCRC32, "y/Q5Jg==").has_value());
  // Values AWS answers "Value for x-amz-checksum-crc32 header is invalid." to.
  for (const char* bad : {"y/Q5Jh==", "short===", "shrt", "toolong=", "^^^^^^==", "y^/^Q5^J^g==",
                          "", "rosUhgp5mIg="}) {
    EXPECT_FALSE(DecodeValue(Algo::kCRC32, bad).has_value()) << bad;
  }
  EXPECT_TRUE(DecodeValue(Algo::kCRC64NVME, "rosUhgp5mIg=").has_value());
  EXPECT_FALSE(DecodeValue(Algo::kCRC64NVME, "rosUhgp5mIh=").has_value());
  EXPECT_FALSE(DecodeValue(Algo::kSHA256, "y/Q5Jg==").has_value());
}

// The composite values AWS returns for one part holding "123456789" (each algorithm's part value,
// then the object value, as S3 answers CompleteMultipartUpload).
TEST(ChecksumTest, CompositeMatchesAws) {
  struct Case {
    Algo algo;
    const char* part;
    const char* object;
  } cases[] = {
      {Algo::kCRC32, "y/Q5Jg==", "7kxlUA==-1"},
      {Algo::kCRC32C, "4waSgw==", "pzJFoA==-1"},
      {Algo::kSHA1, "98O8HYCOBHMq32eZZczDTKeuNEE=", "zGcEPHvP9e6lVmvZsfPHT9mlz10=-1"},
      {Algo::kSHA256, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
       "KSsNAHVmgy25S/rmic1w0at3KBH9RLn0nYVQ7p6mpJQ=-1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.part);
    EXPECT_EQ(hash::Base64Encode(Raw(c.algo, "123456789")), c.part);
    EXPECT_EQ(MultipartValue(c.algo, Type::kComposite, {{Raw(c.algo, "123456789"), 9}}), c.object);
  }
  // Two parts: the digest of both raw digests, "-2".
  const std::string a = Raw(Algo::kCRC32C, "first"), b = Raw(Algo::kCRC32C, "second");
  EXPECT_EQ(MultipartValue(Algo::kCRC32C, Type::kComposite, {{a, 5}, {b, 6}}),
            hash::Base64Encode(hash::Digest(Algo::kCRC32C, a + b)) + "-2");
}

TEST(ChecksumTest, FullObjectEqualsChecksumOfAllTheData) {
  std::string data;
  for (int i = 0; i < 50000; ++i) data += static_cast<char>(i * 11 + (i >> 7));
  const std::vector<size_t> cuts = {0, 7, 8193, 30000, data.size()};
  for (Algo algo : {Algo::kCRC32, Algo::kCRC32C, Algo::kCRC64NVME}) {
    SCOPED_TRACE(std::string(hash::ChecksumName(algo)));
    std::vector<PartChecksum> parts;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      std::string_view piece(data.data() + cuts[i], cuts[i + 1] - cuts[i]);
      parts.push_back({Raw(algo, piece), piece.size()});
    }
    EXPECT_EQ(MultipartValue(algo, Type::kFullObject, parts), hash::Base64Encode(Raw(algo, data)));
  }
  // An empty part (zero bytes) in the middle changes nothing.
  EXPECT_EQ(MultipartValue(Algo::kCRC64NVME, Type::kFullObject,
                           {{Raw(Algo::kCRC64NVME, "abc"), 3},
                            {Raw(Algo::kCRC64NVME, ""), 0},
                            {Raw(Algo::kCRC64NVME, "def"), 3}}),
            hash::Base64Encode(Raw(Algo::kCRC64NVME, "abcdef")));
}

TEST(ChecksumTest, MultipartValueRefusesWhatCannotBeComputed) {
  EXPECT_FALSE(MultipartValue(Algo::kSHA256, Type::kFullObject,
                              {{Raw(Algo::kSHA256, "x"), 1}})
                   .has_value());
  EXPECT_FALSE(MultipartValue(Algo::kCRC64NVME, Type::kComposite,
                              {{Raw(Algo::kCRC64NVME, "x"), 1}})
                   .has_value());
  EXPECT_FALSE(MultipartValue(Algo::kCRC32, Type::kFullObject, {{"abc", 1}}).has_value());
  EXPECT_FALSE(MultipartValue(Algo::kCRC32, Type::kComposite, {}).has_value());
}

}  // namespace
}  // namespace rdmastor::checksum
