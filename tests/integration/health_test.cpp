// The prolog's health checks on the real local cluster, with fake GPUs at the ABI boundary:
// a node whose GPU fails a check never runs the job, the job runs on another node, the node is
// drained with autoheal's reason; a GPU that hangs NVML is handled within the budget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cluster_client.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string ScenarioPath(const std::string& node) {
    return ClusterDir() + "/lib/fake-gpu/scenarios/" + node + ".json";
}

// Puts a scenario on a node for one test and puts the node back afterwards.
// How many processes have this command name (/proc/PID/comm).
int ProcessesNamed(const std::string& name) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = e.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "comm");
        std::string comm;
        if (std::getline(in, comm) && comm == name) ++n;
    }
    return n;
}

class NodeScenario {
  public:
    NodeScenario(std::string node, const std::string& json) : node_(std::move(node)) {
        std::ofstream(ScenarioPath(node_)) << json;
    }
    ~NodeScenario() {
        std::filesystem::remove(ScenarioPath(node_));
        RunCommand({"scontrol", "update", "nodename=" + node_, "state=resume"});
        WaitUntil([&] { return ShowNode(node_)["State"] == "IDLE"; }, std::chrono::seconds(30));
    }

  private:
    std::string node_;
};

// The job lands on node1 first (lowest name, all idle); with a bad GPU there it must end up
// completing elsewhere.
TEST(Health, NodeWithFailingGpuNeverRunsTheJob) {
    NodeScenario bad("node1",
                     R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                                    "remapped_rows": {"failure": true}},
                                   {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})");
    // node1 may still be completing the previous test's job (its epilog waits for the
    // controller's decision): the job only lands there first once it is idle.
    ASSERT_TRUE(WaitUntil([] { return ShowNode("node1")["State"] == "IDLE"; }));
    CommandResult r;
    auto id = Submit({"-N", "1", "--gpus-per-node=2", "--health-check=quick"},
                     "#!/bin/bash\necho ran on $SLURMD_NODENAME\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(90)))
        << ShowJob(*id)["JobState"];
    auto job = ShowJob(*id);
    EXPECT_EQ(job["JobState"], "COMPLETED");
    EXPECT_NE(job["NodeList"], "node1");
    EXPECT_GE(std::stoi(job["Restarts"]), 1) << "the job should have been requeued off node1";

    auto node = ShowNode("node1");
    EXPECT_THAT(node["State"], HasSubstr("DRAIN"));
    EXPECT_THAT(node["Reason"], StartsWith("autoheal: health check=row-remap gpu=0000:3b:00.0; "));
    std::string log = AutohealLog();
    EXPECT_THAT(log, HasSubstr("node=node1 tier=quick verdict=fail"));
}

TEST(Health, GpuThatHangsNvmlIsHandledWithinTheBudget) {
    NodeScenario hung("node1", R"({"hang": {"call": "nvmlDeviceGetTemperature", "seconds": 600},
                                   "gpus": [{"minor": 0}, {"minor": 1}]})");
    CommandResult r;
    auto id = Submit({"-N", "1", "--gpus-per-node=1"}, "#!/bin/bash\ntrue\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(90)));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_NE(ShowJob(*id)["NodeList"], "node1");
    auto node = ShowNode("node1");
    EXPECT_THAT(node["Reason"],
                StartsWith("autoheal: health check=nvml; NVML did not answer within"));
    // The prolog on node1 took about the NVML deadline (2 s), far under PrologEpilogTimeout.
    std::smatch m;
    std::string log = AutohealLog();
    std::regex line("job=" + *id +
                    " node=node1 tier=quick verdict=fail checks=\\d+ seconds=([0-9.]+)");
    ASSERT_TRUE(std::regex_search(log, m, line)) << log;
    EXPECT_LT(std::stod(m[1]), 4.0);
    // The hung NVML process was killed with its prolog: nothing is left behind.
    EXPECT_TRUE(
        WaitUntil([] { return ProcessesNamed("autoheal-prolog") == 0; }, std::chrono::seconds(5)))
        << ProcessesNamed("autoheal-prolog") << " autoheal-prolog process(es) left";
}

// NVML that crashes (a driver bug) is no evidence against the node: the checks say unknown, the
// job starts there, nothing is drained and no process is left.
TEST(Health, NvmlThatCrashesIsUnknownAndTheJobStarts) {
    NodeScenario crash("node1", R"({"crash": {"call": "nvmlDeviceGetTemperature"},
                                    "gpus": [{"minor": 0}, {"minor": 1}]})");
    CommandResult r;
    auto id = Submit({"-N", "1", "-w", "node1", "--gpus-per-node=1"}, "#!/bin/bash\ntrue\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(60)));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_THAT(ShowNode("node1")["State"], Not(HasSubstr("DRAIN")));
    const std::string log = AutohealLog();
    EXPECT_THAT(log, HasSubstr("job=" + *id + " node=node1 tier=quick verdict=unknown"));
    EXPECT_THAT(log, HasSubstr("NVML query process failed"));
    EXPECT_EQ(ProcessesNamed("autoheal-prolog"), 0);
}

// NVML answers no GPU can give are no evidence either: unknown, not a fault.
TEST(Health, NvmlGarbageIsUnknownNotAFault) {
    NodeScenario garbage("node1", R"({"gpus": [
        {"minor": 0, "temperature_c": 4294967295, "pcie": {"gen": 99, "width": 0},
         "ecc": {"volatile_uncorrected": 18446744073709551615},
         "remapped_rows": {"correctable": 4000000000}, "recovery_action": 4000000000},
        {"minor": 1}]})");
    CommandResult r;
    auto id = Submit({"-N", "1", "-w", "node1", "--gpus-per-node=2"}, "#!/bin/bash\ntrue\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(60)));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_THAT(ShowNode("node1")["State"], Not(HasSubstr("DRAIN")));
    const std::string log = AutohealLog();
    EXPECT_THAT(log, HasSubstr("job=" + *id + " node=node1 tier=quick verdict=unknown"));
    for (const char* check :
         {"thermal", "pcie-link", "ecc-uncorrected", "row-remap", "recovery-action"}) {
        EXPECT_THAT(log, HasSubstr(std::string("unknown ") + check +
                                   " gpu=0000:10:00.0: NVML returned an implausible"))
            << check;
    }
}

TEST(Health, WrongGemmResultIsCaughtByTheCudaChecks) {
    NodeScenario sdc("node1", R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                                             "cuda": {"gemm_wrong": true}},
                                            {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})");
    CommandResult r;
    auto id = Submit({"-N", "1", "--gpus-per-node=2"}, "#!/bin/bash\ntrue\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(90)));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_NE(ShowJob(*id)["NodeList"], "node1");
    EXPECT_THAT(ShowNode("node1")["Reason"],
                StartsWith("autoheal: health check=gemm-bf16 gpu=0000:3b:00.0; GEMM result wrong"));
}

TEST(Health, HealthyFakeGpusPassTheQuickTier) {
    CommandResult r;
    auto id =
        Submit({"-N", "2", "--gpus-per-node=2", "--health-check=quick"}, "#!/bin/bash\ntrue\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    std::string log = AutohealLog();
    std::regex pass("job=" + *id + " node=node\\d tier=quick verdict=pass");
    auto begin = std::sregex_iterator(log.begin(), log.end(), pass);
    EXPECT_EQ(std::distance(begin, std::sregex_iterator()), 2) << log;
    // The baseline snapshot is kept for the epilog.
    EXPECT_TRUE(std::filesystem::exists(ClusterDir() + "/state/autoheal/jobs/" + *id));
}

}  // namespace
}  // namespace autoheal::testing
