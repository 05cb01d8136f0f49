// The controller's decision (remediation/decision.h) on the shipped rules, from node reports as
// the node epilogs write them: culprits, plans, network correlation, the breaker and the requeue
// explanation.
#include "autoheal/remediation/decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autoheal/diag/flight_recorder.h"
#include "diag_test_util.h"

namespace autoheal::remediation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Xid(int xid, const std::string& pci, const std::string& msg) {
    return "kernel: NVRM: Xid (PCI:" + pci + "): " + std::to_string(xid) +
           ", pid=1, name=python, " + msg;
}

NodeInfo Node(const std::string& name, bool out = false, const std::string& reason = "",
              std::int64_t reason_time = 0) {
    NodeInfo n;
    n.name = name;
    n.drained = out;
    n.reason = reason;
    n.reason_time = reason_time;
    return n;
}

class DecisionTest : public ::testing::Test {
  protected:
    DecisionTest() {
        config_.breaker = {0.5, 2};
        in_.rules = &diag::testing::ShippedRules();
        in_.config = &config_;
        in_.job.job = "77";
        in_.job.failed = true;
        in_.job.auto_resume = 3;
        in_.job.nodes = {"node1", "node2", "node3", "node4"};
        in_.cluster.now = 1'800'000'000;
        for (const auto& n : in_.job.nodes) {
            in_.cluster.nodes.push_back(Node(n));
            NodeReport r;
            r.node = n;
            in_.reports.push_back(r);
        }
        in_.cluster.switches = {
            {"leaf1", 0, {"node1", "node2"}}, {"leaf2", 0, {"node3", "node4"}}, {"spine", 1, {}}};
    }
    NodeReport& Report(const std::string& node) {
        for (auto& r : in_.reports) {
            if (r.node == node) return r;
        }
        throw std::runtime_error(node);
    }
    // What the node epilog puts in its report: the lines the signatures matched, scanned once.
    void Kernel(const std::string& node, const std::vector<std::string>& lines) {
        Report(node).evidence = diag::testing::ScanLines(lines, "kernel");
    }
    void JobOutput(const std::string& node, const std::vector<std::string>& lines) {
        Report(node).job_output_read = true;
        Report(node).job_output = diag::testing::ScanLines(lines, "job-output");
    }
    // A job of `user` on node1 alone (its report: nothing found), which has failed `earlier`
    // jobs of `users` unexplained; lemons at 3 failures of 2 users within 7 days.
    void OnlyNode1After(const std::string& user, int earlier, std::vector<std::string> users) {
        config_.lemon = {3, 2, 7 * std::int64_t{86400}};
        in_.job.nodes = {"node1"};
        in_.job.user = user;
        in_.reports.resize(1);
        in_.unexplained_failures = {{"node1", earlier, std::move(users)}};
    }
    RemediationConfig config_;
    DecisionInput in_;
};

TEST_F(DecisionTest, Xid79OnOneNodeBlamesItRebootsAndRequeues) {
    Kernel("node2", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "faulty_gpu");
    EXPECT_THAT(d.culprits, ElementsAre("node2"));
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, ElementsAre("reboot"));
    EXPECT_EQ(FormatReason(d.plans[0].why),
              "autoheal: faulty_gpu xid=79 gpu=0000:3b:00.0 "
              "rule=xid-79-fallen-off-bus job=" +
                  in_.job.job);
    EXPECT_EQ(d.plans[0].why.cause, diag::Cause::kFaultyGpu);
    EXPECT_EQ(d.plans[0].why.incident, std::nullopt);  // the controller knows it, later
    EXPECT_TRUE(d.requeue);
    EXPECT_THAT(d.exclude, ElementsAre("node2"));
    EXPECT_EQ(d.explanation,
              "autoheal: requeued 1/3 after faulty_gpu on node2 (xid 79, GPU 0000:3b:00.0); "
              "excluded node2");
}

