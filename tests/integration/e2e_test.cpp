// The fault-handling scenarios of issue 5 on the real local cluster (tests/cluster): faults are
// injected where the hardware would report them — a line in the node's kernel log (the lab's
// `kernel_log` file) — and the job fails the way a training job does. Everything after that is
// autoheal's: the node epilogs gather evidence, EpilogSlurmctld decides, drains, reboots (the
// lab's RebootProgram restarts the node's slurmd), opens tickets and requeues.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_harness.h"
#include "http_server.h"

namespace autoheal::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class E2E : public ScenarioTest {};

// 1. Xid 79 mid-job: the node is rebooted per the rules (drained until then), the job requeued once
//    excluding it, resumed from its last complete checkpoint, and completed.
TEST_F(E2E, Xid79MidJobRequeuesOnceExcludingTheNodeAndResumes) {
    TrainingJob job{"xid79"};
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string culprit;
    job.FailRun(*id, 0, 10, [&](const std::vector<std::string>& nodes) {
        culprit = nodes.back();
        InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(90)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    auto info = ShowJob(*id);
    EXPECT_EQ(info["Restarts"], "1");
    EXPECT_EQ(info["ExcNodeList"], culprit);
    EXPECT_THAT(Nodes(info["NodeList"]), Not(::testing::Contains(culprit)));
    EXPECT_EQ(Explanation(job, *id), "autoheal: requeued 1/3 after faulty_gpu on " + culprit +
                                         " (xid 79, GPU 0000:3b:00.0); excluded " + culprit);
    const std::string out = ReadFile(job.output(*id));
    EXPECT_THAT(out, HasSubstr("resumed at step 10 from " + job.ckpt() + "/step_10"));
    EXPECT_THAT(out, HasSubstr("last=[autoheal: requeued 1/3 after faulty_gpu on " + culprit));
    EXPECT_THAT(out, HasSubstr("excluded=[" + culprit + "]"));
    EXPECT_THAT(out, HasSubstr("completed at step 60"));
    // Rebooted (the lab's RebootProgram ran for that node).
    EXPECT_THAT(ReadFile(ClusterDir() + "/log/reboots.log"), HasSubstr("reboot " + culprit));
    EXPECT_THAT(
        Query("SELECT action || ' ' || target || ' ' || outcome FROM actions"),
        ::testing::IsSupersetOf({"reboot " + culprit + " done", "requeue " + *id + "/run0 done"}));
    EXPECT_EQ(Query("SELECT cause FROM incidents WHERE node = '" + culprit + "'"),
              std::vector<std::string>{"faulty_gpu"});
}

// 2a. The job's own Python exception: no node action, no requeue, a clear explanation.
TEST_F(E2E, PythonExceptionIsTheJobsOwnBug) {
    TrainingJob job{"pyerr"};
    job.message =
        "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n"
        "    loss = model(batch) / n\nZeroDivisionError: division by zero";
    auto id = Track(job.Submit({"-N", "1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    job.FailRun(*id, 0, 5, [](const std::vector<std::string>&) {});
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }))
        << ShowJob(*id)["JobState"];
    // The batch host appends the explanation before its epilog ends, and EpilogSlurmctld may
    // still be finishing (tickets, metrics, old job folders): the job stays COMPLETING until
    // both have exited (SLURM-LAB.md).
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); })) << ShowJob(*id)["JobState"];
    EXPECT_EQ(ShowJob(*id)["JobState"], "FAILED");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_THAT(Explanation(job, *id),
                HasSubstr("autoheal: not requeued: the job failed by itself (user_error"));
    EXPECT_THAT(Explanation(job, *id), HasSubstr("ZeroDivisionError"));
    EXPECT_TRUE(Query("SELECT action FROM actions WHERE action IN ('drain','reboot')").empty());
}

