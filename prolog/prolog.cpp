// autoheal-prolog — Prolog (slurmd, root, on every allocated node at allocation with
// PrologFlags=Alloc). Runs the health checks of the job's tier on the job's GPUs within the
// tier's budget, keeps the NVML snapshot as the epilog's baseline, and on a failed check drains
// the node with an autoheal reason and exits 1 so Slurm requeues the job elsewhere — unless the
// breaker is open (too many nodes already out: alert, let the job start) or in dry-run.
// Our own bugs fail open (exit 0): only evidence fails a node.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>

#include "autoheal/core/program.h"
#include "autoheal/core/script_env.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/breaker_lock.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/evidence_sources.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/metrics.h"
#include "autoheal/remediation/program_start.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace {

using autoheal::HealthTier;
namespace health = autoheal::health;
namespace rem = autoheal::remediation;

// state_dir/jobs/<job>/<node>.prolog.json: the baseline the epilog compares against (the
// health report with its NVML snapshot, and where the kernel log stood when the job started).
void SaveBaseline(const std::string& state_dir, const autoheal::ScriptContext& ctx,
                  const health::HealthReport* report, const std::string& kernel_cursor) {
    if (!rem::SafePathPart(ctx.job_id) || !rem::SafePathPart(ctx.node)) return;
    rem::PrologBaseline baseline;
    baseline.time = static_cast<std::int64_t>(std::time(nullptr));
    baseline.kernel_cursor = kernel_cursor;
    baseline.options = ctx.options;
    baseline.job_gpus = ctx.job_gpus;
    if (report != nullptr) baseline.snapshot = report->snapshot;
    auto written = rem::WriteJobRecord(state_dir, rem::PrologFile(state_dir, ctx.job_id, ctx.node),
                                       rem::PrologBaselineToJson(baseline, report), 0640);
    if (!written) spdlog::warn("autoheal: prolog: {}", written.error());
}

std::string DrainReason(const health::HealthReport& report) {
    const health::CheckResult* worst = report.Worst();
    rem::NodeReason reason;
    reason.cause = autoheal::diag::Cause::kHealth;
    if (worst != nullptr) {
        reason.fields = {{"check", worst->check}, {"gpu", worst->gpu}};
        reason.note = worst->summary;
    }
    return rem::FormatReason(reason);
}

int Run(const rem::ProgramStart& start, const autoheal::ScriptContext& ctx) {
    const rem::RemediationConfig& rc = start.settings.remediation;
    const health::HealthConfig& hc = start.settings.health;
    const std::string& state_dir = start.settings.core.state_dir;
    // Where the kernel log stands now: the epilog reads what comes after.
    const std::string kernel_cursor = rem::KernelLogCursor(rem::KernelLogFor(rc, ctx.node));
    HealthTier tier = ctx.options.health_check.value_or(hc.default_tier);
    if (tier == HealthTier::kOff && !hc.allow_off) {
        spdlog::info(
            "autoheal: prolog: job={} asked for --health-check=off, which this site "
            "does not allow: running {}",
            ctx.job_id, autoheal::HealthTierName(hc.default_tier));
        tier = hc.default_tier;
    }
    if (tier == HealthTier::kOff) {
        spdlog::info("autoheal: prolog: job={} node={}: health checks off", ctx.job_id, ctx.node);
        SaveBaseline(state_dir, ctx, nullptr, kernel_cursor);
        return 0;
    }
    if (ctx.job_gpus.empty()) {
        SaveBaseline(state_dir, ctx, nullptr, kernel_cursor);
        spdlog::info("autoheal: prolog: job={} node={}: no GPUs allocated, nothing to check",
                     ctx.job_id, ctx.node);
        return 0;
    }
    auto minors = health::ParseGpuList(ctx.job_gpus);
    if (!minors) {
        spdlog::error("autoheal: prolog: cannot read SLURM_JOB_GPUS='{}': no checks run",
                      ctx.job_gpus);
        return 0;
    }
    health::RunRequest request;
    request.tier = tier;
    request.gpu_minors = *minors;
    request.config = hc;
    request.cuda_module = health::ResolveCudaModule(hc, autoheal::SelfExePath());
    health::HealthReport report = health::RunHealthChecks(request);
    SaveBaseline(state_dir, ctx, &report, kernel_cursor);
    for (const health::CheckResult& r : report.results) {
        if (r.status == health::Status::kPass) continue;
        spdlog::warn("autoheal: prolog: job={} node={} {} {}{}: {}", ctx.job_id, ctx.node,
                     health::StatusName(r.status), r.check, r.gpu.empty() ? "" : " gpu=" + r.gpu,
                     r.summary);
    }
    spdlog::info("autoheal: prolog: job={} node={} tier={} verdict={} checks={} seconds={:.3f}",
                 ctx.job_id, ctx.node, autoheal::HealthTierName(tier),
                 health::StatusName(report.status), report.results.size(), report.seconds);
    if (!rc.metrics_dir.empty()) {
        auto w = rem::WriteMetricsFile(
            rc.metrics_dir, rem::kHealthMetricsFile,
            rem::RenderHealthMetrics(report, ctx.node,
                                     static_cast<std::int64_t>(std::time(nullptr))));
        if (!w) spdlog::warn("autoheal: prolog: metrics: {}", w.error());
    }
    if (report.status != health::Status::kFail) return 0;

    const std::string reason = DrainReason(report);
    if (rc.dry_run) {
        spdlog::warn("autoheal: prolog: node={} dry-run: would drain ({}) and fail the job's start",
                     ctx.node, reason);
        return 0;
    }
    // The breaker: past the limit of nodes autoheal may hold out of service, a failed check
    // alerts instead of draining one more node (exiting non-zero would make Slurm drain it).
    // The count and the drain happen under the breaker lock (breaker_lock.h), so the prologs of
    // one large job that fail together take out no more than the limit between them; node
    // states unreadable or the lock not taken in time: no node is taken out.
    rem::SlurmAdapter slurm(rc.slurm_conf);
    using Outcome = rem::BreakerDrain::Outcome;
    const rem::BreakerDrain drain =
        rem::DrainWithinBreaker(slurm, state_dir, rc.breaker, ctx.node, reason);
    switch (drain.outcome) {
        case Outcome::kHeld:
            spdlog::error("autoheal: ALERT: {}; node={} not drained, job={} allowed to start: {}",
                          drain.detail, ctx.node, ctx.job_id, reason);
            return 0;
        case Outcome::kFailed:
            spdlog::error("autoheal: prolog: node={}: {}", ctx.node, drain.detail);
            break;
        case Outcome::kAdminOwned:
            spdlog::warn("autoheal: prolog: node={} already drained by an admin: reason kept",
                         ctx.node);
            break;
        case Outcome::kDrained:
        case Outcome::kAlreadyOurs:
            spdlog::warn("autoheal: prolog: node={} drained: {}", ctx.node, reason);
            break;
    }
    // Non-zero: Slurm requeues the job (nohold_on_prolog_fail) and keeps it off this node.
    return 1;
}

}  // namespace

// Our own bugs fail open (RunJobScript: exit 0, the job is allowed to start).
int main() { return rem::RunJobScript("autoheal-prolog", "prolog", Run); }
