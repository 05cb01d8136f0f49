// The controller epilog's steps and its whole pipeline with a sim::MemorySlurmClient, a
// sim::ManualClock, a real SQLite store and the shipped rules: every scenario of
// tests/integration/e2e_test.cpp at the decision level, each step on its own, and the Slurm retry
// policy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <slurm/slurm_errno.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autoheal/core/resume_record.h"
#include "autoheal/remediation/node_reason.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/slurm_retry.h"
#include "epilog_test_env.h"
#include "http_server.h"

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

class CtldEpilogTest : public ::testing::Test, public EpilogTestEnv {
  protected:
    // Job 77 failed on node2 with Xid 79 in its report: its facts and reports loaded into `in`.
    JobTimes Job77WithXid79(DecisionInput* in) {
        FailedJob(77, {"node2"});
        Kernel("node2", {kXid79});
        WriteReports();
        in->rules = &engine.rules;
        in->config = &rc;
        in->job.job = "77";
        in->job.nodes = {"node2"};
        JobTimes times = LoadFacts(Env(), in).value();
        CollectReports(Env(), times, in);
        return times;
    }
    // The times LoadFacts reads for the job FailedJob made (its run started 10 minutes ago).
    JobTimes Times() {
        JobTimes t;
        t.start_time = clock.Now() - 600;
        t.end_time = clock.Now();
        return t;
    }
    // Writes `late` when the clock's `nth` sleep happens (a node epilog that finishes late).
    void ReportAtSleep(int nth, const NodeReport& late) {
        clock.on_sleep = [this, nth, late] {
            if (clock.sleeps() == nth) {
                ASSERT_TRUE(WriteFileAtomically(
                    EpilogFile(config.state_dir, late.job, late.restart, late.node),
                    NodeReportToJson(late), 0640, 0755));
            }
        };
    }
    // CollectReports for a job on `nodes`.
    DecisionInput Collect(const std::vector<std::string>& nodes) {
        DecisionInput in;
        in.job.nodes = nodes;
        CollectReports(Env(), Times(), &in);
        return in;
    }
};

// 1. Xid 79 mid-job: rebooted (drained until then), the job requeued once excluding the node.
TEST_F(CtldEpilogTest, Xid79MidJobRebootsAndRequeuesOnceExcludingTheNode) {
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
    EXPECT_THAT(Actions(), IsSupersetOf({"reboot node2 done", "requeue 77/run0 done"}));
    EXPECT_EQ(slurm.Count("drain"), 0);  // the reboot (ASAP) keeps it out until then
    ASSERT_TRUE(Decision());
    EXPECT_EQ(Decision()->explanation, why);
    EXPECT_THAT(Decision()->culprits, ElementsAre("node2"));
    bool node_incident = false;
    for (const IncidentRow& i : Incidents()) {
        if (i.node == "node2") node_incident = i.cause == "faulty_gpu";
    }
    EXPECT_TRUE(node_incident);
}

// The reboot's reason carries the node's incident: `inc=` is the id the store holds for node2's
// incident, and the reboot's recorded detail is the reason Slurm was given.
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
    EXPECT_EQ(recorded, 1);
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
    EXPECT_EQ(slurm.Count("reboot"), 1);
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
    EXPECT_THAT(Actions(), Contains("reboot node1 admin-owned"));
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

// A node that keeps failing jobs of two users with nothing to name it is drained as a lemon at
// the third; the job runs carry their users.
TEST_F(CtldEpilogTest, NodeThatKeepsFailingJobsUnexplainedIsDrainedAsALemon) {
    for (std::uint32_t job = 80; job < 83; ++job) {
        FailedJob(job, {"node2"}).user_id = job == 81 ? 2002 : 2001;
        JobOutput("node2", {});
        ASSERT_TRUE(RunController().ok);
        EXPECT_EQ(slurm.node("node2").drained, job == 82) << "after job " << job;
        clock.Advance(std::chrono::seconds(60));
    }
    EXPECT_THAT(slurm.node("node2").reason,
                StartsWith("autoheal: lemon failures=3 users=2 within=7d rule=lemon-node job=82 "
                           "inc="));
    EXPECT_THAT(store->JobRunUsers("node2", "unexplained", 0).value(), ElementsAre("2001", "2002"));
}

