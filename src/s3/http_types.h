// The HTTP request/response boundary types, defined in common/http_types.h, under their S3-layer
// names.
#pragma once

#include "common/http_types.h"

namespace rdmastor::s3 {

using rdmastor::BodySource;
using rdmastor::HeaderList;
using rdmastor::HttpRequest;
using rdmastor::HttpResponseHead;
using rdmastor::ResponseSink;

}  // namespace rdmastor::s3
