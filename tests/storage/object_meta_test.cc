// Object metadata records: fields added after version 1 shipped must round-trip, files written
// before them (format 1 included) must still read, and a hostile or corrupt file is an error
// naming the file, never an exception.
#include "storage/object_meta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/hash.h"
#include "crypto/dare.h"
#include "storage/s3_limits.h"

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

TEST(ObjectMetaTest, AclIsOptionalAndOnlyAclOnlyUpdatesTouchIt) {
  ObjectMeta m = Sample();
  EXPECT_EQ(SerializeObjectMeta(m).find("\"acl\""), std::string::npos);  // absent = private
  m.acl = "public-read";
  auto back = ParseObjectMeta(SerializeObjectMeta(m), "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->acl, "public-read");
  EXPECT_EQ(back->ToInfo("b", "k").acl, "public-read");
  UploadRecord r;
  r.key = "k";
  r.acl = "authenticated-read";
  auto up = ParseUploadRecord(SerializeUploadRecord(r), "upload.json");
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->acl, "authenticated-read");

  // PutObjectAcl changes the ACL alone; PutObjectTagging the tags alone; a copy onto itself both.
  m.tags = "t=1";
  PutOptions acl_only;
  acl_only.update = FieldBit(VersionField::acl);
  ApplyMetadataUpdate(acl_only, m, 99);
  EXPECT_EQ(m.acl, "");
  EXPECT_EQ(m.tags, "t=1");
  EXPECT_NE(m.mtime_ns, 99);
  PutOptions tags_only;
  tags_only.update = FieldBit(VersionField::tags);
  tags_only.acl = "public-read";
  ApplyMetadataUpdate(tags_only, m, 99);
  EXPECT_EQ(m.acl, "");
  EXPECT_EQ(m.tags, "");
  PutOptions replace;
  replace.acl = "public-read-write";
  replace.content_type = "text/x";
  ApplyMetadataUpdate(replace, m, 99);
  EXPECT_EQ(m.acl, "public-read-write");
  EXPECT_EQ(m.content_type, "text/x");
  EXPECT_EQ(m.mtime_ns, 99);
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
  EXPECT_FALSE(old->parity.has_value());
  // The parity the parts are coded with, when recorded (0 is a parity too).
  for (int parity : {0, 1, 8}) {
    r.parity = parity;
    back = ParseUploadRecord(SerializeUploadRecord(r), "upload.json");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->parity, parity);
  }
  for (const std::string text : {R"({"key":"k","initiated_ns":1,"parity":"2"})",
                                 R"({"key":"k","initiated_ns":1,"parity":1.5})",
                                 R"({"key":"k","initiated_ns":1,"parity":1e300})"}) {
    EXPECT_FALSE(ParseUploadRecord(text, "upload.json").ok()) << text;
  }
}

