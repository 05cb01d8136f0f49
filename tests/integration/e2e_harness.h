// The harness of the cluster scenarios (e2e_test.cpp, policy_test.cpp): faults injected where the
// hardware would report them (a line in the node's kernel log file), a "training" job that fails
// the way one does, the incident store read back, autoheal.yaml changed for one test, and the
// cluster reset between scenarios.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster_client.h"

namespace autoheal::testing {

// The lab's state_dir (the incident store, the quarantine, the ticket spool).
std::string StateDir();

void AppendLine(const std::string& path, const std::string& line);

// A driver's Xid line as the node's kernel log (syslog format) shows it.
std::string Xid(int xid, const std::string& pci, const std::string& message);

// Appends a line to the lab's kernel log file of `node`.
void InjectKernel(const std::string& node, const std::string& line);

std::vector<std::string> Split(const std::string& s, char sep);

// Hostlist expression of the lab (node[1-2], node3, node[1,3-4]) to names.
std::vector<std::string> Nodes(const std::string& expr);

// SQL against the incident store (read-only), one column of text per row.
std::vector<std::string> Query(const std::string& sql);

// The ticket spool's files whose names start with `prefix`, read.
std::vector<std::string> SpoolTickets(const std::string& prefix);

// The lab's autoheal.yaml, changed for one test and put back after it (the programs read it at
// every run).
class ConfigOverride {
  public:
    explicit ConfigOverride(const std::string& extra_remediation_lines)
        : path_(ClusterDir() + "/etc/autoheal/autoheal.yaml"), saved_(ReadFile(path_)) {
        std::string text = saved_;
        const std::string anchor = "remediation:\n";
        text.insert(text.find(anchor) + anchor.size(), extra_remediation_lines);
        std::ofstream(path_) << text;
    }
    // Replaces the first `from` (a whole line of the lab's file, which must hold it) by `to`.
    ConfigOverride(const std::string& from, const std::string& to)
        : path_(ClusterDir() + "/etc/autoheal/autoheal.yaml"), saved_(ReadFile(path_)) {
        std::string text = saved_;
        const auto at = text.find(from);
        EXPECT_NE(at, std::string::npos) << from << " not in " << path_;
        if (at != std::string::npos) text.replace(at, from.size(), to);
        std::ofstream(path_) << text;
    }
    ~ConfigOverride() { std::ofstream(path_) << saved_; }

  private:
    std::string path_;
    std::string saved_;
};

// A "training" job: a step every 0.1 s, a complete PyTorch distributed checkpoint (step_N with
// .metadata written last) every 5 steps, resuming from AUTOHEAL_RESUME_CHECKPOINT. When the test
// creates <fault>-<restart>, the job fails with `message` (as the framework would print it); when
// it creates <fault>-stall-<restart>, that run stops making progress (no output, no checkpoint)
// until <fault>-stop. <fault>-stop ends every run; <fault>-stop-<restart> only that one.
struct TrainingJob {
    std::string name;
    int steps = 60;
    std::string message = "RuntimeError: CUDA error: unspecified launch failure";

    std::string ckpt() const { return ClusterDir() + "/state/e2e-" + name + "/ckpt"; }
    std::string fault() const { return ClusterDir() + "/state/e2e-" + name + "/fault"; }
    std::string output(const std::string& id) const {
        return ClusterDir() + "/state/e2e-" + name + "/out-" + id + ".txt";
    }
    std::string user = kJobUser;