// 15.3: exit 93 is the job's own "do not requeue" (NVIDIA's resilience launcher): never
// requeued, whatever the evidence; the node is still handled.
// Issue 12.5: evidence is scoped to the GPUs the job had. An Xid 79 on a GPU of node2 the job
// did not have still reboots node2 (evidence about the node), but does not explain
// this job's failure: node2 is no culprit, the job is not blamed on it nor requeued by it.
TEST_F(DecisionTest, AFaultOnAGpuTheJobDidNotHaveIsTheNodesNotTheJobs) {
    Kernel("node2", {Xid(79, "0000:5d:00", "GPU has fallen off the bus.")});
    Report("node2").job_gpus = {"0000:3b:00.0"};
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.culprits, IsEmpty());
    EXPECT_NE(d.cause, "faulty_gpu");
    EXPECT_FALSE(d.requeue);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].node, "node2");
    EXPECT_EQ(d.plans[0].gpu, "0000:5d:00.0");
    EXPECT_THAT(d.plans[0].actions, ElementsAre("reboot"));
    // The job's own GPU: blamed as before; the map unknown (empty): every GPU counts.
    Report("node2").job_gpus = {"0000:3b:00.0", "0000:5d:00.0"};
    EXPECT_THAT(Decide(in_).culprits, ElementsAre("node2"));
    Report("node2").job_gpus.clear();
    EXPECT_THAT(Decide(in_).culprits, ElementsAre("node2"));
}

TEST_F(DecisionTest, ExitCode93IsNeverRequeued) {
    Kernel("node2", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    in_.job.exit_status = kNoRequeueExitCode;
    JobDecision d = Decide(in_);
    EXPECT_FALSE(d.requeue);
    EXPECT_EQ(d.explanation,
              "autoheal: faulty_gpu on node2 (xid 79, GPU 0000:3b:00.0); not requeued: the job "
              "exited 93 (its own \"do not requeue\")");
    ASSERT_EQ(d.plans.size(), 1u);  // node2 is rebooted all the same
    in_.job.exit_status = 1;
    EXPECT_TRUE(Decide(in_).requeue);
}

// The no-progress breaker: the newest checkpoint has not advanced across N requeues in a row
// (default 3): not requeued; an advance resets the count; unknown progress never stops it.
TEST_F(DecisionTest, NoProgressBreakerStopsAJobWhoseCheckpointDoesNotAdvance) {
    Kernel("node2", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    in_.job.auto_resume = 10;
    in_.job.restart_count = 3;
    in_.job.checkpoint = CheckpointMark{100, 5000};
    in_.job.checkpoint_at_requeue = CheckpointMark{100, 5000};
    in_.job.stalled_requeues = 1;
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.requeue);  // the 2nd requeue without progress
    EXPECT_EQ(d.stalled_requeues, 2);
    in_.job.stalled_requeues = 2;  // this would be the 3rd
    d = Decide(in_);
    EXPECT_FALSE(d.requeue);
    EXPECT_EQ(d.explanation,
              "autoheal: not requeued: faulty_gpu on node2 (xid 79, GPU 0000:3b:00.0), but its "
              "newest checkpoint (step 100) has not advanced across 3 requeues (no-progress "
              "breaker)");
    in_.job.checkpoint = CheckpointMark{105, 5100};  // it advanced
    d = Decide(in_);
    EXPECT_TRUE(d.requeue);
    EXPECT_EQ(d.stalled_requeues, 0);
    in_.job.checkpoint.reset();  // no checkpoint folder, or no report from the batch host
    EXPECT_TRUE(Decide(in_).requeue);
    config_.no_progress_requeues = 0;  // off
    in_.job.checkpoint = CheckpointMark{100, 5000};
    EXPECT_TRUE(Decide(in_).requeue);
}

// A report's typed items are diagnosed on their fields, never rescanned: the health-check item
// of a GPU whose GEMM checksum differs from its peers' is silent data corruption on that GPU.
// Issue 12 point 5: a node action needs evidence no user can write. Lines a user made the
// kernel print (a program named after a driver message, a task that named itself) or wrote to
// a syslog kernel log with `logger` are not the driver's records.
TEST_F(DecisionTest, ForgedKernelLinesPlanNoNodeAction) {
    Kernel("node2",
           {"[12345.678901] x[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5d2c8e70 error 6 "
            "in NVRM: Xid (PCI:0000:3b:00): 64, x[401000+1000]",
            "kernel: Memory cgroup out of memory: Killed process 4242 (GPU is lost)",
            "Dec  1 10:00:00 node2 alice: " + Xid(79, "0000:3b:00", "GPU has fallen off the bus."),
            "Dec  1 10:00:00 node2 kernel: INFO: task NVRM: Xid 79:4242 blocked for more than 120 "
            "seconds."});
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.plans, IsEmpty());
    EXPECT_THAT(d.culprits, IsEmpty());
    EXPECT_NE(d.cause, "faulty_gpu");
    EXPECT_NE(d.cause, "gpu_hbm_memory");
}

