#include "autoheal/core/plugin_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace autoheal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParsePluginArgs, DefaultsWithoutArguments) {
    auto r = ParsePluginArgs({});
    EXPECT_TRUE(r.problems.empty());
    EXPECT_EQ(r.args.limits.default_auto_resume, 3);
    EXPECT_EQ(r.args.limits.max_auto_resume, 10);
}

TEST(ParsePluginArgs, AppliesKnownKeys) {
    auto r = ParsePluginArgs({"max_auto_resume=5", "default_auto_resume=2"});
    EXPECT_TRUE(r.problems.empty());
    EXPECT_EQ(r.args.limits.max_auto_resume, 5);
    EXPECT_EQ(r.args.limits.default_auto_resume, 2);
}

TEST(ParsePluginArgs, RefusesUnknownKeysByNameAndKeepsDefaults) {
    auto r = ParsePluginArgs({"max_autoresume=5", "verbose"});
    ASSERT_EQ(r.problems.size(), 2u);
    EXPECT_THAT(r.problems[0], HasSubstr("unknown argument 'max_autoresume'"));
    EXPECT_THAT(r.problems[1], HasSubstr("'verbose' is not key=value"));
    EXPECT_EQ(r.args.limits.max_auto_resume, 10);
}

TEST(ParsePluginArgs, RefusesBadValuesKeepingDefault) {
    auto r = ParsePluginArgs({"max_auto_resume=0", "default_auto_resume=x"});
    ASSERT_EQ(r.problems.size(), 2u);
    EXPECT_THAT(r.problems[0], HasSubstr("max_auto_resume: invalid value '0'"));
    EXPECT_EQ(r.args.limits.max_auto_resume, 10);
    EXPECT_EQ(r.args.limits.default_auto_resume, 3);
}

TEST(ParsePluginArgs, ClampsDefaultToMax) {
    auto r = ParsePluginArgs({"max_auto_resume=2"});
    EXPECT_THAT(r.problems, ElementsAre(HasSubstr("default_auto_resume=3 is above")));
    EXPECT_EQ(r.args.limits.default_auto_resume, 2);
}

}  // namespace
}  // namespace autoheal
