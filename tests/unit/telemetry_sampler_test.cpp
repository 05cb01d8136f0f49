// autoheal-agent's power and temperature sampling (agent/telemetry_sampler.h) on the fake NVML
// (a scenario file) and the fake clock, through the run's telemetry record, the node epilog's
// gpu-telemetry evidence and the controller with the shipped rules: the slow GPU is named and
// its node drained.
#include "autoheal/agent/telemetry_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autoheal/core/files.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/telemetry_record.h"
#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

namespace fs = std::filesystem;
namespace rem = autoheal::remediation;
using rem::testing::EpilogTestEnv;
using ::testing::HasSubstr;

class TelemetrySamplerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        t.health.nvml_library = AUTOHEAL_FAKE_NVML;
        t.health.nvml_timeout_seconds = 5;
        agent.sample_seconds = 5;
        // GPU 0 healthy; GPU 1 held in hardware slowdown at a lower clock, hotter.
        const fs::path scenario = t.dir / "gpus.json";
        std::ofstream(scenario) << R"({"gpus": [
            {"minor": 0, "pci_bus_id": "0000:3b:00.0", "temperature_c": 60,
             "telemetry": {"power_watts": 600, "sm_clock_mhz": 1980}},
            {"minor": 1, "pci_bus_id": "0000:5d:00.0", "temperature_c": 84,
             "clock_event_reasons": 8,
             "telemetry": {"power_watts": 400, "sm_clock_mhz": 1200}},
            {"minor": 2, "pci_bus_id": "0000:8f:00.0"}]})";
        ::setenv("AUTOHEAL_FAKE_GPU_SCENARIO", scenario.c_str(), 1);
    }
    void TearDown() override { ::unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO"); }

    // A job running on node1 whose prolog recorded these GPUs.
    rem::JobInfo RunningJob(std::uint32_t id, const std::string& gpus) {
        rem::JobInfo job = t.FailedJob(id, {"node1"});
        job.state = "RUNNING";
        rem::PrologBaseline b;
        b.time = t.clock.Now();
        b.job_gpus = gpus;
        auto w = WriteFileAtomically(rem::PrologFile(t.config.state_dir, t.ctx.job_id, "node1"),
                                     rem::PrologBaselineToJson(b, nullptr), 0640, 0755);
        EXPECT_TRUE(w) << w.error();
        return job;
    }
    AgentEnv Env() {
        return AgentEnv{t.config, t.rc,    t.tickets, agent,   t.engine,
                        t.slurm,  t.clock, "node1",   t.health};
    }
    rem::TelemetryRecord Record(const std::string& job) {
        auto text = ReadSmallFile(rem::TelemetryFile(t.config.state_dir, job, 0, "node1"), 1 << 20);
        EXPECT_TRUE(text) << text.error();
        auto r = text ? rem::TelemetryRecordFromJson(*text)
                      : Result<rem::TelemetryRecord>(text.status());
        EXPECT_TRUE(r) << r.error();
        return r ? *r : rem::TelemetryRecord{};
    }
    // `n` samples, agent.sample_interval apart.
    void Sample(TelemetrySampler& sampler, const std::vector<rem::JobInfo>& jobs, int n) {
        for (int i = 0; i < n; ++i) {
            for (const std::string& p : sampler.Poll(jobs)) ADD_FAILURE() << p;
            t.clock.Advance(std::chrono::seconds(5));
        }
    }

    EpilogTestEnv t;
    AgentConfig agent;
};

TEST_F(TelemetrySamplerTest, SamplesOnlyTheJobsGpusAtTheInterval) {
    const rem::JobInfo job = RunningJob(42, "0-1");
    const AgentEnv env = Env();
    TelemetrySampler sampler(env);
    Sample(sampler, {job}, 3);
    EXPECT_TRUE(sampler.Poll({job}).empty());
    EXPECT_TRUE(sampler.Poll({job}).empty());  // before the interval: not sampled
    const rem::TelemetryRecord r = Record("42");
    EXPECT_EQ(r.node, "node1");
    ASSERT_EQ(r.gpus.size(), 2u);  // not GPU 2: not the job's
    EXPECT_EQ(r.gpus[0].gpu, "0000:3b:00.0");
    EXPECT_EQ(r.gpus[0].samples, 4u);
    EXPECT_EQ(r.gpus[1].hw_slowdown_samples, 4u);
    EXPECT_EQ(r.gpus[0].last_ms - r.gpus[0].first_ms, 15000);
    const diag::GpuTelemetrySummary s = diag::Summarize(r.gpus[1]);
    EXPECT_EQ(s.hw_slowdown_pct, 100u);
    EXPECT_EQ(s.sm_clock_mean, 1200u);
    EXPECT_EQ(s.temp_max, 84u);
    EXPECT_EQ(s.power_p5, 402u);  // 400 W, in the 400-404 W bin
}