// Issue 13.1: one user's four `exit 1` jobs on a node drained it as a lemon. They no longer do.
TEST_F(CtldEpilogTest, OneUsersFailingJobsDoNotDrainTheNodeAsALemon) {
    for (std::uint32_t job = 80; job < 84; ++job) {
        FailedJob(job, {"node2"}).user_id = 2001;
        JobOutput("node2", {});
        ASSERT_TRUE(RunController().ok);
        clock.Advance(std::chrono::seconds(60));
    }
    EXPECT_FALSE(slurm.node("node2").Out()) << slurm.node("node2").reason;
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(store->CountJobRuns("node2", "unexplained", 0).value(), 4);
}

// A run whose node report is missing is kept as "other" in the job runs: it never counts.
TEST_F(CtldEpilogTest, RunsWithAMissingReportAreNotLemonEvidence) {
    for (std::uint32_t job = 80; job < 84; ++job) {
        FailedJob(job, {"node1", "node2"}).user_id = 2001 + job % 2;
        JobOutput("node1", {});
        reports.pop_back();  // node2's epilog never reports
        ASSERT_TRUE(RunController().ok);
        clock.Advance(std::chrono::seconds(60));
    }
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(store->CountJobRuns("node1", "unexplained", 0).value(), 0);
    EXPECT_EQ(store->CountJobRuns("node1", "other", 0).value(), 4);
}

// Issue 13.4: a webhook that accepts and never answers, and 20 jobs failing at once, one
// controller epilog process each (as slurmctld runs them). Tickets are queued in the store and
// delivered after the decision under their own lock, which a job end takes only when it is
// free: every job is decided and requeued in a few seconds. Before, delivery ran under the
// decision lock and each job end's decision waited for the others' hanging deliveries.
TEST_F(CtldEpilogTest, AWebhookThatNeverAnswersHoldsUpNoDecision) {
    autoheal::testing::HttpServer hanging({200}, 0, /*hang=*/true);
    tickets = ParseTicketConfig(YAML::Load("sinks:\n  - {type: webhook, url: '" + hanging.url() +
                                           "', timeout_seconds: 3}\n"),
                                "test", config.state_dir)
                  .value();
    ticket_budget_seconds = 1;
    // Each Xid 64 asks its node for a GPU reset, which the next decisions count as out (the
    // store is shared): the breaker would hold most of these jobs' actions, tickets included.
    // What is tested here is the webhook's hold on decisions, so the breaker lets 20 through.
    rc.breaker.max_nodes = 100;
    rc.breaker.max_fraction = 1.0;
    constexpr int kJobs = 20;
    for (int i = 0; i < kJobs; ++i) slurm.AddNode("gpu" + std::to_string(i));
    const auto start = std::chrono::steady_clock::now();
    std::vector<pid_t> children;
    for (int i = 0; i < kJobs; ++i) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // A SQLite handle must not be used across fork: this process opens its own.
            (void)store.release();
            store = std::move(IncidentStore::Open((dir / "incidents.sqlite").string()).value());
            const auto id = static_cast<std::uint32_t>(500 + i);
            const std::string node = "gpu" + std::to_string(i);
            FailedJob(id, {node});
            Kernel(node, {XidLine(64, "0000:3b:00", "Row remapping failed")});
            const bool ok = RunController().ok && slurm.Count("requeue") == 1 &&
                            slurm.job(id).restart_count == 1;
            ::_exit(ok ? 0 : 1);
        }
        children.push_back(pid);
    }
    int requeued = 0;
    for (const pid_t pid : children) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        requeued += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(requeued, kJobs);
    // Delivery: one process at a time, for at most its budget plus one sink timeout (1 + 3 s);
    // the decisions themselves take well under a second each. Before: >= 20 x 3 s.
    EXPECT_LT(seconds, 20.0);
    int runs = 0;
    for (int i = 0; i < kJobs; ++i) {
        runs += std::filesystem::exists(DecisionFile(config.state_dir, std::to_string(500 + i), 0));
    }
    EXPECT_EQ(runs, kJobs);
    EXPECT_EQ(store->Tickets(false).value().size(), static_cast<std::size_t>(kJobs));
}

