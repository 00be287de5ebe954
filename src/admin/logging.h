// Logging set-up (spdlog) and the per-request log line.
//
// RDMASTOR_LOG_LEVEL   trace|debug|info|warn|error|off (default info)
// RDMASTOR_LOG_FORMAT  text (default) | json: one JSON object per line
// RDMASTOR_LOG_REQUESTS on|off (default off): one info line per request
//
// Nothing logged may carry a secret: request targets go through RedactTarget(), headers are never
// logged, and credentials are only ever named ("from MINIO_ROOT_PASSWORD").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmastor::admin {

// Reads the three variables above from `env`, installs the stderr logger, and returns an error
// naming the variable when a value is invalid.
Status ConfigureLogging(const std::map<std::string, std::string>& env);

bool RequestLogEnabled();

// The request target with the values of query parameters that authenticate a presigned URL
// (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, and SigV2's Signature) replaced by
// "REDACTED". Parameter names compare case-insensitively.
std::string RedactTarget(std::string_view target);

struct RequestLogEntry {
  std::string_view request_id;
  std::string_view remote_ip;
  std::string_view method;
  std::string_view target;  // raw; redacted when logged
  std::string_view api;     // MinIO API name, or "" for health/metrics endpoints
  int status = 0;           // 0 = no response (client went away)
  uint64_t bytes_in = 0, bytes_out = 0;
  int64_t duration_us = 0;
};

// Logs one request at info level when RDMASTOR_LOG_REQUESTS=on (as structured fields in JSON
// format), otherwise at debug level.
void LogRequest(const RequestLogEntry& e);

}  // namespace rdmastor::admin
