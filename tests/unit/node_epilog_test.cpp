// The node epilog's steps with a sim::MemorySlurmClient and a sim::ManualClock on real files, and
// the GPU reset decided once by the controller: the node carries out only what the decision lists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autoheal/core/flight_recorder_env.h"
#include "diag_test_util.h"
#include "epilog_test_env.h"

namespace autoheal::remediation::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const std::string kXid48 = XidLine(48, "0000:3b:00", "An uncorrectable double bit error");

class NodeEpilogTest : public ::testing::Test, public EpilogTestEnv {
  protected:
    NodeEpilogTest() {
        // The reset command leaves a file per GPU reset, so a test sees what was reset.
        rc.gpu_reset_command = {"/usr/bin/touch", (dir / "reset-{gpu}").string()};
    }
    bool WasReset(const std::string& gpu) { return fs::exists(dir / ("reset-" + gpu)); }
    void ClearResets() {
        for (const auto& e : fs::directory_iterator(dir)) {
            if (e.path().filename().string().rfind("reset-", 0) == 0) fs::remove(e.path());
        }
    }

    // One run of `job` with the kernel lines on node2: the node epilogs collect, diagnose and
    // report; the controller decides and acts while the nodes, called at each of its waits,
    // carry out what the decision asks of them (as the real node epilogs do concurrently).
    EpilogOutcome RunJob(std::uint32_t job, const std::vector<std::string>& node2_kernel) {
        FailedJob(job, {"node1", "node2"});
        SetKernelLog("node1", {});
        SetKernelLog("node2", node2_kernel);
        struct Pending {
            NodeEpilogEnv env;
            NodeEvidence evidence;
            bool done = false;
        };
        std::vector<Pending> pending;
        reports.clear();
        for (const char* n : {"node1", "node2"}) {
            NodeEpilogEnv env = NodeEnv(n);
            NodeEvidence ev = CollectNodeEvidence(env);
            const diag::Diagnosis local = DiagnoseNode(env, &ev);
            reports.push_back(ev.report);
            if (NeedsDecision(ev, local)) pending.push_back({env, std::move(ev)});
        }
        clock.on_sleep = [&] {
            for (Pending& p : pending) {
                if (p.done) continue;
                auto text = ReadSmallFile(DecisionFile(config.state_dir, ctx.job_id, 0), 1 << 20);
                if (!text) continue;
                auto d = DecisionRecordFromJson(*text).value();
                auto results = CarryOutNodeActions(p.env, d, p.evidence.after);
                if (!results.empty()) {
                    ASSERT_TRUE(WriteNodeResults(p.env, 0, results));
                }
                p.done = true;
            }
        };
        auto out = RunController();
        clock.on_sleep = nullptr;
        return out;
    }
    // A node whose one GPU still runs `processes` compute processes after the job.
    static health::NodeSnapshot BusyGpu(const std::string& pci, const std::string& uuid,
                                        unsigned processes) {
        health::GpuSnapshot g;
        g.pci_bus_id = pci;
        g.uuid = uuid;
        g.compute_processes = processes;
        health::NodeSnapshot node;
        node.gpus.push_back(g);
        return node;
    }
    std::vector<std::string> ActionsOf(const std::string& action) {
        std::vector<std::string> out;
        for (const std::string& a : Actions()) {
            if (a.rfind(action + " ", 0) == 0) out.push_back(a);
        }
        return out;
    }
};

// The defect: the node epilog used to reset the GPU from its own diagnosis (no history) before
// the controller escalated the same fault to drain + RMA, and the reset was never recorded.
TEST_F(NodeEpilogTest, AFirstXid48ResetsTheGpuOnceAndRecordsTheOutcome) {
    ASSERT_TRUE(RunJob(77, {kXid48}).ok);
    EXPECT_TRUE(WasReset("0000:3b:00.0"));
    EXPECT_THAT(ActionsOf("reset_gpu"), ElementsAre("reset_gpu node2 done"));
    ASSERT_TRUE(Decision());
    ASSERT_EQ(Decision()->node_actions.size(), 1u);
    EXPECT_EQ(Decision()->node_actions[0].node, "node2");
    EXPECT_EQ(Decision()->node_actions[0].gpu, "0000:3b:00.0");
}

TEST_F(NodeEpilogTest, ASecondXid48OnTheGpuEscalatesToDrainAndRmaWithoutAReset) {
    ASSERT_TRUE(RunJob(77, {kXid48}).ok);
    ClearResets();
    clock.Advance(std::chrono::seconds(3600));
    ASSERT_TRUE(RunJob(78, {kXid48}).ok);
    EXPECT_FALSE(WasReset("0000:3b:00.0"));
    EXPECT_THAT(ActionsOf("reset_gpu"), ElementsAre("reset_gpu node2 done"));  // job 77's only
    EXPECT_THAT(Actions(), Contains("drain node2 done"));
    EXPECT_THAT(Actions(), Contains("rma_ticket node2 opened"));
    EXPECT_TRUE(slurm.node("node2").drained);
    EXPECT_THAT(Decision()->node_actions, IsEmpty());
}

