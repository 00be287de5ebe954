// The client library's HTTP transport and S3 client (public headers in include/rdmastor/); this
// name stays for the server-side users (cluster peers, CLIs, benchmarks, tests).
#pragma once

#include "rdmastor/http_transport.h"
#include "rdmastor/s3_client.h"
