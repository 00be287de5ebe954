// The call table (cluster/wire.h): every call's request and response survive their encoding, with
// every field set to a non-default value and payloads holding bytes JSON could not carry (NUL,
// newline, bytes that are not UTF-8). A field an encoder forgets, or a decoder drops, comes back
// as its default and the comparison of the re-encoded message fails.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cluster/wire.h"

namespace rdmastor::cluster {
namespace {

const std::string kBinary = std::string("a\n\0b\xff\xfe{\"x\":1}\n", 13);

// A value of every type of the table with no field left at its default.
template <class T>
T Sample();
template <>
peer::NoArgs Sample() {
  return {};
}
template <>
peer::Done Sample() {
  return {};
}
template <>
bool Sample() {
  return true;
}
template <>
peer::Names Sample() {
  return {"b1", "b 2", "\xc3\xa9t\xc3\xa9"};
}
template <>
peer::BucketArgs Sample() {
  return {"bucket-1"};
}
template <>
peer::MakeVolArgs Sample() {
  return {"bucket-2", kBinary};
}
template <>
peer::PathArgs Sample() {
  return {"bucket/dir/key"};
}
template <>
peer::WriteFileArgs Sample() {
  return {".rdmastor.sys/tmp/abc/meta", kBinary};
}
template <>
peer::ListDirArgs Sample() {
  return {"b/x", true};
}
template <>
peer::TwoPaths Sample() {
  return {"from/a", "to/b"};
}
template <>
peer::ListObjectsArgs Sample() {
  return {"bkt", storage::ListOptions{"pre/", "/", "pre/m", 17}};
}
template <>
peer::ShardWriteArgs Sample() {
  return {".rdmastor.sys/tmp/s/data/part.1", 1 << 20, true, true, kBinary};
}
template <>
peer::ShardReadArgs Sample() {
  return {"b/k/d0123/part.1", 4096, 1 << 20, 0x1234567890abcdefull, true};
}
template <>
peer::ShardBytes Sample() {
  return {77, 0xfedcba9876543210ull, kBinary};
}
template <>
peer::OptBytes Sample() {
  return kBinary;
}
template <>
storage::DiskInfo Sample() {
  return {1000, 10, true};
}
template <>
storage::DriveFormat Sample() {
  return {"dep-id", "drive-id", 1, 2, {{"a", "b"}, {"c", "d"}}};
}
template <>
storage::fsutil::CommitPlan Sample() {
  // root is not sent: the serving drive sets its own.
  return {"", "b", ".rdmastor.sys/tmp/s", "b/k", "m.json", "d1", "d0"};
}
template <>
storage::ListResult Sample() {
  storage::ListResult r;
  storage::ObjectInfo o;
  o.bucket = "b";
  o.key = "k";
  o.size = 5;
  o.etag = "e";
  o.mtime_ns = 9;
  o.content_type = "text/plain";
  o.user_metadata = {{"x-amz-meta-a", "1"}};
  o.checksums = {{"crc32", "AAAA"}};
  o.part_count = 2;
  o.part_sizes = {3, 2};
  r.objects.push_back(o);
  r.common_prefixes = {"p/"};
  r.truncated = true;
  r.next_marker = "k";
  return r;
}
template <>
storage::RenameDataRequest Sample() {
  storage::RenameDataRequest r{
      ".rdmastor.sys/tmp/s", "b", "b/k", "m.json", "d1", kBinary, true, true};
  r.keep_staging = true;
  return r;
}
template <>
storage::RenameDataResult Sample() {
  return {kBinary, "d0", /*staging_kept=*/true};
}

template <>
peer::RenameDataBatch Sample() {
  storage::RenameDataRequest del{".rdmastor.sys/tmp/t", "b", "b/k2", "m.json", "", std::nullopt};
  del.mode = storage::RenameMode::kRemoveVersion;
  del.version_id = "v1";
  storage::RenameDataRequest add = Sample<storage::RenameDataRequest>();
  add.mode = storage::RenameMode::kAddVersion;
  return {{{"/mnt/d1", Sample<storage::RenameDataRequest>()},
           {"/mnt/d2", del},
           {"/mnt/d 3", add},
           {"/mnt/d4", {".rdmastor.sys/tmp/u", "b", "b/k", "m.json", "", std::string()}}}};
}
template <>
peer::RenameDataResults Sample() {
  return {{Sample<storage::RenameDataResult>(), MakeError(ErrorCode::kNoSuchBucket, "gone"),
           storage::RenameDataResult{std::nullopt, ""},
           storage::RenameDataResult{std::string(), "d9"},
           MakeError(ErrorCode::kInvalidArgument, "not a staging directory: \xff")}};
}

template <>
peer::ReadFileBatch Sample() {
  return {{{"/mnt/d1", "b/k/m.json"}, {"/mnt/d 2", "b/\xc3\xa9/m.json"}}};
}
template <>
peer::ReadFileResults Sample() {
  using R = Result<std::optional<std::string>>;
  return {{R(std::optional<std::string>(kBinary)), R(std::optional<std::string>()),
           R(std::optional<std::string>(std::string())), R(MakeError(ErrorCode::kNoSuchKey, "x")),
           R(std::optional<std::string>(kBinary + kBinary))}};
}

template <>
peer::ShardWriteBatch Sample() {
  return {
      {{"/mnt/d1", ".rdmastor.sys/tmp/s/data/part.1", 0, 3, true, false},
       {"/mnt/d 2", ".rdmastor.sys/tmp/s/data/part.1", 1 << 20, kBinary.size() - 3, false, true}},
      kBinary};
}
template <>
peer::DoneResults Sample() {
  return {{peer::Done{}, MakeError(ErrorCode::kInternalError, "injected"), peer::Done{}}};
}

template <>
peer::ShardReadBatch Sample() {
  return {{{"/mnt/d1", "b/k/dd/part.1", 0, 1 << 20, 0, true},
           {"/mnt/d 2", "b/k/dd/part.1", 3 << 20, 7, 0x1234567890abcdefULL, false}}};
}
template <>
peer::ShardReadResults Sample() {
  return {{storage::ShardPieceGot{3, 42}, MakeError(ErrorCode::kNoSuchKey, "gone"),
           storage::ShardPieceGot{0, 0}},
          kBinary};
}
template <class T>
std::string Flat(const T& v) {
  Frame f = Wire<T>::Encode(v);
  return f.head + '\0' + f.payload;
}

// A request through its body form; a response through its frame.
template <class T>
void ExpectRequestRoundTrip(std::string_view call) {
  const T v = Sample<T>();
  auto back = DecodeRequest<T>(EncodeRequest(v));
  ASSERT_TRUE(back.ok()) << call << ": " << back.error().message;
  EXPECT_EQ(Flat(*back), Flat(v)) << call << " request";
}

template <class T>
void ExpectResponseRoundTrip(std::string_view call) {
  const T v = Sample<T>();
  Frame f = Wire<T>::Encode(v);
  if (!kHasPayload<T>) EXPECT_TRUE(f.payload.empty()) << call << " response";
  auto back = Wire<T>::Decode(std::move(f));
  ASSERT_TRUE(back.ok()) << call << ": " << back.error().message;
  EXPECT_EQ(Flat(*back), Flat(v)) << call << " response";
}

TEST(PeerCalls, EveryCallRoundTripsItsRequestAndResponse) {
  int calls = 0;
#define RDMASTOR_TEST_CALL(id, wire, addr, wait, Request, Response, expr) \
  ExpectRequestRoundTrip<Request>(wire);                                  \
  ExpectResponseRoundTrip<Response>(wire);                                \
  ++calls;
  RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_TEST_CALL)
#undef RDMASTOR_TEST_CALL
  EXPECT_EQ(calls, static_cast<int>(kPeerCallNames.size()));
}

TEST(PeerCalls, NamesAreUniqueAndPlain) {
  std::set<std::string_view> seen;
  for (auto name : kPeerCallNames) {
    EXPECT_TRUE(seen.insert(name).second) << "duplicate call name " << name;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), std::string_view::npos) << name;
  }
}

