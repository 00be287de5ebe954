#include "s3/xml.h"

#include <gtest/gtest.h>

#include <pugixml.hpp>
#include <string>
#include <vector>

#include "iam/acl.h"

namespace rdmastor::s3 {
namespace {

constexpr std::string_view kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
constexpr const char* kNs = "http://s3.amazonaws.com/doc/2006-03-01/";

// 2024-01-02T03:04:05.678Z
constexpr int64_t kT = 1704164645LL * 1'000'000'000 + 678'000'000;

// Parses a generated document, checks the declaration and the root element, returns the root.
pugi::xml_node ParseDoc(const std::string& xml, pugi::xml_document& doc, const char* root_name,
                        bool namespaced = true) {
  EXPECT_EQ(xml.substr(0, kDecl.size()), kDecl) << xml;
  const auto res = doc.load_string(xml.c_str());
  EXPECT_TRUE(res) << res.description() << "\n" << xml;
  pugi::xml_node root = doc.document_element();
  EXPECT_STREQ(root.name(), root_name);
  if (namespaced) {
    EXPECT_STREQ(root.attribute("xmlns").value(), kNs);
  } else {
    EXPECT_FALSE(root.attribute("xmlns"));
  }
  return root;
}

std::string Text(pugi::xml_node n, const char* child) { return n.child(child).text().get(); }

std::vector<std::string> ChildNames(pugi::xml_node n) {
  std::vector<std::string> names;
  for (pugi::xml_node c : n.children()) names.push_back(c.name());
  return names;
}

storage::ObjectInfo Obj(std::string key, uint64_t size, std::string etag) {
  storage::ObjectInfo o;
  o.key = std::move(key);
  o.size = size;
  o.etag = std::move(etag);
  o.mtime_ns = kT;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Dates.

TEST(XmlDateTest, Iso8601) {
  EXPECT_EQ(Iso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(Iso8601(kT), "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(Iso8601(kT + 999'999), "2024-01-02T03:04:05.678Z");  // truncates, no rounding
  EXPECT_EQ(Iso8601(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(Iso8601(951782400LL * 1'000'000'000), "2000-02-29T00:00:00.000Z");  // leap day
}

TEST(XmlDateTest, HttpDateFormat) {
  EXPECT_EQ(HttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(HttpDate(kT), "Tue, 02 Jan 2024 03:04:05 GMT");
  EXPECT_EQ(HttpDate(784111777LL * 1'000'000'000), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(XmlDateTest, ParseAllThreeForms) {
  EXPECT_EQ(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_EQ(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(ParseHttpDate("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_EQ(ParseHttpDate("Sun Nov 16 08:49:37 1994"), 784111777 + 10 * 86400);
  EXPECT_EQ(ParseHttpDate("  Sun, 06 Nov 1994 08:49:37 GMT  "), 784111777);
  EXPECT_EQ(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 UTC"), 784111777);
  // RFC 850 two-digit years: not more than 50 years into the future.
  EXPECT_EQ(ParseHttpDate("Tuesday, 02-Jan-24 03:04:05 GMT"), 1704164645);
}

TEST(XmlDateTest, RoundTrip) {
  for (int64_t secs : {0LL, 1LL, 784111777LL, 951782400LL, 1704164645LL, 4102444799LL}) {
    const std::string s = HttpDate(secs * 1'000'000'000);
    EXPECT_EQ(ParseHttpDate(s), secs) << s;
  }
}

TEST(XmlDateTest, Garbage) {
  for (const char* s : {"",
                        "garbage",
                        "Sun, 06 Nov 1994",
                        "Sun, 06 Nov 1994 08:49:37",
                        "Sun, 06 Nov 1994 08:49:37 PST",
                        "Sun, 06 Foo 1994 08:49:37 GMT",
                        "Sun, 32 Jan 1994 08:49:37 GMT",
                        "Sun, 29 Feb 1994 08:49:37 GMT",
                        "Sun, 06 Nov 1994 24:00:00 GMT",
                        "Sun, 06 Nov 1994 08:60:00 GMT",
                        "Sun, 06 Nov 1994 08:49:61 GMT",
                        "Sun, 06 Nov 94 08:49:37 GMT",
                        "Sun, 06 Nov 1994 8:49:37 GMT",
                        "Xyz, 06 Nov 1994 08:49:37 GMT",
                        "Sun, 06 Nov 1994 08:49:37 GMTx",
                        "Sun, 06 Nov 1994 08:49:37 GMT extra",
                        "Sun, 006 Nov 1994 08:49:37 GMT",
                        "Sun, 06 Nov 19944 08:49:37 GMT",
                        "Sun 06 Nov 1994 08:49:37 GMT",
                        "Sunday, 06-Nov-1994 08:49:37 GMT",
                        "Sun, 06-Nov-94 08:49:37 GMT",
                        "Sun Nov  6 08:49:37 94",
                        "Sun Nov  6 08:49:37",
                        "1994-11-06T08:49:37Z",
                        "784111777",
                        "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT"}) {
    EXPECT_FALSE(ParseHttpDate(s).has_value()) << s;
  }
}

// ---------------------------------------------------------------------------------------------
// Response documents.

TEST(XmlTest, ErrorDocument) {
  const std::string xml =
      ErrorXml("NoSuchKey", "The specified key does not exist.", "/b/k&<>\"", "REQ123");
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(xml, doc, "Error", /*namespaced=*/false);
  EXPECT_EQ(ChildNames(root),
            (std::vector<std::string>{"Code", "Message", "Resource", "RequestId", "HostId"}));
  EXPECT_EQ(Text(root, "Code"), "NoSuchKey");
  EXPECT_EQ(Text(root, "Message"), "The specified key does not exist.");
  EXPECT_EQ(Text(root, "Resource"), "/b/k&<>\"");
  EXPECT_EQ(Text(root, "RequestId"), "REQ123");
  EXPECT_FALSE(Text(root, "HostId").empty());
}

// A request path of any length echoes at most ~1 KiB, cut before a multi-byte character.
TEST(XmlTest, ErrorDocumentCapsEchoedInput) {
  const std::string resource =
      "/b/" + std::string(1096, 'k') + "\xC3\xA9" + std::string(16384, 'x');
  const std::string xml = ErrorXml("AccessDenied", std::string(20000, 'm'), resource, "REQ");
  EXPECT_LT(xml.size(), 3000u);
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(xml, doc, "Error", /*namespaced=*/false);
  EXPECT_EQ(Text(root, "Resource"), "/b/" + std::string(1096, 'k'));
  EXPECT_EQ(Text(root, "Message").size(), 1100u);
}

TEST(XmlTest, ListBuckets) {
  Owner owner;
  const std::string xml = ListBucketsXml({{"alpha", kT, {}}, {"beta", 0, {}}}, owner);
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(xml, doc, "ListAllMyBucketsResult");
  EXPECT_EQ(Text(root.child("Owner"), "ID"), owner.id);
  EXPECT_EQ(Text(root.child("Owner"), "DisplayName"), "rdmastor");
  std::vector<std::pair<std::string, std::string>> got;
  for (pugi::xml_node b : root.child("Buckets").children("Bucket"))
    got.emplace_back(Text(b, "Name"), Text(b, "CreationDate"));
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {"alpha", "2024-01-02T03:04:05.678Z"}, {"beta", "1970-01-01T00:00:00.000Z"}}));

  pugi::xml_document empty_doc;
  root = ParseDoc(ListBucketsXml({}, owner), empty_doc, "ListAllMyBucketsResult");
  EXPECT_TRUE(root.child("Buckets"));
  EXPECT_FALSE(root.child("Buckets").first_child());
}

TEST(XmlTest, ListBucketsPage) {
  ListBucketsParams p;
  p.prefix = "al";
  p.continuation_token = "YWxwaGE=";
  p.region = "eu-west-1";
  pugi::xml_document doc;
  pugi::xml_node root =
      ParseDoc(ListBucketsXml({{"alpha", kT, {}}}, Owner{}, p), doc, "ListAllMyBucketsResult");
  EXPECT_EQ(Text(root.child("Buckets").child("Bucket"), "BucketRegion"), "eu-west-1");
  EXPECT_EQ(Text(root, "ContinuationToken"), "YWxwaGE=");
  EXPECT_EQ(Text(root, "Prefix"), "al");
  // The last page carries no token; no prefix asked, none echoed.
  pugi::xml_document last;
  root = ParseDoc(ListBucketsXml({}, Owner{}, {}), last, "ListAllMyBucketsResult");
  EXPECT_FALSE(root.child("ContinuationToken"));
  EXPECT_FALSE(root.child("Prefix"));
}

TEST(XmlTest, GetObjectAttributesPagesParts) {
  storage::ObjectInfo info = Obj("k", 12, "abc-3");
  info.part_count = 3;
  info.part_sizes = {5, 5, 2};
  info.checksums["crc32"] = "AAAAAA==-3";
  ObjectAttributesParams p;
  p.etag = p.checksum = p.object_parts = p.storage_class = p.object_size = true;
  p.max_parts = 2;
  pugi::xml_document doc;
  pugi::xml_node root =
      ParseDoc(GetObjectAttributesXml(p, info), doc, "GetObjectAttributesResponse");
  EXPECT_EQ(Text(root, "ETag"), "abc-3");
  EXPECT_EQ(Text(root.child("Checksum"), "ChecksumCRC32"), "AAAAAA==-3");
  pugi::xml_node parts = root.child("ObjectParts");
  EXPECT_EQ(Text(parts, "PartsCount"), "3");
  EXPECT_EQ(Text(parts, "IsTruncated"), "true");
  EXPECT_EQ(Text(parts, "NextPartNumberMarker"), "2");
  std::vector<std::string> sizes;
  for (pugi::xml_node part : parts.children("Part")) sizes.push_back(Text(part, "Size"));
  EXPECT_EQ(sizes, (std::vector<std::string>{"5", "5"}));
  EXPECT_EQ(Text(root, "StorageClass"), "STANDARD");
  EXPECT_EQ(Text(root, "ObjectSize"), "12");
  // The rest from the marker; only what was asked for.
  ObjectAttributesParams rest;
  rest.object_parts = true;
  rest.part_number_marker = 2;
  pugi::xml_document doc2;
  root = ParseDoc(GetObjectAttributesXml(rest, info), doc2, "GetObjectAttributesResponse");
  EXPECT_FALSE(root.child("ETag"));
  EXPECT_EQ(Text(root.child("ObjectParts"), "IsTruncated"), "false");
  EXPECT_EQ(Text(root.child("ObjectParts").child("Part"), "PartNumber"), "3");
}

TEST(XmlTest, Location) {
  pugi::xml_document d1, d2;
  EXPECT_STREQ(ParseDoc(LocationXml("us-east-1"), d1, "LocationConstraint").text().get(), "");
  EXPECT_STREQ(ParseDoc(LocationXml("eu-west-1"), d2, "LocationConstraint").text().get(),
               "eu-west-1");
}

TEST(XmlTest, ListObjectsV1) {
  ListV1Params p;
  p.bucket = "bkt";
  p.prefix = "dir/";
  p.marker = "dir/a";
  p.max_keys = 2;
  storage::ListResult r;
  r.objects = {Obj("dir/b", 5, "0123abcd"), Obj("dir/c", 0, "d41d8cd98f00b204e9800998ecf8427e")};
  r.truncated = true;
  r.next_marker = "dir/c";
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListObjectsV1Xml(p, r, Owner{}), doc, "ListBucketResult");
  EXPECT_EQ(Text(root, "Name"), "bkt");
  EXPECT_EQ(Text(root, "Prefix"), "dir/");
  EXPECT_EQ(Text(root, "Marker"), "dir/a");
  EXPECT_EQ(Text(root, "MaxKeys"), "2");
  EXPECT_EQ(Text(root, "IsTruncated"), "true");
  EXPECT_FALSE(root.child("Delimiter"));
  EXPECT_FALSE(root.child("NextMarker"));  // S3 omits it without a delimiter
  EXPECT_FALSE(root.child("EncodingType"));
  EXPECT_FALSE(root.child("CommonPrefixes"));
  std::vector<pugi::xml_node> contents;
  for (pugi::xml_node c : root.children("Contents")) contents.push_back(c);
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(ChildNames(contents[0]), (std::vector<std::string>{"Key", "LastModified", "ETag",
                                                               "Size", "Owner", "StorageClass"}));
  EXPECT_EQ(Text(contents[0], "Key"), "dir/b");
  EXPECT_EQ(Text(contents[0], "LastModified"), "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(Text(contents[0], "ETag"), "\"0123abcd\"");
  EXPECT_EQ(Text(contents[0], "Size"), "5");
  EXPECT_EQ(Text(contents[0], "StorageClass"), "STANDARD");
  EXPECT_EQ(Text(contents[0].child("Owner"), "ID"), Owner{}.id);
  EXPECT_EQ(Text(contents[1], "Size"), "0");
}

TEST(XmlTest, ListObjectsV1DelimiterAndEncoding) {
  ListV1Params p;
  p.bucket = "bkt";
  p.prefix = "a b/";
  p.delimiter = "/";
  p.marker = "a b/c+d";
  p.encode_url = true;
  storage::ListResult r;
  r.objects = {Obj("a b/k\xc3\xa9y&=+", 1, "e")};
  r.common_prefixes = {"a b/sub dir/", "a b/x%y/"};
  r.truncated = true;
  r.next_marker = "a b/x%y/";
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListObjectsV1Xml(p, r, Owner{}), doc, "ListBucketResult");
  // V1's top-level Prefix is written as sent even with encoding-type=url (AWS).
  EXPECT_EQ(Text(root, "Prefix"), "a b/");
  EXPECT_EQ(Text(root, "Delimiter"), "/");
  EXPECT_EQ(Text(root, "Marker"), "a%20b/c%2Bd");
  EXPECT_EQ(Text(root, "NextMarker"), "a%20b/x%25y/");
  EXPECT_EQ(Text(root, "EncodingType"), "url");
  EXPECT_EQ(Text(root.child("Contents"), "Key"), "a%20b/k%C3%A9y%26%3D%2B");
  std::vector<std::string> prefixes;
  for (pugi::xml_node c : root.children("CommonPrefixes")) prefixes.push_back(Text(c, "Prefix"));
  EXPECT_EQ(prefixes, (std::vector<std::string>{"a%20b/sub%20dir/", "a%20b/x%25y/"}));

  // Without encoding, special characters survive XML escaping intact.
  p.encode_url = false;
  pugi::xml_document doc2;
  root = ParseDoc(ListObjectsV1Xml(p, r, Owner{}), doc2, "ListBucketResult");
  EXPECT_EQ(Text(root.child("Contents"), "Key"), "a b/k\xc3\xa9y&=+");
  EXPECT_EQ(Text(root, "NextMarker"), "a b/x%y/");
}

TEST(XmlTest, ControlCharactersSurviveARoundTrip) {
  ListV1Params p;
  p.bucket = "bkt";
  storage::ListResult r;
  const std::string key = "cr\rlf\ncrlf\r\ntab\tend";
  r.objects = {Obj(key, 1, "e")};
  const std::string xml = ListObjectsV1Xml(p, r, Owner{});
  EXPECT_EQ(xml.find('\r'), std::string::npos);
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(xml, doc, "ListBucketResult");
  EXPECT_EQ(Text(root.child("Contents"), "Key"), key);
}

TEST(XmlTest, ListObjectsV1NotTruncated) {
  ListV1Params p;
  p.bucket = "bkt";
  p.delimiter = "/";
  storage::ListResult r;
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListObjectsV1Xml(p, r, Owner{}), doc, "ListBucketResult");
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
  EXPECT_FALSE(root.child("NextMarker"));
  EXPECT_FALSE(root.child("Contents"));
  EXPECT_TRUE(root.child("Prefix"));
  EXPECT_TRUE(root.child("Marker"));
  EXPECT_EQ(Text(root, "MaxKeys"), "1000");
}

TEST(XmlTest, ListObjectsV2) {
  ListV2Params p;
  p.bucket = "bkt";
  p.prefix = "p/";
  p.delimiter = "/";
  p.max_keys = 3;
  p.continuation_token = "tok1";
  p.next_continuation_token = "tok2";
  storage::ListResult r;
  r.objects = {Obj("p/a", 1, "x"), Obj("p/b", 2, "y")};
  r.common_prefixes = {"p/d/"};
  r.truncated = true;
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListObjectsV2Xml(p, r, Owner{}), doc, "ListBucketResult");
  EXPECT_EQ(Text(root, "Name"), "bkt");
  EXPECT_EQ(Text(root, "Prefix"), "p/");
  EXPECT_EQ(Text(root, "KeyCount"), "3");
  EXPECT_EQ(Text(root, "MaxKeys"), "3");
  EXPECT_EQ(Text(root, "Delimiter"), "/");
  EXPECT_EQ(Text(root, "IsTruncated"), "true");
  EXPECT_EQ(Text(root, "ContinuationToken"), "tok1");
  EXPECT_EQ(Text(root, "NextContinuationToken"), "tok2");
  EXPECT_FALSE(root.child("StartAfter"));
  EXPECT_FALSE(root.child("Marker"));
  EXPECT_FALSE(root.child("Contents").child("Owner"));  // only with fetch-owner
  EXPECT_EQ(Text(root.child("CommonPrefixes"), "Prefix"), "p/d/");

  p.fetch_owner = true;
  p.start_after = "p/ a";
  p.continuation_token.clear();
  p.encode_url = true;
  r.truncated = false;
  pugi::xml_document doc2;
  root = ParseDoc(ListObjectsV2Xml(p, r, Owner{}), doc2, "ListBucketResult");
  EXPECT_EQ(Text(root.child("Contents").child("Owner"), "DisplayName"), "rdmastor");
  EXPECT_EQ(Text(root, "StartAfter"), "p/%20a");
  EXPECT_FALSE(root.child("ContinuationToken"));
  EXPECT_FALSE(root.child("NextContinuationToken"));
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
  EXPECT_EQ(Text(root, "EncodingType"), "url");
}

TEST(XmlTest, ListObjectVersions) {
  ListVersionsParams p;
  p.bucket = "bkt";
  p.key_marker = "k 0";
  p.max_keys = 1;
  p.encode_url = true;
  storage::ListResult r;
  r.objects = {Obj("k 1", 7, "abc")};
  r.truncated = true;
  // The S3 layer pages versions itself (s3/versioning.cc) and hands the markers in.
  p.next_key_marker = "k 1";
  p.next_version_id_marker = "null";
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListObjectVersionsXml(p, r, Owner{}), doc, "ListVersionsResult");
  EXPECT_EQ(Text(root, "KeyMarker"), "k%200");
  EXPECT_EQ(Text(root, "IsTruncated"), "true");
  EXPECT_EQ(Text(root, "NextKeyMarker"), "k%201");
  EXPECT_EQ(Text(root, "NextVersionIdMarker"), "null");
  pugi::xml_node v = root.child("Version");
  EXPECT_EQ(ChildNames(v), (std::vector<std::string>{"Key", "VersionId", "IsLatest", "LastModified",
                                                     "ETag", "Size", "Owner", "StorageClass"}));
  EXPECT_EQ(Text(v, "Key"), "k%201");
  EXPECT_EQ(Text(v, "VersionId"), "null");
  EXPECT_EQ(Text(v, "IsLatest"), "true");
  EXPECT_EQ(Text(v, "ETag"), "\"abc\"");
  EXPECT_EQ(Text(v, "Size"), "7");
  EXPECT_EQ(Text(root, "EncodingType"), "url");

  r.truncated = false;
  pugi::xml_document doc2;
  root = ParseDoc(ListObjectVersionsXml(p, r, Owner{}), doc2, "ListVersionsResult");
  EXPECT_FALSE(root.child("NextKeyMarker"));
  EXPECT_FALSE(root.child("NextVersionIdMarker"));
}

TEST(XmlTest, CopyAndMultipartResults) {
  pugi::xml_document d1, d2, d3, d4;
  pugi::xml_node r = ParseDoc(CopyObjectResultXml("abc", kT), d1, "CopyObjectResult");
  EXPECT_EQ(Text(r, "ETag"), "\"abc\"");
  EXPECT_EQ(Text(r, "LastModified"), "2024-01-02T03:04:05.678Z");
  r = ParseDoc(CopyPartResultXml("\"def\"", kT), d2, "CopyPartResult");
  EXPECT_EQ(Text(r, "ETag"), "\"def\"");  // already quoted: not quoted twice
  r = ParseDoc(InitiateMultipartUploadXml("b", "k/&x", "up1"), d3, "InitiateMultipartUploadResult");
  EXPECT_EQ(ChildNames(r), (std::vector<std::string>{"Bucket", "Key", "UploadId"}));
  EXPECT_EQ(Text(r, "Key"), "k/&x");
  EXPECT_EQ(Text(r, "UploadId"), "up1");
  r = ParseDoc(CompleteMultipartUploadXml("http://h/b/k", "b", "k", "abc-2"), d4,
               "CompleteMultipartUploadResult");
  EXPECT_EQ(ChildNames(r), (std::vector<std::string>{"Location", "Bucket", "Key", "ETag"}));
  EXPECT_EQ(Text(r, "Location"), "http://h/b/k");
  EXPECT_EQ(Text(r, "ETag"), "\"abc-2\"");
}

std::vector<storage::PartInfo> Parts(int n) {
  std::vector<storage::PartInfo> parts;
  for (int i = n; i >= 1; --i) {  // deliberately unsorted
    storage::PartInfo p;
    p.number = i;
    p.etag = "e" + std::to_string(i);
    p.size = 100 + i;
    p.mtime_ns = kT;
    parts.push_back(p);
  }
  return parts;
}

std::vector<int> PartNumbers(pugi::xml_node root) {
  std::vector<int> out;
  for (pugi::xml_node p : root.children("Part")) {
    out.push_back(p.child("PartNumber").text().as_int());
  }
  return out;
}

TEST(XmlTest, ListParts) {
  ListPartsParams p{"b", "k", "up", 0, 1000, "", "", ""};
  auto parts = Parts(3);
  parts[0].checksums["crc32"] = "AAAAAA==";
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(ListPartsXml(p, parts, Owner{}), doc, "ListPartsResult");
  EXPECT_EQ(Text(root, "Bucket"), "b");
  EXPECT_EQ(Text(root, "Key"), "k");
  EXPECT_EQ(Text(root, "UploadId"), "up");
  EXPECT_EQ(Text(root.child("Initiator"), "ID"), Owner{}.id);
  EXPECT_EQ(Text(root, "StorageClass"), "STANDARD");
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
  EXPECT_EQ(Text(root, "NextPartNumberMarker"), "3");
  EXPECT_EQ(PartNumbers(root), (std::vector<int>{1, 2, 3}));
  pugi::xml_node first = root.child("Part");
  EXPECT_EQ(Text(first, "ETag"), "\"e1\"");
  EXPECT_EQ(Text(first, "Size"), "101");
  EXPECT_EQ(Text(first, "LastModified"), "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(Text(root.last_child(), "ChecksumCRC32"), "AAAAAA==");

  // Marker and max-parts page through.
  p.part_number_marker = 1;
  p.max_parts = 1;
  pugi::xml_document doc2;
  root = ParseDoc(ListPartsXml(p, parts, Owner{}), doc2, "ListPartsResult");
  EXPECT_EQ(PartNumbers(root), (std::vector<int>{2}));
  EXPECT_EQ(Text(root, "IsTruncated"), "true");
  EXPECT_EQ(Text(root, "PartNumberMarker"), "1");
  EXPECT_EQ(Text(root, "NextPartNumberMarker"), "2");
  EXPECT_EQ(Text(root, "MaxParts"), "1");

  p.part_number_marker = 3;
  pugi::xml_document doc3;
  root = ParseDoc(ListPartsXml(p, parts, Owner{}), doc3, "ListPartsResult");
  EXPECT_TRUE(PartNumbers(root).empty());
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
}

storage::UploadInfo Upload(std::string key, std::string id) {
  return storage::UploadInfo{std::move(key), std::move(id), kT};
}

std::vector<std::string> UploadKeys(pugi::xml_node root) {
  std::vector<std::string> out;
  for (pugi::xml_node u : root.children("Upload"))
    out.push_back(Text(u, "Key") + "@" + Text(u, "UploadId"));
  return out;
}
std::vector<std::string> Prefixes(pugi::xml_node root) {
  std::vector<std::string> out;
  for (pugi::xml_node c : root.children("CommonPrefixes")) out.push_back(Text(c, "Prefix"));
  return out;
}

TEST(XmlTest, ListMultipartUploads) {
  const std::vector<storage::UploadInfo> uploads = {
      Upload("b", "2"),   Upload("a", "1"), Upload("b", "1"),    Upload("d/x", "1"),
      Upload("d/y", "1"), Upload("e", "1"), Upload("other", "1")};
  ListUploadsParams p;
  p.bucket = "bkt";
  pugi::xml_document doc;
  pugi::xml_node root =
      ParseDoc(ListMultipartUploadsXml(p, uploads, Owner{}), doc, "ListMultipartUploadsResult");
  EXPECT_EQ(UploadKeys(root),
            (std::vector<std::string>{"a@1", "b@1", "b@2", "d/x@1", "d/y@1", "e@1", "other@1"}));
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
  EXPECT_EQ(Text(root, "Bucket"), "bkt");
  EXPECT_EQ(Text(root, "MaxUploads"), "1000");
  pugi::xml_node u = root.child("Upload");
  EXPECT_EQ(ChildNames(u), (std::vector<std::string>{"Key", "UploadId", "Initiator", "Owner",
                                                     "StorageClass", "Initiated"}));
  EXPECT_EQ(Text(u, "Initiated"), "2024-01-02T03:04:05.678Z");

  // Page 1 with a delimiter: a, b@1.
  p.delimiter = "/";
  p.max_uploads = 2;
  pugi::xml_document d1;
  root = ParseDoc(ListMultipartUploadsXml(p, uploads, Owner{}), d1, "ListMultipartUploadsResult");
  EXPECT_EQ(UploadKeys(root), (std::vector<std::string>{"a@1", "b@1"}));
  EXPECT_EQ(Text(root, "IsTruncated"), "true");
  EXPECT_EQ(Text(root, "NextKeyMarker"), "b");
  EXPECT_EQ(Text(root, "NextUploadIdMarker"), "1");

  // Page 2: b@2, then the "d/" group counts as one.
  p.key_marker = "b";
  p.upload_id_marker = "1";
  pugi::xml_document d2;
  root = ParseDoc(ListMultipartUploadsXml(p, uploads, Owner{}), d2, "ListMultipartUploadsResult");
  EXPECT_EQ(UploadKeys(root), (std::vector<std::string>{"b@2"}));
  EXPECT_EQ(Prefixes(root), (std::vector<std::string>{"d/"}));
  EXPECT_EQ(Text(root, "NextKeyMarker"), "d/");
  EXPECT_EQ(Text(root, "NextUploadIdMarker"), "");
  EXPECT_EQ(Text(root, "IsTruncated"), "true");

  // Page 3 resumes after the group without repeating it.
  p.key_marker = "d/";
  p.upload_id_marker = "";
  pugi::xml_document d3;
  root = ParseDoc(ListMultipartUploadsXml(p, uploads, Owner{}), d3, "ListMultipartUploadsResult");
  EXPECT_EQ(UploadKeys(root), (std::vector<std::string>{"e@1", "other@1"}));
  EXPECT_TRUE(Prefixes(root).empty());
  EXPECT_EQ(Text(root, "IsTruncated"), "false");
  EXPECT_FALSE(root.child("NextKeyMarker"));

  // Prefix filter and URL encoding.
  ListUploadsParams q;
  q.bucket = "bkt";
  q.prefix = "d/";
  q.encode_url = true;
  pugi::xml_document d4;
  root = ParseDoc(ListMultipartUploadsXml(q, {Upload("d/a b", "9"), Upload("x", "1")}, Owner{}), d4,
                  "ListMultipartUploadsResult");
  EXPECT_EQ(UploadKeys(root), (std::vector<std::string>{"d/a%20b@9"}));
  EXPECT_EQ(Text(root, "EncodingType"), "url");
}

TEST(XmlTest, DeleteResult) {
  const std::vector<DeleteOutcome> outcomes = {
      {"a", true, "", ""}, {"b&c", false, "AccessDenied", "Access Denied."}, {"d", true, "", ""}};
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(DeleteResultXml(outcomes, false), doc, "DeleteResult");
  EXPECT_EQ(ChildNames(root), (std::vector<std::string>{"Deleted", "Error", "Deleted"}));
  EXPECT_EQ(Text(root.child("Deleted"), "Key"), "a");
  pugi::xml_node e = root.child("Error");
  EXPECT_EQ(Text(e, "Key"), "b&c");
  EXPECT_EQ(Text(e, "Code"), "AccessDenied");
  EXPECT_EQ(Text(e, "Message"), "Access Denied.");

  pugi::xml_document quiet;
  root = ParseDoc(DeleteResultXml(outcomes, true), quiet, "DeleteResult");
  EXPECT_EQ(ChildNames(root), (std::vector<std::string>{"Error"}));
}

TEST(XmlTest, VersioningConfiguration) {
  pugi::xml_document doc;
  pugi::xml_node root = ParseDoc(VersioningConfigurationXml(), doc, "VersioningConfiguration");
  EXPECT_FALSE(root.first_child());
}

// ---------------------------------------------------------------------------------------------
// Request documents.

void ExpectMalformed(const Result<DeleteRequest>& r) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kMalformedXML);
}

TEST(XmlParseTest, DeleteBasic) {
  auto r = ParseDeleteXml(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
      "  <Object><Key>a/b.txt</Key></Object>\n"
      "  <Object><Key>x &amp; y &lt;z&gt; &#x263A;</Key><VersionId>v1</VersionId></Object>\n"
      "  <Object><Key><![CDATA[c<d>]]></Key></Object>\n"
      "  <Object><Key> spaced </Key></Object>\n"
      "</Delete>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->quiet);
  ASSERT_EQ(r->objects.size(), 4u);
  EXPECT_EQ(r->objects[0].key, "a/b.txt");
  EXPECT_EQ(r->objects[0].version_id, "");
  EXPECT_EQ(r->objects[1].key, "x & y <z> \xe2\x98\xba");
  EXPECT_EQ(r->objects[1].version_id, "v1");
  EXPECT_EQ(r->objects[2].key, "c<d>");
  EXPECT_EQ(r->objects[3].key, " spaced ");
}

TEST(XmlParseTest, DeleteQuiet) {
  auto r = ParseDeleteXml("<Delete><Quiet>true</Quiet><Object><Key>k</Key></Object></Delete>");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->quiet);
  r = ParseDeleteXml("<Delete><Object><Key>k</Key></Object><Quiet> false </Quiet></Delete>");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->quiet);
  ExpectMalformed(
      ParseDeleteXml("<Delete><Quiet>maybe</Quiet><Object><Key>k</Key></Object>"
                     "</Delete>"));
}

TEST(XmlParseTest, DeleteNamespacePrefix) {
  auto r = ParseDeleteXml(
      "<s3:Delete xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->objects.at(0).key, "k");
}

std::string DeleteBody(int n) {
  std::string body = "<Delete>";
  for (int i = 0; i < n; ++i) body += "<Object><Key>k" + std::to_string(i) + "</Key></Object>";
  return body + "</Delete>";
}

TEST(XmlParseTest, DeleteLimit) {
  auto r = ParseDeleteXml(DeleteBody(1000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->objects.size(), 1000u);
  EXPECT_EQ(r->objects.back().key, "k999");
  ExpectMalformed(ParseDeleteXml(DeleteBody(1001)));
}

TEST(XmlParseTest, DeleteMalformed) {
  ExpectMalformed(ParseDeleteXml(""));
  ExpectMalformed(ParseDeleteXml("   "));
  ExpectMalformed(ParseDeleteXml("not xml"));
  ExpectMalformed(ParseDeleteXml("<Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key>k</Key></Object>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key>k</Object></Key></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete></Delete>"));  // no objects
  ExpectMalformed(ParseDeleteXml("<Remove><Object><Key>k</Key></Object></Remove>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key>k</Key></Object></Delete><Delete/>"));
  ExpectMalformed(
      ParseDeleteXml(std::string("<Delete>\0<Object><Key>k</Key></Object></Delete>", 47)));
}

TEST(XmlParseTest, DeleteMissingKey) {
  ExpectMalformed(ParseDeleteXml("<Delete><Object></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><VersionId>v</VersionId></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key></Key></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key/></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key><a/></Key></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml("<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>"));
  ExpectMalformed(ParseDeleteXml(
      "<Delete><Object><Key>a</Key></Object><Object><Nope>b</Nope></Object></Delete>"));
}

TEST(XmlParseTest, EntitiesAreNeverExpanded) {
  // XXE: an external entity must not be resolved (nothing is read from disk).
  const std::string xxe =
      "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>"
      "<Delete><Object><Key>&xxe;</Key></Object></Delete>";
  ExpectMalformed(ParseDeleteXml(xxe));
  // Billion laughs: must be refused quickly, not expanded.
  std::string bomb = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">";
  for (int i = 1; i < 10; ++i) {
    bomb += "<!ENTITY lol" + std::to_string(i) + " \"";
    const std::string prev = i == 1 ? "lol" : "lol" + std::to_string(i - 1);
    for (int j = 0; j < 10; ++j) bomb += "&" + prev + ";";
    bomb += "\">";
  }
  bomb += "]><Delete><Object><Key>&lol9;</Key></Object></Delete>";
  ExpectMalformed(ParseDeleteXml(bomb));
  auto c = ParseCompleteMultipartXml(
      "<!DOCTYPE x [<!ENTITY e \"1\">]><CompleteMultipartUpload><Part><PartNumber>&e;"
      "</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kMalformedXML);
  auto b = ParseCreateBucketXml("<!DOCTYPE x><CreateBucketConfiguration/>");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kMalformedXML);
  // Undeclared entity references without a DTD are not expanded either: pugixml keeps them as
  // literal text (or the body is refused), never substitutes anything.
  for (const char* text : {"&xxe;", "a&bogus", "&#xZZ;"}) {
    auto r =
        ParseDeleteXml(std::string("<Delete><Object><Key>") + text + "</Key></Object></Delete>");
    if (r.ok()) {
      EXPECT_EQ(r->objects.at(0).key, text);
    } else {
      EXPECT_EQ(r.error().code, ErrorCode::kMalformedXML);
    }
  }
}

TEST(XmlParseTest, DeepNestingDoesNotCrash) {
  std::string deep = "<Delete>";
  for (int i = 0; i < 100000; ++i) deep += "<a>";
  for (int i = 0; i < 100000; ++i) deep += "</a>";
  deep += "<Object><Key>k</Key></Object></Delete>";
  auto r = ParseDeleteXml(deep);
  ASSERT_TRUE(r.ok());  // unknown elements are ignored
  EXPECT_EQ(r->objects.size(), 1u);
}

TEST(XmlParseTest, CompleteMultipart) {
  auto r = ParseCompleteMultipartXml(
      "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Part><PartNumber>1</PartNumber><ETag>\"aaa\"</ETag></Part>"
      "<Part><ETag>&quot;bbb&quot;</ETag><PartNumber> 2 </PartNumber>"
      "<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>"
      "<Part><PartNumber>3</PartNumber><ETag>ccc</ETag></Part>"
      "<Part><PartNumber>10000</PartNumber><ETag>\n  \"ddd\"  \n</ETag></Part>"
      "</CompleteMultipartUpload>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].number, 1);
  EXPECT_EQ((*r)[0].etag, "aaa");
  EXPECT_EQ((*r)[1].number, 2);
  EXPECT_EQ((*r)[1].etag, "bbb");
  EXPECT_EQ((*r)[2].etag, "ccc");
  EXPECT_EQ((*r)[3].number, 10000);
  EXPECT_EQ((*r)[3].etag, "ddd");

  // Order is preserved as sent; checking it is the object layer's job (InvalidPartOrder).
  r = ParseCompleteMultipartXml(
      "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>b</ETag></Part>"
      "<Part><PartNumber>1</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].number, 2);
}

void ExpectCompleteError(std::string_view body, ErrorCode code = ErrorCode::kMalformedXML) {
  auto r = ParseCompleteMultipartXml(body);
  ASSERT_FALSE(r.ok()) << body;
  EXPECT_EQ(r.error().code, code) << body;
}

TEST(XmlParseTest, CompleteMultipartErrors) {
  ExpectCompleteError("");
  ExpectCompleteError("garbage");
  ExpectCompleteError("\x01\x02\xff\xfe");
  ExpectCompleteError("<CompleteMultipartUpload/>");
  ExpectCompleteError("<CompleteMultipartUpload></CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
      "</CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><ETag>x</ETag></Part>"
      "</CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"\""
      "</ETag></Part></CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>x"
      "</ETag></Part></CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>x"
      "</ETag></Part></CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber></PartNumber><ETag>x"
      "</ETag></Part></CompleteMultipartUpload>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x"
      "</ETag></Part>");  // unterminated
  ExpectCompleteError("<Other><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Other>");
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x"
      "</ETag></Part></CompleteMultipartUpload>",
      ErrorCode::kInvalidArgument);
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>x"
      "</ETag></Part></CompleteMultipartUpload>",
      ErrorCode::kInvalidArgument);
  ExpectCompleteError(
      "<CompleteMultipartUpload><Part><PartNumber>99999999999999999999999"
      "</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
      ErrorCode::kInvalidArgument);
}

TEST(XmlParseTest, CreateBucketConfiguration) {
  auto r = ParseCreateBucketXml("");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
  r = ParseCreateBucketXml(" \r\n ");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
  r = ParseCreateBucketXml(
      "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "eu-west-1");
  r = ParseCreateBucketXml("<CreateBucketConfiguration/>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
  r = ParseCreateBucketXml(
      "<CreateBucketConfiguration><LocationConstraint></LocationConstraint>"
      "</CreateBucketConfiguration>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
  for (const char* bad : {"x", "<CreateBucketConfiguration>", "<Foo/>",
                          "<CreateBucketConfiguration><LocationConstraint><a/>"
                          "</LocationConstraint></CreateBucketConfiguration>"}) {
    auto e = ParseCreateBucketXml(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().code, ErrorCode::kMalformedXML);
  }
}

TEST(XmlParseTest, Utf8Bom) {
  auto r = ParseCreateBucketXml(
      "\xef\xbb\xbf<CreateBucketConfiguration><LocationConstraint>r</LocationConstraint>"
      "</CreateBucketConfiguration>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "r");
}

TEST(XmlChecksumTest, CompletePartsKeepTheirChecksums) {
  auto r = ParseCompleteMultipartXml(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"a\"</ETag>"
      "<ChecksumCRC64NVME> rosUhgp5mIg= </ChecksumCRC64NVME></Part>"
      "<Part><ETag>b</ETag><ChecksumCRC32>x</ChecksumCRC32><ChecksumSHA1>y</ChecksumSHA1>"
      "<PartNumber>2</PartNumber></Part></CompleteMultipartUpload>");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].checksums.size(), 1u);
  EXPECT_EQ((*r)[0].checksums.begin()->first, "crc64nvme");
  EXPECT_EQ((*r)[0].checksums.begin()->second, "rosUhgp5mIg=");
  EXPECT_EQ((*r)[1].checksums.size(), 2u);  // refused later, with both named
}

TEST(XmlChecksumTest, ResultsCarryChecksumsAndType) {
  const std::string complete =
      CompleteMultipartUploadXml("l", "b", "k", "e-2", {{"crc32c", "pzJFoA==-2"}});
  EXPECT_NE(complete.find("<ChecksumCRC32C>pzJFoA==-2</ChecksumCRC32C>"), std::string::npos);
  EXPECT_NE(complete.find("<ChecksumType>COMPOSITE</ChecksumType>"), std::string::npos);
  const std::string full =
      CompleteMultipartUploadXml("l", "b", "k", "e-2", {{"crc64nvme", "rosUhgp5mIg="}});
  EXPECT_NE(full.find("<ChecksumCRC64NVME>rosUhgp5mIg=</ChecksumCRC64NVME>"), std::string::npos);
  EXPECT_NE(full.find("<ChecksumType>FULL_OBJECT</ChecksumType>"), std::string::npos);
  EXPECT_EQ(CompleteMultipartUploadXml("l", "b", "k", "e").find("Checksum"), std::string::npos);

  storage::PartInfo part;
  part.number = 1;
  part.checksums["crc32"] = "y/Q5Jg==";
  ListPartsParams p{"b", "k", "up", 0, 1000, "REDUCED_REDUNDANCY", "CRC32", "COMPOSITE"};
  const std::string lp = ListPartsXml(p, {part}, Owner{});
  EXPECT_NE(lp.find("<StorageClass>REDUCED_REDUNDANCY</StorageClass>"), std::string::npos);
  EXPECT_NE(lp.find("<ChecksumAlgorithm>CRC32</ChecksumAlgorithm>"), std::string::npos);
  EXPECT_NE(lp.find("<ChecksumType>COMPOSITE</ChecksumType>"), std::string::npos);
  EXPECT_NE(lp.find("<ChecksumCRC32>y/Q5Jg==</ChecksumCRC32>"), std::string::npos);

  storage::ObjectInfo info;
  info.size = 10;
  info.part_count = 2;
  info.part_sizes = {6, 4};
  info.part_checksums = {{{"crc32", "AAAAAA=="}}, {{"crc32", "BBBBBB=="}}};
  info.checksums["crc32"] = "CCCCCC==";
  ObjectAttributesParams ap;
  ap.checksum = ap.object_parts = true;
  const std::string attrs = GetObjectAttributesXml(ap, info);
  EXPECT_NE(attrs.find("<ChecksumCRC32>CCCCCC==</ChecksumCRC32><ChecksumType>FULL_OBJECT"),
            std::string::npos);
  EXPECT_NE(attrs.find("<Size>4</Size><ChecksumCRC32>BBBBBB==</ChecksumCRC32>"), std::string::npos);
}

// The ACL document of Get/PutBucketAcl and Get/PutObjectAcl (s3/xml.h), against iam/acl.h.
TEST(AccessControlPolicyXml, RoundTripAndHostileBodies) {
  const iam::AclOwner owner = iam::OwnerOf("alice", "root");
  const std::string xml =
      AccessControlPolicyXml(owner, iam::GrantsOf(iam::CannedAcl::kPublicRead, owner));
  EXPECT_NE(xml.find("<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                     "xsi:type=\"Group\"><URI>http://acs.amazonaws.com/groups/global/AllUsers"
                     "</URI></Grantee><Permission>READ</Permission>"),
            std::string::npos)
      << xml;
  auto parsed = ParseAccessControlPolicyXml(xml);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->owner_id, owner.id);
  EXPECT_EQ(iam::FromGrants(parsed->grants, owner), iam::CannedAcl::kPublicRead);

  auto code = [](std::string_view body) {
    auto r = ParseAccessControlPolicyXml(body);
    return r.ok() ? ErrorCode::kInternalError : r.error().code;
  };
  // AWS's code for every document its schema does not allow.
  EXPECT_EQ(code(""), ErrorCode::kMalformedACLError);
  EXPECT_EQ(code("<AccessControlPolicy/>"), ErrorCode::kMalformedACLError);  // no list
  EXPECT_EQ(code("<AccessControlPolicy><AccessControlList/></AccessControlPolicy>"),
            ErrorCode::kMalformedACLError);  // no owner
  EXPECT_EQ(code("<AccessControlPolicy><Owner><ID>a</ID></Owner><Owner><ID>a</ID></Owner>"
                 "<AccessControlList/></AccessControlPolicy>"),
            ErrorCode::kMalformedACLError);  // two owners
  auto no_id = ParseAccessControlPolicyXml(
      "<AccessControlPolicy><Owner/><AccessControlList/></AccessControlPolicy>");
  ASSERT_TRUE(no_id.ok());
  EXPECT_EQ(no_id->owner_id, "");  // an invalid id, refused by the S3 layer as AWS does
  EXPECT_EQ(code("<!DOCTYPE x [<!ENTITY a 'b'>]><AccessControlPolicy><AccessControlList/>"
                 "</AccessControlPolicy>"),
            ErrorCode::kMalformedACLError);
  EXPECT_EQ(code("<AccessControlPolicy><AccessControlList><Grant><Grantee "
                 "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\">"
                 "<URI>u</URI></Grantee><Permission>EVERYTHING</Permission></Grant>"
                 "</AccessControlList></AccessControlPolicy>"),
            ErrorCode::kMalformedACLError);
  std::string many = "<AccessControlPolicy><AccessControlList>";
  for (int i = 0; i < 101; ++i)
    many +=
        "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
        "xsi:type=\"CanonicalUser\"><ID>x</ID></Grantee><Permission>READ</Permission></Grant>";
  many += "</AccessControlList></AccessControlPolicy>";
  EXPECT_EQ(code(many), ErrorCode::kMalformedACLError);
  // An e-mail grantee parses but is no canned ACL's.
  auto email = ParseAccessControlPolicyXml(
      "<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant><Grantee "
      "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
      "xsi:type=\"AmazonCustomerByEmail\"><EmailAddress>a@b</EmailAddress></Grantee>"
      "<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>");
  ASSERT_TRUE(email.ok());
  EXPECT_FALSE(iam::FromGrants(email->grants, owner));
}

}  // namespace
}  // namespace rdmastor::s3
