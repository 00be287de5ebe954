// Decoder for Content-Encoding: aws-chunked request bodies (the streaming SigV4 payload modes).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "s3/http_types.h"
#include "s3/sigv4.h"

namespace rdmastor::s3 {

// Wraps the raw body and yields the decoded payload. In the signed modes every chunk signature
// (and the trailer signature) is verified against the chain seeded by the request signature; a bad
// one fails Read() with kInvalidChunkSignature before the chunk's bytes are returned. Framing
// errors give kMalformedChunkedEncoding, a body that ends early kIncompleteBody. Trailers (e.g.
// x-amz-checksum-crc32) are collected and available after Read() returned 0. Memory use is bounded
// by the chunk size limit (16 MiB). Payload modes other than the three streaming ones are decoded
// as unsigned chunks without trailers. decoded_bytes() is for the caller's
// x-amz-decoded-content-length check.
class AwsChunkedSource : public BodySource {
 public:
  AwsChunkedSource(BodySource& raw, const AuthContext& auth);
  Result<size_t> Read(char* buf, size_t len) override;
  // Lower-case trailer name -> value, complete once Read() returned 0.
  const std::map<std::string, std::string>& trailers() const { return trailers_; }
  uint64_t decoded_bytes() const { return decoded_; }

 private:
  enum class Phase { kChunkHeader, kSignedServe, kUnsignedData, kFinal, kDone };
  enum class LineResult { kLine, kEof, kEofPartial };

  Result<size_t> ReadImpl(char* buf, size_t len);
  Result<bool> Fill();  // reads more raw bytes into the buffer; false at end of body
  Result<LineResult> ReadLine(std::string* line);
  Status ExpectCrlf();
  Status StartChunk(std::string_view header_line);
  Status LoadSignedChunk(uint64_t size, const std::string& signature);
  Status VerifyChunk(std::string_view data, const std::string& signature);
  Status ReadFinal();
  Status CheckEndOfBody();

  BodySource& raw_;
  AuthContext auth_;
  bool signed_;        // chunk headers carry chunk-signature, verified against the chain
  bool trailer_mode_;  // trailer lines may follow the final chunk
  std::map<std::string, std::string> trailers_;
  uint64_t decoded_ = 0;

  // Raw bytes read but not consumed yet: buf_[begin_, end_). Fixed size: one raw read at a time.
  std::unique_ptr<char[]> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool raw_eof_ = false;

  Phase phase_ = Phase::kChunkHeader;
  uint64_t chunk_left_ = 0;  // unsigned modes: payload bytes of the current chunk still to return
  std::string chunk_data_;   // signed modes: the verified chunk being handed out
  size_t chunk_pos_ = 0;
  std::string prev_signature_;
  std::optional<Error> error_;  // sticky: once the body is bad every Read() fails the same way
};

}  // namespace rdmastor::s3
