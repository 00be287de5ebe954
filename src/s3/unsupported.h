// Requests for features rdmastor does not have. Each is refused the way AWS / MinIO refuse an
// unsupported feature (501 NotImplemented, 400 for an invalid value) instead of being accepted
// and silently dropped, so a client never believes something happened that did not.
#pragma once

#include <string_view>

#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::s3 {

// x-amz-storage-class: STANDARD and REDUCED_REDUNDANCY (MinIO's two classes, each a parity:
// erasure/layout.h) are accepted. Any other value, including AWS classes such as GLACIER this
// server does not offer, is 400 InvalidStorageClass, as MinIO answers.
Status CheckStorageClass(const HttpRequest& req);

// Every refusal for the request routed to `api` (MinIO's API name: "PutObject", "PutBucket",
// "DeleteBucket", "ListenNotification", ...); ok when nothing unsupported was asked for.
Status RefuseUnimplemented(std::string_view api, const HttpRequest& req);

}  // namespace rdmastor::s3
