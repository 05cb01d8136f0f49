#include "autoheal/core/log_format.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "autoheal/core/escape.h"

namespace autoheal {
namespace {

class JsonLogFormatter final : public spdlog::formatter {
  public:
    JsonLogFormatter(std::string program, std::string eol)
        : program_(std::move(program)), eol_(std::move(eol)) {}

    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
        const std::string line = JsonLogLine(
            msg.time, std::string_view(level.data(), level.size()), program_,
            static_cast<int>(::getpid()), std::string_view(msg.payload.data(), msg.payload.size()));
        dest.append(line.data(), line.data() + line.size());
        dest.append(eol_.data(), eol_.data() + eol_.size());
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<JsonLogFormatter>(program_, eol_);
    }

  private:
    std::string program_;
    std::string eol_;
};

// The text format: spdlog's pattern, over the message with its control characters escaped
// (a job's output quoted in a message cannot forge log lines or drive a terminal).
class TextLogFormatter final : public spdlog::formatter {
  public:
    explicit TextLogFormatter(std::unique_ptr<spdlog::formatter> pattern)
        : pattern_(std::move(pattern)) {}

    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        spdlog::details::log_msg escaped = msg;
        const std::string text =
            EscapeControl(std::string_view(msg.payload.data(), msg.payload.size()));
        escaped.payload = spdlog::string_view_t(text.data(), text.size());
        pattern_->format(escaped, dest);
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<TextLogFormatter>(pattern_->clone());
    }

  private:
    std::unique_ptr<spdlog::formatter> pattern_;
};

}  // namespace

std::string Iso8601Time(std::chrono::system_clock::time_point time) {
    const auto since_epoch = time.time_since_epoch();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &local);
    const long offset_minutes = local.tm_gmtoff / 60;
    const long abs_minutes = offset_minutes < 0 ? -offset_minutes : offset_minutes;
    char out[64];
    std::snprintf(out, sizeof(out), "%s.%03d%c%02ld:%02ld", date,
                  static_cast<int>(millis < 0 ? millis + 1000 : millis),
                  offset_minutes < 0 ? '-' : '+', abs_minutes / 60, abs_minutes % 60);
    return out;
}

std::string JsonLogLine(std::chrono::system_clock::time_point time, std::string_view level,
                        std::string_view program, int pid, std::string_view message) {
    nlohmann::ordered_json record;
    record["time"] = Iso8601Time(time);
    record["level"] = std::string(level);
    record["program"] = std::string(program);
    record["pid"] = pid;
    record["message"] = std::string(message);
    // `replace`: invalid UTF-8 becomes U+FFFD instead of an exception; ensure_ascii off keeps
    // valid non-ASCII text readable.
    return record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter(std::string program, std::string eol) {
    return std::make_unique<JsonLogFormatter>(std::move(program), std::move(eol));
}

std::unique_ptr<spdlog::formatter> MakeTextLogFormatter(const std::string& program,
                                                        bool for_syslog) {
    if (for_syslog) {
        return std::make_unique<TextLogFormatter>(std::make_unique<spdlog::pattern_formatter>(
            program + ": %v", spdlog::pattern_time_type::local, std::string()));
    }
    return std::make_unique<TextLogFormatter>(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%e%z " + program + "[%P] %l: %v"));
}

}  // namespace autoheal