// 2c. The production layout (SlurmUser=slurm, a job of an unprivileged user, jobs/ owned by
//     slurm): the controller, as slurm, reads every node's report (written by root on the node,
//     given to slurm, unreadable by users) and its decision reaches the batch host, which appends
//     the explanation to the output the user owns.
TEST_F(E2E, AnUnprivilegedUsersJobIsDecidedWithEveryNodesReport) {
    TrainingJob job{"asuser"};
    job.user = kOtherJobUser;
    job.message = "ValueError: the user's own bug";
    auto id = Track(job.Submit({"-N", "2", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    EXPECT_EQ(ShowJob(*id)["UserId"].rfind(std::string(kOtherJobUser) + "(", 0), 0u)
        << ShowJob(*id)["UserId"];
    job.FailRun(*id, 0, 5, [](const std::vector<std::string>&) {});
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    EXPECT_THAT(Explanation(job, *id), HasSubstr("autoheal: not requeued"));
    std::string summary;
    ASSERT_TRUE(WaitUntil([&] {
        std::istringstream in(AutohealLog());
        for (std::string line; std::getline(in, line);) {
            if (line.find("epilog-ctld: job=" + *id + " run=0 ") != std::string::npos)
                summary = line;
        }
        return !summary.empty();
    }));
    EXPECT_THAT(summary, HasSubstr(" reports=2/2"));
    EXPECT_THAT(summary, Not(HasSubstr("missing=")));
    const struct passwd* slurm = ::getpwnam("slurm");
    ASSERT_NE(slurm, nullptr);
    const std::string run0 = StateDir() + "/jobs/" + *id + "/run0";
    int reports = 0;
    for (const auto& e : fs::directory_iterator(run0)) {
        struct stat st {};
        ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_uid, slurm->pw_uid) << e.path();
        if (e.path().string().ends_with(".epilog.json")) {
            ++reports;
            EXPECT_EQ(st.st_mode & 07777, 0640u) << e.path();
        }
    }
    EXPECT_EQ(reports, 2);
    // The incident store is the controller's, local, and slurm's.
    struct stat store {};
    ASSERT_EQ(::stat((StateDir() + "/incidents.sqlite").c_str(), &store), 0);
    EXPECT_EQ(store.st_uid, slurm->pw_uid);
    struct stat out {};
    ASSERT_EQ(::stat(job.output(*id).c_str(), &out), 0);
    EXPECT_EQ(out.st_uid, ::getpwnam(kOtherJobUser)->pw_uid);
}

// 2b. An Xid 13 burst (the application's illegal address): the GPU is fine, the job is not.
TEST_F(E2E, Xid13BurstIsNotTheNodesFault) {
    TrainingJob job{"xid13"};
    job.message = "RuntimeError: CUDA error: an illegal memory access was encountered";
    auto id = Track(job.Submit({"-N", "1", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string node;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        node = nodes.front();
        for (int i = 0; i < 5; ++i) {
            InjectKernel(node, Xid(13, "0000:3b:00",
                                   "Graphics SM Warp Exception on (GPC 1, TPC 2, "
                                   "SM 0): Out Of Range Address"));
        }
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_THAT(Explanation(job, *id), HasSubstr("not requeued: the job failed by itself"));
    // The node may still be COMPLETING for a moment after the explanation is written.
    EXPECT_TRUE(WaitUntil([&] { return ShowNode(node)["State"] == "IDLE"; }))
        << ShowNode(node)["State"] << " " << ShowNode(node)["Reason"];
    EXPECT_TRUE(Query("SELECT action FROM actions WHERE action IN ('drain','reboot')").empty());
}

// 3. NCCL watchdog timeouts on every rank, hardware evidence on one node: only it is blamed.
TEST_F(E2E, NcclTimeoutsEverywhereBlameOnlyTheNodeWithHardwareEvidence) {
    TrainingJob job{"nccl"};
    std::string msg;
    for (int rank = 0; rank < 4; ++rank) {
        msg += "[rank" + std::to_string(rank) +
               "]:[E1129 11:38:40.882201 88201 ProcessGroupNCCL.cpp:616] [Rank " +
               std::to_string(rank) +
               "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15804, "
               "OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000) ran for "
               "600047 milliseconds before timing out.\n";
    }
    job.message = msg + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError";
    auto id = Track(job.Submit({"-N", "4", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    // On the job's GPU (--gpus-per-node=1: minor 0, 0000:3b:00.0): a fault on a GPU the job did
    // not have would be node3's, not this job's (DecisionTest.AFaultOnAGpuTheJobDidNotHave...).
    job.FailRun(*id, 0, 5, [](const std::vector<std::string>&) {
        InjectKernel("node3", Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], "node3");
    EXPECT_THAT(Explanation(job, *id),
                HasSubstr("requeued 1/3 after faulty_gpu on node3 (xid 79, GPU 0000:3b:00.0); "
                          "excluded node3"));
    EXPECT_EQ(Query("SELECT DISTINCT target FROM actions WHERE action = 'reboot'"),
              std::vector<std::string>{"node3"});
}

// 4. Two nodes under one leaf switch lose their network at once: one network incident naming
//    the switch and one network ticket; no node RMAs, no drains.
TEST_F(E2E, TwoNodesUnderOneLeafLosingNetworkIsOneSwitchIncident) {
    TrainingJob job{"net"};
    job.message =
        "NCCL WARN NET/IB : Got completion from peer 10.0.0.2<59632> with error 12, "
        "opcode 0, len 0, vendor err 129 (Recv)";
    auto id = Track(job.Submit({"-N", "2", "--switches=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::vector<std::string> hit;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        hit = nodes;
        for (const std::string& n : nodes) {
            InjectKernel(n,
                         "Nov 29 10:00:00 gpu-host kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 "
                         "Link DOWN");
        }
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    const std::string leaf = hit.front() == "node1" || hit.front() == "node2" ? "leaf1" : "leaf2";
    EXPECT_EQ(Query("SELECT node FROM incidents WHERE rule = 'leaf-switch-correlation'"),
              std::vector<std::string>{leaf});
    // Tickets are delivered after the decision is written (and the explanation appended).
    EXPECT_TRUE(WaitUntil([] { return !SpoolTickets("network-").empty(); }));
    const auto network = SpoolTickets("network-");
    ASSERT_EQ(network.size(), 1u);
    EXPECT_THAT(network.front(), HasSubstr("\"switch\":\"" + leaf + "\""));
    EXPECT_TRUE(SpoolTickets("rma-").empty());
    EXPECT_TRUE(Query("SELECT action FROM actions WHERE action IN ('drain','rma_ticket')").empty());
    EXPECT_THAT(Explanation(job, *id), HasSubstr("network_switch_cable on switch " + leaf));
}

// 5. Faults everywhere at once: the breaker holds; autoheal alerts instead of taking the cluster
//    out (the lab allows 2 of 4 nodes).
TEST_F(E2E, FaultsEverywhereTripTheBreaker) {
    TrainingJob job{"breaker"};
    auto id = Track(job.Submit({"-N", "4", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    job.FailRun(*id, 0, 5, [](const std::vector<std::string>& nodes) {
        for (const std::string& n : nodes) {
            InjectKernel(n, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
        }
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    const auto rebooted = Query(
        "SELECT DISTINCT target FROM actions WHERE action = 'reboot' AND "
        "outcome = 'done'");
    EXPECT_EQ(rebooted.size(), 2u);
    EXPECT_EQ(Query("SELECT DISTINCT target FROM actions WHERE outcome = 'held'").size(), 2u);
    EXPECT_EQ(Query("SELECT outcome FROM actions WHERE action = 'alert'"),
              std::vector<std::string>{"raised"});
    EXPECT_THAT(AutohealLog(), HasSubstr("ALERT: breaker open"));
    const std::string quarantine = ReadFile(StateDir() + "/quarantine.json");
    for (const std::string& held :
         Query("SELECT DISTINCT target FROM actions WHERE outcome = 'held'")) {
        EXPECT_THAT(quarantine, HasSubstr("\"" + held + "\""));
    }
}

// 5b. GPU resets count (issue 13.2). With room for one node out, a GPU reset still running on one
//     node (the lab's reset made to take 15 s) holds the next decision's reboot of another node:
//     no Slurm state shows the reset, the store's "asked" row does.
TEST_F(E2E, AGpuResetStillRunningCountsAgainstTheBreaker) {
    ConfigOverride breaker("  breaker: {max_fraction: 0.5, max_nodes: 2, window: 1h}\n",
                           "  breaker: {max_fraction: 0.5, max_nodes: 1, window: 1h}\n");
    const std::string reset = ClusterDir() + "/bin/fake-gpu-reset";
    ConfigOverride slow(
        "  gpu_reset_command: [" + reset + ", \"{gpu}\"]\n",
        "  gpu_reset_command: [/bin/sh, -c, 'sleep 15; exec " + reset + " \"$0\"', \"{gpu}\"]\n");
    TrainingJob a{"reset-a"};
    TrainingJob b{"reset-b"};
    // On two nodes (--exclusive: a node has two GPUs).
    auto id_a = Track(a.Submit({"-N", "1", "--gpus-per-node=1", "--exclusive", "--auto-resume=3"}));
    auto id_b = Track(b.Submit({"-N", "1", "--gpus-per-node=1", "--exclusive", "--auto-resume=3"}));
    ASSERT_TRUE(id_a && id_b);
    std::string node_a, node_b;
    a.FailRun(*id_a, 0, 5, [&](const std::vector<std::string>& nodes) {
        node_a = nodes.front();
        InjectKernel(node_a, Xid(48, "0000:3b:00", "DBE (Double Bit Error) ECC Error (0x0)"));
    });
    ASSERT_TRUE(WaitUntil([&] {
        return Query(
                   "SELECT target FROM actions WHERE action = 'reset_gpu' AND outcome = "
                   "'asked'") == std::vector<std::string>{node_a};
    })) << AutohealLog();
    b.FailRun(*id_b, 0, 5, [&](const std::vector<std::string>& nodes) {
        node_b = nodes.front();
        InjectKernel(node_b, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_NE(node_a, node_b);
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(b, *id_b).empty(); }));
    EXPECT_THAT(
        Query("SELECT detail FROM actions WHERE action = 'held' AND target = '" + node_b + "'"),
        ::testing::Contains(HasSubstr("reboot (breaker)")));
    EXPECT_TRUE(
        Query("SELECT target FROM actions WHERE action = 'reboot' AND outcome = 'done'").empty());
    EXPECT_THAT(AutohealLog(), HasSubstr("1 of 4 nodes already taken out by autoheal or "
                                         "resetting a GPU (limit 1)"));
    // The reset's result (the node's word: done) replaces its row.
    EXPECT_TRUE(WaitUntil(
        [&] {
            return Query("SELECT outcome FROM actions WHERE action = 'reset_gpu'") ==
                   std::vector<std::string>{"done"};
        },
        std::chrono::seconds(60)))
        << AutohealLog();
}

// 5c. Issue 17: ranks that ran different collectives at one sequence number (a desync; the
//     dumps of tests/fixtures/flight_recorder/desync, written by each rank as PyTorch does on
//     its watchdog's timeout) are the job's own bug: not requeued, no node touched.
TEST_F(E2E, AFlightRecorderDesyncIsTheJobsOwnBug) {
    const std::string dir = ClusterDir() + "/state/e2e-desync";
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy(std::string(AUTOHEAL_SOURCE_DIR) + "/tests/fixtures/flight_recorder/desync", dir);
    ASSERT_TRUE(GiveToUser(dir, kJobUser));
    const std::string script =
        "#!/bin/bash\n"
        "srun --ntasks-per-node=2 bash -c 'cp " +
        dir +
        "/nccl_trace_rank_${SLURM_PROCID} ${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}${SLURM_PROCID}'\n"
        "echo 'torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective "
        "operation timeout'\n"
        "exit 1\n";
    CommandResult r;
    auto id = Track(Submit(
        {"-N", "2", "--ntasks-per-node=2", "--gpus-per-node=1", "--auto-resume=3"}, script, &r));
    ASSERT_TRUE(id) << r.err;
    const std::string out = ClusterDir() + "/state/slurm-" + *id + ".out";
    ASSERT_TRUE(WaitUntil([&] { return ReadFile(out).find("autoheal: ") != std::string::npos; },
                          std::chrono::seconds(90)))
        << ReadFile(out);
    EXPECT_THAT(ReadFile(out), HasSubstr("autoheal: not requeued: the job failed by itself"));
    EXPECT_THAT(ReadFile(out), HasSubstr("ALLREDUCE"));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_TRUE(
        Query("SELECT id FROM actions WHERE action IN ('drain', 'reboot', 'reset_gpu')").empty());
}

// 6. A node an admin drained by hand is never resumed, rebooted or re-labelled by autoheal.
TEST_F(E2E, AdminDrainedNodeIsNeverTouched) {
    TrainingJob job{"admin"};
    auto id = Track(job.Submit({"-N", "1", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string node;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        node = nodes.front();
        ASSERT_EQ(RunCommand({"scontrol", "update", "nodename=" + node, "state=drain",
                              "reason=admin: replacing fan"})
                      .exit_code,
                  0);
        InjectKernel(node, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    EXPECT_EQ(ShowNode(node)["Reason"].substr(0, 25), "admin: replacing fan [roo");
    EXPECT_THAT(ShowNode(node)["State"], HasSubstr("DRAIN"));
    EXPECT_THAT(ReadFile(ClusterDir() + "/log/reboots.log"), Not(HasSubstr("reboot " + node)));
    EXPECT_EQ(
        Query("SELECT outcome FROM actions WHERE action = 'reboot' AND target = '" + node + "'"),
        std::vector<std::string>{"admin-owned"});
    EXPECT_TRUE(
        Query("SELECT outcome FROM actions WHERE action = 'drain' AND target = '" + node + "'")
            .empty());
}

// 7. A job that keeps failing on fresh nodes stops at its requeue cap with an explanation.
TEST_F(E2E, RequeueCapStopsAJobThatKeepsFailing) {
    TrainingJob job{"cap"};
    auto id = Track(job.Submit({"-N", "1", "--gpus-per-node=1", "--auto-resume=1"}));
    ASSERT_TRUE(id);
    std::string first, second;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        first = nodes.front();
        InjectKernel(first, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }));
    job.FailRun(*id, 1, 10, [&](const std::vector<std::string>& nodes) {
        second = nodes.front();
        InjectKernel(second, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(WaitUntil([&] {
        return Explanation(job, *id).find("not requeued") != std::string::npos;
    })) << Explanation(job, *id);
    EXPECT_NE(first, second);
    EXPECT_EQ(ShowJob(*id)["Restarts"], "1");
    EXPECT_EQ(Explanation(job, *id),
              "autoheal: not requeued: faulty_gpu on " + second +
                  " (xid 79, GPU 0000:3b:00.0), but the job already restarted 1/1 times "
                  "(--auto-resume=1)");
}

// 8. The ticket webhook is down during the fault: the ticket is delivered once it is back.
TEST_F(E2E, TicketWebhookDownDuringTheFaultIsDeliveredLater) {
    // A port with nobody listening, then a server on it.
    int port = 0;
    {
        HttpServer probe({200});
        port = probe.port();
    }
    ConfigOverride webhook(
        "  tickets:\n    retry_initial_seconds: 1\n    sinks:\n"
        "      - {type: webhook, url: 'http://127.0.0.1:" +
        std::to_string(port) + "/tickets', timeout_seconds: 2}\n");
    TrainingJob job{"webhook"};
    auto id = Track(job.Submit({"-N", "1", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string node;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        node = nodes.front();
        InjectKernel(node, Xid(64, "0000:3b:00", "Row remapping failed"));
    });
    ASSERT_TRUE(WaitUntil([&] { return !Explanation(job, *id).empty(); }));
    ASSERT_TRUE(WaitUntil(
        [&] { return !Query("SELECT state FROM tickets WHERE state = 'failed'").empty(); }));
    EXPECT_THAT(Query("SELECT last_error FROM tickets"),
                ::testing::ElementsAre(HasSubstr("webhook")));
    HttpServer server({200}, port);
    // The next job end delivers what is due.
    CommandResult r;
    auto next = Track(Submit({"-N", "1"}, "#!/bin/bash\ntrue\n", &r));
    ASSERT_TRUE(next) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return !server.requests().empty(); }, std::chrono::seconds(60)));
    EXPECT_THAT(server.requests().front().body, HasSubstr("\"kind\":\"rma\""));
    EXPECT_THAT(server.requests().front().body, HasSubstr("\"node\":\"" + node + "\""));
    ASSERT_TRUE(WaitUntil([&] {
        return Query("SELECT state FROM tickets") == std::vector<std::string>{"delivered"};
    }));
}

// Issue 13.1: jobs that keep failing unexplained on a node (here `exit 3`) drain it as a lemon
// only when they are of lemon.min_users (2) distinct users: three of one user's leave it IDLE
// (today's code drained it at the third), a fourth of another user drains it.
TEST_F(E2E, NodeThatKeepsFailingJobsOfTwoUsersUnexplainedIsDrainedAsALemon) {
    const char* users[] = {kJobUser, kJobUser, kJobUser, kOtherJobUser};
    for (int i = 0; i < 4; ++i) {
        CommandResult r;
        auto id =
            Track(Submit({"-w", "node2"}, "#!/bin/bash\necho 'step 12: training stopped'\nexit 3\n",
                         &r, users[i]));
        ASSERT_TRUE(id) << r.err;
        ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }));
        ASSERT_TRUE(WaitUntil([&] {
            return Query("SELECT count(*) FROM job_runs WHERE job = '" + *id + "'") ==
                   std::vector<std::string>{"1"};
        }));
        if (i < 3) {
            EXPECT_TRUE(WaitUntil([] { return ShowNode("node2")["State"] == "IDLE"; }))
                << "after job " << i + 1 << ": " << ShowNode("node2")["State"] << " "
                << ShowNode("node2")["Reason"];
        }
    }
    ASSERT_TRUE(WaitUntil([] {
        return ShowNode("node2")["State"].find("DRAIN") != std::string::npos;
    })) << ShowNode("node2")["State"];
    EXPECT_THAT(ShowNode("node2")["Reason"],
                ::testing::StartsWith("autoheal: lemon failures=4 users=2 within=7d"));
    EXPECT_EQ(Query("SELECT DISTINCT outcome FROM job_runs"),
              std::vector<std::string>{"unexplained"});
    EXPECT_EQ(Query("SELECT count(DISTINCT job_user) FROM job_runs"),
              std::vector<std::string>{"2"});
}

// The prolog obeys the breaker too: with autoheal already holding as many nodes as it may, a
// failing health check alerts and lets the job start instead of draining one more node.
TEST_F(E2E, PrologHealthFailureBeyondTheBreakerAlertsInsteadOfDraining) {
    for (const char* n : {"node3", "node4"}) {
        ASSERT_EQ(RunCommand({"scontrol", "update", std::string("nodename=") + n, "state=drain",
                              "reason=autoheal: faulty_gpu (test)"})
                      .exit_code,
                  0);
    }
    const std::string scenario = ClusterDir() + "/lib/fake-gpu/scenarios/node1.json";
    std::ofstream(scenario) << R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                                   "remapped_rows": {"failure": true}},
                                  {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})";
    CommandResult r;
    auto id = Track(Submit({"-w", "node1", "--gpus-per-node=2", "--health-check=quick"},
                           "#!/bin/bash\necho ran on $SLURMD_NODENAME\n", &r));
    ASSERT_TRUE(id) << r.err;
    const bool finished = WaitUntil([&] { return JobFinished(*id); });
    fs::remove(scenario);
    ASSERT_TRUE(finished);
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_THAT(ShowNode("node1")["State"], Not(HasSubstr("DRAIN")));
    EXPECT_THAT(AutohealLog(), HasSubstr("ALERT: breaker open: 2 of 4 nodes already taken out by "
                                         "autoheal (limit 2); node=node1 not drained, job=" +
                                         *id));
}

// The admin's commands on what autoheal did: an HBM fault (Xid 64 and a failed row remap in NVML)
// drains a node and opens an RMA ticket; status, incidents, node, tickets and metrics show it;
// replay backtests a rule edit; resume returns the node after the repair, and refuses a node an
// admin drained.
TEST_F(E2E, AdminCommandsShowAndUndoWhatAutohealDid) {
    auto cli = [](std::vector<std::string> args) {
        args.insert(args.begin(), AUTOHEAL_CLI);
        return RunProcess(args, {"AUTOHEAL_CONFIG=" + ClusterDir() + "/etc/autoheal/autoheal.yaml",
                                 "SLURM_CONF=" + ClusterDir() + "/etc/slurm.conf"});
    };
    TrainingJob job{"admin"};
    job.steps = 30;
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string node;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        node = nodes.back();
        InjectKernel(node, Xid(64, "0000:3b:00", "Row Remapper Error: failed to remap a row"));
        std::ofstream(ClusterDir() + "/lib/fake-gpu/scenarios/" + node + ".json")
            << R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
                   "remapped_rows": {"uncorrectable": 4, "failure": true}},
                  {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})";
    });
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(90)))
        << ReadFile(job.output(*id));
    fs::remove(ClusterDir() + "/lib/fake-gpu/scenarios/" + node + ".json");
    ASSERT_THAT(ShowNode(node)["State"], HasSubstr("DRAIN"));

    auto r = cli({"status", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto status = nlohmann::json::parse(r.out);
    ASSERT_EQ(status["held"].size(), 1u) << r.out;
    EXPECT_EQ(status["held"][0]["node"], node);
    EXPECT_THAT(status["held"][0]["reason"].get<std::string>(),
                ::testing::StartsWith("autoheal: gpu_hbm_memory xid=64 gpu=0000:3b:00.0 rule="));
    ASSERT_EQ(status["held"][0]["tickets"].size(), 1u);
    EXPECT_EQ(status["held"][0]["tickets"][0]["kind"], "rma");
    EXPECT_EQ(status["breaker"]["open"], false);
    EXPECT_EQ(status["breaker"]["taken_out"], 1);
    EXPECT_EQ(status["breaker"]["limit"], 2);
    r = cli({"status"});
    EXPECT_THAT(r.out, HasSubstr("breaker: closed (1 of 2 nodes"));
    EXPECT_THAT(r.out, HasSubstr(node + "  DRAIN"));

    r = cli({"incidents", "--json", "--node", node});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto incidents = nlohmann::json::parse(r.out);
    ASSERT_EQ(incidents.size(), 1u) << r.out;
    EXPECT_EQ(incidents[0]["cause"], "gpu_hbm_memory");
    EXPECT_EQ(incidents[0]["job"], *id);
    EXPECT_FALSE(incidents[0]["gpu_serial"].get<std::string>().empty());
    std::set<std::string> actions;
    for (const auto& a : incidents[0]["actions"]) actions.insert(a["action"].get<std::string>());
    EXPECT_THAT(actions, ::testing::IsSupersetOf({"drain", "rma_ticket"}));

    r = cli({"node", node, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto info = nlohmann::json::parse(r.out);
    EXPECT_EQ(info["slurm"]["held_by_autoheal"], true);
    ASSERT_EQ(info["gpus"].size(), 1u);
    EXPECT_EQ(info["gpus"][0]["serial"], incidents[0]["gpu_serial"]);
    EXPECT_EQ(info["gpus"][0]["pci"], "0000:3b:00.0");
    EXPECT_EQ(info["tickets"].size(), 1u);

    r = cli({"tickets", "--all", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).size(), 1u);

    // Metrics: the controller epilog's file and the command agree; the prolog wrote its own.
    const std::string prom = ReadFile(ClusterDir() + "/metrics/autoheal.prom");
    EXPECT_THAT(prom, HasSubstr("autoheal_nodes_held{cause=\"gpu_hbm_memory\"} 1"));
    EXPECT_THAT(prom, HasSubstr("autoheal_requeues_total 1"));
    EXPECT_THAT(prom, HasSubstr("autoheal_incidents_total{cause=\"gpu_hbm_memory\"} 1"));
    EXPECT_THAT(ReadFile(ClusterDir() + "/metrics/autoheal_health.prom"),
                HasSubstr("autoheal_health_check_status{node=\""));
    r = cli({"metrics"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("autoheal_time_to_rerun_seconds_count 1"));
    EXPECT_THAT(r.out, HasSubstr("autoheal_job_runs_total{outcome=\"blamed\"} 1"));

    // Replay: the installed rules decide the stored run as it was decided.
    r = cli(
        {"replay", "--since", "1h", "--rules", ClusterDir() + "/etc/autoheal/rules.d", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["changed"], 0);

    // Resume: refused for a node an admin drained, done for ours (and recorded).
    const std::string other = node == "node1" ? "node2" : "node1";
    ASSERT_EQ(RunCommand({"scontrol", "update", "nodename=" + other, "state=drain",
                          "reason=admin: fan replacement"})
                  .exit_code,
              0);
    r = cli({"resume", other, "--reason", "done"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("taken out by someone else"));
    EXPECT_THAT(ShowNode(other)["State"], HasSubstr("DRAIN"));
    r = cli({"resume", node, "--reason", "GPU 0 replaced"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(WaitUntil([&] { return ShowNode(node)["State"] == "IDLE"; }))
        << ShowNode(node)["State"];
    EXPECT_THAT(Query("SELECT detail FROM actions WHERE action = 'resume'"),
                ::testing::ElementsAre(HasSubstr("GPU 0 replaced (by ")));
    // A second resume is kept too, as `resume` under an admin_resume incident of its own.
    r = cli({"resume", node, "--reason", "checked again"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("was not out of service"));
    EXPECT_EQ(Query("SELECT i.cause || '|' || a.outcome FROM actions a JOIN incidents i ON "
                    "i.id = a.incident_id WHERE a.action = 'resume' ORDER BY a.id"),
              (std::vector<std::string>{"gpu_hbm_memory|done", "admin_resume|not-out"}));
    r = cli({"status", "--json"});
    EXPECT_EQ(nlohmann::json::parse(r.out)["held"].size(), 0u) << r.out;
}

// An admin breaks a rule file and autoheal.yaml while editing them, and Slurm is reconfigured
// meanwhile: the epilogs keep the last good rules and config (saying file:line:column in the
// log), so the next fault is still handled.
TEST_F(E2E, BrokenRulesAndConfigKeepTheLastGoodOnes) {
    const std::string etc = ClusterDir() + "/etc/autoheal";
    const std::string config = etc + "/autoheal.yaml";
    const std::string saved = ReadFile(config);
    struct Restore {
        std::string etc, config, saved;
        ~Restore() {
            fs::remove(etc + "/rules.d/50-edit.yaml");
            std::ofstream(config) << saved;
        }
    } restore{etc, config, saved};

    // A first job: the good rules and config are loaded (and kept).
    CommandResult r;
    auto first = Track(Submit({"-N", "1"}, "#!/bin/bash\ntrue\n", &r));
    ASSERT_TRUE(first) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*first); }));
    ASSERT_TRUE(WaitForAutohealLog("epilog-ctld: job=" + *first + " "));
    ASSERT_TRUE(fs::exists(StateDir() + "/last-good/rules.d/10-gpu.yaml"));
    ASSERT_TRUE(fs::exists(StateDir() + "/last-good/autoheal.yaml"));

    std::ofstream(etc + "/rules.d/50-edit.yaml")
        << "- rule: half-written\n  cause: faulty_gpu\n  actons: [drain]\n";
    std::ofstream(config) << saved << "remediation_typo: [\n";
    ASSERT_EQ(RunCommand({"scontrol", "reconfigure"}).exit_code, 0);

    TrainingJob job{"broken-edit"};
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string culprit;
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        culprit = nodes.back();
        InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    });
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog().substr(AutohealLog().size() > 3000 ? AutohealLog().size() - 3000 : 0);
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], culprit);
    const std::string log = AutohealLog();
    EXPECT_THAT(log, HasSubstr("50-edit.yaml:3:"));
    EXPECT_THAT(log,
                HasSubstr("using the last good rules from " + StateDir() + "/last-good/rules.d"));
    EXPECT_THAT(log, HasSubstr(config + ":"));
    EXPECT_THAT(log,
                HasSubstr("using the last good copy " + StateDir() + "/last-good/autoheal.yaml"));
    // The broken files never replaced the kept copies.
    EXPECT_FALSE(fs::exists(StateDir() + "/last-good/rules.d/50-edit.yaml"));
    EXPECT_THAT(ReadFile(StateDir() + "/last-good/autoheal.yaml"),
                Not(HasSubstr("remediation_typo")));
}

// slurmctld is restarted while EpilogSlurmctld is deciding (it waits for the culprit's node
// epilog, slowed by an NVML call that hangs in its post-job check): the decision survives, the
// job is requeued once (not twice), the incident is recorded, and the job ends up running once.
TEST_F(E2E, SlurmctldRestartDuringTheDecisionRequeuesOnceAndLosesNothing) {
    TrainingJob job{"ctld-restart"};
    job.steps = 30;
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    std::string culprit;
    const std::string scenarios = ClusterDir() + "/lib/fake-gpu/scenarios/";
    job.FailRun(*id, 0, 5, [&](const std::vector<std::string>& nodes) {
        culprit = nodes.back();
        InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
        std::ofstream(scenarios + culprit + ".json")
            << R"({"hang": {"call": "nvmlDeviceGetTemperature", "seconds": 5},
                  "gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0"},
                           {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]})";
    });
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(job.output(*id)).find("RuntimeError") != std::string::npos; }));
    const auto restart =
        RunProcess({std::string(AUTOHEAL_SOURCE_DIR) + "/tests/cluster/restart-ctld.sh", "2"},
                   {"AUTOHEAL_CLUSTER_DIR=" + ClusterDir()});
    fs::remove(scenarios + culprit + ".json");
    ASSERT_EQ(restart.exit_code, 0) << restart.err;

    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(90)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "1");
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], culprit);
    EXPECT_EQ(Query("SELECT count(*) FROM actions WHERE action = 'requeue'"),
              std::vector<std::string>{"1"});
    EXPECT_EQ(Query("SELECT cause FROM incidents WHERE node = '" + culprit + "'"),
              std::vector<std::string>{"faulty_gpu"});
    const std::string out = ReadFile(job.output(*id));
    EXPECT_THAT(out, HasSubstr("resumed at step 5"));
    EXPECT_THAT(out, HasSubstr("completed at step 30"));
    // Ran to completion once: a single "completed" line.
    EXPECT_EQ(out.find("completed at step"), out.rfind("completed at step"));
}

// A node's slurmd is killed mid-job (the host hangs): Slurm declares the node down and requeues
// the job; autoheal records the node's failure, does not requeue the job a second time, and the
// job ends up completing once elsewhere.
TEST_F(E2E, SlurmdKilledMidJobIsRecordedAndTheJobRunsOnce) {
    TrainingJob job{"slurmd-killed"};
    job.steps = 3000;  // runs until the node is declared down, then until told to stop
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] {
        return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos;
    })) << ReadFile(job.output(*id));
    const std::string victim = Nodes(ShowJob(*id)["NodeList"]).back();
    const std::string pidfile = ClusterDir() + "/run/slurmd-" + victim + ".pid";
    const int pid = std::stoi(ReadFile(pidfile));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    struct Revive {  // bring the node's slurmd back whatever happens
        std::string node, pidfile;
        ~Revive() {
            RunProcess(
                {"bash", "-c",
                 "setsid slurmd -D -N \"$1\" -f \"$2\" </dev/null >>\"$3\" 2>&1 & echo $! >\"$4\"",
                 "revive", node, ClusterDir() + "/etc/slurm.conf",
                 ClusterDir() + "/log/slurmd-" + node + ".out", pidfile});
        }
    } revive{victim, pidfile};
    ASSERT_TRUE(
        WaitUntil([&] { return ShowNode(victim)["State"].find("DOWN") != std::string::npos; },
                  std::chrono::seconds(60)))
        << ShowNode(victim)["State"];
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(40)))
        << ShowJob(*id)["JobState"];
    // The rerun (on other nodes) may stop now; only the rerun: the first run's batch step on
    // its healthy node ends when Slurm's kill reaches it, which under load may come after the
    // rerun has started, and it writes to the same output.
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "RUNNING"; }));
    std::ofstream(job.fault() + "-stop-1") << "";
    ASSERT_TRUE(WaitUntil(
        [&] {
            return Query("SELECT count(*) FROM incidents WHERE rule = 'node-failed' AND node = '" +
                         victim + "'") == std::vector<std::string>{"1"};
        },
        std::chrono::seconds(40)))
        << AutohealLog().substr(AutohealLog().size() > 2000 ? AutohealLog().size() - 2000 : 0);
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "1");  // requeued once, by Slurm; not again by autoheal
    EXPECT_THAT(Nodes(ShowJob(*id)["NodeList"]), Not(::testing::Contains(victim)));
    const std::string out = ReadFile(job.output(*id));
    EXPECT_THAT(out, HasSubstr("resumed at step"));
    EXPECT_EQ(out.find("completed at step"), out.rfind("completed at step"));
}