// Issue 13.2: when the node states cannot be read, the breaker cannot count: the controller takes
// no node out (held, alerted, quarantined) and still requeues the job.
TEST_F(CtldEpilogTest, UnreadableNodeStatesTakeNoNodeOutButTheJobIsRequeued) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    slurm.FailNext("list_nodes", 1000, ErrorCode::kInternal);
    ASSERT_TRUE(RunController().ok);
    EXPECT_FALSE(slurm.node("node2").Out());
    EXPECT_EQ(slurm.Count("drain"), 0);
    EXPECT_EQ(slurm.Count("reboot"), 0);
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_EQ(slurm.job(77).exc_nodes, "node2");
    EXPECT_THAT(Actions(), Contains("held node2 held"));
}

// Issue 13.5: a store that fails (here locked by another writer past the busy timeout) does not
// stop remediation: the node is drained, the job requeued, the run kept in the spool; the next
// job end with a working store imports it and removes the file.
TEST_F(CtldEpilogTest, AFailingStoreStillActsAndRequeuesAndTheRunIsImportedLater) {
    sqlite3* locker = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "incidents.sqlite").c_str(), &locker), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    const auto out = RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_THAT(out.summary, HasSubstr("run kept in the spool"));
    EXPECT_TRUE(slurm.node("node2").drained);
    EXPECT_EQ(slurm.Count("requeue"), 1);
    EXPECT_EQ(slurm.job(77).exc_nodes, "node2");
    std::vector<std::string> spooled;
    for (const auto& e : std::filesystem::directory_iterator(SpoolDir(config.state_dir))) {
        spooled.push_back(e.path().filename().string());
    }
    ASSERT_EQ(spooled.size(), 1u);
    sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(locker);
    EXPECT_THAT(Incidents(), IsEmpty());

    FailedJob(78, {"node3"});
    JobOutput("node3", {});
    ASSERT_TRUE(RunController().ok);
    bool imported = false;
    for (const IncidentRow& i : Incidents())
        imported = imported || (i.job == "77" && i.node == "node2");
    EXPECT_TRUE(imported);
    EXPECT_THAT(Actions(), Contains("reboot node2 done"));
    EXPECT_THAT(Actions(), Contains("requeue 77/run0 done"));
    EXPECT_TRUE(std::filesystem::is_empty(SpoolDir(config.state_dir)));
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
    DecisionInput in = Collect({"node1", "node2"});
    ASSERT_EQ(in.reports.size(), 1u);
    EXPECT_EQ(in.reports[0].node, "node1");
    EXPECT_THAT(in.job.missing_reports, ElementsAre("node2"));
    EXPECT_GE(clock.sleeps(), 40);  // 5 s in 100 ms steps, instantly
}

TEST_F(CtldEpilogTest, CollectReportsTakesAReportThatArrivesWhileWaiting) {
    FailedJob(77, {"node1", "node2"});
    ReportAtSleep(3, reports.back());
    reports.pop_back();
    WriteReports();
    DecisionInput in = Collect({"node1", "node2"});
    EXPECT_EQ(in.reports.size(), 2u);
    EXPECT_THAT(in.job.missing_reports, IsEmpty());
    EXPECT_EQ(clock.sleeps(), 3);
}

// Job ids wrap: a folder an earlier job 77 left behind holds node2's report from before this run
// started. It is not read; node2's report of this run, when it comes, is.
TEST_F(CtldEpilogTest, CollectReportsNeverReadsAReportOfAnEarlierJobWithTheSameId) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    ReportAtSleep(5, reports.back());
    const std::int64_t fresh = reports.back().time;
    reports.back().time = slurm.job(77).start_time - 86400;  // the earlier job's
    WriteReports();
    DecisionInput in = Collect({"node1", "node2"});
    ASSERT_EQ(in.reports.size(), 2u);
    EXPECT_EQ(in.reports[1].time, fresh);
    EXPECT_THAT(in.job.missing_reports, IsEmpty());
    EXPECT_EQ(clock.sleeps(), 5);  // waited for the fresh one
}

// The stale report alone: node2 is missing, its old evidence (an Xid 79) blames nobody.
TEST_F(CtldEpilogTest, AStaleReportAloneLeavesTheNodeMissingAndBlamesNobody) {
    FailedJob(77, {"node1", "node2"});
    Kernel("node2", {kXid79});
    reports.back().time = slurm.job(77).start_time - 1;
    auto out = RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_THAT(out.summary, HasSubstr("reports=1/2 missing=node2"));
    EXPECT_FALSE(slurm.node("node2").Out());
    EXPECT_EQ(slurm.Count("requeue"), 0);
}

