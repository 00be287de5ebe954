#include "cluster/peer_auth.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/hash.h"

namespace rdmastor::cluster {
namespace {

constexpr const char* kSelf = "127.0.0.1:9002";
constexpr const char* kTarget = "/minio/storage/v1/commit?disk=%2Fd1";
constexpr const char* kBody = R"({"base":"b","target":"b/k"})";

// A request as PeerClient::Call sends it: `headers` plus the signature over them and `body`.
s3::HttpRequest Signed(const PeerAuth& auth, std::string_view body = kBody,
                       s3::HeaderList headers = {}, std::string method = "POST",
                       std::string target = kTarget, std::string destination = kSelf) {
  s3::HttpRequest req;
  req.method = method;
  req.target = target;
  req.headers = headers;
  req.headers.emplace_back(kPeerAuthHeader, auth.Sign(method, destination, target, body, headers));
  return req;
}

void ExpectDenied(const Status& st, std::string_view why) {
  ASSERT_FALSE(st.ok()) << "accepted; expected refusal: " << why;
  EXPECT_EQ(st.error().code, ErrorCode::kAccessDenied);
  EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
}

template <typename T>
Status StatusOf(const Result<T>& r) {
  if (r.ok()) return {};
  return r.error();
}

// The whole check a serving node makes, in its order.
Status Accept(const PeerAuth& auth, PeerReplayCache& cache, const s3::HttpRequest& req,
              std::string_view body, int64_t now = PeerAuthNowMs()) {
  auto sig = auth.Verify(req, kSelf, now);
  if (!sig.ok()) return sig.error();
  if (auto st = cache.Admit(*sig, now); !st.ok()) return st;
  return CheckBody(*sig, body);
}

PeerReplayCache FreshCache(size_t capacity = 1 << 20) {
  return PeerReplayCache(capacity, PeerAuthNowMs() - 60'000);
}

TEST(PeerAuth, SignedRequestIsAccepted) {
  PeerAuth a("access", "secret1234");
  auto cache = FreshCache();
  auto req = Signed(a);
  EXPECT_TRUE(Accept(a, cache, req, kBody).ok());
  // Header: v2 <ms> <32 hex nonce> <sha256(body)> <mac>.
  const std::string h = *req.FindHeader(kPeerAuthHeader);
  EXPECT_EQ(h.rfind("v2 ", 0), 0u) << h;
  EXPECT_NE(h.find(" " + hash::Sha256Hex(kBody) + " "), std::string::npos) << h;
  // Every request gets its own nonce.
  EXPECT_NE(h, *Signed(a).FindHeader(kPeerAuthHeader));
  // An empty body and the RDMA headers sign and verify as well.
  s3::HeaderList rdma{{kInternodeTokenHeader, "tok-1"},
                      {kInternodeLengthHeader, "1048576"},
                      {kPeerNodeHeader, "127.0.0.1:9001"}};
  EXPECT_TRUE(Accept(a, cache, Signed(a, "", rdma), "").ok());
}

TEST(PeerAuth, OtherCredentialsAreRefused) {
  PeerAuth a("access", "secret1234"), b("access", "other-secret");
  auto cache = FreshCache();
  ExpectDenied(Accept(b, cache, Signed(a), kBody), "bad signature");
  EXPECT_NE(a.credential_hash(), b.credential_hash());
  EXPECT_EQ(a.credential_hash(), PeerAuth("access", "secret1234").credential_hash());
  EXPECT_EQ(a.credential_hash().find("secret"), std::string::npos);
}

TEST(PeerAuth, TamperedBodyIsRefused) {
  PeerAuth a("access", "secret1234");
  auto cache = FreshCache();
  auto req = Signed(a);
  ExpectDenied(Accept(a, cache, req, R"({"base":"b","target":"b/other"})"), "body is not");
  auto cache2 = FreshCache();
  ExpectDenied(Accept(a, cache2, req, ""), "body is not");
  // Putting the forged body's hash into the header breaks the MAC instead.
  const std::string forged = "forged";
  std::string h = *req.FindHeader(kPeerAuthHeader);
  const size_t at = h.find(hash::Sha256Hex(kBody));
  ASSERT_NE(at, std::string::npos);
  h.replace(at, 64, hash::Sha256Hex(forged));
  s3::HttpRequest swapped = req;
  swapped.headers = {{kPeerAuthHeader, h}};
  auto cache3 = FreshCache();
  ExpectDenied(Accept(a, cache3, swapped, forged), "bad signature");
}

TEST(PeerAuth, ReplayedNonceIsRefused) {
  PeerAuth a("access", "secret1234");
  auto cache = FreshCache();
  auto req = Signed(a);
  ASSERT_TRUE(Accept(a, cache, req, kBody).ok());
  ExpectDenied(Accept(a, cache, req, kBody), "nonce already used");
  // The same header with another body: refused as a replay before the body counts.
  ExpectDenied(Accept(a, cache, req, "{}"), "nonce already used");
  EXPECT_EQ(cache.size(), 1u);
}

TEST(PeerAuth, StaleOrFutureTimeIsRefused) {
  PeerAuth a("access", "secret1234");
  const int64_t now = PeerAuthNowMs();
  const std::string nonce(32, 'a');
  for (int64_t when :
       {now - kPeerAuthSkew.count() - 1, now + kPeerAuthSkew.count() + 1, int64_t{1000}}) {
    s3::HttpRequest req;
    req.method = "POST";
    req.target = kTarget;
    req.headers = {{kPeerAuthHeader, a.SignWith("POST", kSelf, kTarget, kBody, {}, when, nonce)}};
    ExpectDenied(StatusOf(a.Verify(req, kSelf, now)), "clock");
  }
  // Inside the window: accepted.
  s3::HttpRequest ok;
  ok.method = "POST";
  ok.target = kTarget;
  ok.headers = {{kPeerAuthHeader, a.SignWith("POST", kSelf, kTarget, kBody, {},
                                             now - kPeerAuthSkew.count() + 1000, nonce)}};
  EXPECT_TRUE(a.Verify(ok, kSelf, now).ok());
}

TEST(PeerAuth, SwappedMethodTargetOrNodeIsRefused) {
  PeerAuth a("access", "secret1234");
  auto req = Signed(a);
  s3::HttpRequest other = req;
  other.target = "/minio/storage/v1/removeall?disk=%2Fd1&path=b";
  ExpectDenied(StatusOf(a.Verify(other, kSelf, PeerAuthNowMs())), "bad signature");
  other = req;
  other.target = std::string(kTarget) + "&x=1";
  ExpectDenied(StatusOf(a.Verify(other, kSelf, PeerAuthNowMs())), "bad signature");
  other = req;
  other.method = "PUT";
  ExpectDenied(StatusOf(a.Verify(other, kSelf, PeerAuthNowMs())), "bad signature");
  // Signed for one node, replayed at another (the same drive path on every node).
  ExpectDenied(StatusOf(a.Verify(req, "127.0.0.1:9003", PeerAuthNowMs())), "another node");
}

TEST(PeerAuth, RdmaHeadersCannotBeAddedRemovedOrChanged) {
  PeerAuth a("access", "secret1234");
  const s3::HeaderList rdma{{kInternodeTokenHeader, "tok-1"},
                            {kInternodeLengthHeader, "1048576"},
                            {kPeerNodeHeader, "127.0.0.1:9001"}};
  auto check = [&](const s3::HttpRequest& signed_req, const s3::HeaderList& replace,
                   const char* what) {
    SCOPED_TRACE(what);
    s3::HttpRequest r = signed_req;
    r.headers = replace;
    r.headers.emplace_back(kPeerAuthHeader, *signed_req.FindHeader(kPeerAuthHeader));
    ExpectDenied(StatusOf(a.Verify(r, kSelf, PeerAuthNowMs())), "");
  };
  // Signed without a token: adding one (an empty one too) is refused.
  auto plain = Signed(a, "", {{kPeerNodeHeader, "127.0.0.1:9001"}});
  check(plain,
        {{kPeerNodeHeader, "127.0.0.1:9001"},
         {kInternodeTokenHeader, "tok-evil"},
         {kInternodeLengthHeader, "4096"}},
        "token added");
  check(plain, {{kPeerNodeHeader, "127.0.0.1:9001"}, {kInternodeTokenHeader, ""}},
        "empty token added");
  // Signed with one: removing, changing, or pointing the pull at another node is refused.
  auto with = Signed(a, "", rdma);
  check(with, {rdma[1], rdma[2]}, "token removed");
  check(with, {{kInternodeTokenHeader, "tok-2"}, rdma[1], rdma[2]}, "token changed");
  check(with, {rdma[0], {kInternodeLengthHeader, "2097152"}, rdma[2]}, "length changed");
  check(with, {rdma[0], rdma[1], {kPeerNodeHeader, "10.0.0.9:9001"}}, "node changed");
  check(with, {rdma[0], rdma[1]}, "node removed");
  // A signed header twice (which copy would count?) is refused even if the first matches.
  s3::HttpRequest dup = with;
  dup.headers.emplace_back(kInternodeTokenHeader, "tok-evil");
  ExpectDenied(StatusOf(a.Verify(dup, kSelf, PeerAuthNowMs())), "more than once");
  // Headers outside the signed set do not matter.
  s3::HttpRequest extra = with;
  extra.headers.emplace_back("user-agent", "x");
  EXPECT_TRUE(a.Verify(extra, kSelf, PeerAuthNowMs()).ok());
}

TEST(PeerAuth, OldOrMalformedHeadersAreRefused) {
  PeerAuth a("access", "secret1234");
  auto req = Signed(a);
  const std::string good = *req.FindHeader(kPeerAuthHeader);
  const int64_t now = PeerAuthNowMs();
  auto with = [&](const std::string& value) {
    s3::HttpRequest r = req;
    r.headers = {{kPeerAuthHeader, value}};
    return StatusOf(a.Verify(r, kSelf, now));
  };
  // A v1 header as the previous release computed it (HMAC over method, target, time only).
  const std::string ts = std::to_string(now);
  const std::string key = hash::HmacSha256("rdmastor-peer-v1", "access\nsecret1234");
  const std::string v1 =
      hash::HexEncode(hash::HmacSha256(key, std::string("POST\n") + kTarget + "\n" + ts));
  ExpectDenied(with("v1 " + ts + " " + v1), "not a v2 signature");
  ExpectDenied(with("v3" + good.substr(2)), "not a v2 signature");
  ExpectDenied(with(good + " extra"), "malformed");
  ExpectDenied(with(good + " "), "malformed");
  ExpectDenied(with("v2  " + good.substr(3)), "malformed");
  ExpectDenied(with(good.substr(0, good.rfind(' '))), "malformed");
  std::string upper = good;
  for (char& c : upper)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  upper[0] = 'v';
  ExpectDenied(with(upper), "malformed");
  ExpectDenied(with("v2 -5" + good.substr(good.find(' ', 3))), "malformed time");
  s3::HttpRequest none = req;
  none.headers.clear();
  ExpectDenied(StatusOf(a.Verify(none, kSelf, now)), "no x-rdmastor-peer-auth");
}

TEST(PeerAuth, MessageCoversAbsenceOfAHeader) {
  // An absent header and one present but empty sign differently.
  EXPECT_NE(PeerAuthMessage("POST", kSelf, kTarget, "1", "n", "h", {}),
            PeerAuthMessage("POST", kSelf, kTarget, "1", "n", "h", {{kInternodeTokenHeader, ""}}));
}

PeerSignature SigAt(int64_t time_ms, int i) {
  char nonce[33];
  std::snprintf(nonce, sizeof nonce, "%032x", i);
  return PeerSignature{time_ms, nonce, std::string(64, '0')};
}

TEST(PeerReplayCache, ForgetsNoncesOnlyOnceTheirTimeIsOutOfTheWindow) {
  const int64_t start = 1'000'000'000;
  const int64_t w = kPeerAuthSkew.count();
  PeerReplayCache cache(16, start);
  ASSERT_TRUE(cache.Admit(SigAt(start + 10, 1), start + 10).ok());
  // Still inside the window at its last millisecond: a replay is refused.
  ExpectDenied(cache.Admit(SigAt(start + 10, 1), start + 10 + w), "nonce already used");
  // Past it the entry is dropped, and the request is refused as stale instead.
  ExpectDenied(cache.Admit(SigAt(start + 10, 1), start + 11 + w), "clock");
  EXPECT_EQ(cache.size(), 0u);
}

TEST(PeerReplayCache, RefusesRequestsSignedBeforeItStarted) {
  const int64_t start = 1'000'000'000;
  PeerReplayCache cache(16, start);
  ExpectDenied(cache.Admit(SigAt(start - 1, 1), start + 5), kPeerSignedBeforeStart);
  EXPECT_TRUE(cache.Admit(SigAt(start, 2), start + 5).ok());
}

TEST(PeerReplayCache, AtTheCapTheWindowShrinksAndNoReplayPasses) {
  const int64_t start = 1'000'000'000;
  PeerReplayCache cache(4, start);
  const int64_t now = start + 100;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(cache.Admit(SigAt(start + 10 + i, i), now).ok()) << i;
  EXPECT_EQ(cache.size(), 4u);
  // Nonces 0 and 1 were dropped: their replays are refused as older than the cache covers.
  for (int i = 0; i < 2; ++i)
    ExpectDenied(cache.Admit(SigAt(start + 10 + i, i), now), "older than the replay cache");
  // Kept ones are refused as replays; newer requests still pass.
  for (int i = 2; i < 6; ++i)
    ExpectDenied(cache.Admit(SigAt(start + 10 + i, i), now), "nonce already used");
  EXPECT_TRUE(cache.Admit(SigAt(start + 50, 100), now).ok());
  EXPECT_EQ(cache.size(), 4u);
}

// Inter-node RDMA connect proofs (issue 37 item 9): good for one target, one source address,
// one cluster key, within the skew; the nonce is the replay cache's.
TEST(PeerAuthConnect, ProofVerifiesOnlyForItsTargetSourceKeyAndTime) {
  PeerAuth auth("minioadmin", "minioadmin");
  const rdma::ConnectContext c{0x0a000001, 9200, 0x123456, 0x0a000002};
  const int64_t now = 1'700'000'000'000;
  auto proof = auth.SignConnectWith(NodeId("node1:9000"), c, now, 42);
  ASSERT_EQ(proof.size(), kConnectProofBytes);
  auto ok = auth.VerifyConnect(c, proof.data(), proof.size(), now + 10);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->node, NodeId("node1:9000"));
  EXPECT_NE(NodeId("node1:9000"), NodeId("node2:9000"));
  EXPECT_EQ(ok->signature.time_ms, now);

  ExpectDenied(StatusOf(auth.VerifyConnect(c, nullptr, 0, now)), "no proof");
  ExpectDenied(StatusOf(auth.VerifyConnect(c, proof.data(), proof.size() - 1, now)), "malformed");
  for (auto other : {rdma::ConnectContext{0x0a000003, 9200, 0x123456, 0x0a000002},   // target
                     rdma::ConnectContext{0x0a000001, 9201, 0x123456, 0x0a000002},   // port
                     rdma::ConnectContext{0x0a000001, 9200, 0x123457, 0x0a000002},   // endpoint
                     rdma::ConnectContext{0x0a000001, 9200, 0x123456, 0x0a000009}})  // source
    ExpectDenied(StatusOf(auth.VerifyConnect(other, proof.data(), proof.size(), now)), "bad MAC");
  PeerAuth stranger("someone", "else-entirely");
  ExpectDenied(StatusOf(stranger.VerifyConnect(c, proof.data(), proof.size(), now)), "bad MAC");
  // Another node's name in a proof made by this one: the MAC covers the node id.
  auto renamed = proof;
  renamed[0] ^= 1;
  ExpectDenied(StatusOf(auth.VerifyConnect(c, renamed.data(), renamed.size(), now)), "bad MAC");
  ExpectDenied(StatusOf(auth.VerifyConnect(c, proof.data(), proof.size(), now + kPeerAuthSkew.count() + 1)),
               "clock");

  // The replay cache refuses the same proof twice.
  PeerReplayCache cache(16, now - kPeerAuthSkew.count());
  EXPECT_TRUE(cache.Admit(ok->signature, now).ok());
  auto again = auth.VerifyConnect(c, proof.data(), proof.size(), now + 20);
  ASSERT_TRUE(again.ok());
  ExpectDenied(cache.Admit(again->signature, now + 20), "nonce already used");
  // A fresh proof (SignConnect: new nonce, now) is admitted.
  auto fresh = auth.SignConnect("node1:9000", c);
  auto f = auth.VerifyConnect(c, fresh.data(), fresh.size(), PeerAuthNowMs());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(cache.Admit(f->signature, PeerAuthNowMs()).ok());
}

}  // namespace
}  // namespace rdmastor::cluster
