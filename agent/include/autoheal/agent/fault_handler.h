// What autoheal-agent does with new kernel records, through the controller epilog's own steps
// (ctld_epilog_steps.h), so a fault handled while the job runs is decided and acted on exactly as
// it would be after the job ended. No incident store is opened on the node: each fault is
// recorded in a store of its own in memory, which is handed to the controller through the shared
// jobs/ folder (AgentSpoolDir, job_records.h) and imported there by the controller epilog.
// 1. The lines are scanned into typed evidence (the epilog's scanner) and diagnosed with the
//    rules; only a deciding rule with `interrupts_job: true` goes further.
// 2. For each job running on the node: its agent record (AgentFile: the evidence, with no
//    job_action yet, which the controller epilog waits for); then LoadFacts (a job Slurm is
//    requeuing already is left alone), DecideJob with the run counted as failed, RecordIncidents
//    (the same deduplication keys as the controller epilog's: one incident per fault), Act (the
//    plan executor: breaker and admin drains respected), the job's end by agent.on_fault
//    (requeue excluding the node / end with the explanation / notify), Explain (the decision
//    file, from which the node epilogs append the explanation to the job's output). The
//    fault's store is then handed over, and only then the agent record written again, final,
//    with what was done: the controller epilog, which waits for the final record, finds the
//    store there and imports it before it records the run (the agent's actions come first). The
//    controller epilog of that run decides again with the node's history (its escalation does not
//    count this run's own incidents) and never requeues a run the agent ended.
// 3. No job on the node: the fault is recorded and the plan executed, so the node is out before
//    a job lands there. That decision has no history (the store is the controller's): a repeat
//    escalates when the controller sees the node's next fault.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/config.h"
#include "autoheal/health/check.h"
#include "autoheal/remediation/agent_config.h"
#include "autoheal/remediation/clock.h"
#include "autoheal/remediation/engine.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_client.h"
#include "autoheal/remediation/tickets.h"

namespace autoheal::agent {

using remediation::AgentConfig;
using remediation::OnFault;
using remediation::OnFaultName;

struct AgentEnv {
    const Config& config;
    const remediation::RemediationConfig& rc;
    const remediation::TicketConfig& tickets;
    const AgentConfig& agent;
    const remediation::Engine& engine;
    remediation::SlurmClient& slurm;
    remediation::Clock& clock;
    std::string node;
    const health::HealthConfig& health;  // NVML's library and time limit (the hang watch)
    // This node's slurmd spool folder (SlurmAdapter::SlurmdSpoolDir): which jobs have a step
    // here (node_jobs.h). Empty: the node's jobs from slurmctld's whole job table.
    std::string slurmd_spool_dir;
};

struct FaultHandled {
    std::string rule;  // the deciding rule; empty when no rule fired
    std::string cause;
    bool interrupting = false;      // the rule says interrupts_job
    std::vector<std::string> done;  // one line per job or idle node acted on, for the log
    // The Xids among the evidence, "<pci>/<xid>" (XidKey): the event watch does not handle
    // them again when NVML reports them too (agent/xid_event_watch.h).
    std::vector<std::string> xids;
};

// The agent's clock in ms: the monotonic clock (CLOCK_MONOTONIC counts from boot, so a restarted
// agent goes on with the same time base).
std::int64_t SteadyMs(remediation::Clock& clock);

// When an NVML child started now must have answered: health.nvml_timeout_seconds from now.
std::chrono::steady_clock::time_point NvmlDeadline(const AgentEnv& env);

// "0000:3b:00/79": an Xid's GPU as the kernel names it (lower case, no PCI function) and number.
std::string XidKey(const std::string& pci, const std::string& xid);

// Scans `lines` (new kernel records) and acts on an interrupting fault as described above.
FaultHandled HandleKernelLines(const AgentEnv& env, const std::string& lines);

// Evidence the agent read as data rather than lines (the counter watch's nvml-delta items,
// agent/counter_watch.h): handled as above from the diagnosis on.
FaultHandled HandleEvidence(const AgentEnv& env, const diag::EvidenceSet& found);

// A job the hang watch found hung (agent/hang_watch.h): as 2. above, with `job_output` (the
// job-hang item, the flight recorder's findings) as the evidence of the job's own files, never
// the node's: no node action, the culprit rank's node only left out of a requeue. The run's
// agent record is final when this returns. Returns the line for the log.
std::string HandleHungJob(const AgentEnv& env, const remediation::JobInfo& job,
                          const diag::EvidenceSet& job_output, std::int64_t dump_requested);

// The run's agent record while the dumps of a hung job are asked for: not final (no
// job_action), `dump_requested` set, so the agents of the job's other nodes ask their ranks too.
void WriteHangRecord(const AgentEnv& env, const remediation::JobInfo& job,
                     const diag::EvidenceSet& job_output, std::int64_t dump_requested);

}  // namespace autoheal::agent
