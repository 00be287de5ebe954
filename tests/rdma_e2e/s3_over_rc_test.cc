// S3 over RDMA on RC connections the client opens (docs/s3-over-rdma.md, "RC transport"), end to
// end: the real server binary on the soft fabric (which gives RC its semantics over TCP) and the
// client library with transport kRc. The same protocol logic (the connection table, the signed
// x-amz-rdma-connection checks) serves the verbs listener.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "rdma/rc_sessions.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/token.h"
#include "rdmastor/rdma_client.h"
#include "s3/sigv4.h"
#include "server_process.h"

namespace rdmastor {
namespace {

using client::ByteRange;
using client::RdmaClientConfig;
using client::RdmaS3Client;
using client::RdmaTransport;
using client::S3Request;
using client::Transport;
using testing::FreePort;
using testing::ServerProcess;
using testing::Pattern;
using testing::Header;

// The value of the metric line starting with `series` ("name{labels}" or "name"), or -1.
double Metric(ServerProcess& server, const std::string& series) {
  client::HttpClient http("127.0.0.1", server.port());
  client::HttpRequest req;
  req.target = "/minio/v2/metrics/node";
  auto r = http.Send(req);
  if (!r.ok() || r->status != 200) return -1;
  auto at = r->body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(r->body.c_str() + at + series.size() + 2, nullptr);
}

class S3OverRc : public ::testing::Test {
 protected:
  void SetUp() override {
    rc_port_ = FreePort();
    ASSERT_TRUE(server_.Start({{"MINIO_RDMA_FABRIC", "soft"},
                               {"MINIO_RDMA_RC_PORT", std::to_string(rc_port_)},
                               {"RDMASTOR_RDMA_RC_PER_SOURCE", "2"},
                               {"MINIO_PROMETHEUS_AUTH_TYPE", "public"}}))
        << server_.log();
    client_ = NewClient();
    ASSERT_TRUE(client_->http().CreateBucket("rcb").ok());
  }
  void TearDown() override { EXPECT_TRUE(server_.alive()) << server_.log(); }

  std::unique_ptr<RdmaS3Client> NewClient(std::string bind_ip = "") {
    RdmaClientConfig cfg;
    cfg.s3 = *client::S3ConfigFromEndpoint(server_.endpoint(), ServerProcess::kUser,
                                           ServerProcess::kPassword);
    cfg.soft_bind_ip = std::move(bind_ip);
    cfg.transport = RdmaTransport::kRc;
    cfg.rc_port = rc_port_;
    auto c = RdmaS3Client::Create(cfg);
    EXPECT_TRUE(c.ok()) << c.error().message;
    return std::move(c).value();
  }

  double Traffic(const char* dir, const char* transport) {
    return Metric(server_, std::string("minio_s3_traffic_") + dir + "_bytes{transport=\"" +
                               transport + "\"}");
  }
  double RcEvents(const char* event) {
    return Metric(server_,
                  std::string("rdmastor_rdma_rc_connection_events{event=\"") + event + "\"}");
  }

  // A signed request carrying a token and an x-amz-rdma-connection of the caller's choosing.
  Result<client::HttpResponse> Raw(RdmaS3Client& c, const std::string& method,
                                   const std::string& key, const std::string& token,
                                   const std::string& connection) {
    S3Request req;
    req.method = method;
    req.bucket = "rcb";
    req.key = key;
    req.headers = {{"x-amz-rdma-token", token}, {"x-amz-rdma-connection", connection}};
    if (method == "PUT") req.payload_sha256 = "UNSIGNED-PAYLOAD";
    return c.http().Execute(req, client::ResponseTarget::String());
  }

