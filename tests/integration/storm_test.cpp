// Scenarios at a size the 4-node lab cannot hold, on a 16-node lab cluster of their own (the
// cluster16 fixture: tests/integration/CMakeLists.txt):
// - the "false-positive storm" (issue 14; NVSentinel#1710, #1629): when one job ends, the driver
//   tears down its channels on every GPU it ran on and logs Xid 45 (and often 43) on each of
//   them. Those are the job's end, not 16 faults: they take no node out, and only a node with a
//   root fault of its own is drained;
// - many jobs failing at once while the ticket webhook hangs (issue 13 point 4): every job is
//   decided and requeued; no decision waits for the webhook.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_harness.h"
#include "http_server.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kNodes = 16;
const std::string kGpu = "0000:3b:00";  // the job's GPU on each node (--gpus-per-node=1)

// What the driver logs on every GPU of a job whose work ended: its channels torn down.
void InjectTeardown(const std::vector<std::string>& nodes) {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        InjectKernel(nodes[k], Xid(45, kGpu, "Ch 00000010"));
        if (k % 3 == 0) InjectKernel(nodes[k], Xid(43, kGpu, "Ch 00000008"));
    }
}

std::vector<std::string> TakenOut() {
    return Query(
        "SELECT DISTINCT target FROM actions WHERE action IN ('drain', 'reboot', 'reset_gpu')");
}

class Storm : public ScenarioTest {
  protected:
    // Submits `job` on all 16 nodes, one GPU each, and fails its first run at step 5 with
    // `inject` (the job's node list in hand) writing the kernel records first.
    std::optional<std::string> RunAndFail(
        const TrainingJob& job,
        const std::function<void(const std::vector<std::string>&)>& inject) {
        auto id = Track(
            job.Submit({"-N", std::to_string(kNodes), "--gpus-per-node=1", "--auto-resume=1"}));
        if (!id) return id;
        job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
            ASSERT_EQ(nodes.size(), static_cast<std::size_t>(kNodes));
            inject(nodes);
        });
        EXPECT_TRUE(
            WaitUntil([&] { return !Explanation(job, *id).empty(); }, std::chrono::seconds(90)));
        return id;
    }
};

// The job's own crash (an illegal address: Xid 13 on the rank that made it) and the teardown
// Xids of all 16 GPUs: the job's own bug, no node out.
TEST_F(Storm, TeardownXidsOnSixteenNodesAfterTheJobsCrashTakeNoNodeOut) {
    TrainingJob job{"storm-crash"};
    job.message = "RuntimeError: CUDA error: an illegal memory access was encountered";
    auto id =
        Track(job.Submit({"-N", std::to_string(kNodes), "--gpus-per-node=1", "--auto-resume=1"}));
    ASSERT_TRUE(id);
    job.FailRun(*id, 0, 5, [](const std::vector<std::string>& nodes) {
        ASSERT_EQ(nodes.size(), static_cast<std::size_t>(kNodes));
        InjectKernel(nodes.front(), Xid(13, kGpu,
                                        "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): "
                                        "Out Of Range Address"));
        InjectTeardown(nodes);
    });
    ASSERT_TRUE(
        WaitUntil([&] { return !Explanation(job, *id).empty(); }, std::chrono::seconds(90)));
    EXPECT_THAT(Explanation(job, *id), HasSubstr("not requeued: the job failed by itself"));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_TRUE(TakenOut().empty()) << ::testing::PrintToString(TakenOut());
}

// One GPU falls off the bus (Xid 79) and every GPU of the job then logs the teardown: the root's
// node alone is drained and left out of the rerun.
TEST_F(Storm, OneRootFaultAmongSixteenNodesOfTeardownXidsTakesOnlyItsNodeOut) {
    TrainingJob job{"storm-root"};
    job.message = "RuntimeError: CUDA error: unspecified launch failure";
    auto id =
        Track(job.Submit({"-N", std::to_string(kNodes), "--gpus-per-node=1", "--auto-resume=1"}));
    ASSERT_TRUE(id);
    std::string culprit;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        ASSERT_EQ(nodes.size(), static_cast<std::size_t>(kNodes));
        culprit = nodes[kNodes / 2];
        InjectKernel(culprit, Xid(79, kGpu, "GPU has fallen off the bus."));
        InjectTeardown(nodes);
    });
    ASSERT_TRUE(
        WaitUntil([&] { return !Explanation(job, *id).empty(); }, std::chrono::seconds(90)));
    EXPECT_THAT(Explanation(job, *id),
                HasSubstr("requeued 1/1 after faulty_gpu on " + culprit + " (xid 79"));
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], culprit);
    EXPECT_EQ(TakenOut(), std::vector<std::string>{culprit});
}

