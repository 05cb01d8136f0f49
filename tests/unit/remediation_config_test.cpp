// remediation_config: the GPU reset program and the durations (the one grammar of
// core/duration.h).
#include "autoheal/remediation/remediation_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace autoheal::remediation {
namespace {

using ::testing::HasSubstr;

TEST(RemediationConfig, GpuResetProgramIsAnAbsolutePath) {
    auto defaults = ParseRemediationConfig(YAML::Node(), "autoheal.yaml");
    ASSERT_TRUE(defaults) << defaults.error();
    ASSERT_FALSE(defaults->gpu_reset_command.empty());
    EXPECT_EQ(defaults->gpu_reset_command.front(), "/usr/bin/nvidia-smi");

    // The shipped file's: ParseSettings.TheShippedAutohealYamlIsValid (settings_test.cpp).

    // A bare name would never run (no PATH lookup): refused where it is written.
    auto bare = ParseRemediationConfig(
        YAML::Load("dry_run: false\ngpu_reset_command: [nvidia-smi, -r, -i, \"{gpu}\"]\n"),
        "autoheal.yaml");
    ASSERT_FALSE(bare);
    EXPECT_THAT(bare.error(), HasSubstr("autoheal.yaml:2:21: remediation.gpu_reset_command: "
                                        "expected an absolute program path"));
    EXPECT_THAT(bare.error(), HasSubstr("'nvidia-smi'"));
}

TEST(RemediationConfig, DurationsUseTheOneGrammar) {
    auto weeks = ParseRemediationConfig(
        YAML::Load("lemon: {failures: 3, window: 2w}\nbreaker: {window: 5400}\n"), "a.yaml");
    ASSERT_TRUE(weeks) << weeks.error();
    EXPECT_EQ(weeks->lemon.window_seconds, 14 * 86400);
    for (const char* text : {"correlation: {window: 1h30m}\n", "lemon: {window: 3651d}\n",
                             "breaker: {window: -5m}\n"}) {
        EXPECT_FALSE(ParseRemediationConfig(YAML::Load(text), "a.yaml")) << text;
    }
}

TEST(RemediationConfig, EscalationMinUsers) {
    auto defaults = ParseRemediationConfig(YAML::Node(), "a.yaml");
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->escalation_min_users, 2);
    auto one = ParseRemediationConfig(YAML::Load("escalation_min_users: 1\n"), "a.yaml");
    ASSERT_TRUE(one) << one.error();
    EXPECT_EQ(one->escalation_min_users, 1);
    auto zero = ParseRemediationConfig(YAML::Load("escalation_min_users: 0\n"), "a.yaml");
    ASSERT_FALSE(zero);
    EXPECT_THAT(zero.error(), HasSubstr("remediation.escalation_min_users"));
}

}  // namespace
}  // namespace autoheal::remediation
