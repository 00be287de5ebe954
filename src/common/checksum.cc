#include "common/checksum.h"

#include <cctype>

namespace rdmastor::checksum {

namespace {

uint64_t FromBigEndian(std::string_view raw) {
  uint64_t v = 0;
  for (unsigned char c : raw) v = (v << 8) | c;
  return v;
}

std::string ToBigEndian(uint64_t v, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t i = bytes; i-- > 0; v >>= 8) out[i] = static_cast<char>(v & 0xff);
  return out;
}

}  // namespace

std::string_view TypeName(Type type) {
  return type == Type::kComposite ? "COMPOSITE" : "FULL_OBJECT";
}

std::optional<Type> TypeFromName(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "COMPOSITE") return Type::kComposite;
  if (upper == "FULL_OBJECT") return Type::kFullObject;
  return std::nullopt;
}

std::string UpperName(Algo algo) {
  std::string name(hash::ChecksumName(algo));
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::optional<Algo> AlgoFromAnyCase(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return hash::ChecksumAlgoFromName(lower);
}

size_t DigestSize(Algo algo) {
  switch (algo) {
    case Algo::kCRC32:
    case Algo::kCRC32C:
      return 4;
    case Algo::kCRC64NVME:
      return 8;
    case Algo::kSHA1:
      return 20;
    case Algo::kSHA256:
      return 32;
    case Algo::kMD5:
      return 16;
  }
  return 0;
}

bool IsCrc(Algo algo) {
  return algo == Algo::kCRC32 || algo == Algo::kCRC32C || algo == Algo::kCRC64NVME;
}

Type DefaultMultipartType(Algo algo) {
  return algo == Algo::kCRC64NVME ? Type::kFullObject : Type::kComposite;
}

bool Allows(Algo algo, Type type) {
  if (type == Type::kFullObject) return IsCrc(algo);
  return algo != Algo::kCRC64NVME;
}

std::optional<std::string> DecodeValue(Algo algo, std::string_view b64) {
  auto raw = hash::Base64Decode(b64);
  if (!raw || raw->size() != DigestSize(algo)) return std::nullopt;
  return raw;
}

Type TypeOfValue(std::string_view stored_value) {
  return stored_value.find('-') != std::string_view::npos ? Type::kComposite : Type::kFullObject;
}

std::string CombineCrc(Algo algo, std::string_view raw_a, std::string_view raw_b, uint64_t len_b) {
  const uint64_t a = FromBigEndian(raw_a), b = FromBigEndian(raw_b);
  switch (algo) {
    case Algo::kCRC32:
      return ToBigEndian(hash::Crc32Combine(static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                                            len_b),
                         4);
    case Algo::kCRC32C:
      return ToBigEndian(hash::Crc32cCombine(static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                                             len_b),
                         4);
    case Algo::kCRC64NVME:
      return ToBigEndian(hash::Crc64NvmeCombine(a, b, len_b), 8);
    default:
      return {};
  }
}

std::optional<std::string> MultipartValue(Algo algo, Type type,
                                          const std::vector<PartChecksum>& parts) {
  if (!Allows(algo, type) || parts.empty()) return std::nullopt;
  for (const auto& p : parts)
    if (p.raw.size() != DigestSize(algo)) return std::nullopt;
  if (type == Type::kComposite) {
    std::string concatenated;
    for (const auto& p : parts) concatenated += p.raw;
    return hash::Base64Encode(hash::Digest(algo, concatenated)) + "-" +
           std::to_string(parts.size());
  }
  std::string crc = parts.front().raw;
  for (size_t i = 1; i < parts.size(); ++i) crc = CombineCrc(algo, crc, parts[i].raw, parts[i].size);
  return hash::Base64Encode(crc);
}

}  // namespace rdmastor::checksum
