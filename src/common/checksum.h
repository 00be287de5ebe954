// S3's additional checksums (x-amz-checksum-*): algorithm and type names, strict parsing of the
// values clients declare, and the object-level checksum of a multipart upload computed from its
// parts' checksums alone (composite "checksum of checksums-N", or the full-object CRC combined with
// CRC algebra: the data is never read again).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/hash.h"

namespace rdmastor::checksum {

using hash::Algo;

// How a multipart object's checksum derives from its parts (x-amz-checksum-type). A single PUT is
// always FULL_OBJECT.
enum class Type { kComposite, kFullObject };

// What S3 gives a new object uploaded without any checksum (AWS's default data-integrity
// protection since 2025): a full-object CRC64NVME, stored and returned like a declared one.
inline constexpr Algo kDefaultAlgo = Algo::kCRC64NVME;

std::string_view TypeName(Type type);                     // "COMPOSITE" | "FULL_OBJECT"
std::optional<Type> TypeFromName(std::string_view name);  // case-insensitive, as AWS accepts

// "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256" (x-amz-checksum-algorithm, XML ChecksumAlgorithm).
std::string UpperName(Algo algo);
// The algorithms S3 checksums may use (not MD5), from any letter case.
std::optional<Algo> AlgoFromAnyCase(std::string_view name);
size_t DigestSize(Algo algo);  // raw bytes: 4 (CRC32/C), 8 (CRC64NVME), 20 (SHA1), 32 (SHA256)
bool IsCrc(Algo algo);

// The type an upload gets when CreateMultipartUpload names none: FULL_OBJECT for CRC64NVME (the
// only type it has), COMPOSITE for the others.
Type DefaultMultipartType(Algo algo);
// SHA1/SHA256 cannot be combined (FULL_OBJECT), CRC64NVME has no composite form.
bool Allows(Algo algo, Type type);

// A declared value: strict base64 of exactly DigestSize(algo) bytes; nullopt otherwise.
std::optional<std::string> DecodeValue(Algo algo, std::string_view b64);

// The type a stored object-level value has: a composite value ends in "-N".
Type TypeOfValue(std::string_view stored_value);

// crc(A || B) from raw big-endian crc(A), crc(B) and |B| (CRC algorithms only).
std::string CombineCrc(Algo algo, std::string_view raw_a, std::string_view raw_b, uint64_t len_b);

struct PartChecksum {
  std::string raw;    // the part's raw digest (DigestSize bytes)
  uint64_t size = 0;  // the part's length in bytes
};
// The object-level value (base64) of a multipart object made of `parts` in order: COMPOSITE is the
// digest of the concatenated raw part digests, "-N"; FULL_OBJECT is the CRC of all the data,
// combined from the parts' CRCs. nullopt when the type does not fit the algorithm or a raw digest
// has the wrong size.
std::optional<std::string> MultipartValue(Algo algo, Type type,
                                          const std::vector<PartChecksum>& parts);

}  // namespace rdmastor::checksum
