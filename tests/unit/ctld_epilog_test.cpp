// The controller epilog's steps and its whole pipeline with a FakeSlurmClient, a FakeClock, a
// real SQLite store and the shipped rules: every scenario of tests/integration/e2e_test.cpp at
// the decision level, each step on its own, and the Slurm retry policy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <slurm/slurm_errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autoheal/remediation/node_reason.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/slurm_retry.h"
#include "epilog_test_env.h"

namespace autoheal::remediation::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kXid79 = XidLine(79, "0000:3b:00", "GPU has fallen off the bus.");

class CtldEpilogTest : public ::testing::Test, public EpilogTestEnv {};

// 1. Xid 79 mid-job: drained and rebooted, the job requeued once excluding the node.
TEST_F(CtldEpilogTest, Xid79MidJobDrainsRebootsAndRequeuesOnceExcludingTheNode) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    auto out = RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_TRUE(slurm.node("node2").drained);
    EXPECT_TRUE(slurm.node("node2").reboot_pending);
    EXPECT_THAT(slurm.node("node2").reason,
                StartsWith("autoheal: faulty_gpu xid=79 gpu=0000:3b:00.0"));
    EXPECT_FALSE(slurm.node("node1").Out());
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_EQ(slurm.job(77).restart_count, 1);
    EXPECT_EQ(slurm.job(77).exc_nodes, "node2");
    const std::string why =
        "autoheal: requeued 1/3 after faulty_gpu on node2 (xid 79, GPU 0000:3b:00.0); "
        "excluded node2";
    EXPECT_EQ(slurm.job(77).admin_comment, why);
    ASSERT_EQ(slurm.updates.size(), 1u);
    EXPECT_EQ(slurm.updates[0].begin_time, clock.Now() + rc.requeue_delay_seconds);
    EXPECT_THAT(Actions(),
                IsSupersetOf({"drain node2 done", "reboot node2 done", "requeue 77/run0 done"}));
    ASSERT_TRUE(Decision());
    EXPECT_EQ(Decision()->explanation, why);
    EXPECT_THAT(Decision()->culprits, ElementsAre("node2"));
    bool node_incident = false;
    for (const IncidentRow& i : Incidents()) {
        if (i.node == "node2") node_incident = i.cause == "faulty_gpu";
    }
    EXPECT_TRUE(node_incident);
}

// The drain and reboot reasons carry the node's incident: `inc=` is the id the store holds for
// node2's incident, and the drain's recorded detail is the reason Slurm was given.
TEST_F(CtldEpilogTest, TheDrainReasonNamesTheNodesIncident) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    ASSERT_TRUE(RunController().ok);
    std::int64_t incident = 0;
    for (const IncidentRow& i : Incidents()) {
        if (i.node == "node2") incident = i.id;
    }
    ASSERT_GT(incident, 0);
    const std::string reason = slurm.node("node2").reason;
    EXPECT_EQ(reason,
              "autoheal: faulty_gpu xid=79 gpu=0000:3b:00.0 rule=xid-79-fallen-off-bus "
              "job=77 inc=" +
                  std::to_string(incident));
    const auto parsed = ParseReason(reason);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->incident, incident);
    EXPECT_EQ(parsed->cause, diag::Cause::kFaultyGpu);
    int recorded = 0;
    const std::vector<ActionRow> rows = store->Actions(0, "node2").value();
    for (const ActionRow& a : rows) {
        if (a.incident_id != incident || (a.action != "drain" && a.action != "reboot")) continue;
        EXPECT_EQ(a.detail, reason) << a.action;
        ++recorded;
    }
    EXPECT_EQ(recorded, 2);
}

// 2a. The job's own Python exception: no node action, no requeue, a clear explanation.
TEST_F(CtldEpilogTest, PythonExceptionIsTheJobsOwnBug) {
    FailedJob(77, {"node1"});
    JobOutput("node1", {"ZeroDivisionError: division by zero"});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(slurm.Count("reboot"), 0);
    ASSERT_TRUE(Decision());
    EXPECT_THAT(Decision()->explanation,
                HasSubstr("autoheal: not requeued: the job failed by itself (user_error"));
    EXPECT_THAT(Decision()->explanation, HasSubstr("ZeroDivisionError"));
}

