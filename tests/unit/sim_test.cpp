// autoheal simulate's core (sim/simulator.h) on small clusters with the shipped rules: the
// scenario file's checks, determinism under a seed, and the lab's e2e outcomes
// (tests/integration/e2e_test.cpp) reproduced by the real decision code in the loop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/sim/simulator.h"
#include "diag_test_util.h"

namespace autoheal::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* kStages = R"(
stages:
  detect_agent: {seconds: 0.2, source: a}
  detect_exit: {seconds: 5, source: b}
  nccl_watchdog: {seconds: 600, source: c}
  decision: {seconds: 0.45, source: m}
  requeue_to_start: {seconds: 3.9, source: d}
  prolog: {seconds: 0.63, source: e}
  restart: {seconds: 300, source: f}
  checkpoint_interval: {seconds: 10m, source: g}
  reboot: {seconds: 600, source: h}
  repair: {seconds: 3d, source: i}
  slurmd_timeout: {seconds: 300, source: j}
  slurm_requeue_delay: {seconds: 121, source: k}
  human_diagnosis: {seconds: 30m, source: l}
)";

// A 4-node job (2 leaves of 2 nodes, like the lab) with 4 spares, `count` faults of one cause
// per 30 days at this size.
std::string Small(const std::string& cause, int count = 20) {
    return "nodes: 4\ngpus_per_node: 1\nspare_nodes: 4\nnodes_per_leaf: 2\nreference_gpus: 4\n"
           "span: 30d\nseed: 3\nauto_resume: 1000\nbreaker_max_fraction: 0.5\nbreaker_max_nodes: "
           "2\n"
           "causes:\n  - {count: " +
           std::to_string(count) + ", " + cause + "}\n" + kStages;
}

class SimTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("sim_test." + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    SimResult Run(const std::string& yaml) {
        auto s = ParseScenario(yaml, "test.yaml");
        EXPECT_TRUE(s.ok()) << s.error();
        auto r = Simulate(*s, diag::testing::ShippedRules(), diag::testing::ShippedScanner(),
                          dir_.string());
        EXPECT_TRUE(r.ok());
        return *r;
    }
    std::filesystem::path dir_;
};

const char* kXid79 =
    "name: Faulty GPU, hangs: true, kernel: ['[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, "
    "pid=48213, name=python3, GPU has fallen off the bus.']";

TEST(Scenario, RefusesWhatItDoesNotKnowNamingTheKey) {
    EXPECT_THAT(ParseScenario(Small(kXid79) + "colour: red\n", "s.yaml").error(),
                HasSubstr("s.yaml: colour: unknown key"));
    EXPECT_THAT(ParseScenario(Small("name: x, where: rack"), "s.yaml").error(),
                HasSubstr("causes[0].where: 'rack' is not node, switch or job"));
    std::string no_source = Small(kXid79);
    no_source.replace(no_source.find("source: a"), 9, "source: ''");
    EXPECT_THAT(ParseScenario(no_source, "s.yaml").error(),
                HasSubstr("stages.detect_agent.source: missing"));
    EXPECT_THAT(ParseScenario("nodes: 4\ncauses: [{name: x, count: 1}]\n", "s.yaml").error(),
                HasSubstr("stages.detect_agent: missing"));
}

TEST(Scenario, TheDefaultIsLlama3sTable5) {
    auto s = LoadScenario(std::string(AUTOHEAL_SOURCE_DIR) + "/examples/simulate/llama3-54d.yaml");
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->causes.size(), 18u);
    EXPECT_DOUBLE_EQ(s->interruptions, 419);
    EXPECT_EQ(s->nodes * s->gpus_per_node, s->reference_gpus);
    EXPECT_DOUBLE_EQ(s->span_seconds, 54 * 86400.0);
    for (const auto& [name, st] : s->stages) EXPECT_FALSE(st.source.empty()) << name;
}

TEST_F(SimTest, TheSameSeedGivesTheSameRunAnotherSeedAnother) {
    const std::string mix = Small(kXid79, 8);
    const SimResult a = Run(mix);
    const SimResult b = Run(mix);
    ASSERT_GT(a.events.size(), 5u);
    EXPECT_EQ(a.autoheal.ettr, b.autoheal.ettr);
    EXPECT_EQ(a.slurm.ettr, b.slurm.ettr);
    ASSERT_EQ(a.events.size(), b.events.size());
    for (std::size_t i = 0; i < a.events.size(); ++i) {
        EXPECT_EQ(a.events[i].time, b.events[i].time);
        EXPECT_EQ(a.events[i].fault_nodes, b.events[i].fault_nodes);
    }
    std::string other = mix;
    other.replace(other.find("seed: 3"), 7, "seed: 4");
    EXPECT_NE(Run(other).events.front().time, a.events.front().time);
}

