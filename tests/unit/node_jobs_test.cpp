// The agent's list of the jobs on its node (agent/node_jobs.h): the step sockets in the node's
// slurmd spool folder (remediation/slurmd_steps.h), as slurmstepd names them, then slurmctld
// asked about those jobs only (the fake Slurm cluster, MemorySlurmClient, counts the calls).
#include "autoheal/agent/node_jobs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "autoheal/remediation/slurmd_steps.h"
#include "epilog_test_env.h"

namespace autoheal::agent {
namespace {

namespace fs = std::filesystem;
namespace rem = autoheal::remediation;
using rem::testing::EpilogTestEnv;

class NodeJobsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        spool = t.dir / "spool" / "node1";
        fs::create_directories(spool);
    }
    void Sockets(const std::vector<std::string>& names) {
        for (const std::string& n : names) std::ofstream(spool / n) << "";
    }
    rem::JobInfo& Job(std::uint32_t id, const std::string& state) {
        rem::JobInfo& job = t.FailedJob(id, {"node1", "node2"});
        job.state = state;
        return job;
    }
    AgentEnv Env() {
        AgentEnv env{t.config, t.rc,    t.tickets, agent,   t.engine,
                     t.slurm,  t.clock, "node1",   t.health};
        env.slurmd_spool_dir = spool.string();
        return env;
    }
    static std::vector<std::uint32_t> Ids(const std::vector<rem::JobInfo>& jobs) {
        std::vector<std::uint32_t> ids;
        ids.reserve(jobs.size());
        for (const rem::JobInfo& j : jobs) ids.push_back(j.id);
        return ids;
    }

    EpilogTestEnv t;
    AgentConfig agent;
    fs::path spool;
};

TEST_F(NodeJobsTest, StepSocketsOfThisNodeNameTheJobsEachOnce) {
    Sockets({"node1_12.4294967291", "node1_12.0", "node1_12.4294967292", "node1_7.3.1", "node1_5.0",
             "node10_99.0", "node2_13.0", "node1_abc.0", "node1_14", "node1_15.0.x", "node1_16.",
             "node1_.0", "cred_state", "job00012", "node1_4294967296.0"});
    auto ids = rem::JobsWithStepsIn(spool.string(), "node1");
    ASSERT_TRUE(ids) << ids.error();
    EXPECT_EQ(*ids, (std::vector<std::uint32_t>{5, 7, 12}));
}

TEST_F(NodeJobsTest, AFolderThatCannotBeReadIsAnError) {
    auto ids = rem::JobsWithStepsIn((t.dir / "none").string(), "node1");
    ASSERT_FALSE(ids);
    EXPECT_EQ(ids.code(), ErrorCode::kUnavailable);
    EXPECT_NE(ids.error().find("none"), std::string::npos) << ids.error();
}

TEST_F(NodeJobsTest, SlurmdPathsExpandTheNodeAndHostAsSlurmdDoes) {
    EXPECT_EQ(rem::ExpandSlurmdPath("/var/spool/slurmd/%n", "gpu7", "h7"),
              "/var/spool/slurmd/gpu7");
    EXPECT_EQ(rem::ExpandSlurmdPath("/s/%h-%n", "gpu7", "h7"), "/s/h7-gpu7");
    EXPECT_EQ(rem::ExpandSlurmdPath("/var/spool/slurmd", "gpu7", "h7"), "/var/spool/slurmd");
    EXPECT_EQ(rem::ExpandSlurmdPath("/s/%u", "gpu7", "h7"), std::nullopt);
    EXPECT_EQ(rem::ExpandSlurmdPath("/s/%", "gpu7", "h7"), std::nullopt);
}

// Only running jobs that Slurm still knows: a stale socket (a job gone from Slurm), a finished
// job and a completing one are left out; slurmctld is asked about each job, never for its table.
TEST_F(NodeJobsTest, TheNodesRunningJobsComeFromItsStepsAndOneCallPerJob) {
    Job(12, "RUNNING");
    Job(14, "COMPLETED");
    Job(15, "RUNNING").completing = true;
    Job(20, "RUNNING");  // on the node but with no step here
    Sockets({"node1_12.0", "node1_14.0", "node1_15.0", "node1_99.4294967291"});
    auto jobs = JobsRunningHere(Env());
    ASSERT_TRUE(jobs) << jobs.error();
    EXPECT_EQ(Ids(*jobs), (std::vector<std::uint32_t>{12}));
    EXPECT_EQ(t.slurm.Count("get_job"), 4);
    EXPECT_EQ(t.slurm.Count("running_jobs"), 0);
}

TEST_F(NodeJobsTest, NoStepsNoCallToSlurm) {
    Job(12, "RUNNING");
    auto jobs = JobsRunningHere(Env());
    ASSERT_TRUE(jobs) << jobs.error();
    EXPECT_TRUE(jobs->empty());
    EXPECT_TRUE(t.slurm.calls().empty());
}

TEST_F(NodeJobsTest, SlurmNotAnsweringIsAnError) {
    Job(12, "RUNNING");
    Sockets({"node1_12.0"});
    t.slurm.FailNext("get_job", 1);
    auto jobs = JobsRunningHere(Env());
    ASSERT_FALSE(jobs);
    EXPECT_EQ(jobs.code(), ErrorCode::kUnavailable);
}

// Without a spool folder, or one that cannot be read, the whole job table as before.
TEST_F(NodeJobsTest, WithoutTheSpoolFolderTheJobTableIsListed) {
    Job(20, "RUNNING");
    AgentEnv env = Env();
    env.slurmd_spool_dir = (t.dir / "gone").string();
    auto jobs = JobsRunningHere(env);
    ASSERT_TRUE(jobs) << jobs.error();
    EXPECT_EQ(Ids(*jobs), (std::vector<std::uint32_t>{20}));
    EXPECT_EQ(t.slurm.Count("running_jobs"), 1);
    env.slurmd_spool_dir.clear();
    ASSERT_TRUE(JobsRunningHere(env));
    EXPECT_EQ(t.slurm.Count("running_jobs"), 2);
}

}  // namespace
}  // namespace autoheal::agent
