// autoheal-agent's NVML Xid event watch (agent/xid_event_watch.h): the real stream child
// (health::StreamXidEvents in os::Subprocess) over the fake NVML, whose scenario file lists the
// events (tests/fakes/SCENARIO.md, xid_events), the fake Slurm cluster and the shipped rules.
// These tests wait in real time (the child's waits are 500 ms): a few seconds each.
#include "autoheal/agent/xid_event_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

namespace fs = std::filesystem;
namespace rem = autoheal::remediation;
using rem::testing::EpilogTestEnv;

class XidEventWatchTest : public ::testing::Test {
  protected:
    void SetUp() override {
        t.health.nvml_library = AUTOHEAL_FAKE_NVML;
        t.health.nvml_timeout_seconds = 1;
        Scenario(R"("xid_events": [])");
    }
    void TearDown() override { ::unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO"); }

    void Scenario(const std::string& extra) {
        const fs::path scenario = t.dir / "gpus.json";
        std::ofstream(scenario) << R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0"}], )"
                                << extra << "}";
        ::setenv("AUTOHEAL_FAKE_GPU_SCENARIO", scenario.c_str(), 1);
    }
    AgentEnv Env() {
        return AgentEnv{t.config, t.rc,    t.tickets, agent,   t.engine,
                        t.slurm,  t.clock, "node1",   t.health};
    }
    // Polls every 50 ms until `done` or `seconds` pass; returns the log.
    static std::string PollUntil(XidEventWatch& watch, const std::function<bool()>& done,
                                 double seconds) {
        std::string log;
        const auto end = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
        while (std::chrono::steady_clock::now() < end) {
            for (const std::string& l : watch.Poll()) log += l + "\n";
            if (done()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return log;
    }

    EpilogTestEnv t;
    AgentConfig agent;
};

// An Xid 79 that reaches the agent only through NVML (no kernel line): the idle node is taken
// out, by the same rule as the kernel's line.
TEST_F(XidEventWatchTest, AnXid79FromNvmlAloneTakesTheNodeOut) {
    const AgentEnv env = Env();
    XidEventWatch watch(env);
    PollUntil(
        watch, [] { return false; }, 0.7);  // the stream is up and waiting
    Scenario(R"("xid_events": [{"gpu": 0, "xid": 79}])");
    const std::string log = PollUntil(
        watch, [&] { return t.slurm.node("node1").drained; }, 10);
    EXPECT_TRUE(t.slurm.node("node1").drained) << log;
    EXPECT_NE(log.find("0000:3b:00/79: faulty_gpu (xid-79-fallen-off-bus)"), std::string::npos)
        << log;
}

// The driver writes the kernel line and the event at once: handled from the kernel log, the
// event is not handled again.
TEST_F(XidEventWatchTest, AnXidTheKernelLogBroughtIsNotHandledAgain) {
    Scenario(R"("xid_events": [{"gpu": 0, "xid": 79}])");
    const AgentEnv env = Env();
    XidEventWatch watch(env);
    watch.Handled({XidKey("0000:3b:00", "79")});
    const std::string log = PollUntil(
        watch, [] { return false; }, 3);
    EXPECT_FALSE(t.slurm.node("node1").drained) << log;
    EXPECT_NE(log.find("0000:3b:00/79: already handled from the kernel log"), std::string::npos)
        << log;
}

// NVML hung in its wait: the child is killed after nvml_timeout + 2 s and the log says so.
TEST_F(XidEventWatchTest, AStreamThatStopsAnsweringIsKilled) {
    Scenario(R"("hang": {"call": "nvmlEventSetWait_v2", "seconds": 60})");
    const AgentEnv env = Env();
    XidEventWatch watch(env);
    const std::string out = PollUntil(
        watch, [] { return false; }, 4.5);
    EXPECT_NE(out.find("NVML did not answer in time"), std::string::npos) << out;
}

TEST_F(XidEventWatchTest, NvmlWithoutADriverIsSaidOnceAndNotRetriedAtOnce) {
    Scenario(R"("init_error": "NVML_ERROR_DRIVER_NOT_LOADED")");
    const AgentEnv env = Env();
    XidEventWatch watch(env);
    const std::string log = PollUntil(
        watch, [] { return false; }, 1.5);
    EXPECT_EQ(log, "xid events: nvmlInit_v2: Driver Not Loaded; tried again in 5 min\n");
}

// An agent killed with SIGKILL (systemd restarts it) leaves no stream behind: the kernel ends
// the child with its parent (the child leads its own process group, so nothing else would).
TEST_F(XidEventWatchTest, TheStreamDiesWithAKilledAgent) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t agent = ::fork();
    ASSERT_GE(agent, 0);
    if (agent == 0) {  // the "agent": starts the stream, says its pid, is killed
        ::close(fds[0]);
        const AgentEnv env = Env();
        XidEventWatch watch(env);
        PollUntil(
            watch, [&] { return watch.stream_pid() > 0; }, 5);
        const pid_t stream = watch.stream_pid();
        (void)!::write(fds[1], &stream, sizeof stream);
        ::raise(SIGKILL);
    }
    ::close(fds[1]);
    pid_t stream = -1;
    ASSERT_EQ(::read(fds[0], &stream, sizeof stream), static_cast<ssize_t>(sizeof stream));
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(agent, &status, 0), agent);
    ASSERT_GT(stream, 0);
    auto gone = [&] {
        std::ifstream stat("/proc/" + std::to_string(stream) + "/stat");
        std::string pid, comm, state;
        return !(stat >> pid >> comm >> state) || state == "Z";
    };
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!gone() && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone()) << "stream " << stream << " outlived its agent";
    if (!gone()) ::kill(stream, SIGKILL);
}

TEST(XidKeyTest, NamesTheGpuAsTheKernelDoes) {
    EXPECT_EQ(XidKey("0000:3B:00.0", "79"), "0000:3b:00/79");
    EXPECT_EQ(XidKey("0000:3b:00", "79"), "0000:3b:00/79");
}

}  // namespace
}  // namespace autoheal::agent
