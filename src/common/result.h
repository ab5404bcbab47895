// Errors as values: a Result<T> holds a T or an Error naming what went wrong.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace endure {

// code is a stable machine name (ValidationException, ResourceNotFound, ...);
// message is for people and names the field or resource and the rule.
struct Error {
  std::string code;
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error. Both are [[nodiscard]]: an error is handled or passed
// on, never dropped; a call whose failure really does not matter says so with (void).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status Ok() { return {}; }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

inline Error make_error(std::string code, std::string message) {
  return Error{std::move(code), std::move(message)};
}

// A ValidationException: bad input, the message naming the field and the rule.
inline Error invalid(std::string message) {
  return make_error("ValidationException", std::move(message));
}

}  // namespace endure