// A report is accepted only for its own job, node and run, written once the run started.
TEST(ReportMismatch, NamesWhatIsNotThisRunsReport) {
    NodeReport r;
    r.job = "77";
    r.node = "node2";
    r.restart = 1;
    r.time = 1000;
    EXPECT_EQ(ReportMismatch(r, "77", "node2", 1, 1000), "");
    EXPECT_EQ(ReportMismatch(r, "78", "node2", 1, 900), "for job 77");
    EXPECT_EQ(ReportMismatch(r, "77", "node1", 1, 900), "from node node2");
    EXPECT_EQ(ReportMismatch(r, "77", "node2", 2, 900), "for run 1");
    EXPECT_EQ(ReportMismatch(r, "77", "node2", 1, 1001),
              "written at 1000, before the run started at 1001");
}

// A node outside the job's allocation is never read, whatever its folder holds; a file under one
// node's name that says it is another node's is refused.
TEST_F(CtldEpilogTest, CollectReportsReadsOnlyTheAllocationsNodesOwnReports) {
    FailedJob(77, {"node1", "node2"});
    NodeReport planted = reports.front();
    planted.node = "node1";
    reports.pop_back();
    WriteReports();
    // node2's file claims to be node1's report.
    ASSERT_TRUE(WriteFileAtomically(EpilogFile(config.state_dir, "77", 0, "node2"),
                                    NodeReportToJson(planted), 0640, 0755));
    NodeReport outsider = planted;
    outsider.node = "node3";
    ASSERT_TRUE(WriteFileAtomically(EpilogFile(config.state_dir, "77", 0, "node3"),
                                    NodeReportToJson(outsider), 0640, 0755));
    DecisionInput in = Collect({"node1", "node2"});
    ASSERT_EQ(in.reports.size(), 1u);
    EXPECT_EQ(in.reports[0].node, "node1");
    EXPECT_THAT(in.job.missing_reports, ElementsAre("node2"));
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
    DecisionInput in;
    JobTimes times = Job77WithXid79(&in);
    const BreakerLock breaker(config.state_dir, 1);
    ASSERT_TRUE(breaker.held()) << breaker.error();
    auto d = DecideJob(Env(), &in, times, breaker);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->cause, "faulty_gpu");
    EXPECT_FALSE(d->breaker_open);
    EXPECT_EQ(in.cluster.nodes.size(), 4u);
    EXPECT_EQ(store->CountJobRuns("node2", "blamed", 0).value(), 1);
    times.requeued_elsewhere = true;
    in.job.job = "78";
    ctx.job_id = "78";
    auto again = DecideJob(Env(), &in, times, breaker);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->requeue);
    EXPECT_THAT(again->explanation, IsEmpty());
}

// Issue 13.2: GPU resets count. Two nodes still resetting a GPU an earlier decision asked for
// (the store's "asked" rows) hold node2's drain at the limit of 2 of 4.
TEST_F(CtldEpilogTest, DecideJobCountsGpuResetsStillRunningAgainstTheBreaker) {
    auto incident = store->RecordIncident(IncidentRecord{.time = std::time(nullptr),
                                                         .node = "node1",
                                                         .cause = "gpu_hbm_memory",
                                                         .dedup_key = "earlier"});
    ASSERT_TRUE(incident) << incident.error();
    for (const char* node : {"node1", "node3"}) {
        ASSERT_TRUE(store->RecordAction(*incident, "reset_gpu", node, "asked", "").value());
    }
    DecisionInput in;
    const JobTimes times = Job77WithXid79(&in);
    auto d = DecideJob(Env(), &in, times, BreakerLock(config.state_dir, 1));
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->breaker_open);
    EXPECT_THAT(d->breaker_note, HasSubstr("2 of 4 nodes already taken out by autoheal or "
                                           "resetting a GPU (limit 2)"));
    EXPECT_EQ(in.cluster.busy_with_asked, (std::vector<std::string>{"node1", "node3"}));
}

