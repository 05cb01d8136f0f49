#include "autoheal/core/flight_recorder_env.h"

#include <gtest/gtest.h>

#include <map>

namespace autoheal {
namespace {

std::map<std::string, std::string> Env(const std::map<std::string, std::string>& job,
                                       bool* needed) {
    auto lookup = [&](std::string_view name) -> std::optional<std::string> {
        auto it = job.find(std::string(name));
        if (it == job.end()) return std::nullopt;
        return it->second;
    };
    std::map<std::string, std::string> out;
    for (auto& [k, v] :
         FlightRecorderEnv(lookup, "/state/jobs/42/run1/flight-recorder/node7", needed)) {
        out[k] = v;
    }
    return out;
}

TEST(FlightRecorderEnv, SetsBothNamesOfEveryVariableForAJobThatSetNone) {
    bool needed = false;
    const auto env = Env({}, &needed);
    EXPECT_TRUE(needed);
    EXPECT_EQ(env.at("TORCH_NCCL_TRACE_BUFFER_SIZE"), "2000");
    EXPECT_EQ(env.at("TORCH_FR_BUFFER_SIZE"), "2000");
    EXPECT_EQ(env.at("TORCH_NCCL_DUMP_ON_TIMEOUT"), "1");
    EXPECT_EQ(env.at("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
              "/state/jobs/42/run1/flight-recorder/node7/nccl_trace_rank_");
    EXPECT_EQ(env.at("TORCH_FR_DUMP_TEMP_FILE"), env.at("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
    EXPECT_EQ(env.at("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"),
              "/state/jobs/42/run1/flight-recorder/node7/nccl_trace_pipe_rank_");
    EXPECT_EQ(FlightRecorderDir("/state", "42", 1), "/state/jobs/42/run1/flight-recorder");
}

TEST(FlightRecorderEnv, KeepsWhatTheJobSetItself) {
    bool needed = true;
    const auto env = Env({{"TORCH_FR_DUMP_TEMP_FILE", "/mine/rank_"},
                          {"TORCH_NCCL_TRACE_BUFFER_SIZE", "500"},
                          {"TORCH_NCCL_DUMP_ON_TIMEOUT", "0"}},
                         &needed);
    EXPECT_FALSE(needed);
    EXPECT_TRUE(env.empty()) << env.begin()->first;
}

// An srun task on node7 inherits the batch step's variables, set for the batch host (node1): the
// paths are set again for node7; the rest stays as inherited.
TEST(FlightRecorderEnv, PathsSetForAnotherNodeOfTheRunAreSetAgainForThisOne) {
    bool needed = false;
    const std::string node1 = "/state/jobs/42/run1/flight-recorder/node1/";
    const auto env = Env({{"TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"},
                          {"TORCH_FR_BUFFER_SIZE", "2000"},
                          {"TORCH_NCCL_DUMP_ON_TIMEOUT", "1"},
                          {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", node1 + "nccl_trace_rank_"},
                          {"TORCH_FR_DUMP_TEMP_FILE", node1 + "nccl_trace_rank_"},
                          {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", node1 + "nccl_trace_pipe_rank_"}},
                         &needed);
    EXPECT_TRUE(needed);
    EXPECT_EQ(env.size(), 3u);
    EXPECT_EQ(env.at("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
              "/state/jobs/42/run1/flight-recorder/node7/nccl_trace_rank_");
    EXPECT_EQ(env.at("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"),
              "/state/jobs/42/run1/flight-recorder/node7/nccl_trace_pipe_rank_");
}

TEST(FlightRecorderEnv, ABufferSizeOfZeroTurnsItAllOff) {
    bool needed = true;
    EXPECT_TRUE(Env({{"TORCH_NCCL_TRACE_BUFFER_SIZE", "0"}}, &needed).empty());
    EXPECT_TRUE(Env({{"TORCH_FR_BUFFER_SIZE", ""}}, &needed).empty());
    EXPECT_FALSE(needed);
}

}  // namespace
}  // namespace autoheal
