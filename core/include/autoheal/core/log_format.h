// How autoheal's programs format their log lines: `log_format: text | json` in autoheal.yaml.
// JSON lines are one object per line, {"time", "level", "program", "pid", "message"}, valid JSON
// whatever the message holds (quotes, newlines, control characters, bytes that are not UTF-8).
#pragma once

#include <spdlog/formatter.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace autoheal {

// "2025-06-01T12:00:00.123+02:00": local time, milliseconds, the UTC offset.
std::string Iso8601Time(std::chrono::system_clock::time_point time);

// One log record as a JSON object, without a line end. `level` is spdlog's level name
// ("info", "warning", ...). Bytes of `message` that are not valid UTF-8 become U+FFFD.
std::string JsonLogLine(std::chrono::system_clock::time_point time, std::string_view level,
                        std::string_view program, int pid, std::string_view message);

// An spdlog formatter writing JsonLogLine records followed by `eol` ("\n" for files, "" for
// syslog, which frames records itself).
std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter(std::string program, std::string eol);

// The text formatter: "<time> <program>[<pid>] <level>: <message>" followed by `eol`; for syslog
// (which adds time and pid itself) just "<program>: <message>". The message's control
// characters are escaped (EscapeControl).
std::unique_ptr<spdlog::formatter> MakeTextLogFormatter(const std::string& program,
                                                        bool for_syslog);

}  // namespace autoheal
