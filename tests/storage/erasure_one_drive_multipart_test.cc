#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>
#include <vector>

#include "storage/erasure_store.h"
#include "storage/paths.h"
#include "storage_test_util.h"

namespace rdmastor::storage {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test helpers

constexpr size_t kPart = 5 << 20;

// OpenSSL directly, independent of common/hash.
std::string RawDigest(const EVP_MD* md, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Hex(const std::string& bin) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bin) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string B64(const std::string& bin) {
  std::string out(4 * ((bin.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bin.data()),
                          static_cast<int>(bin.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

class MultipartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path() + "/drive";
    auto s = ErasureStore::Open(std::vector<std::string>{root_}, {});
    RS_ASSERT_OK(s);
    store_ = std::move(*s);
    RS_ASSERT_OK(store_->MakeBucket("bkt"));
  }

  Result<PartInfo> Upload(const std::string& key, const std::string& id, int n,
                          const std::string& data,
                          std::map<std::string, std::string> checksums = {}) {
    MemBody body(data, 1 << 16);
    return store_->PutObjectPart("bkt", key, id, n, body, data.size(),
                                 Md5Check(data, std::move(checksums)));
  }

  std::string NewUpload(const std::string& key, const PutOptions& opts = {}) {
    auto id = store_->NewMultipartUpload("bkt", key, opts);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : std::string();
  }

  TempDir tmp_;
  std::string root_;
  std::unique_ptr<ErasureStore> store_;
};

TEST_F(MultipartTest, HappyPath) {
  PutOptions opts;
  opts.content_type = "video/mp4";
  opts.user_metadata = {{"x-amz-meta-k", "v"}};
  opts.checksum_algorithm = "sha256";
  opts.checksum_type = "COMPOSITE";
  const std::string id = NewUpload("movies/big.mp4", opts);
  ASSERT_EQ(id.size(), 32u);

  const std::string p1 = Pattern(kPart, 1), p2 = Pattern(kPart + 3, 2), p3 = Pattern(1000, 3);
  const std::string stale = Pattern(kPart, 99);
  auto sha = [](const std::string& d) { return B64(RawDigest(EVP_sha256(), d)); };
  RS_ASSERT_OK(Upload("movies/big.mp4", id, 1, p1, {{"sha256", sha(p1)}}));
  RS_ASSERT_OK(Upload("movies/big.mp4", id, 2, stale, {{"sha256", sha(stale)}}));
  RS_ASSERT_OK(Upload("movies/big.mp4", id, 2, p2, {{"sha256", sha(p2)}}));  // replaces
  auto last = Upload("movies/big.mp4", id, 5, p3, {{"sha256", sha(p3)}});
  RS_ASSERT_OK(last);
  EXPECT_EQ(last->number, 5);
  EXPECT_EQ(last->etag, Hex(RawDigest(EVP_md5(), p3)));
  EXPECT_EQ(last->size, p3.size());

  auto parts = store_->ListParts("bkt", "movies/big.mp4", id);
  RS_ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].number, 1);
  EXPECT_EQ((*parts)[1].number, 2);
  EXPECT_EQ((*parts)[1].etag, hash::Md5Hex(p2));
  EXPECT_EQ((*parts)[1].size, p2.size());
  EXPECT_EQ((*parts)[1].checksums.at("sha256"), sha(p2));
  EXPECT_GT((*parts)[1].mtime_ns, 0);
  EXPECT_EQ((*parts)[2].number, 5);

  auto uo = store_->GetUploadOptions("bkt", "movies/big.mp4", id);
  RS_ASSERT_OK(uo);
  EXPECT_EQ(uo->content_type, "video/mp4");
  EXPECT_EQ(uo->user_metadata.at("x-amz-meta-k"), "v");
  EXPECT_EQ(uo->checksum_algorithm, "sha256");
  EXPECT_EQ(uo->checksum_type, "COMPOSITE");

  // A sha256 upload's Complete names each part's checksum (AWS: InvalidRequest without them).
  auto missing = store_->CompleteMultipartUpload("bkt", "movies/big.mp4", id,
                                                 {{1, hash::Md5Hex(p1)}, {2, hash::Md5Hex(p2)}});
  RS_EXPECT_CODE(missing, ErrorCode::kInvalidRequest);
  auto done =
      store_->CompleteMultipartUpload("bkt", "movies/big.mp4", id,
                                      {{1, hash::Md5Hex(p1), {{"sha256", sha(p1)}}},
                                       {2, "\"" + hash::Md5Hex(p2) + "\"", {{"sha256", sha(p2)}}},
                                       {5, hash::Md5Hex(p3), {{"sha256", sha(p3)}}}});
  RS_ASSERT_OK(done);

  const std::string md5s =
      RawDigest(EVP_md5(), p1) + RawDigest(EVP_md5(), p2) + RawDigest(EVP_md5(), p3);
  const std::string want_etag = Hex(RawDigest(EVP_md5(), md5s)) + "-3";
  EXPECT_EQ(done->etag, want_etag);
  EXPECT_EQ(done->size, p1.size() + p2.size() + p3.size());
  EXPECT_EQ(done->part_count, 3);
  EXPECT_EQ(done->part_sizes, (std::vector<uint64_t>{p1.size(), p2.size(), p3.size()}));
  const std::string sums =
      RawDigest(EVP_sha256(), p1) + RawDigest(EVP_sha256(), p2) + RawDigest(EVP_sha256(), p3);
  EXPECT_EQ(done->checksums.at("sha256"), B64(RawDigest(EVP_sha256(), sums)) + "-3");
  EXPECT_EQ(done->content_type, "video/mp4");
  EXPECT_EQ(done->user_metadata,
            (std::map<std::string, std::string>{{"x-amz-meta-k", "v"}}));  // algo not stored

  auto st = store_->StatObject("bkt", "movies/big.mp4");
  RS_ASSERT_OK(st);
  EXPECT_EQ(st->etag, want_etag);
  EXPECT_EQ(st->part_count, 3);

  auto reader = store_->OpenObject("bkt", "movies/big.mp4");
  RS_ASSERT_OK(reader);
  const std::string whole = p1 + p2 + p3;
  EXPECT_EQ(ReadAll(**reader, 1 << 20), whole);
  // A read spanning all three parts at an odd offset.
  std::string buf(kPart + 500, '\0');
  auto n = (*reader)->ReadAt(kPart - 7, buf.data(), buf.size());
  RS_ASSERT_OK(n);
  ASSERT_EQ(*n, buf.size());
  EXPECT_EQ(buf, whole.substr(kPart - 7, buf.size()));
  std::string tail(5000, '\0');
  n = (*reader)->ReadAt(whole.size() - 10, tail.data(), tail.size());
  RS_ASSERT_OK(n);
  EXPECT_EQ(*n, 10u);

  // The upload is gone, nothing is left behind.
  RS_EXPECT_CODE(store_->GetUploadOptions("bkt", "movies/big.mp4", id), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->ListParts("bkt", "movies/big.mp4", id), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(
      store_->CompleteMultipartUpload("bkt", "movies/big.mp4", id, {{1, hash::Md5Hex(p1)}}),
      ErrorCode::kNoSuchUpload);
  auto uploads = store_->ListMultipartUploads("bkt", "");
  RS_ASSERT_OK(uploads);
  EXPECT_TRUE(uploads->empty());
  EXPECT_TRUE(testing::StagingLeftovers(paths::TmpDir(root_)).empty());
  EXPECT_TRUE(Tree(paths::MultipartBucketDir(root_, "bkt")).empty());

  // Overwriting the multipart object with a single PUT retires all its parts (a small object
  // lives inside the metadata file: nothing else is left).
  RS_ASSERT_OK(Put(*store_, "bkt", "movies/big.mp4", "small"));
  EXPECT_EQ(Get(*store_, "bkt", "movies/big.mp4"), "small");
  EXPECT_EQ(Tree(root_ + "/bkt/movies/big.mp4"), std::vector<std::string>{".rdmastor.meta"});
}

TEST_F(MultipartTest, SinglePartAndEmptyPartUploads) {
  const std::string id = NewUpload("one");
  RS_ASSERT_OK(Upload("one", id, 1, ""));
  auto done = store_->CompleteMultipartUpload("bkt", "one", id, {{1, hash::Md5Hex("")}});
  RS_ASSERT_OK(done);
  EXPECT_EQ(done->size, 0u);
  EXPECT_EQ(done->etag, Hex(RawDigest(EVP_md5(), RawDigest(EVP_md5(), ""))) + "-1");
  EXPECT_TRUE(done->checksums.empty());
  EXPECT_EQ(Get(*store_, "bkt", "one"), "");
}

TEST_F(MultipartTest, ListUploadsSortedByKeyThenTime) {
  const std::string b1 = NewUpload("b");
  const std::string a1 = NewUpload("a/x");
  const std::string b2 = NewUpload("b");
  const std::string c1 = NewUpload("c");
  auto all = store_->ListMultipartUploads("bkt", "");
  RS_ASSERT_OK(all);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].upload_id, a1);
  EXPECT_EQ((*all)[0].key, "a/x");
  EXPECT_EQ((*all)[1].upload_id, b1);
  EXPECT_EQ((*all)[2].upload_id, b2);
  EXPECT_LE((*all)[1].initiated_ns, (*all)[2].initiated_ns);
  EXPECT_EQ((*all)[3].upload_id, c1);
  auto some = store_->ListMultipartUploads("bkt", "b");
  RS_ASSERT_OK(some);
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[0].key, "b");

  RS_ASSERT_OK(store_->AbortMultipartUpload("bkt", "b", b1));
  RS_EXPECT_CODE(store_->AbortMultipartUpload("bkt", "b", b1), ErrorCode::kNoSuchUpload);
  all = store_->ListMultipartUploads("bkt", "");
  RS_ASSERT_OK(all);
  EXPECT_EQ(all->size(), 3u);
  // Uploads are not objects.
  auto objs = store_->ListObjects("bkt", {});
  RS_ASSERT_OK(objs);
  EXPECT_TRUE(objs->objects.empty());
  EXPECT_TRUE(testing::StagingLeftovers(paths::TmpDir(root_)).empty());
}

