// Remote context (slurmstepd). slurm_spank_user_init runs as the job user on every node of
// every step, before the tasks start: when the job gave --ckpt-dir, it finds the newest
// complete checkpoint there (as the user: their files, their permissions), once per node, and
// exports
//   AUTOHEAL_RESUME_CHECKPOINT  the checkpoint to resume from (absent when there is none)
//   AUTOHEAL_CHECKPOINT_FORMAT  its format (torch-dcp, megatron, deepspeed, ...)
// into the tasks' environment; slurm_spank_task_init adds to each task
//   AUTOHEAL_RESTART_COUNT      how many times Slurm has requeued the job (0 on the first run).
//   Never fails the step: a search problem is logged and the job
// starts from scratch, as it would without autoheal.
#include <array>
#include <string>

#include "autoheal/core/checkpoint.h"
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

}  // namespace

int ExportRestartCount(spank_t sp) {
    // Only the task's environment has SLURM_RESTART_COUNT (in 22.05 neither user_init's
    // environment nor the S_SLURM_RESTART_COUNT item has it for a batch step).
    const std::string restarts = JobEnv(sp, "SLURM_RESTART_COUNT").value_or("");
    spank_setenv(sp, "AUTOHEAL_RESTART_COUNT", restarts.empty() ? "0" : restarts.c_str(), 1);
    return 0;
}

int ExportResumeEnv(spank_t sp) {
    // The allocator recorded the resolved directory; Slurm shows it to the job with this name.
    auto dir = JobEnv(sp, "SLURM_SPANK_AUTOHEAL_CKPT_DIR");
    if (!dir || dir->empty()) return 0;
    CheckpointSearch found = FindNewestCheckpoint(*dir);
    for (const std::string& s : found.skipped) {
        slurm_verbose("autoheal: checkpoint: skipped %s", s.c_str());
    }
    if (!found.newest) {
        slurm_verbose("autoheal: checkpoint: no complete checkpoint in %s", dir->c_str());
        return 0;
    }
    spank_setenv(sp, std::string(kEnvResumeCheckpoint).c_str(), found.newest->path.c_str(), 1);
    spank_setenv(sp, "AUTOHEAL_CHECKPOINT_FORMAT", found.newest->format.c_str(), 1);
    return 0;
}

}  // namespace autoheal::spank
