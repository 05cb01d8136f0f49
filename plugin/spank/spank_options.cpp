// The options table and its callback. Callbacks run where the option is parsed: in sbatch/salloc/
// srun (remote == 0) with the user's current directory, and again in slurmstepd (remote == 1)
// with the value as typed. Slurm may call a callback more than once; each call overwrites.
#include <unistd.h>

#include <array>
#include <climits>
#include <string>

#include "c_guard.h"
#include "spank_state.h"

namespace autoheal::spank {
namespace {

enum OptionId : int {
    kAutoResume = 1,
    kCkptDir = 2,
    kHealthCheck = 3,
    kHangTimeout = 4,
    kFlightRecorder = 5
};
// kSlurmOptionCopies lists Slurm's copy of each option in the order of these ids.
static_assert(kSlurmOptionCopies.size() == kFlightRecorder);

std::string CurrentDirectory() {
    std::array<char, PATH_MAX> buf{};
    if (getcwd(buf.data(), buf.size()) == nullptr) return "";
    return buf.data();
}

int Refuse(const std::string& message) {
    slurm_error("autoheal: %s", message.c_str());
    return -1;
}

int HandleOption(int val, const char* optarg, int remote) {
    State& state = GetState();
    if (val >= kAutoResume && val <= kFlightRecorder) state.given |= 1U << (val - kAutoResume);
    switch (val) {
        case kAutoResume: {
            auto value = optarg != nullptr ? std::optional<std::string_view>(optarg) : std::nullopt;
            auto parsed = ParseAutoResume(value, state.args.limits);
            if (!parsed) return Refuse(parsed.error());
            state.options.auto_resume = *parsed;
            return 0;
        }
        case kCkptDir: {
            // In slurmstepd the submit directory is unknown; the allocator already resolved
            // and recorded the absolute path in the job-control environment.
            if (remote) return 0;
            auto parsed = ParseCkptDir(optarg != nullptr ? optarg : "", CurrentDirectory());
            if (!parsed) return Refuse(parsed.error());
            state.options.ckpt_dir = *parsed;
            return 0;
        }
        case kHealthCheck: {
            auto parsed = ParseHealthCheck(optarg != nullptr ? optarg : "");
            if (!parsed) return Refuse(parsed.error());
            state.options.health_check = *parsed;
            return 0;
        }
        case kHangTimeout: {
            auto parsed = ParseHangTimeout(optarg != nullptr ? optarg : "");
            if (!parsed) return Refuse(parsed.error());
            state.options.hang_timeout = *parsed;
            return 0;
        }
        case kFlightRecorder: {
            auto parsed = ParseFlightRecorder(optarg != nullptr ? optarg : "");
            if (!parsed) return Refuse(parsed.error());
            state.options.flight_recorder = *parsed;
            return 0;
        }
        default:
            return 0;
    }
}

int OptionCallback(int val, const char* optarg, int remote) {
    return plugin::CallGuarded("option", 0, LogGuardFailure,
                               [&] { return HandleOption(val, optarg, remote); });
}

// Help texts are prefixed with the plugin's name, so `sbatch --help` says whose option it is.
// Slurm keeps pointers to these structs; they live for the life of the process.
std::array<spank_option, 5> options_table{{
    {const_cast<char*>("auto-resume"), const_cast<char*>("N"),
     const_cast<char*>("[autoheal] requeue this job up to N times (default 3) when "
                       "infrastructure fails, excluding the culprit nodes"),
     2, kAutoResume, OptionCallback},
    {const_cast<char*>("ckpt-dir"), const_cast<char*>("DIR"),
     const_cast<char*>("[autoheal] checkpoint directory: a requeued job restarts from the "
                       "newest valid checkpoint in DIR"),
     1, kCkptDir, OptionCallback},
    {const_cast<char*>("health-check"), const_cast<char*>("quick|full|off"),
     const_cast<char*>("[autoheal] GPU health checks run by the prolog before the job "
                       "starts (default: the site's setting)"),
     1, kHealthCheck, OptionCallback},
    {const_cast<char*>("hang-timeout"), const_cast<char*>("DURATION|off"),
     const_cast<char*>("[autoheal] treat the job as hung when its output and checkpoints have "
                       "not advanced for DURATION (20m, 2h) and its GPUs do no work (default: "
                       "the site's setting)"),
     1, kHangTimeout, OptionCallback},
    {const_cast<char*>("flight-recorder"), const_cast<char*>("on|off"),
     const_cast<char*>("[autoheal] PyTorch's NCCL flight recorder, which names the rank behind "
                       "a hang (default: the site's setting, on for --auto-resume jobs)"),
     1, kFlightRecorder, OptionCallback},
}};

}  // namespace

int RegisterOptions(spank_t sp) {
    for (spank_option& opt : options_table) {
        spank_err_t rc = spank_option_register(sp, &opt);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("autoheal: spank: cannot register --%s: %s", opt.name, spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

int RecordJobControlEnv(spank_t sp) {
    // Slurm copied the options given into the job-control environment just before this
    // callback (spank_init_post_opt); the record below carries them instead. Each call into
    // Slurm's job-control environment looks its function up with dlsym: only the copies that
    // exist are removed.
    const unsigned given = GetState().given;
    for (std::size_t i = 0; i < kSlurmOptionCopies.size(); ++i) {
        if ((given & (1U << i)) != 0) {
            spank_job_control_unsetenv(sp, std::string(kSlurmOptionCopies[i]).c_str());
        }
    }
    for (const auto& [name, value] : ToJobControlEnv(GetState().options)) {
        spank_err_t rc = spank_job_control_setenv(sp, name.c_str(), value.c_str(), 1);
        // srun inside an existing allocation has no job-control environment to write.
        if (rc != ESPANK_SUCCESS && rc != ESPANK_NOT_LOCAL && rc != ESPANK_NOT_AVAIL) {
            slurm_error("autoheal: spank: cannot record %s: %s", name.c_str(), spank_strerror(rc));
        }
    }
    return 0;
}

}  // namespace autoheal::spank