TEST_F(NodeEpilogTest, AHeldPlanResetsNothing) {
    // The breaker is full: autoheal already holds two nodes out.
    for (const char* n : {"node3", "node4"}) {
        slurm.node(n).drained = true;
        slurm.node(n).reason = "autoheal: faulty_gpu gpu=0000:3b:00.0 inc=1";
        slurm.node(n).reason_time = clock.Now();
    }
    ASSERT_TRUE(RunJob(77, {kXid48}).ok);
    EXPECT_FALSE(WasReset("0000:3b:00.0"));
    EXPECT_THAT(ActionsOf("reset_gpu"), IsEmpty());
    EXPECT_THAT(Actions(), Contains("held node2 held"));
    EXPECT_THAT(Decision()->node_actions, IsEmpty());
}

TEST_F(NodeEpilogTest, DryRunResetsNothingAndRecordsTheResetAsDryRun) {
    rc.dry_run = true;
    ASSERT_TRUE(RunJob(77, {kXid48}).ok);
    EXPECT_FALSE(WasReset("0000:3b:00.0"));
    EXPECT_THAT(ActionsOf("reset_gpu"), ElementsAre("reset_gpu node2 dry-run"));
}

TEST_F(NodeEpilogTest, ANodeThatNeverAnswersHasItsResetRecordedAsFailed) {
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid48});
    ASSERT_TRUE(RunController().ok);
    EXPECT_THAT(ActionsOf("reset_gpu"), ElementsAre("reset_gpu node2 failed"));
    auto rows = store->Actions(0, "node2").value();
    bool said = false;
    for (const ActionRow& a : rows)
        said |= a.detail.find("no result from the node") != std::string::npos;
    EXPECT_TRUE(said);
}

// ------------------------------------------------------------------ the steps on their own

TEST_F(NodeEpilogTest, CollectReadsTheKernelLogAndNotesTheMissingBaseline) {
    FailedJob(77, {"node2"});
    SetKernelLog("node2", {"kernel: usb 1-1: new device", kXid48});
    NodeEvidence ev = CollectNodeEvidence(NodeEnv("node2"));
    EXPECT_THAT(diag::testing::EvidenceTexts(ev.report.evidence), ElementsAre(kXid48));
    EXPECT_EQ(ev.report.node, "node2");
    EXPECT_EQ(ev.report.time, clock.Now());
    EXPECT_THAT(ev.report.problems, Contains(HasSubstr("no prolog baseline")));
}

TEST_F(NodeEpilogTest, CollectNotesAnUnreadableKernelLog) {
    FailedJob(77, {"node2"});
    fs::create_directories(KernelLogFor(rc, "node2"));  // a folder where the log should be
    NodeEvidence ev = CollectNodeEvidence(NodeEnv("node2"));
    EXPECT_THAT(ev.report.problems, Contains(HasSubstr("kernel log: ")));
    EXPECT_THAT(ev.report.problems, Contains(HasSubstr("not a regular file")));
}

TEST_F(NodeEpilogTest, TheBatchHostReadsTheJobsOutput) {
    FailedJob(77, {"node1", "node2"});
    std::ofstream(dir / "slurm-77.out") << "step 5\nZeroDivisionError: division by zero\n";
    NodeEpilogEnv env = NodeEnv("node1");
    NodeEvidence ev;
    CollectJobOutput(env, slurm, &ev);
    EXPECT_TRUE(ev.report.job_output_read);
    EXPECT_EQ(ev.output_path, (dir / "slurm-77.out").string());
    EXPECT_THAT(diag::testing::EvidenceTexts(ev.report.job_output),
                ElementsAre("ZeroDivisionError: division by zero"));
    NodeEvidence other;
    CollectJobOutput(NodeEnv("node2"), slurm, &other);
    EXPECT_FALSE(other.report.job_output_read);
}

