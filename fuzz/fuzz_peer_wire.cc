// The peer RPC decoder (src/cluster/wire.*): every request/response type of the call table, and
// the list/lock codecs. First byte: which decoder; the rest: the body as a peer sends it. What
// decodes must encode and decode again.
#include "cluster/wire.h"
#include "fuzz_util.h"

using namespace rdmastor;
using namespace rdmastor::cluster;

namespace {

template <class T>
void RoundTrip(const std::string& body) {
  auto v = DecodeRequest<T>(body);
  if (!v.ok()) return;
  auto again = DecodeRequest<T>(EncodeRequest(*v));
  fuzz::Check(again.ok(), "a decoded value does not decode after encoding");
}

using Decoder = void (*)(const std::string&);
#define RDMASTOR_FUZZ_DECODER(T, payload) &RoundTrip<T>,
const Decoder kDecoders[] = {RDMASTOR_PEER_WIRE_TYPES(RDMASTOR_FUZZ_DECODER)};
#undef RDMASTOR_FUZZ_DECODER
constexpr size_t kTypes = sizeof(kDecoders) / sizeof(kDecoders[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (64 << 10)) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t which = data[0] % (kTypes + 3);
  if (which < kTypes) {
    kDecoders[which](body);
  } else if (which == kTypes) {
    if (auto o = DecodeListOptions(body); o.ok())
      fuzz::Check(DecodeListOptions(EncodeListOptions(*o)).ok(), "list options round trip");
  } else if (which == kTypes + 1) {
    if (auto r = DecodeListResult(body); r.ok())
      fuzz::Check(DecodeListResult(EncodeListResult(*r)).ok(), "list result round trip");
  } else {
    if (auto a = DecodeLockArgs(body); a.ok())
      fuzz::Check(DecodeLockArgs(EncodeLockArgs(*a)).ok(), "lock args round trip");
  }
  (void)ErrorCodeFromName(body);
  return 0;
}