TEST(ObjectMetaTest, VersionListRoundTripsNewestFirst) {
  ObjectVersions file;
  ObjectMeta null_version = Sample();
  ObjectMeta v1 = Sample();
  v1.version_id = "1b0f4d5e-0000-4000-8000-000000000001";
  v1.data_dir = ".rdmastor.data.aaaa";
  v1.mtime_ns = null_version.mtime_ns + 1;
  ObjectMeta marker;
  marker.version_id = "1b0f4d5e-0000-4000-8000-000000000002";
  marker.delete_marker = true;
  marker.mtime_ns = v1.mtime_ns + 1;
  EXPECT_FALSE(file.Add(null_version));
  EXPECT_FALSE(file.Add(v1));
  EXPECT_FALSE(file.Add(marker));
  auto back = ParseObjectVersions(SerializeObjectVersions(file), "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->versions.size(), 3u);
  EXPECT_TRUE(back->Latest()->delete_marker);
  EXPECT_EQ(back->versions[1].version_id, v1.version_id);
  EXPECT_EQ(back->versions[2].version_id, "");
  EXPECT_EQ(back->versions[0].version, kMetaFormatVersion);
  EXPECT_EQ(back->DataDirs(), (std::vector<std::string>{v1.data_dir, null_version.data_dir}));
  // Re-adding the null version replaces it (Suspended overwrite) and moves it first.
  ObjectMeta again = Sample();
  again.data_dir = ".rdmastor.data.bbbb";
  again.mtime_ns = marker.mtime_ns + 1;
  auto replaced = back->Add(again);
  ASSERT_TRUE(replaced);
  EXPECT_EQ(replaced->data_dir, null_version.data_dir);
  EXPECT_EQ(back->versions.size(), 3u);
  EXPECT_EQ(back->Latest()->data_dir, ".rdmastor.data.bbbb");
  // A healed older version goes back to its place, not first.
  ObjectMeta old = Sample();
  old.version_id = "1b0f4d5e-0000-4000-8000-000000000000";
  old.mtime_ns = 7;
  EXPECT_FALSE(back->Add(old));
  EXPECT_EQ(back->versions.back().version_id, old.version_id);
  ASSERT_TRUE(back->Remove(old.version_id));
  auto removed = back->Remove(v1.version_id);
  ASSERT_TRUE(removed);
  EXPECT_FALSE(back->Remove(v1.version_id));
  EXPECT_EQ(back->Find(v1.version_id), nullptr);
  EXPECT_NE(back->Find(marker.version_id), nullptr);
  // ParseObjectMeta answers the latest version (the marker here).
  auto latest = ParseObjectMeta(SerializeObjectVersions(*back), "meta");
  ASSERT_TRUE(latest.ok()) << latest.error().message;
  EXPECT_EQ(latest->data_dir, ".rdmastor.data.bbbb");
}

// A file is its canonical dump with the checksum member first, the checksum being that of the dump
// without it: checked on the bytes when the file is laid out so, the long way (parse, dump again)
// when it is not, and either way a changed byte is a mismatch.
TEST(ObjectMetaTest, ChecksumIsCheckedOnTheBytesOrAfterAReDump) {
  ObjectMeta m = Sample();
  m.user_metadata["x-amz-meta-latin1"] = "caf\xe9";
  ErasureMeta e;
  e.data = 2;
  e.parity = 2;
  e.stripe_size = 1 << 20;
  e.index = 1;
  e.distribution = {1, 2, 3, 0};
  e.bitrot = "xxh3-64";
  e.is_inline = true;
  for (int i = 0; i < 2056; ++i) e.inline_shard += static_cast<char>(i * 7);
  m.erasure = e;
  const std::string text = SerializeObjectMeta(m);
  // The layout: a dump of the whole object (keys sorted, so "checksum" first) ...
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.dump(), text);
  // ... whose checksum is the CRC32C of the dump without that member.
  const std::string want = j.at("checksum").get<std::string>();
  j.erase("checksum");
  EXPECT_EQ(hash::HexEncode(hash::Digest(hash::Algo::kCRC32C, j.dump())), want);
  auto back = ParseObjectMeta(text, "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->erasure);
  EXPECT_EQ(*back->erasure, e);
  ASSERT_TRUE(back->erasure->DecodeInline());
  EXPECT_EQ(back->erasure->inline_shard, e.inline_shard);
  EXPECT_EQ(back->user_metadata, m.user_metadata);

  // One base64 character of the shard changed (still valid JSON and base64): refused.
  std::string flipped = text;
  const size_t at = flipped.find("\"inline_shard\":\"") + 20;
  flipped[at] = flipped[at] == 'A' ? 'B' : 'A';
  auto bad = ParseObjectMeta(flipped, "meta");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("checksum mismatch"), std::string::npos);

  // The same JSON spelled otherwise (indented, checksum member last) still reads: checked the
  // long way. A changed value in it is a mismatch there too.
  auto whole = nlohmann::json::parse(text);
  const std::string indented = whole.dump(2);
  auto again = ParseObjectMeta(indented, "meta");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->erasure->inline_shard, e.inline_shard);
  whole["versions"][0]["size"] = 4;
  auto changed = ParseObjectMeta(whole.dump(2), "meta");
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().message.find("checksum mismatch"), std::string::npos);
}