// 2b. An Xid 13 burst with the application's illegal address: the job's fault, not the node's.
TEST_F(CtldEpilogTest, Xid13BurstIsNotTheNodesFault) {
    FailedJob(77, {"node1"});
    Kernel("node1", std::vector<std::string>(
                        5, XidLine(13, "0000:3b:00",
                                   "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of "
                                   "Range Address")));
    JobOutput("node1", {"RuntimeError: CUDA error: an illegal memory access was encountered"});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_FALSE(slurm.node("node1").Out());
    EXPECT_THAT(Decision()->explanation, HasSubstr("not requeued: the job failed by itself"));
}

// 3. NCCL watchdog timeouts on every rank, hardware evidence on one node: only it is blamed.
TEST_F(CtldEpilogTest, NcclTimeoutsEverywhereBlameOnlyTheNodeWithHardwareEvidence) {
    FailedJob(77, {"node1", "node2", "node3", "node4"});
    std::vector<std::string> ranks;
    ranks.reserve(4);
    for (int rank = 0; rank < 4; ++rank) {
        ranks.push_back(
            "[Rank " + std::to_string(rank) +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15804, "
            "OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000) ran for "
            "600047 milliseconds before timing out.");
    }
    JobOutput("node1", ranks);
    Kernel("node3", {XidLine(79, "0000:5d:00", "GPU has fallen off the bus.")});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.job(77).exc_nodes, "node3");
    EXPECT_THAT(slurm.job(77).admin_comment,
                HasSubstr("requeued 1/3 after faulty_gpu on node3 (xid 79, GPU 0000:5d:00.0); "
                          "excluded node3"));
    EXPECT_EQ(slurm.Count("drain"), 1);
    EXPECT_TRUE(slurm.node("node3").drained);
}

// 4. Two nodes under one leaf switch lose their links at once: one switch incident and one
//    network ticket; no node RMA, no drain.
TEST_F(CtldEpilogTest, TwoNodesUnderOneLeafLosingNetworkIsOneSwitchIncident) {
    FailedJob(77, {"node1", "node2"});
    for (const char* n : {"node1", "node2"}) {
        Kernel(
            n,
            {"Nov 29 10:00:00 gpu-host kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"});
    }
    JobOutput(
        "node1",
        {"NCCL WARN NET/IB : Got completion from peer 10.0.0.2<59632> with error 12, opcode 0, "
         "len 0, vendor err 129 (Recv)"});
    ASSERT_TRUE(RunController().ok);
    std::vector<std::string> switches;
    for (const IncidentRow& i : Incidents()) {
        if (i.rule == "leaf-switch-correlation") switches.push_back(i.node);
    }
    EXPECT_THAT(switches, ElementsAre("leaf1"));
    auto all = store->Tickets(false).value();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].kind, "network");
    EXPECT_THAT(all[0].payload_json, HasSubstr("\"switch\":\"leaf1\""));
    EXPECT_EQ(slurm.Count("drain"), 0);
    for (const std::string& a : Actions()) EXPECT_THAT(a, Not(StartsWith("rma_ticket")));
    EXPECT_THAT(Decision()->explanation, HasSubstr("network_switch_cable on switch leaf1"));
}

// 5. Faults everywhere: the breaker (2 of 4 nodes) holds the rest, alerts and quarantines.
TEST_F(CtldEpilogTest, FaultsEverywhereTripTheBreaker) {
    FailedJob(77, {"node1", "node2", "node3", "node4"});
    for (const NodeReport& r : reports) Kernel(r.node, {kXid79});
    ASSERT_TRUE(RunController().ok);
    int drained = 0;
    for (const char* n : {"node1", "node2", "node3", "node4"}) drained += slurm.node(n).drained;
    EXPECT_EQ(drained, 2);
    std::set<std::string> held;
    for (const ActionRow& a : store->Actions(0, "").value()) {
        if (a.outcome == "held") held.insert(a.target);
    }
    EXPECT_EQ(held.size(), 2u);
    EXPECT_THAT(Actions(), Contains("alert breaker raised"));
    const std::string quarantine = ReadText(config.policy.quarantine_file);
    for (const std::string& n : held) EXPECT_THAT(quarantine, HasSubstr("\"" + n + "\""));
}

// 6. A node an admin drained is never rebooted or relabelled.
TEST_F(CtldEpilogTest, AdminDrainedNodeIsNeverTouched) {
    FailedJob(77, {"node1"});
    slurm.node("node1").drained = true;
    slurm.node("node1").reason = "admin: replacing fan";
    Kernel("node1", {kXid79});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.node("node1").reason, "admin: replacing fan");
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(slurm.Count("reboot"), 0);
    EXPECT_FALSE(slurm.node("node1").reboot_pending);
    EXPECT_THAT(Actions(), IsSupersetOf({"drain node1 admin-owned", "reboot node1 admin-owned"}));
}