// The job's own output may justify a requeue, never an action against a node.
TEST_F(DecisionTest, TheJobsOwnOutputNeverTakesANodeOut) {
    JobOutput("node1", {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off "
                        "the bus.",
                        "Unable to determine the device handle for GPU0000:3b:00.0: GPU is lost",
                        "node2: [ 12.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, DBE"});
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.plans, IsEmpty());
    EXPECT_TRUE(d.requeue);  // within the cap
}

TEST_F(DecisionTest, TypedHealthCheckEvidenceIsDiagnosedOnItsFields) {
    diag::AddEvidence(&Report("node2").evidence, "health",
                      {"health-check",
                       0,
                       1,
                       "check gemm-bf16 failed on gpu 0000:20:00.0: GEMM result differs",
                       {{"check", "gemm-bf16"},
                        {"gpu", "0000:20:00.0"},
                        {"verdict", "fail"},
                        {"reason", "peer-mismatch"}}});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "silent_data_corruption");
    EXPECT_EQ(d.rule, "epilog-health-wrong-results");
    EXPECT_THAT(d.culprits, ElementsAre("node2"));
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].gpu, "0000:20:00.0");
    EXPECT_THAT(d.plans[0].actions, ElementsAre("drain", "rma_ticket"));
    EXPECT_TRUE(d.requeue);
}

TEST_F(DecisionTest, TypedNvmlDeltaEvidenceIsDiagnosedOnItsFields) {
    diag::AddEvidence(&Report("node3").evidence, "nvml",
                      {"nvml-delta",
                       0,
                       1,
                       "gpu 0000:3b:00.0 ecc_uncorrected_volatile increased by 2",
                       {{"gpu", "0000:3b:00.0"},
                        {"counter", "ecc_uncorrected_volatile"},
                        {"before", "0"},
                        {"after", "2"}}});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "gpu_hbm_memory");
    EXPECT_THAT(d.culprits, ElementsAre("node3"));
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].gpu, "0000:3b:00.0");
    // A lost GPU is Xid 79's rule.
    Report("node3").evidence = {};
    diag::AddEvidence(&Report("node3").evidence, "nvml",
                      {"nvml-delta", 0, 1, "", {{"gpu", "0000:5d:00.0"}, {"counter", "gpu_lost"}}});
    d = Decide(in_);
    EXPECT_EQ(d.rule, "xid-79-fallen-off-bus");
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].gpu, "0000:5d:00.0");
}

