// The safety policies on the real local cluster. The job_submit plugin's cluster policy: start.sh's
// autoheal.yaml caps --auto-resume at 5 (the SPANK plugin allows 10), the quarantine file
// (state_dir's default, quarantine.json) is reloaded within a few seconds without restarting
// slurmctld, a broken quarantine file or autoheal.yaml keeps the previous policy, and an
// auto-resume job cannot be made non-requeueable with scontrol update. The breaker and the
// decision's bounded waits (PolicyScenario, on the scenario harness of e2e_harness.h): what
// autoheal holds out is counted from Slurm's node states, concurrent prologs of one job drain no
// more than the bound between them, a webhook that never answers and an incident store that fails
// cost no decision.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "e2e_harness.h"
#include "http_server.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* kScript = "#!/bin/bash\ntrue\n";
// The reloader checks every 2 s; this leaves room for a loaded machine.
constexpr auto kReloadLimit = std::chrono::seconds(8);

std::string QuarantinePath() { return ClusterDir() + "/state/autoheal/quarantine.json"; }

std::string SlurmctldLog() { return ReadFile(ClusterDir() + "/log/slurmctld.log"); }

std::string ConfigPath() { return ClusterDir() + "/etc/autoheal/autoheal.yaml"; }

// Replaces autoheal.yaml by rename, as a config manager would.
void WriteConfig(const std::string& text) {
    const std::string tmp = ConfigPath() + ".test-tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, ConfigPath());
}

std::size_t CountOf(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

// Replaces the quarantine file the way its writer does (rename), so the plugin never reads
// half a file.
void WriteQuarantine(const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(QuarantinePath()).parent_path());
    const std::string tmp = QuarantinePath() + ".test-tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, QuarantinePath());
}

std::string QuarantineOf(const std::string& node, std::int64_t seconds_from_now) {
    return R"({"nodes": [{"node": ")" + node + R"(", "until": )" +
           std::to_string(std::time(nullptr) + seconds_from_now) +
           R"(, "reason": "autoheal: test quarantine"}]})";
}

// Held jobs are never scheduled; every one submitted here is cancelled at the end of the test.
class PolicyTest : public ::testing::Test {
  protected:
    void TearDown() override {
        for (const std::string& id : held_) RunCommand({"scancel", id});
        if (touched_quarantine_) {
            std::filesystem::remove(QuarantinePath());
            // Leave the cluster as the other tests expect it: nothing excluded.
            EXPECT_TRUE(WaitForExcNodeList({}, "(null)")) << "quarantine not cleared";
        }
    }

    std::optional<std::string> SubmitHeld(std::vector<std::string> args,
                                          CommandResult* result = nullptr) {
        args.insert(args.begin(), "--hold");
        auto id = Submit(args, kScript, result);
        if (id) held_.push_back(*id);
        return id;
    }

    // Submits held jobs until one gets `want` as its ExcNodeList (the plugin reloaded).
    bool WaitForExcNodeList(const std::vector<std::string>& args, const std::string& want) {
        return WaitUntil(
            [&] {
                auto id = SubmitHeld(args);
                return id && ShowJob(*id)["ExcNodeList"] == want;
            },
            kReloadLimit);
    }

    void SetQuarantine(const std::string& text) {
        touched_quarantine_ = true;
        WriteQuarantine(text);
    }

    std::vector<std::string> held_;
    bool touched_quarantine_ = false;
};

TEST_F(PolicyTest, AutoResumeAboveTheClusterCapIsRefused) {
    // plugstack.conf lets the SPANK plugin take up to 10; autoheal.yaml's policy says 5.
    CommandResult r;
    auto id = SubmitHeld({"--auto-resume=8"}, &r);
    EXPECT_FALSE(id.has_value()) << "job " << r.out << " was accepted";
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("autoheal: --auto-resume=8 is more than this cluster allows (5)"));

    id = SubmitHeld({"--auto-resume=5", "--no-requeue"}, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*id)["Requeue"], "1");
}