// Inline shards are cut out of the text before the JSON parse and decoded from the file's bytes:
// every inline version gets its own shard back, whatever else the file holds (a version with
// shard files, a delete marker, metadata that spells the shard's key inside a string).
TEST(ObjectMetaTest, InlineShardsOfEveryVersionRoundTrip) {
  auto inline_version = [](const std::string& id, int64_t mtime, char fill, size_t n) {
    ObjectMeta m = Sample();
    m.version_id = id;
    m.mtime_ns = mtime;
    ErasureMeta e;
    e.data = 1;
    e.stripe_size = 1 << 20;
    e.distribution = {0};
    e.bitrot = "xxh3-64";
    e.is_inline = true;
    e.inline_shard = std::string(n, fill);
    m.erasure = e;
    return m;
  };
  ObjectVersions file;
  file.Add(inline_version("1b0f4d5e-0000-4000-8000-000000000001", 10, 'a', 1000));
  ObjectMeta large = Sample();
  large.version_id = "1b0f4d5e-0000-4000-8000-000000000002";
  large.mtime_ns = 20;
  large.user_metadata["x-amz-meta-trick"] = R"("inline":true,"inline_shard":"QUJD")";
  large.erasure = inline_version("", 0, 'x', 1).erasure;
  large.erasure->is_inline = false;
  large.erasure->inline_shard.clear();
  file.Add(large);
  ObjectMeta marker;
  marker.version_id = "1b0f4d5e-0000-4000-8000-000000000003";
  marker.delete_marker = true;
  marker.mtime_ns = 30;
  file.Add(marker);
  file.Add(inline_version("1b0f4d5e-0000-4000-8000-000000000004", 40, 'b', 7));
  file.Add(inline_version("1b0f4d5e-0000-4000-8000-000000000005", 50, 'c', 0));
  const std::string text = SerializeObjectVersions(file);
  // The shards are spliced into the dump (the dumper escapes strings byte by byte): the file is
  // still exactly what the JSON dumper writes for it.
  EXPECT_EQ(
      nlohmann::json::parse(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      text);
  auto back = ParseObjectVersions(text, "meta");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->versions.size(), 5u);
  for (size_t i = 0; i < file.versions.size(); ++i) {
    const auto& want = file.versions[i];
    const auto& got = back->versions[i];
    EXPECT_EQ(got.version_id, want.version_id);
    EXPECT_EQ(got.user_metadata, want.user_metadata);
    ASSERT_EQ(got.erasure.has_value(), want.erasure.has_value()) << i;
    if (want.erasure) {
      EXPECT_EQ(got.erasure->is_inline, want.erasure->is_inline) << i;
      EXPECT_EQ(got.erasure, want.erasure) << i;  // shards compared by their bytes
    }
  }
}

TEST(ObjectMetaTest, FormatOneFileIsOneNullVersion) {
  const std::string v1 =
      R"({"checksums":{},"content_type":"text/plain","data_dir":".rdmastor.data.0123456789abcdef",)"
      R"("etag":"900150983cd24fb0d6963f7d28e17f72","mtime_ns":1700000000000000000,)"
      R"("multipart":false,"parts":[{"etag":"900150983cd24fb0d6963f7d28e17f72","number":1,)"
      R"("size":3}],"size":3,"user_metadata":{},"version":1})";
  auto file = ParseObjectVersions(v1, "meta");
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_EQ(file->versions.size(), 1u);
  EXPECT_EQ(file->versions[0].version_id, "");
  EXPECT_FALSE(file->versions[0].delete_marker);
  EXPECT_EQ(file->versions[0].version, 1);
  // Rewritten in format 2.
  EXPECT_NE(SerializeObjectVersions(*file).find("\"versions\""), std::string::npos);
}

