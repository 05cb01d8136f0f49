// The cluster policy the job_submit plugin applies at submit time: its data (SubmitPolicy, built
// from autoheal.yaml's SubmitSettings and the quarantine file), the pure decision for one job
// (DecideOnSubmit, DecideOnModify: no I/O, they run under slurmctld's locks), and the quarantine
// file itself.
//
// The quarantine file is JSON, written by the controller epilog through AddToQuarantine and read
// by the job_submit plugin's reloader thread:
//   {"nodes": [{"node": "node3", "until": 1790000000, "reason": "autoheal: ..."}]}
// `until` is in seconds since the epoch; an entry with until <= now is expired and ignored, and
// so is one whose until lies more than policy.quarantine_max_hours ahead (no entry keeps a node
// avoided longer than that). Only names slurmctld knows count, and at most
// min(quarantine_max_nodes, max(1, floor(quarantine_max_fraction x nodes))) entries apply, in file
// order (oldest first): a broken or hostile list can neither fail submissions nor empty the
// cluster.
//
// No Slurm here: hostlist expressions ("node[1-3]") are expanded by the plugin, which passes
// plain node names in SubmitContext.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/result.h"

namespace autoheal {

struct QuarantinedNode {
    std::string node;
    std::int64_t until = 0;  // seconds since the epoch; expired when until <= now
    std::string reason;

    bool operator==(const QuarantinedNode&) const = default;
};

// Immutable once built: the plugin shares one through a std::shared_ptr<const SubmitPolicy>.
struct SubmitPolicy {
    int max_auto_resume = 10;      // policy.max_auto_resume
    bool allow_health_off = true;  // health.allow_off
    std::vector<QuarantinedNode> quarantine;
    int quarantine_max_nodes = kDefaultQuarantineMaxNodes;           // policy.quarantine_max_nodes
    double quarantine_max_fraction = kDefaultQuarantineMaxFraction;  // of the cluster's nodes
    std::int64_t quarantine_max_seconds = std::int64_t{kDefaultQuarantineMaxHours} * 3600;
    FlightRecorderPolicy flight_recorder = FlightRecorderPolicy::kAutoResume;
};

// The policy for the settings read from autoheal.yaml (ScanSubmitSettings) and a quarantine list.
SubmitPolicy SubmitPolicyFromSettings(const SubmitSettings& settings,
                                      std::vector<QuarantinedNode> quarantine);

// What slurmctld knows about the job's placement, node names already expanded.
struct SubmitContext {
    std::vector<std::string> req_nodes;  // -w / --nodelist
    std::vector<std::string> exc_nodes;  // -x / --exclude, as submitted
    // Whether slurmctld knows a node of this name (find_node_record); unset: every name is
    // known. A name Slurm does not know in exc_nodes would fail the submission.
    std::function<bool(const std::string&)> is_known_node;
    int cluster_nodes = 0;  // nodes slurmctld knows, for quarantine_max_fraction; 0: unknown
};

struct SubmitDecision {
    // Not empty: refuse the job with this message for the user (sbatch prints it). When set,
    // the other fields are empty.
    std::string refusal;
    bool force_requeue = false;        // set job_desc->requeue = 1
    std::vector<std::string> exclude;  // add these nodes to job_desc->exc_nodes, in policy order
    std::string note;                  // one log line explaining the changes; empty when none

