// S3-over-RDMA settings, error mapping and (RDMA build) verbs helpers that need no device.
#include "rdma/settings.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "rdma/build_info.h"
#include "rdma/transfer.h"
#include "rdma/verbs_plan.h"
#ifdef RDMASTOR_WITH_RDMA
#include "rdma/verbs/verbs_fabric.h"
#endif

namespace rdmastor::rdma {
namespace {

TEST(RdmaSettingsTest, FabricDefaultsAndValues) {
  auto def = ParseRdmaSettings({});
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->fabric, BuiltWithVerbs() ? FabricKind::kVerbs : FabricKind::kOff);
  EXPECT_EQ(ParseRdmaSettings({{"MINIO_RDMA_FABRIC", "soft"}})->fabric, FabricKind::kSoft);
  EXPECT_EQ(ParseRdmaSettings({{"MINIO_RDMA_FABRIC", "OFF"}})->fabric, FabricKind::kOff);
  auto bad = ParseRdmaSettings({{"MINIO_RDMA_FABRIC", "tcp"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("MINIO_RDMA_FABRIC"), std::string::npos);
  auto verbs = ParseRdmaSettings({{"MINIO_RDMA_FABRIC", "verbs"}});
  EXPECT_EQ(verbs.ok(), BuiltWithVerbs());
  auto allow = ParseRdmaSettings({{"MINIO_RDMA_SOFT_ALLOW", "10.0.0.0/8 192.168.1.7"}});
  ASSERT_TRUE(allow.ok());
  EXPECT_EQ(allow->soft_allow.size(), 2u);
  auto bad_allow = ParseRdmaSettings({{"MINIO_RDMA_SOFT_ALLOW", "10.0.0.0/40"}});
  ASSERT_FALSE(bad_allow.ok());
  EXPECT_NE(bad_allow.error().message.find("MINIO_RDMA_SOFT_ALLOW"), std::string::npos);
}

TEST(RdmaSettingsTest, RcPortInBothBuilds) {
  EXPECT_EQ(ParseRdmaSettings({})->rc_port, 9100);
  EXPECT_EQ(ParseRdmaSettings({{"MINIO_RDMA_RC_PORT", "9200"}})->rc_port, 9200);
  EXPECT_EQ(ParseRdmaSettings({{"MINIO_RDMA_RC_PORT", "off"}})->rc_port, 0);
  for (const char* bad : {"0", "65536", "x", "-1", "OFF1"}) {
    auto r = ParseRdmaSettings({{"MINIO_RDMA_RC_PORT", bad}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("MINIO_RDMA_RC_PORT='"), std::string::npos) << bad;
  }
  // Live in the standard build too (the soft fabric serves RC): not in its start-up warning.
  auto names = ParseRdmaSettings({})->live_names;
  EXPECT_NE(std::find(names.begin(), names.end(), "MINIO_RDMA_RC_PORT"), names.end());
}

TEST(RdmaSettingsTest, VerbsKnobsValidatedOnTheRdmaBuild) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "standard build: verbs settings are compiled out";
  auto s = ParseRdmaSettings({{"MINIO_RDMA_DEVICE", "mlx5_1"},
                              {"MINIO_RDMA_PORT", "2"},
                              {"MINIO_RDMA_GID_INDEX", "3"},
                              {"MINIO_RDMA_DC_KEY", "0x1234"},
                              {"MINIO_RDMA_NUM_DCIS", "4"},
                              {"MINIO_RDMA_CQ_DEPTH", "256"},
                              {"MINIO_RDMA_TRAFFIC_CLASS", "106"},
                              {"MINIO_RDMA_SERVICE_LEVEL", "3"},
                              {"MINIO_RDMA_PKEY_INDEX", "1"},
                              {"MINIO_RDMA_TIMEOUT", "18"}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->verbs.traffic_class, 106);
  EXPECT_EQ(s->verbs.service_level, 3);
  EXPECT_EQ(s->verbs.pkey_index, 1);
  EXPECT_EQ(s->verbs.timeout, 18);
  EXPECT_EQ(ParseRdmaSettings({})->verbs.timeout, 14);
  EXPECT_EQ(s->verbs.device, "mlx5_1");
  EXPECT_EQ(s->verbs.port, 2);
  EXPECT_EQ(s->verbs.gid_index, 3);
  EXPECT_EQ(s->verbs.dc_key, 0x1234u);
  EXPECT_EQ(s->verbs.num_dcis, 4);
  EXPECT_EQ(s->verbs.cq_depth, 256);
  EXPECT_EQ(ParseRdmaSettings({})->verbs.dc_key, 0xffeeddccu);
  EXPECT_EQ(ParseRdmaSettings({})->verbs.num_dcis, 64);
  auto rails = ParseRdmaSettings({{"MINIO_RDMA_DEVICE", "mlx5_0,mlx5_1"}});
  ASSERT_TRUE(rails.ok()) << rails.error().message;
  EXPECT_EQ(rails->verbs.device, "mlx5_0,mlx5_1");
  // The origin check: on by default; MINIO_RDMA_ALLOW adds networks, "any" turns it off.
  EXPECT_TRUE(ParseRdmaSettings({})->verbs.origin_check);
  auto allow = ParseRdmaSettings({{"MINIO_RDMA_ALLOW", "192.168.50.0/24, 10.1.1.1"}});
  ASSERT_TRUE(allow.ok()) << allow.error().message;
  EXPECT_TRUE(allow->verbs.origin_check);
  EXPECT_EQ(allow->verbs.allow.size(), 2u);
  EXPECT_FALSE(ParseRdmaSettings({{"MINIO_RDMA_ALLOW", "any"}})->verbs.origin_check);
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"MINIO_RDMA_PORT", "0"},
                                                        {"MINIO_RDMA_PORT", "x"},
                                                        {"MINIO_RDMA_GID_INDEX", "256"},
                                                        {"MINIO_RDMA_NUM_DCIS", "0"},
                                                        {"MINIO_RDMA_NUM_DCIS", "5000"},
                                                        {"MINIO_RDMA_CQ_DEPTH", "8"},
                                                        {"MINIO_RDMA_DC_KEY", "0xzz"},
                                                        {"MINIO_RDMA_TRAFFIC_CLASS", "256"},
                                                        {"MINIO_RDMA_SERVICE_LEVEL", "16"},
                                                        {"MINIO_RDMA_PKEY_INDEX", "65536"},
                                                        {"MINIO_RDMA_TIMEOUT", "0"},
                                                        {"MINIO_RDMA_TIMEOUT", "32"},
                                                        {"MINIO_RDMA_DEVICE", "../etc"},
                                                        {"MINIO_RDMA_DEVICE", "mlx5_0,../x"},
                                                        {"MINIO_RDMA_DEVICE", ",,"},
                                                        {"MINIO_RDMA_ALLOW", "10.0.0.0/33"},
                                                        {"MINIO_RDMA_ALLOW", "everyone"}}) {
    auto r = ParseRdmaSettings({{name, value}});
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_NE(r.error().message.find(name), std::string::npos);
  }
}

TEST(CompletionErrorTest, MapsToS3Errors) {
  EXPECT_EQ(CompletionError(WcStatus::kRemoteAccessError, false, "").code,
            ErrorCode::kInvalidRDMAToken);
  EXPECT_EQ(CompletionError(WcStatus::kRemoteAccessError, true, "").code,
            ErrorCode::kInvalidRDMAToken);
  EXPECT_EQ(CompletionError(WcStatus::kRetryExceeded, false, "").code,
            ErrorCode::kRDMANotSupported);
  // Silently dropped packets: the message names what drops them on DC.
  auto dropped = CompletionError(WcStatus::kRetryExceeded, false, "").message;
  EXPECT_NE(dropped.find("MINIO_RDMA_DC_KEY"), std::string::npos) << dropped;
  EXPECT_NE(dropped.find("MINIO_RDMA_PKEY_INDEX"), std::string::npos) << dropped;
  EXPECT_EQ(CompletionError(WcStatus::kRetryExceeded, true, "").code,
            ErrorCode::kRDMATransferFailed);
  EXPECT_EQ(CompletionError(WcStatus::kFlushed, true, "x").code, ErrorCode::kRDMATransferFailed);
  EXPECT_NE(CompletionError(WcStatus::kRemoteOperationError, true, "wr 3").message.find("wr 3"),
            std::string::npos);
}

// Issue 37 item 7: a NAK invalid request is the client port refusing packets larger than its
// MTU, not a bad token: 501 RDMAPathMTUMismatch (the client may redo it without a token) before
// any byte moved, 500 (retried by SDKs) after; both name the MTU cap.
TEST(CompletionErrorTest, RemoteInvalidRequestNamesThePathMtu) {
  auto before = CompletionError(WcStatus::kRemoteInvalidRequest, false, "wr 0");
  EXPECT_EQ(before.code, ErrorCode::kRDMAPathMTUMismatch);
  EXPECT_EQ(GetErrorInfo(before.code).http_status, 501);
  EXPECT_EQ(GetErrorInfo(before.code).code, "RDMAPathMTUMismatch");
  EXPECT_TRUE(IsRdmaDecline(before.code));  // x-amz-rdma-reply: 501, counted as declined
  EXPECT_NE(before.message.find("MINIO_RDMA_MTU_MAX"), std::string::npos) << before.message;
  EXPECT_NE(before.message.find("wr 0"), std::string::npos) << before.message;
  auto after = CompletionError(WcStatus::kRemoteInvalidRequest, true, "");
  EXPECT_EQ(after.code, ErrorCode::kRDMATransferFailed);
  EXPECT_NE(after.message.find("path MTU"), std::string::npos) << after.message;
  EXPECT_FALSE(IsRdmaDecline(ErrorCode::kInvalidRDMAToken));
  EXPECT_FALSE(IsRdmaDecline(ErrorCode::kNotImplemented));
}

TEST(RdmaSettingsTest, MtuMaxIsAPathMtuInBytes) {
  if (!BuiltWithVerbs()) GTEST_SKIP() << "standard build: verbs settings are compiled out";
  auto d = ParseRdmaSettings({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verbs.mtu_max, 4096);
  for (int bytes : {256, 512, 1024, 2048, 4096}) {
    auto s = ParseRdmaSettings({{"MINIO_RDMA_MTU_MAX", std::to_string(bytes)}});
    ASSERT_TRUE(s.ok()) << bytes;
    EXPECT_EQ(s->verbs.mtu_max, bytes);
  }
  // Empty is unset, as for every MINIO_RDMA_* variable.
  auto empty = ParseRdmaSettings({{"MINIO_RDMA_MTU_MAX", ""}});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->verbs.mtu_max, 4096);
  for (const char* bad : {"0", "128", "1500", "9000", "8192", "4k", "0x400x"}) {
    auto s = ParseRdmaSettings({{"MINIO_RDMA_MTU_MAX", bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message.find("MINIO_RDMA_MTU_MAX"), std::string::npos);
  }
}

TEST(NoDeviceTest, UnavailableServiceAnswersNotSupported) {
  RdmaSettings s;
  s.fabric = FabricKind::kOff;
  auto svc = CreateS3RdmaService(s);
  ASSERT_TRUE(svc);
  EXPECT_FALSE(svc->available());
  RdmaToken t;
  auto r = svc->PushToClient(t, {"127.0.0.1"}, 10,
                             [](uint64_t, char*, size_t) { return Result<size_t>(size_t{0}); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kRDMANotSupported);
  if (BuiltWithVerbs()) {
    // This machine has no device (ENOSYS): the verbs fabric reports it, never hangs.
    auto f = CreateVerbsFabric({});
    if (!f.ok()) {
      EXPECT_EQ(f.error().code, ErrorCode::kRDMANotSupported);
      EXPECT_FALSE(f.error().message.empty());
    }
  }
}

TEST(NoDeviceTest, ClientDcTargetWithoutADeviceIsNotSupported) {
  // The client library's verbs target: on the standard build it is compiled out, on the RDMA build
  // without a device it says why; both as RDMANotSupported, never a hang or a crash.
  auto t = StartVerbsDcTarget({});
  if (t.ok()) GTEST_SKIP() << "an RDMA device is present: the no-device path cannot run here";
  EXPECT_EQ(t.error().code, ErrorCode::kRDMANotSupported);
  if (BuiltWithVerbs())
    EXPECT_NE(t.error().message.find("device"), std::string::npos) << t.error().message;
  else
    EXPECT_NE(t.error().message.find("standard build"), std::string::npos) << t.error().message;
}

#ifdef RDMASTOR_WITH_RDMA
TEST(VerbsHelpersTest, WcStatusMirrorsIbv) {
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_SUCCESS), WcStatus::kSuccess);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_REM_ACCESS_ERR), WcStatus::kRemoteAccessError);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_RETRY_EXC_ERR), WcStatus::kRetryExceeded);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_WR_FLUSH_ERR), WcStatus::kFlushed);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_REM_OP_ERR), WcStatus::kRemoteOperationError);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_LOC_PROT_ERR), WcStatus::kLocalProtectionError);
  EXPECT_EQ(verbs::FromIbvStatus(IBV_WC_MW_BIND_ERR), WcStatus::kGeneralError);
}

