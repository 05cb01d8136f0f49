// autoheal-agent's fault handling (agent/fault_handler.h) against the fake Slurm cluster, the
// fake clock, a real SQLite store and the shipped rules (EpilogTestEnv), then the controller
// epilog on the same run: one requeue and one incident per fault. Also the kernel follower on a
// real file, the agent settings and the heartbeat.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/agent/kernel_follower.h"
#include "autoheal/core/resume_record.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/remediation/agent_config.h"
#include "autoheal/remediation/agent_heartbeat.h"
#include "diag_test_util.h"
#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

using remediation::testing::EpilogTestEnv;
using remediation::testing::XidLine;
namespace rem = autoheal::remediation;
using rem::ParseAgentConfig;

const std::string kXid79 = XidLine(79, "0000:3b:00.0", "GPU has fallen off the bus.");
const std::string kXid13 = XidLine(13, "0000:3b:00.0", "Graphics SM Warp Exception");

class AgentTest : public ::testing::Test {
  protected:
    // A job running on `nodes`, whose prolog recorded --auto-resume=cap (none when cap < 0).
    rem::JobInfo& RunningJob(std::uint32_t id, const std::vector<std::string>& nodes, int cap) {
        rem::JobInfo& job = t.FailedJob(id, nodes, cap);
        job.state = "RUNNING";
        job.exit_code = 0;
        job.end_time = 0;
        t.reports.clear();
        for (const std::string& n : nodes) {
            rem::PrologBaseline b;
            b.time = t.clock.Now();
            b.options = t.ctx.options;
            auto w = WriteFileAtomically(rem::PrologFile(t.config.state_dir, t.ctx.job_id, n),
                                         rem::PrologBaselineToJson(b, nullptr), 0640, 0755);
            EXPECT_TRUE(w) << w.error();
        }
        return job;
    }
    FaultHandled Handle(const std::string& node, const std::string& line) {
        const AgentEnv env{t.config, t.rc,    t.tickets, agent,   t.engine,
                           t.slurm,  t.clock, node,      t.health};
        return HandleKernelLines(env, line + "\n");
    }
    // What the controller epilog does first with the agents' stores (ImportSpooledRuns).
    int Import() { return rem::ImportSpooledRuns(t.Env()); }
    int SpooledFiles() {
        int n = 0;
        std::error_code ec;
        for (const auto& e :
             std::filesystem::directory_iterator(rem::AgentSpoolDir(t.config.state_dir), ec)) {
            n += e.path().extension() == ".sqlite" ? 1 : 0;
        }
        return n;
    }
    std::optional<rem::AgentRecord> Record(const std::string& job, const std::string& node) {
        auto text = ReadSmallFile(rem::AgentFile(t.config.state_dir, job, 0, node), 1 << 20);
        if (!text) return std::nullopt;
        auto r = rem::AgentRecordFromJson(*text);
        if (!r) return std::nullopt;
        return *r;
    }
    int IncidentsOn(const std::string& node) {
        int n = 0;
        for (const rem::IncidentRow& i : t.Incidents()) n += i.node == node ? 1 : 0;
        return n;
    }

    EpilogTestEnv t;
    AgentConfig agent;
};

TEST_F(AgentTest, Xid79RequeuesAnAutoResumeJobExcludingTheNodeAndDrainsIt) {
    RunningJob(42, {"node1", "node2"}, 3);
    const FaultHandled h = Handle("node2", kXid79);
    EXPECT_TRUE(h.interrupting);
    EXPECT_EQ(h.rule, "xid-79-fallen-off-bus");
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(t.slurm.job(42).exc_nodes, "node2");
    EXPECT_TRUE(t.slurm.job(42).pending);
    EXPECT_TRUE(t.slurm.node("node2").drained);
    EXPECT_NE(t.slurm.node("node2").reason.find("faulty_gpu xid=79"), std::string::npos);
    EXPECT_NE(t.slurm.node("node2").reason.find("inc="), std::string::npos);
    EXPECT_FALSE(t.slurm.node("node1").drained);
    auto rec = Record("42", "node2");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "requeue");
    EXPECT_EQ(rec->outcome, "done");
    EXPECT_TRUE(rec->EndedRun());
    EXPECT_EQ(rec->rule, "xid-79-fallen-off-bus");
    EXPECT_FALSE(rec->evidence.items.empty());
    auto resume = ReadSmallFile(ResumeRecordPath(t.config.state_dir, "42"), 1 << 16);
    ASSERT_TRUE(resume);
    EXPECT_NE(resume->find("node2"), std::string::npos);
    // The node opened no store: its fault's store is handed to the controller, which imports it.
    EXPECT_EQ(IncidentsOn("node2"), 0);
    EXPECT_EQ(SpooledFiles(), 1);
    EXPECT_EQ(Import(), 2);  // the node's incident and the job's
    EXPECT_EQ(IncidentsOn("node2"), 1);
    EXPECT_EQ(SpooledFiles(), 0);
    bool requeue_recorded = false;
    for (const std::string& a : t.Actions()) requeue_recorded |= a == "requeue 42/run0 done";
    EXPECT_TRUE(requeue_recorded);
}

