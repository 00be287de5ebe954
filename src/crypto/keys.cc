#include "crypto/keys.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

#include "common/hash.h"

namespace rdmastor::crypto {

namespace {

constexpr size_t kSealIvSize = 32;
constexpr std::string_view kSealDomain = "rdmastor object key seal v1";

// The one-time key of a seal: HMAC-SHA256(kek, domain | iv | context). Unique per IV, so the
// AES-GCM nonce under it can be fixed.
std::string SealingKey(const Key& kek, std::string_view iv, std::string_view context) {
  std::string msg(kSealDomain);
  msg += iv;
  msg += context;
  return hash::HmacSha256(std::string_view(reinterpret_cast<const char*>(kek.data()), kek.size()),
                          msg);
}

// AES-256-GCM with a zero nonce; `enc`: seal `in` (32 bytes) into out (32 + tag), else open.
bool Gcm(bool enc, const std::string& key, std::string_view aad, const unsigned char* in,
         size_t in_len, unsigned char* out, unsigned char* tag) {
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  if (!c) std::abort();
  const unsigned char nonce[kNonceSize] = {};
  int n = 0, fin = 0;
  bool ok = EVP_CipherInit_ex(c, EVP_aes_256_gcm(), nullptr,
                              reinterpret_cast<const unsigned char*>(key.data()), nonce,
                              enc ? 1 : 0) == 1 &&
            EVP_CipherUpdate(c, nullptr, &n, reinterpret_cast<const unsigned char*>(aad.data()),
                             static_cast<int>(aad.size())) == 1 &&
            EVP_CipherUpdate(c, out, &n, in, static_cast<int>(in_len)) == 1;
  if (ok && !enc) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kTagSize, tag) == 1;
  ok = ok && EVP_CipherFinal_ex(c, out + n, &fin) == 1;
  if (ok && enc) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kTagSize, tag) == 1;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Key RandomKey() {
  Key k;
  if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) std::abort();
  return k;
}

std::string SealKey(const Key& kek, const Key& object_key, std::string_view context) {
  unsigned char blob[kSealIvSize + kKeySize + kTagSize];
  if (RAND_bytes(blob, kSealIvSize) != 1) std::abort();
  const std::string sk =
      SealingKey(kek, std::string_view(reinterpret_cast<char*>(blob), kSealIvSize), context);
  if (!Gcm(true, sk, context, object_key.data(), kKeySize, blob + kSealIvSize,
           blob + kSealIvSize + kKeySize))
    std::abort();
  return hash::Base64Encode(std::string_view(reinterpret_cast<char*>(blob), sizeof(blob)));
}

Result<Key> UnsealKey(const Key& kek, std::string_view sealed, std::string_view context) {
  auto raw = hash::Base64Decode(sealed);
  if (!raw || raw->size() != kSealIvSize + kKeySize + kTagSize)
    return MakeError(ErrorCode::kInternalError, "sealed object key is malformed");
  const auto* p = reinterpret_cast<const unsigned char*>(raw->data());
  unsigned char tag[kTagSize];
  std::memcpy(tag, p + kSealIvSize + kKeySize, kTagSize);
  const std::string sk = SealingKey(kek, raw->substr(0, kSealIvSize), context);
  Key out;
  if (!Gcm(false, sk, context, p + kSealIvSize, kKeySize, out.data(), tag))
    return MakeError(ErrorCode::kAccessDenied, "the object key does not open with this key");
  return out;
}

Result<MasterKey> ParseMasterKey(std::string_view spec) {
  spec = Trim(spec);
  auto colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return MakeError(ErrorCode::kInvalidArgument,
                     "a master key is 'name:base64-of-32-bytes' (no name given)");
  MasterKey mk;
  mk.id = std::string(spec.substr(0, colon));
  auto raw = hash::Base64Decode(spec.substr(colon + 1));
  if (!raw)
    return MakeError(ErrorCode::kInvalidArgument,
                     "master key '" + mk.id + "': the key is not valid base64");
  if (raw->size() != kKeySize)
    return MakeError(ErrorCode::kInvalidArgument,
                     "master key '" + mk.id + "': the key must be 32 bytes, not " +
                         std::to_string(raw->size()));
  std::memcpy(mk.key.data(), raw->data(), kKeySize);
  return mk;
}

const MasterKey* KeyRing::Find(std::string_view id) const {
  if (current_.id == id) return &current_;
  for (const auto& k : previous_)
    if (k.id == id) return &k;
  return nullptr;
}

Result<std::optional<KeyRing>> KeyRingFromEnv() {
  return ParseKeyRing(std::getenv("MINIO_KMS_SECRET_KEY"),
                      std::getenv("RDMASTOR_KMS_PREVIOUS_SECRET_KEYS"));
}

Result<std::optional<KeyRing>> ParseKeyRing(const char* cur, const char* prev) {
  if (!cur || Trim(cur).empty()) {
    if (prev && !Trim(prev).empty())
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_PREVIOUS_SECRET_KEYS is set but MINIO_KMS_SECRET_KEY is not");
    return std::optional<KeyRing>();
  }
  auto current = ParseMasterKey(cur);
  if (!current.ok())
    return MakeError(ErrorCode::kInvalidArgument, "MINIO_KMS_SECRET_KEY: " + current.error().message);
  std::vector<MasterKey> previous;
  std::string_view rest = prev ? prev : "";
  while (!Trim(rest).empty()) {
    auto comma = rest.find(',');
    auto item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    auto k = ParseMasterKey(item);
    if (!k.ok())
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_PREVIOUS_SECRET_KEYS: " + k.error().message);
    if (k->id == current->id)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_PREVIOUS_SECRET_KEYS: key name '" + k->id +
                           "' is the current key's name");
    previous.push_back(std::move(*k));
  }
  return std::optional<KeyRing>(KeyRing(std::move(*current), std::move(previous)));
}

}  // namespace rdmastor::crypto
