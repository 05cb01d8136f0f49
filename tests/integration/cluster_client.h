// Talks to the local test cluster the way a user does: by running sbatch, squeue and scontrol
// (no shell: argv goes straight to execvp). SLURM_CONF comes from AUTOHEAL_CLUSTER_DIR. Jobs are
// submitted by the lab's unprivileged users (tests/cluster/start.sh creates them), through
// `runuser -u USER --` with the argv unchanged; the admin's commands run as root.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "subprocess.h"

namespace autoheal::testing {

// The lab's job users (tests/cluster/common.sh): most jobs are kJobUser's.
inline constexpr const char* kJobUser = "ahuser1";
inline constexpr const char* kOtherJobUser = "ahuser2";

// Runs argv with SLURM_CONF set for the test cluster; `cwd` if given. Captures output.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& cwd = "");

// RunCommand as `user` (runuser -u USER -- argv...).
CommandResult RunAsUser(const std::string& user, const std::vector<std::string>& argv,
                        const std::string& cwd = "");

// Gives `path` and everything under it to `user` and its group (a folder the test prepares for
// a job: the job writes there as its user). False when the user or a file could not be found.
bool GiveToUser(const std::string& path, const std::string& user);

std::string ClusterDir();

// Submits a batch script (written to a file under the cluster folder) with extra sbatch
// arguments, as `user`; returns the job id, or nullopt with the result on failure.
std::optional<std::string> Submit(const std::vector<std::string>& sbatch_args,
                                  const std::string& script, CommandResult* result = nullptr,
                                  const std::string& user = kJobUser);

// `scontrol show job -o ID` parsed into Key=Value pairs (values without spaces only).
std::map<std::string, std::string> ShowJob(const std::string& job_id);

// Polls until pred() is true or the deadline passes; returns pred()'s last value.
bool WaitUntil(const std::function<bool()>& pred,
               std::chrono::milliseconds limit = std::chrono::seconds(60));

// Reads the whole autoheal log written by the prolog/epilog programs.
std::string AutohealLog();

// Polls the autoheal log until it holds `text` (at or after byte `from`: what was written since a
// size taken with AutohealLog().size()) or the deadline passes.
bool WaitForAutohealLog(const std::string& text,
                        std::chrono::milliseconds limit = std::chrono::seconds(60),
                        std::size_t from = 0);

// A whole file; empty when it cannot be read.
std::string ReadFile(const std::string& path);

// The job ended: COMPLETED, FAILED or CANCELLED.
bool JobFinished(const std::string& id);

// `scontrol show node -o NAME` parsed into Key=Value pairs; Reason keeps its spaces.
std::map<std::string, std::string> ShowNode(const std::string& node);

// One field of `scontrol show job -o ID` whose value may hold spaces (AdminComment, Comment).
std::string JobField(const std::string& job_id, const std::string& key);

}  // namespace autoheal::testing
