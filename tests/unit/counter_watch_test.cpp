// autoheal-agent's NVML counter watch (agent/counter_watch.h): the fake NVML (its scenario file
// rewritten between readings, as a GPU would change), the fake Slurm cluster and clock
// (EpilogTestEnv) and the shipped rules: a change between two readings is handled as a kernel
// fault is.
#include "autoheal/agent/counter_watch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autoheal/core/files.h"
#include "autoheal/remediation/job_records.h"
#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

namespace fs = std::filesystem;
namespace rem = autoheal::remediation;
using rem::testing::EpilogTestEnv;

constexpr const char* kGpu0 = R"({"minor": 0, "pci_bus_id": "0000:3b:00.0"})";
constexpr const char* kGpu1 = R"({"minor": 1, "pci_bus_id": "0000:5d:00.0"})";

class CounterWatchTest : public ::testing::Test {
  protected:
    void SetUp() override {
        t.health.nvml_library = AUTOHEAL_FAKE_NVML;
        t.health.nvml_timeout_seconds = 5;
        agent.counter_seconds = 30;
        Gpus(std::string("[") + kGpu0 + ", " + kGpu1 + "]");
    }
    void TearDown() override { ::unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO"); }

    // The fake NVML's scenario: `gpus` (a JSON list), read afresh by each reading's child.
    void Gpus(const std::string& gpus, const std::string& extra = "") {
        const fs::path scenario = t.dir / "gpus.json";
        std::ofstream(scenario) << R"({"gpus": )" << gpus << extra << "}";
        ::setenv("AUTOHEAL_FAKE_GPU_SCENARIO", scenario.c_str(), 1);
    }
    AgentEnv Env() {
        return AgentEnv{t.config, t.rc,    t.tickets, agent,   t.engine,
                        t.slurm,  t.clock, "node1",   t.health};
    }
    // Reads, then again after the interval.
    std::string TwoReadings(CounterWatch& watch, const std::function<void()>& between) {
        std::string log;
        for (const std::string& l : watch.Poll()) log += l + "\n";
        between();
        t.clock.Advance(std::chrono::seconds(30));
        for (const std::string& l : watch.Poll()) log += l + "\n";
        return log;
    }

    EpilogTestEnv t;
    AgentConfig agent;
};

// A GPU that NVML no longer finds, with no kernel line at all: the node is taken out before a
// job lands there (the Xid 79 rule, by its gpu_lost counter).
TEST_F(CounterWatchTest, AGpuNvmlNoLongerFindsTakesTheIdleNodeOut) {
    const AgentEnv env = Env();
    CounterWatch watch(env);
    const std::string log = TwoReadings(watch, [&] { Gpus(std::string("[") + kGpu1 + "]"); });
    EXPECT_TRUE(t.slurm.node("node1").drained) << log;
    EXPECT_NE(t.slurm.node("node1").reason.find("faulty_gpu"), std::string::npos)
        << t.slurm.node("node1").reason;
    EXPECT_NE(log.find("xid-79-fallen-off-bus"), std::string::npos) << log;
    // Seen once: the next reading compares with this one.
    t.clock.Advance(std::chrono::seconds(30));
    EXPECT_TRUE(watch.Poll().empty());
}

// A failed row remap while a job runs: the --auto-resume job is requeued without the node.
TEST_F(CounterWatchTest, ARowRemapFailureWhileAJobRunsRequeuesItWithoutTheNode) {
    rem::JobInfo& job = t.FailedJob(42, {"node1", "node2"}, 3);
    job.state = "RUNNING";
    job.exit_code = 0;
    job.end_time = 0;
    for (const char* n : {"node1", "node2"}) {
        rem::PrologBaseline b;
        b.time = t.clock.Now();
        b.options = t.ctx.options;
        auto w = WriteFileAtomically(rem::PrologFile(t.config.state_dir, "42", n),
                                     rem::PrologBaselineToJson(b, nullptr), 0640, 0755);
        ASSERT_TRUE(w) << w.error();
    }
    const AgentEnv env = Env();
    CounterWatch watch(env);
    const std::string log = TwoReadings(watch, [&] {
        Gpus(std::string(R"([{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                              "remapped_rows": {"uncorrectable": 2, "failure": true}}, )") +
             kGpu1 + "]");
    });
    EXPECT_EQ(t.slurm.Count("requeue"), 1) << log;
    EXPECT_EQ(t.slurm.job(42).exc_nodes, "node1");
    EXPECT_TRUE(t.slurm.node("node1").drained);
    EXPECT_FALSE(t.slurm.node("node2").drained);
}

TEST_F(CounterWatchTest, NoChangeOrNoIntervalYetDoesNothing) {
    const AgentEnv env = Env();
    CounterWatch watch(env);
    EXPECT_TRUE(watch.Poll().empty());
    Gpus(std::string("[") + kGpu1 + "]");
    t.clock.Advance(std::chrono::seconds(10));  // under the interval: not read
    EXPECT_TRUE(watch.Poll().empty());
    EXPECT_FALSE(t.slurm.node("node1").drained);
    Gpus(std::string("[") + kGpu0 + ", " + kGpu1 + "]");
    t.clock.Advance(std::chrono::seconds(30));
    EXPECT_TRUE(watch.Poll().empty());
    EXPECT_TRUE(t.slurm.calls().empty());
}

// NVML that hangs is killed at health.nvml_timeout_seconds; the watch says so and goes on.
TEST_F(CounterWatchTest, NvmlThatHangsIsBoundedAndSaidSo) {
    t.health.nvml_timeout_seconds = 1;
    Gpus(std::string("[") + kGpu0 + "]",
         R"(, "hang": {"call": "nvmlDeviceGetTemperature", "seconds": 5})");
    const AgentEnv env = Env();
    CounterWatch watch(env);
    const std::vector<std::string> log = watch.Poll();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0], "counters: NVML did not answer in time");
}

TEST_F(CounterWatchTest, OffReadsNothing) {
    agent.counter_seconds = 0;
    Gpus("[]", R"(, "hang": {"call": "nvmlInit_v2", "seconds": 5})");
    const AgentEnv env = Env();
    CounterWatch watch(env);
    EXPECT_TRUE(watch.Poll().empty());
}

}  // namespace
}  // namespace autoheal::agent
