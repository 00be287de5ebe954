// Multi-rail (rdma/rails.h) over real soft fabrics: the rail is chosen per request, memory is
// registered on every rail and a transfer on a rail other than 0 posts that rail's lkey (the soft
// initiator checks every lkey and its bounds, as a NIC does).
#include "rdma/rails.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "rdma/soft/soft_fabric.h"
#include "rdma/transfer.h"

namespace rdmastor::rdma {
namespace {

// A soft fabric that counts the endpoints it opened: which rail served a request.
class CountingSoftFabric final : public Fabric {
 public:
  std::string_view name() const override { return soft_.name(); }
  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* a, size_t n, unsigned acc) override {
    return soft_.RegisterMemory(a, n, acc);
  }
  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& r,
                                            const RequestOrigin& o) override {
    ++connects;
    return soft_.Connect(r, o);
  }
  std::atomic<int> connects{0};

 private:
  soft::SoftFabric soft_;
};

constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

TEST(RailsTest, EachRequestUsesTheRailOfItsTokensSubnetWithThatRailsKeys) {
  auto target = soft::SoftTarget::Start();
  ASSERT_TRUE(target.ok()) << target.error().message;
  auto a = std::make_unique<CountingSoftFabric>();
  auto b = std::make_unique<CountingSoftFabric>();
  CountingSoftFabric* rail0 = a.get();
  CountingSoftFabric* rail1 = b.get();
  // Rail 1 registers something first, so the same memory gets different lkeys on the two rails.
  std::vector<char> other(4096);
  auto pad = rail1->RegisterMemory(other.data(), other.size(), kLocalWrite);
  ASSERT_TRUE(pad.ok());
  std::vector<std::unique_ptr<Fabric>> fabrics;
  fabrics.push_back(std::move(a));
  fabrics.push_back(std::move(b));
  auto rails = MakeRailsFabric(std::move(fabrics), {{"rail0", {{Ip(10, 0, 0, 1), 8}}},
                                                     {"rail1", {{Ip(127, 0, 0, 1), 8}}}});
  EXPECT_EQ(rails->name(), "soft");

  const size_t n = (1 << 20) + 333;
  std::vector<char> src(n), back(n, 0), remote(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(i * 7 + 3);
  auto lsrc = rails->RegisterMemory(src.data(), n, kLocalWrite);
  auto lback = rails->RegisterMemory(back.data(), n, kLocalWrite);
  auto rmr = (*target)->RegisterMemory(remote.data(), n, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(lsrc.ok() && lback.ok() && rmr.ok());
  // The token's GID is ::ffff:127.0.0.1: rail 1's subnet.
  auto ep = rails->Connect((*target)->address(), RequestOrigin{"127.0.0.1", "10.0.0.1"});
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_EQ(rail1->connects, 1);
  EXPECT_EQ(rail0->connects, 0);
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), n, (*rmr)->rkey()};
  TransferOptions opt;
  opt.max_wr_bytes = 64 * 1024;
  {
    Transfer w(**ep, Opcode::kWrite, rb, opt);
    ASSERT_TRUE(w.Post(**lsrc, src.data(), n, 0).ok());
    auto st = w.Finish();
    ASSERT_TRUE(st.ok()) << st.error().message;  // rail 0's lkey here would be refused
  }
  {
    Transfer r(**ep, Opcode::kRead, rb, opt);
    ASSERT_TRUE(r.Post(**lback, back.data(), n, 0).ok());
    auto st = r.Finish();
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  EXPECT_EQ(remote, src);
  EXPECT_EQ(back, src);
  ep->reset();
  // A token no rail's subnet holds: the interface the request arrived on, else rail 0.
  RemoteAddress elsewhere = (*target)->address();
  elsewhere.has_gid = false;  // LID-only: no subnet to match
  auto ep0 = rails->Connect(elsewhere, RequestOrigin{"127.0.0.1", "10.0.0.1"});
  EXPECT_EQ(rail0->connects, 1);  // the soft fabric then refuses a token without a GID
  EXPECT_FALSE(ep0.ok());
  auto ep1 = rails->Connect(elsewhere, RequestOrigin{"127.0.0.1", "127.0.0.1"});
  EXPECT_EQ(rail1->connects, 2);
  // Regions deregister on every rail when dropped.
  lsrc->reset();
  lback->reset();
}

// DC and RC on one NIC (MakeDcRcFabric): a Connect (DC) goes to the DC fabric, the RC listener is
// the RC fabric's, and a connection a client opened there posts the RC fabric's lkey for memory
// registered through the pair (the two have their own protection domains on verbs; here the RC
// soft fabric registered something first, so its lkeys differ and a wrong one is refused).
TEST(RailsTest, DcAndRcOnOneNicRcConnectionsTranslateTheLkey) {
  auto dc_owned = std::make_unique<CountingSoftFabric>();
  auto rc_owned = std::make_unique<soft::SoftFabric>();
  CountingSoftFabric* dc = dc_owned.get();
  std::vector<char> other(4096);
  auto pad = rc_owned->RegisterMemory(other.data(), other.size(), kLocalWrite);
  ASSERT_TRUE(pad.ok());
  auto f = MakeDcRcFabric(std::move(dc_owned), std::move(rc_owned));
  std::mutex mu;
  std::unique_ptr<Endpoint> admitted;
  RcAdmission adm;
  adm.can_admit = [](uint32_t) { return Status(); };
  adm.admit = [&](const RcPeer&, std::unique_ptr<Endpoint> ep,
                  uint64_t proposed) -> Result<uint64_t> {
    std::lock_guard lock(mu);
    admitted = std::move(ep);
    return proposed ? proposed : 7;
  };
  auto listener = f->ListenRc("127.0.0.1", 0, adm);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  auto target = soft::SoftTarget::Start();
  ASSERT_TRUE(target.ok()) << target.error().message;
  const size_t n = (1 << 20) + 77;
  std::vector<char> src(n), remote(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(i * 13 + 1);
  auto rmr = (*target)->RegisterMemory(remote.data(), n, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(rmr.ok());
  auto conn = (*target)->RcConnection(Ip(127, 0, 0, 1), (*listener)->port(), false);
  ASSERT_TRUE(conn.ok()) << conn.error().message;
  std::unique_ptr<Endpoint> ep;
  for (int i = 0; i < 500 && !ep; ++i) {
    {
      std::lock_guard lock(mu);
      ep = std::move(admitted);
    }
    if (!ep) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ep);
  auto lsrc = f->RegisterMemory(src.data(), n, kLocalWrite);
  ASSERT_TRUE(lsrc.ok());
  RemoteBuffer rb{reinterpret_cast<uint64_t>(remote.data()), n, (*rmr)->rkey()};
  TransferOptions opt;
  opt.max_wr_bytes = 64 * 1024;
  {
    Transfer w(*ep, Opcode::kWrite, rb, opt);
    ASSERT_TRUE(w.Post(**lsrc, src.data(), n, 0).ok());
    auto st = w.Finish();
    ASSERT_TRUE(st.ok()) << st.error().message;  // the DC fabric's lkey here would be refused
  }
  EXPECT_EQ(remote, src);
  EXPECT_EQ(dc->connects, 0);
  // DC: the token's target, reached through the DC fabric.
  auto dc_ep = f->Connect((*target)->address(), RequestOrigin{"127.0.0.1"});
  ASSERT_TRUE(dc_ep.ok()) << dc_ep.error().message;
  EXPECT_EQ(dc->connects, 1);
  ep.reset();
  dc_ep->reset();
  lsrc->reset();
}

}  // namespace
}  // namespace rdmastor::rdma
