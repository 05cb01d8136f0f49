#include "autoheal/core/script_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace autoheal {
namespace {

using ::testing::HasSubstr;

EnvLookup FromMap(std::map<std::string, std::string, std::less<>> env) {
    return [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
    };
}

TEST(ReadScriptContext, ReadsPrologEnvironment) {
    auto ctx = ReadScriptContext(FromMap(
        {{"SLURM_JOB_ID", "12"},
         {"SLURMD_NODENAME", "node3"},
         {"SLURM_NODELIST", "node[3-4]"},
         {"SLURM_JOB_GPUS", "0,1"},
         {"SPANK_AUTOHEAL_OPTIONS", "auto_resume=2;health_check=full;ckpt_dir=/scratch/r 1"}}));
    EXPECT_EQ(ctx.job_id, "12");
    EXPECT_EQ(ctx.node, "node3");
    EXPECT_EQ(ctx.nodelist, "node[3-4]");
    EXPECT_EQ(ctx.options.auto_resume, 2);
    std::string line = DescribeScriptContext(ctx);
    EXPECT_THAT(line, HasSubstr("job=12 node=node3 nodelist=node[3-4]"));
    EXPECT_THAT(line, HasSubstr("auto_resume=2 ckpt_dir=\"/scratch/r 1\" health_check=full"));
}

// A user's own SPANK_AUTOHEAL_* variable (sbatch --export, srun's SLURM_SPANK_* copies) is not
// an option record, and a forged record still goes through the option's parser.
TEST(ReadScriptContext, ForgedVariablesAreNotOptions) {
    std::vector<std::pair<std::string, std::string>> forged = {
        {"SPANK_AUTOHEAL_AUTO_RESUME", "99"},
        {"SPANK__SLURM_SPANK_OPTION_autoheal_auto_resume", "99"},
        {"SPANK_AUTOHEAL_OPTIONS", "auto_resume=many;ckpt_dir=../etc"}};
    auto ctx = ReadScriptContext([&](std::string_view name) -> std::optional<std::string> {
        for (const auto& [k, v] : forged) {
            if (k == name) return v;
        }
        return std::nullopt;
    });
    EXPECT_FALSE(ctx.options.auto_resume.has_value());
    EXPECT_FALSE(ctx.options.ckpt_dir.has_value());
    EXPECT_EQ(ctx.problems.size(), 2u);
}

TEST(ReadScriptContext, ControllerEpilogUsesJobNodelist) {
    auto ctx = ReadScriptContext(
        FromMap({{"SLURM_JOB_NODELIST", "node[1-2]"}, {"SLURM_NODELIST", "other"}}));
    EXPECT_EQ(ctx.nodelist, "node[1-2]");
    EXPECT_THAT(DescribeScriptContext(ctx),
                HasSubstr("auto_resume=off ckpt_dir=\"\" health_check=default"));
}

}  // namespace
}  // namespace autoheal
