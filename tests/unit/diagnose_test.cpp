// Reasoning with the shipped rules: sympathetic errors, app faults vs hardware, NCCL ranks,
// conflicting evidence, escalation on history, culprit extraction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diag_test_util.h"

namespace autoheal::diag::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;

std::string Watchdog(int rank, int seq, const std::string& op, int numel) {
    return "[rank" + std::to_string(rank) + "]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] [Rank " +
           std::to_string(rank) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
           std::to_string(seq) + ", OpType=" + op + ", NumelIn=" + std::to_string(numel) +
           ", NumelOut=" + std::to_string(numel) +
           ", Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n";
}

TEST(Diagnose, NothingFoundIsUnknownWithNoPlan) {
    Diagnosis d = Classify("hello\nworld\n");
    EXPECT_EQ(d.cause, "unknown");
    EXPECT_TRUE(d.actions.empty());
    EXPECT_FALSE(d.requeue);
    EXPECT_TRUE(d.rule.empty());
    EXPECT_EQ(d.confidence, 0.0);
}

// An error line no rule reads is evidence: the shipped guess names the likeliest cause, with
// nothing to do; a line without an error word is still no evidence.
TEST(Diagnose, AnErrorLineNoRuleReadsIsAGuess) {
    Diagnosis d =
        Classify("starting the frobnicator\nfrobd: ERROR could not open /etc/frob.conf\n");
    EXPECT_EQ(d.cause, "dependency");
    EXPECT_EQ(d.rule, "unrecognised-error");
    EXPECT_TRUE(d.guess);
    EXPECT_FALSE(d.Explains());
    EXPECT_TRUE(d.actions.empty());
    EXPECT_FALSE(d.requeue);
    EXPECT_DOUBLE_EQ(d.confidence, 0.2);
    ASSERT_FALSE(d.evidence.empty());
    EXPECT_EQ(d.evidence[0].line, 2u);
    EXPECT_EQ(Classify("0 errors, 12 tests passed\nno failures\n").cause, "unknown");
}

// A guess decides only when nothing else fires, and is no conflict for the rule that does.
TEST(Diagnose, AGuessNeverOutranksOrWeakensARule) {
    const std::string own = "Traceback (most recent call last):\nValueError: bad shape\n";
    Diagnosis alone = Classify(own);
    Diagnosis mixed = Classify(own + "frobd: ERROR could not open /etc/frob.conf\n");
    EXPECT_EQ(mixed.cause, "user_error");
    EXPECT_FALSE(mixed.guess);
    EXPECT_TRUE(mixed.Explains());
    EXPECT_DOUBLE_EQ(mixed.confidence, alone.confidence);
}

TEST(Diagnose, Xid45IsNeverTheRootCauseBesideAnotherXid) {
    Diagnosis d = Classify(
        "[10.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
        "[10.1] NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=python, Ch 00000001\n");
    EXPECT_EQ(d.rule, "xid-79-fallen-off-bus");
    EXPECT_EQ(d.cause, "faulty_gpu");
    EXPECT_EQ(d.culprit.gpu, "0000:3b:00.0");
    EXPECT_THAT(d.actions, ElementsAre("reboot"));
    for (const Finding& f : d.findings) EXPECT_NE(f.rule, "xid-45-alone");

    Diagnosis alone = Classify("NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=p, Ch 00000001\n");
    EXPECT_EQ(alone.rule, "xid-45-alone");
}