TEST_F(DecisionTest, NcclTimeoutsOnEveryRankBlameOnlyTheNodeWithHardwareEvidence) {
    std::vector<std::string> output;
    output.reserve(4);
    for (int rank = 0; rank < 4; ++rank) {
        output.push_back(
            "[rank" + std::to_string(rank) +
            "]:[E1129 11:38:40.882201 1 ProcessGroupNCCL.cpp:616] "
            "[Rank " +
            std::to_string(rank) +
            "] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=15804, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600047 milliseconds before timing out.");
    }
    JobOutput("node1", output);
    Kernel("node3", {Xid(79, "0000:5d:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.culprits, ElementsAre("node3"));
    EXPECT_THAT(d.exclude, ElementsAre("node3"));
    EXPECT_EQ(d.cause, "faulty_gpu");
}

TEST_F(DecisionTest, NcclTimeoutsAloneBlameNoNode) {
    JobOutput(
        "node1",
        {"[rank0]:[E1129 11:38:40.882201 1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
         "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
         "NumelOut=1, Timeout(ms)=600000) ran for 600047 milliseconds before timing out."});
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.culprits, IsEmpty());
    EXPECT_THAT(d.plans, IsEmpty());
}

// What the batch host's epilog adds to the job's output evidence from the run's flight recorder
// dumps (node_epilog/collect.cpp): the culprit rank 13 on `host`, 1,023 ranks waiting.
diag::EvidenceSet FlightRecorderEvidence(diag::FrFinding::Kind kind, const std::string& host) {
    diag::FrFinding f;
    f.kind = kind;
    f.pg_id = 0;
    f.seq = 80078;
    f.op = "nccl:all_reduce";
    f.other_op = "nccl:broadcast";
    f.ranks = {13};
    f.why = "never-entered";
    f.waiting = 1023;
    f.members = 1024;
    diag::EvidenceSet set;
    diag::AddFlightRecorderEvidence({f}, {{13, host}}, "flight-recorder", &set);
    return set;
}

TEST_F(DecisionTest, AFlightRecorderCulpritIsLeftOutOfTheRerunWithNoNodeAction) {
    Report("node1").job_output_read = true;
    Report("node1").job_output = FlightRecorderEvidence(diag::FrFinding::Kind::kHang, "node3");
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "nccl_timeout");
    EXPECT_EQ(d.rule, "nccl-flight-recorder-culprit");
    EXPECT_THAT(d.culprits, IsEmpty());
    EXPECT_THAT(d.suspects, ElementsAre("node3"));
    EXPECT_THAT(d.plans, IsEmpty());
    EXPECT_TRUE(d.requeue);
    EXPECT_THAT(d.exclude, ElementsAre("node3"));
    EXPECT_EQ(d.explanation,
              "autoheal: requeued 1/3 after nccl hang: rank 13 on node3 never entered ALLREDUCE "
              "#80078 (pg 0); excluded node3");
}

TEST_F(DecisionTest, AFlightRecorderNamingANodeOutsideTheJobExcludesNothing) {
    Report("node1").job_output_read = true;
    Report("node1").job_output = FlightRecorderEvidence(diag::FrFinding::Kind::kHang, "login1");
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.rule, "nccl-flight-recorder-culprit");
    EXPECT_THAT(d.suspects, IsEmpty());
    EXPECT_THAT(d.exclude, IsEmpty());
    EXPECT_THAT(d.explanation, HasSubstr("after nccl hang: rank 13 on login1 never entered"));
    EXPECT_THAT(d.explanation, ::testing::Not(HasSubstr("excluded")));
}

TEST_F(DecisionTest, AFlightRecorderDesyncIsTheJobsOwnBug) {
    Report("node1").job_output_read = true;
    Report("node1").job_output = FlightRecorderEvidence(diag::FrFinding::Kind::kDesync, "node3");
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "user_error");
    EXPECT_FALSE(d.requeue);
    EXPECT_THAT(d.suspects, IsEmpty());
    EXPECT_THAT(d.exclude, IsEmpty());
    EXPECT_THAT(d.plans, IsEmpty());
    EXPECT_EQ(d.outcome, "own");
    EXPECT_THAT(d.explanation, HasSubstr("not requeued: the job failed by itself (user_error: rank "
                                         "13 ran BROADCAST where the other ranks ran ALLREDUCE"));
}

TEST_F(DecisionTest, PythonExceptionIsNotRequeued) {
    JobOutput("node1",
              {"Traceback (most recent call last):", "ZeroDivisionError: division by zero"});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.cause, "user_error");
    EXPECT_FALSE(d.requeue);
    EXPECT_THAT(d.explanation, HasSubstr("not requeued: the job failed by itself (user_error"));
    EXPECT_THAT(d.plans, IsEmpty());
}

