// Remote context (slurmstepd). slurm_spank_user_init runs as the job user on every node of
// every step, before the tasks start: when the job gave --ckpt-dir, it finds the newest
// complete checkpoint there (as the user: their files, their permissions), once per node, and
// exports
//   AUTOHEAL_RESUME_CHECKPOINT  the checkpoint to resume from (absent when there is none)
//   AUTOHEAL_CHECKPOINT_FORMAT  its format (torch-dcp, megatron, deepspeed, ...)
//   AUTOHEAL_LAST_FAILURE       why autoheal requeued the job last (absent on a first run)
//   AUTOHEAL_EXCLUDED_NODES     the nodes the job now avoids (hostlist expression)
//   SLURM_SPANK_AUTOHEAL_AUTO_RESUME, _CKPT_DIR, _HEALTH_CHECK  the options as recorded
// into the tasks' environment; slurm_spank_task_init adds to each task
//   AUTOHEAL_RESTART_COUNT      how many times Slurm has requeued the job (0 on the first run).
//   Never fails the step: a search problem is logged and the job
// starts from scratch, as it would without autoheal.
#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <string>

#include "autoheal/core/checkpoint.h"
#include "autoheal/core/config_scan.h"
#include "autoheal/core/files.h"
#include "autoheal/core/resume_record.h"
#include "spank_state.h"

namespace autoheal::spank {
namespace {

std::optional<std::string> JobEnv(spank_t sp, const char* name) {
    std::array<char, 4096> buf{};
    if (spank_getenv(sp, name, buf.data(), static_cast<int>(buf.size())) != ESPANK_SUCCESS) {
        return std::nullopt;
    }
    return std::string(buf.data());
}

// This plugin's own file, to find the config next to a relocated install (like the programs).
std::string SelfPath() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&SelfPath), &info) == 0 || info.dli_fname == nullptr) {
        return "";
    }
    return info.dli_fname;
}

}  // namespace

std::string StateDir() {
    // Only state_dir is needed, read without a YAML parser: sbatch loads this plugin at every
    // submission, and yaml-cpp with the C++ runtime it pulls in would slow each one down.
    std::string state_dir =
        ScanConfigStateDir(FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfPath()));
    return state_dir.empty() ? std::string(kDefaultStateDir) : state_dir;
}

FlightRecorderPolicy SiteFlightRecorder() {
    const std::string path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfPath());
    auto settings = LoadSubmitSettings(path);
    if (!settings) {
        slurm_error("autoheal: %s (the flight recorder follows its default)",
                    settings.error().c_str());
        return FlightRecorderPolicy::kAutoResume;
    }
    return settings->policy.flight_recorder;
}

namespace {

// AUTOHEAL_LAST_FAILURE / AUTOHEAL_EXCLUDED_NODES from the controller epilog's record.
void ExportLastFailure(spank_t sp) {
    uint32_t job_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS || job_id == 0) return;
    const std::string state_dir = StateDir();
    // Read as the job user; absent when autoheal never requeued the job.
    auto text = ReadSmallFile(ResumeRecordPath(state_dir, std::to_string(job_id)), 65536);
    if (!text) return;
    auto record = ResumeRecordFromJson(*text);
    if (!record) return;
    if (!record->explanation.empty()) {
        spank_setenv(sp, "AUTOHEAL_LAST_FAILURE", record->explanation.c_str(), 1);
    }
    if (!record->excluded.empty()) {
        spank_setenv(sp, "AUTOHEAL_EXCLUDED_NODES", record->excluded.c_str(), 1);
    }
}

}  // namespace

int ExportRestartCount(spank_t sp) {
    // Only the task's environment has SLURM_RESTART_COUNT (in 22.05 neither user_init's
    // environment nor the S_SLURM_RESTART_COUNT item has it for a batch step).
    const std::string restarts = JobEnv(sp, "SLURM_RESTART_COUNT").value_or("");
    spank_setenv(sp, "AUTOHEAL_RESTART_COUNT", restarts.empty() ? "0" : restarts.c_str(), 1);
    return 0;
}

int ExportResumeEnv(spank_t sp) {
    ExportLastFailure(sp);
    // The records reach the job's environment as sbatch copied them (SLURM_SPANK_ + Slurm's
    // option names); the job sees them under autoheal's names, validated again, and never a
    // variable of those names the user passed (sbatch --export) for an option not given.
    const OptionLimits limits{.default_auto_resume = 0,
                              .max_auto_resume = GetState().args.limits.max_auto_resume};
    const JobOptions options = JobOptionsFromEnv(
        [&](std::string_view name) { return JobEnv(sp, std::string(name).c_str()); },
        kJobSpankEnvPrefix, nullptr, limits);
    for (std::string_view name :
         {kScriptEnvAutoResume, kScriptEnvCkptDir, kScriptEnvHealthCheck, kScriptEnvHangTimeout}) {
        spank_unsetenv(sp, std::string(name).c_str());
    }
    for (const auto& [name, value] : ToJobScriptEnv(options)) {
        spank_setenv(sp, name.c_str(), value.c_str(), 1);
    }
    if (!options.ckpt_dir) return 0;
    const std::string& dir = *options.ckpt_dir;
    CheckpointSearch found = FindNewestCheckpoint(dir);
    for (const std::string& s : found.skipped) {
        slurm_verbose("autoheal: checkpoint: skipped %s", s.c_str());
    }
    if (!found.newest) {
        slurm_verbose("autoheal: checkpoint: no complete checkpoint in %s", dir.c_str());
        return 0;
    }
    spank_setenv(sp, std::string(kEnvResumeCheckpoint).c_str(), found.newest->path.c_str(), 1);
    spank_setenv(sp, "AUTOHEAL_CHECKPOINT_FORMAT", found.newest->format.c_str(), 1);
    return 0;
}

}  // namespace autoheal::spank
