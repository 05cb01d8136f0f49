#include "autoheal/core/duration.h"

#include <gtest/gtest.h>

namespace autoheal {
namespace {

TEST(Duration, EveryUnit) {
    EXPECT_EQ(*ParseDuration("45s"), 45);
    EXPECT_EQ(*ParseDuration("90m"), 5400);
    EXPECT_EQ(*ParseDuration("12h"), 43200);
    EXPECT_EQ(*ParseDuration("7d"), 7 * 86400);
    EXPECT_EQ(*ParseDuration("2w"), 14 * 86400);
    EXPECT_EQ(*ParseDuration("600"), 600);  // no unit: seconds
    EXPECT_EQ(*ParseDuration("0s"), 0);
}

TEST(Duration, Limit) {
    EXPECT_EQ(*ParseDuration("3650d"), kMaxDurationSeconds);
    EXPECT_EQ(*ParseDuration("521w"), 521 * 7 * 86400);
    EXPECT_FALSE(ParseDuration("3651d"));
    EXPECT_FALSE(ParseDuration("522w"));
    EXPECT_FALSE(ParseDuration("99999999999999999999s"));
}

TEST(Duration, RefusesWhatIsNotInTheGrammar) {
    for (const char* text :
         {"", "d", "-1d", "+1d", "3y", "1h30m", "1.5h", " 7d", "7d ", "7 d", "7D", "w2", "0x10s"}) {
        auto d = ParseDuration(text);
        ASSERT_FALSE(d) << "'" << text << "' was accepted as " << *d;
        EXPECT_EQ(d.code(), ErrorCode::kInvalid);
        EXPECT_NE(d.error().find(std::string("'") + text + "' is not a duration"),
                  std::string::npos)
            << d.error();
    }
}

}  // namespace
}  // namespace autoheal
