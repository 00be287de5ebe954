// S3 over RDMA end to end: the real server binary with the soft fabric, our client library.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/hash.h"
#include "rdma/build_info.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/soft/soft_wire.h"
#include "rdma/token.h"
#include "rdma/transfer.h"
#include "rdmastor/rdma_client.h"
#include "s3/sigv4.h"
#include "server_process.h"

namespace rdmastor {
namespace {

using client::ByteRange;
using client::RdmaClientConfig;
using client::RdmaS3Client;
using client::S3Request;
using client::Transport;
using testing::ServerProcess;
using testing::Pattern;
using testing::Header;

std::string Md5Etag(const char* p, size_t n) {
  auto h = hash::NewHasher(hash::Algo::kMD5);
  h->Update(p, n);
  return "\"" + hash::HexEncode(h->Final()) + "\"";
}

class S3OverRdma : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    ASSERT_TRUE(
        server_->Start({{"MINIO_RDMA_FABRIC", "soft"}, {"MINIO_PROMETHEUS_AUTH_TYPE", "public"}}))
        << server_->log();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    client_ = NewClient();
    bucket_ = "rdma-" + std::to_string(counter_++);
    ASSERT_TRUE(client_->http().CreateBucket(bucket_).ok());
  }
  void TearDown() override { EXPECT_TRUE(server_->alive()) << server_->log(); }

  static std::unique_ptr<RdmaS3Client> NewClient(std::string bind_ip = "", bool fallback = false,
                                                 ServerProcess* server = nullptr) {
    RdmaClientConfig cfg;
    cfg.s3 = *client::S3ConfigFromEndpoint((server ? server : server_)->endpoint(),
                                           ServerProcess::kUser, ServerProcess::kPassword);
    cfg.soft_bind_ip = std::move(bind_ip);
    cfg.allow_http_fallback = fallback;
    auto c = RdmaS3Client::Create(cfg);
    EXPECT_TRUE(c.ok()) << c.error().message;
    return std::move(c).value();
  }

  // A GET/PUT carrying `token` verbatim, signed (token among SignedHeaders).
  Result<client::HttpResponse> Raw(const std::string& method, const std::string& key,
                                   const std::string& token, client::HeaderList extra = {}) {
    S3Request req;
    req.method = method;
    req.bucket = bucket_;
    req.key = key;
    req.headers = std::move(extra);
    req.headers.emplace_back("x-amz-rdma-token", token);
    if (method == "PUT") req.payload_sha256 = "UNSIGNED-PAYLOAD";
    return client_->http().Execute(req, client::ResponseTarget::String());
  }

  bool Exists(const std::string& key) {
    S3Request req;
    req.method = "HEAD";
    req.bucket = bucket_;
    req.key = key;
    auto r = client_->http().Execute(req, client::ResponseTarget::Discard());
    return r.ok() && r->status == 200;
  }

  static ServerProcess* server_;
  static int counter_;
  std::unique_ptr<RdmaS3Client> client_;
  std::string bucket_;
};
ServerProcess* S3OverRdma::server_ = nullptr;
int S3OverRdma::counter_ = 0;

TEST_F(S3OverRdma, RoundTripsAndEtagsMatchHttp) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    SCOPED_TRACE(size);
    auto data = Pattern(size, static_cast<uint32_t>(size));
    auto put = client_->Put(bucket_, "obj", data.data(), data.size());
    ASSERT_TRUE(put.ok()) << put.error().message;
    EXPECT_EQ(put->transport, Transport::kRdma);
    EXPECT_EQ(put->etag, Md5Etag(data.data(), size));
    ASSERT_TRUE(Header(put->headers, "x-amz-rdma-reply"));
    EXPECT_EQ(*Header(put->headers, "x-amz-rdma-bytes-transferred"), std::to_string(size));
    // The same bytes over HTTP get the same ETag.
    auto http_put =
        client_->http().PutObject(bucket_, "obj-http", std::string_view(data.data(), size));
    ASSERT_TRUE(http_put.ok());
    EXPECT_EQ(http_put->etag, put->etag);

    std::vector<char> back(size + 64, 'G');  // guard bytes after the object
    auto get = client_->Get(bucket_, "obj", back.data(), size);
    ASSERT_TRUE(get.ok()) << get.error().message;
    EXPECT_EQ(get->status, 200);
    EXPECT_EQ(get->bytes, size);
    EXPECT_EQ(get->etag, put->etag);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), size), 0);
    EXPECT_EQ(std::string(back.data() + size, 64), std::string(64, 'G'));
    client_->Forget(back.data(), back.size());
    client_->Forget(data.data(), data.size());
  }
}

