#include "autoheal/remediation/job_files.h"

#include <functional>

#include "autoheal/core/checkpoint.h"
#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/diag/flight_recorder.h"
#include "autoheal/remediation/evidence_sources.h"

namespace autoheal::remediation {

std::vector<std::string> JobOutputPaths(const JobInfo& job, const ScriptContext& ctx) {
    OutputPatternValues v;
    v.job_id = ctx.job_id;
    v.array_job_id = job.array_job_id ? std::to_string(job.array_job_id) : "";
    v.array_task_id = job.array_job_id ? std::to_string(job.array_task_id) : "";
    v.user = job.user_name.empty() ? ctx.user : job.user_name;
    v.job_name = job.name;
    v.first_node = ctx.node;
    auto resolve = [&](const std::string& pattern) {
        if (pattern.empty() || pattern == "/dev/null") return std::string();
        std::string p = ExpandOutputPattern(pattern, v);
        if (!p.empty() && p.front() != '/') p = job.work_dir + "/" + p;
        return p;
    };
    std::string out = resolve(job.std_out);
    if (job.std_out.empty()) {
        out = job.work_dir + "/slurm-" +
              (job.array_job_id ? v.array_job_id + "_" + v.array_task_id : v.job_id) + ".out";
    }
    std::vector<std::string> paths = {out};
    const std::string err = resolve(job.std_err);
    if (!err.empty() && err != out) paths.push_back(err);
    return paths;
}

std::optional<CheckpointMark> NewestCheckpointAsUser(const std::string& ckpt_dir, uid_t uid) {
    CheckpointSearch found;
    WithUserFileAccess(uid, [&] { found = FindNewestCheckpoint(ckpt_dir); });
    if (!found.newest) return std::nullopt;
    return CheckpointMark{found.newest->step, found.newest->mtime};
}

void AddFlightRecorderFindings(const std::string& state_dir, const std::string& job, int restart,
                               uid_t uid, diag::EvidenceSet* job_output,
                               std::vector<std::string>* problems) {
    const std::string dir = FlightRecorderDir(state_dir, job, restart);
    // Every reading thread switches its own file access (setfsuid holds per thread).
    bool known_user = true;
    const diag::FrFolder folder = diag::ReadFrFolder(dir, [&](const std::function<void()>& read) {
        if (!WithUserFileAccess(uid, read)) known_user = false;
    });
    if (!known_user) return;  // no such user: nothing was read
    for (const std::string& p : folder.problems) problems->push_back("flight recorder: " + p);
    if (folder.dumps.empty()) return;
    diag::AddFlightRecorderEvidence(diag::AnalyzeFlightRecorder(folder.dumps), folder.rank_nodes,
                                    "flight-recorder", job_output);
}

}  // namespace autoheal::remediation
