// autoheal-prolog — Prolog (slurmd, root, on every allocated node at allocation with
// PrologFlags=Alloc). Runs the health checks of the job's tier on the job's GPUs within the
// tier's budget, keeps the NVML snapshot as the epilog's baseline, and on a failed check drains
// the node with an autoheal reason and exits 1 so Slurm requeues the job elsewhere.
// Our own bugs fail open (exit 0): only evidence fails a node.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>

#include "autoheal/core/program.h"
#include "autoheal/core/script_env.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace {

using autoheal::HealthTier;
namespace health = autoheal::health;

bool SafeName(const std::string& s) {
    return !s.empty() && s.size() < 128 &&
           s.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyz"
               "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789._-") == std::string::npos;
}

// state_dir/jobs/<job>/<node>.prolog.json: the baseline the epilog compares against.
void SaveReport(const std::string& state_dir, const autoheal::ScriptContext& ctx,
                const health::HealthReport& report) {
    if (!SafeName(ctx.job_id) || !SafeName(ctx.node)) return;
    std::error_code ec;
    const auto dir = std::filesystem::path(state_dir) / "jobs" / ctx.job_id;
    std::filesystem::create_directories(dir, ec);
    const auto path = dir / (ctx.node + ".prolog.json");
    const auto tmp = dir / (ctx.node + ".prolog.json.tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << health::ReportToJson(report) << "\n";
        if (!out) {
            spdlog::warn("autoheal: prolog: cannot write {}", tmp.string());
            return;
        }
    }
    std::filesystem::rename(tmp, path, ec);
}

std::string DrainReason(const health::HealthReport& report) {
    const health::CheckResult* worst = report.Worst();
    std::string reason = std::string(autoheal::remediation::kReasonPrefix) + " health " +
                         (worst != nullptr ? worst->check : "check");
    if (worst != nullptr && !worst->gpu.empty()) reason += " gpu=" + worst->gpu;
    if (worst != nullptr) reason += ": " + worst->summary;
    if (reason.size() > 200) reason.resize(200);
    return reason;
}

int Run() {
    autoheal::ProgramStart start = autoheal::StartProgram("autoheal-prolog");
    autoheal::ScriptContext ctx = autoheal::ReadScriptContext(autoheal::ProcessEnvLookup());
    spdlog::info("autoheal: prolog: job seen: {}", autoheal::DescribeScriptContext(ctx));
    auto config = health::ParseHealthConfig(start.config.health, start.config.source);
    if (!config) {
        spdlog::error("autoheal: prolog: health config: {}: no checks run", config.error());
        return 0;
    }
    HealthTier tier = ctx.options.health_check.value_or(config->default_tier);
    if (tier == HealthTier::kOff && !config->allow_off) {
        spdlog::info(
            "autoheal: prolog: job={} asked for --health-check=off, which this site "
            "does not allow: running {}",
            ctx.job_id, autoheal::HealthTierName(config->default_tier));
        tier = config->default_tier;
    }
    if (tier == HealthTier::kOff) {
        spdlog::info("autoheal: prolog: job={} node={}: health checks off", ctx.job_id, ctx.node);
        return 0;
    }
    if (ctx.job_gpus.empty()) {
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
    request.config = *config;
    request.cuda_module = health::ResolveCudaModule(*config, autoheal::SelfExePath());
    health::HealthReport report = health::RunHealthChecks(request);
    SaveReport(start.config.state_dir, ctx, report);
    for (const health::CheckResult& r : report.results) {
        if (r.status == health::Status::kPass) continue;
        spdlog::warn("autoheal: prolog: job={} node={} {} {}{}: {}", ctx.job_id, ctx.node,
                     health::StatusName(r.status), r.check, r.gpu.empty() ? "" : " gpu=" + r.gpu,
                     r.summary);
    }
    spdlog::info("autoheal: prolog: job={} node={} tier={} verdict={} checks={} seconds={:.3f}",
                 ctx.job_id, ctx.node, autoheal::HealthTierName(tier),
                 health::StatusName(report.status), report.results.size(), report.seconds);
    if (report.status != health::Status::kFail) return 0;

    const std::string reason = DrainReason(report);
    autoheal::remediation::SlurmAdapter slurm;
    auto drained = slurm.Drain(ctx.node, reason);
    if (!drained) {
        spdlog::error("autoheal: prolog: node={}: {}", ctx.node, drained.error());
    } else if (*drained == autoheal::remediation::SlurmAdapter::DrainOutcome::kAdminOwned) {
        spdlog::warn("autoheal: prolog: node={} already drained by an admin: reason kept",
                     ctx.node);
    } else {
        spdlog::warn("autoheal: prolog: node={} drained: {}", ctx.node, reason);
    }
    // Non-zero: Slurm requeues the job (nohold_on_prolog_fail) and keeps it off this node.
    return 1;
}

}  // namespace

int main() {
    try {
        return Run();
    } catch (const std::exception& e) {
        spdlog::error("autoheal: prolog: internal error, job allowed to start: {}", e.what());
    } catch (...) {
        spdlog::error("autoheal: prolog: internal error, job allowed to start");
    }
    return 0;
}