TEST_F(S3OverRdma, ProtocolHeadersAndEmptyBodies) {
  auto data = Pattern(100000, 3);
  ASSERT_TRUE(client_->Put(bucket_, "k", data.data(), data.size()).ok());
  std::vector<char> buf(data.size());
  auto token = client_->TokenFor(buf.data(), buf.size(), true);
  auto r = Raw("GET", "k", *token, {{"x-amz-rdma-agent", "cuobj"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_length, 0u);
  EXPECT_TRUE(r->body.empty());
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-reply"), "200");
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-bytes-transferred"), "100000");
  ASSERT_TRUE(r->FindHeader("x-amz-rdma-agent"));  // echoed, as AIStor does
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-agent"), "cuobj");
  EXPECT_EQ(*r->FindHeader("etag"), Md5Etag(data.data(), data.size()));
  EXPECT_TRUE(r->FindHeader("last-modified"));
  // PUT echoes it too; without one in the request, none in the reply.
  auto pt = client_->TokenFor(data.data(), data.size(), false);
  auto p = Raw("PUT", "k2", *pt, {{"x-amz-rdma-agent", "cuobj"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->status, 200);
  ASSERT_TRUE(p->FindHeader("x-amz-rdma-agent"));
  EXPECT_EQ(*p->FindHeader("x-amz-rdma-agent"), "cuobj");
  auto plain = Raw("GET", "k", *token);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->FindHeader("x-amz-rdma-agent"));
  EXPECT_EQ(buf, data);
  // HEAD ignores the token.
  auto h = Raw("HEAD", "k", *token);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->status, 200);
  EXPECT_FALSE(h->FindHeader("x-amz-rdma-reply"));
}

TEST_F(S3OverRdma, RangedGetsAtOddOffsetsAndPartNumber) {
  auto data = Pattern(3 * 1024 * 1024 + 7, 4);
  ASSERT_TRUE(client_->Put(bucket_, "r", data.data(), data.size()).ok());
  for (auto [first, last] : {std::pair<uint64_t, uint64_t>{0, 0},
                             {1, 1},
                             {12345, 777777},
                             {1048575, 2097153},
                             {data.size() - 3, data.size() - 1}}) {
    uint64_t n = last - first + 1;
    std::vector<char> buf(n + 16, 'G');
    auto got = client_->Get(bucket_, "r", buf.data(), n, ByteRange{first, last});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->status, 206);
    EXPECT_EQ(got->bytes, n);
    EXPECT_EQ(*Header(got->headers, "x-amz-rdma-reply"), "206");
    EXPECT_EQ(*Header(got->headers, "content-range"), "bytes " + std::to_string(first) + "-" +
                                                          std::to_string(last) + "/" +
                                                          std::to_string(data.size()));
    EXPECT_EQ(std::memcmp(buf.data(), data.data() + first, n), 0);
    EXPECT_EQ(std::string(buf.data() + n, 16), std::string(16, 'G'));
    client_->Forget(buf.data(), buf.size());
  }
  std::vector<char> buf(data.size());
  auto token = client_->TokenFor(buf.data(), buf.size(), true);
  S3Request req;
  req.bucket = bucket_;
  req.key = "r";
  req.raw_query = "partNumber=1";
  req.headers = {{"x-amz-rdma-token", *token}};
  auto r = client_->http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 206);
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-reply"), "206");
  EXPECT_EQ(buf, data);
}

TEST_F(S3OverRdma, MultipartMixesRdmaAndHttpParts) {
  auto p1 = Pattern(5 << 20, 5), p2 = Pattern(5 << 20, 6), p3 = Pattern(1, 7);
  auto id = client_->CreateMultipartUpload(bucket_, "mp");
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto r1 = client_->UploadPart(bucket_, "mp", *id, 1, p1.data(), p1.size());
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  EXPECT_EQ(r1->transport, Transport::kRdma);
  EXPECT_EQ(r1->etag, Md5Etag(p1.data(), p1.size()));
  // Part 2 over plain HTTP.
  S3Request req;
  req.method = "PUT";
  req.bucket = bucket_;
  req.key = "mp";
  req.raw_query = "partNumber=2&uploadId=" + *id;
  req.body = std::string_view(p2.data(), p2.size());
  auto r2 = client_->http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(r2.ok() && r2->status == 200);
  auto r3 = client_->UploadPart(bucket_, "mp", *id, 3, p3.data(), p3.size());
  ASSERT_TRUE(r3.ok());
  auto done = client_->CompleteMultipartUpload(
      bucket_, "mp", *id, {{1, r1->etag}, {2, *r2->FindHeader("etag")}, {3, r3->etag}});
  ASSERT_TRUE(done.ok()) << done.error().message;
  std::string whole(p1.begin(), p1.end());
  whole.append(p2.begin(), p2.end());
  whole.append(p3.begin(), p3.end());
  std::vector<char> back(whole.size());
  auto got = client_->http().GetObjectInto(bucket_, "mp", std::nullopt, back.data(), back.size());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(back.begin(), back.end()), whole);
  // Part 2 read back over RDMA by part number.
  std::vector<char> part(p2.size());
  auto token = client_->TokenFor(part.data(), part.size(), true);
  S3Request g;
  g.bucket = bucket_;
  g.key = "mp";
  g.raw_query = "partNumber=2";
  g.headers = {{"x-amz-rdma-token", *token}};
  auto pr = client_->http().Execute(g, client::ResponseTarget::String());
  ASSERT_TRUE(pr.ok());
  EXPECT_EQ(pr->status, 206);
  EXPECT_EQ(part, p2);
}

TEST_F(S3OverRdma, ChecksumsAreVerifiedOverTheRawBuffer) {
  auto data = Pattern(300000, 8);
  // CRC64NVME too (issue 12 item 15: cuObject clients send it, S3's default since 2025).
  for (std::string algo : {"crc32c", "crc64nvme"}) {
    SCOPED_TRACE(algo);
    const std::string header = "x-amz-checksum-" + algo;
    auto crc = hash::NewHasher(*hash::ChecksumAlgoFromName(algo));
    crc->Update(data.data(), data.size());
    std::string good = hash::Base64Encode(crc->Final());
    auto ok = client_->Put(bucket_, "c-" + algo, data.data(), data.size(), {{header, good}});
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(*Header(ok->headers, header), good);
    std::string wrong = good;
    wrong[0] = wrong[0] == 'A' ? 'B' : 'A';
    auto bad = client_->Put(bucket_, "c2-" + algo, data.data(), data.size(), {{header, wrong}});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, ErrorCode::kBadDigest);
    EXPECT_FALSE(Exists("c2-" + algo));
  }
}