// ---------------------------------------------------------------------- autoheal-agent
// With one autoheal-agent per slurmd (AgentE2E): these jobs never end by
// themselves after the fault (a rank waiting in its collective on a dead peer), so only the
// agent can act in time. (Here, beside the E2E harness they share: TrainingJob, ResetCluster.)

// The E2E scenarios with one agent per node (bin/start-agents of the lab), stopped after each:
// the epilog-only scenarios above run without them.
class AgentE2E : public E2E {
  protected:
    void SetUp() override {
        E2E::SetUp();
        // The agents start afresh: where an earlier scenario's agents were in the kernel logs is
        // no longer theirs (other scenarios wrote faults there since).
        for (int i = 1; i <= 4; ++i) {
            fs::remove(StateDir() + "/agent-node" + std::to_string(i) + ".kernel-position");
        }
        ASSERT_EQ(RunCommand({ClusterDir() + "/bin/start-agents"}).exit_code, 0);
        ASSERT_TRUE(WaitUntil(
            [] {
                for (int i = 1; i <= 4; ++i) {
                    const std::string pid =
                        ReadFile(ClusterDir() + "/run/agent-node" + std::to_string(i) + ".pid");
                    const std::string beat =
                        ReadFile(StateDir() + "/jobs/agents/node" + std::to_string(i) + ".json");
                    if (pid.empty() || beat.find("\"pid\":" + pid.substr(0, pid.find('\n'))) ==
                                           std::string::npos) {
                        return false;
                    }
                }
                return true;
            },
            std::chrono::seconds(10)))
            << "the agents did not start";
    }
    void TearDown() override {
        for (int i = 1; i <= 4; ++i) {
            // The supervisor first (it stops its agent), then the agent.
            for (const char* what : {"/run/agent-supervisor-node", "/run/agent-node"}) {
                const std::string f = ClusterDir() + what + std::to_string(i) + ".pid";
                const std::string pid = ReadFile(f);
                if (!pid.empty()) ::kill(std::stoi(pid), SIGTERM);
                fs::remove(f);
            }
        }
        E2E::TearDown();
    }
};

