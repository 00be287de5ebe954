// Hashes, MACs, checksums and encodings used across the server (OpenSSL for MD5/SHA/HMAC, isa-l
// for CRC32 and CRC32C, our own tables for CRC64NVME: Debian's isa-l 2.30 predates its
// crc64_rocksoft, and none of its crc64 variants uses the NVMe polynomial).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rdmastor::hash {

enum class Algo { kMD5, kSHA1, kSHA256, kCRC32, kCRC32C, kCRC64NVME };

// Incremental hasher. Final() returns the raw digest bytes (CRC values big-endian, 4 or 8 bytes, as
// S3 transmits them in x-amz-checksum-crc32/crc32c/crc64nvme before base64).
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
uint32_t Crc32(const void* data, size_t len, uint32_t prev = 0);    // zlib/IEEE CRC-32
uint32_t Crc32c(const void* data, size_t len, uint32_t prev = 0);   // Castagnoli
// CRC-64/NVME (NVM Express "Rocksoft" polynomial 0xad93d23594c93659, reflected, init and xorout
// all ones): S3's CRC64NVME. Chaining like the others: pass the previous result as `prev`.
uint64_t Crc64Nvme(const void* data, size_t len, uint64_t prev = 0);

// The CRC of A followed by B from crc(A), crc(B) and B's length, without the data (all three CRCs
// have init == xorout, so the usual shift-and-xor combination holds exactly).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

std::string HexEncode(std::string_view bytes);               // lower-case
std::optional<std::string> HexDecode(std::string_view hex);  // nullopt on bad input
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view b64);  // strict; nullopt on bad input
bool IsBase64(std::string_view b64);  // what Base64Decode accepts, checked without decoding

inline std::string Sha256Hex(std::string_view data) {
  return HexEncode(Digest(Algo::kSHA256, data));
}
inline std::string Md5Hex(std::string_view data) { return HexEncode(Digest(Algo::kMD5, data)); }

// S3 checksum header names: "crc32" | "crc32c" | "crc64nvme" | "sha1" | "sha256" <-> Algo.
std::optional<Algo> ChecksumAlgoFromName(std::string_view lower_name);
std::string_view ChecksumName(Algo algo);

// Equality of secrets (signatures, MACs) in time independent of where they differ; unequal
// lengths return false at once (the length of a signature is no secret).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Cryptographically random bytes (OpenSSL RAND_bytes), hex encoded: 2*n characters.
std::string RandomHex(size_t n_bytes);

}  // namespace rdmastor::hash
