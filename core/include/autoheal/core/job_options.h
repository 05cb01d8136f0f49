// The job options a user gives at submit time (sbatch/salloc/srun, through the SPANK plugin),
// their validation, and how they travel to the rest of autoheal: as job-control environment
// variables (spank_job_control_setenv) that the job_submit plugin, the prolog, the epilogs and
// EpilogSlurmctld read back.
//
// Pure functions only: no Slurm here, so every rule is unit-tested.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal {

enum class HealthTier { kOff, kQuick, kFull };

// Stable words: "off", "quick", "full".
std::string_view HealthTierName(HealthTier tier);
std::optional<HealthTier> HealthTierFromName(std::string_view name);

// Site limits for the options, set by the admin in plugstack.conf.
struct OptionLimits {
    int default_auto_resume = 3;  // what a bare --auto-resume means
    int max_auto_resume = 10;     // the most requeues a user may ask for
};

struct JobOptions {
    std::optional<int> auto_resume;       // requeues allowed; absent = not opted in
    std::optional<std::string> ckpt_dir;  // absolute, normalised
    std::optional<HealthTier> health_check;

    bool operator==(const JobOptions&) const = default;
};

// Option names as the user types them (without the leading "--").
inline constexpr std::string_view kOptAutoResume = "auto-resume";
inline constexpr std::string_view kOptCkptDir = "ckpt-dir";
inline constexpr std::string_view kOptHealthCheck = "health-check";

// Job-control variable names (Slurm shows them as SPANK_<name> to Prolog/Epilog/EpilogSlurmctld
// and without prefix to job_submit in job_desc->spank_job_env).
inline constexpr std::string_view kEnvAutoResume = "AUTOHEAL_AUTO_RESUME";
inline constexpr std::string_view kEnvCkptDir = "AUTOHEAL_CKPT_DIR";
inline constexpr std::string_view kEnvHealthCheck = "AUTOHEAL_HEALTH_CHECK";
inline constexpr std::string_view kSpankEnvPrefix = "SPANK_";

inline constexpr std::size_t kMaxCkptDirLength = 1024;

// --auto-resume[=N]: no value means limits.default_auto_resume; N must be a whole number in
// [1, limits.max_auto_resume]. Errors name the option and the allowed values.
Result<int> ParseAutoResume(std::optional<std::string_view> value, const OptionLimits& limits);

// --ckpt-dir=DIR: a relative DIR is taken relative to `cwd` (the submit directory, like
// sbatch's own defaults); the result is lexically normalised. Refused: empty, control
// characters, longer than kMaxCkptDirLength, or a relative DIR when cwd is not absolute.
Result<std::string> ParseCkptDir(std::string_view value, std::string_view cwd);

// --health-check=quick|full|off
Result<HealthTier> ParseHealthCheck(std::string_view value);

// The variables to record for the options that are set, in a fixed order.
std::vector<std::pair<std::string, std::string>> ToJobControlEnv(const JobOptions& options);

// Reads options back from an environment. `lookup(name)` returns the value of a variable or
// nullopt; `prefix` is "" in job_submit and "SPANK_" in Prolog/Epilog/EpilogSlurmctld.
// Values that fail validation are dropped and reported in `problems` (they can only come from a
// user who set the variables by hand, since the plugin validated them at submit).
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
JobOptions JobOptionsFromEnv(const EnvLookup& lookup, std::string_view prefix,
                             std::vector<std::string>* problems = nullptr);

// Looks a name up in a NAME=VALUE list (an envp or Slurm's spank_job_env array).
std::optional<std::string> LookupEnvArray(const char* const* env, std::size_t count,
                                          std::string_view name);

}  // namespace autoheal
