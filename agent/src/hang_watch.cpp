#include "autoheal/agent/hang_watch.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "autoheal/agent/job_files_probe.h"
#include "autoheal/agent/node_jobs.h"
#include "autoheal/core/files.h"
#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/diag/rules.h"
#include "autoheal/health/nvml_backend.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/job_files.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/run_command.h"

namespace autoheal::agent {
namespace rem = autoheal::remediation;

namespace {

constexpr std::chrono::seconds kFilesTimeout{10};
constexpr std::size_t kMaxFindings = 1u << 20;

// The job's prolog baseline on this node (its options and GPUs); none: not opted in.
rem::PrologBaseline BaselineOf(const AgentEnv& env, const std::string& job) {
    auto baseline = rem::ReadPrologBaseline(env.config.state_dir, job, env.node);
    return baseline ? *baseline : rem::PrologBaseline{};
}

// The job's hang timeout in seconds: its own, else the site's for an --auto-resume job; 0: none.
std::int64_t TimeoutOf(const AgentEnv& env, const JobOptions& options) {
    if (options.hang_timeout) return *options.hang_timeout;
    return options.auto_resume ? env.agent.hang_timeout_seconds : 0;
}

// What the job's GPUs on this node (every GPU when the job's are not known) are doing: the
// busiest one's utilization and memory utilization, and whether any of them works (a kernel
// running and memory moving).
struct GpuActivity {
    int judged = 0;
    bool working = false;
    unsigned gpu = 0;     // the highest utilization, percent
    unsigned memory = 0;  // the highest memory utilization, percent
};

// nullopt when NVML cannot tell (no answer in time, a GPU that does not say). No driver: no GPU
// can be working.
std::optional<GpuActivity> JobGpuActivity(const AgentEnv& env, const std::string& job_gpus) {
    const health::IsolatedSnapshot nvml =
        health::CollectSnapshotIsolated(env.health.nvml_library, NvmlDeadline(env));
    if (!nvml.snapshot) return std::nullopt;
    const auto minors = health::ParseGpuList(job_gpus);
    GpuActivity activity;
    for (const health::GpuSnapshot& g : nvml.snapshot->gpus) {
        const unsigned minor = g.minor.value_or(g.index);
        if (!job_gpus.empty() && minors &&
            std::find(minors->begin(), minors->end(), minor) == minors->end()) {
            continue;
        }
        if (!g.utilization_gpu || !g.utilization_memory) return std::nullopt;
        activity.gpu = std::max(activity.gpu, *g.utilization_gpu);
        activity.memory = std::max(activity.memory, *g.utilization_memory);
        activity.working = activity.working || (*g.utilization_gpu >= kIdleUtilizationPercent &&
                                                *g.utilization_memory >= kIdleUtilizationPercent);
        ++activity.judged;
    }
    return activity;
}

diag::EvidenceSet HangEvidence(std::int64_t timeout, std::int64_t idle, const GpuActivity& gpus) {
    diag::Evidence e;
    e.signature = diag::kJobHangSignature;
    e.text = "no progress for " + std::to_string(idle) + " s (hang timeout " +
             std::to_string(timeout) + " s), " + std::to_string(gpus.judged) +
             " GPU(s) idle or spinning (at most " + std::to_string(gpus.gpu) + "% busy, memory " +
             std::to_string(gpus.memory) + "%)";
    e.fields = {{"timeout", std::to_string(timeout)},
                {"idle", std::to_string(idle)},
                {"gpus", std::to_string(gpus.judged)},
                {"util", std::to_string(gpus.gpu)},
                {"mem_util", std::to_string(gpus.memory)}};
    diag::EvidenceSet set;
    diag::AddEvidence(&set, "hang-watch", std::move(e));
    return set;
}

bool HasFlightRecorder(const std::string& fr_dir) {
    struct stat st {};
    return ::lstat(fr_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> HangWatch::Poll() {
    std::vector<std::string> done;
    const std::int64_t now_ms = SteadyMs(env_.clock);
    if (now_ms < next_look_ms_) return done;
    next_look_ms_ = now_ms + static_cast<std::int64_t>(env_.agent.hang_check_seconds * 1000);
    auto jobs = JobsRunningHere(env_);  // one try: the next look is soon
    if (!jobs) return {"hang watch: " + jobs.error()};
    std::map<std::uint32_t, Watched> kept;
    for (const rem::JobInfo& job : *jobs) {
        auto it = jobs_.find(job.id);
        if (it != jobs_.end()) kept[job.id] = std::move(it->second);
    }
    jobs_ = std::move(kept);
    running_ = *jobs;
    for (const rem::JobInfo& job : *jobs) Look(job, &done);
    return done;
}

void HangWatch::Look(const rem::JobInfo& job, std::vector<std::string>* done) {
    Watched& w = jobs_[job.id];
    if (w.restart != job.restart_count) w = Watched{.restart = job.restart_count};
    if (w.acted) return;
    const std::string id = std::to_string(job.id);
    const rem::PrologBaseline baseline = BaselineOf(env_, id);
    const std::int64_t timeout = TimeoutOf(env_, baseline.options);
    if (timeout <= 0) return;
    AnswerDumpRequest(job, &w, done);
    if (job.batch_host != env_.node) return;
    if (w.dump_requested != 0) {
        if (DumpsDone(job, w)) Act(job, &w, done);
        return;
    }
    diag::EvidenceSet hang;
    if (!SeemsStopped(job, baseline, timeout, &w, &hang, done)) return;
    const std::string fr_dir = FlightRecorderDir(env_.config.state_dir, id, job.restart_count);
    w.hang = std::move(hang);
    // Dumps are asked for only from ranks that made a pipe (PyTorch with the recorder on).
    auto count = HasFlightRecorder(fr_dir)
                     ? CountDumps(fr_dir, 0, job.user_id, kFilesTimeout)
                     : Result<DumpCount>(MakeError(ErrorCode::kNotFound, "no recorder"));
    if (!count || count->pipes == 0) return Act(job, &w, done);
    w.dump_requested = env_.clock.Now();
    WriteHangRecord(env_, job, w.hang, w.dump_requested);
    done->push_back("job " + id + ": hung; flight recorder dumps asked for");
    AnswerDumpRequest(job, &w, done);
}

// Any agent of the job's nodes: the batch host's agent asked for dumps (its record of the run,
// not final, says dump_requested): this node's ranks are asked, once.
void HangWatch::AnswerDumpRequest(const rem::JobInfo& job, Watched* w,
                                  std::vector<std::string>* done) {
    if (w->answered) return;
    const std::string id = std::to_string(job.id);
    bool requested = w->dump_requested != 0;
    if (!requested) {
        for (const rem::AgentRecord& a :
             rem::AgentRecordsOf(env_.config.state_dir, id, job.restart_count)) {
            requested = requested || (a.dump_requested != 0 && a.job_action.empty());
        }
    }
    if (!requested) return;
    w->answered = true;
    const std::string dir =
        FlightRecorderDir(env_.config.state_dir, id, job.restart_count) + "/" + env_.node;
    auto asked = AskForDumps(dir, job.user_id, kFilesTimeout);
    done->push_back("job " + id + ": " +
                    (asked ? "asked " + std::to_string(*asked) + " rank(s) on " + env_.node +
                                 " for a flight recorder dump"
                           : "dump pipes: " + asked.error()));
}

// The batch host: the job's files have not advanced for `timeout` and its GPUs here do no work.
bool HangWatch::SeemsStopped(const rem::JobInfo& job, const rem::PrologBaseline& baseline,
                             std::int64_t timeout, Watched* w, diag::EvidenceSet* hang,
                             std::vector<std::string>* done) {
    ScriptContext ctx;
    ctx.job_id = std::to_string(job.id);
    ctx.node = env_.node;
    ctx.user = job.user_name;
    auto progress = ProbeJobFiles(rem::JobOutputPaths(job, ctx), baseline.options.ckpt_dir,
                                  job.user_id, kFilesTimeout);
    if (!progress) {
        done->push_back("job " + ctx.job_id + ": hang watch: " + progress.error());
        return false;
    }
    const std::int64_t now = env_.clock.Now();
    if (progress->output_bytes != w->output_bytes || w->changed == 0) w->changed = now;
    w->output_bytes = progress->output_bytes;
    const std::int64_t last = std::max({progress->newest_mtime, w->changed, job.start_time});
    const std::int64_t idle = now - last;
    if (idle < timeout) return false;
    const std::optional<GpuActivity> gpus = JobGpuActivity(env_, baseline.job_gpus);
    if (!gpus || gpus->working) {
        spdlog::debug(
            "autoheal: agent: job {}: no progress for {} s, GPUs working ({})", ctx.job_id, idle,
            gpus
                ? std::to_string(gpus->gpu) + "% busy, memory " + std::to_string(gpus->memory) + "%"
                : "unknown");
        return false;
    }
    *hang = HangEvidence(timeout, idle, *gpus);
    return true;
}

// Every rank that made a pipe has dumped since the request, or agent.hang_dump_wait passed.
bool HangWatch::DumpsDone(const rem::JobInfo& job, const Watched& w) {
    if (env_.clock.Now() - w.dump_requested >=
        static_cast<std::int64_t>(env_.agent.hang_dump_wait_seconds)) {
        return true;
    }
    const std::string fr_dir =
        FlightRecorderDir(env_.config.state_dir, std::to_string(job.id), job.restart_count);
    auto count = CountDumps(fr_dir, w.dump_requested, job.user_id, kFilesTimeout);
    return count && count->pipes > 0 && count->fresh_dumps >= count->pipes;
}

void HangWatch::Act(const rem::JobInfo& job, Watched* w, std::vector<std::string>* done) {
    w->acted = true;
    diag::EvidenceSet evidence = w->hang;
    if (w->dump_requested != 0) {
        // Read and compared as the user, in a bounded child: the dumps are the user's files.
        auto findings = rem::RunAsUser(job.user_id, kFilesTimeout, kMaxFindings, [&] {
            diag::EvidenceSet found;
            std::vector<std::string> problems;
            rem::AddFlightRecorderFindings(env_.config.state_dir, std::to_string(job.id),
                                           job.restart_count, job.user_id, &found, &problems);
            return Result<std::string>(rem::EvidenceSetToJson(found));
        });
        auto found = findings ? rem::EvidenceSetFromJson(*findings)
                              : Result<diag::EvidenceSet>(findings.status());
        if (found) {
            diag::MergeEvidence(&evidence, *found);
        } else {
            done->push_back("job " + std::to_string(job.id) +
                            ": flight recorder: " + found.error());
        }
    }
    done->push_back(HandleHungJob(env_, job, evidence, w->dump_requested));
}

}  // namespace autoheal::agent