TEST_F(PolicyTest, QuarantinedNodeIsExcludedUnlessTheJobAsksForIt) {
    SetQuarantine(R"({"nodes": [{"node": "node1", "until": )" +
                  std::to_string(std::time(nullptr) + 3600) +
                  R"(, "reason": "autoheal: faulty_gpu inc=1"},
                     {"node": "node2", "until": )" +
                  std::to_string(std::time(nullptr) - 10) + R"(, "reason": "expired"}]})");
    ASSERT_TRUE(WaitForExcNodeList({}, "node1")) << SlurmctldLog();

    // A job that names node1 gets it; one that already excludes another node keeps that too.
    CommandResult r;
    auto asks = SubmitHeld({"-w", "node1"}, &r);
    ASSERT_TRUE(asks.has_value()) << r.err;
    auto job = ShowJob(*asks);
    EXPECT_EQ(job["ReqNodeList"], "node1");
    EXPECT_EQ(job["ExcNodeList"], "(null)");
    auto excludes = SubmitHeld({"-x", "node3"}, &r);
    ASSERT_TRUE(excludes.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*excludes)["ExcNodeList"], "node[1,3]");

    EXPECT_THAT(SlurmctldLog(), HasSubstr("quarantined nodes excluded: exc_nodes+=node1"));
}

// Issue 13.3: one entry for a node slurm.conf does not have made every sbatch fail with "Invalid
// node name specified". The plugin drops names slurmctld does not know; the known one applies.
TEST_F(PolicyTest, UnknownNodeInTheQuarantineDoesNotFailSubmissions) {
    const std::string until = std::to_string(std::time(nullptr) + 3600);
    SetQuarantine(R"({"nodes": [{"node": "retired9", "until": )" + until +
                  R"(, "reason": "autoheal: gone from slurm.conf"},
                     {"node": "node2", "until": )" +
                  until + R"(, "reason": "autoheal: faulty_gpu"}]})");
    ASSERT_TRUE(WaitForExcNodeList({}, "node2")) << SlurmctldLog();
    CommandResult r;
    auto id = SubmitHeld({}, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("Invalid node name")));
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], "node2");
}

TEST_F(PolicyTest, BrokenQuarantineFileKeepsThePreviousPolicy) {
    SetQuarantine(QuarantineOf("node3", 3600));
    ASSERT_TRUE(WaitForExcNodeList({}, "node3")) << SlurmctldLog();

    const std::string complaint =
        "autoheal: job_submit: quarantine: " + QuarantinePath() + ": not valid JSON";
    const std::size_t before = CountOf(SlurmctldLog(), complaint);
    SetQuarantine("{\"nodes\": [{\"node\": \"node4\", ");
    ASSERT_TRUE(
        WaitUntil([&] { return CountOf(SlurmctldLog(), complaint) > before; }, kReloadLimit))
        << SlurmctldLog();
    CommandResult r;
    auto id = SubmitHeld({}, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], "node3");
    // Logged once per change, not once per check.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    EXPECT_EQ(CountOf(SlurmctldLog(), complaint), before + 1);

    // A good file again is taken.
    SetQuarantine(QuarantineOf("node4", 3600));
    EXPECT_TRUE(WaitForExcNodeList({}, "node4")) << SlurmctldLog();
}