TEST_F(AgentTest, TheAgentNeverOpensTheStoreOnItsNode) {
    t.store.reset();
    std::filesystem::remove(t.dir / "incidents.sqlite");
    RunningJob(42, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    Handle("node3", kXid79);  // idle
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_TRUE(t.slurm.node("node3").drained);
    EXPECT_FALSE(std::filesystem::exists(t.dir / "incidents.sqlite"));
    EXPECT_EQ(SpooledFiles(), 2);
}

// One Xid 79 is one fault: the controller epilog of the run the agent requeued does not count the
// agent's incident of that run (imported before it, by another job's end) as a repeat.
TEST_F(AgentTest, TheAgentsIncidentOfTheSameRunIsNoRepeatForTheEscalation) {
    RunningJob(42, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    ASSERT_EQ(Import(), 2);
    t.FailedJob(42, {"node1", "node2"}, 3, 1).being_requeued = true;
    t.Kernel("node2", {kXid79});
    auto out = t.RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_EQ(IncidentsOn("node2"), 1);
    for (const std::string& a : t.Actions()) {
        EXPECT_EQ(a.find("rma"), std::string::npos) << a;
    }
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
}

TEST_F(AgentTest, ASecondXid79OnTheSameGpuInALaterJobStillOpensAnRma) {
    RunningJob(42, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    ASSERT_EQ(Import(), 2);
    t.clock.Advance(std::chrono::hours(1));
    RunningJob(50, {"node2", "node3"}, 3);
    Handle("node2", kXid79);
    t.FailedJob(50, {"node2", "node3"}, 3, 1).being_requeued = true;
    t.Kernel("node2", {kXid79});
    auto out = t.RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    bool rma = false;
    for (const std::string& a : t.Actions()) rma |= a.rfind("rma_ticket node2", 0) == 0;
    EXPECT_TRUE(rma) << out.summary;
}

TEST_F(AgentTest, TheControllerEpilogAfterTheAgentRequeuesNothingAndOpensNoSecondIncident) {
    RunningJob(42, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    const std::string reason = t.slurm.node("node2").reason;
    // The killed run ends; its epilogs see the same Xid in the kernel log, and Slurm's restart
    // count already up (the requeue came first).
    rem::JobInfo& killed = t.FailedJob(42, {"node1", "node2"}, 3, 1);
    killed.being_requeued = true;
    // Slurm moves a requeued job's start time to its next begin (the requeue's early begin
    // time), after the reports were written: they are this run's all the same.
    killed.start_time = killed.end_time + 2;
    t.Kernel("node2", {kXid79});
    auto out = t.RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_NE(out.summary.find("reports=2/2"), std::string::npos) << out.summary;
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(IncidentsOn("node2"), 1);
    EXPECT_EQ(t.slurm.node("node2").reason, reason);
    // Its epilog imported the agent's store into the incidents it had recorded (same keys): the
    // agent's actions are on them.
    EXPECT_EQ(SpooledFiles(), 0);
    bool requeue_recorded = false;
    for (const std::string& a : t.Actions()) requeue_recorded |= a == "requeue 42/run0 done";
    EXPECT_TRUE(requeue_recorded);
}

TEST_F(AgentTest, TheAgentLeavesARunTheControllerRequeuedAlone) {
    RunningJob(42, {"node1", "node2"}, 3);
    t.slurm.job(42).being_requeued = true;  // the job ended and was requeued meanwhile
    Handle("node2", kXid79);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    auto rec = Record("42", "node2");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "none");
}

TEST_F(AgentTest, AnXid13IsNotAnInterruptingCause) {
    RunningJob(42, {"node1", "node2"}, 3);
    const FaultHandled h = Handle("node2", kXid13);
    EXPECT_FALSE(h.interrupting);
    EXPECT_EQ(t.slurm.Count("running_jobs"), 0);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    EXPECT_EQ(t.slurm.Count("drain"), 0);
    EXPECT_FALSE(Record("42", "node2"));
}

TEST_F(AgentTest, AJobWithoutAutoResumeIsEndedWithAnExplanation) {
    RunningJob(43, {"node1", "node2"}, -1);
    Handle("node2", kXid79);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    EXPECT_EQ(t.slurm.Count("end_job"), 1);
    EXPECT_EQ(t.slurm.job(43).state, "CANCELLED");
    const std::string& comment = t.slurm.job(43).admin_comment;
    EXPECT_EQ(comment.rfind("autoheal: ended the job: faulty_gpu on node2", 0), 0) << comment;
    EXPECT_NE(comment.find("did not ask for --auto-resume"), std::string::npos) << comment;
    auto decision = t.Decision(0);
    ASSERT_TRUE(decision);
    EXPECT_EQ(decision->explanation, comment);  // the node epilog appends it to the output
    auto rec = Record("43", "node2");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "end");
    EXPECT_TRUE(t.slurm.node("node2").drained);
}

TEST_F(AgentTest, OnFaultNotifyLeavesTheJobRunning) {
    agent.on_fault = OnFault::kNotify;
    RunningJob(44, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    EXPECT_EQ(t.slurm.Count("end_job"), 0);
    EXPECT_EQ(t.slurm.job(44).state, "RUNNING");
    EXPECT_NE(t.slurm.job(44).admin_comment.find("left running"), std::string::npos);
    EXPECT_TRUE(t.slurm.node("node2").drained);  // no new job lands there
    auto rec = Record("44", "node2");
    ASSERT_TRUE(rec);
    EXPECT_FALSE(rec->EndedRun());
}

TEST_F(AgentTest, OnFaultEndEndsEvenAnAutoResumeJob) {
    agent.on_fault = OnFault::kEnd;
    RunningJob(45, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    EXPECT_EQ(t.slurm.job(45).state, "CANCELLED");
    EXPECT_NE(t.slurm.job(45).admin_comment.find("agent.on_fault is end"), std::string::npos);
}

TEST_F(AgentTest, AFaultOnAnIdleNodeDrainsIt) {
    const FaultHandled h = Handle("node3", kXid79);
    ASSERT_EQ(h.done.size(), 2u);
    EXPECT_EQ(h.done[1].rfind("handed to the controller: ", 0), 0u) << h.done[1];
    EXPECT_TRUE(t.slurm.node("node3").drained);
    EXPECT_NE(t.slurm.node("node3").reason.find("inc="), std::string::npos);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    Import();
    EXPECT_EQ(IncidentsOn("node3"), 1);
    Handle("node3", kXid79);  // the same record again: the same incident
    Import();
    EXPECT_EQ(IncidentsOn("node3"), 1);
}

TEST_F(AgentTest, WithTheBreakerOpenTheAgentHoldsTheDrainButRequeuesTheJob) {
    for (const char* n : {"node3", "node4"}) {
        auto d = t.slurm.Drain(n, "autoheal: faulty_gpu xid=79 inc=1");
        ASSERT_TRUE(d);
    }
    RunningJob(46, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    EXPECT_FALSE(t.slurm.node("node2").drained);
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(t.slurm.job(46).exc_nodes, "node2");
    Import();
    bool held = false;
    for (const std::string& a : t.Actions()) held = held || a.find("held node2 held") == 0;
    EXPECT_TRUE(held);
}

TEST_F(AgentTest, AnAdminDrainIsLeftAsItIs) {
    t.slurm.node("node2").drained = true;
    t.slurm.node("node2").reason = "bad fan, ticket 77";
    RunningJob(47, {"node1", "node2"}, 3);
    Handle("node2", kXid79);
    EXPECT_EQ(t.slurm.node("node2").reason, "bad fan, ticket 77");
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
}

TEST_F(AgentTest, TheControllerJudgesANodeWithoutReportOnItsAgentRecord) {
    RunningJob(48, {"node1", "node2"}, -1);
    agent.on_fault = OnFault::kNotify;
    Handle("node2", kXid79);
    // The job then fails by itself; node2's epilog never reports (the node hung).
    t.FailedJob(48, {"node1", "node2"}, 3);
    t.reports.erase(t.reports.begin() + 1);
    auto out = t.RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_NE(out.summary.find("cause=faulty_gpu"), std::string::npos) << out.summary;
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(t.slurm.job(48).exc_nodes, "node2");
}

// The shipped rules mark the causes of issue 15 as interrupting, and not the job's own faults.
TEST(ShippedRulesTest, MarkTheCausesThatInterruptAJob) {
    auto interrupting = [](const std::string& line) {
        diag::EvidenceSet set = diag::testing::ScanLines({line}, "kernel");
        diag::Analyze(&set);
        return diag::Diagnose(diag::testing::ShippedRules(), set, {}).interrupts_job;
    };
    for (int xid : {79, 48, 64, 94, 95, 119, 120, 140}) {
        EXPECT_TRUE(interrupting(XidLine(xid, "0000:3b:00.0", "fault"))) << "Xid " << xid;
    }
    for (int xid : {13, 31, 43, 63}) {
        EXPECT_FALSE(interrupting(XidLine(xid, "0000:3b:00.0", "fault"))) << "Xid " << xid;
    }
}

// ------------------------------------------------------------------------- kernel follower

TEST(KernelFollowerTest, ReturnsEachCompleteLineAddedAfterItStartedOnce) {
    const std::string path = ::testing::TempDir() + "/agent_kern_" + std::to_string(::getpid());
    { std::ofstream(path) << "old line\n"; }
    KernelFollower f(path, 1 << 20);
    EXPECT_EQ(f.Poll().value(), "");
    { std::ofstream(path, std::ios::app) << "new one\npartial"; }
    EXPECT_EQ(f.Poll().value(), "new one\n");
    { std::ofstream(path, std::ios::app) << " line\n"; }
    EXPECT_EQ(f.Poll().value(), "partial line\n");
    EXPECT_EQ(f.Poll().value(), "");
    { std::ofstream(path, std::ios::trunc) << "after rotation\n"; }
    EXPECT_EQ(f.Poll().value(), "after rotation\n");
    std::remove(path.c_str());
}

TEST(KernelFollowerTest, ARestartedFollowerReadsWhatCameWhileItWasDown) {
    const std::string path = ::testing::TempDir() + "/agent_kern_rs_" + std::to_string(::getpid());
    const std::string state = path + ".position";
    std::remove(state.c_str());
    { std::ofstream(path) << "before\n"; }
    {
        KernelFollower f(path, 1 << 20, state);
        EXPECT_EQ(f.Poll().value(), "");  // what was there before its first start is not its
        { std::ofstream(path, std::ios::app) << "handled\n"; }
        EXPECT_EQ(f.Poll().value(), "handled\n");
        ASSERT_TRUE(f.Save());
        { std::ofstream(path, std::ios::app) << "read, not handled\n"; }
        EXPECT_EQ(f.Poll().value(), "read, not handled\n");
    }  // killed before Save
    { std::ofstream(path, std::ios::app) << "while down\n"; }
    KernelFollower again(path, 1 << 20, state);
    EXPECT_EQ(again.Poll().value(), "read, not handled\nwhile down\n");
    ASSERT_TRUE(again.Save());
    EXPECT_FALSE(again.Save().value());  // not moved: not rewritten
    std::remove(path.c_str());
    std::remove(state.c_str());
}

TEST(KernelFollowerTest, AFileThatAppearsLaterIsReadFromItsStart) {
    const std::string path = ::testing::TempDir() + "/agent_kern_new_" + std::to_string(::getpid());
    std::remove(path.c_str());
    KernelFollower f(path, 1 << 20);
    EXPECT_EQ(f.Poll().value(), "");
    { std::ofstream(path) << "first\n"; }
    EXPECT_EQ(f.Poll().value(), "first\n");
    std::remove(path.c_str());
}

// ---------------------------------------------------------------------------- settings

TEST(AgentConfigTest, ReadsTheSettingsAndRefusesBadOnes) {
    auto c = ParseAgentConfig(
        YAML::Load("{on_fault: notify, poll_interval_ms: 100, heartbeat_interval: 30s}"), "a.yaml");
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->on_fault, OnFault::kNotify);
    EXPECT_DOUBLE_EQ(c->poll_seconds, 0.1);
    EXPECT_DOUBLE_EQ(c->heartbeat_seconds, 30);
    EXPECT_EQ(ParseAgentConfig(YAML::Node(), "a.yaml")->on_fault, OnFault::kRequeue);
    auto bad = ParseAgentConfig(YAML::Load("{on_fault: kill}"), "a.yaml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("a.yaml:1:"), std::string::npos) << bad.error();
    EXPECT_NE(bad.error().find("requeue, end or notify"), std::string::npos);
    EXPECT_FALSE(ParseAgentConfig(YAML::Load("{poll_interval_ms: 0}"), "a.yaml"));
    EXPECT_FALSE(ParseAgentConfig(YAML::Load("{pol_interval_ms: 100}"), "a.yaml"));
}

TEST(AgentConfigTest, ReadsTheCounterInterval) {
    EXPECT_DOUBLE_EQ(ParseAgentConfig(YAML::Node(), "a.yaml")->counter_seconds, 30);
    EXPECT_DOUBLE_EQ(
        ParseAgentConfig(YAML::Load("{counter_interval: 2s}"), "a.yaml")->counter_seconds, 2);
    EXPECT_DOUBLE_EQ(
        ParseAgentConfig(YAML::Load("{counter_interval: off}"), "a.yaml")->counter_seconds, 0);
    auto r = ParseAgentConfig(YAML::Load("{counter_interval: 0s}"), "a.yaml");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("counter_interval: expected a duration"), std::string::npos)
        << r.error();
}

TEST(AgentConfigTest, ReadsTheSampleInterval) {
    EXPECT_DOUBLE_EQ(ParseAgentConfig(YAML::Node(), "a.yaml")->sample_seconds, 5);
    EXPECT_DOUBLE_EQ(
        ParseAgentConfig(YAML::Load("{sample_interval: 30s}"), "a.yaml")->sample_seconds, 30);
    EXPECT_DOUBLE_EQ(
        ParseAgentConfig(YAML::Load("{sample_interval: off}"), "a.yaml")->sample_seconds, 0);
    for (const char* bad :
         {"{sample_interval: 0s}", "{sample_interval: 2h}", "{sample_interval: fast}"}) {
        auto r = ParseAgentConfig(YAML::Load(bad), "a.yaml");
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().find("sample_interval"), std::string::npos) << r.error();
    }
}

TEST(AgentConfigTest, ReadsTheHangWatchSettings) {
    EXPECT_EQ(ParseAgentConfig(YAML::Node(), "a.yaml")->hang_timeout_seconds, 0);
    auto c = ParseAgentConfig(
        YAML::Load("{hang_timeout: 20m, hang_check_interval: 5s, hang_dump_wait: 1m}"), "a.yaml");
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->hang_timeout_seconds, 1200);
    EXPECT_DOUBLE_EQ(c->hang_check_seconds, 5);
    EXPECT_DOUBLE_EQ(c->hang_dump_wait_seconds, 60);
    EXPECT_EQ(ParseAgentConfig(YAML::Load("{hang_timeout: off}"), "a.yaml")->hang_timeout_seconds,
              0);
    for (const char* bad : {"{hang_timeout: 31d}", "{hang_timeout: [1]}",
                            "{hang_check_interval: 0s}", "{hang_dump_wait: 11m}"}) {
        auto r = ParseAgentConfig(YAML::Load(bad), "a.yaml");
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().find("a.yaml:1:"), std::string::npos) << r.error();
    }
}

TEST(HeartbeatTest, IsWrittenReadBackAndKeepsItsFaultsAcrossARestart) {
    using rem::Heartbeat;
    EpilogTestEnv t;
    {
        Heartbeat h(t.config.state_dir, "node2", 100);
        h.SawFault("xid-79-fallen-off-bus", 150);
        ASSERT_TRUE(h.Write(160));
    }
    Heartbeat again(t.config.state_dir, "node2", 200);  // restarted
    ASSERT_TRUE(again.Write(210));
    const auto beats = rem::ReadHeartbeats(t.config.state_dir);
    ASSERT_EQ(beats.size(), 1u);
    EXPECT_EQ(beats[0].node, "node2");
    EXPECT_EQ(beats[0].time, 210);
    EXPECT_EQ(beats[0].started, 200);
    EXPECT_EQ(beats[0].faults, 1);
    EXPECT_EQ(beats[0].last_fault, "xid-79-fallen-off-bus");
    EXPECT_FALSE(rem::HeartbeatFromJson(R"({"version": 2, "node": "n"})"));
}

}  // namespace
}  // namespace autoheal::agent
