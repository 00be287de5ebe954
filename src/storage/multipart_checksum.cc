#include "storage/multipart_checksum.h"

#include <optional>

#include "common/checksum.h"

namespace rdmastor::storage {

Error InvalidPartError(const std::string& upload_id, const CompletePart& part) {
  // The table's message is AWS's wording (two spaces after "found.").
  Error e = MakeError(ErrorCode::kInvalidPart);
  e.details.emplace_back("UploadId", upload_id);
  e.details.emplace_back("PartNumber", std::to_string(part.number));
  e.details.emplace_back("ETag", part.etag);
  return e;
}

namespace {

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
    if (!algo) {
      // No algorithm named at creation: each part got S3's default, a CRC64NVME (UploadPart
      // answered it, ListParts shows it), so a client may list it back and it must match. Any
      // other algorithm is InvalidPart, as AWS answers (SDKs that echo the CRC32 they added to
      // UploadPart get the same from AWS).
      auto it = stored[i].checksums.find(std::string(hash::ChecksumName(checksum::kDefaultAlgo)));
      if (sent_algo != hash::ChecksumName(checksum::kDefaultAlgo) ||
          it == stored[i].checksums.end() || it->second != sent_value)
        return InvalidPartError(upload_id, part);
      continue;
    }
    if (sent_algo != algo_name) {
      return MakeError(ErrorCode::kBadDigest, "The " + sent_algo + " you specified for part " +
                                                  std::to_string(part.number) +
                                                  " did not match what we received.");
    }
    auto it = stored[i].checksums.find(algo_name);
    if (it == stored[i].checksums.end() || it->second != sent_value)
      return InvalidPartError(upload_id, part);
  }

  std::map<std::string, std::string> out;
  // An upload created without an algorithm gets S3's default, a full-object CRC64NVME combined
  // from the CRC64NVME each part got (checksum::kDefaultAlgo).
  const hash::Algo object_algo = algo ? *algo : checksum::kDefaultAlgo;
  const std::string object_name(hash::ChecksumName(object_algo));
  std::vector<checksum::PartChecksum> sums;
  for (const auto& p : stored) {
    auto it = p.checksums.find(object_name);
    std::optional<std::string> raw;
    if (it != p.checksums.end()) raw = checksum::DecodeValue(object_algo, it->second);
    // A part stored without that checksum (written before parts always got one, or one that
    // declared another algorithm): the object gets none rather than a wrong one.
    if (!raw) {
      if (!declared.algo.empty()) return Mismatch(declared.algo);
      return out;
    }
    sums.push_back({std::move(*raw), p.size});
  }
  auto value = checksum::MultipartValue(object_algo, type, sums);
  if (!value) return MakeError(ErrorCode::kInternalError, "cannot compute the upload's checksum");
  if (!declared.algo.empty()) {
    if (declared.algo != object_name) return Mismatch(declared.algo);
    // A composite value may be declared with or without its "-N".
    std::string want = declared.value;
    if (type == checksum::Type::kComposite && want.find('-') == std::string::npos)
      want += value->substr(value->find('-'));
    if (want != *value) return Mismatch(declared.algo);
  }
  out[object_name] = *value;
  return out;
}

}  // namespace rdmastor::storage
