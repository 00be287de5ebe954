// x-amz-checksum-* on the S3 side: what a request declares (PutObject, UploadPart, aws-chunked
// trailers, CreateMultipartUpload, CompleteMultipartUpload), checked with the codes and messages
// AWS answers, and the response headers for GET/HEAD. The algebra lives in common/checksum.h,
// the checks of a Complete against the stored parts in storage/multipart_checksum.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/http_types.h"
#include "common/result.h"
#include "storage/object_layer.h"

namespace rdmastor::s3 {

// The checksum a body declares: x-amz-checksum-<algo> with its value, or an x-amz-trailer naming
// x-amz-checksum-<algo> (value in the aws-chunked trailer), or only x-amz-sdk-checksum-algorithm.
struct DeclaredChecksum {
  std::optional<hash::Algo> algo;
  std::string value;     // base64 from the header; empty: from the trailer or none
  bool trailer = false;  // the value comes in the trailer
};
Result<DeclaredChecksum> ParseDeclaredChecksum(const HttpRequest& req);

// Checks the declared value (header or trailer value `trailer_value`) against what was computed
// (raw digest); 400 BadDigest "The CRC32 you specified did not match the calculated checksum."
Status VerifyDeclaredChecksum(const DeclaredChecksum& declared, const std::string& trailer_value,
                              const std::string& computed_raw);

// UploadPart into an upload created with an algorithm: a part declaring another algorithm, or
// none for a COMPOSITE upload, is refused as AWS does ("Checksum Type mismatch occurred, ...").
// Returns the algorithm to compute for the part (the upload's, when it has one).
Result<std::optional<hash::Algo>> PartChecksumAlgo(const DeclaredChecksum& declared,
                                                   const std::string& upload_algo,
                                                   const std::string& upload_type);

// CreateMultipartUpload's x-amz-checksum-algorithm / x-amz-checksum-type: fills
// opts.checksum_algorithm (lower case) and opts.checksum_type, or AWS's InvalidRequest.
Status ParseMultipartChecksumHeaders(const HttpRequest& req, storage::PutOptions& opts);

// CompleteMultipartUpload: the per-part Checksum<ALGO> elements must be valid base64 of the
// algorithm's size and at most one per part (else 400 InvalidArgument "Invalid Base64 or multiple
// checksums present in request"); the x-amz-checksum-<algo> header (the object's value, composite
// ones possibly "-N") and x-amz-checksum-type are returned for the storage layer to check.
Status CheckCompletePartChecksums(const std::vector<storage::CompletePart>& parts);
Result<storage::CompleteChecksum> ParseCompleteChecksumHeaders(const HttpRequest& req);

// GET/HEAD with x-amz-checksum-mode: ENABLED: the stored checksums and x-amz-checksum-type.
void AddChecksumHeaders(HttpResponseHead& head, const std::map<std::string, std::string>& sums,
                        std::optional<checksum::Type> type = std::nullopt);

}  // namespace rdmastor::s3
