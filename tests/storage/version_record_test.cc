// The version record (storage/version_record.h): every field of the list goes through every
// codec, and the bytes a drive holds stay those of the releases before the list existed.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "storage/object_meta.h"

namespace rdmastor::storage {
namespace {

// A version with every field of the record set (each to a value that is not its default), and a
// delete marker (the one field a data version cannot set).
ObjectMeta FullVersion() {
  ObjectMeta m;
  m.size = 7;
  m.etag = "0123456789abcdef0123456789abcdef-2";
  m.mtime_ns = 1700000000123456789;
  m.content_type = "text/x-full";
  m.user_metadata = {{"x-amz-meta-a", "b"}, {"x-amz-meta-latin1", "caf\xe9"}};
  m.checksums = {{"crc32c", "AAAAAA==-2"}};
  m.storage_class = "REDUCED_REDUNDANCY";
  m.multipart = true;
  m.parts = {PartMeta{1, 3, "aa", {{"crc32c", "AQIDBA=="}}}, PartMeta{2, 4, "bb", {}}};
  m.data_dir = ".rdmastor.data.0123456789abcdef";
  ErasureMeta e;
  e.data = 2;
  e.parity = 1;
  e.stripe_size = 1048576;
  e.index = 1;
  e.distribution = {2, 1, 3};
  e.bitrot = "xxh3-64";
  e.is_inline = true;
  e.SetInline("shard-bytes");
  m.erasure = e;
  m.tags = "k=v&k2=v%202";
  m.acl = "public-read";
  m.version_id = "5e1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44";
  m.internal = {{"x-test", "sealed"}};
  return m;
}

ObjectMeta DeleteMarker() {
  ObjectMeta m;
  m.etag = "";
  m.mtime_ns = 1700000000000000001;
  m.version_id = "9a1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44";
  m.delete_marker = true;
  return m;
}

// Written by the release before the version record was declared as a list (main 980a7ef): the
// list must write the same bytes, so drives read unchanged both ways.
constexpr const char* kFormat3File =
    R"({"checksum":"11e0d6b0","version":3,"versions":[{"checksums":{},"content_type":"","data_d)"
    R"(ir":"","delete_marker":true,"etag":"","mtime_ns":1700000000000000001,"multipart":false,")"
    R"(parts":[],"size":0,"user_metadata":{},"version_id":"9a1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44)"
    R"("},{"acl":"public-read","checksums":{"crc32c":"AAAAAA==-2"},"content_type":"text/x-full")"
    R"(,"data_dir":".rdmastor.data.0123456789abcdef","erasure":{"bitrot":"xxh3-64","data":2,"di)"
    R"(stribution":[2,1,3],"index":1,"inline":true,"inline_shard":"c2hhcmQtYnl0ZXM=","parity":1)"
    R"(,"stripe_size":1048576},"etag":"0123456789abcdef0123456789abcdef-2","internal":{"x-test")"
    R"(:"sealed"},"mtime_ns":1700000000123456789,"multipart":true,"parts":[{"checksums":{"crc32)"
    R"(c":"AQIDBA=="},"etag":"aa","number":1,"size":3},{"etag":"bb","number":2,"size":4}],"size)"
    R"(":7,"storage_class":"REDUCED_REDUNDANCY","tags":"k=v&k2=v%202","user_metadata":{"x-amz-m)"
    R"(eta-a":"b"},"user_metadata_b64":{"eC1hbXotbWV0YS1sYXRpbjE=":"Y2Fm6Q=="},"version_id":"5e)"
    R"(1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44"}]})";

TEST(VersionRecordTest, BytesOnDiskAreThoseOfEarlierReleases) {
  ObjectVersions file;
  file.versions = {DeleteMarker(), FullVersion()};
  EXPECT_EQ(SerializeObjectVersions(file), kFormat3File);
  for (auto& v : file.versions) v.version = kMetaFormatEncrypted;  // the format it is read from
  auto back = ParseObjectVersions(kFormat3File, "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->versions, file.versions);
}

}  // namespace
}  // namespace rdmastor::storage
