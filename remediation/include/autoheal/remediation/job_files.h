// The job's own files, as the programs that look at them while it runs or after it ended find
// and read them: its output's paths as Slurm names them, its newest checkpoint and its flight
// recorder dumps, each read with the job's user's file access (root never reads for a user what
// the user could not). Used by the batch host's node epilog (node_epilog/collect.cpp) and by
// autoheal-agent's hang watch (agent/hang_watch.h).
#pragma once

#include <pwd.h>
#include <sys/fsuid.h>
#include <sys/types.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/script_env.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

// The job's stdout (first) and stderr (when apart) as Slurm names them, patterns expanded
// (%j, %u, %x, %N with ctx.node as the first node); relative ones from the job's work_dir.
std::vector<std::string> JobOutputPaths(const JobInfo& job, const ScriptContext& ctx);

// Runs fn with the user's file access (setfsuid/setfsgid: this thread only, until restored);
// false (fn not run) for an unknown user. getpwuid_r: reading threads call this at once.
template <typename Fn>
bool WithUserFileAccess(uid_t uid, Fn&& fn) {
    passwd pwd{};
    passwd* pw = nullptr;
    std::array<char, 4096> buf{};
    if (::getpwuid_r(uid, &pwd, buf.data(), buf.size(), &pw) != 0 || pw == nullptr) return false;
    const gid_t gid = pw->pw_gid;
    const int old_gid = ::setfsgid(gid);
    const int old_uid = ::setfsuid(uid);
    fn();
    ::setfsuid(static_cast<uid_t>(old_uid));
    ::setfsgid(static_cast<gid_t>(old_gid));
    return true;
}

// The newest complete checkpoint in --ckpt-dir, looked for with the user's file access; numbers
// only.
std::optional<CheckpointMark> NewestCheckpointAsUser(const std::string& ckpt_dir, uid_t uid);

// The flight recorder dumps of run `restart` (core/flight_recorder_env.h: one folder per node,
// the user's), read with the user's file access and compared; the findings are added to
// `job_output` (the user's own files: a rank to leave out of the rerun, never a node action),
// what could not be read to `problems`. Nothing is read for an unknown user.
void AddFlightRecorderFindings(const std::string& state_dir, const std::string& job, int restart,
                               uid_t uid, diag::EvidenceSet* job_output,
                               std::vector<std::string>* problems);

}  // namespace autoheal::remediation
