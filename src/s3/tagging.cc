#include "s3/tagging.h"

#include <cctype>
#include <map>
#include <optional>
#include <pugixml.hpp>

#include "common/uri.h"
#include "common/utf8.h"
#include "s3/xml.h"
#include "s3/versioning.h"

namespace rdmastor::s3 {

namespace {

using TagMap = std::map<std::string, std::string>;

Error InvalidTag(std::string message) {
  return MakeError(ErrorCode::kInvalidTag, std::move(message));
}

// Unicode characters (code points) in valid UTF-8.
size_t CharCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// AWS: Unicode letters, digits, white space and + - = . _ : / @. Non-ASCII code points are
// accepted as letters (no Unicode tables here); ASCII controls and other symbols are not.
bool AllowedChars(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) continue;
    if (std::isalnum(c) || c == ' ' || c == '+' || c == '-' || c == '=' || c == '.' || c == '_' ||
        c == ':' || c == '/' || c == '@')
      continue;
    return false;
  }
  return true;
}

Status CheckTag(const std::string& key, const std::string& value) {
  if (key.empty() || !IsValidUtf8(key)) return InvalidTag("The TagKey you have provided is invalid");
  if (CharCount(key) > 128) return InvalidTag("The TagKey you have provided is too long, max 128");
  if (!AllowedChars(key)) return InvalidTag("The TagKey you have provided is invalid");
  if (!IsValidUtf8(value)) return InvalidTag("The TagValue you have provided is invalid");
  if (CharCount(value) > 256)
    return InvalidTag("The TagValue you have provided is too long, max 256");
  if (!AllowedChars(value)) return InvalidTag("The TagValue you have provided is invalid");
  if (key.starts_with("aws:")) return InvalidTag("Your TagKey cannot be prefixed with aws:");
  return {};
}

// Adds one tag; the count limit is checked before anything else about the tag, as AWS does.
Status AddTag(TagMap& tags, std::string key, std::string value, bool object) {
  const size_t max = object ? kMaxObjectTags : kMaxBucketTags;
  if (tags.size() >= max)
    return MakeError(ErrorCode::kBadRequest, object ? "Object tags cannot be greater than 10"
                                                    : "Bucket tag count cannot be greater than 50");
  if (tags.count(key)) return InvalidTag("Cannot provide multiple Tags with the same key");
  RS_RETURN_IF_ERROR(CheckTag(key, value));
  tags.emplace(std::move(key), std::move(value));
  return {};
}

std::string Canonical(const TagMap& tags) {
  std::string out;
  for (const auto& [k, v] : tags) {
    if (!out.empty()) out += '&';
    out += uri::Encode(k) + "=" + uri::Encode(v);
  }
  return out;
}

// The canonical form back into tags. It was written by Canonical, so it decodes.
TagMap Split(std::string_view canonical) {
  TagMap tags;
  if (canonical.empty()) return tags;
  auto parsed = uri::ParseQuery(canonical);
  if (!parsed) return tags;
  for (auto& [k, v] : *parsed) tags.emplace(std::move(k), std::move(v));
  return tags;
}

std::string_view LocalName(const pugi::xml_node& n) {
  std::string_view name = n.name();
  auto colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

Error Malformed() { return MakeError(ErrorCode::kMalformedXML); }

}  // namespace

Result<std::string> ParseTaggingXml(std::string_view body, bool object) {
  pugi::xml_document doc;
  // A single-space value stays a value; a DOCTYPE (entity tricks) is refused.
  const unsigned opts = pugi::parse_default | pugi::parse_ws_pcdata_single | pugi::parse_doctype;
  if (body.empty() || !doc.load_buffer(body.data(), body.size(), opts, pugi::encoding_utf8))
    return Malformed();
  pugi::xml_node root;
  for (pugi::xml_node c = doc.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_doctype) return Malformed();
    if (c.type() == pugi::node_element) {
      if (root) return Malformed();
      root = c;
    }
  }
  if (!root || LocalName(root) != "Tagging") return Malformed();
  std::optional<TagMap> tags;
  for (pugi::xml_node set = root.first_child(); set; set = set.next_sibling()) {
    if (set.type() != pugi::node_element) continue;
    if (LocalName(set) != "TagSet" || tags) return Malformed();
    tags.emplace();
    for (pugi::xml_node tag = set.first_child(); tag; tag = tag.next_sibling()) {
      if (tag.type() != pugi::node_element) continue;
      if (LocalName(tag) != "Tag") return Malformed();
      std::optional<std::string> key, value;
      for (pugi::xml_node f = tag.first_child(); f; f = f.next_sibling()) {
        if (f.type() != pugi::node_element) continue;
        const std::string_view name = LocalName(f);
        std::optional<std::string>* slot = name == "Key" ? &key : name == "Value" ? &value : nullptr;
        if (!slot || *slot) return Malformed();
        *slot = LeafText(f);
        if (!*slot) return Malformed();
      }
      if (!key || !value) return Malformed();
      RS_RETURN_IF_ERROR(AddTag(*tags, std::move(*key), std::move(*value), object));
    }
  }
  if (!tags) return Malformed();
  return Canonical(*tags);
}

