// Result<T>: a value or an error (a code and a message), returned by every API that can fail.
// Exceptions stay inside the stage that calls a throwing library and are turned into Results at
// that stage's edge. Callers decide on the code (retry while kUnavailable, treat kNotFound as
// "absent"), never on the message's words; the message is for people and logs.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace autoheal {

// What kind of failure: the one thing a caller may branch on.
enum class ErrorCode {
    kInvalid,      // the input is malformed or refused (bad option, broken file, wrong type)
    kNotFound,     // the thing asked for does not exist (no such job, node, file)
    kUnavailable,  // a service did not answer (slurmctld away, webhook down): may work later
    kIo,           // reading or writing failed (disk full, permission, short write)
    kInternal,     // anything else, including our own bugs
};

// The stable word for a code, for logs and JSON: "invalid", "not-found", "unavailable", "io",
// "internal".
inline const char* ErrorCodeName(ErrorCode code) {
    switch (code) {
        case ErrorCode::kInvalid:
            return "invalid";
        case ErrorCode::kNotFound:
            return "not-found";
        case ErrorCode::kUnavailable:
            return "unavailable";
        case ErrorCode::kIo:
            return "io";
        case ErrorCode::kInternal:
            return "internal";
    }
    return "internal";
}

struct Error {
    std::string message;
    ErrorCode code = ErrorCode::kInternal;
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
    // By value, not T&&: `for (auto& x : F().value())` must not reference a dead temporary.
    T value() && { return std::get<T>(std::move(v_)); }
    const T& operator*() const& { return value(); }
    T& operator*() & { return value(); }  // so that std::move(*result) moves
    T operator*() && { return std::move(*this).value(); }
    const T* operator->() const { return &value(); }
    T* operator->() { return &value(); }

    // REQUIRES: !ok()
    const std::string& error() const { return std::get<Error>(v_).message; }
    ErrorCode code() const { return std::get<Error>(v_).code; }
    // The error itself, to pass up unchanged (code kept) from a Result of another type.
    const Error& status() const { return std::get<Error>(v_); }

  private:
    std::variant<T, Error> v_;
};

inline Error MakeError(std::string message) { return Error{std::move(message)}; }
inline Error MakeError(ErrorCode code, std::string message) {
    return Error{std::move(message), code};
}

}  // namespace autoheal
