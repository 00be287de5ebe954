#include "crypto/kms.h"

#include <sys/stat.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/hash.h"

namespace rdmastor::crypto {

namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Error NotFound(std::string_view id) {
  return MakeError(ErrorCode::kKmsNotFound, "Invalid keyId " + std::string(id));
}

}  // namespace

std::string KmsKeyIdOf(std::string_view v) {
  constexpr std::string_view kArn = "arn:aws:kms:";
  if (v.substr(0, kArn.size()) != kArn) return std::string(v);
  v.remove_prefix(kArn.size());
  auto slash = v.rfind("key/");
  if (slash != std::string_view::npos) return std::string(v.substr(slash + 4));
  return std::string(v);
}

bool ValidKmsKeyId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

Result<std::unique_ptr<LocalKms>> LocalKms::Load(const std::optional<KeyRing>& ring,
                                                 const std::string& key_dir,
                                                 std::string default_id) {
  auto kms = std::unique_ptr<LocalKms>(new LocalKms());
  if (ring) {
    kms->keys_[ring->current().id] = ring->current().key;
    // The keys a rotation replaced still open what they sealed.
    for (const auto& k : ring->previous()) kms->keys_.emplace(k.id, k.key);
  }
  std::string dir_only;  // the single key of the directory, for the default
  size_t dir_keys = 0;
  if (!key_dir.empty()) {
    std::error_code ec;
    std::filesystem::directory_iterator it(key_dir, ec);
    if (ec)
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_KEY_DIR '" + key_dir + "': " + ec.message());
    for (const auto& entry : it) {
      const std::string id = entry.path().filename().string();
      if (id.starts_with(".")) continue;  // editors' and tools' hidden files
      const std::string where = "RDMASTOR_KMS_KEY_DIR: key file '" + entry.path().string() + "'";
      struct stat st {};
      if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return MakeError(ErrorCode::kInvalidArgument, where + " is not a regular file");
      if (!ValidKmsKeyId(id))
        return MakeError(ErrorCode::kInvalidArgument,
                         where + ": the name must be 1-128 of A-Z a-z 0-9 . _ -");
      if (st.st_mode & 077)
        return MakeError(ErrorCode::kInvalidArgument,
                         where + " is readable by group or others: chmod 600 it");
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      if (!in && !in.eof())
        return MakeError(ErrorCode::kInvalidArgument, where + " cannot be read");
      auto raw = hash::Base64Decode(TrimSpace(text.str()));
      if (!raw || raw->size() != kKeySize)
        return MakeError(ErrorCode::kInvalidArgument,
                         where + " must hold base64 of 32 bytes (openssl rand -base64 32)");
      Key k{};
      std::memcpy(k.data(), raw->data(), kKeySize);
      if (!kms->keys_.emplace(id, k).second)
        return MakeError(ErrorCode::kInvalidArgument,
                         where + ": key id '" + id + "' is also MINIO_KMS_SECRET_KEY's or a "
                                 "previous key's name");
      dir_only = id;
      ++dir_keys;
    }
  }
  if (kms->keys_.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "RDMASTOR_KMS_KEY_DIR '" + key_dir + "' holds no key");
  if (default_id.empty()) {
    if (ring)
      default_id = ring->current().id;
    else if (dir_keys == 1)
      default_id = dir_only;
    else
      return MakeError(ErrorCode::kInvalidArgument,
                       "RDMASTOR_KMS_DEFAULT_KEY_ID must name the key aws:kms uses when a request "
                       "names none: the key directory holds " +
                           std::to_string(dir_keys) + " keys and MINIO_KMS_SECRET_KEY is unset");
  }
  if (!kms->HasKey(default_id))
    return MakeError(ErrorCode::kInvalidArgument,
                     "RDMASTOR_KMS_DEFAULT_KEY_ID '" + default_id + "' names no configured key");
  kms->default_id_ = std::move(default_id);
  return kms;
}

bool LocalKms::HasKey(std::string_view id) const { return keys_.find(id) != keys_.end(); }

std::vector<std::string> LocalKms::KeyIds() const {
  std::vector<std::string> out;
  for (const auto& [id, k] : keys_) out.push_back(id);
  return out;
}

Result<std::string> LocalKms::Seal(std::string_view id, const Key& object_key,
                                   std::string_view context) const {
  auto it = keys_.find(id);
  if (it == keys_.end()) return NotFound(id);
  return SealKey(it->second, object_key, context);
}

Result<Key> LocalKms::Unseal(std::string_view id, std::string_view sealed,
                             std::string_view context) const {
  auto it = keys_.find(id);
  if (it == keys_.end()) return NotFound(id);
  return UnsealKey(it->second, sealed, context);
}

}  // namespace rdmastor::crypto
