// Object and bucket tagging: the x-amz-tagging header, the <Tagging> XML document, AWS's limits,
// and the ?tagging subresource handlers (Put/Get/DeleteObjectTagging, Put/Get/DeleteBucketTagging).
// Tags are kept by the object layer in one canonical string, the URL-encoded query form with
// keys sorted ("k1=v1&k2=v2"; ObjectInfo::tags / BucketInfo::tags); "" means no tags.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

inline constexpr size_t kMaxObjectTags = 10;
inline constexpr size_t kMaxBucketTags = 50;

// The x-amz-tagging header of PutObject / CreateMultipartUpload / CopyObject (REPLACE), checked
// against the object limits; returns the canonical form.
Result<std::string> ParseTaggingHeader(std::string_view header);

// A <Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging> document (the ?tagging
// bodies; PostObject's `tagging` field), checked against the object or the bucket limits.
Result<std::string> ParseTaggingXml(std::string_view body, bool object);

// The tags CopyObject gives its destination: the source's (x-amz-tagging-directive COPY, the
// default) or the request's x-amz-tagging (REPLACE; none when the header is absent).
Result<std::string> CopyObjectTags(const HttpRequest& req, const std::string& source_tags);

// Number of tags in a canonical tag string (x-amz-tagging-count).
size_t TagCount(std::string_view canonical);

// What a tagging handler answers: `status` with `xml` as the body ("" = no body).
struct TaggingReply {
  int status = 200;
  std::string xml;
  HeaderList headers;  // x-amz-version-id of the object version
};

// Runs the tagging operation `api` (PutObjectTagging, GetBucketTagging, ...: s3/operations.h) on bucket/key, on its `version` for object
// tagging (nullopt: the latest; a version that is not there: NoSuchVersion; a delete marker:
// MethodNotAllowed, as for reads). `read_body` reads the request's XML document (PUT only).
Result<TaggingReply> HandleTagging(storage::ObjectLayer& store, std::string_view api,
                                   const std::string& bucket, const std::string& key,
                                   const storage::VersionSel& version,
                                   const std::function<Result<std::string>()>& read_body);

}  // namespace rdmastor::s3
