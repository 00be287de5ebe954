#include "s3/unsupported.h"

#include <string>

namespace rdmastor::s3 {

namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool HeaderIsTrue(const HttpRequest& req, std::string_view name) {
  const std::string* v = req.FindHeader(name);
  return v && EqualsNoCase(*v, "true");
}

Error NotImplemented(std::string message) {
  return MakeError(ErrorCode::kNotImplemented, std::move(message));
}

// The requests that create an object version and so carry its properties (class, lock).
bool CreatesObject(std::string_view api) {
  return api == "PutObject" || api == "CopyObject" || api == "NewMultipartUpload";
}

}  // namespace

Status CheckStorageClass(const HttpRequest& req) {
  const std::string* sc = req.FindHeader("x-amz-storage-class");
  if (!sc || sc->empty() || *sc == "STANDARD" || *sc == "REDUCED_REDUNDANCY") return {};
  return MakeError(ErrorCode::kInvalidStorageClass);
}

Status RefuseUnimplemented(std::string_view api, const HttpRequest& req) {
  if (CreatesObject(api)) {
    if (auto st = CheckStorageClass(req); !st.ok()) return st;
  }
  if (api == "PutObject" && HeaderIsTrue(req, "x-amz-meta-snowball-auto-extract"))
    return NotImplemented("Snowball auto-extract of archives is not implemented by rdmastor.");
  if (api == "ListenNotification")
    return NotImplemented("Listening for bucket notifications is not implemented by rdmastor.");
  return {};
}

}  // namespace rdmastor::s3