TEST_F(TelemetrySamplerTest, ARestartedAgentGoesOnWithTheRecordAndAJobWithoutGpusIsNotRead) {
    const rem::JobInfo job = RunningJob(42, "1");
    {
        const AgentEnv env = Env();
        TelemetrySampler sampler(env);
        Sample(sampler, {job}, 2);
    }
    const AgentEnv env = Env();
    TelemetrySampler restarted(env);
    Sample(restarted, {job}, 1);
    EXPECT_EQ(Record("42").gpus.at(0).samples, 3u);

    const rem::JobInfo cpu_only = RunningJob(43, "");
    Sample(restarted, {cpu_only}, 1);
    EXPECT_FALSE(fs::exists(rem::TelemetryFile(t.config.state_dir, "43", 0, "node1")));
}

TEST_F(TelemetrySamplerTest, OffSamplesNothing) {
    agent.sample_seconds = 0;
    const rem::JobInfo job = RunningJob(42, "0");
    const AgentEnv env = Env();
    TelemetrySampler sampler(env);
    Sample(sampler, {job}, 2);
    EXPECT_FALSE(fs::exists(rem::TelemetryFile(t.config.state_dir, "42", 0, "node1")));
}

// The whole way: samples, the node epilog's evidence, the controller's comparison and rules.
TEST_F(TelemetrySamplerTest, TheSlowGpuIsNamedAndItsNodeDrained) {
    const rem::JobInfo job = RunningJob(42, "0-1");
    {
        const AgentEnv env = Env();
        TelemetrySampler sampler(env);
        Sample(sampler, {job}, 4);
    }
    t.FailedJob(42, {"node1", "node2"});
    std::vector<std::string> problems;
    rem::AddTelemetryEvidence(t.config.state_dir, "42", 0, "node1", &t.Report("node1").evidence,
                              &problems);
    EXPECT_TRUE(problems.empty());
    ASSERT_EQ(t.Report("node1").evidence.items.size(), 2u);
    t.RunController();
    EXPECT_TRUE(t.slurm.node("node1").drained);
    EXPECT_FALSE(t.slurm.node("node2").drained);
    EXPECT_THAT(t.slurm.node("node1").reason, HasSubstr("gpu_slowdown"));
    EXPECT_THAT(t.slurm.node("node1").reason, HasSubstr("0000:5d:00.0"));
    // The incident keeps the deciding item, with the controller's comparison of the job's GPUs.
    bool named = false;
    for (const rem::IncidentRow& i : t.Incidents()) {
        if (i.node != "node1") continue;
        named = true;
        EXPECT_EQ(i.cause, "gpu_slowdown");
        EXPECT_EQ(i.gpu, "0000:5d:00.0");
        EXPECT_THAT(i.evidence_json, HasSubstr("straggler"));
        EXPECT_THAT(i.evidence_json, HasSubstr("SM clock 75% of its peers' median"));
    }
    EXPECT_TRUE(named);
}

TEST(TelemetryRecord, RoundTripsAndRefusesAnotherVersion) {
    rem::TelemetryRecord r;
    r.job = "7";
    r.node = "node3";
    r.restart = 2;
    diag::GpuTelemetry g;
    g.gpu = "0000:3b:00.0";
    g.minor = 3;
    diag::GpuSample s;
    s.time_ms = 1000;
    s.power_mw = 512'000;
    s.thermal_violation_ns = 7;
    diag::AddSample(&g, s);
    r.gpus.push_back(g);
    auto back = rem::TelemetryRecordFromJson(rem::TelemetryRecordToJson(r));
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->restart, 2);
    ASSERT_EQ(back->gpus.size(), 1u);
    EXPECT_EQ(back->gpus[0].minor, 3u);
    EXPECT_EQ(back->gpus[0].power_bins, g.power_bins);
    EXPECT_EQ(back->gpus[0].thermal_violation_last, 7u);

    auto newer = rem::TelemetryRecordFromJson(R"({"version": 2, "gpus": []})");
    ASSERT_FALSE(newer);
    EXPECT_THAT(newer.error(), HasSubstr("version 2"));
    EXPECT_FALSE(rem::TelemetryRecordFromJson(R"({"version": 1, "gpus": [{"minor": "x"}]})"));
}

}  // namespace
}  // namespace autoheal::agent
