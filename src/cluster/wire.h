// JSON forms of what peer RPC carries (storage calls, lock calls, the configuration check), and
// errors as HTTP: an Error travels as its HTTP status, an `x-rdmastor-error` header with the S3
// code text and the message as body, and is decoded back into the same ErrorCode.
#pragma once

#include <string>

#include "cluster/dsync.h"
#include "common/result.h"
#include "storage/drive.h"

namespace rdmastor::cluster {

inline constexpr const char* kErrorHeader = "x-rdmastor-error";

std::string EncodeListOptions(const storage::ListOptions& o);
Result<storage::ListOptions> DecodeListOptions(const std::string& text);
std::string EncodeListResult(const storage::ListResult& r);
Result<storage::ListResult> DecodeListResult(const std::string& text);
std::string EncodeCommitPlan(const storage::fsutil::CommitPlan& p);
Result<storage::fsutil::CommitPlan> DecodeCommitPlan(const std::string& text);
std::string EncodeLockArgs(const LockArgs& a);
Result<LockArgs> DecodeLockArgs(const std::string& text);
std::string EncodeStrings(const std::vector<std::string>& v);
Result<std::vector<std::string>> DecodeStrings(const std::string& text);

// The ErrorCode whose S3 code text is `name` (kInternalError when unknown).
ErrorCode ErrorCodeFromName(const std::string& name);

}  // namespace rdmastor::cluster
