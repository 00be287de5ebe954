// Reed-Solomon erasure coding on isa-l with a Cauchy generator matrix (every square submatrix is
// invertible, so any `data` of the `data + parity` shards rebuild the rest), plus the bitrot
// framing of shard files. Pure computation: no I/O, no threads; callers run it on worker threads.
//
// Stripe geometry: an object part is cut into stripes of kStripeSize bytes (the last may be
// shorter). A stripe of n bytes is split into `data` shard blocks of ceil(n / data) bytes (the
// tail zero padded) and `parity` parity blocks of the same size. Shard i of every stripe goes to
// the same drive, so a shard file is the sequence of its blocks, each framed for bitrot
// detection:
//
//   [8 bytes: XXH3-64 of the block, little endian][block bytes]  ... one per stripe
//
// Why XXH3-64 (libxxhash, maintained, in Debian): bitrot detection needs a fast checksum that
// catches random corruption, not a cryptographic MAC; XXH3 runs at memory speed (tens of GB/s),
// far above the disks, and a 64-bit value makes an undetected random corruption ~2^-64 per block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace rdmastor::erasure {

inline constexpr uint64_t kStripeSize = 1 << 20;  // data bytes per stripe
inline constexpr size_t kBitrotHashSize = 8;
inline constexpr int kMaxShards = 16;  // erasure sets have 2..16 drives
inline constexpr const char* kBitrotAlgorithm = "xxh3-64";

uint64_t BlockHash(const void* data, size_t len);

// Sizes of one erasure-coded part (`size` data bytes) for `data` data shards.
struct Geometry {
  int data = 1;
  int parity = 0;
  uint64_t stripe_size = kStripeSize;

  int total() const { return data + parity; }
  uint64_t StripeCount(uint64_t size) const { return (size + stripe_size - 1) / stripe_size; }
  // Data bytes of stripe s of a part of `size` bytes.
  uint64_t StripeBytes(uint64_t size, uint64_t s) const;
  // Shard block size for a stripe holding `stripe_bytes` data bytes.
  uint64_t BlockSize(uint64_t stripe_bytes) const {
    return (stripe_bytes + static_cast<uint64_t>(data) - 1) / static_cast<uint64_t>(data);
  }
  // Offset of stripe s's framed block inside a shard file, and the whole shard file's size.
  uint64_t ShardOffset(uint64_t size, uint64_t s) const;
  uint64_t ShardFileSize(uint64_t size) const { return ShardOffset(size, StripeCount(size)); }
};

class Codec {
 public:
  // 1 <= data, 0 <= parity, data + parity <= kMaxShards. Error: kInvalidArgument.
  static Result<std::unique_ptr<Codec>> Create(int data, int parity);

  int data() const { return data_; }
  int parity() const { return parity_; }
  int total() const { return data_ + parity_; }

  // shards[0..data) hold `len` data bytes each; fills shards[data..total).
  void Encode(uint8_t* const* shards, size_t len) const;

  // shards: total() buffers of `len` bytes; present[i] tells which hold valid content. Rebuilds
  // every shard that is not present (only the data shards when data_only). Needs at least data()
  // present shards: else kInsufficientReadQuorum.
  Status Reconstruct(uint8_t* const* shards, const std::vector<bool>& present, size_t len,
                     bool data_only) const;

 private:
  Codec(int data, int parity);

  int data_, parity_;
  std::vector<uint8_t> matrix_;      // total x data generator (identity on top)
  std::vector<uint8_t> enc_tables_;  // isa-l tables for the parity rows
};

// Splits one stripe (`len` <= kStripeSize bytes) into shard blocks, computes parity, and appends
// each framed block to out[i] (out.size() == codec.total()). `scratch` is reused between calls.
void EncodeStripe(const Codec& codec, const char* data, size_t len, std::vector<std::string>& out,
                  std::vector<uint8_t>& scratch);

// Encodes one stripe in place, in its framed blocks: frames[i] (codec.total() of them) points at
// shard i's [hash][block] of `block` bytes; the data shards' blocks hold the stripe (the last ones
// zero padded). Computes the parity blocks and every frame's hash. Nothing is copied: the write
// path reads the body straight into the data frames (storage/erasure/write.cc).
void EncodeFrames(const Codec& codec, char* const* frames, size_t block);

// Appends [hash][block] to `out`.
void AppendFramedBlock(std::string& out, const uint8_t* block, size_t len);

// Checks the frame of one block read from a shard file: `framed` holds hash + block_size bytes.
bool VerifyFramedBlock(const char* framed, size_t block_size);
// The same for a block whose hash and data were read into separate buffers.
bool VerifyBlock(const char* hash, const char* block, size_t block_size);

}  // namespace rdmastor::erasure
