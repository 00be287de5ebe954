#include "common/hash.h"

#include <isa-l/crc.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "common/enum_names.h"
#include "common/text.h"

namespace rdmastor::hash {

namespace {

// Digests and HMACs use algorithms fetched once and, for one-shot calls, one context per thread:
// OpenSSL 3 looks the algorithm up in its provider store (locks, refcounts) on every init with
// EVP_sha256() and on every HMAC(), and a small signed GET does one SHA-256 and one HMAC-SHA256;
// that lookup and the context allocation were ~2/3 of their cost (perf, 4 KiB GET c=32).
const EVP_MD* EvpFor(Algo algo) {
  // nullptr where the provider lacks one (MD5 under FIPS): the legacy handle then fails the init
  // as before.
  static EVP_MD* const md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
  static EVP_MD* const sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  switch (algo) {
    case Algo::kMD5:
      return md5 ? md5 : EVP_md5();
    case Algo::kSHA1:
      return sha1 ? sha1 : EVP_sha1();
    case Algo::kSHA256:
      return sha256 ? sha256 : EVP_sha256();
    default:
      return nullptr;
  }
}

// A context of the calling thread, freed when the thread ends.
template <class T, void (*Free)(T*)>
struct ThreadCtx {
  T* ctx = nullptr;
  ~ThreadCtx() { Free(ctx); }
};

EVP_MD_CTX* ThreadDigestCtx() {
  thread_local ThreadCtx<EVP_MD_CTX, EVP_MD_CTX_free> t;
  if (t.ctx == nullptr) t.ctx = EVP_MD_CTX_new();
  if (t.ctx == nullptr) std::abort();
  return t.ctx;
}

// `digest`: "SHA256" or "SHA1"; `slot` keeps one context per digest and thread.
std::string Hmac(const char* digest, ThreadCtx<EVP_MAC_CTX, EVP_MAC_CTX_free>& slot,
                 std::string_view key, std::string_view data) {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) std::abort();
  if (slot.ctx == nullptr) {
    slot.ctx = EVP_MAC_CTX_new(mac);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>(digest), 0),
                           OSSL_PARAM_construct_end()};
    if (slot.ctx == nullptr || EVP_MAC_CTX_set_params(slot.ctx, params) != 1) std::abort();
  }
  // Never a null key: EVP_MAC_init(nullptr) would keep the previous call's key.
  static const unsigned char kNoKey = 0;
  const auto* k = key.empty() ? &kNoKey : reinterpret_cast<const unsigned char*>(key.data());
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t n = 0;
  if (EVP_MAC_init(slot.ctx, k, key.size(), nullptr) != 1 ||
      EVP_MAC_update(slot.ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) !=
          1 ||
      EVP_MAC_final(slot.ctx, out, &n, sizeof(out)) != 1)
    std::abort();
  return std::string(reinterpret_cast<char*>(out), n);
}

class EvpHasher final : public Hasher {
 public:
  explicit EvpHasher(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    // Allocation or init failure only happens when OpenSSL itself is broken (e.g. MD5 disabled by a
    // FIPS provider); there is no sensible way to continue.
    if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, md, nullptr) != 1) std::abort();
  }
  ~EvpHasher() override { EVP_MD_CTX_free(ctx_); }
  EvpHasher(const EvpHasher&) = delete;
  EvpHasher& operator=(const EvpHasher&) = delete;

  void Update(const void* data, size_t len) override {
    if (len > 0) EVP_DigestUpdate(ctx_, data, len);
  }
  std::string Final() override {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out, &n);
    return std::string(reinterpret_cast<char*>(out), n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  out[0] = static_cast<char>(v >> 24);
  out[1] = static_cast<char>(v >> 16);
  out[2] = static_cast<char>(v >> 8);
  out[3] = static_cast<char>(v);
  return out;
}

std::string BigEndian64(uint64_t v) {
  return BigEndian32(static_cast<uint32_t>(v >> 32)) + BigEndian32(static_cast<uint32_t>(v));
}

class CrcHasher final : public Hasher {
 public:
  explicit CrcHasher(bool castagnoli) : castagnoli_(castagnoli) {}
  void Update(const void* data, size_t len) override {
    crc_ = castagnoli_ ? Crc32c(data, len, crc_) : Crc32(data, len, crc_);
  }
  std::string Final() override { return BigEndian32(crc_); }

 private:
  bool castagnoli_;
  uint32_t crc_ = 0;
};

class Crc64Hasher final : public Hasher {
 public:
  void Update(const void* data, size_t len) override { crc_ = Crc64Nvme(data, len, crc_); }
  std::string Final() override { return BigEndian64(crc_); }