TEST_F(S3OverRdma, MalformedAndUnsignedTokens) {
  ASSERT_TRUE(client_->Put(bucket_, "m", "abc", 3).ok());
  for (std::string bad : {std::string("x"), std::string(81, 'A'), std::string(81, '0')}) {
    auto r = Raw("GET", "m", bad);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_NE(r->body.find("<Code>InvalidRDMAToken</Code>"), std::string::npos);
    EXPECT_FALSE(r->FindHeader("x-amz-rdma-reply"));
  }
  auto put = Raw("PUT", "m2", std::string(80, '0') + "z");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->status, 400);
  EXPECT_FALSE(Exists("m2"));

  // A valid token that is not among the signed headers: 403.
  char buf[3];
  auto token = client_->TokenFor(buf, sizeof(buf), true);
  const auto& cfg = client_->http().config();
  s3::SignInput in;
  in.method = "GET";
  in.raw_path = client::S3ObjectPath(bucket_, "m");
  in.headers = {{"host", client_->http().http().host_header()}};
  in.payload_sha256 = "UNSIGNED-PAYLOAD";
  in.access_key = cfg.access_key;
  in.secret_key = cfg.secret_key;
  in.now_unix = static_cast<int64_t>(time(nullptr));
  client::HttpRequest http;
  http.target = in.raw_path;
  http.headers = s3::SignRequest(in);
  http.headers.emplace_back("x-amz-rdma-token", *token);
  auto r = client_->http().http().Send(http);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("<HeadersNotSigned>x-amz-rdma-token</HeadersNotSigned>"),
            std::string::npos);

  // An agent other than cuobj is declined with 501.
  auto agent = Raw("GET", "m", *token, {{"x-amz-rdma-agent", "other"}});
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ(agent->status, 501);
  EXPECT_EQ(*agent->FindHeader("x-amz-rdma-reply"), "501");
}

TEST_F(S3OverRdma, WrongRkeyIsAnS3ErrorAndTheServerCarriesOn) {
  auto data = Pattern(70000, 9);
  ASSERT_TRUE(client_->Put(bucket_, "w", data.data(), data.size()).ok());
  std::vector<char> buf(data.size(), 'G');
  auto token = rdma::ParseToken(*client_->TokenFor(buf.data(), buf.size(), true));
  token->rkey ^= 0x1234;
  auto r = Raw("GET", "w", rdma::FormatToken(*token));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("remote access error"), std::string::npos);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), std::string(buf.size(), 'G'));
  // PUT with a wrong rkey stores nothing.
  auto pt = rdma::ParseToken(*client_->TokenFor(data.data(), data.size(), false));
  pt->rkey ^= 0x1234;
  auto p = Raw("PUT", "w2", rdma::FormatToken(*pt));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->status, 400);
  EXPECT_FALSE(Exists("w2"));
  // The server is unharmed.
  auto again = client_->Get(bucket_, "w", buf.data(), buf.size());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(buf, data);
}

TEST_F(S3OverRdma, RsizeSmallerThanObjectIs501AndNothingWritten) {
  auto data = Pattern(10000, 10);
  ASSERT_TRUE(client_->Put(bucket_, "s", data.data(), data.size()).ok());
  std::vector<char> buf(10000, 'G');
  auto got = client_->Get(bucket_, "s", buf.data(), 9999);  // one byte short
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), std::string(10000, 'G'));
  auto token = client_->TokenFor(buf.data(), 9999, true);
  auto r = Raw("GET", "s", *token);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 501);
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-reply"), "501");
  EXPECT_NE(r->body.find("<Code>RDMANotSupported</Code>"), std::string::npos);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), std::string(10000, 'G'));
  // With fallback allowed the client retries over HTTP (its choice, not the server's).
  auto fb = NewClient("", true);
  std::vector<char> big(10000);
  auto fg = fb->Get(bucket_, "s", big.data(), 9999);
  EXPECT_FALSE(fg.ok());  // HTTP cannot fit it either: the client sees the error
  auto fg2 = fb->Get(bucket_, "s", big.data(), big.size());
  ASSERT_TRUE(fg2.ok());
  EXPECT_EQ(fg2->transport, Transport::kRdma);
}

TEST_F(S3OverRdma, RsizeLargerThanTheRegistrationOnPutStoresNothing) {
  auto data = Pattern(1 << 20, 11);
  auto token = rdma::ParseToken(*client_->TokenFor(data.data(), data.size(), false));
  token->rsize = 2 << 20;  // claims more than the client registered
  auto r = Raw("PUT", "big", rdma::FormatToken(*token));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("InvalidRDMAToken"), std::string::npos);
  EXPECT_FALSE(Exists("big"));
  // A PUT body next to a token is refused.
  auto t2 = client_->TokenFor(data.data(), 10, false);
  S3Request req;
  req.method = "PUT";
  req.bucket = bucket_;
  req.key = "body";
  req.body = "hello";
  req.headers = {{"x-amz-rdma-token", *t2}};
  auto b = client_->http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->status, 400);
  EXPECT_FALSE(Exists("body"));
}

TEST_F(S3OverRdma, TokenAimedAtAnotherHostIsRefused) {
  auto other = NewClient("127.0.0.2");
  ASSERT_TRUE(other->http().CreateBucket(bucket_ + "-x").ok());
  char data[100] = {1, 2, 3};
  auto put = other->Put(bucket_ + "-x", "o", data, sizeof(data));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code, ErrorCode::kAccessDenied);
  EXPECT_NE(put.error().message.find("MINIO_RDMA_SOFT_ALLOW"), std::string::npos);
}

// A listening socket on 127.0.0.1 (an ephemeral port) standing in for a client's soft target;
// -1 on failure.
int ListenLoopback(uint16_t& port) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(ls, 4) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    if (ls >= 0) close(ls);
    return -1;
  }
  port = ntohs(sa.sin_port);
  return ls;
}

// A token naming a buffer of rsize bytes at the fake soft target listening on 127.0.0.1:port.
rdma::RdmaToken FakeTargetToken(uint16_t port, uint32_t qpn, uint32_t rsize) {
  rdma::RdmaToken t;
  t.raddr = 0x10000;
  t.rsize = rsize;
  t.rkey = 1;
  t.lid = port;
  t.qpn = qpn;
  t.has_gid = true;
  t.gid = rdma::Ipv4ToGid(0x7f000001);
  return t;
}

