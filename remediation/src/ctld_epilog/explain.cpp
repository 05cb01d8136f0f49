// Explain: the run record, the decision file (the user's explanation, the node-side actions,
// the facts for `autoheal replay`), then the nodes' results and the due tickets.
#include <spdlog/spdlog.h>

#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/metrics.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {

void Explain(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
             const JobTimes& times, const std::string& requeue_failure,
             const std::vector<AskedNodeAction>& asked) {
    if (!times.requeued_elsewhere) {
        RunRecord r;
        r.job = env.ctx.job_id;
        r.run = in.job.restart_count;
        r.nodes = static_cast<int>(in.job.nodes.size());
        r.node_list = env.ctx.nodelist;
        r.start_time = times.start_time;
        r.end_time = times.end_time > 0 ? times.end_time : in.cluster.now;
        r.decided_at = env.clock.Now();
        r.outcome = d.outcome;
        r.cause = d.cause;
        r.culprits = SlurmAdapter::CompressHostlist(d.culprits);
        r.requeued = d.requeue && !env.rc.dry_run && requeue_failure.empty();
        auto recorded = env.store.RecordRun(r);
        if (!recorded) spdlog::error("autoheal: epilog-ctld: {}", recorded.error());
    }
    if (times.agent_ended) {
        // The agent's decision file for this run stands. The node epilogs of a run it requeued
        // count the run as Slurm does now (one more) and wait for a decision of that number.
        const int seen = std::atoi(env.ctx.restart_count.c_str());
        if (seen == in.job.restart_count) return;
        const std::string& dir = env.config.state_dir;
        // The copy is the decision of run `seen` as the node epilogs check it (DecisionMismatch).
        auto text =
            ReadSmallFile(DecisionFile(dir, env.ctx.job_id, in.job.restart_count), kMaxRecordBytes);
        auto agents = text ? DecisionRecordFromJson(*text) : Result<DecisionRecord>(text.status());
        if (!agents) {
            spdlog::warn("autoheal: epilog-ctld: {}", agents.error());
            return;
        }
        agents->facts.restart_count = seen;
        auto copied = WriteJobRecord(dir, DecisionFile(dir, env.ctx.job_id, seen),
                                     DecisionRecordToJson(*agents), 0644);
        if (!copied) spdlog::warn("autoheal: epilog-ctld: {}", copied.error());
        return;
    }
    DecisionRecord record;
    record.job = env.ctx.job_id;
    record.time = env.clock.Now();
    record.explanation = d.explanation;
    record.requeue = d.requeue;
    record.cause = d.cause;
    record.rule = d.rule;
    record.outcome = d.outcome;
    record.culprits = d.culprits;
    record.facts = in.job;
    for (const AskedNodeAction& a : asked) record.node_actions.push_back(a.action);
    auto decided =
        WriteJobRecord(env.config.state_dir,
                       DecisionFile(env.config.state_dir, env.ctx.job_id, in.job.restart_count),
                       DecisionRecordToJson(record), 0644);
    if (!decided) spdlog::warn("autoheal: epilog-ctld: {}", decided.error());
}

std::vector<std::string> AwaitNodeResults(const CtldEnv& env,
                                          const std::vector<AskedNodeAction>& asked) {
    std::vector<std::string> done;
    const int run = std::atoi(env.ctx.restart_count.c_str());
    const auto deadline =
        env.clock.Steady() +
        std::chrono::milliseconds(static_cast<int>(env.node_results_wait_seconds * 1000));
    std::vector<AskedNodeAction> waiting = asked;
    while (!waiting.empty()) {
        std::vector<AskedNodeAction> still;
        for (const AskedNodeAction& a : waiting) {
            const std::string path =
                NodeResultFile(env.config.state_dir, env.ctx.job_id, run, a.action.node);
            auto text = ReadSmallFile(path, kMaxRecordBytes);
            if (!text) {
                still.push_back(a);
                continue;
            }
            auto results = NodeResultsFromJson(*text);
            diag::Outcome outcome = diag::Outcome::kFailed;
            std::string detail = results ? "the node did not carry it out" : results.error();
            for (const NodeActionResult& r : results ? *results : std::vector<NodeActionResult>{}) {
                if (r.action != a.action.action || r.gpu != a.action.gpu) continue;
                // An outcome outside the catalog (a node of another version) reads as failed.
                const auto said = diag::ParseOutcome(r.outcome);
                outcome = said.value_or(diag::Outcome::kFailed);
                detail = a.action.gpu + ": " + (said ? "" : r.outcome + ": ") + r.detail;
            }
            RecordOutcome(env, a.incident, a.kind, a.action.node, outcome, detail);
            done.push_back(a.action.action + " " + a.action.node + ": " +
                           std::string(diag::ToString(outcome)));
        }
        waiting = std::move(still);
        if (waiting.empty() || env.clock.Steady() >= deadline) break;
        env.clock.Sleep(std::chrono::milliseconds(200));
    }
    for (const AskedNodeAction& a : waiting) {
        RecordOutcome(env, a.incident, a.kind, a.action.node, diag::Outcome::kFailed,
                      a.action.gpu + ": no result from the node");
        done.push_back(a.action.action + " " + a.action.node + ": failed");
    }
    return done;
}

void Finish(const CtldEnv& env, bool deliver_tickets) {
    // The job folders past their retention (job ids wrap: an old folder must not be there when
    // its id comes round again), a bounded number per job end.
    auto cleaned = CleanOldJobRecords(
        env.config.state_dir, env.clock.Now() - std::int64_t{86400} * env.rc.jobs_retention_days,
        env.ctx.job_id);
    if (!cleaned) spdlog::warn("autoheal: epilog-ctld: {}", cleaned.error());
    // Tickets that are due (this job's and earlier ones that could not be delivered).
    if (deliver_tickets) {
        auto delivered = DeliverDueTickets(env.store, env.tickets, env.clock.Now(), 50,
                                           env.ticket_budget_seconds);
        if (delivered) {
            for (const std::string& e : delivered->errors) {
                spdlog::warn("autoheal: tickets: {}", e);
            }
        }
    }
    // Metrics last: deliveries matter more.
    if (env.rc.metrics_dir.empty()) return;
    auto after = env.slurm.ListNodes();
    auto text =
        RenderControllerMetrics(env.store, after ? &*after : nullptr, env.rc, env.clock.Now());
    auto w = text ? WriteMetricsFile(env.rc.metrics_dir, kControllerMetricsFile, *text)
                  : Result<bool>(MakeError(text.error()));
    if (!w) spdlog::warn("autoheal: epilog-ctld: metrics: {}", w.error());
}

}  // namespace autoheal::remediation
