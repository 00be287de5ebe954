// Result<T> / Error / Status live in the public include/rdmastor/result.h (the client library's
// API returns them); this name stays for the server's many includes.
#pragma once

#include "rdmastor/result.h"
