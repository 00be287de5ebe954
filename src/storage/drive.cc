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

Status CheckRenameDataRequest(const RenameDataRequest& req) {
  const std::string tmp = rel::Tmp() + "/";
  if (req.staging.size() <= tmp.size() || !req.staging.starts_with(tmp) ||
      req.staging.find('/', tmp.size()) != std::string::npos)
    return MakeError(ErrorCode::kInvalidArgument, "not a staging directory: " + req.staging);
  if (!paths::IsMetaFileName(req.meta_name) ||
      (!req.data_name.empty() && !paths::IsDataDirName(req.data_name)))
    return MakeError(ErrorCode::kInvalidArgument, "commit names not of the drive layout: meta '" +
                                                      req.meta_name + "', data '" + req.data_name +
                                                      "'");
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(req.bucket));
  RS_RETURN_IF_ERROR(CheckRelPath(req.staging));
  return CheckRelPath(req.key_dir);
}

}  // namespace rdmastor::storage
