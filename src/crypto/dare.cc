#include "crypto/dare.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace rdmastor::crypto {

namespace {

constexpr unsigned char kMagic[4] = {'R', 'S', 'E', '1'};

EVP_CIPHER_CTX* Ctx(void* p) { return static_cast<EVP_CIPHER_CTX*>(p); }

uint64_t PackagesFor(uint64_t plain) {
  return std::max<uint64_t>(1, (plain + kPackageSize - 1) / kPackageSize);
}

// Nonce of package `seq`: the header's nonce base with the sequence number XORed into its low
// four bytes (big-endian).
void NonceFor(const unsigned char* header, uint64_t seq, unsigned char* nonce) {
  std::memcpy(nonce, header + 4, kNonceSize);
  for (int i = 0; i < 4; ++i)
    nonce[kNonceSize - 1 - i] ^= static_cast<unsigned char>((seq >> (8 * i)) & 0xff);
}

// Additional authenticated data of a package: the stream header and whether it is the last one.
void AadFor(const unsigned char* header, bool final, unsigned char* aad) {
  std::memcpy(aad, header, kStreamHeaderSize);
  aad[kStreamHeaderSize] = final ? 1 : 0;
}

// Starts one package through the cipher: the nonce and associated data of (header, seq, final),
// then `in` into `out` (enc: 1 encrypts, 0 decrypts); *n: the bytes written. False if OpenSSL
// fails.
bool Begin(EVP_CIPHER_CTX* c, const unsigned char* header, uint64_t seq, bool final, int enc,
           const char* in, size_t len, unsigned char* out, int* n) {
  unsigned char nonce[kNonceSize];
  unsigned char aad[kStreamHeaderSize + 1];
  NonceFor(header, seq, nonce);
  AadFor(header, final, aad);
  return EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, nonce, enc) == 1 &&
         EVP_CipherUpdate(c, nullptr, n, aad, sizeof(aad)) == 1 &&
         EVP_CipherUpdate(c, out, n, reinterpret_cast<const unsigned char*>(in),
                          static_cast<int>(len)) == 1;
}

}  // namespace

uint64_t EncryptedSize(uint64_t plain) {
  return kStreamHeaderSize + plain + kTagSize * PackagesFor(plain);
}

Result<uint64_t> DecryptedSize(uint64_t encrypted) {
  if (encrypted < kStreamHeaderSize + kTagSize)
    return MakeError(ErrorCode::kInternalError,
                     "encrypted data of " + std::to_string(encrypted) + " bytes is truncated");
  const uint64_t body = encrypted - kStreamHeaderSize;
  const uint64_t packages = (body + kSealedPackageSize - 1) / kSealedPackageSize;
  const uint64_t plain = body - kTagSize * packages;
  if (EncryptedSize(plain) != encrypted)
    return MakeError(ErrorCode::kInternalError, "encrypted data of " + std::to_string(encrypted) +
                                                    " bytes is not a whole number of packages");
  return plain;
}

PackageCipher::PackageCipher(const Key& key) : ctx_(EVP_CIPHER_CTX_new()) {
  // Failure here means OpenSSL itself is unusable (no memory, AES disabled): nothing to recover.
  if (ctx_ == nullptr ||
      EVP_CipherInit_ex(Ctx(ctx_), EVP_aes_256_gcm(), nullptr, key.data(), nullptr, 1) != 1)
    std::abort();
}

PackageCipher::~PackageCipher() { EVP_CIPHER_CTX_free(Ctx(ctx_)); }

void PackageCipher::Seal(const unsigned char* header, uint64_t seq, bool final, const char* in,
                         size_t len, char* out) {
  auto* c = Ctx(ctx_);
  int n = 0, fin = 0;
  auto* o = reinterpret_cast<unsigned char*>(out);
  if (!Begin(c, header, seq, final, /*enc=*/1, in, len, o, &n) ||
      EVP_CipherFinal_ex(c, o + n, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kTagSize, o + len) != 1)
    std::abort();  // encryption with a valid key and nonce cannot fail
}