std::string AgentPid(const std::string& node) {
    const std::string pid = ReadFile(ClusterDir() + "/run/agent-" + node + ".pid");
    return pid.substr(0, pid.find('\n'));
}

// A job that hangs: it checkpoints every 5 steps and runs until told to stop (fault()-stop).
TrainingJob HungJob(const std::string& name) {
    TrainingJob job{name};
    job.steps = 100000;
    return job;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// 1. Hung job after an Xid 79: requeued by the agent excluding the node within seconds, resumed
//    from its last checkpoint; the epilogs of the killed run see the same Xid: one requeue, one
//    incident.
TEST_F(AgentE2E, AgentRequeuesAHungJobAfterXid79ExcludingTheNode) {
    TrainingJob job = HungJob("agent-hung");
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] {
        return ReadFile(job.output(*id)).find("checkpoint 10") != std::string::npos;
    })) << ReadFile(job.output(*id));
    const std::string culprit = Nodes(ShowJob(*id)["NodeList"]).back();
    const auto fault_at = std::chrono::steady_clock::now();
    InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(15)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    const double requeued_s = SecondsSince(fault_at);
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["JobState"] == "RUNNING"; }, std::chrono::seconds(30)));
    const double rerun_s = SecondsSince(fault_at);
    RecordProperty("agent_fault_to_requeue_s", std::to_string(requeued_s));
    RecordProperty("agent_fault_to_rerun_s", std::to_string(rerun_s));
    std::cout << "agent: fault to requeue " << requeued_s << " s, to rerun " << rerun_s << " s\n";
    EXPECT_LT(requeued_s, 5.0);
    std::ofstream(job.fault() + "-stop") << "";
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    auto info = ShowJob(*id);
    EXPECT_EQ(info["Restarts"], "1");
    EXPECT_EQ(info["ExcNodeList"], culprit);
    EXPECT_THAT(Nodes(info["NodeList"]), Not(::testing::Contains(culprit)));
    const std::string out = ReadFile(job.output(*id));
    EXPECT_THAT(out, HasSubstr("resumed at step "));
    EXPECT_THAT(out, HasSubstr("excluded=[" + culprit + "]"));
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    // Rebooted (by the plan: drained until the reboot returned the node to service).
    EXPECT_THAT(Query("SELECT action || ' ' || target || ' ' || outcome FROM actions WHERE "
                      "action IN ('drain', 'reboot') AND outcome = 'done'"),
                ::testing::ElementsAre("reboot " + culprit + " done"));
    EXPECT_EQ(Query("SELECT count(*) FROM incidents WHERE node = '" + culprit + "'"),
              std::vector<std::string>{"1"});
    EXPECT_EQ(Query("SELECT count(*) FROM actions WHERE action = 'requeue'"),
              std::vector<std::string>{"1"});
    EXPECT_TRUE(fs::exists(StateDir() + "/jobs/" + *id + "/run0/" + culprit + ".agent.json"));
}

