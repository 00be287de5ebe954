// The staging-slot loop (rdma/staged_transfer.h) over the soft fabric against a real SoftTarget:
// WRITE through slots (Push), READ through slots (Pull), a source that ends early or fails, and a
// refused transfer.
#include "rdma/staged_transfer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "rdma/soft/soft_fabric.h"

namespace rdmastor::rdma {
namespace {

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) ^ (i >> 9));
  return v;
}

struct StagedTransferTest : ::testing::Test {
  void SetUp() override {
    auto t = soft::SoftTarget::Start();
    ASSERT_TRUE(t.ok()) << t.error().message;
    target = std::move(t).value();
    auto rmr = target->RegisterMemory(remote.data(), kRemote, kRemoteWrite | kRemoteRead);
    ASSERT_TRUE(rmr.ok()) << rmr.error().message;
    remote_mr = std::move(rmr).value();
    auto smr = fabric.RegisterMemory(staging.data(), staging.size(), kLocalWrite);
    ASSERT_TRUE(smr.ok()) << smr.error().message;
    staging_mr = std::move(smr).value();
    auto ep = fabric.Connect(target->address(), RequestOrigin{"127.0.0.1"});
    ASSERT_TRUE(ep.ok()) << ep.error().message;
    endpoint = std::move(ep).value();
    // Small work requests and window, so that one slot takes several requests.
    opt.max_wr_bytes = 4096;
    opt.max_outstanding = 4;
    opt.signal_interval = 2;
  }
  RemoteBuffer Remote(uint32_t rkey = 0) const {
    return {reinterpret_cast<uint64_t>(remote.data()), kRemote, rkey ? rkey : remote_mr->rkey()};
  }
  StagedTransfer Make(Opcode op, uint64_t length, size_t slot_bytes = kSlot, uint32_t rkey = 0) {
    return StagedTransfer(*endpoint, op, Remote(rkey), opt,
                          Staging{staging_mr.get(), staging.data(), staging.size(), slot_bytes},
                          length);
  }

  static constexpr size_t kRemote = 1 << 20;
  static constexpr size_t kSlot = 16 * 1024;
  soft::SoftFabric fabric;
  std::unique_ptr<soft::SoftTarget> target;
  std::vector<char> remote = std::vector<char>(kRemote + 64, 'G');  // guard bytes after it
  std::vector<char> staging = std::vector<char>(4 * kSlot);         // four slots
  std::unique_ptr<MemoryRegion> remote_mr, staging_mr;
  std::unique_ptr<Endpoint> endpoint;
  TransferOptions opt;
};

TEST_F(StagedTransferTest, PushFillsEverySlotInOrderAndReusesThem) {
  const size_t n = 10 * kSlot + 1234;  // the four slots go round more than twice
  auto src = Pattern(n, 1);
  std::vector<std::pair<uint64_t, size_t>> asked;
  std::map<char*, int> fills_per_slot;
  auto t = Make(Opcode::kWrite, n);
  auto moved = t.Push([&](uint64_t off, char* stage, size_t want) -> Result<size_t> {
    asked.emplace_back(off, want);
    ++fills_per_slot[stage];
    std::memcpy(stage, src.data() + off, want);
    return want;
  });
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  EXPECT_EQ(*moved, n);
  EXPECT_EQ(t.transfer().bytes_completed(), n);
  ASSERT_EQ(asked.size(), 11u);
  for (size_t i = 0; i < asked.size(); ++i) {
    EXPECT_EQ(asked[i].first, i * kSlot);
    EXPECT_EQ(asked[i].second, i + 1 < asked.size() ? kSlot : 1234u);
  }
  // Only the staging buffer's four slots were used, round robin.
  ASSERT_EQ(fills_per_slot.size(), 4u);
  EXPECT_EQ(fills_per_slot[staging.data()], 3);
  EXPECT_EQ(fills_per_slot[staging.data() + 3 * kSlot], 2);
  EXPECT_EQ(std::memcmp(remote.data(), src.data(), n), 0);
  EXPECT_EQ(remote[n], 'G');  // nothing past the length
}

