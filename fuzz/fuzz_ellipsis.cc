// MINIO_VOLUMES / drive arguments: MinIO's ellipsis syntax, one argument per line.
#include <vector>

#include "cli/ellipsis.h"
#include "fuzz_util.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  for (size_t pos = 0; pos <= in.size() && args.size() < 32;) {
    size_t nl = in.find('\n', pos);
    args.emplace_back(in.substr(pos, nl == in.npos ? in.npos : nl - pos));
    if (nl == in.npos) break;
    pos = nl + 1;
  }
  for (const auto& a : args)
    if (auto e = cli::ExpandEllipses(a); e.ok())
      fuzz::Check(!e->empty(), "an accepted expansion is empty");
  if (auto drives = cli::ExpandDriveArgs(args); drives.ok())
    fuzz::Check(!drives->empty(), "an accepted drive list is empty");
  return 0;
}