// An Xid named in words (a drain reason, a health check, a ticket) is the event the catalog's
// rules read; a line the kernel's own Xid signature or a health agent's already read is one
// event, not two.
TEST(Diagnose, AnXidNamedInWordsIsOneEventTheCatalogReads) {
    auto xids = [](const EvidenceSet& set) {
        std::vector<std::string> out;
        for (const Evidence& e : set.items) {
            if (e.signature == "xid") out.push_back(std::string(e.Field("xid").value_or("")));
        }
        return out;
    };
    EvidenceSet set;
    Diagnosis words =
        Classify("gpu-a017  drained  root  Xid 79 on GPU 3, needs reseat\n", {}, &set);
    EXPECT_EQ(words.rule, "xid-79-fallen-off-bus");
    EXPECT_EQ(words.cause, "faulty_gpu");
    EXPECT_THAT(xids(set), ElementsAre("79"));

    Diagnosis kernel = Classify(
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, An uncorrectable double bit error\n",
        {}, &set);
    EXPECT_EQ(kernel.rule, "xid-48-dbe");
    EXPECT_THAT(xids(set), ElementsAre("48"));

    Diagnosis gpud = Classify("XID 48(DBE) detected on PCI:0000:3b:00\n", {}, &set);
    EXPECT_EQ(gpud.rule, "xid-48-dbe");
    EXPECT_EQ(gpud.culprit.gpu, "0000:3b:00.0");  // the report's own signature, with its GPU
    EXPECT_THAT(xids(set), ElementsAre("48"));

    // The SXid of an NVSwitch and a word that only ends in "xid" name no GPU Xid, and the
    // switch's address is no culprit GPU.
    Diagnosis sxid = Classify(
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32\n", {}, &set);
    EXPECT_THAT(xids(set), ElementsAre());
    EXPECT_EQ(sxid.cause, "nvlink");
    EXPECT_EQ(sxid.culprit.gpu, "");
}

TEST(Diagnose, AppXidsAreUserErrorsAndDoNotRequeue) {
    Diagnosis d = Classify(
        "NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
        "Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address\n"
        "NVRM: Xid (PCI:0000:43:00): 43, pid=77, name=python, Ch 00000010\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n");
    EXPECT_EQ(d.cause, "user_error");
    EXPECT_FALSE(d.requeue);
    EXPECT_TRUE(d.actions.empty());
}

TEST(Diagnose, SameGpuFaultingAcrossJobsEscalatesToHardware) {
    const std::string log =
        "NVRM: Xid (PCI:0000:43:00): 13, pid=1, name=p, Graphics Exception: ESR 0x1=0x2\n";
    DiagnoseOptions options;
    options.now = 1'000'000;
    options.job = "300";
    options.history = {{options.now - 3600, "n1", "0000:43:00.0", "xid-app-fault", "", "100"},
                       {options.now - 7200, "n1", "0000:43:00.0", "xid-app-fault", "", "200"}};
    Diagnosis d = Classify(log, options);
    EXPECT_EQ(d.cause, "faulty_gpu");
    EXPECT_TRUE(d.requeue);
    EXPECT_THAT(d.actions, ElementsAre("drain", "reset_gpu"));
    EXPECT_FALSE(d.escalation.empty());

    // The same job failing again is not evidence against the GPU.
    options.history = {{options.now - 3600, "n1", "0000:43:00.0", "xid-app-fault", "", "300"},
                       {options.now - 7200, "n1", "0000:43:00.0", "xid-app-fault", "", "300"}};
    EXPECT_EQ(Classify(log, options).cause, "user_error");
    // Nor is the same bus id on another node.
    options.node = "n1";
    options.history = {{options.now - 3600, "n2", "0000:43:00.0", "xid-app-fault", "", "100"},
                       {options.now - 7200, "n3", "0000:43:00.0", "xid-app-fault", "", "200"}};
    EXPECT_EQ(Classify(log, options).cause, "user_error");
    options.node.clear();
    // Nor are faults on another GPU, or older than the window.
    options.history = {
        {options.now - 3600, "n1", "0000:44:00.0", "xid-app-fault", "", "100"},
        {options.now - 30LL * 86400, "n1", "0000:43:00.0", "xid-app-fault", "", "200"}};
    EXPECT_EQ(Classify(log, options).cause, "user_error");
}

TEST(Diagnose, NcclRanksThatAgreeAreATimeoutWithUnknownRoot) {
    Diagnosis d = Classify(Watchdog(0, 7753, "ALLREDUCE", 5) + Watchdog(4, 7753, "ALLREDUCE", 5));
    EXPECT_EQ(d.cause, "nccl_timeout");
    EXPECT_TRUE(d.requeue);
}

TEST(Diagnose, NcclRanksInDifferentCollectivesAreAnAppDesync) {
    EXPECT_EQ(
        Classify(Watchdog(0, 3437, "ALLREDUCE", 4311252) + Watchdog(1, 3437, "ALLREDUCE", 1)).cause,
        "user_error");
    EXPECT_EQ(Classify(Watchdog(0, 10, "ALLREDUCE", 8) + Watchdog(1, 11, "BROADCAST", 8)).rule,
              "nccl-ranks-desync");
}

// A paste may break a watchdog line after "timeout:": its collective is on the next line.
TEST(Diagnose, NcclWatchdogLineBrokenBeforeItsCollectiveIsReadWhole) {
    const std::string log =
        "[rank12]:[E909 09:55:29.30 ProcessGroupNCCL.cpp:607] [Rank 12] Watchdog caught "
        "collective operation timeout:\n"
        "WorkNCCL(SeqNum=2070, OpType=REDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
        "for 600036 milliseconds before timing out.\n" +
        Watchdog(6, 2070, "ALLREDUCE", 1);
    EXPECT_EQ(Classify(log).rule, "nccl-ranks-desync");
}

// Ranks whose lines do not say which collective they waited in neither agree nor disagree.
TEST(Diagnose, NcclRanksThatNameNoCollectiveDoNotAgree) {
    const std::string bare =
        "[rank12]:[E909 09:55:29.30 ProcessGroupNCCL.cpp:607] [Rank 12] Watchdog caught "
        "collective operation timeout\n";
    Diagnosis d = Classify(bare + Watchdog(6, 2070, "ALLREDUCE", 1));
    EXPECT_EQ(d.rule, "nccl-watchdog-timeout");
    EXPECT_EQ(d.cause, "nccl_timeout");
    for (const Evidence& e : d.evidence) EXPECT_NE(e.signature, "nccl-ranks-agree") << e.text;
}

// Point-to-point work has its own SeqNum counter, and a pipeline stage's SEND is its peer's RECV:
// ranks timing out in P2P ops are not compared (the timeout alone decides), unless they agree.
TEST(Diagnose, NcclRanksInPointToPointOpsAreNoDesync) {
    Diagnosis d = Classify(Watchdog(0, 12, "SEND", 7208960) + Watchdog(3, 29, "COALESCED", 8));
    EXPECT_EQ(d.rule, "nccl-watchdog-timeout");
    EXPECT_EQ(d.cause, "nccl_timeout");
    EXPECT_EQ(Classify(Watchdog(2, 40, "SEND", 64) + Watchdog(3, 40, "RECV", 64)).cause,
              "nccl_timeout");
    EXPECT_EQ(Classify(Watchdog(2, 40, "RECV", 64) + Watchdog(3, 40, "RECV", 64)).rule,
              "nccl-watchdog-timeout");
}

TEST(Diagnose, TheRankThatNeverReportedIsTheCulprit) {
    std::string log =
        "[rank3]:[W1206 18:40:02.1 ProcessGroupNCCL.cpp:1] Warning: init\n"
        "[rank0]:[W1206 18:40:02.1 ProcessGroupNCCL.cpp:1] Warning: init\n" +
        Watchdog(0, 500, "ALLREDUCE", 8) + Watchdog(1, 500, "ALLREDUCE", 8) +
        Watchdog(2, 500, "ALLREDUCE", 8);
    Diagnosis d = Classify(log);
    EXPECT_EQ(d.rule, "nccl-missing-rank");
    ASSERT_TRUE(d.culprit.rank.has_value());
    EXPECT_EQ(*d.culprit.rank, 3);
    EXPECT_TRUE(d.requeue);
}

TEST(Diagnose, TimeoutOnTheFirstCollectiveIsConfiguration) {
    Diagnosis d = Classify(Watchdog(0, 1, "ALLREDUCE", 1) + Watchdog(1, 1, "ALLREDUCE", 1));
    EXPECT_EQ(d.rule, "nccl-first-collective");
    EXPECT_FALSE(d.requeue);
}

TEST(Diagnose, HardwareEvidenceOutranksTheNcclSymptom) {
    Diagnosis d = Classify(Watchdog(0, 9, "ALLREDUCE", 5) + Watchdog(1, 9, "ALLREDUCE", 5) +
                           "Nov 29 10:00:01 gpu-node7 kernel: NVRM: Xid (PCI:0000:3B:00): 48, "
                           "pid='<unknown>', name=<unknown>, An uncorrectable double bit error "
                           "(DBE) has been detected on GPU in the framebuffer at physAddr "
                           "0x7fffa8860 partition 7, subpartition 1.\n");
    EXPECT_EQ(d.cause, "gpu_hbm_memory");
    EXPECT_EQ(d.culprit.gpu, "0000:3b:00.0");
    EXPECT_EQ(d.culprit.node, "gpu-node7");
    EXPECT_THAT(d.findings, Contains(Field(&Finding::rule, "nccl-watchdog-timeout")));
}

TEST(Diagnose, CloseConflictingCausesLowerConfidence) {
    Diagnosis clear = Classify("NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100\n");
    Diagnosis conflicted = Classify(
        "NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100\n"
        "NVRM: Xid (PCI:0000:02:00): 74, pid=1, name=p, NVLink: fatal error detected on link 3\n");
    EXPECT_EQ(conflicted.cause, "gpu_system_processor");
    EXPECT_LT(conflicted.confidence, clear.confidence);
}

TEST(Diagnose, RecoveryActionJoinsThePlan) {
    Diagnosis d = Classify(
        "NVRM: Xid (PCI:0000:01:00): 119, pid=9, name=nvidia-smi, Timeout after 6s of waiting "
        "for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).\n"
        "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
        "(Node Reboot Required)\n");
    EXPECT_EQ(d.cause, "gpu_system_processor");
    EXPECT_THAT(d.actions, ElementsAre("reset_gpu", "reboot"));
}

TEST(Diagnose, MultiLineFallenOffTheBusNamesItsGpu) {
    Diagnosis d = Classify(
        "[5.0] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "[5.0] NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "[5.0] NVRM: fallen off the bus and is not responding to commands.\n");
    EXPECT_EQ(d.cause, "faulty_gpu");
    EXPECT_EQ(d.culprit.gpu, "0000:b3:00.0");
}

TEST(Diagnose, NodeOptionNamesTheCulpritNode) {
    DiagnoseOptions options;
    options.node = "node3";
    Diagnosis d = Classify("mce: [Hardware Error]: Machine check events logged\n", options);
    EXPECT_EQ(d.cause, "host_cpu");
    EXPECT_EQ(d.culprit.node, "node3");
}

// A rule's culprit_node names the part at fault when it is not the host whose log holds the
// line: the peer an IB transport gave up on, the NFS server that stopped answering.
TEST(Diagnose, APeerOrAServerTheLineNamesIsTheCulprit) {
    Diagnosis ib = Classify(
        "gpu3:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.7<49577> with error 12, opcode 1, len 0, vendor err 129\n");
    EXPECT_EQ(ib.rule, "nccl-ib-retry-exceeded");
    EXPECT_EQ(ib.culprit.node, "10.0.0.7");
    // A local error names this host: the peer did nothing.
    Diagnosis local = Classify(
        "gpu3:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.7<49577> with error 4, opcode 0, len 0, vendor err 81\n");
    EXPECT_EQ(local.rule, "nccl-ib-local-protection");
    EXPECT_EQ(local.culprit.node, "gpu3");
    // A masked address is no node.
    Diagnosis masked = Classify(
        "NCCL WARN NET/IB : Got completion from peer [PRIVATE_IP] with error 12, opcode 0, len "
        "0, vendor err 129 (Recv)\n");
    EXPECT_EQ(masked.rule, "nccl-ib-retry-exceeded");
    EXPECT_EQ(masked.culprit.node, "");
    Diagnosis nfs = Classify(
        "Dec  1 10:00:00 gpu3 kernel: nfs: server filer01 not responding, "
        "still trying\n");
    EXPECT_EQ(nfs.rule, "nfs-timeout");
    EXPECT_EQ(nfs.culprit.node, "filer01");
}

// Lines that name no host of their own: the node Slurm names for the failed task, else the one
// host the other lines of the paste name; two hosts name none.
TEST(Diagnose, TheNodeOfAFailedTaskOrOfTheWholePasteIsTheCulprit) {
    Diagnosis task = Classify(
        "Traceback (most recent call last):\nValueError: bad shape\n"
        "srun: error: cn110: task 0: Exited with exit code 1\n"
        "srun: error: cn111: tasks 1-3: Exited with exit code 1\n");
    EXPECT_EQ(task.culprit.node, "cn110");
    Diagnosis step = Classify(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "slurmstepd: error: *** STEP 42.0 ON i8024 CANCELLED AT 2024-01-25T12:30:14 ***\n");
    EXPECT_EQ(step.culprit.node, "i8024");
    auto warn = [](const std::string& host) {
        return host + ":16:16 [6] misc/frob.cc:12 NCCL WARN frobnication failed\n";
    };
    const std::string error =
        "RuntimeError: CUDA error: an illegal memory access was encountered\n";
    EXPECT_EQ(Classify(warn("vm-14") + error).culprit.node, "vm-14");
    EXPECT_EQ(Classify(warn("vm-14") + warn("vm-15") + error).culprit.node, "");
    EXPECT_EQ(Classify(warn("50428e4af543") + error).culprit.node, "");
    // A pasted session's prompt names the machine its command ran on, unless the command ran
    // on others (srun from a login node).
    const std::string ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered\n";
    EXPECT_EQ(Classify("root@gpu-node-7:~# python train.py\n" + ecc).culprit.node, "gpu-node-7");
    EXPECT_EQ(Classify("[alice@login01 ~]$ srun -N2 python train.py\n" + ecc).culprit.node, "");
    EXPECT_EQ(Classify(std::string("[alice@login01 ~]$ /usr/bin/srun python train.py\n") +
                       "[root@gpu-node-7 ~]# dmesg\n" + ecc)
                  .culprit.node,
              "gpu-node-7");
    // The node srun says failed under the step; Open MPI's and UCX's "[host:pid]" prefixes.
    EXPECT_EQ(Classify(error + "srun: error: Node failure on gpu-b07\n").culprit.node, "gpu-b07");
    EXPECT_EQ(
        Classify("[cn0244:260472] pml_ucx.c:421  Error: ucp_ep_create(proc=47) failed\n" + error)
            .culprit.node,
        "cn0244");
    EXPECT_EQ(Classify("[1737742661.094513] [cn0244:260472:0]  ib_mlx5_dv.c:430  UCX  ERROR  "
                       "mlx5dv_devx_obj_create(QP) failed\n" +
                       error)
                  .culprit.node,
              "cn0244");
    EXPECT_EQ(Classify("[lxbk1127:2330856:0:2330856] ib_mlx5_log.c:177  Transport retry count "
                       "exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)\n")
                  .culprit.node,
              "lxbk1127");
    // The MPI launcher's: the daemon it lost (not its own node), the first rank that died.
    EXPECT_EQ(Classify("ORTE has lost communication with a remote daemon.\n"
                       "  HNP daemon   : [[27407,0],0] on node batch2\n"
                       "  Remote daemon: [[27407,0],1] on node d23n02\n")
                  .culprit.node,
              "d23n02");
    EXPECT_EQ(Classify(error + "mpirun noticed that process rank 3 with PID 4242 on node gpu017 "
                               "exited on signal 6 (Aborted).\n")
                  .culprit.node,
              "gpu017");
    // NCCL 2.19+'s "(function)" after the file, behind a time; HPE Cray MPICH's abort line.
    EXPECT_EQ(Classify("[2026-06-23 15:45:07] gpu-7:420:437 [5] transport/nvls.cc:379 "
                       "(nvlsAllocateMem) NCCL WARN frobnication failed\n" +
                       error)
                  .culprit.node,
              "gpu-7");
    EXPECT_EQ(Classify(error + "MPICH ERROR [Rank 12] [job id 3246040.0] [Fri Sep 23 17:26:26 "
                               "2022] [nid001616] - Abort(1) (rank 12 in comm 0): application "
                               "called MPI_Abort(comm=0x84000000, 1) - process 12\n")
                  .culprit.node,
              "nid001616");
    // Azure's distributed health checks: "host | line"; a table's row is no host's line.
    EXPECT_EQ(Classify("gpu-nd-015 | ERROR: nhc: Health check failed: check_ecc: GPU id 5: Row "
                       "remap error. FaultCode: NHC2007\n")
                  .culprit.node,
              "gpu-nd-015");
    EXPECT_EQ(Classify("gpu0 | Fail | frob error\n" + error).culprit.node, "");
    EXPECT_EQ(Classify("[rank3]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] failed\n" + error)
                  .culprit.node,
              "");
}

// Lines that name no rank of their own: the root cause of torchrun's failure summary (after the
// other failures), else the one rank the "[rankN]:" lines name, else the local rank of the worker
// torchrun saw fail; two ranks name none.
TEST(Diagnose, TheRankTorchrunOrTheWholePasteNamesIsTheCulprit) {
    const std::string error = "RuntimeError: CUDA error: device-side assert triggered\n";
    Diagnosis summary =
        Classify(error +
                 "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
                 "Failures:\n[1]:\n  host      : gpu7\n  rank      : 5 (local_rank: 1)\n"
                 "Root Cause (first observed failure):\n[0]:\n  host      : gpu7\n"
                 "  rank      : 4 (local_rank: 0)\n");
    EXPECT_EQ(summary.rule, "cuda-device-assert");
    EXPECT_EQ(summary.culprit.rank, 4);
    auto line = [](int rank) {
        return "[rank" + std::to_string(rank) + "]: ValueError: step " + std::to_string(rank) +
               " failed\n";
    };
    EXPECT_EQ(Classify(error + line(2)).culprit.rank, 2);
    EXPECT_FALSE(Classify(error + line(2) + line(3)).culprit.rank.has_value());
    EXPECT_EQ(
        Classify(error + "E0613 07:54:22.195000 180275 torch/distributed/elastic/multiprocessing/"
                         "api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 180497) of binary: "
                         "/usr/bin/python3\n")
            .culprit.rank,
        3);
    // srun's first failed task is the job's rank; a range of tasks names none.
    EXPECT_EQ(Classify(error + "srun: error: crusher010: task 32: Segmentation fault (core "
                               "dumped)\nsrun: error: crusher008: tasks 16-31: Terminated\n")
                  .culprit.rank,
              32);
    EXPECT_FALSE(Classify(error + "srun: error: crusher008: tasks 16-31: Terminated\n"
                                  "srun: error: crusher010: task 32: Terminated\n")
                     .culprit.rank.has_value());
    // The task the JAX coordination service set to ERROR is the one lost, not a waiter.
    Diagnosis jax = Classify(
        "2022-11-15 16:03:15.140058: E external/org_tensorflow/tensorflow/core/distributed_runtime/"
        "coordination/coordination_service.cc:954] /job:jax_worker/replica:0/task:37 has been set "
        "to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:37 "
        "heartbeat timeout.\n");
    EXPECT_EQ(jax.rule, "jax-coordination-lost");
    EXPECT_EQ(jax.culprit.rank, 37);
}

// nvidia-smi's output read as structure: an indented line of a GPU's block (-q's "GPU
// 00000000:3B:00.0", nvlink -s's "GPU 3: NAME (UUID: ...)") is that GPU's; a line at the margin
// after nvidia-smi -L is not.
TEST(Diagnose, AnIndentedLineOfAGpuBlockIsThatGpus) {
    Diagnosis remap = Classify(
        "GPU 00000000:1A:00.0\n    Remapped Rows\n        Pending                : No\n"
        "GPU 00000000:3B:00.0\n    Remapped Rows\n        Pending                : Yes\n");
    EXPECT_EQ(remap.rule, "nvidia-smi-remap-pending");
    EXPECT_EQ(remap.culprit.gpu, "0000:3b:00.0");
    Diagnosis link = Classify(
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a)\n\t Link 0: 26.562 GB/s\n"
        "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-3d)\n\t Link 0: 26.562 GB/s\n"
        "\t Link 1: <inactive>\n");
    EXPECT_EQ(link.rule, "nvlink-inactive");
    EXPECT_EQ(link.culprit.gpu_index, 3);
    Diagnosis after = Classify(
        "GPU 7: NVIDIA H100 80GB HBM3 (UUID: GPU-7f)\n"
        "RuntimeError: CUDA error: uncorrectable ECC error encountered\n");
    EXPECT_EQ(after.cause, "gpu_hbm_memory");
    EXPECT_FALSE(after.culprit.gpu_index.has_value());
}