TEST_F(DecisionTest, CapReachedSaysSo) {
    in_.job.restart_count = 3;
    Kernel("node4", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_FALSE(d.requeue);
    EXPECT_EQ(d.explanation,
              "autoheal: not requeued: faulty_gpu on node4 (xid 79, GPU 0000:3b:00.0), but the "
              "job already restarted 3/3 times (--auto-resume=3)");
    EXPECT_EQ(d.plans.size(), 1u);  // the node is still handled
}

TEST_F(DecisionTest, NotOptedInIsHandledButNotRequeued) {
    in_.job.auto_resume.reset();
    Kernel("node4", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_FALSE(d.requeue);
    EXPECT_THAT(d.explanation, HasSubstr("the job did not ask for --auto-resume"));
    EXPECT_EQ(d.plans.size(), 1u);
}

TEST_F(DecisionTest, TwoNodesUnderOneLeafWithLinkDownAreOneSwitchIncident) {
    for (const char* n : {"node1", "node2"}) {
        Kernel(n, {"kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"});
    }
    JobDecision d = Decide(in_);
    ASSERT_TRUE(d.network.has_value());
    EXPECT_EQ(d.network->name, "leaf1");
    EXPECT_THAT(d.network->nodes, ElementsAre("node1", "node2"));
    for (const NodePlan& p : d.plans) {
        EXPECT_THAT(p.actions, IsEmpty()) << p.node;  // no per-node tickets
    }
    EXPECT_THAT(d.summary, HasSubstr("switch leaf1"));
}

TEST_F(DecisionTest, OneNodeWithLinkDownPlusARecentIncidentUnderTheSameLeafCorrelates) {
    Kernel("node3", {"kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"});
    diag::HistoryRecord other;
    other.node = "node4";
    other.cause = "network_switch_cable";
    other.time = in_.cluster.now - 60;
    in_.cluster.recent = {other};
    JobDecision d = Decide(in_);
    ASSERT_TRUE(d.network.has_value());
    EXPECT_EQ(d.network->name, "leaf2");
}

TEST_F(DecisionTest, OneNodeWithLinkDownAloneKeepsItsNetworkTicket) {
    Kernel("node3", {"kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"});
    JobDecision d = Decide(in_);
    EXPECT_FALSE(d.network.has_value());
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, ElementsAre("network_ticket"));
}

TEST_F(DecisionTest, BreakerHoldsBeyondTheLimitAndQuarantines) {
    for (const auto& n : in_.job.nodes) {
        Kernel(n, {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    }
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    int taken = 0, held = 0;
    for (const NodePlan& p : d.plans) {
        if (!p.actions.empty()) ++taken;
        if (!p.held.empty()) ++held;
    }
    EXPECT_EQ(taken, 2);
    EXPECT_EQ(held, 2);
    EXPECT_EQ(d.quarantine.size(), 2u);
}

TEST_F(DecisionTest, BreakerCountsNodesAutohealAlreadyTookOut) {
    in_.cluster.nodes[0] = Node("node1", true, "autoheal: faulty_gpu", in_.cluster.now - 10);
    in_.cluster.nodes[1] = Node("node2", true, "autoheal: faulty_gpu", in_.cluster.now - 10);
    Kernel("node3", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    // An admin's drain does not count.
    in_.cluster.nodes[0] = Node("node1", true, "fan replacement", in_.cluster.now - 10);
    EXPECT_FALSE(Decide(in_).breaker_open);
}

// Issue 13.2: GPU resets count. A reset asked of a node by an earlier decision and still running
// shows in no Slurm state, only in the store (DecideJob reads it): it counts as out, once.
TEST_F(DecisionTest, BreakerCountsNodesStillResettingAGpu) {
    Kernel("node3", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    in_.cluster.busy_with_asked = {"node1", "node2"};
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    EXPECT_THAT(d.breaker_note, HasSubstr("2 of 4 nodes already taken out by autoheal or "
                                          "resetting a GPU (limit 2)"));
    in_.cluster.busy_with_asked = {"node1"};
    EXPECT_FALSE(Decide(in_).breaker_open);
    // Out in Slurm and resetting: one node.
    in_.cluster.nodes[0] = Node("node1", true, "autoheal: faulty_gpu", in_.cluster.now - 10);
    EXPECT_FALSE(Decide(in_).breaker_open);
}

// Issue 13.2: the breaker bounds what is out at once. Before, a node drained more than a window
// ago stopped counting, so a systemic false positive drained up to the limit every hour.
TEST_F(DecisionTest, BreakerCountsEveryNodeAutohealStillHoldsHoweverOld) {
    in_.cluster.nodes[0] = Node("node1", true, "autoheal: faulty_gpu", in_.cluster.now - 86400);
    in_.cluster.nodes[1] =
        Node("node2", true, "autoheal: lemon", in_.cluster.now - std::int64_t{30} * 86400);
    Kernel("node3", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, IsEmpty());
    EXPECT_THAT(d.quarantine, ElementsAre("node3"));
    EXPECT_EQ(NodesTakenOut(in_.cluster.nodes), 2);
}

// Issue 13: past the limit only what takes a node out is held; the plan's RMA ticket still goes
// out (admin guide, "The breaker": tickets and notify always go through).
TEST_F(DecisionTest, BreakerHoldsTheTakeOutButNotTheTicket) {
    in_.cluster.nodes[0] = Node("node1", true, "autoheal: faulty_gpu", in_.cluster.now - 10);
    in_.cluster.nodes[1] = Node("node2", true, "autoheal: faulty_gpu", in_.cluster.now - 10);
    Kernel("node3", {Xid(64, "0000:3b:00", "Row remapping failed")});
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, ElementsAre("rma_ticket"));
    EXPECT_THAT(d.plans[0].held, ElementsAre("drain (breaker)", "reset_gpu (breaker)"));
    EXPECT_THAT(d.quarantine, ElementsAre("node3"));
}

// When Slurm's node states cannot be read, how many nodes autoheal holds is unknown: it takes
// no node out (the actions are held), and the job is still requeued.
TEST_F(DecisionTest, BreakerHoldsEveryTakeOutWhenTheNodeStatesAreUnknown) {
    in_.cluster.nodes.clear();
    in_.cluster.nodes_known = false;
    Kernel("node3", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_TRUE(d.breaker_open);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, IsEmpty());
    EXPECT_THAT(d.breaker_note, HasSubstr("could not be read"));
    EXPECT_TRUE(d.requeue);
}

TEST(BreakerLimit, FractionAndCountAndAtLeastOne) {
    EXPECT_EQ(BreakerLimit({0.10, 16}, 4), 1);
    EXPECT_EQ(BreakerLimit({0.10, 16}, 1000), 16);
    EXPECT_EQ(BreakerLimit({0.10, 16}, 100), 10);
    EXPECT_EQ(BreakerLimit({0.5, 2}, 4), 2);
}

TEST_F(DecisionTest, EscalationFromHistoryAddsAnRmaTicket) {
    Kernel("node2", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    diag::HistoryRecord earlier;
    earlier.node = "node2";
    earlier.gpu = "0000:3b:00.0";
    earlier.rule = "xid-79-fallen-off-bus";
    earlier.cause = "faulty_gpu";
    earlier.job = "12";
    earlier.time = in_.cluster.now - 86400;
    in_.history = {{"node2", {earlier}}};
    JobDecision d = Decide(in_);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_THAT(d.plans[0].actions, ElementsAre("drain", "rma_ticket"));
}

// Issue 13.1: Xid 13 (an application fault) repeating on one GPU blames the GPU only when the
// jobs were of escalation_min_users distinct users: one user's buggy kernel, run again and
// again, drains nothing.
TEST_F(DecisionTest, AnAppFaultRepeatingOnOneGpuEscalatesOnlyAcrossDistinctUsers) {
    Kernel("node2", {Xid(13, "0000:3b:00", "Graphics SM Warp Exception on (GPC 0, TPC 0)")});
    in_.job.user = "1001";
    const JobDecision alone = Decide(in_);
    ASSERT_EQ(alone.verdicts.size(), 4u);
    const std::string rule = alone.verdicts[1].diagnosis.rule;
    ASSERT_FALSE(rule.empty());
    EXPECT_THAT(alone.plans, IsEmpty());  // the job's own fault, the first time
    auto earlier = [&](const std::string& job, const std::string& user) {
        diag::HistoryRecord h;
        h.node = "node2";
        h.gpu = "0000:3b:00.0";
        h.rule = rule;
        h.cause = "user_error";
        h.job = job;
        h.user = user;
        h.time = in_.cluster.now - 3600;
        return h;
    };
    // Three jobs of one user (and one run whose user is unknown): no escalation.
    in_.history = {{"node2", {earlier("70", "1001"), earlier("71", "1001"), earlier("72", "")}}};
    JobDecision d = Decide(in_);
    EXPECT_THAT(d.plans, IsEmpty());
    EXPECT_EQ(d.verdicts[1].diagnosis.cause, "user_error");
    EXPECT_EQ(d.verdicts[1].diagnosis.escalation, "");
    // One of the jobs was another user's: the GPU is blamed.
    in_.history = {{"node2", {earlier("70", "1001"), earlier("71", "1002")}}};
    d = Decide(in_);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].node, "node2");
    EXPECT_EQ(d.plans[0].cause, "faulty_gpu");
    EXPECT_THAT(d.plans[0].actions, ElementsAre("drain", "reset_gpu"));
    EXPECT_EQ(d.verdicts[1].diagnosis.escalation, "3 jobs of 2 users on this gpu within 7d");
    config_.escalation_min_users = 3;
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    config_.escalation_min_users = 1;  // a site may count one user's jobs
    in_.history = {{"node2", {earlier("70", "1001"), earlier("71", "1001")}}};
    EXPECT_EQ(Decide(in_).plans.size(), 1u);
}

TEST_F(DecisionTest, ANodeInRepeatedUnexplainedFailuresIsDrainedAsALemon) {
    OnlyNode1After("1002", 2, {"1001"});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.outcome, "unexplained");
    EXPECT_TRUE(d.counts_towards_lemons);
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].node, "node1");
    EXPECT_EQ(d.plans[0].rule, "lemon-node");
    EXPECT_THAT(d.plans[0].actions, ElementsAre("drain"));
    EXPECT_EQ(d.plans[0].cause, "lemon");
    EXPECT_EQ(FormatReason(d.plans[0].why),
              "autoheal: lemon failures=3 users=2 within=7d rule=lemon-node job=" + in_.job.job +
                  "; 3 unexplained job failures of 2 users within 7d; deep checks needed");
    EXPECT_FALSE(d.requeue);  // nothing says the infrastructure failed

    in_.unexplained_failures = {{"node1", 1, {"1001"}}};  // the second one only
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    config_.lemon.failures = 0;  // off
    in_.unexplained_failures = {{"node1", 10, {"1001"}}};
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
}