namespace {

std::string TaggingXml(std::string_view canonical) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto root = doc.append_child("Tagging");
  root.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
  auto set = root.append_child("TagSet");
  for (const auto& [k, v] : Split(canonical)) {
    auto tag = set.append_child("Tag");
    tag.append_child("Key").text().set(k.c_str());
    tag.append_child("Value").text().set(v.c_str());
  }
  struct Writer : pugi::xml_writer {
    std::string out;
    void write(const void* data, size_t size) override {
      out.append(static_cast<const char*>(data), size);
    }
  } w;
  doc.save(w, "", pugi::format_raw);
  return std::move(w.out);
}

}  // namespace

Result<std::string> ParseTaggingHeader(std::string_view header) {
  auto pairs = uri::ParseQuery(header);
  if (!pairs)
    return MakeError(ErrorCode::kInvalidArgument,
                     "The header 'x-amz-tagging' shall be encoded as UTF-8 encoded key value "
                     "pairs");
  TagMap tags;
  for (auto& [key, value] : *pairs)
    RS_RETURN_IF_ERROR(AddTag(tags, std::move(key), std::move(value), /*object=*/true));
  return Canonical(tags);
}

Result<std::string> CopyObjectTags(const HttpRequest& req, const std::string& source_tags) {
  const std::string* directive = req.FindHeader("x-amz-tagging-directive");
  if (!directive || *directive == "COPY") return source_tags;
  if (*directive != "REPLACE")
    return MakeError(ErrorCode::kInvalidArgument, "Unknown tagging directive.");
  const std::string* header = req.FindHeader("x-amz-tagging");
  if (!header) return std::string();
  return ParseTaggingHeader(*header);
}

size_t TagCount(std::string_view canonical) {
  if (canonical.empty()) return 0;
  size_t n = 1;
  for (char c : canonical)
    if (c == '&') ++n;
  return n;
}

Result<TaggingReply> HandleTagging(storage::ObjectLayer& store, std::string_view api,
                                   const std::string& bucket, const std::string& key,
                                   const storage::VersionSel& version,
                                   const std::function<Result<std::string>()>& read_body) {
  const bool object = api.ends_with("ObjectTagging");
  std::string tags;
  if (api.starts_with("Put")) {
    auto body = read_body();
    if (!body.ok()) return body.error();
    auto parsed = ParseTaggingXml(*body, object);
    if (!parsed.ok()) return parsed.error();
    tags = std::move(*parsed);
  }
  if (object) {
    auto info =
        version ? store.StatObjectVersion(bucket, key, *version) : store.StatObject(bucket, key);
    if (!info.ok()) return info.error();
    TaggingReply reply;
    AddReadVersionHeader(reply.headers, store, bucket, version, *info);
    if (api == "GetObjectTagging") {
      reply.xml = TaggingXml(info->tags);
      return reply;
    }
    storage::PutOptions opts;
    opts.tags = std::move(tags);
    opts.update = storage::FieldBit(storage::VersionField::tags);
    // The version resolved above: a new latest version written meanwhile keeps its own tags.
    opts.version = info->version_id;
    auto updated = store.UpdateMetadata(bucket, key, opts);
    if (!updated.ok()) return updated.error();
    reply.status = api == "PutObjectTagging" ? 200 : 204;
    return reply;
  }
  if (api == "GetBucketTagging") {
    auto info = store.GetBucketInfo(bucket);
    if (!info.ok()) return info.error();
    if (info->tags.empty()) return MakeError(ErrorCode::kNoSuchTagSet);
    return TaggingReply{200, TaggingXml(info->tags), {}};
  }
  RS_RETURN_IF_ERROR(store.SetBucketTags(bucket, tags));
  // AWS answers PutBucketTagging 204, MinIO 200, and minio-js accepts only 200: a drop-in answers
  // as MinIO (docs/s3-api.md lists such choices). DeleteBucketTagging: 204 in both.
  return TaggingReply{api == "PutBucketTagging" ? 200 : 204, "", {}};
}

}  // namespace rdmastor::s3