// The run's flight recorder dumps, in the folders the SPANK plugin makes (one per node), are read
// on the batch host with the job's output: the culprit rank and its node join the output's
// evidence, and an unreadable dump is noted, never fatal.
TEST_F(NodeEpilogTest, TheBatchHostReadsTheRunsFlightRecorderDumps) {
    FailedJob(77, {"node1", "node2"});
    std::ofstream(dir / "slurm-77.out") << "step 5\n";
    const fs::path fr = FlightRecorderDir(config.state_dir, "77", 0);
    fs::create_directories(fr);
    fs::copy(fs::path(AUTOHEAL_SOURCE_DIR) / "tests/fixtures/flight_recorder/hang", fr,
             fs::copy_options::recursive);
    fs::copy_file(
        fs::path(AUTOHEAL_SOURCE_DIR) / "tests/fixtures/flight_recorder/evil" / "nccl_trace_rank_0",
        fr / "node1" / "nccl_trace_rank_99");
    NodeEvidence ev;
    CollectJobOutput(NodeEnv("node1"), slurm, &ev);
    EXPECT_THAT(diag::testing::EvidenceTexts(ev.report.job_output),
                ElementsAre("rank 5 on node2 never entered ALLREDUCE #42 (pg 0)"));
    EXPECT_THAT(ev.report.problems,
                ElementsAre(::testing::HasSubstr("nccl_trace_rank_99: opcode GLOBAL")));
}

TEST_F(NodeEpilogTest, CollectJobOutputNotesSlurmAway) {
    FailedJob(77, {"node1"});
    slurm.FailNext("get_job", 1);
    NodeEvidence ev;
    CollectJobOutput(NodeEnv("node1"), slurm, &ev);
    EXPECT_FALSE(ev.report.job_output_read);
    EXPECT_THAT(ev.report.problems, Contains(HasSubstr("job output: slurm: get_job")));
}

TEST_F(NodeEpilogTest, DiagnoseNamesTheLocalCauseAndWhetherToWait) {
    FailedJob(77, {"node2"});
    SetKernelLog("node2", {kXid48});
    NodeEpilogEnv env = NodeEnv("node2");
    NodeEvidence ev = CollectNodeEvidence(env);
    const diag::Diagnosis local = DiagnoseNode(env, &ev);
    EXPECT_EQ(ev.report.local_cause, "gpu_hbm_memory (xid-48-dbe)");
    EXPECT_TRUE(NeedsDecision(ev, local));
    SetKernelLog("node2", {});
    NodeEvidence quiet = CollectNodeEvidence(env);
    EXPECT_FALSE(NeedsDecision(quiet, DiagnoseNode(env, &quiet)));
}

TEST_F(NodeEpilogTest, TheWholeNodeEpilogWritesItsReportAndResetsNothingOnItsOwn) {
    FailedJob(77, {"node2"});
    SetKernelLog("node2", {kXid48});
    auto out = RunNodePipeline(NodeEnv("node2"), slurm);
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_THAT(out.summary, HasSubstr("no decision from the controller in time"));
    EXPECT_FALSE(WasReset("0000:3b:00.0"));
    auto text = ReadSmallFile(EpilogFile(config.state_dir, "77", 0, "node2"), 1 << 20);
    ASSERT_TRUE(text);
    auto report = NodeReportFromJson(*text);
    ASSERT_TRUE(report);
    EXPECT_THAT(diag::testing::EvidenceTexts(report->evidence), ElementsAre(kXid48));
}

TEST_F(NodeEpilogTest, AwaitDecisionIsBoundedOnTheClock) {
    FailedJob(77, {"node2"});
    EXPECT_FALSE(AwaitDecision(NodeEnv("node2"), 0, 0));
    EXPECT_GE(clock.sleeps(), 140);  // (5 + 10) s in 100 ms steps
    DecisionRecord d;
    d.explanation = "autoheal: requeued 1/3";
    ASSERT_TRUE(WriteFileAtomically(DecisionFile(config.state_dir, "77", 0),
                                    DecisionRecordToJson(d), 0644, 0755));
    auto got = AwaitDecision(NodeEnv("node2"), 0, 0);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->explanation, "autoheal: requeued 1/3");
}

// Job ids wrap: a decision file an earlier job 77 left is not this run's. The node waits on
// for the controller's decision on this run and takes that one.
TEST_F(NodeEpilogTest, AwaitDecisionNeverTakesAnEarlierJobsDecision) {
    FailedJob(77, {"node2"});
    const std::int64_t run_began = clock.Now() - 600;
    DecisionRecord old;
    old.job = "77";
    old.time = run_began - 86400;
    old.explanation = "autoheal: requeued 1/3 after faulty_gpu on node2";
    old.node_actions = {{"node2", "reset_gpu", "0000:3b:00.0"}};
    const std::string path = DecisionFile(config.state_dir, "77", 0);
    ASSERT_TRUE(WriteFileAtomically(path, DecisionRecordToJson(old), 0644, 0755));
    DecisionRecord fresh;
    fresh.job = "77";
    fresh.time = clock.Now();
    fresh.explanation = "autoheal: not requeued: the job failed by itself";
    clock.on_sleep = [&] {
        if (clock.sleeps() == 4) {
            ASSERT_TRUE(WriteFileAtomically(path, DecisionRecordToJson(fresh), 0644, 0755));
        }
    };
    auto got = AwaitDecision(NodeEnv("node2"), 0, run_began);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->explanation, fresh.explanation);
    EXPECT_THAT(got->node_actions, IsEmpty());
    EXPECT_EQ(clock.sleeps(), 4);
}

