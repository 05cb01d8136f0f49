// The controller epilog (RunControllerEpilog, controller.h) as named steps, each a function of
// its inputs, run in this order by RunControllerPipeline:
//   CollectReports → LoadFacts → DecideJob → RecordIncidents → Act → Requeue → Explain
//   → AwaitNodeResults → Finish
// LoadFacts, DecideJob and RecordIncidents stop the run when they fail (nothing was done yet, or
// the store cannot hold what would be done). From Act on every step runs even when an earlier
// one failed or threw: a failed Act still lets the job be requeued, the run and decision be
// recorded; the failing step is logged and recorded as a "step" action on the job's incident.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"
#include "autoheal/diag/taxonomy.h"
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
};

std::uint32_t JobIdOf(const CtldEnv& env);

// Records an action's outcome in the store, in the catalog's words (diag/taxonomy.h); a store
// error is logged. True when recorded.
bool RecordOutcome(const CtldEnv& env, std::int64_t incident, diag::Action action,
                   const std::string& target, diag::Outcome outcome, const std::string& detail);

// The node reports of this run, waiting (bounded, results_wait_seconds) for the node epilogs;
// sets in->reports (sorted by node) and in->job.missing_reports.
void CollectReports(const CtldEnv& env, DecisionInput* in);

// The agent records of this run (job_records.h AgentRecord): a node without a report is judged
// on its agent's evidence. A run the agent requeued while it ran reaches its epilogs with
// Slurm's restart count already up: when the job is being requeued, the records of the run
// before are the ones, and the decision takes that run's number (one incident per fault).
struct AgentActed {
    bool ended = false;     // the agent requeued or ended the run
    bool requeued = false;  // it requeued it
};
AgentActed AddAgentEvidence(const CtldEnv& env, DecisionInput* in, bool being_requeued);

struct JobTimes {
    bool requeued_elsewhere = false;  // Slurm, an admin or an earlier run requeued it already
    bool agent_ended = false;         // autoheal-agent requeued or ended it (its decision stands)
    std::int64_t start_time = 0;
    std::int64_t end_time = 0;
};
// The job's state from Slurm (retried while slurmctld is away), the nodes' history, recent
// incidents and the topology, into `in`.
Result<JobTimes> LoadFacts(const CtldEnv& env, DecisionInput* in);

// REQUIRES: the controller lock is held. Reads every node's state (for the breaker), decides,
// and records the job run (unless requeued elsewhere).
Result<JobDecision> DecideJob(const CtldEnv& env, DecisionInput* in, const JobTimes& times);

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

// Delivers due tickets and writes the metrics.
void Finish(const CtldEnv& env);

// The whole controller epilog on `env` (steps above). REQUIRES: the rules loaded in env.engine.
EpilogOutcome RunControllerPipeline(const CtldEnv& env);

}  // namespace autoheal::remediation