// 1b. The same fault seen only through NVML's Xid events (a node whose kernel log the agent does
//     not read, or that lost the line): the agent's event stream brings it, handled as the
//     kernel's line would be.
TEST_F(AgentE2E, AnXidOnlyNvmlReportsRequeuesTheHungJobExcludingTheNode) {
    TrainingJob job = HungJob("agent-nvml-event");
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] {
        return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos;
    })) << ReadFile(job.output(*id));
    const std::string culprit = Nodes(ShowJob(*id)["NodeList"]).back();
    const std::string scenario = ClusterDir() + "/lib/fake-gpu/scenarios/" + culprit + ".json";
    struct Remove {
        std::string path;
        ~Remove() { fs::remove(path); }
    } remove{scenario};
    const auto fault_at = std::chrono::steady_clock::now();
    {
        std::ofstream tmp(scenario + ".tmp");
        tmp << R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0"},
                            {"minor": 1, "pci_bus_id": "0000:5d:00.0"}],
                   "xid_events": [{"gpu": 0, "xid": 79}]})";
    }
    fs::rename(scenario + ".tmp", scenario);
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(15)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    const double requeued_s = SecondsSince(fault_at);
    std::cout << "agent: NVML Xid event to requeue " << requeued_s << " s\n";
    EXPECT_LT(requeued_s, 5.0);
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], culprit);
    // The agent logs what it did once the plan has run, a moment after the requeue Slurm shows.
    EXPECT_TRUE(
        WaitForAutohealLog("xid events: 0000:3b:00/79: faulty_gpu", std::chrono::seconds(10)))
        << AutohealLog();
    std::ofstream(job.fault() + "-stop") << "";
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    EXPECT_EQ(ShowJob(*id)["Restarts"], "1");
}