    std::optional<std::string> Submit(std::vector<std::string> args) const {
        std::filesystem::remove_all(ClusterDir() + "/state/e2e-" + name);
        std::filesystem::create_directories(ckpt());
        // The job's folder (its output, its checkpoints) is its user's, as on a real cluster.
        EXPECT_TRUE(GiveToUser(ClusterDir() + "/state/e2e-" + name, user));
        args.push_back("--ckpt-dir=" + ckpt());
        args.push_back("--open-mode=append");
        args.push_back("--output=" + ClusterDir() + "/state/e2e-" + name + "/out-%j.txt");
        std::string script =
            "#!/bin/bash\n"
            "step=0\n"
            "if [ -n \"$AUTOHEAL_RESUME_CHECKPOINT\" ]; then\n"
            "  step=${AUTOHEAL_RESUME_CHECKPOINT##*step_}\n"
            "  echo \"resumed at step $step from $AUTOHEAL_RESUME_CHECKPOINT\"\n"
            "fi\n"
            "echo \"run restart=$AUTOHEAL_RESTART_COUNT nodes=$SLURM_JOB_NODELIST "
            "last=[$AUTOHEAL_LAST_FAILURE] excluded=[$AUTOHEAL_EXCLUDED_NODES]\"\n"
            "while [ $step -lt " +
            std::to_string(steps) +
            " ]; do\n"
            "  step=$((step + 1)); sleep 0.1\n"
            "  if [ $((step % 5)) -eq 0 ]; then\n"
            "    d=" +
            ckpt() +
            "/step_$step; mkdir -p $d\n"
            "    echo w > $d/__0_0.distcp; echo m > $d/.metadata; echo \"checkpoint $step\"\n"
            "  fi\n"
            "  if [ -e " +
            fault() +
            "-${SLURM_RESTART_COUNT:-0} ]; then\n"
            "    cat <<'MSG'\n" +
            message +
            "\nMSG\n"
            "    exit 1\n"
            "  fi\n"
            "  if [ -e " +
            fault() + "-stop ] || [ -e " + fault() +
            "-stop-${SLURM_RESTART_COUNT:-0} ]; then break; fi\n"
            // A run that stops making progress (no output, no checkpoint) until told to stop.
            "  if [ -e " +
            fault() +
            "-stall-${SLURM_RESTART_COUNT:-0} ]; then\n"
            "    while [ ! -e " +
            fault() +
            "-stop ]; do sleep 0.2; done\n"
            "  fi\n"
            "done\n"
            "echo \"completed at step $step\"\n";
        CommandResult r;
        auto id = autoheal::testing::Submit(args, script, &r, user);
        EXPECT_TRUE(id.has_value()) << r.err;
        return id;
    }
    // Waits for the run to have written checkpoint `step`, then injects and fails it.
    void FailRun(const std::string& id, int restart, int step,
                 const std::function<void(const std::vector<std::string>& nodes)>& inject) const {
        ASSERT_TRUE(WaitUntil([&] {
            return ReadFile(output(id)).find("checkpoint " + std::to_string(step)) !=
                   std::string::npos;
        })) << ReadFile(output(id));
        inject(Nodes(ShowJob(id)["NodeList"]));
        std::ofstream(fault() + "-" + std::to_string(restart)) << "x";
    }
};

// What autoheal told the user about the job's last end: the line it appended to the job's
// output (every decision), else the AdminComment (set on a requeue; Slurm refuses updates to a
// finished job).
std::string Explanation(const TrainingJob& job, const std::string& id);

// Some autoheal epilog program of this cluster (installed in its bin/) is running.
bool EpilogRunning();

// Puts every node back in service and clears what autoheal keeps between jobs, so each
// scenario starts from a healthy cluster with no history. A scenario may leave a reboot in
// flight (asked for, or issued and the node's slurmd restarting): resuming such a node would
// clear Slurm's record of the reboot under it, so it is left to finish, and only nodes that are
// drained or down with no reboot pending are resumed — again on every pass, since a reboot that
// completes after the first pass, or a slurmd that comes back late, can leave a node out. A
// reboot still shown after 30 s (never issued, or a slurmd that did not come back) is cancelled
// by the resume. autoheal's files and the lab's reboot and reset records are removed last, once no
// epilog of the cluster still runs (EpilogSlurmctld may outlive the job's nodes becoming idle, and
// would write into the next scenario's store).
void ResetCluster();

// A cluster scenario: starts from a reset cluster (ResetCluster) and, at its end, cancels the
// jobs it tracked, waits for them to end and resets the cluster again.
class ScenarioTest : public ::testing::Test {
  protected:
    void SetUp() override { ResetCluster(); }
    void TearDown() override {
        for (const std::string& id : jobs_) RunCommand({"scancel", id});
        WaitUntil([&] {
            for (const std::string& id : jobs_) {
                if (!JobFinished(id)) return false;
            }
            return true;
        });
        ResetCluster();
    }
    std::optional<std::string> Track(std::optional<std::string> id) {
        if (id) jobs_.push_back(*id);
        return id;
    }
    std::vector<std::string> jobs_;
};

}  // namespace autoheal::testing
