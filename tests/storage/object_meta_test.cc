// Object metadata records: fields added after version 1 shipped must round-trip, and files written
// before them must still read.
#include "storage/object_meta.h"

#include <gtest/gtest.h>

namespace rdmastor::storage {
namespace {

ObjectMeta Sample() {
  ObjectMeta m;
  m.size = 3;
  m.etag = "900150983cd24fb0d6963f7d28e17f72";
  m.mtime_ns = 1700000000000000000;
  m.content_type = "text/plain";
  m.parts.push_back(PartMeta{1, 3, m.etag});
  m.data_dir = ".rdmastor.data.0123456789abcdef";
  return m;
}

TEST(ObjectMetaTest, NonUtf8MetadataRoundTripsByteForByte) {
  ObjectMeta m = Sample();
  m.user_metadata["x-amz-meta-latin1"] = "caf\xe9";    // ISO-8859-1, not UTF-8
  m.user_metadata["x-amz-meta-utf8"] = "caf\xc3\xa9";  // UTF-8
  m.user_metadata["x-amz-meta-bytes"] = std::string("\xff\x00\x80", 3);
  m.user_metadata["content-encoding"] = "deflate, gzip";
  const std::string text = SerializeObjectMeta(m);
  EXPECT_NE(text.find("user_metadata_b64"), std::string::npos);
  auto back = ParseObjectMeta(text, "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->user_metadata, m.user_metadata);
}

TEST(ObjectMetaTest, StorageClassIsStoredOnlyWhenNotStandard) {
  ObjectMeta m = Sample();
  EXPECT_EQ(SerializeObjectMeta(m).find("storage_class"), std::string::npos);
  m.storage_class = "REDUCED_REDUNDANCY";
  auto back = ParseObjectMeta(SerializeObjectMeta(m), "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->storage_class, "REDUCED_REDUNDANCY");
  EXPECT_EQ(back->ToInfo("b", "k").storage_class, "REDUCED_REDUNDANCY");
}

TEST(ObjectMetaTest, FilesWithoutTheNewFieldsStillRead) {
  // As written before storage_class / user_metadata_b64 existed (no checksum field either).
  const std::string old =
      R"({"checksums":{},"content_type":"text/plain","data_dir":".rdmastor.data.0123456789abcdef",)"
      R"("etag":"900150983cd24fb0d6963f7d28e17f72","mtime_ns":1700000000000000000,)"
      R"("multipart":false,"parts":[{"etag":"900150983cd24fb0d6963f7d28e17f72","number":1,)"
      R"("size":3}],"size":3,"user_metadata":{"x-amz-meta-a":"b"},"version":1})";
  auto m = ParseObjectMeta(old, "meta");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->storage_class, "");
  EXPECT_EQ(m->tags, "");
  EXPECT_EQ(m->user_metadata, (std::map<std::string, std::string>{{"x-amz-meta-a", "b"}}));
}

TEST(ObjectMetaTest, TagsAreStoredOnlyWhenPresent) {
  ObjectMeta m = Sample();
  EXPECT_EQ(SerializeObjectMeta(m).find("\"tags\""), std::string::npos);
  m.tags = "a=1&b=two%20words";
  auto back = ParseObjectMeta(SerializeObjectMeta(m), "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->tags, m.tags);
  EXPECT_EQ(back->ToInfo("b", "k").tags, m.tags);
  UploadRecord r;
  r.key = "k";
  r.tags = "m=1";
  auto up = ParseUploadRecord(SerializeUploadRecord(r), "upload.json");
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->tags, "m=1");
}

TEST(ObjectMetaTest, UploadRecordKeepsClassAndBytes) {
  UploadRecord r;
  r.key = "k";
  r.initiated_ns = 1;
  r.user_metadata["x-amz-meta-v"] = "caf\xe9";
  r.storage_class = "REDUCED_REDUNDANCY";
  auto back = ParseUploadRecord(SerializeUploadRecord(r), "upload.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->user_metadata, r.user_metadata);
  EXPECT_EQ(back->storage_class, "REDUCED_REDUNDANCY");
  auto old = ParseUploadRecord(R"({"version":1,"key":"k","initiated_ns":1})", "upload.json");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->storage_class, "");
}

}  // namespace
}  // namespace rdmastor::storage
