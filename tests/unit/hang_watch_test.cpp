// autoheal-agent's hang watch (agent/hang_watch.h) on the fake Slurm cluster and fake clock
// (EpilogTestEnv), the fake NVML (its utilization from a scenario file) and real files for the
// job's output, checkpoints, dump pipes (FIFOs) and flight recorder dumps (the fixtures of
// tests/fixtures/flight_recorder). The job's files are made with mtimes on the fake clock.
#include "autoheal/agent/hang_watch.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autoheal/core/files.h"
#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/remediation/job_records.h"
#include "diag_test_util.h"
#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

namespace fs = std::filesystem;
namespace rem = autoheal::remediation;
using rem::testing::EpilogTestEnv;
using ::testing::HasSubstr;

class HangWatchTest : public ::testing::Test {
  protected:
    void SetUp() override {
        t.health.nvml_library = AUTOHEAL_FAKE_NVML;
        t.health.nvml_timeout_seconds = 5;
        agent.hang_check_seconds = 10;
        agent.hang_dump_wait_seconds = 20;
        Gpus(0, 0);
    }
    void TearDown() override { ::unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO"); }

    // The node's one GPU (minor 0) at `util` percent busy, its memory at `memory` percent.
    void Gpus(unsigned util, unsigned memory) {
        const fs::path scenario = t.dir / "gpus.json";
        std::ofstream(scenario) << R"({"gpus": [{"minor": 0, "utilization": {"gpu": )" << util
                                << R"(, "memory": )" << memory << "}}]}";
        ::setenv("AUTOHEAL_FAKE_GPU_SCENARIO", scenario.c_str(), 1);
    }
    // A job running on `nodes` (batch host: the first), whose prologs recorded these options and
    // GPU 0; its output, written at the fake clock's now.
    rem::JobInfo& RunningJob(std::uint32_t id, const std::vector<std::string>& nodes,
                             const JobOptions& options) {
        rem::JobInfo& job = t.FailedJob(id, nodes, options.auto_resume.value_or(-1));
        job.state = "RUNNING";
        job.exit_code = 0;
        job.end_time = 0;
        job.std_out = (t.dir / "out.txt").string();
        for (const std::string& n : nodes) {
            rem::PrologBaseline b;
            b.time = t.clock.Now();
            b.options = options;
            b.job_gpus = "0";
            auto w = WriteFileAtomically(rem::PrologFile(t.config.state_dir, t.ctx.job_id, n),
                                         rem::PrologBaselineToJson(b, nullptr), 0640, 0755);
            EXPECT_TRUE(w) << w.error();
        }
        Output("step 1\n");
        return job;
    }
    static JobOptions Options(std::optional<int> auto_resume, std::optional<std::int64_t> hang) {
        JobOptions o;
        o.auto_resume = auto_resume;
        o.hang_timeout = hang;
        return o;
    }
    // Appends to the job's output, stamped with the fake clock's now.
    void Output(const std::string& text) {
        const fs::path out = t.dir / "out.txt";
        std::ofstream(out, std::ios::app) << text;
        Stamp(out);
    }
    void Stamp(const fs::path& path) {
        const timespec times[2] = {{t.clock.Now(), 0}, {t.clock.Now(), 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
    }
    AgentEnv Env(const std::string& node) {
        return AgentEnv{t.config, t.rc,    t.tickets, agent,   t.engine,
                        t.slurm,  t.clock, node,      t.health};
    }
    std::optional<rem::AgentRecord> Record(const std::string& job, const std::string& node) {
        auto text = ReadSmallFile(rem::AgentFile(t.config.state_dir, job, 0, node), 1 << 20);
        if (!text) return std::nullopt;
        auto r = rem::AgentRecordFromJson(*text);
        return r ? std::optional<rem::AgentRecord>(*r) : std::nullopt;
    }
    // Polls once, then again after `seconds` without progress.
    std::string Stall(HangWatch& watch, int seconds) {
        std::string log;
        for (const std::string& l : watch.Poll()) log += l + "\n";
        t.clock.Advance(std::chrono::seconds(seconds));
        for (const std::string& l : watch.Poll()) log += l + "\n";
        return log;
    }
    bool AnyDrained() {
        for (const char* n : {"node1", "node2", "node3", "node4"}) {
            if (t.slurm.node(n).drained) return true;
        }
        return false;
    }

    EpilogTestEnv t;
    AgentConfig agent;
};

TEST_F(HangWatchTest, AStoppedJobWithIdleGpusIsRequeuedAndNoNodeIsTouched) {
    RunningJob(42, {"node1", "node2"}, Options(3, 60));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    const std::string log = Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 1) << log;
    EXPECT_TRUE(t.slurm.job(42).pending);
    EXPECT_EQ(t.slurm.job(42).exc_nodes, "");
    EXPECT_FALSE(AnyDrained());
    auto rec = Record("42", "node1");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "requeue");
    EXPECT_EQ(rec->rule, "job-hang");
    EXPECT_EQ(rec->cause, "job_hang");
    EXPECT_TRUE(rec->evidence.items.empty());  // nothing of the node's
    ASSERT_EQ(rec->job_output.items.size(), 1u);
    EXPECT_EQ(rec->job_output.items[0].signature, "job-hang");
    EXPECT_EQ(rec->job_output.items[0].Field("timeout"), "60");
    EXPECT_EQ(rec->job_output.items[0].Field("gpus"), "1");
    EXPECT_EQ(rec->explanation, "autoheal: requeued 1/3 after job_hang (job-hang)");
    // Acted on once per run.
    t.clock.Advance(std::chrono::seconds(61));
    watch.Poll();
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
}

// With the node's slurmd spool folder known, the watch finds the job by its step socket and asks
// slurmctld about that job only; the cluster's job table is never listed.
TEST_F(HangWatchTest, TheJobIsFoundByItsStepOnTheNodeWithoutListingTheCluster) {
    RunningJob(42, {"node1", "node2"}, Options(3, 60));
    const fs::path spool = t.dir / "spool-node1";
    fs::create_directories(spool);
    std::ofstream(spool / "node1_42.4294967291") << "";  // the batch step's socket (a file will do)
    AgentEnv env = Env("node1");
    env.slurmd_spool_dir = spool.string();
    HangWatch watch(env);
    const std::string log = Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 1) << log;
    EXPECT_EQ(t.slurm.Count("running_jobs"), 0);
    EXPECT_EQ(watch.running().size(), 1u);  // the list the requeue was decided on
}

