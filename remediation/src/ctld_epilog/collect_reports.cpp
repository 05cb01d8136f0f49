// CollectReports: the node epilogs' reports, waited for (they start after this program:
// SLURM-LAB.md), bounded, and only this run's.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/telemetry_record.h"

namespace autoheal::remediation {

std::uint32_t JobIdOf(const CtldEnv& env) {
    return static_cast<std::uint32_t>(std::strtoul(env.ctx.job_id.c_str(), nullptr, 10));
}

bool RecordOutcome(const CtldEnv& env, std::int64_t incident, diag::Action action,
                   const std::string& target, diag::Outcome outcome, const std::string& detail) {
    auto r = env.store.RecordAction(incident, std::string(diag::ToString(action)), target,
                                    std::string(diag::ToString(outcome)), detail);
    if (!r) spdlog::error("autoheal: epilog-ctld: {}", r.error());
    return r && *r;
}

std::string ReportMismatch(const NodeReport& report, const std::string& job,
                           const std::string& node, int restart, std::int64_t run_start) {
    if (report.job != job) return "for job " + report.job;
    if (report.node != node) return "from node " + report.node;
    if (report.restart != restart) return "for run " + std::to_string(report.restart);
    if (report.time < run_start) {
        return "written at " + std::to_string(report.time) + ", before the run started at " +
               std::to_string(run_start);
    }
    return "";
}

void CollectReports(const CtldEnv& env, const JobTimes& times, DecisionInput* in) {
    const auto deadline =
        env.clock.Steady() +
        std::chrono::milliseconds(static_cast<int>(env.rc.results_wait_seconds * 1000));
    std::vector<std::string> waiting;
    // Only the nodes of the job's allocation; only this job's run is read.
    for (const std::string& node : in->job.nodes) {
        if (SafePathPart(node)) waiting.push_back(node);
    }
    std::map<std::string, std::string> refused;  // node -> why its file is not this run's
    for (;;) {
        std::vector<std::string> still;
        for (const std::string& node : waiting) {
            const std::string path =
                EpilogFile(env.config.state_dir, env.ctx.job_id, in->job.restart_count, node);
            auto text = ReadSmallFile(path, kMaxRecordBytes);
            if (!text) {
                still.push_back(node);
                continue;
            }
            auto report = NodeReportFromJson(*text);
            if (!report) {
                spdlog::warn("autoheal: epilog-ctld: {}: {}", path, report.error());
                continue;
            }
            // A file another job left (job ids wrap) or a report of another run: the node's
            // report of this run will replace it; until then the node has not reported.
            const std::string why = ReportMismatch(*report, env.ctx.job_id, node,
                                                   in->job.restart_count, times.start_time);
            if (!why.empty()) {
                refused[node] = path + ": not this run's report: " + why;
                still.push_back(node);
                continue;
            }
            refused.erase(node);
            in->reports.push_back(std::move(*report));
        }
        waiting = std::move(still);
        if (waiting.empty() || env.clock.Steady() >= deadline) break;
        env.clock.Sleep(std::chrono::milliseconds(100));
    }
    for (const auto& [node, why] : refused) spdlog::warn("autoheal: epilog-ctld: {}", why);
    in->job.missing_reports = waiting;
    std::sort(in->reports.begin(), in->reports.end(),
              [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });
    // The newest checkpoint the batch host's epilog found (the no-progress breaker's mark).
    for (const NodeReport& r : in->reports) {
        if (r.checkpoint) in->job.checkpoint = r.checkpoint;
    }
    // Each GPU's power and clocks against the job's other GPUs (the straggler), for the rules.
    std::vector<diag::EvidenceSet*> evidence;
    for (NodeReport& r : in->reports) evidence.push_back(&r.evidence);
    CompareJobGpus(evidence);
}

}  // namespace autoheal::remediation
