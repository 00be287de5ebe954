#include "s3/checksums.h"

#include <cctype>

#include "common/text.h"

namespace rdmastor::s3 {

namespace {

constexpr std::string_view kPrefix = "x-amz-checksum-";

using text::ToLower;

std::string Trimmed(std::string_view s) { return std::string(text::TrimBlanks(s)); }

Error Invalid(std::string_view what) {
  return MakeError(ErrorCode::kInvalidRequest, "Value for " + std::string(what) + " is invalid.");
}

// The algorithm of an x-amz-checksum-<algo> header name, when it names one (x-amz-checksum-mode,
// -type and -algorithm do not).
std::optional<hash::Algo> AlgoOfHeader(std::string_view lower_name) {
  if (lower_name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return hash::ChecksumAlgoFromName(lower_name.substr(kPrefix.size()));
}

}  // namespace

Result<DeclaredChecksum> ParseDeclaredChecksum(const HttpRequest& req) {
  DeclaredChecksum d;
  for (const auto& [name, value] : req.headers) {
    auto algo = AlgoOfHeader(name);
    if (!algo) {
      // Algorithms newer SDKs know and this server does not (sha512, xxhash64, ...): refused,
      // never stored unverified.
      if (name.rfind(kPrefix, 0) == 0 && name != "x-amz-checksum-mode" &&
          name != "x-amz-checksum-type" && name != "x-amz-checksum-algorithm")
        return MakeError(ErrorCode::kNotImplemented, name + " is not supported");
      continue;
    }
    if (d.algo)
      return MakeError(
          ErrorCode::kInvalidRequest,
          "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    if (!checksum::DecodeValue(*algo, value)) return Invalid(name + " header");
    d.algo = algo;
    d.value = value;
  }
  // x-amz-trailer: the value follows the aws-chunked body.
  if (const std::string* t = req.FindHeader("x-amz-trailer")) {
    const std::string trailer = ToLower(Trimmed(*t));
    auto algo = AlgoOfHeader(trailer);
    if (!algo)
      return MakeError(ErrorCode::kInvalidRequest, "unsupported x-amz-trailer: " + trailer);
    if (d.algo && d.algo != algo)
      return MakeError(
          ErrorCode::kInvalidRequest,
          "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    if (!d.algo) d.trailer = true;
    d.algo = algo;
  }
  // x-amz-sdk-checksum-algorithm names the algorithm of the value sent (header or trailer); alone
  // it asks for nothing to verify, but the checksum is computed and stored.
  if (const std::string* sdk = req.FindHeader("x-amz-sdk-checksum-algorithm")) {
    auto algo = checksum::AlgoFromAnyCase(Trimmed(*sdk));
    if (!algo || (d.algo && d.algo != algo)) return Invalid("x-amz-sdk-checksum-algorithm header");
    d.algo = algo;
  }
  return d;
}

Status VerifyDeclaredChecksum(const DeclaredChecksum& declared, const std::string& trailer_value,
                              const std::string& computed_raw) {
  if (!declared.algo) return {};
  std::string value = declared.value;
  if (declared.trailer) {
    // A trailer that was announced must arrive (else nothing was verified) and be well formed.
    const std::string name = std::string(kPrefix) + std::string(hash::ChecksumName(*declared.algo));
    if (!checksum::DecodeValue(*declared.algo, trailer_value))
      return Invalid(name + " trailing header");
    value = trailer_value;
  }
  if (value.empty()) return {};  // only x-amz-sdk-checksum-algorithm: nothing declared
  if (*checksum::DecodeValue(*declared.algo, value) != computed_raw) {
    return MakeError(ErrorCode::kBadDigest, "The " + checksum::UpperName(*declared.algo) +
                                                " you specified did not match the calculated "
                                                "checksum.");
  }
  return {};
}

Result<std::optional<hash::Algo>> PartChecksumAlgo(const DeclaredChecksum& declared,
                                                   const std::string& upload_algo,
                                                   const std::string& upload_type) {
  if (upload_algo.empty()) return declared.algo;
  auto expected = hash::ChecksumAlgoFromName(upload_algo);
  if (!expected) return declared.algo;  // a record from the future: do not refuse parts over it
  const bool full_object =
      checksum::TypeFromName(upload_type).value_or(checksum::DefaultMultipartType(*expected)) ==
      checksum::Type::kFullObject;
  // A FULL_OBJECT upload's parts may come without a checksum: the server computes each part's CRC
  // (the object's value is combined from them). A COMPOSITE one needs the client's part values.
  if ((declared.algo && declared.algo != expected) || (!declared.algo && !full_object)) {
    return MakeError(ErrorCode::kInvalidRequest,
                     "Checksum Type mismatch occurred, expected checksum Type: " + upload_algo +
                         ", actual checksum Type: " +
                         (declared.algo ? std::string(hash::ChecksumName(*declared.algo))
                                        : std::string("null")));
  }
  return expected;
}

Status ParseMultipartChecksumHeaders(const HttpRequest& req, storage::PutOptions& opts) {
  const std::string* algo_h = req.FindHeader("x-amz-checksum-algorithm");
  const std::string* type_h = req.FindHeader("x-amz-checksum-type");
  std::optional<checksum::Type> type;
  if (type_h) {
    type = checksum::TypeFromName(Trimmed(*type_h));
    if (!type) return Invalid("x-amz-checksum-type header");
  }
  if (!algo_h) {
    if (type_h)
      return MakeError(ErrorCode::kInvalidRequest,
                       "The x-amz-checksum-type header can only be used with the "
                       "x-amz-checksum-algorithm header.");
    return {};
  }
  const std::string name = Trimmed(*algo_h);
  auto algo = checksum::AlgoFromAnyCase(name);
  if (!algo) {
    if (name.find(',') != std::string::npos)
      return MakeError(ErrorCode::kInvalidRequest,
                       "Invalid types are specified in x-amz-checksum-algorithm header.");
    return MakeError(ErrorCode::kInvalidRequest,
                     "Checksum algorithm provided is unsupported. Please try again with any of "
                     "the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
  }
  if (!type) type = checksum::DefaultMultipartType(*algo);
  if (!checksum::Allows(*algo, *type)) {
    return MakeError(ErrorCode::kInvalidRequest,
                     "The " + std::string(checksum::TypeName(*type)) +
                         " checksum type cannot be used with the " +
                         std::string(hash::ChecksumName(*algo)) + " checksum algorithm.");
  }
  opts.checksum_algorithm = std::string(hash::ChecksumName(*algo));
  opts.checksum_type = std::string(checksum::TypeName(*type));
  return {};
}

Status CheckCompletePartChecksums(const std::vector<storage::CompletePart>& parts) {
  for (const auto& p : parts) {
    bool bad = p.checksums.size() > 1;
    for (const auto& [algo, value] : p.checksums) {
      auto a = hash::ChecksumAlgoFromName(algo);
      bad = bad || !a || !checksum::DecodeValue(*a, value);
    }
    if (!bad) continue;
    // AWS names every checksum of the part: "CRC32:<v>;CRC32C:<v>;" in algorithm order.
    std::string listed;
    for (const auto& [algo, value] : p.checksums) {
      std::string upper = algo;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      listed += upper + ":" + value + ";";
    }
    Error e = MakeError(ErrorCode::kInvalidArgument,
                        "Invalid Base64 or multiple checksums present in request");
    e.details.emplace_back("ArgumentName", "Checksum");
    e.details.emplace_back("ArgumentValue", listed);
    return e;
  }
  return {};
}

Result<storage::CompleteChecksum> ParseCompleteChecksumHeaders(const HttpRequest& req) {
  storage::CompleteChecksum c;
  for (const auto& [name, value] : req.headers) {
    auto algo = AlgoOfHeader(name);
    if (!algo) continue;
    if (!c.algo.empty())
      return MakeError(
          ErrorCode::kInvalidRequest,
          "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    // The object's value: a digest, for a composite object optionally "-N" with N digits.
    std::string_view v = value;
    const size_t dash = v.find('-');
    if (dash != std::string_view::npos) {
      std::string_view n = v.substr(dash + 1);
      if (n.empty() || n.size() > 5 ||
          n.find_first_not_of("0123456789") != std::string_view::npos)
        return Invalid(name + " header");
      v = v.substr(0, dash);
    }
    if (!checksum::DecodeValue(*algo, v)) return Invalid(name + " header");
    c.algo = std::string(hash::ChecksumName(*algo));
    c.value = value;
  }
  if (const std::string* t = req.FindHeader("x-amz-checksum-type")) {
    auto type = checksum::TypeFromName(Trimmed(*t));
    if (!type) return Invalid("x-amz-checksum-type header");
    c.type = std::string(checksum::TypeName(*type));
  }
  return c;
}

void AddChecksumHeaders(HttpResponseHead& head, const std::map<std::string, std::string>& sums,
                        std::optional<checksum::Type> type) {
  bool any = false;
  for (const auto& [algo, value] : sums) {
    if (!hash::ChecksumAlgoFromName(algo)) continue;
    head.Set(std::string(kPrefix) + algo, value);
    if (!type) type = checksum::TypeOfValue(value);
    any = true;
  }
  if (any) head.Set("x-amz-checksum-type", std::string(checksum::TypeName(*type)));
}

}  // namespace rdmastor::s3