// A guess (an error line no rule reads) explains nothing: the run stays unexplained and counts
// towards lemons, and no node is a culprit.
TEST_F(DecisionTest, AGuessExplainsNoFailure) {
    OnlyNode1After("1002", 2, {"1001"});
    JobOutput("node1", {"frobd: ERROR could not open /etc/frob.conf"});
    // A kernel line no rule reads is not even a guess (the kernel logs harmless errors).
    Kernel("node1", {"kernel: frob0: controller reset failed, giving up"});
    JobDecision d = Decide(in_);
    ASSERT_TRUE(d.job_output);
    EXPECT_TRUE(d.job_output->diagnosis.guess);
    ASSERT_FALSE(d.verdicts.empty());
    EXPECT_FALSE(d.verdicts[0].diagnosis.Explains());
    EXPECT_EQ(d.cause, "unknown");
    EXPECT_EQ(d.outcome, "unexplained");
    EXPECT_TRUE(d.counts_towards_lemons);
    EXPECT_THAT(d.culprits, IsEmpty());
    ASSERT_EQ(d.plans.size(), 1u);
    EXPECT_EQ(d.plans[0].rule, "lemon-node");
    EXPECT_FALSE(d.requeue);
}

// Issue 13.1: one user's failing jobs (`exit 1` four times) must not drain a node: a lemon takes
// unexplained failures of lemon.min_users distinct users; runs without a known user add none.
TEST_F(DecisionTest, OneUsersFailingJobsNeverMakeALemon) {
    OnlyNode1After("1001", 10, {"1001"});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.outcome, "unexplained");
    EXPECT_THAT(d.plans, IsEmpty());
    in_.unexplained_failures = {{"node1", 10, {}}};  // recorded before users were
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    in_.unexplained_failures = {{"node1", 2, {"1001", "1003"}}};
    EXPECT_EQ(Decide(in_).plans.size(), 1u);
    config_.lemon.min_users = 3;
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    config_.lemon.min_users = 1;  // a site may choose to count one user
    in_.unexplained_failures = {{"node1", 2, {"1001"}}};
    EXPECT_EQ(Decide(in_).plans.size(), 1u);
}