// The tasks of array job `array` (scontrol's one line per task): JobId -> its fields.
std::map<std::string, std::map<std::string, std::string>> ArrayTasks(const std::string& array) {
    std::map<std::string, std::map<std::string, std::string>> tasks;
    std::istringstream in(RunCommand({"scontrol", "-o", "show", "job", array}).out);
    for (std::string line; std::getline(in, line);) {
        std::map<std::string, std::string> fields;
        std::istringstream words(line);
        for (std::string w; words >> w;) {
            const auto eq = w.find('=');
            if (eq != std::string::npos) fields[w.substr(0, eq)] = w.substr(eq + 1);
        }
        if (fields.count("JobId") != 0) tasks[fields["JobId"]] = fields;
    }
    return tasks;
}

class Burst : public ScenarioTest {};

// A 20-task array whose tasks all fail at once on an InfiniBand retry error, their nodes' ports
// down (network tickets and a requeue each), with the ticket webhook accepting connections and
// never answering: every task is requeued and its rerun completes, and the tickets wait in the
// store.
TEST_F(Burst, TwentyJobsFailingAtOnceWithAHangingWebhookAreAllRequeued) {
    HttpServer webhook({200}, 0, /*hang=*/true);
    ConfigOverride sink("  tickets:\n    sinks:\n      - {type: webhook, url: 'http://127.0.0.1:" +
                        std::to_string(webhook.port()) + "/tickets', timeout_seconds: 10}\n");
    const std::string go = ClusterDir() + "/state/burst-go";
    std::filesystem::remove(go);
    // Each task's script starts after its prolog took the node's kernel log cursor: a task marks
    // itself started here, and the kernel records come after all 20 marks (Slurm shows a task
    // RUNNING while its prolog still runs; a record written before the cursor is not the run's).
    const std::string started = ClusterDir() + "/state/burst-started";
    std::filesystem::remove_all(started);
    std::filesystem::create_directories(started);
    ASSERT_TRUE(GiveToUser(started, kJobUser));
    // Each task waits until all 20 run, then its first run fails as NCCL reports a dead link.
    const std::string script =
        "#!/bin/bash\n"
        "if [ \"${SLURM_RESTART_COUNT:-0}\" != 0 ]; then echo rerun done; exit 0; fi\n"
        "touch " +
        started +
        "/$SLURM_JOB_ID\n"
        "while [ ! -e " +
        go +
        " ]; do sleep 0.2; done\n"
        "echo \"$(hostname):$$:$$ [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
        "from peer 10.0.0.7<52342> with error 12, opcode 0, len 0, vendor err 129\"\n"
        "echo 'RuntimeError: NCCL communicator was aborted'\n"
        "exit 1\n";
    CommandResult r;
    auto array = Track(Submit({"--array=1-20", "-n", "1", "--auto-resume=1"}, script, &r));
    ASSERT_TRUE(array) << r.err;
    ASSERT_TRUE(WaitUntil([&] {
        const auto marks = std::filesystem::directory_iterator(started);
        return std::distance(std::filesystem::begin(marks), std::filesystem::end(marks)) == 20;
    })) << RunCommand({"squeue"}).out;
    // The nodes' own record of it (a job's output alone opens no ticket): their ports went down.
    std::set<std::string> nodes;
    for (const auto& [id, f] : ArrayTasks(*array)) nodes.insert(f.at("NodeList"));
    for (const std::string& node : nodes) {
        InjectKernel(
            node, "Nov 29 10:00:00 " + node + " kernel: mlx5_core 0000:0c:00.0 ibp12s0: Link down");
    }
    std::ofstream(go) << "x";
    std::map<std::string, std::map<std::string, std::string>> tasks;
    const bool all_requeued = WaitUntil(
        [&] {
            tasks = ArrayTasks(*array);
            int done = 0;
            for (const auto& [id, f] : tasks) {
                done += f.at("JobState") == "COMPLETED" && f.at("Restarts") == "1";
            }
            return tasks.size() == 20 && done == 20;
        },
        std::chrono::seconds(150));
    EXPECT_TRUE(all_requeued) << [&] {
        std::string s;
        for (const auto& [id, f] : tasks) {
            s += id + " " + f.at("JobState") + " restarts=" + f.at("Restarts") + "\n";
        }
        return s;
    }();
    // The webhook was tried (it hangs), and nothing it was sent is delivered.
    EXPECT_FALSE(webhook.requests().empty());
    EXPECT_FALSE(Query("SELECT id FROM tickets").empty());
    EXPECT_TRUE(Query("SELECT id FROM tickets WHERE state = 'delivered'").empty());
    std::filesystem::remove(go);
}

}  // namespace
}  // namespace autoheal::testing