TEST(VerbsHelpersTest, AddressHandleFromToken) {
  auto roce = ParseToken(
      "00007f1234567000:00100000:deadbeef:0000:00abcd:1:00000000000000000000ffff0a000102");
  ASSERT_TRUE(roce.ok());
  auto a = verbs::AhAttrFor(RemoteAddress::FromToken(*roce), 1, 3);
  EXPECT_EQ(a.is_global, 1);
  EXPECT_EQ(a.dlid, 0);
  EXPECT_EQ(a.port_num, 1);
  EXPECT_EQ(a.grh.sgid_index, 3);
  EXPECT_EQ(a.grh.dgid.raw[10], 0xff);
  EXPECT_EQ(a.grh.dgid.raw[15], 0x02);
  auto ib = ParseToken(
      "00007f1234567000:00100000:deadbeef:0011:00abcd:0:00000000000000000000000000000000");
  auto b = verbs::AhAttrFor(RemoteAddress::FromToken(*ib), 2, 0);
  EXPECT_EQ(b.is_global, 0);
  EXPECT_EQ(b.dlid, 0x11);
  EXPECT_EQ(RemoteAddress::FromToken(*ib).qpn, 0xabcdu);
}

TEST(VerbsHelpersTest, AccessFlags) {
  EXPECT_EQ(verbs::IbvAccess(kRemoteWrite), IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
  EXPECT_EQ(verbs::IbvAccess(kRemoteRead), IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(verbs::IbvAccess(kLocalWrite), IBV_ACCESS_LOCAL_WRITE);
}
#endif

}  // namespace
}  // namespace rdmastor::rdma