// A "client" whose target accepts the endpoint, answers half of a READ, then vanishes: the PUT
// fails within bounded time and stores nothing; a GET toward a target that stops reading fails.
TEST_F(S3OverRdma, ClientVanishingMidTransferFailsCleanly) {
  uint16_t port = 0;
  int ls = ListenLoopback(port);
  ASSERT_GE(ls, 0);
  std::thread fake([&] {
    int c = accept(ls, nullptr, nullptr);
    rdma::soft::wire::Hello h;
    (void)!read(c, &h, sizeof(h));
    rdma::soft::wire::HelloReply hr;
    (void)!write(c, &hr, sizeof(hr));
    rdma::soft::wire::Request req;
    (void)!recv(c, &req, sizeof(req), MSG_WAITALL);
    rdma::soft::wire::Reply rep;
    rep.wr_id = req.wr_id;
    rep.length = req.length;
    (void)!write(c, &rep, sizeof(rep));
    std::vector<char> half(req.length / 2, 'x');
    (void)!write(c, half.data(), half.size());
    close(c);  // gone mid-payload
  });
  rdma::RdmaToken t = FakeTargetToken(port, 7, 4 << 20);
  auto start = std::chrono::steady_clock::now();
  auto r = Raw("PUT", "vanish", rdma::FormatToken(t));
  fake.join();
  close(ls);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status == 500 || r->status == 501) << r->status << r->body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_FALSE(Exists("vanish"));
}

// The GET side: a target that takes the endpoint and the first WRITE's header, then vanishes.
// The request fails within bounded time, and the server goes on serving.
TEST_F(S3OverRdma, ClientVanishingDuringGetFailsCleanly) {
  auto data = Pattern(6 << 20, 12);
  ASSERT_TRUE(client_->Put(bucket_, "g", data.data(), data.size()).ok());
  uint16_t port = 0;
  int ls = ListenLoopback(port);
  ASSERT_GE(ls, 0);
  std::thread fake([&] {
    int c = accept(ls, nullptr, nullptr);
    rdma::soft::wire::Hello h;
    (void)!recv(c, &h, sizeof(h), MSG_WAITALL);
    rdma::soft::wire::HelloReply hr;
    (void)!write(c, &hr, sizeof(hr));
    rdma::soft::wire::Request req;
    (void)!recv(c, &req, sizeof(req), MSG_WAITALL);
    close(c);  // gone before the payload arrived
  });
  rdma::RdmaToken t = FakeTargetToken(port, 9, static_cast<uint32_t>(data.size()));
  auto start = std::chrono::steady_clock::now();
  auto r = Raw("GET", "g", rdma::FormatToken(t));
  fake.join();
  close(ls);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status == 500 || r->status == 501) << r->status << r->body;
  EXPECT_NE(r->body.find("<Code>RDMA"), std::string::npos) << r->body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  // Unharmed: the same object still comes back whole, over RDMA and over HTTP.
  std::vector<char> back(data.size());
  auto got = client_->Get(bucket_, "g", back.data(), back.size());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(back, data);
}

