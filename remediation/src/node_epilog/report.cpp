// Report: the node's report for the controller, the wait for the controller's decision, the
// node's result file and the user's explanation.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "autoheal/diag/taxonomy.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/run_command.h"

namespace autoheal::remediation {

Result<bool> WriteNodeReport(const NodeEpilogEnv& env, const NodeReport& report) {
    return WriteJobRecord(
        env.config.state_dir,
        EpilogFile(env.config.state_dir, env.ctx.job_id, report.restart, env.ctx.node),
        NodeReportToJson(report), 0640);
}

bool NeedsDecision(const NodeEvidence& evidence, const diag::Diagnosis& local) {
    if (!evidence.output_path.empty()) return true;
    return std::any_of(local.actions.begin(), local.actions.end(), [](const std::string& a) {
        const diag::ActionInfo* info = diag::FindAction(a);
        return info != nullptr && info->runs == diag::Place::kNode;
    });
}

std::string DecisionMismatch(const DecisionRecord& d, const std::string& job, int restart,
                             std::int64_t not_before) {
    if (!d.job.empty() && d.job != job) return "for job " + d.job;
    if (d.facts.restart_count != restart) return "for run " + std::to_string(d.facts.restart_count);
    if (d.time != 0 && d.time < not_before) {
        return "decided at " + std::to_string(d.time) + ", before this run began at " +
               std::to_string(not_before);
    }
    return "";
}

std::optional<DecisionRecord> AwaitDecision(const NodeEpilogEnv& env, int restart,
                                            std::int64_t not_before) {
    const std::string path = DecisionFile(env.config.state_dir, env.ctx.job_id, restart);
    const auto until =
        env.clock.Steady() +
        std::chrono::milliseconds(static_cast<int>((env.rc.results_wait_seconds + 10) * 1000));
    std::string stale;
    while (env.clock.Steady() < until) {
        if (auto text = ReadSmallFile(path, kMaxRecordBytes)) {
            // A decision file that does not read (corrupted, hand-edited, a newer version) holds
            // nothing.
            auto d = DecisionRecordFromJson(*text);
            if (!d) {
                spdlog::warn("autoheal: epilog: {}: {}", path, d.error());
                return std::nullopt;
            }
            stale = DecisionMismatch(*d, env.ctx.job_id, restart, not_before);
            if (stale.empty()) return *d;
        }
        env.clock.Sleep(std::chrono::milliseconds(100));
    }
    if (!stale.empty())
        spdlog::warn("autoheal: epilog: {}: not this run's decision: {}", path, stale);
    return std::nullopt;
}

Result<bool> WriteNodeResults(const NodeEpilogEnv& env, int restart,
                              const std::vector<NodeActionResult>& results) {
    return WriteJobRecord(
        env.config.state_dir,
        NodeResultFile(env.config.state_dir, env.ctx.job_id, restart, env.ctx.node),
        NodeResultsToJson(env.ctx.node, results), 0640);
}

void AppendExplanation(const NodeEpilogEnv& env, const DecisionRecord& decision,
                       const std::string& output_path) {
    if (output_path.empty() || decision.explanation.empty()) return;
    auto appended =
        AppendAsUser(output_path, decision.explanation + "\n",
                     static_cast<uid_t>(std::strtoul(env.ctx.uid.c_str(), nullptr, 10)));
    if (!appended) spdlog::warn("autoheal: epilog: {}", appended.error());
}

}  // namespace autoheal::remediation
