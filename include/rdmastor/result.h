// Errors as values at module boundaries: Result<T> carries either a value or an Error whose code
// is an S3 error code (mapped once to HTTP status and XML in s3/errors.cc).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rdmastor/error_code.h"

namespace rdmastor {

struct Error {
  ErrorCode code = ErrorCode::kInternalError;
  std::string message;  // human readable detail; empty means "use the code's default message"
  // Extra elements of the S3 error document, in order (e.g. HeadersNotSigned for AccessDenied).
  std::vector<std::pair<std::string, std::string>> details;
};

inline Error MakeError(ErrorCode code, std::string message = {}) {
  return Error{code, std::move(message), {}};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}    // NOLINT(google-explicit-constructor)
  Result(ErrorCode code) : v_(Error{code, {}, {}}) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}    // NOLINT
  Result(ErrorCode code) : err_(Error{code, {}, {}}), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return err_;
  }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace rdmastor

// Propagate an error from an expression returning Result<...>.
#define RS_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    auto rs_status_ = (expr);                        \
    if (!rs_status_.ok()) return rs_status_.error(); \
  } while (0)