// The killed run's epilogs: the controller finds the agent's final record, requeues nothing again
// and takes no node action on the hang (the job's own evidence).
TEST_F(HangWatchTest, TheControllerEpilogOfTheHungRunDoesNotRequeueAgain) {
    RunningJob(42, {"node1", "node2"}, Options(3, 60));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Stall(watch, 61);
    ASSERT_EQ(t.slurm.Count("requeue"), 1);
    rem::JobInfo& killed = t.FailedJob(42, {"node1", "node2"}, 3, 1);
    killed.being_requeued = true;
    killed.start_time = killed.end_time + 2;
    auto out = t.RunController();
    ASSERT_TRUE(out.ok) << out.summary;
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_FALSE(AnyDrained());
}

TEST_F(HangWatchTest, BusyGpusOrAGrowingOutputAreNoHang) {
    RunningJob(42, {"node1"}, Options(3, 60));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Gpus(90, 40);  // kernels running, memory moving: working
    Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    Gpus(0, 0);
    t.clock.Advance(std::chrono::seconds(30));
    Output("step 2\n");  // progress: the output grew
    t.clock.Advance(std::chrono::seconds(40));
    watch.Poll();
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    t.clock.Advance(std::chrono::seconds(30));
    watch.Poll();  // 70 s since it grew, but 30 s since this agent saw it grow
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    t.clock.Advance(std::chrono::seconds(30));
    watch.Poll();
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
}

// A rank stuck in a collective spins an NCCL kernel: NVML shows its GPU fully busy, but its
// memory at rest. That is no work: the job is hung all the same.
TEST_F(HangWatchTest, AGpuSpinningWithItsMemoryAtRestIsNoWork) {
    RunningJob(42, {"node1"}, Options(3, 60));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Gpus(100, 0);
    const std::string log = Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 1) << log;
    auto rec = Record("42", "node1");
    ASSERT_TRUE(rec);
    ASSERT_EQ(rec->job_output.items.size(), 1u);
    EXPECT_EQ(rec->job_output.items[0].Field("util"), "100");
    EXPECT_EQ(rec->job_output.items[0].Field("mem_util"), "0");
    EXPECT_FALSE(AnyDrained());
}

TEST_F(HangWatchTest, ANewCheckpointIsProgress) {
    RunningJob(42, {"node1"}, Options(3, 60));
    const fs::path ckpt = t.dir / "ckpt";
    fs::create_directories(ckpt);
    JobOptions o = Options(3, 60);
    o.ckpt_dir = ckpt.string();
    rem::PrologBaseline b;
    b.options = o;
    b.job_gpus = "0";
    ASSERT_TRUE(WriteFileAtomically(rem::PrologFile(t.config.state_dir, "42", "node1"),
                                    rem::PrologBaselineToJson(b, nullptr), 0640, 0755));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    watch.Poll();
    t.clock.Advance(std::chrono::seconds(50));
    fs::create_directories(ckpt / "step_100");
    Stamp(ckpt / "step_100");
    t.clock.Advance(std::chrono::seconds(20));
    watch.Poll();
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
}