    bool refused() const { return !refusal.empty(); }
};

// The options of a new job as job_submit reads them from its job-control environment
// (`lookup`: job_desc->spank_job_env, no prefix), each value through the parser the SPANK
// plugin uses (--auto-resume within kRecordLimits; DecideOnSubmit applies the site's cap). The
// entries are the user's word: the SPANK plugin validated them, but srun copies a user's
// SLURM_SPANK_* variables in and the submit API takes any list. A value that fails is the
// refusal, naming the option.
Result<JobOptions> SubmittedOptions(const EnvLookup& lookup);

// The requeues a job gets when it fails, whatever its records say (`asked`, read from the
// environment of EpilogSlurmctld): at most policy.max_auto_resume; none when that is 0 or less.
std::optional<int> CappedAutoResume(std::optional<int> asked, int max_auto_resume);

// The decision for a new job:
// - refused when --auto-resume asks for more than policy.max_auto_resume, or when
//   --health-check=off is given and policy.allow_health_off is false;
// - an auto-resume job is forced requeueable (requeue is how autoheal resumes it);
// - the quarantined nodes in force (ActiveQuarantine) are excluded, unless the job names one in
//   req_nodes (an explicit request wins) or already excludes it.
SubmitDecision DecideOnSubmit(const JobOptions& options, const SubmitPolicy& policy,
                              const SubmitContext& context, std::int64_t now);

// The quarantine entries that apply at `now`, in file order: until > now and at most
// quarantine_max_seconds ahead, a node name context.is_known_node accepts, one entry per node,
// and no more than QuarantineLimit(policy, context.cluster_nodes) of them.
std::vector<QuarantinedNode> ActiveQuarantine(const SubmitPolicy& policy,
                                              const SubmitContext& context, std::int64_t now);

// The most quarantined nodes that apply at once: min(quarantine_max_nodes,
// max(1, floor(quarantine_max_fraction x cluster_nodes))); quarantine_max_nodes when
// cluster_nodes is 0. quarantine_max_nodes: 0 turns the quarantine off.
int QuarantineLimit(const SubmitPolicy& policy, int cluster_nodes);

// The decision for `scontrol update` on an existing job. `stored_auto_resume`: the job's stored
// job-control environment records --auto-resume (kEnvOptions); `requeue`: the update's requeue
// value, if it sets one. Returns the refusal message, or an empty string to allow the update.
std::string DecideOnModify(bool stored_auto_resume, std::optional<bool> requeue);

// The message DecideOnModify refuses `requeue=0` on an auto-resume job with.
inline constexpr std::string_view kRequeueOffRefusal =
    "autoheal: this job asked for --auto-resume; it must stay requeueable (cancel and resubmit "
    "without --auto-resume instead)";

// A name that may stand in a quarantine entry and in a Slurm node list: letters, digits, '.',
// '_' and '-', at most 64 characters (no ',' or '[' that would widen an exclusion).
bool IsValidQuarantineNodeName(std::string_view node);

// Reads the quarantine file. A missing file is an empty list. Unreadable, larger than 4 MiB,
// not JSON, or not the shape above (including a bad node name): an error naming the file; the
// caller keeps what it had. Opened without following a symlink.
Result<std::vector<QuarantinedNode>> ReadQuarantineFile(const std::string& path);

// Parses the quarantine file's text (what ReadQuarantineFile does after reading it); `path`
// names the file in errors.
Result<std::vector<QuarantinedNode>> ParseQuarantineJson(const std::string& text,
                                                         const std::string& path);

// The file's text for `nodes` (what WriteQuarantineFile writes).
std::string QuarantineToJson(const std::vector<QuarantinedNode>& nodes);

// Replaces the file atomically: writes a temporary file in the same folder (created if
// missing), fsyncs it, sets mode 0644 and renames it over `path`. Readers see the old or the
// new list, never a part. Concurrent writers must hold the lock (see AddToQuarantine).
Result<bool> WriteQuarantineFile(const std::string& path,
                                 const std::vector<QuarantinedNode>& nodes);

// Adds or updates one node: under an exclusive flock on `<path>.lock` (waited for up to 10 s),
// reads the file, drops entries expired at `now`, upserts `node` (a node already present keeps
// the later `until` and takes the new reason), and writes the file. Two processes adding at
// once lose nothing. Returns the list written. A file that cannot be parsed is an error and is
// left as it is (fix or remove it; nothing is overwritten blindly).
Result<std::vector<QuarantinedNode>> AddToQuarantine(const std::string& path,
                                                     const std::string& node, std::int64_t until,
                                                     const std::string& reason, std::int64_t now);

// Takes `node` off the quarantine (after a repair), under the same lock, dropping expired
// entries too. True when the node was quarantined; false when it was not (or no file exists).
Result<bool> RemoveFromQuarantine(const std::string& path, const std::string& node,
                                  std::int64_t now);

}  // namespace autoheal
