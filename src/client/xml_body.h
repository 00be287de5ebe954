// The client library's one reader of S3 XML response bodies (pugixml), for S3Client and
// RdmaS3Client alike: never substring search.
#pragma once

#include <pugixml.hpp>
#include <string_view>

#include "rdmastor/s3_client.h"

namespace rdmastor::client {

// An S3 response body as an XML document; `root` must be its document element. kInternalError
// naming `what` otherwise. The node lives as long as `doc`.
Result<pugi::xml_node> ParseXmlBody(pugi::xml_document& doc, const HttpResponse& resp,
                                    const char* root, std::string_view what);

}  // namespace rdmastor::client
