// x-amz-rdma-token: the strict codec, and that what it accepts formats back to the same text.
#include "fuzz_util.h"
#include "rdma/token.h"

using namespace rdmastor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = rdma::ParseToken(text);
  if (!t.ok()) return 0;
  fuzz::Check(t->raddr + t->rsize >= t->raddr, "accepted a wrapping buffer");
  std::string again = rdma::FormatToken(*t);
  fuzz::Check(again == text, "an accepted token does not format back to itself");
  auto t2 = rdma::ParseToken(again);
  fuzz::Check(t2.ok() && *t2 == *t, "format/parse round trip");
  if (auto ip = rdma::GidToIpv4(t->gid)) fuzz::Check(rdma::Ipv4ToGid(*ip) == t->gid, "gid round trip");
  return 0;
}