  ServerProcess server_;
  uint16_t rc_port_ = 0;
  std::unique_ptr<RdmaS3Client> client_;
};

TEST_F(S3OverRc, PutGetRangeAndUploadPartByteIdenticalOnOneConnection) {
  auto upload = client_->CreateMultipartUpload("rcb", "mp");  // its XML reply is HTTP payload
  ASSERT_TRUE(upload.ok());
  double rdma_in = Traffic("received", "rdma"), rdma_out = Traffic("sent", "rdma");
  double tcp_in = Traffic("received", "tcp"), tcp_out = Traffic("sent", "tcp");
  uint64_t moved_in = 0, moved_out = 0;
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{4096}, (size_t{1} << 20) + 1, size_t{64} << 20}) {
    SCOPED_TRACE(size);
    auto data = Pattern(size, static_cast<uint32_t>(size) + 3);
    auto put = client_->Put("rcb", "obj", data.data(), data.size());
    ASSERT_TRUE(put.ok()) << put.error().message;
    EXPECT_EQ(put->transport, Transport::kRdma);
    EXPECT_EQ(*Header(put->headers, "x-amz-rdma-reply"), "200");
    std::vector<char> back(size + 32, 'G');
    auto get = client_->Get("rcb", "obj", back.data(), size);
    ASSERT_TRUE(get.ok()) << get.error().message;
    EXPECT_EQ(get->status, 200);
    EXPECT_EQ(get->bytes, size);
    EXPECT_EQ(get->etag, put->etag);
    EXPECT_EQ(std::memcmp(back.data(), data.data(), size), 0);
    EXPECT_EQ(std::string(back.data() + size, 32), std::string(32, 'G'));
    moved_in += size;
    moved_out += size;
    if (size >= 2) {
      uint64_t first = size / 3, last = size - 2;
      uint64_t n = last - first + 1;
      std::vector<char> part(n);
      auto r = client_->Get("rcb", "obj", part.data(), n, ByteRange{first, last});
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->status, 206);
      EXPECT_EQ(*Header(r->headers, "x-amz-rdma-reply"), "206");
      EXPECT_EQ(std::memcmp(part.data(), data.data() + first, n), 0);
      client_->Forget(part.data(), part.size());
      moved_out += n;
    }
    client_->Forget(back.data(), back.size());
  }
  // UploadPart over RC, completed over HTTP.
  auto p1 = Pattern(5 << 20, 91), p2 = Pattern((1 << 20) + 1, 92);
  auto e1 = client_->UploadPart("rcb", "mp", *upload, 1, p1.data(), p1.size());
  auto e2 = client_->UploadPart("rcb", "mp", *upload, 2, p2.data(), p2.size());
  ASSERT_TRUE(e1.ok() && e2.ok());
  EXPECT_EQ(e1->transport, Transport::kRdma);
  moved_in += p1.size() + p2.size();
  EXPECT_EQ(Traffic("received", "rdma") - rdma_in, static_cast<double>(moved_in));
  EXPECT_EQ(Traffic("sent", "rdma") - rdma_out, static_cast<double>(moved_out));
  EXPECT_EQ(Traffic("received", "tcp") - tcp_in, 0) << "no payload over HTTP";
  EXPECT_EQ(Traffic("sent", "tcp") - tcp_out, 0) << "no payload over HTTP";
  ASSERT_TRUE(
      client_->CompleteMultipartUpload("rcb", "mp", *upload, {{1, e1->etag}, {2, e2->etag}}).ok());
  std::vector<char> whole(p1.size() + p2.size());
  ASSERT_TRUE(client_->Get("rcb", "mp", whole.data(), whole.size()).ok());
  EXPECT_EQ(std::memcmp(whole.data(), p1.data(), p1.size()), 0);
  EXPECT_EQ(std::memcmp(whole.data() + p1.size(), p2.data(), p2.size()), 0);
  // Every one of those requests used the one connection the client opened.
  EXPECT_EQ(RcEvents("admitted"), 1);
  EXPECT_EQ(Metric(server_, "rdmastor_rdma_rc_connections"), 1);
}

TEST_F(S3OverRc, TheConnectionHeaderIsSignedStrictAndNeverGuessed) {
  auto data = Pattern(1000, 5);
  ASSERT_TRUE(client_->Put("rcb", "k", data.data(), data.size()).ok());
  std::vector<char> buf(1000);
  auto token = client_->TokenFor(buf.data(), buf.size(), true);
  ASSERT_TRUE(token.ok());
  // Malformed: 400 InvalidRDMAToken, nothing written.
  auto bad = Raw(*client_, "GET", "k", *token, "00000000DEADBEEF");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("InvalidRDMAToken"), std::string::npos);
  // A connection nobody opened: 501, the client is told to connect again.
  auto unknown = Raw(*client_, "GET", "k", *token, "0123456789abcdef");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 501);
  EXPECT_EQ(*unknown->FindHeader("x-amz-rdma-reply"), "501");
  EXPECT_NE(unknown->body.find("connect again"), std::string::npos);
  EXPECT_EQ(buf, std::vector<char>(1000, 0));
  // Signed token, unsigned connection header: 403 naming it.
  const auto& cfg = client_->http().config();
  s3::SignInput in;
  in.method = "GET";
  in.raw_path = client::S3ObjectPath("rcb", "k");
  in.headers = {{"host", client_->http().http().host_header()}, {"x-amz-rdma-token", *token}};
  in.payload_sha256 = "UNSIGNED-PAYLOAD";
  in.access_key = cfg.access_key;
  in.secret_key = cfg.secret_key;
  in.now_unix = static_cast<int64_t>(time(nullptr));
  client::HttpRequest http;
  http.target = in.raw_path;
  http.headers = s3::SignRequest(in);
  http.headers.emplace_back("x-amz-rdma-connection", "0123456789abcdef");
  auto r = client_->http().http().Send(http);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("<HeadersNotSigned>x-amz-rdma-connection</HeadersNotSigned>"),
            std::string::npos)
      << r->body;
  EXPECT_EQ(buf, std::vector<char>(1000, 0));
}