// 7. At its requeue cap the job stays down with an explanation.
TEST_F(CtldEpilogTest, RequeueCapStopsAJobThatKeepsFailing) {
    FailedJob(77, {"node3"}, /*cap=*/1, /*restart=*/1);
    Kernel("node3", {kXid79});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_EQ(Decision(1)->explanation,
              "autoheal: not requeued: faulty_gpu on node3 (xid 79, GPU 0000:3b:00.0), but the "
              "job already restarted 1/1 times (--auto-resume=1)");
}

// Records forged past job_submit (issue 12 point 8) ask for more requeues than the site allows:
// the site's policy.max_auto_resume caps the job.
TEST_F(CtldEpilogTest, TheSitesRequeueCapWinsOverTheRecords) {
    config.policy.max_auto_resume = 2;
    FailedJob(78, {"node3"}, /*cap=*/50, /*restart=*/2);
    Kernel("node3", {kXid79});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_THAT(Decision(2)->explanation, HasSubstr("restarted 2/2 times (--auto-resume=2)"));
}

// 8. The ticket webhook is down: the ticket stays queued (failed, retried later).
TEST_F(CtldEpilogTest, TicketWebhookDownLeavesTheTicketQueued) {
    int port = 0;
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(a);
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
        ::close(fd);
    }
    tickets = ParseTicketConfig(YAML::Load("sinks:\n  - {type: webhook, url: 'http://127.0.0.1:" +
                                           std::to_string(port) + "/t', timeout_seconds: 2}\n"),
                                "test", config.state_dir)
                  .value();
    FailedJob(77, {"node1"});
    Kernel("node1", {XidLine(64, "0000:3b:00", "Row remapping failed")});
    ASSERT_TRUE(RunController().ok);
    auto all = store->Tickets(false).value();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].kind, "rma");
    EXPECT_EQ(all[0].state, "failed");
    EXPECT_THAT(all[0].last_error, HasSubstr("webhook"));
    EXPECT_THAT(Actions(), Contains("rma_ticket node1 opened"));
}

// A node that keeps failing jobs with nothing to name it is drained as a lemon at the third.
TEST_F(CtldEpilogTest, NodeThatKeepsFailingJobsUnexplainedIsDrainedAsALemon) {
    for (std::uint32_t job = 80; job < 83; ++job) {
        FailedJob(job, {"node2"});
        JobOutput("node2", {});
        ASSERT_TRUE(RunController().ok);
        EXPECT_EQ(slurm.node("node2").drained, job == 82) << "after job " << job;
        clock.Advance(std::chrono::seconds(60));
    }
    EXPECT_THAT(slurm.node("node2").reason,
                StartsWith("autoheal: lemon failures=3 within=7d rule=lemon-node job=82 inc="));
}

// slurmctld restarts while the controller decides: the reads are retried until it answers, and
// a requeue whose answer was lost is not sent twice.
TEST_F(CtldEpilogTest, SlurmctldRestartDuringTheDecisionRequeuesOnce) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    slurm.FailNext("get_job", 3);
    slurm.FailNext("list_nodes", 2);
    slurm.LoseNextRequeueAnswer();
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_EQ(slurm.job(77).restart_count, 1);
    EXPECT_EQ(slurm.job(77).exc_nodes, "node2");
    int requeues = 0;
    for (const std::string& a : Actions()) requeues += a.rfind("requeue ", 0) == 0;
    EXPECT_EQ(requeues, 1);
    EXPECT_THAT(Actions(), Contains("requeue 77/run0 done"));
    EXPECT_GE(clock.sleeps(), 5);  // the retries waited on the clock, not on real time
}

// slurmd killed mid-job: Slurm requeued the job itself; autoheal records the node's failure and
// does not requeue a second time.
TEST_F(CtldEpilogTest, SlurmdKilledMidJobIsRecordedWithoutASecondRequeue) {
    JobInfo& job = FailedJob(77, {"node1", "node2"});
    job.state = "PENDING";
    job.pending = true;
    job.being_requeued = true;
    slurm.node("node2").down = true;
    slurm.node("node2").state = "DOWN";
    slurm.node("node2").reason = "Not responding";
    reports.erase(reports.begin() + 1);  // node2's epilog never ran
    auto out = RunController();
    ASSERT_TRUE(out.ok);
    EXPECT_THAT(out.summary, HasSubstr("missing=node2"));
    EXPECT_EQ(slurm.Count("requeue"), 0);
    int node_failed = 0;
    for (const IncidentRow& i : Incidents())
        node_failed += i.rule == "node-failed" && i.node == "node2";
    EXPECT_EQ(node_failed, 1);
    EXPECT_EQ(slurm.node("node2").reason, "Not responding");
}