// minio_api_rdma_copied_bytes_total of `server`.
std::optional<double> CopiedBytes(ServerProcess& server) {
  client::HttpClient http("127.0.0.1", server.port());
  client::HttpRequest req;
  req.target = "/minio/v2/metrics/node";
  auto r = http.Send(req);
  if (!r.ok() || r->status != 200) return std::nullopt;
  auto at = r->body.find("\nminio_api_rdma_copied_bytes_total ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(r->body.c_str() + at + 35, nullptr);
}

// minio_api_rdma_copied_bytes_total: exported before any copy, one copy per byte on PUT. On GET
// a single drive (a one-drive erasure set, EC 1+0) reads whole stripes straight into the
// registered buffer and verifies them there: no copy; a range starting mid-stripe goes through
// the verified stripe and is copied once, as EC 2+2 does below.
TEST_F(S3OverRdma, CopyMetricCountsUserSpaceCopies) {
  auto copied = [&] { return CopiedBytes(*server_); };
  auto before = copied();
  ASSERT_TRUE(before.has_value()) << "the copy metric is not exported";
  auto data = Pattern(3 << 20, 13);
  ASSERT_TRUE(client_->Put(bucket_, "cm", data.data(), data.size()).ok());
  auto after_put = copied();
  ASSERT_TRUE(after_put);
  EXPECT_EQ(*after_put - *before, static_cast<double>(data.size()));
  std::vector<char> back(data.size());
  ASSERT_TRUE(client_->Get(bucket_, "cm", back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  std::vector<char> part(1000);
  ASSERT_TRUE(client_->Get(bucket_, "cm", part.data(), part.size(), ByteRange{5, 1004}).ok());
  EXPECT_EQ(std::memcmp(part.data(), data.data() + 5, part.size()), 0);
  EXPECT_EQ(*copied() - *after_put, static_cast<double>(part.size()));
}

// An erasure-coded server (4 drives, EC 2+2): the GET path copies each byte once, from the
// verified shard blocks where they were read into the registered buffer the fabric sends from.
TEST(S3OverRdmaErasure, GetCopiesEachByteOnce) {
  ServerProcess server;
  ASSERT_TRUE(
      server.Start({{"MINIO_RDMA_FABRIC", "soft"}, {"MINIO_PROMETHEUS_AUTH_TYPE", "public"}},
                   /*drives=*/4))
      << server.log();
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto& client = **c;
  ASSERT_TRUE(client.http().CreateBucket("erasure-copies").ok());
  auto data = Pattern((5 << 20) + 7, 17);  // several stripes and a short last one
  ASSERT_TRUE(client.Put("erasure-copies", "obj", data.data(), data.size()).ok());
  auto before = CopiedBytes(server);
  ASSERT_TRUE(before.has_value()) << "the copy metric is not exported";
  std::vector<char> back(data.size());
  auto got = client.Get("erasure-copies", "obj", back.data(), back.size());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(back, data);
  auto after = CopiedBytes(server);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(*after - *before, static_cast<double>(data.size()));
  std::vector<char> part(1 << 20);
  ASSERT_TRUE(client
                  .Get("erasure-copies", "obj", part.data(), part.size(),
                       ByteRange{777777, 777777 + part.size() - 1})
                  .ok());
  EXPECT_EQ(std::memcmp(part.data(), data.data() + 777777, part.size()), 0);
  EXPECT_EQ(*CopiedBytes(server) - *after, static_cast<double>(part.size()));
}

// Encrypted objects over RDMA (issue 16): an SSE-S3 PUT encrypts after the RDMA read, an SSE-S3
// GET decrypts into the registered staging buffer and writes from there; an SSE-C PUT over RDMA
// reads back over HTTP with the key (and not without it). The copy metric counts the encryption
// copy on PUT and, on GET, the stored bytes read plus the decrypted bytes.
TEST(S3OverRdmaEncrypted, SseS3AndSseCRoundTripsAndTheCopiesAreCounted) {
  ServerProcess server;
  ASSERT_TRUE(server.Start({{"MINIO_RDMA_FABRIC", "soft"},
                            {"MINIO_PROMETHEUS_AUTH_TYPE", "public"},
                            {"MINIO_KMS_SECRET_KEY",
                             "e2e-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},
                            {"RDMASTOR_SSE_C_ALLOW_HTTP", "on"}},
                           /*drives=*/4))
      << server.log();
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto& client = **c;
  ASSERT_TRUE(client.http().CreateBucket("sse-rdma").ok());
  constexpr uint64_t kPackage = 64 * 1024, kTag = 16, kHeader = 16;
  auto stored_size = [&](uint64_t n) {
    return kHeader + n + kTag * std::max<uint64_t>(1, (n + kPackage - 1) / kPackage);
  };
  for (size_t size : {size_t{0}, size_t{1}, size_t{kPackage}, size_t{(3 << 20) + 5}}) {
    SCOPED_TRACE(size);
    auto data = Pattern(size, static_cast<uint32_t>(size) + 99);
    auto before = CopiedBytes(server);
    ASSERT_TRUE(before.has_value());
    auto put = client.Put("sse-rdma", "s3", data.data(), data.size(),
                          {{"x-amz-server-side-encryption", "AES256"}});
    ASSERT_TRUE(put.ok()) << put.error().message;
    EXPECT_EQ(put->transport, Transport::kRdma);
    EXPECT_EQ(put->etag, Md5Etag(data.data(), size));  // SSE-S3: the plaintext's MD5
    ASSERT_TRUE(Header(put->headers, "x-amz-server-side-encryption"));
    auto after_put = CopiedBytes(server);
    EXPECT_EQ(*after_put - *before, 2.0 * static_cast<double>(size));  // transfer + encryption
    std::vector<char> back(size + 64, 'G');
    auto get = client.Get("sse-rdma", "s3", back.data(), size);
    ASSERT_TRUE(get.ok()) << get.error().message;
    EXPECT_EQ(get->transport, Transport::kRdma);
    EXPECT_EQ(get->bytes, size);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), size), 0);
    EXPECT_EQ(std::string(back.data() + size, 64), std::string(64, 'G'));
    // Stored bytes read (header, packages, tags) plus the plaintext decrypted into the buffer.
    const double stored_read = size == 0 ? 0.0 : static_cast<double>(stored_size(size));
    EXPECT_EQ(*CopiedBytes(server) - *after_put, stored_read + static_cast<double>(size));
    client.Forget(back.data(), back.size());
    client.Forget(data.data(), data.size());
  }
  // A range inside the object over RDMA decrypts only what it touches and lands exactly.
  auto data = Pattern((1 << 20) + 3, 5);
  ASSERT_TRUE(client.Put("sse-rdma", "r", data.data(), data.size(),
                         {{"x-amz-server-side-encryption", "AES256"}}).ok());
  std::vector<char> part(kPackage + 2);
  ASSERT_TRUE(client.Get("sse-rdma", "r", part.data(), part.size(),
                         ByteRange{kPackage - 1, 2 * kPackage}).ok());
  EXPECT_EQ(std::memcmp(part.data(), data.data() + kPackage - 1, part.size()), 0);

  // SSE-C over RDMA: the key travels in the signed headers, the payload over the fabric.
  const std::string key_b64 = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";  // bytes 1..32
  std::string raw_key;
  for (int i = 1; i <= 32; ++i) raw_key.push_back(static_cast<char>(i));
  const std::string key_md5 = hash::Base64Encode(hash::Digest(hash::Algo::kMD5, raw_key));
  client::HeaderList ssec{{"x-amz-server-side-encryption-customer-algorithm", "AES256"},
                          {"x-amz-server-side-encryption-customer-key", key_b64},
                          {"x-amz-server-side-encryption-customer-key-md5", key_md5}};
  auto put = client.Put("sse-rdma", "c", data.data(), data.size(), ssec);
  ASSERT_TRUE(put.ok()) << put.error().message;
  EXPECT_EQ(put->transport, Transport::kRdma);
  EXPECT_NE(put->etag, Md5Etag(data.data(), data.size()));
  S3Request req;
  req.method = "GET";
  req.bucket = "sse-rdma";
  req.key = "c";
  auto plain = client.http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 400);
  req.headers = ssec;
  auto got = client.http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, std::string(data.data(), data.size()));
  EXPECT_TRUE(server.alive()) << server.log();
}

