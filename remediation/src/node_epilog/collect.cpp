// Collect: the node's evidence of the job's lifetime, a thin caller of evidence_sources.h.
#include <pwd.h>
#include <sys/fsuid.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>

#include "autoheal/core/checkpoint.h"
#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/diag/flight_recorder.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/evidence_sources.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/run_command.h"

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
        for (diag::Evidence& e : NvmlDeltaEvidence(*before, ev->after)) {
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

// The job's stdout (first) and stderr (when apart) as Slurm names them.
std::vector<std::string> JobOutputPaths(const JobInfo& job, const ScriptContext& ctx) {
    OutputPatternValues v;
    v.job_id = ctx.job_id;
    v.array_job_id = job.array_job_id ? std::to_string(job.array_job_id) : "";
    v.array_task_id = job.array_job_id ? std::to_string(job.array_task_id) : "";
    v.user = job.user_name.empty() ? ctx.user : job.user_name;
    v.job_name = job.name;
    v.first_node = ctx.node;
    auto resolve = [&](const std::string& pattern) {
        if (pattern.empty() || pattern == "/dev/null") return std::string();
        std::string p = ExpandOutputPattern(pattern, v);
        if (!p.empty() && p.front() != '/') p = job.work_dir + "/" + p;
        return p;
    };
    std::string out = resolve(job.std_out);
    if (job.std_out.empty()) {
        out = job.work_dir + "/slurm-" +
              (job.array_job_id ? v.array_job_id + "_" + v.array_task_id : v.job_id) + ".out";
    }
    std::vector<std::string> paths = {out};
    const std::string err = resolve(job.std_err);
    if (!err.empty() && err != out) paths.push_back(err);
    return paths;
}

// The newest complete checkpoint in --ckpt-dir, looked for with the job's user's file access
// (setfsuid/setfsgid: this thread only, until restored), so root reads nothing the user could
// not; numbers only go into the report.
// Runs fn with the user's file access; false (fn not run) for an unknown user. getpwuid_r: the
// flight recorder's reading threads call this at once.
template <typename Fn>
bool WithUserFileAccess(uid_t uid, Fn&& fn) {
    passwd pwd{};
    passwd* pw = nullptr;
    std::array<char, 4096> buf{};
    if (::getpwuid_r(uid, &pwd, buf.data(), buf.size(), &pw) != 0 || pw == nullptr) return false;
    const gid_t gid = pw->pw_gid;
    const int old_gid = ::setfsgid(gid);
    const int old_uid = ::setfsuid(uid);
    fn();
    ::setfsuid(static_cast<uid_t>(old_uid));
    ::setfsgid(static_cast<gid_t>(old_gid));
    return true;
}

std::optional<CheckpointMark> NewestCheckpointAsUser(const std::string& ckpt_dir, uid_t uid) {
    CheckpointSearch found;
    WithUserFileAccess(uid, [&] { found = FindNewestCheckpoint(ckpt_dir); });
    if (!found.newest) return std::nullopt;
    return CheckpointMark{found.newest->step, found.newest->mtime};
}

// The run's flight recorder dumps (core/flight_recorder_env.h: one folder per node, the user's),
// read with the user's file access and compared; the findings join the job's output evidence:
// like the output, the dumps are the user's own files (a rank to leave out of the rerun, never a
// node action).
void CollectFlightRecorder(const NodeEpilogEnv& env, uid_t uid, NodeEvidence* ev) {
    const std::string dir = FlightRecorderDir(env.config.state_dir, env.ctx.job_id,
                                              std::atoi(env.ctx.restart_count.c_str()));
    // Every reading thread switches its own file access (setfsuid holds per thread).
    bool known_user = true;
    const diag::FrFolder folder = diag::ReadFrFolder(dir, [&](const std::function<void()>& read) {
        if (!WithUserFileAccess(uid, read)) known_user = false;
    });
    if (!known_user) return;  // no such user: nothing was read
    for (const std::string& p : folder.problems) {
        ev->report.problems.push_back("flight recorder: " + p);
    }
    if (folder.dumps.empty()) return;
    diag::AddFlightRecorderEvidence(diag::AnalyzeFlightRecorder(folder.dumps), folder.rank_nodes,
                                    "flight-recorder", &ev->report.job_output);
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
    CollectFlightRecorder(env, job->user_id, ev);
    if (env.ctx.options.ckpt_dir) {
        ev->report.checkpoint = NewestCheckpointAsUser(*env.ctx.options.ckpt_dir, job->user_id);
    }
}

}  // namespace autoheal::remediation