// The plugin reads autoheal.yaml without yaml-cpp (core/config_scan.h): a changed cap is taken,
// a file it refuses (here a flow mapping) is logged and the previous cap stays.
TEST_F(PolicyTest, BrokenConfigKeepsThePreviousPolicy) {
    const std::string original = ReadFile(ConfigPath());
    const std::string cap_line = "  max_auto_resume: 5\n";
    const std::size_t at = original.find("policy:\n" + cap_line);
    ASSERT_NE(at, std::string::npos) << original;
    std::string three = original;
    three.replace(at + 8, cap_line.size(), "  max_auto_resume: 3   # lowered\n");
    std::string broken = original;
    broken.replace(at, 8 + cap_line.size(), "policy: {max_auto_resume: 7}\n");
    struct Restore {
        std::string text;
        ~Restore() { WriteConfig(text); }
    } restore{original};

    auto refused_with = [&](const std::string& cap) {
        CommandResult r;
        auto id = SubmitHeld({"--auto-resume=4"}, &r);
        return !id && r.err.find("cluster allows (" + cap + ")") != std::string::npos;
    };
    WriteConfig(three);
    ASSERT_TRUE(WaitUntil([&] { return refused_with("3"); }, kReloadLimit)) << SlurmctldLog();

    const auto line =
        std::count(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
    const std::string complaint = "autoheal: job_submit: config: " + ConfigPath() + ":" +
                                  std::to_string(line) +
                                  ":9: policy: expected a mapping of settings";
    WriteConfig(broken);
    ASSERT_TRUE(WaitUntil([&] { return SlurmctldLog().find(complaint) != std::string::npos; },
                          kReloadLimit))
        << SlurmctldLog();
    EXPECT_THAT(SlurmctldLog(),
                HasSubstr("(found a flow collection): keeping the previous policy"));
    EXPECT_TRUE(refused_with("3"));

    WriteConfig(original);
    CommandResult r;
    EXPECT_TRUE(
        WaitUntil([&] { return SubmitHeld({"--auto-resume=5"}, &r).has_value(); }, kReloadLimit))
        << r.err;
}

// policy.flight_recorder: off: --flight-recorder=on is refused at submit, and an --auto-resume
// job's tasks get no recorder variables (the SPANK plugin reads the key in each task).
TEST_F(PolicyTest, SiteFlightRecorderOffRefusesOnAndSetsNothing) {
    const std::string original = ReadFile(ConfigPath());
    const std::size_t at = original.find("policy:\n");
    ASSERT_NE(at, std::string::npos) << original;
    std::string off = original;
    off.insert(at + 8, "  flight_recorder: off\n");
    struct Restore {
        std::string text;
        ~Restore() { WriteConfig(text); }
    } restore{original};
    WriteConfig(off);
    CommandResult r;
    ASSERT_TRUE(WaitUntil(
        [&] {
            return !SubmitHeld({"--flight-recorder=on"}, &r) &&
                   r.err.find(
                       "--flight-recorder=on is not allowed on this cluster "
                       "(policy.flight_recorder: off)") != std::string::npos;
        },
        kReloadLimit))
        << r.err << SlurmctldLog();
    auto id =
        Submit({"--auto-resume"}, "#!/bin/bash\necho recorder; env | grep '^TORCH_' || true\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); })) << ShowJob(*id)["JobState"];
    const std::string out = ReadFile(ClusterDir() + "/state/slurm-" + *id + ".out");
    EXPECT_THAT(out, HasSubstr("recorder"));
    EXPECT_THAT(out, Not(HasSubstr("TORCH_")));
}

TEST_F(PolicyTest, AutoResumeJobCannotBeMadeNonRequeueable) {
    CommandResult r;
    auto id = SubmitHeld({"--auto-resume=2"}, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_EQ(ShowJob(*id)["Requeue"], "1");
    CommandResult update = RunCommand({"scontrol", "update", "jobid=" + *id, "requeue=0"});
    if (SlurmctldLog().find("built against another Slurm's job record layout") !=
        std::string::npos) {
        // A plugin built from another release's source (scripts/deps.sh says so when the exact
        // source is not to be had) must leave the record alone: slurmctld stays up and the
        // update passes unchecked.
        EXPECT_EQ(ShowJob(*id)["Requeue"], "0");
        GTEST_SKIP() << "job_submit/autoheal was built from another Slurm release's source: "
                        "job_modify checks are off, as they must be";
    }
    EXPECT_NE(update.exit_code, 0) << update.out;
    EXPECT_EQ(ShowJob(*id)["Requeue"], "1");
    EXPECT_THAT(SlurmctldLog(),
                HasSubstr("JobId=" + *id +
                          " uid=0: refused requeue=0: autoheal: this job asked for --auto-resume; "
                          "it must stay requeueable"));

    // Other updates of that job, and requeue=0 on other jobs, go through.
    update = RunCommand({"scontrol", "update", "jobid=" + *id, "comment=still-fine"});
    EXPECT_EQ(update.exit_code, 0) << update.err;
    auto plain = SubmitHeld({"--requeue"}, &r);
    ASSERT_TRUE(plain.has_value()) << r.err;
    update = RunCommand({"scontrol", "update", "jobid=" + *plain, "requeue=0"});
    EXPECT_EQ(update.exit_code, 0) << update.err;
    EXPECT_EQ(ShowJob(*plain)["Requeue"], "0");
}

// ------------------------------------------------------------------ breaker and bounded waits

class PolicyScenario : public ScenarioTest {
  protected:
    // A "training" job of `name` on `node` (no auto-resume unless asked), failed at its fifth
    // step with Xid 64 (a row remap failure: drain, reset_gpu, rma_ticket) on that node.
    std::optional<std::string> FailWithXid64(TrainingJob* job, const std::string& node,
                                             std::vector<std::string> args = {}) {
        args.insert(args.end(), {"-w", node, "--gpus-per-node=1"});
        auto id = Track(job->Submit(args));
        if (!id) return id;
        job->FailRun(*id, 0, 5, [&](const std::vector<std::string>&) {
            InjectKernel(node, Xid(64, "0000:3b:00", "Row remapping failed"));
        });
        return id;
    }
    static bool Drained(const std::string& node) {
        return ShowNode(node)["State"].find("DRAIN") != std::string::npos;
    }
};

constexpr const char* kLabBreaker = "  breaker: {max_fraction: 0.5, max_nodes: 2, window: 1h}\n";

// Issue 13.2/13 "Done when": a systemic fault. With at most one node out at once, the first
// failing node is drained; a second, in a later job, is held, not drained: the breaker counts
// the node still drained from Slurm's node states (not what this decision did), records the
// held actions and the alert, and quarantines the node instead.
TEST_F(PolicyScenario, WithOneNodeOutASecondFailingNodeIsHeldAndTheHoldRecorded) {
    ConfigOverride one(kLabBreaker, "  breaker: {max_fraction: 0.5, max_nodes: 1}\n");
    TrainingJob first{"breaker-1"};
    ASSERT_TRUE(FailWithXid64(&first, "node1"));
    ASSERT_TRUE(WaitUntil([] { return Drained("node1"); })) << ShowNode("node1")["State"];
    TrainingJob second{"breaker-2"};
    auto id = FailWithXid64(&second, "node2");
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(second, *id).empty(); }));
    ASSERT_TRUE(WaitUntil(
        [] { return !Query("SELECT outcome FROM actions WHERE action = 'alert'").empty(); }));
    EXPECT_FALSE(Drained("node2")) << ShowNode("node2")["State"];
    EXPECT_TRUE(Drained("node1"));
    EXPECT_THAT(Query("SELECT detail FROM actions WHERE target = 'node2' AND outcome = 'held'"),
                ::testing::Contains(HasSubstr("drain (breaker)")));
    EXPECT_THAT(Query("SELECT target FROM actions WHERE action = 'drain' AND outcome = 'done'"),
                ::testing::ElementsAre("node1"));
    // The breaker holds what takes node2 out, not its RMA ticket.
    EXPECT_THAT(Query("SELECT outcome FROM actions WHERE action = 'rma_ticket' AND target = "
                      "'node2'"),
                ::testing::ElementsAre("opened"));
    EXPECT_THAT(AutohealLog(), HasSubstr("breaker open: 1 of 4 nodes already taken out by "
                                         "autoheal or resetting a GPU (limit 1)"));
    EXPECT_THAT(ReadFile(StateDir() + "/quarantine.json"), HasSubstr("\"node2\""));
}