// RDMA build, no device (every machine the team builds on): the server says so once at start
// and answers token requests 501. Standard build: MINIO_RDMA_FABRIC=verbs refuses to start.
TEST(S3OverRdmaNoDevice, VerbsWithoutADeviceLogsOnceAndAnswers501) {
  ServerProcess server;
  if (!rdma::BuiltWithVerbs()) {
    ASSERT_FALSE(server.Start({{"MINIO_RDMA_FABRIC", "verbs"}}));
    EXPECT_NE(server.log().find("MINIO_RDMA_FABRIC"), std::string::npos) << server.log();
    return;
  }
  if (rdma::ProbeDevices().available)
    GTEST_SKIP() << "an RDMA device is present: the no-device path cannot be exercised here";
  ASSERT_TRUE(server.Start({})) << server.log();  // the RDMA build defaults to verbs
  std::string log = server.log();
  const std::string line = "S3 over RDMA: unavailable, requests with x-amz-rdma-token get 501";
  auto first = log.find(line);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(line, first + 1), std::string::npos) << "logged more than once:\n" << log;
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->http().CreateBucket("nodev").ok());
  ASSERT_TRUE((*c)->http().PutObject("nodev", "k", "hello").ok());
  char buf[5];
  auto got = (*c)->Get("nodev", "k", buf, 5);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kRDMANotSupported);
  auto token = (*c)->TokenFor(buf, 5, true);
  S3Request req;
  req.bucket = "nodev";
  req.key = "k";
  req.headers = {{"x-amz-rdma-token", *token}};
  auto r = (*c)->http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 501);
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-reply"), "501");
  EXPECT_NE(r->body.find("<Code>RDMANotSupported</Code>"), std::string::npos) << r->body;
  EXPECT_TRUE(server.alive());
}

TEST(S3OverRdmaOff, TokenWithoutAFabricIs501WithErrorXml) {
  ServerProcess server;  // no MINIO_RDMA_FABRIC: standard build default is off
  ASSERT_TRUE(server.Start({{"MINIO_RDMA_FABRIC", "off"}})) << server.log();
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->http().CreateBucket("off").ok());
  ASSERT_TRUE((*c)->http().PutObject("off", "k", "hello").ok());
  char buf[5];
  auto token = (*c)->TokenFor(buf, 5, true);
  S3Request req;
  req.bucket = "off";
  req.key = "k";
  req.headers = {{"x-amz-rdma-token", *token}};
  auto r = (*c)->http().Execute(req, client::ResponseTarget::String());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 501);
  EXPECT_EQ(*r->FindHeader("x-amz-rdma-reply"), "501");
  EXPECT_NE(r->body.find("<Code>RDMANotSupported</Code>"), std::string::npos);
  // The client falls back to HTTP only when allowed, and says so.
  auto strict = (*c)->Get("off", "k", buf, 5);
  ASSERT_FALSE(strict.ok());
  cfg.allow_http_fallback = true;
  auto lenient = RdmaS3Client::Create(cfg);
  auto got = (*lenient)->Get("off", "k", buf, 5);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->transport, Transport::kHttp);
  EXPECT_EQ(std::string(buf, 5), "hello");
  auto put = (*lenient)->Put("off", "k2", "world", 5);
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->transport, Transport::kHttp);
}

// 1 GiB each way through one buffer; the server's memory stays bounded (staging buffers only).
TEST_F(S3OverRdma, OneGibRoundTripInBoundedMemory) {
  const size_t n = size_t{1} << 30;
  char* p = static_cast<char*>(
      mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = i * 0x9e3779b97f4a7c15ull;
    std::memcpy(p + i, &v, 8);
  }
  auto put = client_->Put(bucket_, "gib", p, n);
  ASSERT_TRUE(put.ok()) << put.error().message;
  std::memset(p, 0, n);
  auto get = client_->Get(bucket_, "gib", p, n);
  ASSERT_TRUE(get.ok()) << get.error().message;
  EXPECT_EQ(get->bytes, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = i * 0x9e3779b97f4a7c15ull;
    bad += std::memcmp(p + i, &v, 8) != 0;
  }
  EXPECT_EQ(bad, 0u);
  client_->Forget(p, n);
  munmap(p, n);
  EXPECT_LT(server_->PeakRssKiB(), 512u * 1024) << "server peak RSS (KiB)";
}

// What a server still holding `token` could do after the client moved on: one RDMA WRITE of
// 4 KiB at its start, from an initiator of our own.
Status LateWrite(const std::string& token) {
  auto t = rdma::ParseToken(token);
  if (!t.ok()) return t.error();
  rdma::soft::SoftFabric fabric;
  auto ep = fabric.Connect(rdma::RemoteAddress::FromToken(*t), {"127.0.0.1"});
  if (!ep.ok()) return ep.error();
  std::vector<char> junk(4096, 'L');
  auto mr = fabric.RegisterMemory(junk.data(), junk.size(), rdma::kLocalWrite);
  if (!mr.ok()) return mr.error();
  rdma::Transfer w(**ep, rdma::Opcode::kWrite, rdma::RemoteBuffer::FromToken(*t));
  auto posted = w.Post(**mr, junk.data(), std::min<size_t>(junk.size(), t->rsize), 0);
  if (!posted.ok()) return posted.error();
  return w.Finish();
}