TEST_F(HangWatchTest, OnlyJobsWithATimeoutAreWatchedAndOnlyByTheBatchHost) {
    agent.hang_timeout_seconds = 60;  // the site's default: for --auto-resume jobs
    RunningJob(42, {"node1"}, Options(std::nullopt, std::nullopt));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue") + t.slurm.Count("end_job"), 0);
    RunningJob(43, {"node1"}, Options(3, 0));  // --hang-timeout=off
    Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    RunningJob(44, {"node1", "node2"}, Options(3, std::nullopt));  // the site's default
    const AgentEnv other = Env("node2");
    HangWatch not_batch_host(other);
    Stall(not_batch_host, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(t.slurm.job(44).pending, true);
}

TEST_F(HangWatchTest, AJobWithoutAutoResumeThatSetATimeoutIsEndedWithTheExplanation) {
    RunningJob(42, {"node1"}, Options(std::nullopt, 60));
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Stall(watch, 61);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    EXPECT_EQ(t.slurm.Count("end_job"), 1);
    auto rec = Record("42", "node1");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "end");
    EXPECT_EQ(rec->explanation,
              "autoheal: ended the job: job_hang (job-hang) on node1; not requeued: the job did "
              "not ask for --auto-resume");
    EXPECT_FALSE(AnyDrained());
}

// With the flight recorder on: the ranks are asked through their pipes (the batch host's, and the
// other node's agent answers the request in the run's agent record), their dumps read: the rank
// that never entered the collective leaves its node out of the rerun, and only that.
TEST_F(HangWatchTest, TheDumpsAskedForNameTheCulpritsNodeWhichIsOnlyExcluded) {
    RunningJob(77, {"node1", "node2"}, Options(3, 60));
    const fs::path fr = FlightRecorderDir(t.config.state_dir, "77", 0);
    std::vector<int> readers;
    for (const char* node : {"node1", "node2"}) {
        fs::create_directories(fr / node);
        const int first = std::string(node) == "node1" ? 0 : 4;
        for (int r = first; r < first + 4; ++r) {
            const fs::path pipe =
                fr / node / (std::string(kFrPipePrefix) + std::to_string(r) + ".pipe");
            ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
            readers.push_back(::open(pipe.c_str(), O_RDONLY | O_NONBLOCK));  // the rank's end
        }
    }
    const AgentEnv env1 = Env("node1");
    const AgentEnv env2 = Env("node2");
    HangWatch batch_host(env1);
    HangWatch second(env2);
    const std::string log = Stall(batch_host, 61);
    EXPECT_THAT(log, HasSubstr("asked 4 rank(s) on node1"));
    EXPECT_EQ(t.slurm.Count("requeue"), 0);  // waiting for the dumps
    auto pending = Record("77", "node1");
    ASSERT_TRUE(pending);
    EXPECT_NE(pending->dump_requested, 0);
    EXPECT_TRUE(pending->job_action.empty());
    std::vector<std::string> answered = second.Poll();
    ASSERT_EQ(answered.size(), 1u);
    EXPECT_THAT(answered[0], HasSubstr("asked 4 rank(s) on node2"));
    char byte = 0;
    for (int fd : readers) {
        EXPECT_EQ(::read(fd, &byte, 1), 1);
        ::close(fd);
    }
    // The ranks dump (the fixture: rank 5, on node2, never entered ALLREDUCE #42).
    fs::copy(fs::path(AUTOHEAL_SOURCE_DIR) / "tests/fixtures/flight_recorder/hang", fr,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    for (const auto& e : fs::recursive_directory_iterator(fr)) {
        if (e.is_regular_file()) Stamp(e.path());
    }
    t.clock.Advance(std::chrono::seconds(10));
    const std::vector<std::string> acted = batch_host.Poll();
    EXPECT_EQ(t.slurm.Count("requeue"), 1);
    EXPECT_EQ(t.slurm.job(77).exc_nodes, "node2");
    EXPECT_FALSE(AnyDrained());
    auto rec = Record("77", "node1");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->job_action, "requeue");
    EXPECT_EQ(rec->rule, "nccl-flight-recorder-culprit");
    EXPECT_THAT(rec->explanation, HasSubstr("rank 5 on node2 never entered ALLREDUCE #42"));
}

// A desync in the dumps is the job's own bug: not requeued as infrastructure.
TEST_F(HangWatchTest, ADesyncInTheDumpsIsTheJobsOwnBug) {
    RunningJob(78, {"node1"}, Options(3, 60));
    const fs::path fr = FlightRecorderDir(t.config.state_dir, "78", 0);
    fs::create_directories(fr / "node1");
    const fs::path pipe = fr / "node1" / (std::string(kFrPipePrefix) + "0.pipe");
    ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
    const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
    const AgentEnv env = Env("node1");
    HangWatch watch(env);
    Stall(watch, 61);
    fs::copy(fs::path(AUTOHEAL_SOURCE_DIR) / "tests/fixtures/flight_recorder/desync", fr / "node1",
             fs::copy_options::recursive);
    t.clock.Advance(std::chrono::seconds(21));  // agent.hang_dump_wait passed
    watch.Poll();
    ::close(reader);
    EXPECT_EQ(t.slurm.Count("requeue"), 0);
    auto rec = Record("78", "node1");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->rule, "nccl-flight-recorder-desync");
    EXPECT_EQ(rec->cause, "user_error");
    EXPECT_FALSE(AnyDrained());
}

}  // namespace
}  // namespace autoheal::agent