// Issue 13.2: the prologs of one two-node job fail their health checks at once, with autoheal
// already holding one node out and two allowed: under the breaker lock exactly one of them
// drains its node, the other alerts and leaves its node in service.
TEST_F(PolicyScenario, ConcurrentPrologsOfOneJobDrainNoMoreThanTheBreakerAllows) {
    ASSERT_EQ(RunCommand({"scontrol", "update", "nodename=node4", "state=drain",
                          "reason=autoheal: faulty_gpu (test)"})
                  .exit_code,
              0);
    // An admin's drain does not count: it only keeps the job on node1 and node2.
    ASSERT_EQ(RunCommand({"scontrol", "update", "nodename=node3", "state=drain",
                          "reason=admin: cabling (test)"})
                  .exit_code,
              0);
    const std::string scenarios = ClusterDir() + "/lib/fake-gpu/scenarios/";
    for (const char* node : {"node1", "node2"}) {
        std::ofstream(scenarios + node + ".json")
            << R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                             "remapped_rows": {"failure": true}},
                            {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})";
    }
    struct RemoveScenarios {
        std::string dir;
        ~RemoveScenarios() {
            std::filesystem::remove(dir + "node1.json");
            std::filesystem::remove(dir + "node2.json");
        }
    } remove{scenarios};
    CommandResult r;
    auto id = Track(Submit({"-N", "2", "--gpus-per-node=2", "--health-check=quick"},
                           "#!/bin/bash\necho ran on $SLURMD_NODENAME\n", &r));
    ASSERT_TRUE(id) << r.err;
    // Both prologs have ended: one drained its node, the other alerted.
    const std::string alert = "not drained, job=" + *id + " allowed to start";
    ASSERT_TRUE(WaitUntil([&] {
        const std::string log = AutohealLog();
        return log.find(alert) != std::string::npos &&
               (log.find("node=node1 drained") != std::string::npos ||
                log.find("node=node2 drained") != std::string::npos);
    })) << AutohealLog();
    EXPECT_NE(Drained("node1"), Drained("node2"))
        << ShowNode("node1")["State"] << " " << ShowNode("node2")["State"];
    EXPECT_THAT(AutohealLog(), HasSubstr("breaker open: 2 of 4 nodes already taken out by "
                                         "autoheal (limit 2)"));
}

