// The S3 error-code table lives in the public include/rdmastor/error_code.h (client errors carry
// these codes); this name stays for the server's many includes.
#pragma once

#include "rdmastor/error_code.h"
