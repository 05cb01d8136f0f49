// DecideJob: every node's state (for the breaker), the decision (decision.h) and the job run.
#include <spdlog/spdlog.h>

#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/slurm_retry.h"

namespace autoheal::remediation {

Result<JobDecision> DecideJob(const CtldEnv& env, DecisionInput* in, const JobTimes& times) {
    auto nodes = UntilSlurmAnswers(env.clock, [&] { return env.slurm.ListNodes(); });
    if (!nodes) return nodes.status();
    in->cluster.nodes = std::move(*nodes);
    in->cluster.now = env.clock.Now();
    JobDecision d = Decide(*in);
    if (times.requeued_elsewhere) {
        d.requeue = false;
        d.explanation.clear();
    } else {
        auto runs = env.store.RecordJobRun(env.ctx.job_id, in->job.restart_count, in->job.nodes,
                                           in->cluster.now, d.outcome);
        if (!runs) spdlog::error("autoheal: epilog-ctld: {}", runs.error());
    }
    return d;
}

}  // namespace autoheal::remediation