// Device memory registered through dma-buf: a memfd stands in for the dma-buf, and the "device
// pointer" is a PROT_NONE range, so any CPU access through it (an HTTP fallback, a host
// registration that touches it) would crash the test. The soft target reports the registration as
// libibverbs does (addr = the dma-buf offset); the client must still find it by device pointer.
struct FakeDeviceMemory {
  explicit FakeDeviceMemory(size_t n, size_t off = 2 * 4096 + 64) : len(n), offset(off) {
    fd = memfd_create("dmabuf", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(offset + len)) != 0) fd = -1;
    device = static_cast<char*>(mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~FakeDeviceMemory() {
    munmap(device, len);
    if (fd >= 0) close(fd);
  }
  std::vector<char> Read() const {
    std::vector<char> v(len);
    if (pread(fd, v.data(), len, static_cast<off_t>(offset)) != static_cast<ssize_t>(len))
      v.clear();
    return v;
  }
  bool Write(const std::vector<char>& v) const {
    return pwrite(fd, v.data(), v.size(), static_cast<off_t>(offset)) ==
           static_cast<ssize_t>(v.size());
  }
  size_t len, offset;
  int fd = -1;
  char* device = nullptr;
};

TEST_F(S3OverRdma, DmabufDeviceMemoryIsFoundByItsDevicePointer) {
  FakeDeviceMemory gpu(300000);
  ASSERT_GE(gpu.fd, 0);
  ASSERT_NE(gpu.device, MAP_FAILED);
  ASSERT_TRUE(client_->RegisterDeviceMemory(gpu.device, gpu.len, gpu.fd, gpu.offset).ok());
  // The token names the device registration (same rkey every time: nothing new registered).
  auto t1 = rdma::ParseToken(*client_->TokenFor(gpu.device, gpu.len, true));
  auto t2 = rdma::ParseToken(*client_->TokenFor(gpu.device + 1000, 5000, false));
  ASSERT_TRUE(t1.ok() && t2.ok());
  EXPECT_EQ(t1->rkey, t2->rkey);
  EXPECT_EQ(t1->raddr, reinterpret_cast<uint64_t>(gpu.device));

  auto data = Pattern(gpu.len, 21);
  ASSERT_TRUE(client_->Put(bucket_, "obj", data.data(), data.size()).ok());
  auto got = client_->Get(bucket_, "obj", gpu.device, gpu.len);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->transport, Transport::kRdma);
  EXPECT_EQ(got->bytes, gpu.len);
  EXPECT_EQ(gpu.Read(), data);

  // PUT from device memory.
  auto other = Pattern(gpu.len, 22);
  ASSERT_TRUE(gpu.Write(other));
  auto put = client_->Put(bucket_, "from-gpu", gpu.device, gpu.len);
  ASSERT_TRUE(put.ok()) << put.error().message;
  std::vector<char> back(gpu.len);
  ASSERT_TRUE(client_->Get(bucket_, "from-gpu", back.data(), back.size()).ok());
  EXPECT_EQ(back, other);

  // Forget releases the device registration: its rkey is dead.
  std::string token = *client_->TokenFor(gpu.device, gpu.len, true);
  EXPECT_TRUE(LateWrite(token).ok());  // alive before
  client_->Forget(gpu.device, gpu.len);
  EXPECT_FALSE(LateWrite(token).ok());
  std::fill(other.begin(), other.begin() + 4096, 'L');  // the one write made while alive
  EXPECT_EQ(gpu.Read(), other);
}

TEST_F(S3OverRdma, DeviceMemoryNeverTakesTheHttpFallbackAndIsReleased) {
  auto c = NewClient("", /*fallback=*/true);
  FakeDeviceMemory gpu(4096);
  ASSERT_TRUE(c->RegisterDeviceMemory(gpu.device, gpu.len, gpu.fd, gpu.offset).ok());
  auto data = Pattern(10000, 23);  // larger than the device buffer: the server answers 501
  ASSERT_TRUE(c->Put(bucket_, "big", data.data(), data.size()).ok());
  std::string token = *c->TokenFor(gpu.device, gpu.len, true);
  auto got = c->Get(bucket_, "big", gpu.device, gpu.len);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kRDMANotSupported);
  EXPECT_NE(got.error().message.find("device memory"), std::string::npos) << got.error().message;
  EXPECT_FALSE(LateWrite(token).ok());  // deregistered after the non-success reply
  EXPECT_EQ(gpu.Read(), std::vector<char>(gpu.len, 0));

  // The failed call dropped the registration, not the knowledge that this is device memory: the
  // next call registers it again from its dma-buf — never as host memory, never over HTTP (the
  // PROT_NONE "device pointer" would crash this test on either).
  auto again = c->Get(bucket_, "big", gpu.device, gpu.len);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("device memory"), std::string::npos)
      << again.error().message;
  auto small = Pattern(gpu.len, 25);
  ASSERT_TRUE(c->Put(bucket_, "small", small.data(), small.size()).ok());
  auto got_small = c->Get(bucket_, "small", gpu.device, gpu.len);
  ASSERT_TRUE(got_small.ok()) << got_small.error().message;
  EXPECT_EQ(got_small->transport, Transport::kRdma);
  EXPECT_EQ(gpu.Read(), small);
  // A range straddling the end of the device memory is refused, not registered as host memory.
  auto straddle = c->TokenFor(gpu.device + gpu.len - 16, 64, true);
  ASSERT_FALSE(straddle.ok());
  EXPECT_EQ(straddle.error().code, ErrorCode::kInvalidArgument);
  c->Forget(gpu.device, gpu.len);
}

TEST_F(S3OverRdma, ANonSuccessReplyDeregistersTheBuffer) {
  std::vector<char> buf(8192, 'B');
  std::string token = *client_->TokenFor(buf.data(), buf.size(), true);
  auto missing = client_->Get(bucket_, "no-such-key", buf.data(), buf.size());
  ASSERT_FALSE(missing.ok());
  // The registration the token named is gone: a late WRITE fails and changes nothing.
  EXPECT_FALSE(LateWrite(token).ok());
  EXPECT_EQ(buf, std::vector<char>(8192, 'B'));
  // A PUT answered with an error (no such bucket) too.
  std::string ptoken = *client_->TokenFor(buf.data(), buf.size(), false);
  ASSERT_FALSE(client_->Put("no-such-bucket-x", "k", buf.data(), buf.size()).ok());
  EXPECT_FALSE(LateWrite(ptoken).ok());
  // A successful call keeps its registration cached (the point of the cache).
  auto data = Pattern(8192, 24);
  ASSERT_TRUE(client_->Put(bucket_, "ok", data.data(), data.size()).ok());
  ASSERT_TRUE(client_->Get(bucket_, "ok", buf.data(), buf.size()).ok());
  std::string kept = *client_->TokenFor(buf.data(), buf.size(), true);
  ASSERT_TRUE(client_->Get(bucket_, "ok", buf.data(), buf.size()).ok());
  EXPECT_EQ(*client_->TokenFor(buf.data(), buf.size(), true), kept);
}