// 2. A fault on an idle node: out of service within a second or two, before a job lands there
//    (the plan's reboot then brings it back, as after any Xid 79). The agent opens no store: the
//    next job end imports what it handed to the controller (jobs/agents/spool).
TEST_F(AgentE2E, AgentTakesAnIdleNodeOutBeforeTheNextJob) {
    const std::string ctld_log = ClusterDir() + "/log/slurmctld.log";
    const std::size_t log_before = ReadFile(ctld_log).size();
    const auto fault_at = std::chrono::steady_clock::now();
    InjectKernel("node4", Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    // The plan's reboot (ASAP) drains the node until it reboots; the lab's reboot is quick and
    // returns the node to service, so the DRAIN state may last less than one poll: slurmctld's
    // record of the request is what lasts.
    const std::string asked = "reboot request queued for nodes node4";
    ASSERT_TRUE(
        WaitUntil([&] { return ReadFile(ctld_log).find(asked, log_before) != std::string::npos; },
                  std::chrono::seconds(5)))
        << ShowNode("node4")["State"] << "\n"
        << AutohealLog();
    const double drained_s = SecondsSince(fault_at);
    RecordProperty("agent_idle_fault_to_drain_s", std::to_string(drained_s));
    std::cout << "agent: idle fault to drain " << drained_s << " s\n";
    EXPECT_LT(drained_s, 2.0);
    EXPECT_TRUE(WaitUntil([] {
        return ReadFile(ClusterDir() + "/log/reboots.log").find("reboot node4") !=
               std::string::npos;
    }));
    EXPECT_TRUE(Query("SELECT id FROM incidents").empty());  // the controller's, untouched
    TrainingJob next{"agent-next"};
    next.steps = 1;
    auto id = Track(next.Submit({"-N", "1", "-w", "node1"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(20)));
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(30)));
    EXPECT_EQ(Query("SELECT count(*) FROM incidents WHERE node = 'node4'"),
              std::vector<std::string>{"1"});
    EXPECT_EQ(Query("SELECT count(*) FROM actions WHERE action = 'reboot' AND target = 'node4' "
                    "AND outcome = 'done'"),
              std::vector<std::string>{"1"});
    EXPECT_TRUE(fs::is_empty(StateDir() + "/jobs/agents/spool"));
}