// A run whose node reports did not all come in is no evidence: it is not counted and drains
// nothing, whatever the history says.
TEST_F(DecisionTest, RunsWithMissingReportsNeverCountTowardsLemons) {
    config_.lemon = {3, 2, 7 * std::int64_t{86400}};
    in_.job.nodes = {"node1", "node2"};
    in_.job.user = "1002";
    in_.reports.resize(1);
    in_.job.missing_reports = {"node2"};
    in_.unexplained_failures = {{"node1", 5, {"1001", "1003"}}, {"node2", 5, {"1001", "1003"}}};
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.outcome, "unexplained");
    EXPECT_FALSE(d.counts_towards_lemons);
    EXPECT_THAT(d.plans, IsEmpty());
}

TEST_F(DecisionTest, OnlyUnexplainedFailuresCountTowardsLemons) {
    in_.unexplained_failures = {{"node1", 5, {"1", "2"}},
                                {"node2", 5, {"1", "2"}},
                                {"node3", 5, {"1", "2"}},
                                {"node4", 5, {"1", "2"}}};
    in_.job.failed = false;
    EXPECT_EQ(Decide(in_).outcome, "ok");
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    in_.job.failed = true;
    JobOutput("node1",
              {"Traceback (most recent call last):", "ZeroDivisionError: division by zero"});
    EXPECT_EQ(Decide(in_).outcome, "own");
    EXPECT_THAT(Decide(in_).plans, IsEmpty());
    JobOutput("node1", {});
    Kernel("node2", {Xid(79, "0000:3b:00", "GPU has fallen off the bus.")});
    JobDecision d = Decide(in_);
    EXPECT_EQ(d.outcome, "blamed");
    ASSERT_EQ(d.plans.size(), 1u);  // node2's own plan, no lemons
    EXPECT_EQ(d.plans[0].rule, "xid-79-fallen-off-bus");
}