// E2E.Xid79MidJobRequeuesOnceExcludingTheNodeAndResumes and
// AgentE2E.AgentRequeuesAHungJobAfterXid79ExcludingTheNode: the node rebooted (out of service
// until then), the job requeued excluding it, no person.
TEST_F(SimTest, Xid79RebootsTheNodeAndRequeuesExcludingIt) {
    const SimResult r = Run(Small(kXid79, 6));
    ASSERT_FALSE(r.events.empty());
    for (const FaultEvent& e : r.events) {
        EXPECT_EQ(e.decided, "faulty_gpu");
        EXPECT_FALSE(e.breaker_held);
        EXPECT_EQ(e.taken_out, e.fault_nodes);
        EXPECT_EQ(e.rebooted, e.fault_nodes);
        EXPECT_TRUE(e.requeued);
        EXPECT_TRUE(e.agent);
        EXPECT_THAT(remediation::SlurmAdapter::ExpandHostlist(e.excluded),
                    ::testing::Contains(e.fault_nodes.front()));
    }
    EXPECT_EQ(r.autoheal.human_interventions, 0);
    EXPECT_EQ(r.autoheal.false_node_actions, 0);
    EXPECT_EQ(r.autoheal.automatic_requeues, r.autoheal.interruptions);
    EXPECT_EQ(r.slurm.human_interventions, r.slurm.interruptions);
    // Caught by the agent in a second rather than by the NCCL watchdog and a person.
    EXPECT_GT(r.autoheal.ettr, r.slurm.ettr);
}

// E2E.PythonExceptionIsTheJobsOwnBug: no node action, no requeue.
TEST_F(SimTest, TheJobsOwnBugTakesNoNodeOutAndIsNotRequeued) {
    const SimResult r = Run(
        Small("name: Software Bug, where: job, job_output: ['Traceback (most recent call last):', "
              "'ZeroDivisionError: division by zero']"));
    ASSERT_FALSE(r.events.empty());
    for (const FaultEvent& e : r.events) {
        EXPECT_EQ(e.decided, "user_error");
        EXPECT_TRUE(e.taken_out.empty());
        EXPECT_FALSE(e.requeued);
    }
    EXPECT_EQ(r.autoheal.node_actions, 0);
    EXPECT_EQ(r.autoheal.false_node_actions, 0);
    EXPECT_EQ(r.autoheal.human_interventions, r.autoheal.interruptions);
}

// E2E.NcclTimeoutsEverywhereBlameOnlyTheNodeWithHardwareEvidence: the watchdog lines in the
// job's output blame nobody; the node with the Xid is the culprit.
TEST_F(SimTest, NcclTimeoutsBlameOnlyTheNodeWithTheXid) {
    const SimResult r = Run(Small(
        std::string(kXid79) +
            ", job_output: ['[rank1]:[E1129 11:38:40.882201 88201 ProcessGroupNCCL.cpp:616] [Rank "
            "1] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15804, "
            "OpType=ALLREDUCE, "
            "NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000) ran for 600047 milliseconds "
            "before timing out.']",
        6));
    ASSERT_FALSE(r.events.empty());
    for (const FaultEvent& e : r.events) {
        EXPECT_FALSE(e.breaker_held);
        EXPECT_EQ(e.taken_out, e.fault_nodes);
    }
    EXPECT_EQ(r.autoheal.false_node_actions, 0);
}

// E2E.TwoNodesUnderOneLeafLosingNetworkIsOneSwitchIncident: one incident naming the leaf, no
// node drained, no RMA.
TEST_F(SimTest, TwoNodesUnderOneLeafAreOneSwitchIncident) {
    const SimResult r = Run(Small(
        "name: Network Switch/Cable, where: switch, switch_nodes: 2, kernel: ['Nov 29 10:00:00 "
        "gpu-host kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN'], job_output: ['NCCL "
        "WARN NET/IB : Got completion from peer 10.0.0.2<59632> with error 12, opcode 0, len 0, "
        "vendor err 129 (Recv)']",
        5));
    ASSERT_FALSE(r.events.empty());
    const FaultEvent& e = r.events.front();
    EXPECT_EQ(e.decided, "network_switch_cable");
    EXPECT_EQ(e.fault_nodes.size(), 2u);
    EXPECT_THAT(e.switch_incident, HasSubstr("leaf"));
    EXPECT_TRUE(e.taken_out.empty());
    EXPECT_EQ(r.autoheal.rmas, 0);
}

// A node that dies: Slurm requeues the job itself in both modes; autoheal does not again.
// E2E.FaultsEverywhereTripTheBreaker: faults faster than repairs: past the breaker's limit
// (2 nodes here) the node actions are held and counted; the job is still requeued.
TEST_F(SimTest, FaultsFasterThanRepairsTripTheBreaker) {
    const SimResult r = Run(Small(kXid79, 30));
    EXPECT_GT(r.autoheal.breaker_trips, 0);
    for (const FaultEvent& e : r.events) {
        if (e.breaker_held) {
            EXPECT_TRUE(e.taken_out.empty());
        }
        EXPECT_TRUE(e.requeued);
    }
}

TEST_F(SimTest, ANodeThatDiesIsRequeuedBySlurmOnce) {
    const SimResult r = Run(Small("name: Host Maintenance, node_down: true", 5));
    ASSERT_FALSE(r.events.empty());
    for (const FaultEvent& e : r.events) {
        EXPECT_TRUE(e.requeued);
        EXPECT_TRUE(e.taken_out.empty());
    }
    EXPECT_EQ(r.autoheal.human_interventions, 0);
    EXPECT_EQ(r.slurm.human_interventions, 0);
    EXPECT_EQ(r.autoheal.automatic_requeues, r.autoheal.interruptions);
}

}  // namespace
}  // namespace autoheal::sim
