// The RC (librdmacm) path of the verbs backend for inter-node transfers: what needs no device —
// connection private data, target addressing and origin policy, and a clear refusal where no RDMA
// device exists (this machine: ibv_get_device_list fails with ENOSYS; the standard build has no
// verbs at all).
#include <gtest/gtest.h>

#include "rdma/rc.h"
#include "rdma/token.h"

namespace rdmastor::rdma {
namespace {

TEST(RcConnectData, RoundTripsAndRejectsForeignData) {
  auto d = EncodeRcConnectData(0xabcdef);
  auto e = DecodeRcConnectData(d.data(), d.size());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(*e, 0xabcdefu);
  EXPECT_FALSE(DecodeRcConnectData(d.data(), 7).has_value());
  EXPECT_FALSE(DecodeRcConnectData(nullptr, 8).has_value());
  d[0] ^= 1;  // not our magic: another application's connection request
  EXPECT_FALSE(DecodeRcConnectData(d.data(), d.size()).has_value());
  // Private data longer than ours (rdma_cm pads it) still decodes.
  std::array<uint8_t, 56> padded{};
  auto ok = EncodeRcConnectData(7);
  std::copy(ok.begin(), ok.end(), padded.begin());
  EXPECT_EQ(DecodeRcConnectData(padded.data(), padded.size()).value_or(0), 7u);
}

// An inter-node connect with a proof (issue 37 item 9): "RRC2", the endpoint, a length byte and
// the proof; what rdma_cm delivers padded to 56 bytes decodes to the same proof.
TEST(RcConnectData, CarriesAProofWithinTheConnectRequest) {
  std::vector<uint8_t> proof(40);
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<uint8_t>(i * 7 + 1);
  auto d = EncodeRcConnectData(0x654321, proof);
  EXPECT_EQ(d.size(), 52u);
  EXPECT_LE(d.size(), 56u);  // IB/RoCE: a connect request's private data after rdma_cm's header
  EXPECT_EQ(DecodeRcConnectData(d.data(), d.size()).value_or(0), 0x654321u);
  EXPECT_EQ(DecodeRcConnectProof(d.data(), d.size()), proof);
  std::array<uint8_t, 56> padded{};
  std::copy(d.begin(), d.end(), padded.begin());
  EXPECT_EQ(DecodeRcConnectProof(padded.data(), padded.size()), proof);
  // Cut short, a length past the data, or a plain RRC1 connect: no proof.
  EXPECT_TRUE(DecodeRcConnectProof(d.data(), d.size() - 1).empty());
  auto plain = EncodeRcConnectData(0x654321);
  EXPECT_EQ(plain.size(), 8u);
  EXPECT_TRUE(DecodeRcConnectProof(plain.data(), plain.size()).empty());
  padded[8] = 45;  // more than kMaxConnectProof
  EXPECT_TRUE(DecodeRcConnectProof(padded.data(), padded.size()).empty());
}

TEST(RcTargetAddress, FromTokenWithOriginPolicy) {
  RemoteAddress a;
  a.has_gid = true;
  a.gid = Ipv4ToGid(0x7f000001);
  a.lid = 18515;
  a.qpn = 42;
  auto t = ResolveRcTarget(a, {"127.0.0.1"}, {});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->ip, 0x7f000001u);
  EXPECT_EQ(t->port, 18515);
  EXPECT_TRUE(ResolveRcTarget(a, {"::ffff:127.0.0.1"}, {}).ok());

  auto other = ResolveRcTarget(a, {"127.0.0.2"}, {});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kAccessDenied);
  EXPECT_TRUE(ResolveRcTarget(a, {"127.0.0.2"}, *soft::ParseCidrList("127.0.0.0/8")).ok());

  RemoteAddress no_gid = a;
  no_gid.has_gid = false;
  EXPECT_EQ(ResolveRcTarget(no_gid, {"127.0.0.1"}, {}).error().code, ErrorCode::kRDMANotSupported);
  RemoteAddress no_port = a;
  no_port.lid = 0;
  EXPECT_EQ(ResolveRcTarget(no_port, {"127.0.0.1"}, {}).error().code, ErrorCode::kRDMANotSupported);
}

TEST(RcFabric, WithoutDeviceRefusesClearly) {
  auto f = CreateVerbsRcFabric({});
  auto t = StartVerbsRcTarget("127.0.0.1", {});
  if (f.ok() && t.ok()) GTEST_SKIP() << "this host has an RDMA device; covered by the hw tests";
  if (!f.ok()) {
    EXPECT_EQ(f.error().code, ErrorCode::kRDMANotSupported);
    EXPECT_FALSE(f.error().message.empty());
  }
  if (!t.ok()) {
    EXPECT_FALSE(t.error().message.empty());
  }
}

}  // namespace
}  // namespace rdmastor::rdma
