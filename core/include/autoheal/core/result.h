// Result<T>: a value or an error message, returned by every core API that can fail on input.
// Exceptions stay inside the stage that calls a throwing library and are turned into Results at
// that stage's edge.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace autoheal {

struct Error {
    std::string message;
};

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }

    // REQUIRES: ok()
    const T& value() const& { return std::get<T>(v_); }
    T& value() & { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    const T& operator*() const& { return value(); }
    const T* operator->() const { return &value(); }

    // REQUIRES: !ok()
    const std::string& error() const { return std::get<Error>(v_).message; }

  private:
    std::variant<T, Error> v_;
};

inline Error MakeError(std::string message) { return Error{std::move(message)}; }

}  // namespace autoheal