// 3. An Xid 13 from the job's own kernel is not an interrupting cause: the job runs on.
TEST_F(AgentE2E, AgentLeavesAJobRunningOnXid13) {
    TrainingJob job = HungJob("agent-xid13");
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos; }));
    const std::string node = Nodes(ShowJob(*id)["NodeList"]).back();
    const std::size_t seen = AutohealLog().size();
    InjectKernel(node, Xid(13, "0000:3b:00", "Graphics SM Warp Exception on (GPC 0, TPC 0)"));
    // The agent says it read the line and left it to the epilog; then nothing may have changed.
    ASSERT_TRUE(WaitForAutohealLog("kernel log: user_error (xid-app-fault): does not interrupt",
                                   std::chrono::seconds(10), seen))
        << AutohealLog().substr(seen);
    EXPECT_EQ(ShowJob(*id)["JobState"], "RUNNING");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    EXPECT_EQ(ShowNode(node)["Reason"], "");
    EXPECT_TRUE(Query("SELECT id FROM incidents").empty());
    std::ofstream(job.fault() + "-stop") << "";
}

// 4. A job without --auto-resume: ended at once, with the explanation in its output.
TEST_F(AgentE2E, AgentEndsAJobWithoutAutoResumeWithAnExplanation) {
    TrainingJob job = HungJob("agent-end");
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos; }));
    const std::string culprit = Nodes(ShowJob(*id)["NodeList"]).back();
    InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(10)))
        << ShowJob(*id)["JobState"];
    EXPECT_EQ(ShowJob(*id)["JobState"], "CANCELLED");
    EXPECT_EQ(ShowJob(*id)["Restarts"], "0");
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    const std::string why = Explanation(job, *id);
    EXPECT_THAT(why, HasSubstr("autoheal: ended the job: faulty_gpu on " + culprit));
    EXPECT_THAT(why, HasSubstr("not requeued: the job did not ask for --auto-resume"));
}

// 5. The agent killed mid-job (its supervisor, systemd in production, starts it again): the Xid
//    written while it was down is read by the new agent from where the old one stopped, and the
//    hung job is requeued as in 1.
TEST_F(AgentE2E, AKilledAgentIsRestartedAndMissesNothing) {
    TrainingJob job = HungJob("agent-killed");
    auto id = Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos; }));
    const std::string culprit = Nodes(ShowJob(*id)["NodeList"]).back();
    const std::string old_pid = AgentPid(culprit);
    ASSERT_FALSE(old_pid.empty());
    // Stopped, so the line is surely written while it is down, then killed.
    ASSERT_EQ(::kill(std::stoi(old_pid), SIGSTOP), 0);
    InjectKernel(culprit, Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    ASSERT_EQ(::kill(std::stoi(old_pid), SIGKILL), 0);
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(15)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(ClusterDir() + "/log/agent-" + culprit + ".out");
    const std::string new_pid = AgentPid(culprit);
    EXPECT_NE(new_pid, old_pid);
    EXPECT_TRUE(WaitUntil([&] {
        return ReadFile(StateDir() + "/jobs/agents/" + culprit + ".json")
                   .find("\"pid\":" + new_pid) != std::string::npos;
    }));
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], culprit);
    std::ofstream(job.fault() + "-stop") << "";
}

// 6. The breaker open (autoheal already holds as many nodes as it may): the agent requeues the
//    hung job away from the node but holds the reboot and alerts.
TEST_F(AgentE2E, WithTheBreakerOpenTheAgentHoldsInsteadOfDraining) {
    for (const char* n : {"node3", "node4"}) {
        ASSERT_EQ(RunCommand({"scontrol", "update", std::string("nodename=") + n, "state=drain",
                              "reason=autoheal: faulty_gpu (test)"})
                      .exit_code,
                  0);
    }
    TrainingJob job = HungJob("agent-breaker");
    auto id =
        Track(job.Submit({"-N", "2", "-w", "node1,node2", "--gpus-per-node=1", "--auto-resume=3"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(job.output(*id)).find("checkpoint 5") != std::string::npos; }));
    const std::string ctld_log = ClusterDir() + "/log/slurmctld.log";
    const std::size_t log_before = ReadFile(ctld_log).size();
    InjectKernel("node2", Xid(79, "0000:3b:00", "GPU has fallen off the bus."));
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(15)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    EXPECT_EQ(ShowJob(*id)["ExcNodeList"], "node2");
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    EXPECT_THAT(ShowNode("node2")["State"], Not(HasSubstr("DRAIN")));
    EXPECT_THAT(ReadFile(ctld_log).substr(log_before), Not(HasSubstr("node node2 reason set to")));
    EXPECT_THAT(ReadFile(ctld_log).substr(log_before),
                Not(HasSubstr("reboot request queued for nodes node2")));
    // Logged once the plan has run, which may be a moment after the requeue Slurm shows.
    EXPECT_TRUE(WaitForAutohealLog("ALERT: breaker open", std::chrono::seconds(10)))
        << AutohealLog();
    EXPECT_THAT(Query("SELECT DISTINCT action || ' ' || target FROM actions WHERE outcome = "
                      "'held'"),
                ::testing::Contains("held node2"));
}

// 7. A job that stopped making progress (no output, no checkpoint) while its (fake) GPUs are idle,
//    with --hang-timeout: the agent of its batch host requeues it within its cap; no node is taken
//    out (the job's own files are no node's evidence); the explanation reaches its output.
TEST_F(AgentE2E, AgentRequeuesAJobThatStoppedWithIdleGpusAndTouchesNoNode) {
    TrainingJob job = HungJob("agent-stalled");
    auto id =
        Track(job.Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3", "--hang-timeout=4s"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] {
        return ReadFile(job.output(*id)).find("checkpoint 10") != std::string::npos;
    })) << ReadFile(job.output(*id));
    const std::string ctld_log = ClusterDir() + "/log/slurmctld.log";
    const std::size_t log_before = ReadFile(ctld_log).size();
    const auto stalled_at = std::chrono::steady_clock::now();
    std::ofstream(job.fault() + "-stall-0") << "";
    // 4 s without progress, looked at every second (the lab's agent.hang_check_interval).
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(30)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    const double requeued_s = SecondsSince(stalled_at);
    RecordProperty("agent_stall_to_requeue_s", std::to_string(requeued_s));
    std::cout << "agent: stall to requeue " << requeued_s << " s (hang timeout 4 s)\n";
    // Not before the timeout: the last output came at most 0.5 s before the stall, and the
    // agent reads mtimes in whole seconds.
    EXPECT_GE(requeued_s, 2.5);
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["JobState"] == "RUNNING"; }, std::chrono::seconds(30)));
    std::ofstream(job.fault() + "-stop") << "";
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"] << "\n"
        << ReadFile(job.output(*id));
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    auto info = ShowJob(*id);
    EXPECT_EQ(info["Restarts"], "1");
    EXPECT_THAT(info["ExcNodeList"], Not(HasSubstr("node")));
    EXPECT_THAT(ReadFile(ctld_log).substr(log_before), Not(HasSubstr("reason set to")));
    EXPECT_TRUE(
        Query("SELECT id FROM actions WHERE action IN ('drain', 'reboot', 'reset_gpu')").empty());
    EXPECT_EQ(Query("SELECT count(*) FROM actions WHERE action = 'requeue'"),
              std::vector<std::string>{"1"});
    const std::string out = ReadFile(job.output(*id));
    EXPECT_THAT(out, HasSubstr("autoheal: requeued 1/3 after job_hang"));
    EXPECT_THAT(out, HasSubstr("resumed at step "));
    const auto rec = ReadFile(StateDir() + "/jobs/" + *id + "/run0/" +
                              Nodes(info["BatchHost"]).front() + ".agent.json");
    EXPECT_THAT(rec, HasSubstr("\"job-hang\""));
}

