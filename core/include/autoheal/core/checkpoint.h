// Checkpoint discovery: finds the newest *complete* checkpoint a training job left in its
// checkpoint folder (--ckpt-dir), so that a requeued job can be told where to resume
// (AUTOHEAL_RESUME_CHECKPOINT, exported by the SPANK plugin in the job's tasks, as the job user).
//
// Pure C++ (std::filesystem with std::error_code): no Slurm, and nothing here throws. What
// counts as complete for each format is documented in docs/checkpoints.md; in short, a save is
// complete when the file that the framework writes last is there and is not empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autoheal {

// The variable a requeued job's tasks read to find where to resume.
inline constexpr std::string_view kEnvResumeCheckpoint = "AUTOHEAL_RESUME_CHECKPOINT";

// Checkpoint::format values (stable words).
inline constexpr std::string_view kCkptFormatTorchDcp = "torch-dcp";
inline constexpr std::string_view kCkptFormatMegatron = "megatron";
inline constexpr std::string_view kCkptFormatDeepSpeed = "deepspeed";
inline constexpr std::string_view kCkptFormatLightning = "lightning";
inline constexpr std::string_view kCkptFormatHfTrainer = "hf-trainer";
inline constexpr std::string_view kCkptFormatGeneric = "generic";

struct Checkpoint {
    std::string path;        // the directory (or, for Lightning, the .ckpt file) to resume from
    std::string format;      // one of kCkptFormat*
    std::int64_t step = -1;  // training step / iteration; -1 when the name does not say
    std::int64_t mtime = 0;  // seconds since the epoch: when the save finished (see below)

    bool operator==(const Checkpoint&) const = default;
};

struct CheckpointSearch {
    std::optional<Checkpoint> newest;
    // "path: why" for every checkpoint that was recognised but is incomplete, and for every I/O
    // error met on the way (including a missing ckpt_dir and a search cut short by the limits).
    std::vector<std::string> skipped;
};

// Bounds on the work one search may do (a checkpoint folder can be huge, or on a slow
// parallel file system).
struct CheckpointLimits {
    int max_depth = 3;                // deepest directory level read; ckpt_dir itself is level 0
    std::size_t max_entries = 10000;  // directory entries read in all; the search stops there
};

// Finds the newest complete checkpoint under ckpt_dir.
//
// ckpt_dir itself may be a symbolic link (the user named it); below it, symbolic links are never
// followed — neither to directories nor to files — so nothing outside ckpt_dir is ever read, and
// a key file that is a link does not count. Directories are read breadth first, and at each level
// those whose name carries the highest step first, so that when max_entries runs out the newest
// saves have been seen. A directory whose listing was cut short by max_entries is not judged.
//
// Newest: among candidates with a known step, the highest step (ties: later mtime, then path);
// a candidate with an unknown step wins over that only if its mtime is strictly later. mtime is
// that of the file that completes the save (.metadata, trainer_state.json, the tracker file, the
// marker, the .ckpt file). A candidate inside another recognised checkpoint directory below
// ckpt_dir (complete or not) is not a candidate: the outer directory is what a job resumes from.
CheckpointSearch FindNewestCheckpoint(const std::string& ckpt_dir,
                                      const CheckpointLimits& limits = {});

// The step a file or directory name carries, or -1: the digits after "step", "global_step",
// "iter", "iteration" or "checkpoint" (at the start of the name or after a non-letter,
// optionally followed by one of "_-="), the rightmost such; or the whole name if it is all
// digits. Examples: step_1200, global_step1200, checkpoint-1200, iter_0001200,
// epoch=3-step=1200.ckpt, 1200.
std::int64_t StepFromName(std::string_view name);

}  // namespace autoheal