// Issue 13.2: a decision that could not take the breaker lock (a prolog is draining under it,
// or the shared folder is gone) cannot count what autoheal holds out: its drain is held.
TEST_F(CtldEpilogTest, ADecisionWithoutTheBreakerLockTakesNoNodeOut) {
    DecisionInput in;
    JobTimes times = Job77WithXid79(&in);
    const BreakerLock none(config.state_dir + "/nonexistent", 0);
    ASSERT_FALSE(none.held());
    auto d = DecideJob(Env(), &in, times, none);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->cause, "faulty_gpu");
    EXPECT_TRUE(d->breaker_open);
    ASSERT_EQ(d->plans.size(), 1u);
    EXPECT_THAT(d->plans[0].actions, IsEmpty());
    EXPECT_THAT(d->breaker_note, HasSubstr("under the breaker lock"));
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
    slurm.ThrowNext("reboot");
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
    Kernel("node2", {XidLine(64, "0000:3b:00", "Row Remapper Error: failed to remap row")});
    slurm.FailNext("drain", 1, ErrorCode::kInvalid);
    ASSERT_TRUE(RunController().ok);
    EXPECT_THAT(Actions(), Contains("drain node2 failed"));
    EXPECT_FALSE(slurm.node("node2").drained);
}

// A node whose reboot Slurm refuses (no RebootProgram, say) is drained instead: the GPU it lost
// must not take the next job down.
TEST_F(CtldEpilogTest, ANodeWhoseRebootFailsIsDrainedInstead) {
    FailedJob(77, {"node2"});
    Kernel("node2", {kXid79});
    slurm.FailNext("reboot", 1, ErrorCode::kInvalid);
    ASSERT_TRUE(RunController().ok);
    EXPECT_THAT(Actions(), IsSupersetOf({"reboot node2 failed", "drain node2 done"}));
    EXPECT_TRUE(slurm.node("node2").drained);
    EXPECT_THAT(slurm.node("node2").reason, StartsWith("autoheal: faulty_gpu xid=79"));
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
    EXPECT_EQ(slurm.Count("reboot"), 0);
    EXPECT_THAT(Actions(), Contains("reboot node2 dry-run"));
    EXPECT_THAT(Decision()->explanation, StartsWith("autoheal (dry-run): would have requeued"));
}

// The no-progress breaker across runs: the batch host reports the newest checkpoint, each
// requeue keeps it in resume.json with the count of requeues without progress; the 3rd requeue
// in a row without progress is refused.
TEST_F(CtldEpilogTest, NoProgressBreakerStopsTheThirdRequeueWithoutACheckpointAdvance) {
    std::vector<bool> requeued;
    for (int run = 0; run < 4; ++run) {
        FailedJob(42, {"node1", "node2"}, 10, run);
        Kernel("node2", {XidLine(79, "0000:3b:00.0", "GPU has fallen off the bus.")});
        Report("node1").checkpoint = CheckpointMark{100, 5000};  // the batch host
        auto out = RunController();
        ASSERT_TRUE(out.ok) << out.summary;
        requeued.push_back(slurm.job(42).pending);
        slurm.Boot("node2");
    }
    EXPECT_THAT(requeued, ElementsAre(true, true, true, false));
    auto resume = ResumeRecordFromJson(
        ReadSmallFile(ResumeRecordPath(config.state_dir, "42"), 1 << 16).value());
    ASSERT_TRUE(resume);
    EXPECT_EQ(resume->checkpoint_step, 100);
    EXPECT_EQ(resume->stalled_requeues, 2);
    EXPECT_THAT(*Decision(3),
                ::testing::Field(&DecisionRecord::explanation, HasSubstr("no-progress breaker")));
}

// Exit 93 (the job's "do not requeue"): not requeued, the node still handled.
TEST_F(CtldEpilogTest, ExitCode93IsNotRequeued) {
    FailedJob(42, {"node1", "node2"}, 3).exit_code = 93 << 8;
    Kernel("node2", {XidLine(79, "0000:3b:00.0", "GPU has fallen off the bus.")});
    auto out = RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_EQ(slurm.Count("requeue"), 0);
    EXPECT_TRUE(slurm.node("node2").drained);
    EXPECT_THAT(Decision(0)->explanation, HasSubstr("not requeued: the job exited 93"));
}

}  // namespace
}  // namespace autoheal::remediation::testing