TEST_F(StagedTransferTest, PushEndsWhereTheSourceEnds) {
  const size_t source = 2 * kSlot + 100;
  auto src = Pattern(source, 2);
  int calls = 0;
  auto t = Make(Opcode::kWrite, 8 * kSlot);
  auto moved = t.Push([&](uint64_t off, char* stage, size_t want) -> Result<size_t> {
    ++calls;
    size_t n = off >= source ? 0 : std::min<size_t>(want, source - off);
    std::memcpy(stage, src.data() + off, n);
    return n;
  });
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  EXPECT_EQ(*moved, source);
  EXPECT_EQ(t.length(), source);
  EXPECT_EQ(calls, 3);  // the short fill ends it: no fill is asked past the source's end
  EXPECT_EQ(std::memcmp(remote.data(), src.data(), source), 0);
  EXPECT_EQ(remote[source], 'G');
}

TEST_F(StagedTransferTest, PushReturnsTheFillsErrorAsItIs) {
  auto t = Make(Opcode::kWrite, 6 * kSlot);
  auto moved = t.Push([&](uint64_t off, char* stage, size_t want) -> Result<size_t> {
    if (off >= 2 * kSlot) return MakeError(ErrorCode::kSlowDown, "source failed");
    std::memset(stage, 'x', want);
    return want;
  });
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, ErrorCode::kSlowDown);
  EXPECT_EQ(moved.error().message, "source failed");
}

TEST_F(StagedTransferTest, PullCopiesInOrderAcrossSlotsInAnyChunkSize) {
  const size_t n = 9 * kSlot + 777;
  auto src = Pattern(n, 3);
  std::memcpy(remote.data(), src.data(), n);
  auto t = Make(Opcode::kRead, n);
  ASSERT_TRUE(t.ReadAhead().ok());
  std::vector<char> got(n + 1, 'Z');
  size_t done = 0, calls = 0;
  while (done < n && calls < 10'000) {
    ++calls;
    auto r = t.Pull(got.data() + done, 5000);  // not a divisor of the slot size
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_GT(*r, 0u);
    ASSERT_LE(*r, 5000u);
    done += *r;
  }
  ASSERT_EQ(done, n);
  auto end = t.Pull(got.data() + done, 5000);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, 0u);
  EXPECT_EQ(got[n], 'Z');
  got.resize(n);
  EXPECT_EQ(got, src);
  EXPECT_EQ(t.transfer().bytes_completed(), n);
}

TEST_F(StagedTransferTest, PullWithoutReadAheadAndOneSlotLargerThanTheBuffer) {
  const size_t n = 3 * staging.size() + 5;
  auto src = Pattern(n, 4);
  std::memcpy(remote.data(), src.data(), n);
  // A slot larger than the staging buffer is cut to the buffer: one slot, reused.
  auto t = Make(Opcode::kRead, n, /*slot_bytes=*/10 * staging.size());
  std::vector<char> got(n);
  size_t done = 0;
  for (int i = 0; i < 100 && done < n; ++i) {
    auto r = t.Pull(got.data() + done, n - done);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_LE(*r, staging.size());
    done += *r;
  }
  EXPECT_EQ(done, n);
  EXPECT_EQ(got, src);
}

TEST_F(StagedTransferTest, RefusedReadFailsAndStaysFailed) {
  auto t = Make(Opcode::kRead, 3 * kSlot, kSlot, /*rkey=*/remote_mr->rkey() + 1);
  char out[64];
  auto r = t.Pull(out, sizeof(out));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidRDMAToken);  // remote access error: the token's
  auto again = t.Pull(out, sizeof(out));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kInvalidRDMAToken);
}

TEST_F(StagedTransferTest, NothingToMove) {
  int calls = 0;
  auto w = Make(Opcode::kWrite, 0);
  auto moved = w.Push([&](uint64_t, char*, size_t) -> Result<size_t> {
    ++calls;
    return size_t{0};
  });
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(*moved, 0u);
  EXPECT_EQ(calls, 0);
  auto r = Make(Opcode::kRead, 0);
  char out[8];
  auto n = r.Pull(out, sizeof(out));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(r.transfer().work_requests(), 0u);
}

}  // namespace
}  // namespace rdmastor::rdma
