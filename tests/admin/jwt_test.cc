#include "admin/jwt.h"

#include <gtest/gtest.h>

#include "common/hash.h"

namespace rdmastor::admin {
namespace {

constexpr int64_t kNow = 1'700'000'000;

TEST(Jwt, SignsAndVerifiesHs512AndHs256) {
  for (const char* alg : {"HS512", "HS256"}) {
    JwtClaims claims{"admin", "prometheus", kNow + 60};
    std::string token = SignJwt(claims, "secret-key-123", alg);
    auto got = VerifyJwt(token, "secret-key-123", kNow);
    ASSERT_TRUE(got.ok()) << alg << ": " << got.error().message;
    EXPECT_EQ(got->sub, "admin");
    EXPECT_EQ(got->iss, "prometheus");
    EXPECT_EQ(got->exp, kNow + 60);
  }
}

// A token signed independently (Python's hmac over the base64url header.payload), so the
// encoding and the signing input are pinned, not just round-tripped.
TEST(Jwt, VerifiesIndependentlySignedToken) {
  // header {"alg":"HS256","typ":"JWT"}, claims {"exp":4102444800,"sub":"minioadmin"}
  const std::string token =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
      "eyJleHAiOjQxMDI0NDQ4MDAsInN1YiI6Im1pbmlvYWRtaW4ifQ."
      "1zSIlRfKul4OigFhi-vDfV5woydQiEJcjWRc3_dOLpU";
  auto got = VerifyJwt(token, "minioadmin-secret", kNow);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->sub, "minioadmin");
  EXPECT_EQ(got->exp, 4102444800);
}

TEST(Jwt, RejectsWrongSecretExpiredAndTampered) {
  std::string token = SignJwt({"admin", "prometheus", kNow + 60}, "secret-key-123");
  EXPECT_FALSE(VerifyJwt(token, "other-secret", kNow).ok());
  auto expired = VerifyJwt(token, "secret-key-123", kNow + 61);
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.error().message.find("expired"), std::string::npos);
  std::string tampered = SignJwt({"other", "prometheus", kNow + 60}, "secret-key-123");
  // Payload of another token with this token's signature.
  auto p1 = token.find('.'), p2 = token.rfind('.');
  auto q1 = tampered.find('.'), q2 = tampered.rfind('.');
  std::string spliced = token.substr(0, p1) + tampered.substr(q1, q2 - q1) + token.substr(p2);
  EXPECT_FALSE(VerifyJwt(spliced, "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyJwt("not-a-token", "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyJwt("a.b.c.d", "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyJwt("", "secret-key-123", kNow).ok());
}

TEST(Jwt, RejectsAlgNoneAndMissingExp) {
  // {"alg":"none"} . {"exp":4102444800,"sub":"admin"} . (empty signature)
  std::string none = "eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDAsInN1YiI6ImFkbWluIn0.";
  EXPECT_FALSE(VerifyJwt(none, "secret-key-123", kNow).ok());
  JwtClaims no_exp{"admin", "", 0};
  EXPECT_FALSE(VerifyJwt(SignJwt(no_exp, "secret-key-123"), "secret-key-123", kNow).ok());
}

// An HS256 token over arbitrary header and claims JSON, correctly signed.
std::string Hs256Token(const std::string& header, const std::string& claims,
                       const std::string& secret) {
  auto b64url = [](std::string_view bytes) {
    std::string s = hash::Base64Encode(bytes);
    for (auto& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!s.empty() && s.back() == '=') s.pop_back();
    return s;
  };
  std::string input = b64url(header) + "." + b64url(claims);
  return input + "." + b64url(hash::HmacSha256(secret, input));
}

// Claims of the wrong JSON type are refused (403), never an exception (a 500 for anyone).
TEST(Jwt, RejectsClaimsOfTheWrongType) {
  const std::string k = "secret-key-123";
  const std::string good_claims = R"({"exp":4102444800,"sub":"admin"})";
  ASSERT_TRUE(VerifyJwt(Hs256Token(R"({"alg":"HS256"})", good_claims, k), k, kNow).ok());
  for (const char* header : {R"({"alg":5})", R"({"alg":["HS256"]})", R"({"alg":null})"}) {
    auto r = VerifyJwt(Hs256Token(header, good_claims, k), k, kNow);
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_EQ(r.error().code, ErrorCode::kAccessDenied);
  }
  for (const char* claims :
       {R"({"exp":4102444800,"sub":7})", R"({"exp":4102444800,"sub":{"a":1}})",
        R"({"exp":4102444800,"sub":"admin","iss":[]})", R"({"exp":1e300,"sub":"admin"})",
        R"({"exp":18446744073709551615,"sub":"admin"})", R"({"exp":"4102444800","sub":"a"})"}) {
    auto r = VerifyJwt(Hs256Token(R"({"alg":"HS256"})", claims, k), k, kNow);
    ASSERT_FALSE(r.ok()) << claims;
    EXPECT_EQ(r.error().code, ErrorCode::kAccessDenied);
  }
  auto frac =
      VerifyJwt(Hs256Token(R"({"alg":"HS256"})", R"({"exp":4102444800.5,"sub":"a"})", k), k, kNow);
  ASSERT_TRUE(frac.ok());
  EXPECT_EQ(frac->exp, 4102444800);
}

TEST(Jwt, PrometheusBearer) {
  std::string token = SignJwt({"admin", "prometheus", kNow + 60}, "secret-key-123");
  EXPECT_TRUE(VerifyPrometheusBearer("Bearer " + token, "admin", "secret-key-123", kNow).ok());
  EXPECT_TRUE(VerifyPrometheusBearer("bearer " + token, "admin", "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyPrometheusBearer("Bearer " + token, "someone", "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyPrometheusBearer("", "admin", "secret-key-123", kNow).ok());
  EXPECT_FALSE(VerifyPrometheusBearer("Basic abc", "admin", "secret-key-123", kNow).ok());
  auto err = VerifyPrometheusBearer("Bearer x.y.z", "admin", "secret-key-123", kNow);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().code, ErrorCode::kAccessDenied);
}

}  // namespace
}  // namespace rdmastor::admin
