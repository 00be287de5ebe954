#include "s3/aws_chunked.h"


#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/hash.h"
#include "common/text.h"

namespace rdmastor::s3 {

namespace {

constexpr size_t kBufSize = 64 * 1024;  // one raw read
constexpr size_t kMaxLine = 4096;       // chunk header or trailer line
constexpr uint64_t kMaxChunk = 16 * 1024 * 1024;
constexpr size_t kMaxTrailerBytes = 16 * 1024;  // all trailer lines together

Error Malformed(std::string msg) {
  return MakeError(ErrorCode::kMalformedChunkedEncoding, std::move(msg));
}

Error Incomplete() {
  return MakeError(ErrorCode::kIncompleteBody, "The aws-chunked request body ended early.");
}

bool IsSignature(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

bool SameSignature(std::string_view a, std::string_view b) {
  return hash::ConstantTimeEquals(a, b);
}

}  // namespace

AwsChunkedSource::AwsChunkedSource(BodySource& raw, const AuthContext& auth)
    : raw_(raw),
      auth_(auth),
      signed_(auth.payload_mode == PayloadMode::kStreamingSigned ||
              auth.payload_mode == PayloadMode::kStreamingSignedTrailer),
      trailer_mode_(auth.payload_mode == PayloadMode::kStreamingSignedTrailer ||
                    auth.payload_mode == PayloadMode::kStreamingUnsignedTrailer),
      buf_(std::make_unique_for_overwrite<char[]>(kBufSize)),
      prev_signature_(auth.seed_signature) {}

Result<size_t> AwsChunkedSource::Read(char* buf, size_t len) {
  if (error_) return *error_;
  auto n = ReadImpl(buf, len);
  if (!n.ok()) {
    error_ = n.error();
  } else {
    decoded_ += *n;
  }
  return n;
}

Result<size_t> AwsChunkedSource::ReadImpl(char* buf, size_t len) {
  if (len == 0) return size_t{0};
  while (true) {
    switch (phase_) {
      case Phase::kDone:
        return size_t{0};

      case Phase::kSignedServe: {
        size_t n = std::min(len, chunk_data_.size() - chunk_pos_);
        if (n > 0) {
          std::memcpy(buf, chunk_data_.data() + chunk_pos_, n);
          chunk_pos_ += n;
          return n;
        }
        phase_ = Phase::kChunkHeader;
        break;
      }

      case Phase::kUnsignedData: {
        if (chunk_left_ == 0) {
          RS_RETURN_IF_ERROR(ExpectCrlf());
          phase_ = Phase::kChunkHeader;
          break;
        }
        size_t want = static_cast<size_t>(std::min<uint64_t>(len, chunk_left_));
        size_t n;
        if (end_ > begin_) {
          n = std::min(want, end_ - begin_);
          std::memcpy(buf, buf_.get() + begin_, n);
          begin_ += n;
        } else {
          // Nothing buffered: read straight into the caller's buffer, saving a copy.
          if (raw_eof_) return Incomplete();
          auto r = raw_.Read(buf, want);
          if (!r.ok()) return r.error();
          if (*r == 0) {
            raw_eof_ = true;
            return Incomplete();
          }
          n = *r;
        }
        chunk_left_ -= n;
        return n;
      }

      case Phase::kChunkHeader: {
        std::string line;
        auto lr = ReadLine(&line);
        if (!lr.ok()) return lr.error();
        if (*lr != LineResult::kLine) return Incomplete();
        RS_RETURN_IF_ERROR(StartChunk(line));
        break;
      }

      case Phase::kFinal:
        RS_RETURN_IF_ERROR(ReadFinal());
        RS_RETURN_IF_ERROR(CheckEndOfBody());
        phase_ = Phase::kDone;
        break;
    }
  }
}

Result<bool> AwsChunkedSource::Fill() {
  if (raw_eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == kBufSize) return Malformed("aws-chunked framing line too long.");
  auto r = raw_.Read(buf_.get() + end_, kBufSize - end_);
  if (!r.ok()) return r.error();
  if (*r == 0) {
    raw_eof_ = true;
    return false;
  }
  end_ += *r;
  return true;
}

Result<AwsChunkedSource::LineResult> AwsChunkedSource::ReadLine(std::string* line) {
  size_t scanned = 0;  // bytes already searched for CRLF, so refills do not rescan
  while (true) {
    std::string_view avail(buf_.get() + begin_, end_ - begin_);
    size_t from = scanned > 0 ? scanned - 1 : 0;
    size_t crlf = avail.find("\r\n", from);
    if (crlf != std::string_view::npos) {
      if (crlf > kMaxLine) return Malformed("aws-chunked framing line too long.");
      std::string_view l = avail.substr(0, crlf);
      if (l.find_first_of("\r\n") != std::string_view::npos) {
        return Malformed("Bare CR or LF in an aws-chunked framing line.");
      }
      line->assign(l);
      begin_ += crlf + 2;
      return LineResult::kLine;
    }
    if (avail.size() > kMaxLine) return Malformed("aws-chunked framing line too long.");
    scanned = avail.size();
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return end_ > begin_ ? LineResult::kEofPartial : LineResult::kEof;
  }
}

Status AwsChunkedSource::ExpectCrlf() {
  while (end_ - begin_ < 2) {
    auto more = Fill();
    if (!more.ok()) return more.error();
    if (!*more) return Incomplete();
  }
  if (buf_[begin_] != '\r' || buf_[begin_ + 1] != '\n') {
    return Malformed("Chunk data is not followed by CRLF.");
  }
  begin_ += 2;
  return {};
}

// "<hex-size>[;chunk-signature=<sig>][;other-extensions]"
Status AwsChunkedSource::StartChunk(std::string_view header_line) {
  size_t semi = header_line.find(';');
  std::string_view size_text = header_line.substr(0, semi);
  if (size_text.empty() || size_text.size() > 8) {
    return Malformed("Invalid aws-chunked chunk size '" + std::string(size_text) + "'.");
  }
  uint64_t size = 0;
  for (char c : size_text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return Malformed("Invalid aws-chunked chunk size '" + std::string(size_text) + "'.");
    }
    size = size * 16 + static_cast<uint64_t>(d);
  }
  if (size > kMaxChunk) return Malformed("aws-chunked chunk larger than 16 MiB.");