namespace rdmastor::rdma {
namespace {

// What a test says about its fabric's device; read by the service's monitor thread.
struct DeviceStateForTest {
  std::mutex mu;
  std::string unavailable;
  bool reopen = false;
  void Set(std::string why, bool dead) {
    std::lock_guard lock(mu);
    unavailable = std::move(why);
    reopen = dead;
  }
};

// A soft fabric whose device state the test sets: stands for a verbs fabric whose device events
// or looks (OnAsyncEvent, ObserveDevice) found it degraded or down. Its RC listener is the soft
// one, so a test sees it stop and start again.
class EventedSoftFabric final : public Fabric {
 public:
  explicit EventedSoftFabric(DeviceStateForTest* state) : state_(state) {}
  std::string_view name() const override { return "verbs"; }
  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* a, size_t n, unsigned acc) override {
    return soft_.RegisterMemory(a, n, acc);
  }
  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& r,
                                            const RequestOrigin& o) override {
    return soft_.Connect(r, o);
  }
  Result<std::unique_ptr<RcListener>> ListenRc(const std::string& ip, uint16_t port,
                                               RcAdmission a) override {
    return soft_.ListenRc(ip, port, std::move(a));
  }
  std::string Unavailable() const override {
    std::lock_guard lock(state_->mu);
    return state_->unavailable;
  }
  bool NeedsReopen() const override {
    std::lock_guard lock(state_->mu);
    return state_->reopen;
  }

