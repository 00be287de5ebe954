#include "admin/logging.h"

#include <gtest/gtest.h>

namespace rdmastor::admin {
namespace {

TEST(Logging, RedactsPresignedCredentials) {
  EXPECT_EQ(RedactTarget("/b/k"), "/b/k");
  EXPECT_EQ(RedactTarget("/b/k?uploads"), "/b/k?uploads");
  EXPECT_EQ(RedactTarget("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F2024"
                         "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host"
                         "&X-Amz-Signature=abcdef0123"),
            "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED"
            "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=REDACTED");
  EXPECT_EQ(RedactTarget("/b?x-amz-signature=s&partNumber=1&X-Amz-Security-Token=t"),
            "/b?x-amz-signature=REDACTED&partNumber=1&X-Amz-Security-Token=REDACTED");
  // SigV2 presigned URLs.
  EXPECT_EQ(RedactTarget("/b/k?AWSAccessKeyId=AK&Expires=1&Signature=sig"),
            "/b/k?AWSAccessKeyId=REDACTED&Expires=1&Signature=REDACTED");
}

TEST(Logging, RejectsInvalidSettings) {
  auto bad = ConfigureLogging({{"RDMASTOR_LOG_FORMAT", "xml"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("RDMASTOR_LOG_FORMAT"), std::string::npos);
  EXPECT_FALSE(ConfigureLogging({{"RDMASTOR_LOG_REQUESTS", "yes"}}).ok());
  EXPECT_FALSE(ConfigureLogging({{"RDMASTOR_LOG_LEVEL", "loud"}}).ok());
  EXPECT_TRUE(ConfigureLogging({{"RDMASTOR_LOG_REQUESTS", "on"}}).ok());
  EXPECT_TRUE(RequestLogEnabled());
  EXPECT_TRUE(ConfigureLogging({}).ok());
  EXPECT_FALSE(RequestLogEnabled());
}

}  // namespace
}  // namespace rdmastor::admin
