#include "autoheal/agent/node_jobs.h"

#include <cstdint>

#include "autoheal/remediation/slurmd_steps.h"

namespace autoheal::agent {

namespace rem = autoheal::remediation;

Result<std::vector<rem::JobInfo>> JobsRunningHere(const AgentEnv& env) {
    if (env.slurmd_spool_dir.empty()) return env.slurm.RunningJobsOn(env.node);
    auto ids = rem::JobsWithStepsIn(env.slurmd_spool_dir, env.node);
    if (!ids) return env.slurm.RunningJobsOn(env.node);
    std::vector<rem::JobInfo> jobs;
    for (const std::uint32_t id : *ids) {
        auto job = env.slurm.GetJob(id);
        if (!job && job.code() == ErrorCode::kNotFound) continue;  // a stale socket
        if (!job) return job.status();
        if (job->state == "RUNNING" && !job->completing) jobs.push_back(std::move(*job));
    }
    return jobs;
}

}  // namespace autoheal::agent
