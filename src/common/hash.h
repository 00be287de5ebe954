// Hashes, MACs, checksums and encodings used across the server (OpenSSL for MD5/SHA/HMAC, isa-l
// for CRC32 and CRC32C).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rdmastor::hash {

enum class Algo { kMD5, kSHA1, kSHA256, kCRC32, kCRC32C };

// Incremental hasher. Final() returns the raw digest bytes (CRC values big-endian, 4 bytes, as S3
// transmits them in x-amz-checksum-crc32/crc32c before base64).
class Hasher {
 public:
  virtual ~Hasher() = default;
  virtual void Update(const void* data, size_t len) = 0;
  virtual std::string Final() = 0;  // call once
};
std::unique_ptr<Hasher> NewHasher(Algo algo);

// One-shot helpers; return raw digest bytes.
std::string Digest(Algo algo, std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);
std::string HmacSha1(std::string_view key, std::string_view data);  // Signature Version 2
uint32_t Crc32(const void* data, size_t len, uint32_t prev = 0);   // zlib/IEEE CRC-32
uint32_t Crc32c(const void* data, size_t len, uint32_t prev = 0);  // Castagnoli

std::string HexEncode(std::string_view bytes);                    // lower-case
std::optional<std::string> HexDecode(std::string_view hex);      // nullopt on bad input
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view b64);   // strict; nullopt on bad input

inline std::string Sha256Hex(std::string_view data) { return HexEncode(Digest(Algo::kSHA256, data)); }
inline std::string Md5Hex(std::string_view data) { return HexEncode(Digest(Algo::kMD5, data)); }

// S3 checksum header names: "crc32" | "crc32c" | "sha1" | "sha256" <-> Algo.
std::optional<Algo> ChecksumAlgoFromName(std::string_view lower_name);
std::string_view ChecksumName(Algo algo);

// Equality of secrets (signatures, MACs) in time independent of where they differ; unequal
// lengths return false at once (the length of a signature is no secret).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Cryptographically random bytes (OpenSSL RAND_bytes), hex encoded: 2*n characters.
std::string RandomHex(size_t n_bytes);

}  // namespace rdmastor::hash