TEST(Diagnose, NvlinkRegistersAreDecodedPerTheCatalog) {
    EvidenceSet set;
    Diagnosis mech = Classify(
        "NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=p, NVLink: fatal error detected on link "
        "3(0x1000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)\n",
        {}, &set);
    EXPECT_EQ(mech.rule, "xid-74-mechanical");
    EXPECT_EQ(set.items[0].Field("nvlink_class"), "mechanical");
    EXPECT_EQ(Classify("NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=p, NVLink: fatal error "
                       "detected on link 3(0x800001, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)\n")
                  .rule,
              "xid-74-ignorable");
    // Xid 149: subcode = IntrInfo bits 20-25. 0x025001c6 -> 37 (reset), 0x026001c6 -> 38 (ignore).
    const std::string prefix =
        "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (";
    const std::string rest =
        " 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n";
    Diagnosis reset = Classify(prefix + "0x025001c6" + rest, {}, &set);
    EXPECT_EQ(set.items[0].Field("subcode"), "37");
    EXPECT_EQ(reset.rule, "xid-149-nvlink5-reset-gpu");
    EXPECT_THAT(reset.actions, ElementsAre("reset_gpu"));
    Diagnosis ignore = Classify(prefix + "0x026001c6" + rest);
    EXPECT_EQ(ignore.rule, "xid-149-nvlink5-ignore");
    EXPECT_TRUE(ignore.actions.empty());
    EXPECT_FALSE(ignore.requeue);
}

