// SlurmClient: every call autoheal makes to Slurm goes through this interface, so the epilogs'
// steps run in unit tests against a fake cluster (sim/memory_slurm.h, also what `autoheal simulate`
// runs on) and the real one (slurm_adapter.h: Slurm's C API, -lslurm; scontrol only to print the
// topology where a release's reply cannot be read otherwise) holds the only Slurm-release-specific
// code. The rules for touching nodes live here, once, for
// both:
// - a node drained or down for a reason autoheal did not set ("autoheal: ..." prefix) is never
//   drained again, relabelled, rebooted or resumed: an admin put it there;
// - resume only undoes what autoheal did (unless forced by an admin through the CLI);
// - every call is idempotent: asking for a state the node is already in changes nothing.
// Errors carry codes: kUnavailable when slurmctld did not answer (a restart, a failover: retry
// later), kNotFound for an unknown job or node, kInvalid for a request Slurm refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/remediation/node_reason.h"

namespace autoheal::remediation {

struct NodeInfo {
    std::string name;
    std::string state;             // Slurm's words: "IDLE", "MIXED+DRAIN", ...
    std::string reason;            // empty when none
    std::int64_t reason_time = 0;  // when the reason was set (seconds since the epoch)
    bool drained = false;          // DRAIN flag set (draining or drained)
    bool down = false;
    bool reboot_pending = false;  // a reboot was asked for and has not happened yet
    bool ReasonIsOurs() const;
    // Out of service: drained, down or failing.
    bool Out() const { return drained || down; }
};

struct JobInfo {
    std::uint32_t id = 0;
    std::string state;  // base state: "RUNNING", "PENDING", "FAILED", "COMPLETED", ...
    bool completing = false;
    bool pending = false;
    bool being_requeued = false;   // pending again, or requeued and still completing
    std::uint32_t exit_code = 0;   // wait status of the batch script
    std::uint32_t derived_ec = 0;  // highest exit status of the job's steps
    int restart_count = 0;
    bool requeue = false;  // the job may be requeued
    std::string name;
    std::uint32_t user_id = 0;
    std::string user_name;
    std::string nodes;  // hostlist expression
    std::string exc_nodes;
    std::string req_nodes;
    std::string batch_host;
    std::string std_out;  // as given (may hold %j-style patterns); empty = Slurm's default
    std::string std_err;
    std::string work_dir;
    std::string admin_comment;
    std::uint32_t array_job_id = 0;
    std::uint32_t array_task_id = 0;
    std::int64_t start_time = 0;
    std::int64_t end_time = 0;
};

struct JobUpdate {
    std::optional<std::string> exc_nodes;
    std::optional<std::int64_t> begin_time;  // seconds since the epoch
    std::optional<std::string> admin_comment;
};

// A switch of topology/tree, or a block of topology/block (an NVL72 rack: a blast-radius unit like
// a leaf switch, level 0; an aggregated block is level 1).
struct SwitchInfo {
    std::string name;
    int level = 0;                   // 0 = leaf (or block)
    std::vector<std::string> nodes;  // nodes directly under it
};

class SlurmClient {
  public:
    virtual ~SlurmClient() = default;

    virtual Result<NodeInfo> GetNode(const std::string& name) = 0;
    virtual Result<std::vector<NodeInfo>> ListNodes() = 0;

    enum class DrainOutcome { kDrained, kAlreadyOurs, kAdminOwned };
    // Drains `node` with `reason` (which must start with "autoheal:"), unless an admin already
    // drained it or took it down.
    Result<DrainOutcome> Drain(const std::string& node, const std::string& reason);

    enum class RebootOutcome { kRequested, kAlreadyPending, kAdminOwned };
    // Asks Slurm to reboot `node` once it is idle (ASAP: no new jobs meanwhile), then to return
    // it to service; the node shows `reason` until then. Not on a node an admin took out.
    Result<RebootOutcome> Reboot(const std::string& node, const std::string& reason);

    enum class ResumeOutcome { kResumed, kNotOut, kAdminOwned };
    // Returns `node` to service when autoheal took it out (or when `force`).
    Result<ResumeOutcome> Resume(const std::string& node, bool force = false);

    virtual Result<JobInfo> GetJob(std::uint32_t job_id) = 0;
    // Requeues a batch job (running, completing or failed). Already pending: error.
    virtual Result<bool> Requeue(std::uint32_t job_id) = 0;
    virtual Result<bool> UpdateJob(std::uint32_t job_id, const JobUpdate& update) = 0;
    // The jobs running on `node` now (state RUNNING, not completing), for autoheal-agent.
    virtual Result<std::vector<JobInfo>> RunningJobsOn(const std::string& node) = 0;
    // Ends a running job (every step and the batch script killed); Slurm records it CANCELLED.
    virtual Result<bool> EndJob(std::uint32_t job_id) = 0;

    // The switches (topology/tree) or blocks (topology/block) from Slurm; empty without any.
    virtual Result<std::vector<SwitchInfo>> Topology() = 0;

  protected:
    // The state changes themselves, called by Drain/Reboot/Resume once the rules above allow
    // them (REQUIRES: the node exists and is autoheal's to change).
    virtual Result<bool> SetDrain(const std::string& node, const std::string& reason) = 0;
    virtual Result<bool> RequestReboot(const std::string& node, const std::string& reason) = 0;
    virtual Result<bool> SetResume(const std::string& node) = 0;
};

}  // namespace autoheal::remediation