TEST(DecisionMismatch, NamesWhatIsNotThisRunsDecision) {
    DecisionRecord d;
    d.job = "77";
    d.time = 1000;
    d.facts.restart_count = 1;
    EXPECT_EQ(DecisionMismatch(d, "77", 1, 1000), "");
    EXPECT_EQ(DecisionMismatch(d, "78", 1, 0), "for job 77");
    EXPECT_EQ(DecisionMismatch(d, "77", 0, 0), "for run 1");
    EXPECT_EQ(DecisionMismatch(d, "77", 1, 1001), "decided at 1000, before this run began at 1001");
    d.job.clear();
    d.time = 0;  // an older controller's record
    EXPECT_EQ(DecisionMismatch(d, "78", 1, 5000), "");
}

TEST_F(NodeEpilogTest, CarryOutRefusesABusyGpuAndIgnoresOtherNodesActions) {
    FailedJob(77, {"node2"});
    DecisionRecord d;
    d.node_actions = {{"node2", "reset_gpu", "0000:3b:00.0"},
                      {"node1", "reset_gpu", "0000:5d:00.0"}};
    const health::NodeSnapshot after = BusyGpu("0000:3b:00.0", "", 2);
    auto results = CarryOutNodeActions(NodeEnv("node2"), d, after);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].outcome, "refused");
    EXPECT_THAT(results[0].detail, HasSubstr("busy (2 processes)"));
    EXPECT_FALSE(WasReset("0000:3b:00.0"));
    EXPECT_FALSE(WasReset("0000:5d:00.0"));
    auto idle = CarryOutNodeActions(NodeEnv("node2"), d, health::NodeSnapshot());
    ASSERT_EQ(idle.size(), 1u);
    EXPECT_EQ(idle[0].outcome, "done");
    EXPECT_TRUE(WasReset("0000:3b:00.0"));
}

// A GPU the diagnosis named by UUID (the Kubernetes device plugin's "Device=GPU-...") is the
// same GPU as the snapshot's by PCI id: busy is busy.
TEST_F(NodeEpilogTest, CarryOutRefusesABusyGpuNamedByUuid) {
    FailedJob(77, {"node2"});
    DecisionRecord d;
    d.node_actions = {{"node2", "reset_gpu", "GPU-1b2c3d4e-0000-4f4b-9b1e-6a1d3c2b7a10"}};
    const health::NodeSnapshot after =
        BusyGpu("0000:3b:00.0", "GPU-1b2c3d4e-0000-4f4b-9b1e-6a1d3c2b7a10", 1);
    auto results = CarryOutNodeActions(NodeEnv("node2"), d, after);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].outcome, "refused");
    EXPECT_FALSE(WasReset("GPU-1b2c3d4e-0000-4f4b-9b1e-6a1d3c2b7a10"));
}

TEST_F(NodeEpilogTest, AFailingResetCommandIsReported) {
    FailedJob(77, {"node2"});
    rc.gpu_reset_command = {"/bin/false"};
    DecisionRecord d;
    d.node_actions = {{"node2", "reset_gpu", "0000:3b:00.0"}};
    auto results = CarryOutNodeActions(NodeEnv("node2"), d, health::NodeSnapshot());
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].outcome, "failed");
    EXPECT_EQ(results[0].detail, "/bin/false: exit 1");
}

TEST_F(NodeEpilogTest, NodeResultsRoundTripAndRefuseOtherVersions) {
    FailedJob(77, {"node2"});
    ASSERT_TRUE(
        WriteNodeResults(NodeEnv("node2"), 0, {{"reset_gpu", "0000:3b:00.0", "done", "ok"}}));
    auto text = ReadSmallFile(NodeResultFile(config.state_dir, "77", 0, "node2"), 1 << 20);
    ASSERT_TRUE(text);
    auto back = NodeResultsFromJson(*text);
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ((*back)[0].outcome, "done");
    auto refused = NodeResultsFromJson(R"({"version": 9, "results": []})");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.code(), ErrorCode::kInvalid);
    EXPECT_THAT(refused.error(), HasSubstr("version"));
}

TEST_F(NodeEpilogTest, TheExplanationIsAppendedToTheJobsOutput) {
    FailedJob(77, {"node1"});
    const std::string out = (dir / "slurm-77.out").string();
    std::ofstream(out) << "step 5\n";
    DecisionRecord d;
    d.explanation = "autoheal: not requeued: the job failed by itself (user_error)";
    AppendExplanation(NodeEnv("node1"), d, out);
    EXPECT_EQ(ReadText(out), "step 5\n" + d.explanation + "\n");
}

}  // namespace
}  // namespace autoheal::remediation::testing