TEST(Diagnose, EvidenceCarriesLineNumbers) {
    Diagnosis d = Classify("a\nb\nFailed to initialize NVML: Driver/library version mismatch\n");
    ASSERT_EQ(d.evidence.size(), 1u);
    EXPECT_EQ(d.evidence[0].line, 3u);
    EXPECT_EQ(d.evidence[0].signature, "nvml-driver-mismatch");
}

TEST(Diagnose, ConfidenceIsCappedByTheEvidencesKind) {
    // The same fault read from the driver's own record and from a job's message: the kernel's
    // record may be trusted more, whatever the rule says.
    Diagnosis kernel = Classify(
        "[10.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n");
    EXPECT_EQ(kernel.evidence_kind, "kernel record");
    EXPECT_GT(kernel.confidence, 0.8);
    EXPECT_LE(kernel.confidence, 0.95);

    Diagnosis job = Classify("RuntimeError: CUDA error: uncorrectable ECC error encountered\n");
    EXPECT_EQ(job.cause, "gpu_hbm_memory");
    EXPECT_EQ(job.evidence_kind, "tool or job output");
    EXPECT_LE(job.confidence, 0.8);
    EXPECT_LT(job.confidence, kernel.confidence);

    Diagnosis none = Classify("hello\n");
    EXPECT_TRUE(none.evidence_kind.empty());
    EXPECT_EQ(none.confidence, 0.0);
}

}  // namespace
}  // namespace autoheal::diag::testing