 private:
  uint64_t crc_ = 0;
};

// Reflected polynomials (bit i of the value is the coefficient of x^(width-1-i)).
constexpr uint32_t kCrc32Poly = 0xedb88320u;
constexpr uint32_t kCrc32cPoly = 0x82f63b78u;
constexpr uint64_t kCrc64NvmePoly = 0x9a6c9329ac4bc9b5ull;

// Slicing-by-8 tables for CRC64NVME: table[k][b] is the CRC register after byte b followed by k
// zero bytes. Eight table look-ups per 8 input bytes.
struct Crc64Tables {
  uint64_t t[8][256];
  Crc64Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint64_t c = b;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrc64NvmePoly : c >> 1;
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};
const Crc64Tables& Tables64() {
  static const Crc64Tables tables;
  return tables;
}

// Arithmetic on polynomials modulo the CRC polynomial in the reflected representation (as zlib's
// crc32_combine): MulMod multiplies, and x^(8n) comes from repeated squaring of x^(2^k).
template <typename U>
U MulMod(U a, U b, U poly) {
  const U top = U{1} << (sizeof(U) * 8 - 1);  // x^0
  U product = 0;
  for (U m = top; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ poly : b >> 1;
  }
  return product;
}

template <typename U>
U CrcCombine(U crc_a, U crc_b, uint64_t len_b, U poly) {
  if (len_b == 0) return crc_a;
  U power = U{1} << (sizeof(U) * 8 - 2);  // x^1
  U shift = U{1} << (sizeof(U) * 8 - 1);  // x^0; becomes x^(8 * len_b)
  // x^(2^k) for k = 0, 1, 2 first: 8 * len_b needs powers from x^8 on.
  for (int k = 0; k < 3; ++k) power = MulMod(power, power, poly);
  for (uint64_t n = len_b; n != 0; n >>= 1) {
    if (n & 1) shift = MulMod(power, shift, poly);
    power = MulMod(power, power, poly);
  }
  return MulMod(shift, crc_a, poly) ^ crc_b;
}

constexpr char kB64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Sextet of each byte, -1 for bytes outside the alphabet: one load per character (metadata
// files carry small objects' shards in base64, so a small GET decodes a few KiB per drive).
constexpr std::array<int8_t, 256> kB64Values = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 64; ++i)
    t[static_cast<unsigned char>(kB64Alphabet[i])] = static_cast<int8_t>(i);
  return t;
}();

}  // namespace

std::unique_ptr<Hasher> NewHasher(Algo algo) {
  switch (algo) {
    case Algo::kCRC32:
      return std::make_unique<CrcHasher>(false);
    case Algo::kCRC32C:
      return std::make_unique<CrcHasher>(true);
    case Algo::kCRC64NVME:
      return std::make_unique<Crc64Hasher>();
    default:
      return std::make_unique<EvpHasher>(EvpFor(algo));
  }
}

std::string Digest(Algo algo, std::string_view data) {
  const EVP_MD* md = EvpFor(algo);
  if (md == nullptr) {  // the CRCs
    auto h = NewHasher(algo);
    h->Update(data.data(), data.size());
    return h->Final();
  }
  EVP_MD_CTX* ctx = ThreadDigestCtx();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 || EVP_DigestFinal_ex(ctx, out, &n) != 1)
    std::abort();  // as EvpHasher: only a broken OpenSSL fails here
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  thread_local ThreadCtx<EVP_MAC_CTX, EVP_MAC_CTX_free> slot;
  return Hmac("SHA256", slot, key, data);
}

