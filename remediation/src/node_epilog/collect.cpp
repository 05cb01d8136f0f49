// Collect: the node's evidence of the job's lifetime, a thin caller of evidence_sources.h.
#include <algorithm>
#include <cstdlib>

#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/evidence_sources.h"
#include "autoheal/remediation/job_files.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/run_command.h"
#include "autoheal/remediation/telemetry_record.h"

namespace autoheal::remediation {
namespace {

// NVML deltas against the prolog's snapshot and the post-job quick check on the job's GPUs, as
// typed evidence (sources "nvml" and "health").
void CollectGpuEvidence(const NodeEpilogEnv& env, const std::optional<health::NodeSnapshot>& before,
                        NodeEvidence* ev) {
    if (env.ctx.job_gpus.empty()) return;
    auto minors = health::ParseGpuList(env.ctx.job_gpus);
    if (!minors) {
        ev->report.problems.push_back("post-job check not run: cannot read SLURM_JOB_GPUS");
        return;
    }
    health::RunRequest request;
    request.tier = HealthTier::kQuick;
    request.gpu_minors = *minors;
    request.config = env.health;
    request.cuda_module = health::ResolveCudaModule(env.health, env.self_exe);
    request.after_job = true;
    health::HealthReport post = health::RunHealthChecks(request);
    ev->after = post.snapshot;
    diag::EvidenceSet& set = ev->report.evidence;
    if (before) {
        for (diag::Evidence& e : NvmlDeltaEvidence(*before, ev->after, DeltaSpan::kJob)) {
            diag::AddEvidence(&set, "nvml", std::move(e));
        }
    }
    for (diag::Evidence& e : HealthCheckEvidence(post)) {
        diag::AddEvidence(&set, "health", std::move(e));
    }
    for (const auto& g : (before ? before->gpus : ev->after.gpus)) {
        ev->report.gpus.push_back({g.pci_bus_id, g.uuid, g.serial, g.name});
    }
    // The job's GPUs by PCI bus id: SLURM_JOB_GPUS holds minor numbers (/dev/nvidiaN).
    for (const auto& g : ev->after.gpus) {
        if (g.minor && std::find(minors->begin(), minors->end(), *g.minor) != minors->end())
            ev->report.job_gpus.push_back(g.pci_bus_id);
    }
}

}  // namespace

NodeEvidence CollectNodeEvidence(const NodeEpilogEnv& env) {
    NodeEvidence ev;
    NodeReport& report = ev.report;
    report.job = env.ctx.job_id;
    report.node = env.ctx.node;
    report.restart = std::atoi(env.ctx.restart_count.c_str());
    report.time = env.clock.Now();
    report.exit_code = env.ctx.exit_code;

    // The prolog's baseline: kernel log cursor and NVML snapshot.
    PrologBaseline baseline;
    const std::string prolog = PrologFile(env.config.state_dir, env.ctx.job_id, env.ctx.node);
    auto text = ReadSmallFile(prolog, kMaxRecordBytes);
    auto read = text ? PrologBaselineFromJson(*text) : Result<PrologBaseline>(text.status());
    if (read) {
        baseline = std::move(*read);
        ev.run_began = baseline.time;
    } else {
        report.problems.push_back("no prolog baseline: " + read.error());
    }

    // Kernel log since the prolog: the lines the signatures match.
    const std::string klog = KernelLogFor(env.rc, env.ctx.node);
    auto kernel = ReadKernelLogSince(klog, baseline.kernel_cursor, env.rc.kernel_log_max_bytes);
    if (!kernel) report.problems.push_back("kernel log: " + kernel.error());
    env.engine.scanner->ScanText(kernel ? *kernel : std::string(), "kernel", &report.evidence,
                                 diag::InputKind::kKernelLog);

    CollectGpuEvidence(env, baseline.snapshot, &ev);
    // autoheal-agent's power and temperature samples of the run (telemetry_record.h).
    AddTelemetryEvidence(env.config.state_dir, env.ctx.job_id, report.restart, env.ctx.node,
                         &report.evidence, &report.problems);
    return ev;
}

void CollectJobOutput(const NodeEpilogEnv& env, SlurmClient& slurm, NodeEvidence* ev) {
    const auto job =
        slurm.GetJob(static_cast<std::uint32_t>(std::strtoul(env.ctx.job_id.c_str(), nullptr, 10)));
    if (!job) {
        ev->report.problems.push_back("job output: " + job.error());
        return;
    }
    if (job->batch_host != env.ctx.node) return;
    const std::vector<std::string> paths = JobOutputPaths(*job, env.ctx);
    ev->output_path = paths.front();
    std::string text;
    for (const std::string& p : paths) {
        // As the job's user: the path is the user's choice, and root must not read for them
        // what they could not (a file of another user's, root's own).
        auto tail =
            ReadFileTailAsUser(p, env.rc.job_output_max_bytes,
                               static_cast<uid_t>(std::strtoul(env.ctx.uid.c_str(), nullptr, 10)));
        if (!tail) {
            ev->report.problems.push_back("job output: " + tail.error());
            continue;
        }
        text += *tail;
        if (!text.empty() && text.back() != '\n') text += '\n';
    }
    ev->report.job_output_read = true;
    env.engine.scanner->ScanText(text, "job-output", &ev->report.job_output);
    AddFlightRecorderFindings(env.config.state_dir, env.ctx.job_id,
                              std::atoi(env.ctx.restart_count.c_str()), job->user_id,
                              &ev->report.job_output, &ev->report.problems);
    if (env.ctx.options.ckpt_dir) {
        ev->report.checkpoint = NewestCheckpointAsUser(*env.ctx.options.ckpt_dir, job->user_id);
    }
}

}  // namespace autoheal::remediation