TEST(DecisionRecord, RoundTripsAndToleratesMistypedFields) {
    DecisionRecord d;
    d.explanation = "autoheal: requeued 1/3 excluding node2";
    d.requeue = true;
    d.cause = "faulty_gpu";
    d.rule = "xid-79";
    d.outcome = "blamed";
    d.culprits = {"node2"};
    d.facts.failed = true;
    d.facts.restart_count = 1;
    d.facts.auto_resume = 3;
    d.facts.nodes = {"node1", "node2"};
    d.facts.excluded = {"node9"};
    auto back = DecisionRecordFromJson(DecisionRecordToJson(d));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(back->explanation, d.explanation);
    EXPECT_TRUE(back->requeue);
    EXPECT_EQ(back->cause, "faulty_gpu");
    EXPECT_THAT(back->culprits, ElementsAre("node2"));
    EXPECT_TRUE(back->facts.failed);
    EXPECT_EQ(back->facts.restart_count, 1);
    EXPECT_EQ(back->facts.auto_resume, 3);
    EXPECT_THAT(back->facts.nodes, ElementsAre("node1", "node2"));
    EXPECT_THAT(back->facts.excluded, ElementsAre("node9"));

    // Written by an older autoheal (no facts) or tampered with: defaults, never an exception.
    auto old = DecisionRecordFromJson(R"({"explanation": "x", "requeue": "yes",
        "facts": {"restart_count": "two", "auto_resume": 1e40, "nodes": [1, "n1"]}})");
    ASSERT_TRUE(old.ok());
    EXPECT_FALSE(old->requeue);
    EXPECT_EQ(old->facts.restart_count, 0);
    EXPECT_FALSE(old->facts.auto_resume);
    EXPECT_THAT(old->facts.nodes, ElementsAre("n1"));
    EXPECT_FALSE(DecisionRecordFromJson("[1,2]").ok());
    EXPECT_FALSE(DecisionRecordFromJson("{").ok());
}

}  // namespace
}  // namespace autoheal::remediation