std::string HmacSha1(std::string_view key, std::string_view data) {
  thread_local ThreadCtx<EVP_MAC_CTX, EVP_MAC_CTX_free> slot;
  return Hmac("SHA1", slot, key, data);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// isa-l's crc32_gzip_refl already applies the pre- and post-inversion of zlib's crc32(), so a
// previous result can be passed straight back in to continue.
uint32_t Crc32(const void* data, size_t len, uint32_t prev) {
  return crc32_gzip_refl(prev, static_cast<const unsigned char*>(data), len);
}

// crc32_iscsi is the raw CRC register update without the inversions CRC-32C (RFC 3720) specifies,
// and takes an int length, so large buffers go in pieces.
uint32_t Crc32c(const void* data, size_t len, uint32_t prev) {
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t crc = ~prev;
  constexpr size_t kMaxPiece = size_t{1} << 30;
  while (len > 0) {
    size_t n = std::min(len, kMaxPiece);
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    len -= n;
  }
  return ~crc;
}

namespace {

// The CRC64NVME register (reflected, without the final inversion) after `len` more bytes.
uint64_t Crc64Table(uint64_t crc, const unsigned char* p, size_t len) {
  const auto& t = Tables64().t;
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    crc ^= v;
    crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^ t[5][(crc >> 16) & 0xff] ^
          t[4][(crc >> 24) & 0xff] ^ t[3][(crc >> 32) & 0xff] ^ t[2][(crc >> 40) & 0xff] ^
          t[1][(crc >> 48) & 0xff] ^ t[0][crc >> 56];
    p += 8;
    len -= 8;
  }
  while (len-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
// Carry-less multiplication (PCLMULQDQ) folding, ~10x the tables. 16 bytes loaded little-endian
// are the polynomial A(x) of degree < 128 with bit m holding x^(127-m) (the first byte's low bit is
// the highest degree, as a reflected CRC reads it). Moving A forward by D bits, A * x^D, is folded
// back to 128 bits as lo64(A) * (x^(D+63) mod P) + hi64(A) * (x^(D-1) mod P): the product of two
// reflected 64-bit values lands one degree low, which the -1 in both exponents makes up for.

uint64_t Reverse64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i, v >>= 1) r = (r << 1) | (v & 1);
  return r;
}

// x^e mod P (P = x^64 + 0xad93d23594c93659), reflected.
uint64_t ReflectedXPowMod(unsigned e) {
  uint64_t v = 1;
  for (unsigned i = 0; i < e; ++i) v = (v >> 63) ? (v << 1) ^ 0xad93d23594c93659ull : v << 1;
  return Reverse64(v);
}

struct FoldConstants {
  __m128i by512, by384, by256, by128;  // low lane: x^(D+63), high lane: x^(D-1)
  FoldConstants() : by512(Make(512)), by384(Make(384)), by256(Make(256)), by128(Make(128)) {}
  static __m128i Make(unsigned d) {
    return _mm_set_epi64x(static_cast<long long>(ReflectedXPowMod(d - 1)),
                          static_cast<long long>(ReflectedXPowMod(d + 63)));
  }
};

__attribute__((target("pclmul"))) inline __m128i Fold(__m128i a, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

inline __m128i Load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// len >= 64. Four 16-byte lanes fold by 512 bits, then into one, then 16 bytes at a time; the last
// 128-bit remainder and the tail go through the tables (from register 0, 16 bytes of A give
// A(x) * x^64 mod P: the register).
__attribute__((target("pclmul"))) uint64_t Crc64Clmul(uint64_t crc, const unsigned char* p,
                                                      size_t len) {
  static const FoldConstants k;
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi64_si128(static_cast<long long>(crc)));
  __m128i x1 = Load(p + 16), x2 = Load(p + 32), x3 = Load(p + 48);
  p += 64;
  len -= 64;
  for (; len >= 64; p += 64, len -= 64) {
    x0 = _mm_xor_si128(Fold(x0, k.by512), Load(p));
    x1 = _mm_xor_si128(Fold(x1, k.by512), Load(p + 16));
    x2 = _mm_xor_si128(Fold(x2, k.by512), Load(p + 32));
    x3 = _mm_xor_si128(Fold(x3, k.by512), Load(p + 48));
  }
  __m128i a = _mm_xor_si128(_mm_xor_si128(Fold(x0, k.by384), Fold(x1, k.by256)),
                            _mm_xor_si128(Fold(x2, k.by128), x3));
  for (; len >= 16; p += 16, len -= 16) a = _mm_xor_si128(Fold(a, k.by128), Load(p));
  unsigned char rest[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rest), a);
  return Crc64Table(Crc64Table(0, rest, 16), p, len);
}

const bool kHaveClmul = __builtin_cpu_supports("pclmul");
#endif

}  // namespace

uint64_t Crc64Nvme(const void* data, size_t len, uint64_t prev) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (kHaveClmul && len >= 64) return ~Crc64Clmul(~prev, p, len);
#endif
  return ~Crc64Table(~prev, p, len);
}

uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return CrcCombine<uint32_t>(crc_a, crc_b, len_b, kCrc32Poly);
}
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return CrcCombine<uint32_t>(crc_a, crc_b, len_b, kCrc32cPoly);
}
uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  return CrcCombine<uint64_t>(crc_a, crc_b, len_b, kCrc64NvmePoly);
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 0xf];
  }
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = text::HexDigit(hex[2 * i]);
    int lo = text::HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>((hi << 4) | lo);
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4, '\0');
  char* o = out.data();
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3, o += 4) {
    const uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    o[0] = kB64Alphabet[(v >> 18) & 63];
    o[1] = kB64Alphabet[(v >> 12) & 63];
    o[2] = kB64Alphabet[(v >> 6) & 63];
    o[3] = kB64Alphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    const uint32_t v = (byte(i) << 16) | (rest == 2 ? byte(i + 1) << 8 : 0);
    o[0] = kB64Alphabet[(v >> 18) & 63];
    o[1] = kB64Alphabet[(v >> 12) & 63];
    o[2] = rest == 2 ? kB64Alphabet[(v >> 6) & 63] : '=';
    o[3] = '=';
  }
  return out;
}

namespace {

// Strict RFC 4648: padded to a multiple of 4, no whitespace, '=' only at the end, and the unused
// low bits of the last group must be zero (so every byte string has exactly one accepted form).
// Decodes into `o` (room for the decoded bytes) with kWrite, else only checks.
template <bool kWrite>
bool Base64Walk(std::string_view b64, int pad, char* o) {
  const size_t groups = b64.size() / 4;
  const auto* in = reinterpret_cast<const unsigned char*>(b64.data());
  // Full groups: any byte outside the alphabet (including '=') makes the OR of the values negative.
  for (size_t g = 0; g + 1 < groups; ++g, in += 4) {
    const int a = kB64Values[in[0]], b = kB64Values[in[1]], c = kB64Values[in[2]],
              d = kB64Values[in[3]];
    if ((a | b | c | d) < 0) return false;
    if constexpr (kWrite) {
      const auto v = static_cast<uint32_t>((a << 18) | (b << 12) | (c << 6) | d);
      o[0] = static_cast<char>(v >> 16);
      o[1] = static_cast<char>(v >> 8);
      o[2] = static_cast<char>(v);
      o += 3;
    }
  }
  // The last group: its padding positions hold '=' and decode as zero bits.
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    int d = 0;
    if (k < 4 - pad) {
      d = kB64Values[in[k]];
      if (d < 0) return false;
    }
    v = (v << 6) | static_cast<uint32_t>(d);
  }
  if constexpr (kWrite) {
    o[0] = static_cast<char>(v >> 16);
    if (pad < 2) o[1] = static_cast<char>(v >> 8);
    if (pad < 1) o[2] = static_cast<char>(v);
  }
  return pad == 2 ? (v & 0xffff) == 0 : pad == 1 ? (v & 0xff) == 0 : true;
}

int Base64Pad(std::string_view b64) {
  return b64.back() != '=' ? 0 : b64[b64.size() - 2] == '=' ? 2 : 1;
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view b64) {
  if (b64.size() % 4 != 0) return std::nullopt;
  if (b64.empty()) return std::string();
  const int pad = Base64Pad(b64);
  std::string out(b64.size() / 4 * 3 - static_cast<size_t>(pad), '\0');
  if (!Base64Walk<true>(b64, pad, out.data())) return std::nullopt;
  return out;
}

bool IsBase64(std::string_view b64) {
  if (b64.size() % 4 != 0) return false;
  return b64.empty() || Base64Walk<false>(b64, Base64Pad(b64), nullptr);
}

namespace {
constexpr EnumNames<Algo> kChecksumNames[] = {
    {"crc32", Algo::kCRC32}, {"crc32c", Algo::kCRC32C}, {"crc64nvme", Algo::kCRC64NVME},
    {"sha1", Algo::kSHA1},   {"sha256", Algo::kSHA256}, {"md5", Algo::kMD5}};
}  // namespace

std::optional<Algo> ChecksumAlgoFromName(std::string_view lower_name) {
  auto algo = ValueOf(kChecksumNames, lower_name);
  if (algo == Algo::kMD5) return std::nullopt;  // Content-MD5, not an x-amz-checksum algorithm
  return algo;
}

std::string_view ChecksumName(Algo algo) { return NameOf(kChecksumNames, algo); }

std::string RandomHex(size_t n_bytes) {
  std::string raw(n_bytes, '\0');
  size_t off = 0;
  while (off < n_bytes) {
    int piece = static_cast<int>(std::min<size_t>(n_bytes - off, 1 << 20));
    // RAND_bytes failing means the CSPRNG cannot be seeded; handing out predictable ids (upload
    // ids, request ids used as secrets) would be worse than stopping.
    if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data() + off), piece) != 1) std::abort();
    off += static_cast<size_t>(piece);
  }
  return HexEncode(raw);
}

}  // namespace rdmastor::hash