TEST_F(S3OverRc, AnotherSourcesConnectionOrTokenIsRefused) {
  auto data = Pattern(4096, 6);
  ASSERT_TRUE(client_->Put("rcb", "k", data.data(), data.size()).ok());  // A's own connection
  std::vector<char> abuf(4096);
  auto a_token = client_->TokenFor(abuf.data(), abuf.size(), true);
  ASSERT_TRUE(a_token.ok());

  // A connection opened from another address (127.0.0.2), named by a request from 127.0.0.1
  // with a token that matches that connection exactly: refused (another source).
  auto other_host = rdma::soft::SoftTarget::Start({"127.0.0.2"});
  ASSERT_TRUE(other_host.ok());
  auto foreign = (*other_host)->RcConnection(0x7f000001, rc_port_, false);
  ASSERT_TRUE(foreign.ok()) << foreign.error().message;
  auto t = rdma::ParseToken(*a_token);
  ASSERT_TRUE(t.ok());
  t->lid = foreign->self.lid;
  t->qpn = foreign->self.qpn;
  t->gid = foreign->self.gid;
  auto r =
      Raw(*client_, "GET", "k", rdma::FormatToken(*t), rdma::FormatRcConnectionId(foreign->id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("was opened from 127.0.0.2, not from 127.0.0.1"), std::string::npos)
      << r->body;

  // A neighbour's connection from the same address, named with A's own token (A's queue pair,
  // not the connection's peer): refused, A's memory untouched.
  auto neighbour = rdma::soft::SoftTarget::Start({"127.0.0.1"});
  ASSERT_TRUE(neighbour.ok());
  auto theirs = (*neighbour)->RcConnection(0x7f000001, rc_port_, false);
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;
  r = Raw(*client_, "GET", "k", *a_token, rdma::FormatRcConnectionId(theirs->id));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("another queue pair"), std::string::npos) << r->body;
  EXPECT_EQ(abuf, std::vector<char>(4096, 0));
  EXPECT_EQ(RcEvents("foreign"), 2);
  EXPECT_EQ(Metric(server_, "rdmastor_rdma_rc_connections"), 3);

  // Per-source cap (2 here): 127.0.0.1 holds A's and the neighbour's; a third is refused before
  // any endpoint is made for it, while 127.0.0.2 may still open its second.
  auto third = rdma::soft::SoftTarget::Start({"127.0.0.1"});
  ASSERT_TRUE(third.ok());
  auto refused = (*third)->RcConnection(0x7f000001, rc_port_, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("refused the connection"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(RcEvents("refused"), 1);
  auto second = rdma::soft::SoftTarget::Start({"127.0.0.2"});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE((*second)->RcConnection(0x7f000001, rc_port_, false).ok());
}

TEST_F(S3OverRc, ADeadClientsConnectionIsFreedAndANewOneWorks) {
  auto data = Pattern(3 << 20, 7);
  ASSERT_TRUE(client_->Put("rcb", "k", data.data(), data.size()).ok());
  EXPECT_EQ(Metric(server_, "rdmastor_rdma_rc_connections"), 1);
  client_.reset();  // the client process's target goes away: its connection ends
  bool freed = false;
  for (int i = 0; i < 50 && !freed; ++i) {  // the reaper runs every second
    freed = Metric(server_, "rdmastor_rdma_rc_connections") == 0;
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(freed) << "the server still holds the dead client's connection";
  EXPECT_EQ(RcEvents("closed_dead"), 1);
  client_ = NewClient();
  std::vector<char> back(data.size());
  auto got = client_->Get("rcb", "k", back.data(), back.size());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(back, data);
}

TEST(S3OverRcIdle, AnIdleConnectionIsClosedAndTheClientReconnectsOnce) {
  ServerProcess server;
  uint16_t rc_port = FreePort();
  ASSERT_TRUE(server.Start({{"MINIO_RDMA_FABRIC", "soft"},
                            {"MINIO_RDMA_RC_PORT", std::to_string(rc_port)},
                            {"RDMASTOR_RDMA_RC_IDLE_TIMEOUT", "1s"},
                            {"MINIO_PROMETHEUS_AUTH_TYPE", "public"}}))
      << server.log();
  RdmaClientConfig cfg;
  cfg.s3 = *client::S3ConfigFromEndpoint(server.endpoint(), ServerProcess::kUser,
                                         ServerProcess::kPassword);
  cfg.transport = RdmaTransport::kRc;
  cfg.rc_port = rc_port;
  auto c = RdmaS3Client::Create(cfg);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->http().CreateBucket("idle").ok());
  auto data = Pattern(10000, 8);
  ASSERT_TRUE((*c)->Put("idle", "k", data.data(), data.size()).ok());
  bool closed = false;
  for (int i = 0; i < 60 && !closed; ++i) {
    closed = Metric(server, "rdmastor_rdma_rc_connection_events{event=\"closed_idle\"}") == 1;
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(closed);
  std::vector<char> back(data.size());
  auto got = (*c)->Get("idle", "k", back.data(), back.size());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(back, data);
  EXPECT_EQ(Metric(server, "rdmastor_rdma_rc_connection_events{event=\"admitted\"}"), 2);
}

}  // namespace
}  // namespace rdmastor
