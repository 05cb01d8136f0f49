// AddAgentEvidence: what autoheal-agent saw and did while the run went on, joined to the nodes'
// reports.
#include <algorithm>

#include "autoheal/remediation/ctld_epilog_steps.h"

namespace autoheal::remediation {

AgentActed AddAgentEvidence(const CtldEnv& env, DecisionInput* in, bool being_requeued) {
    AgentActed acted;
    std::vector<AgentRecord> records =
        AgentRecordsOf(env.config.state_dir, env.ctx.job_id, in->job.restart_count);
    if (records.empty() && being_requeued && in->job.restart_count > 0) {
        records = AgentRecordsOf(env.config.state_dir, env.ctx.job_id, in->job.restart_count - 1);
        const bool requeued_it = std::any_of(records.begin(), records.end(), [](const auto& a) {
            return a.EndedRun() && a.job_action == "requeue";
        });
        if (requeued_it) {
            in->job.restart_count -= 1;  // the run the agent requeued
        } else {
            records.clear();
        }
    }
    for (AgentRecord& a : records) {
        acted.ended = acted.ended || a.EndedRun();
        acted.requeued = acted.requeued || (a.EndedRun() && a.job_action == "requeue");
        auto missing =
            std::find(in->job.missing_reports.begin(), in->job.missing_reports.end(), a.node);
        if (missing == in->job.missing_reports.end()) continue;  // its epilog reported
        in->job.missing_reports.erase(missing);
        NodeReport r;
        r.job = a.job;
        r.node = a.node;
        r.restart = a.restart;
        r.time = a.time;
        r.evidence = std::move(a.evidence);
        r.local_cause = a.cause;
        r.problems.push_back("no epilog report: judged on autoheal-agent's evidence");
        in->reports.push_back(std::move(r));
    }
    std::sort(in->reports.begin(), in->reports.end(),
              [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });
    return acted;
}

}  // namespace autoheal::remediation
