// CollectReports: the node epilogs' reports, waited for (they start after this program:
// SLURM-LAB.md), bounded.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "autoheal/remediation/ctld_epilog_steps.h"

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

void CollectReports(const CtldEnv& env, DecisionInput* in) {
    const auto deadline =
        env.clock.Steady() +
        std::chrono::milliseconds(static_cast<int>(env.rc.results_wait_seconds * 1000));
    std::vector<std::string> waiting = in->job.nodes;
    for (;;) {
        std::vector<std::string> still;
        for (const std::string& node : waiting) {
            if (!SafePathPart(node)) continue;
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
            in->reports.push_back(std::move(*report));
        }
        waiting = std::move(still);
        if (waiting.empty() || env.clock.Steady() >= deadline) break;
        env.clock.Sleep(std::chrono::milliseconds(100));
    }
    in->job.missing_reports = waiting;
    std::sort(in->reports.begin(), in->reports.end(),
              [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });
}

}  // namespace autoheal::remediation
