// What a program can read from autoheal.yaml without a YAML parser: where the file is, its
// state_dir, and the few settings the job_submit plugin applies inside slurmctld. The plugins
// (loaded into sbatch and slurmctld) link no yaml-cpp and no shared C++ runtime
// (docs/reliability.md, "Load"), so they read these through this header; config.h builds the
// rest of the settings on top of it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "autoheal/core/job_options.h"
#include "autoheal/core/result.h"

namespace autoheal {

inline constexpr const char* kDefaultStateDir = "/var/lib/autoheal";
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;  // a larger autoheal.yaml is refused
inline constexpr int kDefaultQuarantineMaxNodes = 16;
inline constexpr double kDefaultQuarantineMaxFraction = 0.10;
inline constexpr int kDefaultQuarantineMaxHours = 168;

// The `policy:` section: cluster policy applied by the job_submit plugin at submit time.
struct PolicySettings {
    int max_auto_resume = 10;  // the most requeues a job may ask for with --auto-resume (0..100)
    // Nodes autoheal keeps new jobs away from (JSON, see submit_policy.h). Always set once read:
    // `<state_dir>/quarantine.json` unless the file names another.
    std::string quarantine_file;
    // Caps on what the quarantine file can do (submit_policy.h): entries in force at once, as a
    // count (0..100000) and a fraction of the cluster's nodes (0..1), and how far ahead an
    // entry's `until` may lie (1..8760 hours; an entry further out is ignored).
    int quarantine_max_nodes = kDefaultQuarantineMaxNodes;
    double quarantine_max_fraction = kDefaultQuarantineMaxFraction;
    int quarantine_max_hours = kDefaultQuarantineMaxHours;
    // PyTorch's flight recorder: auto-resume (for --auto-resume jobs), on or off; the SPANK plugin
    // reads it in each task, the job_submit plugin refuses --flight-recorder=on when off.
    FlightRecorderPolicy flight_recorder = FlightRecorderPolicy::kAutoResume;
};

// The settings the job_submit plugin applies: state_dir, the `policy:` section and
// health.allow_off.
struct SubmitSettings {
    std::string state_dir = kDefaultStateDir;
    PolicySettings policy;
    bool allow_health_off = true;  // health.allow_off
};

// Reads SubmitSettings from autoheal.yaml's text with a line scanner, as strictly as ParseConfig:
// an unknown `policy.` key or a bad value is an error naming source:line:column. The scanner
// reads YAML's block form, which is what autoheal.yaml is written in: these settings must be
// `key: value` lines (a plain or quoted value without escapes, a trailing comment allowed)
// under `policy:` and `health:` lines; anything else at those places (flow `{...}`, anchors,
// tags, a value over several lines, a duplicate key) is an error saying so. Other sections are
// skipped, flow collections and quoted or block scalars spanning lines included. ParseCoreConfig
// calls this too, so a file every other program accepts is one the plugin reads the same way.
Result<SubmitSettings> ScanSubmitSettings(std::string_view text, std::string_view source);

// autoheal.yaml is text: a NUL byte is refused ("source:line:column: ..."), by this scanner and
// by the YAML reader alike (yaml-cpp and the scanner would read what follows it differently).
Result<bool> RefuseNulBytes(std::string_view text, std::string_view source);

// `<state_dir>/quarantine.json`: the quarantine file when the config names none.
std::string DefaultQuarantineFile(std::string_view state_dir);

// Reads `path` (ReadSmallFile, at most kMaxConfigBytes) and scans it. A missing file gives the
// defaults.
Result<SubmitSettings> LoadSubmitSettings(const std::string& path);

// The state_dir a config's text names, read leniently (the file may be broken, or the reader may
// be the SPANK plugin inside sbatch): the first top-level `state_dir:` line with an absolute
// path, quotes and a trailing comment removed. Empty when there is none.
std::string ScanStateDir(std::string_view text);

// ScanStateDir of the file at `path` (ReadSmallFile); empty when it cannot be read.
std::string ScanConfigStateDir(const std::string& path);

// The config file a program uses: $AUTOHEAL_CONFIG if set, else <exe_dir>/../etc/autoheal/
// autoheal.yaml if it exists (a relocated install such as the local test cluster), else
// /etc/autoheal/autoheal.yaml. `exe_path` is the program's own path (/proc/self/exe).
std::string FindConfigPath(const char* env_value, const std::string& exe_path);

}  // namespace autoheal