// RegisterMemory keeps one registration of a reused buffer for both directions until Forget()
// (what rdmastor.Buffer builds on): transfers into any part of it add no registration, a failed
// call drops it like any other, and Forget() from another thread kills its rkey.
TEST_F(S3OverRdma, RegisteredMemoryIsKeptUntilForget) {
  const size_t n = 256 * 1024;
  char* buf = static_cast<char*>(
      mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(buf, MAP_FAILED);
  const size_t before = client_->registrations();
  ASSERT_TRUE(client_->RegisterMemory(buf, n).ok());
  EXPECT_EQ(client_->registrations(), before + 1);
  auto whole = rdma::ParseToken(*client_->TokenFor(buf, n, true));
  auto part = rdma::ParseToken(*client_->TokenFor(buf + 4096, 5000, false));
  ASSERT_TRUE(whole.ok() && part.ok());
  EXPECT_EQ(whole->rkey, part->rkey);

  auto data = Pattern(100000, 41);
  std::memcpy(buf + 7, data.data(), data.size());
  ASSERT_TRUE(client_->Put(bucket_, "kept", buf + 7, data.size()).ok());  // remote read
  for (size_t off : {size_t{0}, size_t{4096}, n - data.size()}) {          // remote write
    auto got = client_->Get(bucket_, "kept", buf + off, data.size());
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->transport, Transport::kRdma);
    EXPECT_EQ(std::memcmp(buf + off, data.data(), data.size()), 0);
  }
  EXPECT_EQ(client_->registrations(), before + 1);  // nothing registered per call

  ASSERT_FALSE(client_->Get(bucket_, "no-such-key", buf, n).ok());
  EXPECT_EQ(client_->registrations(), before);  // a failed call dropped it
  ASSERT_TRUE(client_->RegisterMemory(buf, n).ok());
  std::string token = *client_->TokenFor(buf, n, true);
  EXPECT_TRUE(LateWrite(token).ok());
  std::thread([&] { client_->Forget(buf, n); }).join();
  EXPECT_EQ(client_->registrations(), before);
  EXPECT_FALSE(LateWrite(token).ok());
  EXPECT_FALSE(client_->RegisterMemory(nullptr, n).ok());
  munmap(buf, n);
}

// A remote-writable registration of a shared file mapping is refused before anything is sent
// (issue 12 item 2: the kernel refuses such pins on verbs; the rule is the same on every fabric),
// while a private mapping of the same file and anonymous memory receive normally.
TEST_F(S3OverRdma, GetIntoASharedFileMappingIsRefused) {
  auto data = Pattern(20000, 31);
  ASSERT_TRUE(client_->Put(bucket_, "m", data.data(), data.size()).ok());
  std::string path = "s3_over_rdma_map." + std::to_string(getpid());  // in the build tree
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 20000), 0);
  struct statfs fs {};
  ASSERT_EQ(fstatfs(fd, &fs), 0);
  char* shared =
      static_cast<char*>(mmap(nullptr, 20000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  char* priv = static_cast<char*>(mmap(nullptr, 20000, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  ASSERT_NE(shared, MAP_FAILED);
  ASSERT_NE(priv, MAP_FAILED);
  if (static_cast<uint64_t>(fs.f_type) != 0x01021994) {  // tmpfs needs no dirty tracking
    auto refused = client_->Get(bucket_, "m", shared, 20000);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("shared mapping of a file"), std::string::npos)
        << refused.error().message;
    EXPECT_FALSE(client_->TokenFor(shared, 20000, true).ok());
    EXPECT_TRUE(client_->TokenFor(shared, 20000, false).ok());  // PUT only reads it
  }
  auto got = client_->Get(bucket_, "m", priv, 20000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(std::memcmp(priv, data.data(), data.size()), 0);
  client_->Forget(shared, 20000);
  client_->Forget(priv, 20000);
  munmap(shared, 20000);
  munmap(priv, 20000);
  close(fd);
  unlink(path.c_str());
}

TEST(S3OverRdmaTimeout, AnHttpTimeoutDeregistersTheBuffer) {
  // A server that accepts the request and never answers: the client gives up after io_timeout,
  // while such a server could still write into the buffer later.
  uint16_t port = 0;
  int ls = ListenLoopback(port);
  ASSERT_GE(ls, 0);
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint("http://127.0.0.1:" + std::to_string(port), "user",
                                         "password1234");
  cfg.s3.http.io_timeout = std::chrono::milliseconds(500);
  cfg.soft_bind_ip = "127.0.0.1";
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::vector<char> buf(8192, 'B');
  std::string token = *(*c)->TokenFor(buf.data(), buf.size(), true);
  ASSERT_TRUE(LateWrite(token).ok());  // the token works while the call is in flight...
  std::fill(buf.begin(), buf.end(), 'B');
  auto got = (*c)->Get("b", "k", buf.data(), buf.size());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kRequestTimeout) << got.error().message;
  EXPECT_FALSE(LateWrite(token).ok());  // ... and not after the client gave up
  EXPECT_EQ(buf, std::vector<char>(8192, 'B'));
  close(ls);
}

}  // namespace
}  // namespace rdmastor
