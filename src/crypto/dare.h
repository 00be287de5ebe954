// Authenticated encryption of object data in fixed-size packages (the layout follows the idea of
// MinIO's DARE; the format is our own). One "stream" is the ciphertext of one single-PUT object or
// of one part of a multipart object:
//
//   header (16 bytes): "RSE1" | 12-byte random nonce base
//   package 0 .. n-1:  AES-256-GCM(plaintext chunk of kPackageSize bytes, the last one shorter) | tag
//
// Package i is sealed with nonce = nonce base XOR i (big-endian, in the low 4 bytes) and the
// additional data header | final flag, so a package moved to another position, taken from
// another stream, dropped from the end (truncation) or followed by an extra package fails to
// authenticate. An empty plaintext is one empty final package (16 bytes of tag), so even a
// truncation to the header alone is detected. The stored size follows from the plaintext size and
// back (EncryptedSize / DecryptedSize), so nothing about the packages needs to be recorded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/http_types.h"
#include "common/result.h"

namespace rdmastor::crypto {

inline constexpr size_t kKeySize = 32;
using Key = std::array<unsigned char, kKeySize>;

inline constexpr size_t kPackageSize = 64 * 1024;  // plaintext bytes per package
inline constexpr size_t kTagSize = 16;
inline constexpr size_t kSealedPackageSize = kPackageSize + kTagSize;
inline constexpr size_t kStreamHeaderSize = 16;
inline constexpr size_t kNonceSize = 12;
// More packages than the 32-bit sequence number can count would reuse nonces: a stream holds at
// most 2^32 packages (256 TiB), far above the 5 TiB object limit.
inline constexpr uint64_t kMaxPackages = uint64_t{1} << 32;

// Stored size of a stream holding `plain` plaintext bytes.
uint64_t EncryptedSize(uint64_t plain);
// Plaintext size of a stream of `encrypted` stored bytes; kInternalError when no plaintext size
// encrypts to exactly that many bytes (the stored data was cut or extended).
Result<uint64_t> DecryptedSize(uint64_t encrypted);

// AES-256-GCM over one stream with a fixed key (one OpenSSL context, re-keyed per nonce).
class PackageCipher {
 public:
  explicit PackageCipher(const Key& key);
  ~PackageCipher();
  PackageCipher(const PackageCipher&) = delete;
  PackageCipher& operator=(const PackageCipher&) = delete;

  // Seals `len` (<= kPackageSize) plaintext bytes as package `seq` of the stream with `header`;
  // writes len + kTagSize bytes to `out` (which may equal `in`).
  void Seal(const unsigned char* header, uint64_t seq, bool final, const char* in, size_t len,
            char* out);
  // Opens package `seq` of `sealed_len` (>= kTagSize) bytes into `out` (sealed_len - kTagSize
  // bytes; may equal `in`). kInternalError when it does not authenticate: tampered, misplaced,
  // truncated, or the wrong key.
  Status Open(const unsigned char* header, uint64_t seq, bool final, const char* in,
              size_t sealed_len, char* out);

 private:
  void* ctx_;  // EVP_CIPHER_CTX
};

// A fresh stream header (random nonce base).
std::array<unsigned char, kStreamHeaderSize> NewStreamHeader();
// kInternalError when `header` is not a stream header of this format.
Status CheckStreamHeader(const unsigned char* header);

// Encrypts a body as it streams: reads plaintext from `in` and yields the stream (header and
// packages). Reads the plaintext a package ahead, so it knows which package is the last one.
class EncryptingSource final : public BodySource {
 public:
  EncryptingSource(BodySource& in, const Key& key);
  Result<size_t> Read(char* buf, size_t len) override;
  uint64_t plaintext_bytes() const { return plaintext_bytes_; }

 private:
  Result<size_t> FillPlain(std::vector<char>& chunk);  // up to kPackageSize bytes (less at EOF)
  Status NextPackage();                                // seals the next package into out_

  BodySource& in_;
  PackageCipher cipher_;
  std::array<unsigned char, kStreamHeaderSize> header_;
  std::vector<char> cur_, next_;  // plaintext: the package to seal and the one after it
  bool primed_ = false, done_ = false;
  uint64_t seq_ = 0;
  std::vector<char> out_;  // sealed bytes not yet handed out, from out_pos_
  size_t out_pos_ = 0;
  uint64_t plaintext_bytes_ = 0;
};

// Where the plaintext byte range [off, off+len) of a stream lies among its packages.
struct PackageSpan {
  uint64_t first = 0;  // first package
  uint64_t count = 0;  // packages touched
  // Stored byte range of those packages (from the stream's start, header included).
  uint64_t stored_offset = 0;
  uint64_t stored_length = 0;
};
PackageSpan SpanOf(uint64_t plain_size, uint64_t off, uint64_t len);

}  // namespace rdmastor::crypto