 private:
  soft::SoftFabric soft_;
  DeviceStateForTest* state_;
};

// A fabric whose origin check declines every token (as the verbs fabric does for a RoCE v2 GID
// that is not the requester's address).
class OriginDecliningFabric final : public Fabric {
 public:
  std::string_view name() const override { return "verbs"; }
  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* a, size_t n, unsigned acc) override {
    return soft_.RegisterMemory(a, n, acc);
  }
  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& r,
                                            const RequestOrigin& o) override {
    auto st = VerbsOriginCheck(true, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9},
                               o.remote_ip, {}, true);
    if (!st.ok()) return st.error();
    return soft_.Connect(r, o);
  }

 private:
  soft::SoftFabric soft_;
};

TEST(OriginDeclineTest, AnsweredWith501AndCounted) {
  S3RdmaService svc(std::make_unique<OriginDecliningFabric>(), "");
  ASSERT_TRUE(svc.available());
  RdmaToken t;
  t.rsize = 10;
  for (int i = 0; i < 3; ++i) {
    auto r = svc.PushToClient(t, {"10.0.0.7"}, 10,
                              [](uint64_t, char*, size_t) { return Result<size_t>(size_t{0}); });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kRDMANotSupported);  // the client falls back to TCP
    EXPECT_NE(r.error().message.find("10.0.0.9"), std::string::npos) << r.error().message;
  }
  auto body = svc.PullFromClient(t, {"::ffff:10.0.0.7"});
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_EQ(svc.stats().origin_declined.load(), 4u);
}