TEST(PeerCalls, MalformedRequestsAreErrorsNotExceptions) {
  for (const std::string body : {"", "{", "[1,2]", "{\"path\":5}", "\n{\"path\":\"x\"}"}) {
    auto r = DecodeRequest<peer::PathArgs>(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code, ErrorCode::kInternalError);
  }
  auto rd = DecodeRequest<storage::RenameDataRequest>("{\"staging\":\"s\"}\nmeta");
  EXPECT_FALSE(rd.ok());
}

// keep_staging (a reused staging directory) travels as a JSON boolean and nothing else; an older
// peer's request without it asks for the staging directory's removal, as it always did.
TEST(PeerCalls, KeepStagingIsABooleanDefaultingToFalse) {
  const std::string head =
      R"({"staging":".rdmastor.sys/tmp/s","bucket":"b","key_dir":"b/k","meta_name":"m.json",)"
      R"("data_name":"","has_meta":true,"keep_data":false,"prune":false)";
  auto old_peer = DecodeRequest<storage::RenameDataRequest>(head + "}\nmeta");
  ASSERT_TRUE(old_peer.ok()) << old_peer.error().message;
  EXPECT_FALSE(old_peer->keep_staging);
  auto yes = DecodeRequest<storage::RenameDataRequest>(head + R"(,"keep_staging":true})" + "\nm");
  ASSERT_TRUE(yes.ok()) << yes.error().message;
  EXPECT_TRUE(yes->keep_staging);
  for (const char* bad : {R"("yes")", "1", "null", "[]"}) {
    auto r = DecodeRequest<storage::RenameDataRequest>(head + ",\"keep_staging\":" + bad + "}\nm");
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto old_result = Wire<storage::RenameDataResult>::Decode(
      Frame{R"({"has_old_meta":false,"old_data_name":""})", ""});
  ASSERT_TRUE(old_result.ok());
  EXPECT_FALSE(old_result->staging_kept);
  EXPECT_FALSE(Wire<storage::RenameDataResult>::Decode(
                   Frame{R"({"has_old_meta":false,"old_data_name":"","staging_kept":"no"})", ""})
                   .ok());
}

// Found by fuzz/fuzz_peer_wire: a number that does not fit the field (here parsed as a double,
// 4.4e20) was converted with undefined behaviour and accepted. Now only integers in range are.
TEST(PeerCalls, NumbersOutsideTheFieldsRangeAreRefused) {
  for (const std::string body :
       {"{\"rdma_bytes\":444444544444444444440}\nshard", "{\"rdma_bytes\":-1}\n",
        "{\"rdma_bytes\":1.5}\n", "{\"rdma_bytes\":1e300}\n"}) {
    auto r = DecodeRequest<peer::ShardBytes>(body);
    EXPECT_FALSE(r.ok()) << body;
  }
  EXPECT_FALSE(
      DecodeListOptions(R"({"prefix":"","delimiter":"","start_after":"","max_keys":4294967296})")
          .ok());
  EXPECT_FALSE(
      DecodeLockArgs(R"({"uid":"u","resources":[],"owner":"o","source":"s","quorum":-3e10})").ok());
  auto ok = DecodeRequest<peer::ShardBytes>("{\"rdma_bytes\":18446744073709551615,\"handle\":0}\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rdma_bytes, UINT64_MAX);
}

// A request's payload is everything after the first newline, newlines and NULs included.
TEST(PeerCalls, PayloadIsTakenWhole) {
  peer::WriteFileArgs w{"p", "\n\n" + kBinary + "\n"};
  auto back = DecodeRequest<peer::WriteFileArgs>(EncodeRequest(w));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->payload, w.payload);
  // An absent optional stays absent, an empty one stays present.
  storage::RenameDataRequest del = Sample<storage::RenameDataRequest>();
  del.meta.reset();
  auto d = DecodeRequest<storage::RenameDataRequest>(EncodeRequest(del));
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->meta.has_value());
  del.meta = std::string();
  d = DecodeRequest<storage::RenameDataRequest>(EncodeRequest(del));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->meta.has_value());
}