  std::string signature;
  while (semi != std::string_view::npos) {
    size_t next = header_line.find(';', semi + 1);
    std::string_view ext = header_line.substr(
        semi + 1, next == std::string_view::npos ? std::string_view::npos : next - semi - 1);
    semi = next;
    size_t eq = ext.find('=');
    if (eq != std::string_view::npos && text::TrimBlanks(ext.substr(0, eq)) == "chunk-signature") {
      signature = std::string(text::TrimBlanks(ext.substr(eq + 1)));
    }
  }
  if (signed_) {
    if (!IsSignature(signature)) return Malformed("Chunk is missing a valid chunk-signature.");
    signature = text::ToLower(signature);
  }

  if (size == 0) {
    // The final chunk is signed like any other, over empty data.
    if (signed_) RS_RETURN_IF_ERROR(VerifyChunk({}, signature));
    phase_ = Phase::kFinal;
    return {};
  }
  if (signed_) return LoadSignedChunk(size, signature);
  chunk_left_ = size;
  phase_ = Phase::kUnsignedData;
  return {};
}

// Collects the whole chunk (and its CRLF) and verifies it before any byte is handed out, so a
// forged chunk never reaches storage.
Status AwsChunkedSource::LoadSignedChunk(uint64_t size, const std::string& signature) {
  chunk_data_.resize(static_cast<size_t>(size));
  size_t got = std::min(chunk_data_.size(), end_ - begin_);
  std::memcpy(chunk_data_.data(), buf_.get() + begin_, got);
  begin_ += got;
  while (got < chunk_data_.size()) {
    if (raw_eof_) return Incomplete();
    auto r = raw_.Read(chunk_data_.data() + got, chunk_data_.size() - got);
    if (!r.ok()) return r.error();
    if (*r == 0) {
      raw_eof_ = true;
      return Incomplete();
    }
    got += *r;
  }
  RS_RETURN_IF_ERROR(ExpectCrlf());
  RS_RETURN_IF_ERROR(VerifyChunk(chunk_data_, signature));
  chunk_pos_ = 0;
  phase_ = Phase::kSignedServe;
  return {};
}

Status AwsChunkedSource::VerifyChunk(std::string_view data, const std::string& signature) {
  std::string expected = hash::HexEncode(hash::HmacSha256(
      auth_.signing_key, ChunkStringToSign(auth_.amz_date, auth_.scope, prev_signature_, data)));
  if (!SameSignature(expected, signature)) return ErrorCode::kInvalidChunkSignature;
  prev_signature_ = signature;
  return {};
}

// After the 0-size chunk: "\r\n", or in the trailer modes "name:value\r\n" lines (the signed one
// ending with x-amz-trailer-signature) and then "\r\n".
Status AwsChunkedSource::ReadFinal() {
  std::string canonical;  // "name:value\n" per trailer, what the trailer signature covers
  std::string trailer_signature;
  size_t total = 0;
  while (true) {
    std::string line;
    auto lr = ReadLine(&line);
    if (!lr.ok()) return lr.error();
    if (*lr == LineResult::kEofPartial) return Incomplete();
    if (*lr == LineResult::kEof) {
      // Some clients stop after the trailer lines without the closing CRLF; everything they meant
      // to send has arrived, so accept that in the trailer modes only.
      if (!trailer_mode_) return Incomplete();
      break;
    }
    if (line.empty()) break;
    if (!trailer_mode_) return Malformed("Unexpected data after the final aws-chunked chunk.");
    total += line.size();
    if (total > kMaxTrailerBytes) return Malformed("aws-chunked trailers too large.");
    size_t colon = line.find(':');
    if (colon == std::string::npos) return Malformed("Malformed aws-chunked trailer line.");
    std::string name = text::ToLower(text::TrimBlanks(std::string_view(line).substr(0, colon)));
    std::string value(text::TrimBlanks(std::string_view(line).substr(colon + 1)));
    if (name.empty()) return Malformed("Malformed aws-chunked trailer line.");
    if (!trailer_signature.empty()) {
      // Anything after the signature would be unsigned.
      return Malformed("aws-chunked trailer after x-amz-trailer-signature.");
    }
    if (name == "x-amz-trailer-signature") {
      if (!signed_) continue;  // meaningless without a signature chain
      if (!IsSignature(value)) return Malformed("Invalid x-amz-trailer-signature.");
      trailer_signature = text::ToLower(value);
      continue;
    }
    canonical += name + ":" + value + "\n";
    trailers_[name] = std::move(value);
  }
  if (signed_ && trailer_mode_) {
    if (trailer_signature.empty()) {
      return MakeError(ErrorCode::kInvalidChunkSignature, "Missing x-amz-trailer-signature.");
    }
    std::string expected = hash::HexEncode(hash::HmacSha256(
        auth_.signing_key,
        TrailerStringToSign(auth_.amz_date, auth_.scope, prev_signature_, canonical)));
    if (!SameSignature(expected, trailer_signature)) {
      return MakeError(ErrorCode::kInvalidChunkSignature,
                       "The trailer signature we calculated does not match the one provided.");
    }
    prev_signature_ = trailer_signature;
  }
  return {};
}

// The aws-chunked encoding must account for the whole body.
Status AwsChunkedSource::CheckEndOfBody() {
  if (end_ > begin_) return Malformed("Unexpected data after the end of the aws-chunked body.");
  auto more = Fill();
  if (!more.ok()) return more.error();
  if (*more) return Malformed("Unexpected data after the end of the aws-chunked body.");
  return {};
}

}  // namespace rdmastor::s3