TEST_F(MultipartTest, ErrorCodes) {
  const std::string id = NewUpload("k");
  const std::string small = Pattern(100, 1), big = Pattern(kPart, 2);

  RS_EXPECT_CODE(Upload("k", id, 0, small), ErrorCode::kInvalidArgument);
  RS_EXPECT_CODE(Upload("k", id, 10001, small), ErrorCode::kInvalidArgument);
  RS_EXPECT_CODE(Upload("k", std::string(32, 'f'), 1, small), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(Upload("k", "../../../etc", 1, small), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(Upload("other-key", id, 1, small), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->ListParts("bkt", "other-key", id), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->GetUploadOptions("bkt", "k", "nope"), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->AbortMultipartUpload("bkt", "other-key", id), ErrorCode::kNoSuchUpload);
  {
    MemBody body(small);
    RS_EXPECT_CODE(store_->PutObjectPart("nope", "k", id, 1, body, small.size(), Md5Check(small)),
                   ErrorCode::kNoSuchBucket);
    MemBody body2(small);
    RS_EXPECT_CODE(
        store_->PutObjectPart("bkt", "k", id, 1, body2, small.size() + 1, Md5Check(small)),
        ErrorCode::kIncompleteBody);
    MemBody body3(small);
    auto veto = [](uint64_t) -> Result<CommitInfo> { return MakeError(ErrorCode::kBadDigest); };
    RS_EXPECT_CODE(store_->PutObjectPart("bkt", "k", id, 1, body3, small.size(), veto),
                   ErrorCode::kBadDigest);
  }
  PutOptions bad_algo;
  bad_algo.checksum_algorithm = "md5";
  RS_EXPECT_CODE(store_->NewMultipartUpload("bkt", "k", bad_algo), ErrorCode::kInvalidArgument);

  RS_ASSERT_OK(Upload("k", id, 1, big));
  RS_ASSERT_OK(Upload("k", id, 2, small));
  RS_ASSERT_OK(Upload("k", id, 3, small));
  const std::string e1 = hash::Md5Hex(big), e2 = hash::Md5Hex(small);

  auto complete = [&](const std::vector<CompletePart>& parts) {
    return store_->CompleteMultipartUpload("bkt", "k", id, parts);
  };
  RS_EXPECT_CODE(complete({}), ErrorCode::kMalformedXML);
  RS_EXPECT_CODE(complete({{2, e2}, {1, e1}}), ErrorCode::kInvalidPartOrder);
  RS_EXPECT_CODE(complete({{1, e1}, {1, e1}}), ErrorCode::kInvalidPartOrder);
  RS_EXPECT_CODE(complete({{1, e1}, {4, e2}}), ErrorCode::kInvalidPart);  // never uploaded
  RS_EXPECT_CODE(complete({{1, e2}, {2, e2}}), ErrorCode::kInvalidPart);  // wrong ETag
  RS_EXPECT_CODE(complete({{0, e1}}), ErrorCode::kInvalidPart);
  RS_EXPECT_CODE(complete({{1, e1}, {2, e2}, {3, e2}}), ErrorCode::kEntityTooSmall);
  RS_EXPECT_CODE(store_->CompleteMultipartUpload("bkt", "other", id, {{1, e1}}),
                 ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->CompleteMultipartUpload("nope", "k", id, {{1, e1}}),
                 ErrorCode::kNoSuchBucket);
  RS_EXPECT_CODE(store_->StatObject("bkt", "k"), ErrorCode::kNoSuchKey);

  // None of the failures damaged the upload: a valid subset (sparse numbers) completes.
  auto done = complete({{1, e1}, {3, e2}});
  RS_ASSERT_OK(done);
  EXPECT_EQ(Get(*store_, "bkt", "k"), big + small);
  EXPECT_EQ(done->part_count, 2);
  EXPECT_TRUE(testing::StagingLeftovers(paths::TmpDir(root_)).empty());
}

TEST_F(MultipartTest, AbortedUploadRejectsLateParts) {
  const std::string id = NewUpload("k");
  RS_ASSERT_OK(Upload("k", id, 1, "abc"));
  RS_ASSERT_OK(store_->AbortMultipartUpload("bkt", "k", id));
  RS_EXPECT_CODE(Upload("k", id, 2, "def"), ErrorCode::kNoSuchUpload);
  RS_EXPECT_CODE(store_->CompleteMultipartUpload("bkt", "k", id, {{1, hash::Md5Hex("abc")}}),
                 ErrorCode::kNoSuchUpload);
  EXPECT_TRUE(Tree(paths::MultipartBucketDir(root_, "bkt")).empty());
  EXPECT_TRUE(testing::StagingLeftovers(paths::TmpDir(root_)).empty());
}

// A reader opens the first part's shard files at open (a snapshot of it) and later parts on first
// read: a later part that an overwrite retired meanwhile is a clear error, never wrong data.
TEST_F(MultipartTest, LaterPartsOpenLazily) {
  const std::string id = NewUpload("lazy");
  const std::string p1 = Pattern(kPart, 1), p2 = Pattern(kPart, 2), p3 = Pattern(77, 3);
  RS_ASSERT_OK(Upload("lazy", id, 1, p1));
  RS_ASSERT_OK(Upload("lazy", id, 2, p2));
  RS_ASSERT_OK(Upload("lazy", id, 3, p3));
  RS_ASSERT_OK(store_->CompleteMultipartUpload(
      "bkt", "lazy", id, {{1, hash::Md5Hex(p1)}, {2, hash::Md5Hex(p2)}, {3, hash::Md5Hex(p3)}}));
  auto reader = store_->OpenObject("bkt", "lazy");
  RS_ASSERT_OK(reader);
  EXPECT_EQ(ReadAll(**reader, 1 << 20), p1 + p2 + p3);

  auto reader2 = store_->OpenObject("bkt", "lazy");
  RS_ASSERT_OK(reader2);
  RS_ASSERT_OK(Put(*store_, "bkt", "lazy", "replaced"));
  char buf[16];
  auto first = (*reader2)->ReadAt(0, buf, sizeof(buf));  // part 1 was opened at open
  RS_ASSERT_OK(first);
  EXPECT_EQ(std::string(buf, 16), p1.substr(0, 16));
  auto later = (*reader2)->ReadAt(kPart, buf, sizeof(buf));
  ASSERT_FALSE(later.ok()) << "read " << *later << " bytes of a retired part";
  EXPECT_EQ(later.error().code, ErrorCode::kInsufficientReadQuorum) << later.error().message;
  EXPECT_EQ(Get(*store_, "bkt", "lazy"), "replaced");
}

}  // namespace
}  // namespace rdmastor::storage