// A batch's entries share one payload, cut by each entry's length: lengths that do not add up to
// the payload, or a payload for an entry without one, are malformed, never read past the body.
TEST(PeerCalls, BatchPayloadLengthsMustAddUp) {
  const peer::RenameDataBatch batch = Sample<peer::RenameDataBatch>();
  const std::string body = EncodeRequest(batch);
  ASSERT_TRUE(DecodeRequest<peer::RenameDataBatch>(body).ok());
  EXPECT_FALSE(DecodeRequest<peer::RenameDataBatch>(body + "x").ok());
  EXPECT_FALSE(DecodeRequest<peer::RenameDataBatch>(body.substr(0, body.size() - 1)).ok());
  const std::string entry =
      R"({"disk":"/d","staging":"s","bucket":"b","key_dir":"b/k","meta_name":"m","data_name":"",)"
      R"("keep_data":false,"prune":false,)";
  for (const std::string tail :
       {R"("has_meta":true,"len":18446744073709551615}]})", R"("has_meta":true,"len":-1}]})",
        R"("has_meta":false,"len":2}]})", R"("has_meta":true,"len":1.5}]})"}) {
    auto r = DecodeRequest<peer::RenameDataBatch>(R"({"entries":[)" + entry + tail + "\nab");
    EXPECT_FALSE(r.ok()) << tail;
  }
  auto r = DecodeRequest<peer::RenameDataBatch>(R"({"entries":[)" + entry +
                                                R"("has_meta":true,"len":2}]})" + "\nab");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries.at(0).req.meta, std::optional<std::string>("ab"));
  // An error keeps its code across the wire.
  const auto results = Sample<peer::RenameDataResults>();
  auto back = Wire<peer::RenameDataResults>::Decode(Wire<peer::RenameDataResults>::Encode(results));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->results.size(), results.results.size());
  EXPECT_EQ(back->results[1].error().code, ErrorCode::kNoSuchBucket);
  EXPECT_EQ(back->results[1].error().message, "gone");
  EXPECT_EQ(back->results[4].error().code, ErrorCode::kInvalidArgument);
}

// The batch carries every field of the single call, the reused staging directory's flags included
// (a round trip of the encoded form alone would not notice a field that neither side writes).
TEST(PeerCalls, BatchesCarryTheStagingReuseFlags) {
  auto batch = DecodeRequest<peer::RenameDataBatch>(EncodeRequest(Sample<peer::RenameDataBatch>()));
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  EXPECT_TRUE(batch->entries.at(0).req.keep_staging);
  EXPECT_FALSE(batch->entries.at(1).req.keep_staging);
  const auto results = Sample<peer::RenameDataResults>();
  auto back = Wire<peer::RenameDataResults>::Decode(Wire<peer::RenameDataResults>::Encode(results));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->results.at(0)->staging_kept);
  EXPECT_FALSE(back->results.at(2)->staging_kept);
}

}  // namespace
}  // namespace rdmastor::cluster
