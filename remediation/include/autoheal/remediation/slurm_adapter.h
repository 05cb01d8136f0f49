// Every call autoheal makes to Slurm goes through this adapter (Slurm's C API, -lslurm; no
// shelling out to scontrol), so the rest of autoheal is tested without Slurm and the rules for
// touching nodes live in one place:
// - a node drained or down for a reason autoheal did not set ("autoheal: ..." prefix) is never
//   drained again, relabelled, rebooted or resumed: an admin put it there;
// - resume only undoes what autoheal did (unless forced by an admin through the CLI);
// - every call is idempotent: asking for a state the node is already in changes nothing.
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

struct SwitchInfo {
    std::string name;
    int level = 0;                   // 0 = leaf
    std::vector<std::string> nodes;  // nodes directly under it (leaves only)
};

class SlurmAdapter {
  public:
    // Connects with Slurm's configuration: `slurm_conf` if not empty, else $SLURM_CONF, else
    // Slurm's default.
    explicit SlurmAdapter(const std::string& slurm_conf = "");
    ~SlurmAdapter();
    SlurmAdapter(const SlurmAdapter&) = delete;
    SlurmAdapter& operator=(const SlurmAdapter&) = delete;

    Result<NodeInfo> GetNode(const std::string& name);
    Result<std::vector<NodeInfo>> ListNodes();

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

    Result<JobInfo> GetJob(std::uint32_t job_id);
    // Requeues a batch job (running, completing or failed). Already pending: error.
    Result<bool> Requeue(std::uint32_t job_id);
    Result<bool> UpdateJob(std::uint32_t job_id, const JobUpdate& update);

    // The switch tree from Slurm's topology plugin (topology/tree); empty without one.
    Result<std::vector<SwitchInfo>> Topology();

    // Hostlist expressions ("node[1-3],gpu7") to names and back, with Slurm's own code.
    static std::vector<std::string> ExpandHostlist(const std::string& expression);
    static std::string CompressHostlist(const std::vector<std::string>& names);
};

// Sends REQUEST_REBOOT_NODES (slurm_reboot.cpp: the one place that needs Slurm's internal
// message headers, since 22.05's slurm.h has no reboot call). Returns Slurm's error code.
int SendRebootRequest(const std::string& node, const std::string& reason, bool asap,
                      bool resume_after);

}  // namespace autoheal::remediation