// Issue 13.4: a ticket webhook that accepts the connection and never answers holds up no
// decision: the job is decided and requeued well within the controller's wait, the ticket left
// queued in the store.
TEST_F(PolicyScenario, AWebhookThatNeverAnswersHoldsUpNoDecisionOrRequeue) {
    HttpServer hanging({200}, 0, /*hang=*/true);
    ConfigOverride webhook("  tickets:\n    sinks:\n      - {type: webhook, url: '" +
                           hanging.url() + "', timeout_seconds: 30}\n");
    TrainingJob job{"hanging-webhook"};
    auto id = FailWithXid64(&job, "node1", {"--auto-resume=1"});
    ASSERT_TRUE(id);
    const auto failed = std::chrono::steady_clock::now();
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(25)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - failed)
            .count();
    EXPECT_LT(seconds, 25);
    EXPECT_TRUE(Drained("node1"));
    // The RMA ticket is queued, not delivered (its delivery runs after the decision).
    EXPECT_EQ(Query("SELECT count(*) FROM tickets"), std::vector<std::string>{"1"});
    EXPECT_TRUE(Query("SELECT id FROM tickets WHERE state = 'delivered'").empty());
    RunCommand({"scancel", *id});
}

// Issue 13.5: an incident store that fails (here locked by another writer for the whole
// decision) stops no remediation: the node is drained and the job requeued; the run is spooled
// and imported into the store by a later job end.
TEST_F(PolicyScenario, AFailingIncidentStoreStillDrainsAndRequeuesAndSpoolsTheRun) {
    // The store exists (every job end opens it), then a writer holds it.
    CommandResult r;
    auto warm = Track(Submit({"-w", "node3"}, kScript, &r));
    ASSERT_TRUE(warm) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return !Query("SELECT job FROM runs").empty(); }));
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((StateDir() + "/incidents.sqlite").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    TrainingJob job{"failing-store"};
    auto id = FailWithXid64(&job, "node1", {"--auto-resume=1"});
    ASSERT_TRUE(id);
    const bool requeued =
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(60));
    const bool spooled = WaitForAutohealLog("store failing: run kept in the spool");
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    ASSERT_TRUE(requeued) << AutohealLog();
    ASSERT_TRUE(spooled) << AutohealLog();
    EXPECT_TRUE(Drained("node1"));
    EXPECT_TRUE(Query("SELECT job FROM incidents WHERE job = '" + *id + "'").empty());
    RunCommand({"scancel", *id});
    // The next job end imports the spooled run.
    auto next = Track(Submit({"-w", "node3"}, kScript, &r));
    ASSERT_TRUE(next) << r.err;
    EXPECT_TRUE(WaitUntil([&] {
        return !Query("SELECT node FROM incidents WHERE job = '" + *id + "' AND node = 'node1'")
                    .empty();
    })) << AutohealLog();
    EXPECT_THAT(Query("SELECT outcome FROM actions WHERE action = 'drain' AND target = 'node1'"),
                ::testing::ElementsAre("done"));
}

}  // namespace
}  // namespace autoheal::testing
