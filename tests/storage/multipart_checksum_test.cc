#include "storage/multipart_checksum.h"

#include <gtest/gtest.h>

#include "common/hash.h"

namespace rdmastor::storage {
namespace {

std::string B64(hash::Algo a, std::string_view data) {
  return hash::Base64Encode(hash::Digest(a, data));
}

struct Fixture {
  UploadRecord rec;
  std::vector<CompletePart> parts;
  std::vector<PartInfo> stored;

  // Two parts "hello " and "world", each stored with its `algo` checksum.
  explicit Fixture(const std::string& algo, const std::string& type = "") {
    rec.checksum_algorithm = algo;
    rec.checksum_type = type;
    int n = 1;
    for (std::string_view data : {std::string_view("hello "), std::string_view("world")}) {
      PartInfo info;
      info.number = n;
      info.etag = "e" + std::to_string(n);
      info.size = data.size();
      if (!algo.empty())
        info.checksums[algo] = B64(*hash::ChecksumAlgoFromName(algo), data);
      stored.push_back(info);
      CompletePart part{n, info.etag, {}};
      if (!algo.empty()) part.checksums.emplace(algo, info.checksums[algo]);
      parts.push_back(part);
      ++n;
    }
  }
  Result<std::map<std::string, std::string>> Run(const CompleteChecksum& declared = {}) const {
    return CompleteChecksums(rec, "up1", parts, stored, declared);
  }
};

TEST(MultipartChecksumTest, CompositeIsChecksumOfPartChecksums) {
  Fixture f("crc32c");
  auto r = f.Run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string raw = hash::Digest(hash::Algo::kCRC32C, "hello ") +
                          hash::Digest(hash::Algo::kCRC32C, "world");
  EXPECT_EQ(r->at("crc32c"), hash::Base64Encode(hash::Digest(hash::Algo::kCRC32C, raw)) + "-2");
  // The declared object value, with or without "-2", is accepted; "-3" or another value is not.
  const std::string base = r->at("crc32c").substr(0, r->at("crc32c").size() - 2);
  EXPECT_TRUE(f.Run({"crc32c", base, ""}).ok());
  EXPECT_TRUE(f.Run({"crc32c", base + "-2", "COMPOSITE"}).ok());
  auto bad = f.Run({"crc32c", base + "-3", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kBadDigest);
  EXPECT_EQ(bad.error().message, "The crc32c you specified did not match the calculated checksum.");
  auto mode = f.Run({"", "", "FULL_OBJECT"});
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(mode.error().message,
            "The upload was created using the COMPOSITE checksum mode. The complete request must "
            "use the same checksum mode.");
}

TEST(MultipartChecksumTest, FullObjectIsTheCrcOfAllTheData) {
  for (const char* algo : {"crc32", "crc32c", "crc64nvme"}) {
    SCOPED_TRACE(algo);
    Fixture f(algo, "FULL_OBJECT");
    const std::string whole = B64(*hash::ChecksumAlgoFromName(algo), "hello world");
    auto r = f.Run();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->at(algo), whole);
    EXPECT_TRUE(f.Run({algo, whole, "FULL_OBJECT"}).ok());
    EXPECT_EQ(f.Run({algo, B64(*hash::ChecksumAlgoFromName(algo), "hello worle"), ""}).error().code,
              ErrorCode::kBadDigest);
    // FULL_OBJECT parts need not be listed with their checksums.
    Fixture g(algo, "FULL_OBJECT");
    for (auto& p : g.parts) p.checksums.clear();
    EXPECT_EQ(g.Run()->at(algo), whole);
  }
}

TEST(MultipartChecksumTest, PartChecksumErrorsAsAws) {
  Fixture missing("crc32");
  missing.parts[1].checksums.clear();
  auto r = missing.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.error().message,
            "The upload was created using a crc32 checksum. The complete request must include the "
            "checksum for each part. It was missing for part 2 in the request.");

  Fixture other_algo("crc32c");
  other_algo.parts[1].checksums = {{"crc32", B64(hash::Algo::kCRC32, "world")}};
  r = other_algo.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kBadDigest);
  EXPECT_EQ(r.error().message, "The crc32 you specified for part 2 did not match what we received.");

  Fixture wrong_value("crc32c");
  wrong_value.parts[0].checksums = {{"crc32c", B64(hash::Algo::kCRC32C, "world")}};
  r = wrong_value.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidPart);
  ASSERT_EQ(r.error().details.size(), 3u);
  EXPECT_EQ(r.error().details[0], (std::pair<std::string, std::string>{"UploadId", "up1"}));
  EXPECT_EQ(r.error().details[1], (std::pair<std::string, std::string>{"PartNumber", "1"}));
  EXPECT_EQ(r.error().details[2], (std::pair<std::string, std::string>{"ETag", "e1"}));
}

TEST(MultipartChecksumTest, UploadWithoutAlgorithm) {
  Fixture f("");
  auto r = f.Run();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  // A part checksum for an upload that keeps none: the part "could not be found", as AWS says.
  f.parts[0].checksums.emplace("crc32c", B64(hash::Algo::kCRC32C, "hello "));
  EXPECT_EQ(f.Run().error().code, ErrorCode::kInvalidPart);
  // No message of its own: the error table's, AWS's wording with its two spaces.
  EXPECT_EQ(f.Run().error().message, "");
  EXPECT_EQ(GetErrorInfo(ErrorCode::kInvalidPart).message,
            "One or more of the specified parts could not be found.  The part may not have been "
            "uploaded, or the specified entity tag may not match the part's entity tag.");
}

TEST(MultipartChecksumTest, UploadWithoutAlgorithmGetsDefaultFullObjectCrc64) {
  // Parts that got S3's default CRC64NVME make the object's full-object CRC64NVME.
  Fixture f("");
  f.stored[0].checksums["crc64nvme"] = B64(hash::Algo::kCRC64NVME, "hello ");
  f.stored[1].checksums["crc64nvme"] = B64(hash::Algo::kCRC64NVME, "world");
  auto r = f.Run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::map<std::string, std::string>{
                    {"crc64nvme", B64(hash::Algo::kCRC64NVME, "hello world")}}));
  EXPECT_TRUE(f.Run({"crc64nvme", B64(hash::Algo::kCRC64NVME, "hello world"), ""}).ok());
  EXPECT_EQ(f.Run({"crc32", B64(hash::Algo::kCRC32, "hello world"), ""}).error().code,
            ErrorCode::kBadDigest);
  // Complete may list those default part values back (clients echo UploadPart's answer): they
  // must match; another algorithm is InvalidPart, as AWS answers.
  f.parts[0].checksums = {{"crc64nvme", B64(hash::Algo::kCRC64NVME, "hello ")}};
  r = f.Run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->at("crc64nvme"), B64(hash::Algo::kCRC64NVME, "hello world"));
  f.parts[1].checksums = {{"crc64nvme", B64(hash::Algo::kCRC64NVME, "hello ")}};
  EXPECT_EQ(f.Run().error().code, ErrorCode::kInvalidPart);
  f.parts[1].checksums = {{"crc32", B64(hash::Algo::kCRC32, "world")}};
  EXPECT_EQ(f.Run().error().code, ErrorCode::kInvalidPart);
  f.parts[0].checksums.clear();
  f.parts[1].checksums.clear();
  // One part without it (it declared another algorithm): no object checksum rather than a wrong one.
  f.stored[1].checksums = {{"crc32", B64(hash::Algo::kCRC32, "world")}};
  r = f.Run();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

}  // namespace
}  // namespace rdmastor::storage
