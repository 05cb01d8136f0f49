// The controller epilog (RunControllerEpilog, controller.h) as named steps, each a function of
// its inputs, run in this order by RunControllerPipeline:
//   LoadFacts → CollectReports → DecideJob → RecordIncidents → Act → Requeue → Explain
//   → AwaitNodeResults → Finish
// The controller lock (one decision at a time) covers DecideJob to Explain only; Finish's
// ticket delivery runs under its own lock, which a job end takes only when it is free.
// LoadFacts and DecideJob stop the run when they fail (nothing was done yet). When
// RecordIncidents fails on the store, the run goes on recording into a store in memory, saved
// to the spool at the end (SpoolRun) and imported by a later run (ImportSpooledRuns). From Act
// on every step runs even when an earlier one failed or threw: a failed Act still lets the job
// be requeued, the run and decision be recorded; the failing step is logged and recorded as a
// "step" action on the job's incident.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"
#include "autoheal/diag/taxonomy.h"
#include "autoheal/remediation/breaker_lock.h"
#include "autoheal/remediation/clock.h"
#include "autoheal/remediation/controller.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/engine.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/node_actions.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_client.h"
#include "autoheal/remediation/tickets.h"

namespace autoheal::remediation {

// What every controller step is given. REQUIRES: ctx.job_id is SafePathPart.
struct CtldEnv {
    const Config& config;
    const ScriptContext& ctx;
    const RemediationConfig& rc;
    const TicketConfig& tickets;
    const Engine& engine;
    IncidentStore& store;
    SlurmClient& slurm;
    Clock& clock;
    // How long AwaitNodeResults waits for the nodes' result files.
    double node_results_wait_seconds = 75;
    // No ticket delivery starts after this many seconds in Finish (one started runs to its
    // sink's timeout).
    double ticket_budget_seconds = 10;
    // `store` is a store in memory because the one on disk could not be opened: the run is
    // saved to the spool at the end.
    bool spooling = false;
};

std::uint32_t JobIdOf(const CtldEnv& env);

// Records an action's outcome in the store, in the catalog's words (diag/taxonomy.h); a store
// error is logged. True when recorded.
bool RecordOutcome(const CtldEnv& env, std::int64_t incident, diag::Action action,
                   const std::string& target, diag::Outcome outcome, const std::string& detail);

// The agent records of this run (job_records.h AgentRecord): a node without a report is judged
// on its agent's evidence. A run the agent requeued while it ran reaches its epilogs with
// Slurm's restart count already up: when the job is being requeued, the records of the run
// before are the ones, and the decision takes that run's number (one incident per fault).
struct AgentActed {
    bool ended = false;     // the agent requeued or ended the run
    bool requeued = false;  // it requeued it
};
// An agent record still being written (job_action empty: the agent is acting on the run) is
// waited for, bounded by kAgentRecordWaitSeconds; after that it counts as evidence only.
inline constexpr double kAgentRecordWaitSeconds = 20;
AgentActed AddAgentEvidence(const CtldEnv& env, DecisionInput* in, bool being_requeued);

// Removes this run's own incidents (in->job.restart_count, as AddAgentEvidence leaves it) from
// in->history: an agent's record of the same fault, imported before this epilog, is no repeat
// of it, so one fault never escalates itself.
void DropThisRunFromHistory(DecisionInput* in);

struct JobTimes {
    bool requeued_elsewhere = false;  // Slurm, an admin or an earlier run requeued it already
    bool agent_ended = false;         // autoheal-agent requeued or ended it (its decision stands)
    std::int64_t start_time = 0;      // of this run
    std::int64_t end_time = 0;
};

// Why `report` is not the report of `node` for run `restart` of `job`, written once that run
// had started at `run_start` (seconds since the epoch); empty when it is.
std::string ReportMismatch(const NodeReport& report, const std::string& job,
                           const std::string& node, int restart, std::int64_t run_start);

// The node reports of this run, waiting (bounded, results_wait_seconds) for the node epilogs;
// sets in->reports (sorted by node) and in->job.missing_reports. Only the nodes of
// in->job.nodes are read, and only reports that ReportMismatch accepts (times.start_time): a
// file left by an earlier job with the same id (job ids wrap) counts as not yet written.
void CollectReports(const CtldEnv& env, const JobTimes& times, DecisionInput* in);
// The job's state from Slurm (retried while slurmctld is away), the nodes' history, recent
// incidents and the topology, into `in`.
Result<JobTimes> LoadFacts(const CtldEnv& env, DecisionInput* in);

// REQUIRES: the controller lock is held. Reads every node's state (for the breaker; unreadable:
// no node is taken out), decides, and records the job run (unless requeued elsewhere).
// The caller holds the controller lock and tries the breaker lock (breaker_lock.h) before it:
// when that was not taken, the breaker cannot count and no node is taken out.
Result<JobDecision> DecideJob(const CtldEnv& env, DecisionInput* in, const JobTimes& times,
                              const BreakerLock& breaker);
// The job run's rows for the lemons (DecideJob's record); a store error is logged.
bool RecordJobRunOf(const CtldEnv& env, const DecisionInput& in, const JobDecision& d);

struct Incidents {
    std::map<std::string, std::int64_t> of_node;  // nodes whose evidence fired a rule
    std::int64_t job = 0;
};
// One incident per node whose evidence fired a rule, one per node that went down with the job
// without reporting, and one for the job.
Result<Incidents> RecordIncidents(const CtldEnv& env, const DecisionInput& in,
                                  const JobDecision& d);

// A reset (or other action that runs on the node) asked of a node, to be recorded once its
// result is back.
struct AskedNodeAction {
    NodeAction action;  // as the decision file lists it
    diag::Action kind = diag::Action::kResetGpu;
    std::int64_t incident = 0;
};
struct ActOutcome {
    std::vector<std::string> done;  // "drain node2: done", for the summary
    std::vector<AskedNodeAction> asked;
};
// REQUIRES: the controller lock is held. Executes the plans: the switch incident and its
// ticket, drain, reboot, tickets, node-side actions (listed for the decision file; recorded by
// AwaitNodeResults), held actions, the breaker alert and quarantine. Dry-run records only.
ActOutcome Act(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
               const Incidents& incidents);

// Requeues the job once per run (when decided and not dry-run), excluding the culprits and with
// an early begin time; records the requeue or the explanation. Returns the requeue's failure
// (empty when none); a failure rewrites d->explanation.
std::string Requeue(const CtldEnv& env, const DecisionInput& in, JobDecision* d,
                    const Incidents& incidents);

// A run requeued while it ran (autoheal-agent): Slurm resets the begin time of a requeued job
// when its requeue completes (now + cred_expire + 1) unless a later one is set; set it again now,
// while the job is completing.
void RenewBeginTime(const CtldEnv& env);

// The run record (unless requeued elsewhere) and the decision file, which lists the node-side
// actions asked.
void Explain(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
             const JobTimes& times, const std::string& requeue_failure,
             const std::vector<AskedNodeAction>& asked);

// Waits (bounded: node_results_wait_seconds) for the result file of each node asked to act and
// records each action's outcome ("failed" with "no result" when none came).
std::vector<std::string> AwaitNodeResults(const CtldEnv& env,
                                          const std::vector<AskedNodeAction>& asked);

// Removes job folders past remediation.jobs_retention_days (CleanOldJobRecords), delivers due
// tickets (when `deliver_tickets`: the caller holds the ticket lock) and writes the metrics.
// Runs outside the decision lock.
void Finish(const CtldEnv& env, bool deliver_tickets);

// The spool: when the store fails (full disk, locked, corrupt), the run is recorded in a store
// in memory (the drain and the requeue still happen) and SpoolRun saves it under
// SpoolDir(state_dir); ImportSpooledRuns, at a later job end with a working store, imports
// each saved run (ImportFrom) and removes its file, and so the stores autoheal-agent saved under
// AgentSpoolDir (job_records.h). Returns the incidents imported.
std::string SpoolDir(const std::string& state_dir);
void SpoolRun(const CtldEnv& env, IncidentStore& spooled);
int ImportSpooledRuns(const CtldEnv& env);

// The whole controller epilog on `env` (steps above). REQUIRES: the rules loaded in env.engine.
EpilogOutcome RunControllerPipeline(const CtldEnv& env);

}  // namespace autoheal::remediation
