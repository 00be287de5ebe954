#include "common/error_code.h"

#include <array>

namespace rdmastor {

namespace {
constexpr ErrorInfo kErrorTable[] = {
#define RDMASTOR_TABLE_ENTRY(name, code, status, msg) ErrorInfo{code, status, msg},
    RDMASTOR_ERROR_CODES(RDMASTOR_TABLE_ENTRY)
#undef RDMASTOR_TABLE_ENTRY
};
}  // namespace

const ErrorInfo& GetErrorInfo(ErrorCode code) { return kErrorTable[static_cast<size_t>(code)]; }

}  // namespace rdmastor
