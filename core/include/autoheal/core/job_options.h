// The job options a user gives at submit time (sbatch/salloc/srun, through the SPANK plugin),
// their validation, and how they travel to the rest of autoheal: as job-control environment
// variables (spank_job_control_setenv) that the job_submit plugin, the prolog, the epilogs and
// EpilogSlurmctld read back.
//
// Pure functions only: no Slurm here, so every rule is unit-tested.
#pragma once

#include <array>
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
    int default_auto_resume = 3;  // what a bare --auto-resume means; 0: a value is required
    int max_auto_resume = 10;     // the most requeues a user may ask for
};

struct JobOptions {
    std::optional<int> auto_resume;       // requeues allowed; absent = not opted in
    std::optional<std::string> ckpt_dir;  // absolute, normalised
    std::optional<HealthTier> health_check;
    // --hang-timeout: seconds without progress (output, checkpoints, GPUs) after which
    // autoheal-agent takes the job as hung; 0 = off (the site's default not applied); absent =
    // the site's default (agent.hang_timeout).
    std::optional<std::int64_t> hang_timeout;
    // --flight-recorder=on|off: PyTorch's NCCL flight recorder for this job's tasks; absent =
    // the site's default (policy.flight_recorder: on for --auto-resume jobs unless set).
    std::optional<bool> flight_recorder;

    bool operator==(const JobOptions&) const = default;
};

// Option names as the user types them (without the leading "--").
inline constexpr std::string_view kOptAutoResume = "auto-resume";
inline constexpr std::string_view kOptCkptDir = "ckpt-dir";
inline constexpr std::string_view kOptHealthCheck = "health-check";
inline constexpr std::string_view kOptHangTimeout = "hang-timeout";
inline constexpr std::string_view kOptFlightRecorder = "flight-recorder";

// Where the options travel: one job-control entry, kEnvOptions, that the SPANK plugin writes
// (spank_job_control_setenv) in place of the copies Slurm makes of every SPANK option given,
// `_SLURM_SPANK_OPTION_<plugin>_<option>` (plugstack.c, _opt_env_name), which it removes: sbatch
// copies each entry into its environment through a zeroed 256 KiB buffer, so three options cost
// one entry. Slurm shows it as SPANK_AUTOHEAL_OPTIONS to Prolog/Epilog/EpilogSlurmctld, without
// prefix to job_submit in job_desc->spank_job_env, and as SLURM_SPANK_AUTOHEAL_OPTIONS in the
// batch job's environment. Its value holds the validated options (a resolved --ckpt-dir, the
// default of a bare --auto-resume) as
// `auto_resume=N;health_check=T;hang_timeout=S;flight_recorder=on|off;ckpt_dir=DIR` (S in
// seconds): each field
// only when given, in this order, ckpt_dir last and taking the rest of the value (a path may
// hold ';').
inline constexpr std::string_view kEnvOptions = "AUTOHEAL_OPTIONS";
inline constexpr std::array<std::string_view, 5> kSlurmOptionCopies = {
    "_SLURM_SPANK_OPTION_autoheal_auto_resume", "_SLURM_SPANK_OPTION_autoheal_ckpt_dir",
    "_SLURM_SPANK_OPTION_autoheal_health_check", "_SLURM_SPANK_OPTION_autoheal_hang_timeout",
    "_SLURM_SPANK_OPTION_autoheal_flight_recorder"};
inline constexpr std::string_view kSpankEnvPrefix = "SPANK_";
// The prefix sbatch gives the entries in the batch job's environment.
inline constexpr std::string_view kJobSpankEnvPrefix = "SLURM_SPANK_";

// What job scripts see (README, docs/user-guide.md), exported by the SPANK plugin in slurmstepd.
inline constexpr std::string_view kScriptEnvAutoResume = "SLURM_SPANK_AUTOHEAL_AUTO_RESUME";
inline constexpr std::string_view kScriptEnvCkptDir = "SLURM_SPANK_AUTOHEAL_CKPT_DIR";
inline constexpr std::string_view kScriptEnvHealthCheck = "SLURM_SPANK_AUTOHEAL_HEALTH_CHECK";
inline constexpr std::string_view kScriptEnvHangTimeout = "SLURM_SPANK_AUTOHEAL_HANG_TIMEOUT";
inline constexpr std::string_view kScriptEnvFlightRecorder = "SLURM_SPANK_AUTOHEAL_FLIGHT_RECORDER";

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

// The longest --hang-timeout (30 days: longer than any job's time limit is meant to be).
inline constexpr std::int64_t kMaxHangTimeoutSeconds = 30LL * 86400;
// --hang-timeout=DURATION|off: a duration (core/duration.h: 45s, 20m, 2h) from 1 s to 30 days, in
// seconds; `off` (or 0) is 0: no hang detection for this job, whatever the site's default.
Result<std::int64_t> ParseHangTimeout(std::string_view value);

// --flight-recorder=on|off
Result<bool> ParseFlightRecorder(std::string_view value);

// The site's default for PyTorch's flight recorder (autoheal.yaml, policy.flight_recorder):
// on for jobs with --auto-resume (the default), on for every job, or off for every job (a job's
// --flight-recorder=on is then refused at submission).
enum class FlightRecorderPolicy { kAutoResume, kOn, kOff };
std::optional<FlightRecorderPolicy> FlightRecorderPolicyFromName(std::string_view name);
// Whether a job's tasks get the flight recorder: never when the site turned it off; else the
// job's --flight-recorder when given; else the site's default.
bool FlightRecorderWanted(const JobOptions& options, FlightRecorderPolicy site);

// The record of the options that are set: {kEnvOptions, value}, or nothing when none is.
std::vector<std::pair<std::string, std::string>> ToJobControlEnv(const JobOptions& options);
// The same values under the names job scripts see (kScriptEnv*).
std::vector<std::pair<std::string, std::string>> ToJobScriptEnv(const JobOptions& options);

// Reads options back from an environment. `lookup(name)` returns the value of a variable or
// nullopt; `prefix` is "" in job_submit, "SPANK_" in Prolog/Epilog/EpilogSlurmctld and
// "SLURM_SPANK_" in the job's environment. A malformed record is reported and read as no
// options. Every value goes through the option's own parser
// (the one the SPANK plugin uses), --auto-resume within `limits` (a value required); values
// that fail are dropped and reported in `problems`, each message naming the option. Whoever
// can set the job-control environment by hand (srun copies SLURM_SPANK_* from the user's
// environment, the submit API takes any list) can write these records: readers treat them as
// the user's word, not as checked.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
inline constexpr OptionLimits kRecordLimits{.default_auto_resume = 0, .max_auto_resume = 1000};
JobOptions JobOptionsFromEnv(const EnvLookup& lookup, std::string_view prefix,
                             std::vector<std::string>* problems = nullptr,
                             const OptionLimits& limits = kRecordLimits);

// Looks a name up in a NAME=VALUE list (an envp or Slurm's spank_job_env array).
std::optional<std::string> LookupEnvArray(const char* const* env, std::size_t count,
                                          std::string_view name);

}  // namespace autoheal
