// The checksums of CompleteMultipartUpload, checked where the stored parts are known (under the
// upload's lock): the client's per-part Checksum<ALGO> values against what each part stored, its
// x-amz-checksum-<algo> / x-amz-checksum-type against the upload's, and the object's value computed
// from the parts' values (composite "-N", or the full-object CRC combined from the parts' CRCs).
// Codes and messages are AWS's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "storage/object_layer.h"
#include "storage/object_meta.h"

namespace rdmastor::storage {

// CompleteMultipartUpload naming a part that was not uploaded, or with another ETag (or a
// checksum the upload keeps none of): InvalidPart with AWS's message and the details it adds.
Error InvalidPartError(const std::string& upload_id, const CompletePart& part);

// `parts` as the client listed them (after repeated numbers were collapsed), `stored` the part
// each one names, in the same order. Returns what the object records: algorithm -> base64 value
// (empty for an upload created without a checksum algorithm).
Result<std::map<std::string, std::string>> CompleteChecksums(
    const UploadRecord& upload, const std::string& upload_id,
    const std::vector<CompletePart>& parts, const std::vector<PartInfo>& stored,
    const CompleteChecksum& declared);

}  // namespace rdmastor::storage
