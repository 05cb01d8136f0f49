// AddAgentEvidence: what autoheal-agent saw and did while the run went on, joined to the nodes'
// reports.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "autoheal/remediation/ctld_epilog_steps.h"

namespace autoheal::remediation {
namespace {

// The agent records of run `restart`, once none is still being written (an agent acting on the
// run writes its record first with no job_action and again when it is done), waiting at most
// kAgentRecordWaitSeconds. The agent hands its records through the shared jobs/ folder only,
// so no lock is shared with it: the wait is the hand-off.
std::vector<AgentRecord> SettledRecords(const CtldEnv& env, int restart) {
    const auto deadline =
        env.clock.Steady() + std::chrono::milliseconds(int(kAgentRecordWaitSeconds * 1000));
    for (;;) {
        std::vector<AgentRecord> records =
            AgentRecordsOf(env.config.state_dir, env.ctx.job_id, restart);
        const bool pending = std::any_of(records.begin(), records.end(),
                                         [](const AgentRecord& a) { return a.job_action.empty(); });
        if (!pending) return records;
        if (env.clock.Steady() >= deadline) {
            spdlog::warn(
                "autoheal: epilog-ctld: job={} run={}: an agent record is still being written "
                "after {}s: taken as evidence only",
                env.ctx.job_id, restart, kAgentRecordWaitSeconds);
            return records;
        }
        env.clock.Sleep(std::chrono::milliseconds(200));
    }
}

// The agent's evidence from the job's own files (a hang, its flight recorder dumps) joins the
// job's output evidence of the agent's node: the user's word, never the node's evidence.
void JoinJobEvidence(const AgentRecord& a, NodeReport* report) {
    if (a.job_output.items.empty()) return;
    diag::MergeEvidence(&report->job_output, a.job_output);
    report->job_output_read = true;
}

}  // namespace

AgentActed AddAgentEvidence(const CtldEnv& env, DecisionInput* in, bool being_requeued) {
    AgentActed acted;
    std::vector<AgentRecord> records = SettledRecords(env, in->job.restart_count);
    if (records.empty() && being_requeued && in->job.restart_count > 0) {
        records = SettledRecords(env, in->job.restart_count - 1);
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
        if (missing == in->job.missing_reports.end()) {  // its epilog reported
            for (NodeReport& r : in->reports) {
                if (r.node == a.node) JoinJobEvidence(a, &r);
            }
            continue;
        }
        in->job.missing_reports.erase(missing);
        NodeReport r;
        r.job = a.job;
        r.node = a.node;
        r.restart = a.restart;
        r.time = a.time;
        r.evidence = std::move(a.evidence);
        r.local_cause = a.cause;
        r.problems.push_back("no epilog report: judged on autoheal-agent's evidence");
        JoinJobEvidence(a, &r);
        in->reports.push_back(std::move(r));
    }
    std::sort(in->reports.begin(), in->reports.end(),
              [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });
    return acted;
}

}  // namespace autoheal::remediation
