// DecideJob: every node's state and the GPU resets in flight (for the breaker), the decision
// (decision.h) and the job run.
#include <spdlog/spdlog.h>

#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/slurm_retry.h"

namespace autoheal::remediation {

Result<JobDecision> DecideJob(const CtldEnv& env, DecisionInput* in, const JobTimes& times,
                              const BreakerLock& breaker) {
    auto nodes = UntilSlurmAnswers(env.clock, [&] { return env.slurm.ListNodes(); });
    if (!breaker.held()) {
        // A prolog may be draining a node right now: the count cannot be trusted.
        spdlog::error("autoheal: epilog-ctld: breaker: {}", breaker.error());
        in->cluster.nodes_known = false;
    }
    if (nodes) {
        in->cluster.nodes = std::move(*nodes);
    } else {
        // The breaker cannot count: no node is taken out, the job is still decided.
        spdlog::error("autoheal: epilog-ctld: breaker: node states unreadable: {}", nodes.error());
        in->cluster.nodes_known = false;
    }
    in->cluster.now = env.clock.Now();
    // GPU resets other decisions asked of nodes and still running (each waits at most
    // node_results_wait_seconds for its result, then records it).
    auto busy = env.store.NodesWithActionsAsked(
        static_cast<std::int64_t>(env.node_results_wait_seconds) + 60);
    if (busy) {
        in->cluster.busy_with_asked = std::move(*busy);
    } else {
        spdlog::error("autoheal: epilog-ctld: breaker: {}", busy.error());
        in->cluster.nodes_known = false;
    }
    JobDecision d = Decide(*in);
    if (times.requeued_elsewhere) {
        d.requeue = false;
        d.explanation.clear();
    } else {
        RecordJobRunOf(env, *in, d);
    }
    return d;
}

bool RecordJobRunOf(const CtldEnv& env, const DecisionInput& in, const JobDecision& d) {
    // job_runs feeds the lemons: an unexplained run that is no evidence is kept as "other".
    const bool no_evidence = d.outcome == "unexplained" && !d.counts_towards_lemons;
    auto runs =
        env.store.RecordJobRun(env.ctx.job_id, in.job.restart_count, in.job.nodes, in.cluster.now,
                               no_evidence ? "other" : d.outcome, in.job.user);
    if (!runs) spdlog::error("autoheal: epilog-ctld: {}", runs.error());
    // Each GPU's power and temperature summary, for `autoheal node` and `autoheal report`.
    for (const NodeReport& r : in.reports) {
        auto t = env.store.RecordGpuTelemetry(env.ctx.job_id, in.job.restart_count, r.node,
                                              in.cluster.now, r.evidence);
        if (!t) spdlog::error("autoheal: epilog-ctld: {}", t.error());
    }
    return runs.ok();
}

}  // namespace autoheal::remediation
