#include "storage/drive.h"

#include "storage/paths.h"

namespace rdmastor::storage {

namespace rel {
std::string Sys() { return std::string(paths::kSysDir); }
std::string Tmp() { return paths::Join(Sys(), paths::kTmpDir); }
std::string Staging(std::string_view id) { return paths::Join(Tmp(), id); }
std::string MultipartRoot() { return paths::Join(Sys(), paths::kMultipartDir); }
std::string MultipartBucket(std::string_view bucket) {
  return paths::Join(MultipartRoot(), bucket);
}
std::string BucketsMeta() { return paths::Join(Sys(), paths::kBucketsDir); }
std::string BucketMeta(std::string_view bucket) {
  return paths::Join(BucketsMeta(), std::string(bucket) + ".json");
}
std::string Format() { return paths::Join(Sys(), "format.json"); }
}  // namespace rel

Status CheckRelPath(std::string_view p) {
  if (p.empty()) return {};
  if (p.front() == '/' || p.find('\0') != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "drive path must be relative: " + std::string(p));
  }
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t slash = p.find('/', pos);
    std::string_view seg =
        p.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (seg.empty() || seg == "..") {
      return MakeError(ErrorCode::kInvalidArgument,
                       "drive path has an empty or '..' segment: " + std::string(p));
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return {};
}

}  // namespace rdmastor::storage
