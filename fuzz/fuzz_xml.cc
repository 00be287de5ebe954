// XML request bodies: DeleteObjects, CompleteMultipartUpload, CreateBucketConfiguration.
#include "fuzz_util.h"
#include "s3/xml.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 10)) return 0;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto d = s3::ParseDeleteXml(body); d.ok())
    fuzz::Check(d->objects.size() <= 1000, "DeleteObjects accepted more than 1000 keys");
  if (auto parts = s3::ParseCompleteMultipartXml(body); parts.ok())
    for (const auto& p : *parts)
      fuzz::Check(p.number >= 1 && p.number <= 10000, "part number out of range");
  (void)s3::ParseCreateBucketXml(body);
  (void)s3::ParseHttpDate(body);
  (void)s3::ErrorXml(body, body, body, "id");
  return 0;
}