// 8. The same with the flight recorder: two ranks (one per node) make their dump pipes as PyTorch
//    does and, when asked, write their dumps (tests/fixtures/flight_recorder/gen_dumps.py: rank 1
//    never entered the collective rank 0 waits in); the job is requeued excluding rank 1's node,
//    and only excluding it.
TEST_F(AgentE2E, AgentAsksAHungJobsRanksForDumpsAndExcludesTheCulpritsNode) {
    const std::string dir = ClusterDir() + "/state/e2e-agent-fr";
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_EQ(RunCommand({"/usr/bin/python3",
                          std::string(AUTOHEAL_SOURCE_DIR) +
                              "/tests/fixtures/flight_recorder/gen_dumps.py",
                          "--bench", "2", "16", dir + "/dumps"})
                  .exit_code,
              0);
    ASSERT_TRUE(GiveToUser(dir, kJobUser));
    // Each rank: its pipe (<prefix><rank>.pipe, held open for reading as PyTorch's DumpPipe
    // does), then its dump when a byte arrives; the batch script prints nothing more.
    const std::string script =
        "#!/bin/bash\n"
        "echo \"run restart=${SLURM_RESTART_COUNT:-0}\"\n"
        "[ \"${SLURM_RESTART_COUNT:-0}\" != 0 ] && exit 0\n"
        "srun --ntasks-per-node=1 bash -c '"
        "p=${TORCH_NCCL_DEBUG_INFO_PIPE_FILE}${SLURM_PROCID}.pipe; mkfifo \"$p\"; "
        "exec 3<>\"$p\"; read -n1 <&3; "
        "cp " +
        dir +
        "/dumps/node0/nccl_trace_rank_${SLURM_PROCID} "
        "${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}${SLURM_PROCID}; sleep 600'\n";
    CommandResult r;
    auto id = Track(Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume=3", "--hang-timeout=4s",
                            "--output=" + dir + "/out-%j.txt", "--open-mode=append"},
                           script, &r));
    ASSERT_TRUE(id) << r.err;
    ASSERT_TRUE(
        WaitUntil([&] { return ShowJob(*id)["Restarts"] == "1"; }, std::chrono::seconds(45)))
        << ShowJob(*id)["JobState"] << "\n"
        << AutohealLog();
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }, std::chrono::seconds(60)));
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    auto info = ShowJob(*id);
    EXPECT_EQ(info["JobState"], "COMPLETED");
    const std::string out = ReadFile(dir + "/out-" + *id + ".txt");
    EXPECT_THAT(out, HasSubstr("never entered ALLREDUCE #80078 (pg 0); excluded"));
    const std::string culprit = info["ExcNodeList"];
    EXPECT_THAT(out, HasSubstr("rank 1 on " + culprit + " never entered"));
    EXPECT_THAT(Nodes(info["NodeList"]), Not(::testing::Contains(culprit)));
    EXPECT_TRUE(
        Query("SELECT id FROM actions WHERE action IN ('drain', 'reboot', 'reset_gpu')").empty());
}

// 9. Power and temperature during the job (issue 17): on the job's node, GPU 1's (fake) NVML
//    reports thermal slowdown for 90% of the time at a lower SM clock than GPU 0. The agent
//    samples both every second (the lab's agent.sample_interval), the node epilog summarises the
//    samples, the controller names GPU 1 the job's straggler, and the rule
//    gpu-slowdown-during-job drains the node with the GPU in the reason.
TEST_F(AgentE2E, AGpuInLongThermalSlowdownIsNamedAndItsNodeDrained) {
    const std::string scenarios = ClusterDir() + "/lib/fake-gpu/scenarios/";
    struct Remove {
        std::string dir;
        ~Remove() {
            for (int i = 1; i <= 4; ++i) fs::remove(dir + "node" + std::to_string(i) + ".json");
        }
    } remove{scenarios};
    for (int i = 1; i <= 4; ++i) {
        std::ofstream(scenarios + "node" + std::to_string(i) + ".json") << R"({"gpus": [
            {"minor": 0, "pci_bus_id": "0000:3b:00.0", "telemetry": {"sm_clock_mhz": 1980}},
            {"minor": 1, "pci_bus_id": "0000:5d:00.0",
             "telemetry": {"sm_clock_mhz": 1100, "thermal_violation_percent": 90}}]})";
    }
    TrainingJob job = HungJob("agent-thermal");
    auto id = Track(job.Submit({"-N", "1", "--gpus-per-node=2"}));
    ASSERT_TRUE(id);
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "RUNNING"; }));
    const std::string node = Nodes(ShowJob(*id)["NodeList"]).front();
    const std::string record = StateDir() + "/jobs/" + *id + "/run0/" + node + ".telemetry.json";
    // Three samples of each GPU (a second apart), then the job ends.
    ASSERT_TRUE(WaitUntil(
        [&] {
            const auto j = nlohmann::json::parse(ReadFile(record), nullptr, false);
            if (j.is_discarded() || !j.contains("gpus") || j["gpus"].size() != 2) return false;
            for (const auto& g : j["gpus"]) {
                if (g.value("samples", 0) < 3) return false;
            }
            return true;
        },
        std::chrono::seconds(30)))
        << ReadFile(record) << "\n"
        << ReadFile(ClusterDir() + "/log/agent-" + node + ".out");
    std::ofstream(job.fault() + "-stop") << "";
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(60)))
        << ShowJob(*id)["JobState"];
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(60)));
    EXPECT_TRUE(WaitUntil([&] {
        return ShowNode(node)["State"].find("DRAIN") != std::string::npos;
    })) << ShowNode(node)["State"]
        << "\n"
        << AutohealLog();
    EXPECT_THAT(ShowNode(node)["Reason"], HasSubstr("gpu_slowdown"));
    EXPECT_THAT(ShowNode(node)["Reason"], HasSubstr("0000:5d:00.0"));
    EXPECT_EQ(Query("SELECT cause || ' ' || gpu || ' ' || rule FROM incidents WHERE node = '" +
                    node + "'"),
              std::vector<std::string>{"gpu_slowdown 0000:5d:00.0 gpu-slowdown-during-job"});
    const std::vector<std::string> evidence =
        Query("SELECT evidence_json FROM incidents WHERE node = '" + node + "'");
    ASSERT_EQ(evidence.size(), 1u);
    EXPECT_THAT(evidence[0], HasSubstr("the job's straggler"));
    EXPECT_THAT(evidence[0], ::testing::ContainsRegex("(8[5-9]|9[0-5])% by temperature"));
    // Kept for `autoheal node` and `autoheal report`: both GPUs, GPU 1 the straggler.
    EXPECT_EQ(Query("SELECT gpu || ' ' || straggler FROM gpu_telemetry WHERE job = '" + *id +
                    "' ORDER BY gpu"),
              (std::vector<std::string>{"0000:3b:00.0 0", "0000:5d:00.0 1"}));
    // The node's report: both GPUs summarised; GPU 1 throttled by temperature most of the run.
    const std::string report =
        ReadFile(StateDir() + "/jobs/" + *id + "/run0/" + node + ".epilog.json");
    EXPECT_THAT(report, HasSubstr("gpu-telemetry"));
    EXPECT_THAT(report, HasSubstr("0000:3b:00.0"));
}

}  // namespace
}  // namespace autoheal::testing
