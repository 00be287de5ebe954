// crypto/kms.h: LocalKms loads MINIO_KMS_SECRET_KEY's keys and a key directory (refusing bad,
// shared-readable or duplicate key files), picks its default key, and seals object keys that open
// only under the same key id and context.
#include "crypto/kms.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/hash.h"

namespace rdmastor::crypto {
namespace {

namespace fs = std::filesystem;

class KmsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kms_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::ofstream(dir_ / name) << text;
    ::chmod((dir_ / name).c_str(), mode);
  }
  static std::string KeyText(char fill) { return hash::Base64Encode(std::string(32, fill)) + "\n"; }
  fs::path dir_;
};

KeyRing Ring(const std::string& id, char fill) {
  auto mk = ParseMasterKey(id + ":" + hash::Base64Encode(std::string(32, fill)));
  EXPECT_TRUE(mk.ok());
  return KeyRing(*mk, {});
}

TEST_F(KmsDir, LoadsKeysFromTheRingAndTheDirectory) {
  Write("testkey-1", KeyText('a'));
  Write("testkey-2", "  " + KeyText('b'));
  Write(".editor-swap", "not a key");  // hidden files are skipped
  auto kms = LocalKms::Load(Ring("master", 'm'), dir_.string(), "");
  ASSERT_TRUE(kms.ok()) << kms.error().message;
  EXPECT_EQ((*kms)->KeyIds(), (std::vector<std::string>{"master", "testkey-1", "testkey-2"}));
  EXPECT_EQ((*kms)->DefaultKeyId(), "master");  // the ring's current key
  // The directory alone with one key: that key; with two: the default must be named.
  fs::remove(dir_ / "testkey-2");
  EXPECT_EQ((*LocalKms::Load(std::nullopt, dir_.string(), ""))->DefaultKeyId(), "testkey-1");
  Write("testkey-2", KeyText('b'));
  auto two = LocalKms::Load(std::nullopt, dir_.string(), "");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("RDMASTOR_KMS_DEFAULT_KEY_ID"), std::string::npos);
  EXPECT_EQ((*LocalKms::Load(std::nullopt, dir_.string(), "testkey-2"))->DefaultKeyId(),
            "testkey-2");
  EXPECT_FALSE(LocalKms::Load(std::nullopt, dir_.string(), "absent").ok());
}

TEST_F(KmsDir, RefusesBadKeyFiles) {
  Write("short", hash::Base64Encode(std::string(16, 'a')));
  auto short_key = LocalKms::Load(std::nullopt, dir_.string(), "");
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.error().message.find("short"), std::string::npos);
  fs::remove(dir_ / "short");
  Write("shared", KeyText('a'), 0644);
  auto shared = LocalKms::Load(std::nullopt, dir_.string(), "");
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.error().message.find("chmod 600"), std::string::npos);
  fs::remove(dir_ / "shared");
  Write("bad name!", KeyText('a'));
  EXPECT_FALSE(LocalKms::Load(std::nullopt, dir_.string(), "").ok());
  fs::remove(dir_ / "bad name!");
  Write("master", KeyText('a'));  // the ring's key id again
  EXPECT_FALSE(LocalKms::Load(Ring("master", 'm'), dir_.string(), "").ok());
  fs::remove(dir_ / "master");
  EXPECT_FALSE(LocalKms::Load(std::nullopt, dir_.string(), "").ok());  // no key at all
  EXPECT_FALSE(LocalKms::Load(std::nullopt, (dir_ / "missing").string(), "").ok());
}

TEST_F(KmsDir, SealedKeysOpenOnlyUnderTheirKeyAndContext) {
  Write("k2", KeyText('b'));
  auto kms = LocalKms::Load(Ring("k1", 'a'), dir_.string(), "");
  ASSERT_TRUE(kms.ok());
  const Key object_key = RandomKey();
  auto sealed = (*kms)->Seal("k2", object_key, "ctx");
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(*(*kms)->Unseal("k2", *sealed, "ctx"), object_key);
  EXPECT_EQ((*kms)->Unseal("k1", *sealed, "ctx").error().code, ErrorCode::kAccessDenied);
  EXPECT_EQ((*kms)->Unseal("k2", *sealed, "other").error().code, ErrorCode::kAccessDenied);
  EXPECT_EQ((*kms)->Unseal("k3", *sealed, "ctx").error().code, ErrorCode::kKmsNotFound);
  EXPECT_EQ((*kms)->Seal("k3", object_key, "ctx").error().code, ErrorCode::kKmsNotFound);
}

TEST(KmsKeyIds, ArnsNameTheirKey) {
  EXPECT_EQ(KmsKeyIdOf("testkey-1"), "testkey-1");
  EXPECT_EQ(KmsKeyIdOf("arn:aws:kms:us-east-1:123456789012:key/testkey-1"), "testkey-1");
  EXPECT_EQ(KmsKeyIdOf("arn:aws:kms:my-key"), "my-key");  // MinIO's form
  EXPECT_TRUE(ValidKmsKeyId("a.b_c-1"));
  EXPECT_FALSE(ValidKmsKeyId(""));
  EXPECT_FALSE(ValidKmsKeyId("a/b"));
  EXPECT_FALSE(ValidKmsKeyId(std::string(129, 'a')));
}

}  // namespace
}  // namespace rdmastor::crypto
