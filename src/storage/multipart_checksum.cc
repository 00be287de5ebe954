#include "storage/multipart_checksum.h"

#include <optional>

#include "common/checksum.h"

namespace rdmastor::storage {

namespace {

Error InvalidPart(const std::string& upload_id, const CompletePart& part) {
  // AWS's wording (two spaces after "found."), and the details it adds.
  Error e = MakeError(ErrorCode::kInvalidPart,
                      "One or more of the specified parts could not be found.  The part may not "
                      "have been uploaded, or the specified entity tag may not match the part's "
                      "entity tag.");
  e.details.emplace_back("UploadId", upload_id);
  e.details.emplace_back("PartNumber", std::to_string(part.number));
  e.details.emplace_back("ETag", part.etag);
  return e;
}

Error Mismatch(const std::string& algo) {
  return MakeError(ErrorCode::kBadDigest,
                   "The " + algo + " you specified did not match the calculated checksum.");
}

}  // namespace

Result<std::map<std::string, std::string>> CompleteChecksums(
    const UploadRecord& upload, const std::string& upload_id,
    const std::vector<CompletePart>& parts, const std::vector<PartInfo>& stored,
    const CompleteChecksum& declared) {
  const std::string& algo_name = upload.checksum_algorithm;
  const auto algo = hash::ChecksumAlgoFromName(algo_name);
  const checksum::Type type =
      algo ? checksum::TypeFromName(upload.checksum_type)
                 .value_or(checksum::DefaultMultipartType(*algo))
           : checksum::Type::kFullObject;
  if (algo && !declared.type.empty() && declared.type != checksum::TypeName(type)) {
    return MakeError(ErrorCode::kInvalidRequest,
                     "The upload was created using the " + std::string(checksum::TypeName(type)) +
                         " checksum mode. The complete request must use the same checksum mode.");
  }
  for (size_t i = 0; i < parts.size() && i < stored.size(); ++i) {
    const CompletePart& part = parts[i];
    if (part.checksums.empty()) {
      // A composite value is built from the client's part values: each one must be listed.
      if (algo && type == checksum::Type::kComposite) {
        return MakeError(ErrorCode::kInvalidRequest,
                         "The upload was created using a " + algo_name +
                             " checksum. The complete request must include the checksum for each "
                             "part. It was missing for part " +
                             std::to_string(part.number) + " in the request.");
      }
      continue;
    }
    const auto& [sent_algo, sent_value] = *part.checksums.begin();
    if (!algo) return InvalidPart(upload_id, part);  // the upload keeps no part checksums
    if (sent_algo != algo_name) {
      return MakeError(ErrorCode::kBadDigest, "The " + sent_algo + " you specified for part " +
                                                  std::to_string(part.number) +
                                                  " did not match what we received.");
    }
    auto it = stored[i].checksums.find(algo_name);
    if (it == stored[i].checksums.end() || it->second != sent_value)
      return InvalidPart(upload_id, part);
  }

  std::map<std::string, std::string> out;
  if (!algo) {
    if (!declared.algo.empty()) return Mismatch(declared.algo);
    return out;
  }
  std::vector<checksum::PartChecksum> sums;
  for (const auto& p : stored) {
    auto it = p.checksums.find(algo_name);
    std::optional<std::string> raw;
    if (it != p.checksums.end()) raw = checksum::DecodeValue(*algo, it->second);
    // A part stored without the upload's checksum (written before parts always got one): the
    // object gets none rather than a wrong one.
    if (!raw) {
      if (!declared.algo.empty()) return Mismatch(declared.algo);
      return out;
    }
    sums.push_back({std::move(*raw), p.size});
  }
  auto value = checksum::MultipartValue(*algo, type, sums);
  if (!value) return MakeError(ErrorCode::kInternalError, "cannot compute the upload's checksum");
  if (!declared.algo.empty()) {
    if (declared.algo != algo_name) return Mismatch(declared.algo);
    // A composite value may be declared with or without its "-N".
    std::string want = declared.value;
    if (type == checksum::Type::kComposite && want.find('-') == std::string::npos)
      want += value->substr(value->find('-'));
    if (want != *value) return Mismatch(declared.algo);
  }
  out[algo_name] = *value;
  return out;
}

}  // namespace rdmastor::storage