// ------------------------------------------------------------------ the steps on their own

TEST_F(CtldEpilogTest, CollectReportsWaitsOnTheClockAndNamesTheMissing) {
    FailedJob(77, {"node1", "node2"});
    reports.pop_back();
    WriteReports();
    DecisionInput in;
    in.job.nodes = {"node1", "node2"};
    CollectReports(Env(), &in);
    ASSERT_EQ(in.reports.size(), 1u);
    EXPECT_EQ(in.reports[0].node, "node1");
    EXPECT_THAT(in.job.missing_reports, ElementsAre("node2"));
    EXPECT_GE(clock.sleeps(), 40);  // 5 s in 100 ms steps, instantly
}

TEST_F(CtldEpilogTest, CollectReportsTakesAReportThatArrivesWhileWaiting) {
    FailedJob(77, {"node1", "node2"});
    NodeReport late = reports.back();
    reports.pop_back();
    WriteReports();
    clock.on_sleep = [&] {
        if (clock.sleeps() == 3) {
            ASSERT_TRUE(WriteFileAtomically(EpilogFile(config.state_dir, "77", 0, "node2"),
                                            NodeReportToJson(late), 0640, 0755));
        }
    };
    DecisionInput in;
    in.job.nodes = {"node1", "node2"};
    CollectReports(Env(), &in);
    EXPECT_EQ(in.reports.size(), 2u);
    EXPECT_THAT(in.job.missing_reports, IsEmpty());
    EXPECT_EQ(clock.sleeps(), 3);
}

TEST_F(CtldEpilogTest, LoadFactsStopsOnAJobSlurmDoesNotKnow) {
    FailedJob(77, {"node1"});
    ctx.job_id = "99";
    DecisionInput in;
    auto times = LoadFacts(Env(), &in);
    ASSERT_FALSE(times);
    EXPECT_EQ(times.code(), ErrorCode::kNotFound);
    EXPECT_EQ(slurm.Count("get_job"), 1);  // not-found is not retried
}

TEST_F(CtldEpilogTest, LoadFactsReadsTheJobAndTheTopology) {
    JobInfo& job = FailedJob(77, {"node1"});
    job.exc_nodes = "node[3-4]";
    DecisionInput in;
    auto times = LoadFacts(Env(), &in);
    ASSERT_TRUE(times);
    EXPECT_TRUE(in.job.failed);
    EXPECT_FALSE(times->requeued_elsewhere);
    EXPECT_THAT(in.job.excluded, ElementsAre("node3", "node4"));
    EXPECT_EQ(in.cluster.switches.size(), 3u);
}

TEST_F(CtldEpilogTest, CancelledJobDidNotFail) {
    JobInfo& job = FailedJob(77, {"node1"});
    job.state = "CANCELLED";
    DecisionInput in;
    ASSERT_TRUE(LoadFacts(Env(), &in));
    EXPECT_FALSE(in.job.failed);
}

TEST_F(CtldEpilogTest, UntilSlurmAnswersRetriesOnlyWhileSlurmIsUnavailable) {
    int calls = 0;
    auto r = UntilSlurmAnswers(clock, [&]() -> Result<int> {
        ++calls;
        if (calls < 4) return MakeError(ErrorCode::kUnavailable, "slurm: away");
        return 7;
    });
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 7);
    EXPECT_EQ(calls, 4);
    calls = 0;
    auto refused = UntilSlurmAnswers(clock, [&]() -> Result<int> {
        ++calls;
        return MakeError(ErrorCode::kInvalid, "slurm: Unable to contact slurm controller");
    });
    EXPECT_FALSE(refused);
    EXPECT_EQ(calls, 1);  // the words do not matter, the code does
    calls = 0;
    auto gone = UntilSlurmAnswers(clock, [&]() -> Result<int> {
        ++calls;
        return MakeError(ErrorCode::kUnavailable, "slurm: away");
    });
    EXPECT_FALSE(gone);
    EXPECT_EQ(gone.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(calls, 91);  // once a second for 90 s, on the fake clock
}

