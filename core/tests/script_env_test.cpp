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
    auto ctx = ReadScriptContext(FromMap({{"SLURM_JOB_ID", "12"},
                                          {"SLURMD_NODENAME", "node3"},
                                          {"SLURM_NODELIST", "node[3-4]"},
                                          {"SLURM_JOB_GPUS", "0,1"},
                                          {"SPANK_AUTOHEAL_AUTO_RESUME", "2"},
                                          {"SPANK_AUTOHEAL_CKPT_DIR", "/scratch/r 1"},
                                          {"SPANK_AUTOHEAL_HEALTH_CHECK", "full"}}));
    EXPECT_EQ(ctx.job_id, "12");
    EXPECT_EQ(ctx.node, "node3");
    EXPECT_EQ(ctx.nodelist, "node[3-4]");
    EXPECT_EQ(ctx.options.auto_resume, 2);
    std::string line = DescribeScriptContext(ctx);
    EXPECT_THAT(line, HasSubstr("job=12 node=node3 nodelist=node[3-4]"));
    EXPECT_THAT(line, HasSubstr("auto_resume=2 ckpt_dir=\"/scratch/r 1\" health_check=full"));
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