Status PackageCipher::Open(const unsigned char* header, uint64_t seq, bool final, const char* in,
                           size_t sealed_len, char* out) {
  if (sealed_len < kTagSize || sealed_len > kSealedPackageSize)
    return MakeError(ErrorCode::kInternalError, "encrypted package has a wrong size");
  const size_t len = sealed_len - kTagSize;
  unsigned char tag[kTagSize];
  std::memcpy(tag, in + len, kTagSize);  // `out` may overwrite `in`
  auto* c = Ctx(ctx_);
  int n = 0, fin = 0;
  auto* o = reinterpret_cast<unsigned char*>(out);
  if (!Begin(c, header, seq, final, /*enc=*/0, in, len, o, &n) ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1 ||
      EVP_CipherFinal_ex(c, o + n, &fin) != 1) {
    return MakeError(ErrorCode::kInternalError,
                     "encrypted package " + std::to_string(seq) +
                         " failed authentication (tampered, truncated, reordered or wrong key)");
  }
  return {};
}

std::array<unsigned char, kStreamHeaderSize> NewStreamHeader() {
  std::array<unsigned char, kStreamHeaderSize> h{};
  std::memcpy(h.data(), kMagic, sizeof(kMagic));
  if (RAND_bytes(h.data() + sizeof(kMagic), static_cast<int>(kNonceSize)) != 1) std::abort();
  return h;
}

Status CheckStreamHeader(const unsigned char* header) {
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0)
    return MakeError(ErrorCode::kInternalError, "encrypted data has no valid stream header");
  return {};
}

EncryptingSource::EncryptingSource(BodySource& in, const Key& key)
    : in_(in), cipher_(key), header_(NewStreamHeader()) {
  cur_.reserve(kPackageSize);
  next_.reserve(kPackageSize);
  out_.assign(header_.begin(), header_.end());
}

Result<size_t> EncryptingSource::FillPlain(std::vector<char>& chunk) {
  chunk.resize(kPackageSize);
  auto n = in_.ReadFull(chunk.data(), chunk.size());
  if (!n.ok()) return n.error();
  chunk.resize(*n);
  plaintext_bytes_ += *n;
  return *n;
}

Result<size_t> EncryptingSource::Read(char* buf, size_t len) {
  if (len == 0) return size_t{0};
  if (out_pos_ < out_.size()) {
    const size_t n = std::min(len, out_.size() - out_pos_);
    std::memcpy(buf, out_.data() + out_pos_, n);
    out_pos_ += n;
    return n;
  }
  if (done_) return size_t{0};
  // The next package: the plaintext read a package ahead tells whether it is the last one.
  if (!primed_) {
    if (auto r = FillPlain(cur_); !r.ok()) return r.error();
    primed_ = true;
  } else {
    std::swap(cur_, next_);
  }
  if (cur_.size() == kPackageSize) {
    if (auto r = FillPlain(next_); !r.ok()) return r.error();
  } else {
    next_.clear();  // a short read is the end of the body (ReadFull)
  }
  const bool final = next_.empty();
  if (seq_ >= kMaxPackages)
    return MakeError(ErrorCode::kEntityTooLarge, "object too large to encrypt");
  const size_t sealed = cur_.size() + kTagSize;
  char* dst = buf;
  if (len < sealed) {
    out_.resize(sealed);
    out_pos_ = 0;
    dst = out_.data();
  }
  cipher_.Seal(header_.data(), seq_, final, cur_.data(), cur_.size(), dst);
  ++seq_;
  if (final) done_ = true;
  if (dst == buf) {
    out_.clear();
    out_pos_ = 0;
    return sealed;
  }
  const size_t n = std::min(len, out_.size());
  std::memcpy(buf, out_.data(), n);
  out_pos_ = n;
  return n;
}

PackageSpan SpanOf(uint64_t plain_size, uint64_t off, uint64_t len) {
  PackageSpan s;
  if (plain_size == 0 || len == 0) {
    s.first = 0;
    s.count = 1;
    s.stored_offset = kStreamHeaderSize;
    s.stored_length = plain_size == 0 ? kTagSize : 0;
    if (plain_size != 0) s.count = 0;
    return s;
  }
  const uint64_t last = (off + len - 1) / kPackageSize;
  s.first = off / kPackageSize;
  s.count = last - s.first + 1;
  s.stored_offset = kStreamHeaderSize + s.first * kSealedPackageSize;
  const uint64_t last_plain = std::min<uint64_t>(kPackageSize, plain_size - last * kPackageSize);
  s.stored_length = (s.count - 1) * kSealedPackageSize + last_plain + kTagSize;
  return s;
}

}  // namespace rdmastor::crypto
