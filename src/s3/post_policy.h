// POST Object (browser-form uploads): a streaming multipart/form-data reader with bounded field
// sizes, and the POST policy document (expiration, conditions) S3 checks the form against.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/http_types.h"

namespace rdmastor::s3 {

// The boundary parameter of a multipart/form-data Content-Type; MalformedPOSTRequest when the
// type is another or the boundary is missing, empty or longer than RFC 2046's 70 characters.
Result<std::string> FormBoundary(std::string_view content_type);

// Reads a multipart/form-data body part by part, holding at most one read buffer (64 KiB) plus
// the part headers: field values are read with a size bound and the file part is streamed.
class FormReader {
 public:
  struct Part {
    std::string name;                     // form field name as sent
    std::optional<std::string> filename;  // set for file parts
    std::string content_type;             // the part's Content-Type, if any
  };

  FormReader(BodySource& body, std::string boundary);

  // The next part's headers (skipping the preamble and whatever remained of the current part);
  // nullopt after the closing boundary. MalformedPOSTRequest on broken framing; header bytes
  // count against `budget`, MaxPostPreDataLengthExceeded when it runs out.
  Result<std::optional<Part>> Next(size_t& budget);
  // The current part's content, at most `budget` bytes (which it is charged against).
  Result<std::string> ReadValue(size_t& budget);
  // The current part's content as a stream (Read returns 0 at the part's end).
  BodySource& Content() { return content_; }

 private:
  class ContentSource : public BodySource {
   public:
    explicit ContentSource(FormReader& r) : r_(r) {}
    Result<size_t> Read(char* buf, size_t len) override { return r_.ReadContent(buf, len); }

   private:
    FormReader& r_;
  };

  Result<size_t> ReadContent(char* buf, size_t len);
  Result<bool> Fill();  // false at end of body

  BodySource& body_;
  std::string delimiter_;  // "\r\n--" + boundary
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  bool in_part_ = false;  // inside a part's content
  bool done_ = false;     // closing boundary seen
  ContentSource content_{*this};
};

// A parsed POST policy. Condition field names are lower case without the '$'.
struct PolicyCondition {
  enum class Op { kEq, kStartsWith, kContentLengthRange };
  Op op = Op::kEq;
  std::string field;
  std::string value;
  int64_t min = 0, max = 0;  // content-length-range
  std::string text;          // as S3 quotes it in errors: ["eq", "$key", "a"]
};
struct PostPolicy {
  int64_t expiration_unix = 0;
  std::vector<PolicyCondition> conditions;
  std::optional<std::pair<int64_t, int64_t>> length_range;
};

// Decodes and parses the base64 policy field. InvalidPolicyDocument when it is not base64 JSON
// with an ISO 8601 "expiration" and a "conditions" array of known conditions.
Result<PostPolicy> ParsePostPolicy(std::string_view policy_b64);

// Checks the form fields (lower-case names; "bucket" set to the request's bucket; the key with
// ${filename} already substituted) against the policy: AccessDenied "Invalid according to Policy:
// Policy expired." / "... Policy Condition failed: [...]" / "... Extra input fields: name".
// content-length-range is left to the upload (PostPolicy::length_range). A condition on the key
// also holds when it holds for key_as_sent (before ${filename}): a policy may name the template.
Status CheckPostPolicy(const PostPolicy& policy, const std::map<std::string, std::string>& fields,
                       int64_t now_unix, std::string_view key_as_sent = {});

}  // namespace rdmastor::s3