TEST(SlurmErrorCodeTest, MapsSlurmErrnoToCodes) {
    EXPECT_EQ(SlurmErrorCode(SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR), ErrorCode::kUnavailable);
    EXPECT_EQ(SlurmErrorCode(SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT), ErrorCode::kUnavailable);
    EXPECT_EQ(SlurmErrorCode(SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT), ErrorCode::kUnavailable);
    EXPECT_EQ(SlurmErrorCode(ECONNREFUSED), ErrorCode::kUnavailable);
    EXPECT_EQ(SlurmErrorCode(ESLURM_INVALID_JOB_ID), ErrorCode::kNotFound);
    EXPECT_EQ(SlurmErrorCode(ESLURM_INVALID_NODE_NAME), ErrorCode::kNotFound);
    EXPECT_EQ(SlurmErrorCode(ESLURM_ACCESS_DENIED), ErrorCode::kInvalid);
    EXPECT_EQ(SlurmErrorCode(ESLURM_JOB_PENDING), ErrorCode::kInvalid);
}

TEST_F(CtldEpilogTest, DecideJobRecordsTheRunUnlessRequeuedElsewhere) {
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid79});
    WriteReports();
    DecisionInput in;
    in.rules = &engine.rules;
    in.config = &rc;
    in.job.job = "77";
    in.job.nodes = {"node2"};
    CollectReports(Env(), &in);
    JobTimes times = LoadFacts(Env(), &in).value();
    auto d = DecideJob(Env(), &in, times);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->cause, "faulty_gpu");
    EXPECT_EQ(in.cluster.nodes.size(), 4u);
    EXPECT_EQ(store->CountJobRuns("node2", "blamed", 0).value(), 1);
    times.requeued_elsewhere = true;
    in.job.job = "78";
    ctx.job_id = "78";
    auto again = DecideJob(Env(), &in, times);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->requeue);
    EXPECT_THAT(again->explanation, IsEmpty());
}

// An epilog that runs twice on one run records no second incident and requeues nothing twice.
TEST_F(CtldEpilogTest, TheSameRunDecidedTwiceRecordsAndRequeuesOnce) {
    FailedJob(77, {"node2"});
    Kernel("node2", {XidLine(64, "0000:3b:00", "Row remapping failed")});
    ASSERT_TRUE(RunController().ok);
    const auto first = Incidents().size();
    EXPECT_EQ(first, 2u);  // node2's and the job's
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(Incidents().size(), first);
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_EQ(store->Tickets(false).value().size(), 1u);
}

// An exception in Act (a bug, a library throwing) still lets the job be requeued, the run and
// the decision be recorded; the store says which step failed.
TEST_F(CtldEpilogTest, AFailingActStillRequeuesAndRecords) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    slurm.ThrowNext("drain");
    auto out = RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_THAT(Actions(), Contains("step act failed"));
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_THAT(Actions(), Contains("requeue 77/run0 done"));
    ASSERT_TRUE(Decision());
    EXPECT_EQ(store->Runs(0).value().size(), 1u);
}

TEST_F(CtldEpilogTest, AFailedDrainIsRecordedAsFailed) {
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid79});
    slurm.FailNext("drain", 1, ErrorCode::kInvalid);
    ASSERT_TRUE(RunController().ok);
    EXPECT_THAT(Actions(), Contains("drain node2 failed"));
    EXPECT_THAT(Actions(), Contains("reboot node2 done"));
}

TEST_F(CtldEpilogTest, AFailedRequeueIsExplained) {
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid79});
    slurm.FailNext("requeue", 1, ErrorCode::kInvalid);
    ASSERT_TRUE(RunController().ok);
    EXPECT_THAT(Actions(), Contains("requeue 77/run0 failed"));
    EXPECT_THAT(Decision()->explanation, StartsWith("autoheal: requeue failed (slurm: requeue"));
    EXPECT_FALSE(store->Runs(0).value().at(0).requeued);
}

TEST_F(CtldEpilogTest, DryRunDecidesAndRecordsButDoesNothing) {
    rc.dry_run = true;
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid79});
    ASSERT_TRUE(RunController().ok);
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_THAT(Actions(), IsSupersetOf({"drain node2 dry-run", "reboot node2 dry-run"}));
    EXPECT_THAT(Decision()->explanation, StartsWith("autoheal (dry-run): would have requeued"));
}

}  // namespace
}  // namespace autoheal::remediation::testing