// Waits (bounded) for cond; its last value.
template <class F>
bool Eventually(F cond, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!cond() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return cond();
}

ServiceOptions FastMonitor() {
  ServiceOptions o;
  o.device_look = std::chrono::milliseconds(10);
  o.reopen_first = std::chrono::milliseconds(10);
  o.reopen_cap = std::chrono::milliseconds(40);
  return o;
}

// Whether a TCP connection to 127.0.0.1:port is accepted (the soft RC listener).
bool Listening(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

TEST(DegradedFabricTest, PortDownAnswers501UntilThePortIsBack) {
  DeviceStateForTest old_dev;
  std::atomic<int> reopens{0};
  S3RdmaService svc(std::make_unique<EventedSoftFabric>(&old_dev), "", FastMonitor(),
                    [&]() -> Result<std::unique_ptr<Fabric>> {
                      ++reopens;
                      return MakeError(ErrorCode::kRDMANotSupported, "not asked for");
                    });
  ASSERT_TRUE(svc.available());
  EXPECT_EQ(svc.unavailable_reason(), "");
  old_dev.Set("port 1 is down", false);
  EXPECT_FALSE(svc.available());
  EXPECT_NE(svc.unavailable_reason().find("port 1 is down"), std::string::npos);
  RdmaToken t;
  t.rsize = 10;
  auto r = svc.PushToClient(t, {"127.0.0.1"}, 10,
                            [](uint64_t, char*, size_t) { return Result<size_t>(size_t{0}); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(r.error().message.find("degraded"), std::string::npos) << r.error().message;
  EXPECT_EQ(svc.Decline().details, r.error().details);  // RDMADeclineReason = degraded
  ASSERT_EQ(r.error().details.size(), 1u);
  EXPECT_EQ(r.error().details[0].second, "degraded");
  auto body = svc.PullFromClient(t, {"127.0.0.1"});
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.error().code, ErrorCode::kRDMANotSupported);
  // A port down is not a dead device: the fabric is kept, nothing is reopened.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(reopens.load(), 0);
  old_dev.Set("", false);
  EXPECT_TRUE(svc.available());
}

TEST(DegradedFabricTest, ARemovedDeviceIsFreedAtOnceAndReopenedWithItsRcListener) {
  DeviceStateForTest old_dev, new_dev;
  std::atomic<bool> device_back{false};
  std::atomic<int> reopens{0};
  auto svc = std::make_unique<S3RdmaService>(
      std::make_unique<EventedSoftFabric>(&old_dev), "", FastMonitor(),
      [&]() -> Result<std::unique_ptr<Fabric>> {
        ++reopens;
        if (!device_back) return MakeError(ErrorCode::kRDMANotSupported, "no device yet");
        return std::unique_ptr<Fabric>(new EventedSoftFabric(&new_dev));
      });
  ASSERT_TRUE(svc->ListenRc(0).ok());
  const uint16_t port = svc->rc_port();
  ASSERT_NE(port, 0);
  EXPECT_TRUE(Listening(port));
  // Removed: the monitor frees the listener and the fabric without waiting for a request, and
  // token requests get the degraded decline naming why.
  old_dev.Set("the RDMA device rxe0 was removed (rdma_cm reported DEVICE_REMOVAL)", true);
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
  EXPECT_FALSE(svc->available());
  EXPECT_EQ(svc->unavailable_reason(),
            "the verbs fabric is degraded: the RDMA device rxe0 was removed (rdma_cm reported "
            "DEVICE_REMOVAL)");
  ASSERT_EQ(svc->Decline().details.size(), 1u);
  EXPECT_EQ(svc->Decline().details[0].second, "degraded");
  EXPECT_EQ(svc->rc_port(), port);
  // Attempts back off while the device is away (10, 20, 40, 40 ms...): a few, not a spin.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(reopens.load(), 2);
  EXPECT_LE(reopens.load(), 12);
  // Back: serving again, the RC listener on the same port.
  device_back = true;
  EXPECT_TRUE(Eventually([&] { return svc->available(); }));
  EXPECT_EQ(svc->unavailable_reason(), "");
  EXPECT_TRUE(Listening(port));
  const int after = reopens.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(reopens.load(), after);  // nothing more to do
  svc.reset();  // the monitor stops
}

}  // namespace
}  // namespace rdmastor::rdma
