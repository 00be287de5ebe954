// The version record (storage/version_record.h): every field of the list goes through every
// codec, and the bytes a drive holds stay those of the releases before the list existed.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "storage/object_meta.h"
#include "version_record_samples.h"

namespace rdmastor::storage {
namespace {

using testing::DeleteMarker;
using testing::FullVersion;

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
  file.versions = {DeleteMarker(), testing::Format3Version()};
  EXPECT_EQ(SerializeObjectVersions(file), kFormat3File);
  for (auto& v : file.versions) v.version = kMetaFormatEncrypted;  // the format it is read from
  auto back = ParseObjectVersions(kFormat3File, "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->versions, file.versions);
}

// The tests below expand the list themselves, so a field the list gains is walked through every
// codec with no edit here (only a sample value, version_record_samples.h).
#define RS_EXPECT_FIELD_EQ(member, a, b, what) \
  EXPECT_TRUE((a).member == (b).member) << #member << " lost by " << (what)

TEST(VersionRecordTest, TheSamplesSetEveryField) {
  const ObjectMeta full = FullVersion(), marker = DeleteMarker(), none;
#define X(member, name, T, codec, presence, scope)                              \
  EXPECT_TRUE(!(full.member == none.member) || !(marker.member == none.member)) \
      << #member << ": set it in version_record_samples.h so that every codec is tested";
  RDMASTOR_VERSION_RECORD(X)
#undef X
}

TEST(VersionRecordTest, EveryFieldSurvivesTheMetadataFileAndBothReaders) {
  ObjectVersions file;
  file.versions = {DeleteMarker(), FullVersion()};
  const std::string text = SerializeObjectVersions(file);
  auto canonical = ParseCanonicalVersions(text);
  ASSERT_TRUE(canonical.has_value());
  auto general = ParseObjectVersionsGeneral(text, "meta");
  ASSERT_TRUE(general.ok()) << general.error().message;
  ASSERT_EQ(canonical->versions.size(), 2u);
  ASSERT_EQ(general->versions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
#define X(member, name, T, codec, presence, scope)                                              \
  RS_EXPECT_FIELD_EQ(member, canonical->versions[i], file.versions[i], "the canonical reader"); \
  RS_EXPECT_FIELD_EQ(member, general->versions[i], file.versions[i], "the general reader");
    RDMASTOR_VERSION_RECORD(X)
#undef X
  }
}

TEST(VersionRecordTest, ToInfoCarriesEveryFieldButTheLayout) {
  for (const ObjectMeta& m : {FullVersion(), DeleteMarker()}) {
    const ObjectInfo info = m.ToInfo("b", "k");
    EXPECT_EQ(info.bucket, "b");
    EXPECT_EQ(info.key, "k");
    [&](const auto& got) {
#define X(member, name, T, codec, presence, scope)        \
  if constexpr (FieldScope::scope != FieldScope::kLayout) \
    RS_EXPECT_FIELD_EQ(member, got, m, "ToInfo");
      RDMASTOR_VERSION_RECORD(X)
#undef X
    }(info);
  }
}

// Each declared attribute goes from PutOptions into a version (PUT), into and out of the upload
// record (multipart), and back out (GetUploadOptions); UpdateMetadata's mask replaces exactly
// the fields it names.
TEST(VersionRecordTest, DeclaredFieldsTravelThroughPutOptionsUploadsAndTheMask) {
  const ObjectMeta full = FullVersion();
  PutOptions opts;
  CopyDeclared(full, opts);
  ObjectMeta put;
  CopyDeclared(opts, put);
  UploadRecord rec;
  CopyDeclared(opts, rec);
  auto rec_back = ParseUploadRecord(SerializeUploadRecord(rec), "upload.json");
  ASSERT_TRUE(rec_back.ok()) << rec_back.error().message;
  PutOptions from_upload;
  CopyDeclared(*rec_back, from_upload);
  [&](const auto& o, const auto& u, const auto& r) {
#define X(member, name, T, codec, presence, scope)            \
  if constexpr (FieldScope::scope == FieldScope::kDeclared) { \
    RS_EXPECT_FIELD_EQ(member, put, full, "PutOptions");      \
    RS_EXPECT_FIELD_EQ(member, r, full, "the upload record"); \
    RS_EXPECT_FIELD_EQ(member, u, o, "GetUploadOptions");     \
  }
    RDMASTOR_VERSION_RECORD(X)
#undef X
  }(opts, from_upload, *rec_back);

  // The mask, one declared field at a time: that field changes, no other does.
  const ObjectMeta before = DeleteMarker();
#define X(member, name, T, codec, presence, scope)                                      \
  if constexpr (FieldScope::scope == FieldScope::kDeclared) {                           \
    ObjectMeta m = before;                                                              \
    opts.update = FieldBit(VersionField::member);                                       \
    ApplyMetadataUpdate(opts, m, 42);                                                   \
    ObjectMeta want = before;                                                           \
    want.member = full.member;                                                          \
    EXPECT_TRUE(m == want) << "a mask of " #member " changed another field, or not it"; \
  }
  RDMASTOR_VERSION_RECORD(X)
#undef X
  // The default mask: a copy onto itself with REPLACE (every declared field but the sealed key
  // and the Object Lock, and the modification time).
  ObjectMeta m = before;
  opts.update = kMetadataReplace;
  ApplyMetadataUpdate(opts, m, 42);
  EXPECT_EQ(m.mtime_ns, 42);
  EXPECT_EQ(m.acl, full.acl);
  EXPECT_EQ(m.user_metadata, full.user_metadata);
  EXPECT_EQ(m.internal, before.internal);
  EXPECT_EQ(m.lock_mode, before.lock_mode);
  EXPECT_EQ(m.lock_until_ms, before.lock_until_ms);
  EXPECT_EQ(m.legal_hold, before.legal_hold);
}

}  // namespace
}  // namespace rdmastor::storage
