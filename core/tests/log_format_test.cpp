#include "autoheal/core/log_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace autoheal {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using Clock = std::chrono::system_clock;

nlohmann::json ParseLine(const std::string& line) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    return nlohmann::json::parse(line);  // throws (fails the test) on invalid JSON or UTF-8
}

TEST(JsonLogLine, FieldsInOrder) {
    const std::string line = JsonLogLine(Clock::now(), "info", "autoheal-prolog", 42,
                                         "autoheal: prolog: job seen: job=7");
    EXPECT_THAT(line, MatchesRegex(R"(\{"time":"[^"]+","level":"info","program":"autoheal-prolog",)"
                                   R"("pid":42,"message":"autoheal: prolog: job seen: job=7"\})"));
    auto j = ParseLine(line);
    EXPECT_EQ(j["message"], "autoheal: prolog: job seen: job=7");
}

TEST(JsonLogLine, EscapesQuotesNewlinesAndControlCharacters) {
    const std::string message = "say \"hi\"\\path\nsecond line\r\ttab \x01\x1f end";
    const std::string line = JsonLogLine(Clock::now(), "warning", "p", 1, message);
    EXPECT_THAT(line, HasSubstr(R"(say \"hi\"\\path\nsecond line\r\ttab \u0001\u001f end)"));
    EXPECT_EQ(ParseLine(line)["message"], message);
}

TEST(JsonLogLine, InvalidUtf8BecomesReplacementCharacter) {
    // A lone continuation byte, 0xff, a truncated sequence, an overlong NUL, a UTF-16 surrogate.
    for (const std::string bad :
         {"a\x80z", "a\xffz", "a\xe2\x82z", "a\xc0\x80z", "a\xed\xa0\x80z"}) {
        const std::string line = JsonLogLine(Clock::now(), "error", "p", 1, bad);
        auto j = ParseLine(line);
        const std::string got = j["message"];
        EXPECT_EQ(got.front(), 'a');
        EXPECT_EQ(got.back(), 'z');
        EXPECT_THAT(got, HasSubstr("\xef\xbf\xbd"));  // U+FFFD
    }
    // Valid UTF-8 is kept as it is.
    auto j =
        ParseLine(JsonLogLine(Clock::now(), "info", "p", 1, "GPU \xc3\xa9t\xc3\xa9 \xe2\x9c\x93"));
    EXPECT_EQ(j["message"], "GPU \xc3\xa9t\xc3\xa9 \xe2\x9c\x93");
}

TEST(Iso8601Time, ShapeWithMillisecondsAndOffset) {
    const auto t = Clock::from_time_t(0) + std::chrono::milliseconds(1234);
    EXPECT_THAT(
        Iso8601Time(t),
        MatchesRegex(
            R"(19(69|70)-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.234[+-][0-9]{2}:[0-9]{2})"));
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    EXPECT_EQ(Iso8601Time(t), "1970-01-01T00:00:01.234+00:00");
}

TEST(TextLogFormatter, ControlCharactersInTheMessageAreEscaped) {
    auto formatter = MakeTextLogFormatter("autoheal-test", false);
    const std::string payload = "job said: line\nforged\x1b[31m";
    spdlog::details::log_msg msg(spdlog::source_loc{}, "t", spdlog::level::warn,
                                 spdlog::string_view_t(payload.data(), payload.size()));
    spdlog::memory_buf_t out;
    formatter->format(msg, out);
    const std::string line(out.data(), out.size());
    EXPECT_THAT(line, HasSubstr("warning: job said: line\\x0aforged\\x1b[31m"));
    EXPECT_EQ(line.find('\x1b'), std::string::npos);
    EXPECT_EQ(line.find('\n'), line.size() - 1);  // only the record's own end
    auto syslog = MakeTextLogFormatter("autoheal-test", true);
    spdlog::memory_buf_t out2;
    syslog->clone()->format(msg, out2);
    EXPECT_EQ(std::string(out2.data(), out2.size()),
              "autoheal-test: job said: line\\x0aforged\\x1b[31m");
}

}  // namespace
}  // namespace autoheal