TEST(ObjectMetaTest, HostileFilesAreErrorsNamingTheFile) {
  const std::string good_part = R"({"number":1,"size":3,"etag":"e"})";
  auto file = [&](const std::string& version_fields, const std::string& part = "") {
    return R"({"version":2,"versions":[{"size":3,"etag":"e","mtime_ns":1,"parts":[)" +
           (part.empty() ? good_part : part) + R"(],"data_dir":".rdmastor.data.ab")" +
           version_fields + "}]}";
  };
  ASSERT_TRUE(ParseObjectVersions(file(""), "/d/k/.rdmastor.meta").ok());
  const std::vector<std::string> bad = {
      "",
      "[]",
      "null",
      R"({"version":1e20})",
      R"({"version":2.5,"versions":[]})",
      R"({"version":3,"versions":[]})",
      R"({"version":2,"versions":[]})",
      R"({"version":2,"versions":{}})",
      R"({"version":2,"versions":[1]})",
      R"({"version":2})",
      file("", R"({"number":1e30,"size":3})"),
      file("", R"({"number":1,"size":-3})"),
      file("", R"({"number":1,"size":3.5})"),
      file("", R"({"number":"1","size":3})"),
      file(R"(,"version_id":"../x")"),
      file(R"(,"version_id":7)"),
      file(R"(,"delete_marker":true)"),
      file(
          R"(,"erasure":{"data":1e40,"parity":1,"stripe_size":1,"index":0,"distribution":[0,1],"bitrot":"x"})"),
      file(
          R"(,"erasure":{"data":2,"parity":1,"stripe_size":1,"index":0,"distribution":[0,1.5,2],"bitrot":"x"})"),
      file(
          R"(,"erasure":{"data":2147483647,"parity":1,"stripe_size":1,"index":0,"distribution":[0],"bitrot":"x"})"),
      file(R"(,"user_metadata_b64":{"!!":"!!"})"),
      R"({"version":2,"versions":[)" + std::string(1, '{') +
          R"("size":0,"etag":"","mtime_ns":1,"parts":[],"data_dir":"","delete_marker":true},)" +
          R"({"size":0,"etag":"","mtime_ns":2,"parts":[],"data_dir":"","delete_marker":true}]})",
      R"({"version":2,"versions":[{"size":18446744073709551615,"etag":"e","mtime_ns":1,"parts":[{"number":1,"size":18446744073709551615},{"number":2,"size":1}],"data_dir":".rdmastor.data.ab"}]})",
  };
  for (const auto& text : bad) {
    auto r = ParseObjectVersions(text, "/d/k/.rdmastor.meta");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInternalError) << text;
    EXPECT_NE(r.error().message.find("/d/k/.rdmastor.meta"), std::string::npos)
        << text << ": " << r.error().message;
  }
  for (const std::string text :
       {R"({"key":"k","initiated_ns":1e300})", R"({"key":"k","initiated_ns":"1"})", "7"}) {
    auto r = ParseUploadRecord(text, "upload.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("upload.json"), std::string::npos);
  }
  for (const std::string text : {R"({"number":1.5,"etag":"e","size":1,"mtime_ns":1,"data":"p"})",
                                 R"({"number":1,"etag":"e","size":-1,"mtime_ns":1,"data":"p"})"}) {
    auto r = ParsePartRecord(text, "part.1.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("part.1.json"), std::string::npos);
  }
}

// The canonical reader (the GET path's) against the general one: on every file the serializer
// writes it must read, and read the same; on any file (mutated, re-checksummed so it stays in
// the checked layout) ParseObjectVersions must answer exactly what the general reader answers.
std::string Rechecksum(std::string canonical) {  // `{...}` without the checksum member
  const std::string crc = hash::HexEncode(hash::Digest(hash::Algo::kCRC32C, canonical));
  return "{\"checksum\":\"" + crc + "\"," + canonical.substr(1);
}

ObjectVersions RandomFile(std::mt19937& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> texts = {
      "",
      "text/plain",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // UTF-8: 2, 3, 4 bytes
      std::string("nul\0byte", 8),
      "quote\" back\\slash / tab\t nl\n cr\r ff\f bs\b bell\x07 us\x1f del\x7f",
      R"("inline":true,"inline_shard":"QUJD")",
      std::string(300, 'x')};
  // Strings other than user metadata are UTF-8 (the dump would replace other bytes).
  auto text = [&] { return texts[pick(texts.size())]; };
  auto string_map = [&](size_t max) {
    std::map<std::string, std::string> m;
    for (size_t i = pick(max + 1); i > 0; --i) m[text() + std::to_string(i)] = text();
    return m;
  };
  // User metadata keeps any bytes (those that are not UTF-8 go base64).
  auto user_metadata = [&] {
    auto m = string_map(3);
    if (pick(2)) m["x-amz-meta-latin1"] = "caf\xe9";
    if (pick(3) == 0) m[std::string("\xff\x00k", 3)] = "v";
    return m;
  };
  ObjectVersions file;
  const size_t n = 1 + pick(4);
  for (size_t v = 0; v < n; ++v) {
    ObjectMeta m;
    m.mtime_ns = static_cast<int64_t>(rng() % 3 == 0 ? -static_cast<int64_t>(rng()) : rng());
    m.version_id =
        v == 0 && pick(2) ? "" : "1b0f4d5e-0000-4000-8000-00000000000" + std::to_string(v);
    m.acl = pick(2) ? "" : "public-read";
    m.tags = pick(2) ? "" : text();
    if (pick(5) == 0) {
      m.delete_marker = true;
      file.Add(std::move(m));
      continue;
    }
    m.etag = pick(2) ? "900150983cd24fb0d6963f7d28e17f72" : text();
    m.content_type = text();
    m.user_metadata = user_metadata();
    m.checksums = string_map(2);
    m.storage_class = pick(2) ? "" : "REDUCED_REDUNDANCY";
    m.multipart = pick(2);
    if (pick(3) == 0) m.internal = {{kInternalSse, "SSE-S3"}, {kInternalSealedKey, "a2V5"}};
    for (size_t i = pick(4); i > 0; --i) {
      PartMeta p;
      p.number = static_cast<int>(pick(10000)) + 1;
      p.size = pick(3) == 0 ? (uint64_t{1} << 62) + rng() : rng() % 100000;
      p.etag = pick(2) ? "" : text();
      p.checksums = string_map(2);
      m.size += p.size;
      m.parts.push_back(std::move(p));
    }
    m.data_dir = ".rdmastor.data.0123456789abcde" + std::to_string(v);
    if (pick(4) != 0) {
      ErasureMeta e;
      e.data = 1 + static_cast<int>(pick(8));
      e.parity = static_cast<int>(pick(8));
      e.stripe_size = 1 + rng();
      e.index = static_cast<int>(pick(static_cast<size_t>(e.data + e.parity)));
      for (int i = 0; i < e.data + e.parity; ++i) e.distribution.push_back(i);
      std::shuffle(e.distribution.begin(), e.distribution.end(), rng);
      e.bitrot = "xxh3-64";
      e.is_inline = pick(2);
      if (e.is_inline) {
        for (size_t i = pick(3000); i > 0; --i) e.inline_shard += static_cast<char>(rng());
      }
      m.erasure = std::move(e);
    }
    file.Add(std::move(m));
  }
  return file;
}

TEST(ObjectMetaTest, CanonicalReaderReadsEveryWrittenFileAsTheGeneralOneDoes) {
  std::mt19937 rng(20261205);
  for (int round = 0; round < 2000; ++round) {
    ObjectVersions file = RandomFile(rng);
    const bool encrypted = std::any_of(file.versions.begin(), file.versions.end(),
                                       [](const ObjectMeta& m) { return !m.internal.empty(); });
    for (auto& v : file.versions) v.version = encrypted ? kMetaFormatEncrypted : kMetaFormatVersion;
    const std::string text = SerializeObjectVersions(file);
    auto fast = ParseCanonicalVersions(text);
    ASSERT_TRUE(fast.has_value()) << text;
    auto general = ParseObjectVersionsGeneral(text, "meta");
    ASSERT_TRUE(general.ok()) << general.error().message << "\n" << text;
    ASSERT_TRUE(fast->versions == general->versions) << text;
    ASSERT_TRUE(fast->versions == file.versions) << text;
  }
}

TEST(ObjectMetaTest, MutatedFilesReadAsTheGeneralReaderReadsThem) {
  std::mt19937 rng(7);
  // Bytes that make JSON and its near misses.
  const std::string alphabet = std::string("{}[]:,\"\\/ \t\n0123456789-+.eEtrufalsnbx") +
                               std::string("\0\x1f\x7f\x80\xbf\xc3\xa9\xed\xa0\xf4\x90\xff", 12);
  const std::vector<std::string> splices = {"0",
                                            "01",
                                            "-0",
                                            "1.0",
                                            "1e2",
                                            "-1",
                                            "18446744073709551615",
                                            "18446744073709551616",
                                            "-9223372036854775808",
                                            "-9223372036854775809",
                                            "2147483648",
                                            "true",
                                            "false",
                                            "null",
                                            "\"\"",
                                            "\"x\"",
                                            "[]",
                                            "{}",
                                            "\\u0041",
                                            "\\u00e9",
                                            "\\ud83d\\ude00",
                                            "\\ud83d",
                                            "\\x",
                                            "\"inline\":true,\"inline_shard\":\"QUJD\",",
                                            "\"zzz\":1,",
                                            "\"acl\":\"a\","};
  int accepted_mutants = 0, total = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string base = SerializeObjectVersions(RandomFile(rng));
    const std::string canonical = "{" + base.substr(base.find("\",") + 2);
    for (int k = 0; k < 60; ++k) {
      std::string c = canonical;
      for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
        const size_t at = 1 + rng() % (c.size() - 1);
        switch (rng() % 5) {
          case 0:
            c[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            c.erase(at, 1 + rng() % 4);
            break;
          case 2:
            c.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
          case 3:
            c.insert(at, splices[rng() % splices.size()]);
            break;
          case 4: {  // a digit run replaced by a spliced number
            const size_t d = c.find_first_of("0123456789", at);
            if (d == std::string::npos) break;
            const size_t e = c.find_first_not_of("0123456789", d);
            c.replace(d, (e == std::string::npos ? c.size() : e) - d, splices[rng() % 10]);
            break;
          }
        }
        if (c.size() < 2) c = "{}";
      }
      const std::string text = Rechecksum(c);
      auto got = ParseObjectVersions(text, "/d/k/.rdmastor.meta");
      auto want = ParseObjectVersionsGeneral(text, "/d/k/.rdmastor.meta");
      ++total;
      ASSERT_EQ(got.ok(), want.ok()) << text;
      if (got.ok()) {
        ASSERT_TRUE(got->versions == want->versions) << text;
        accepted_mutants += ParseCanonicalVersions(text).has_value();
      } else {
        ASSERT_EQ(got.error().message, want.error().message) << text;
        ASSERT_FALSE(ParseCanonicalVersions(text).has_value()) << text;
      }
    }
  }
  // The mutants must reach the canonical reader's acceptance too (changed values it reads).
  EXPECT_GT(accepted_mutants, total / 50) << accepted_mutants << " of " << total;
}

TEST(S3Limits, SizeLimitsApplyToThePlaintextOfEncryptedData) {
  const std::map<std::string, std::string> encrypted{{kInternalSse, "SSE-C"}}, plain;
  EXPECT_EQ(MaxStoredPutSize(plain), kMaxPutSize);
  EXPECT_EQ(MaxStoredPutSize(encrypted), crypto::EncryptedSize(kMaxPutSize));
  // A part just under the minimum is stored as more than the minimum once encrypted: the check
  // needs its plaintext size.
  EXPECT_GT(crypto::EncryptedSize(kMinPartSize - 1), kMinPartSize);
  EXPECT_EQ(PlaintextSize(crypto::EncryptedSize(kMinPartSize - 1), encrypted), kMinPartSize - 1);
  EXPECT_EQ(PlaintextSize(crypto::EncryptedSize(0), encrypted), 0u);
  EXPECT_EQ(PlaintextSize(kMinPartSize - 1, plain), kMinPartSize - 1);
  EXPECT_EQ(PlaintextSize(3, encrypted), 3u);  // no plaintext encrypts to 3 bytes: as stored
}

}  // namespace
}  // namespace rdmastor::storage
