// The controller's decision for one ended job, as a pure function of what it was told: the node
// epilogs' reports, the job's facts, the cluster's node states and topology, and the incident
// history. No Slurm calls and no I/O here (remediation/controller.h executes the decision), so
// every branch is unit-tested and a 2,048-node job is decided in memory.
//
// 1. Each node's own evidence (kernel log, NVML deltas, post-job check: the typed items its
//    report carries, never rescanned) is diagnosed with that node's history: its cause, plan
//    and culprit GPU.
// 2. The job's own output (read by the batch host's epilog) is diagnosed once for the job.
// 3. Culprits: nodes whose own evidence names an infrastructure cause (a hardware part, a link);
//    the job's output names the cause only when no node does (an NCCL timeout on every rank blames
//    no one; the one node with an Xid is the culprit). The flight recorder's dumps (read with
//    the job's output, nccl-fr-culprit) may name the node of the rank behind a hang: a suspect,
//    left out of the rerun but given no node action.
// 4. Network correlation: nodes under one leaf switch with a network cause in this job or in the
//    store's recent incidents (within the window) -> one incident for the switch, one network
//    ticket naming it, and no node tickets.
// 4b. Lemons: a failed run that nothing explains (no node named, cause unknown or an NCCL
//    timeout) and for which every node reported counts against each of its nodes; a node with
//    `lemon.failures` such jobs of at least `lemon.min_users` distinct users within
//    `lemon.window` (this one included) is drained for deep checks. One user's failing jobs
//    never make a lemon, and a run whose own bug explains it never counts.
// 5. The breaker: the nodes autoheal holds out of service now (from Slurm's node states, however
//    long ago they were taken out) plus the ones this decision would take out, against
//    max_nodes and max_fraction of the cluster; beyond it the node actions are held (recorded,
//    alerted, culprits quarantined). When the node states could not be read, every action that
//    takes a node out is held.
// 6. Requeue: the job failed, asked for --auto-resume, the cause is an infrastructure one the
//    rule allows to requeue, and the restarts are under the cap; culprits (and the switch's
//    nodes) join the job's excluded nodes. Never a run that exited kNoRequeueExitCode (the job's
//    own "do not requeue", NVIDIA's resilience launcher), nor one whose newest checkpoint has not
//    advanced across no_progress_requeues requeues in a row (the no-progress breaker).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/rules.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/node_actions.h"
#include "autoheal/remediation/node_reason.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {

// The exit code by which a job says "do not requeue me" (NVIDIA's resilience launcher).
inline constexpr int kNoRequeueExitCode = 93;

struct JobFacts {
    std::string job;
    std::string user;  // the job's user (uid); empty when unknown
    int restart_count = 0;
    bool failed = false;                       // non-zero exit, signal or node failure
    std::optional<int> auto_resume;            // the job's cap; absent = not opted in
    bool requeueable = true;                   // Slurm's requeue flag
    std::vector<std::string> nodes;            // the job's nodes
    std::vector<std::string> excluded;         // already excluded
    std::vector<std::string> missing_reports;  // nodes whose epilog did not report in time
    std::optional<int> exit_status;            // the batch script's exit code (not a signal)
    // The no-progress breaker: the newest checkpoint now (from the batch host's report), where it
    // stood at the last requeue and how many requeues in a row it had not advanced (resume.json).
    std::optional<CheckpointMark> checkpoint;
    std::optional<CheckpointMark> checkpoint_at_requeue;
    int stalled_requeues = 0;
};

struct ClusterView {
    std::vector<NodeInfo> nodes;  // every node, for the breaker
    bool nodes_known = true;      // false: Slurm's node states could not be read
    // Nodes carrying out an action asked of them (a GPU reset) whose result is not back: out of
    // service for the breaker while it runs, though Slurm shows them in service.
    std::vector<std::string> busy_with_asked;
    std::vector<SwitchInfo> switches;         // topology; empty without one
    std::vector<diag::HistoryRecord> recent;  // incidents within the correlation window
    std::int64_t now = 0;
};

struct NodeVerdict {
    std::string node;
    diag::Diagnosis diagnosis;
    diag::EvidenceSet evidence;
    bool culprit = false;
    // The diagnosis names a GPU the job did not have (NodeReport::job_gpus): evidence about the
    // node (its plan stands), not about this job's failure (the node is no culprit of it).
    bool other_gpu = false;
};

struct NodePlan {
    std::string node;
    std::string gpu;
    std::string cause;
    std::string rule;
    std::vector<std::string> actions;  // in plan order; drain/reboot/reset_gpu/rma_ticket/...
    // The node reason, typed (node_reason.h). The decision is made before the incidents are
    // recorded, so it carries no inc=: the controller (Act) sets why.incident to the node's
    // incident and drains, reboots and records with FormatReason(why).
    NodeReason why;
    std::vector<std::string> held;  // actions the breaker or the correlation held back
};

struct SwitchIncident {
    std::string name;
    std::vector<std::string> nodes;  // every node under it with a network cause in the window
};

struct JobDecision {
    std::string cause = "unknown";
    std::string rule;
    double confidence = 0;
    std::string summary;                    // "faulty_gpu on node2 (xid 79, GPU 0000:3b:00.0)"
    std::vector<NodeVerdict> verdicts;      // one per reporting node
    std::optional<NodeVerdict> job_output;  // the job's own output, when read
    std::vector<std::string> culprits;
    // Nodes left out of the rerun on the job's own evidence (the rank a flight recorder dump
    // names, nccl-fr-culprit): excluded when the job is requeued, never a node action, never
    // "blamed" (the dumps are the user's files).
    std::vector<std::string> suspects;
    std::vector<NodePlan> plans;  // nodes with actions
    std::optional<SwitchIncident> network;
    bool breaker_open = false;
    std::string breaker_note;
    std::vector<std::string> quarantine;  // culprits left in service: soft-avoid them
    // How the run ended, for the store's job runs: "ok", "own" (the job's own bug), "blamed" (a
    // node was named), "unexplained" (it failed, the cause is unknown or an NCCL timeout, and
    // nothing named a node) or "other" (it failed of a cause that blames no node, such as a
    // software dependency).
    std::string outcome = "ok";
    // An unexplained failure with every node's report in: what counts towards lemons. A run
    // with a missing report is "unexplained" in `runs` but never a lemon's evidence.
    bool counts_towards_lemons = false;
    bool requeue = false;
    std::vector<std::string> exclude;  // the job's excluded nodes after this decision
    std::string explanation;           // one line for the user (AdminComment)
    int stalled_requeues = 0;  // with this requeue: requeues in a row without checkpoint progress
};

struct UnexplainedFailures {
    std::string node;
    int jobs = 0;                    // distinct earlier jobs
    std::vector<std::string> users;  // their distinct users (runs without one not listed)
};

struct DecisionInput {
    JobFacts job;
    std::vector<NodeReport> reports;
    ClusterView cluster;
    const diag::RuleSet* rules = nullptr;
    const RemediationConfig* config = nullptr;
    // Escalation history per node; may be empty.
    std::vector<std::pair<std::string, std::vector<diag::HistoryRecord>>> history;
    // Per node: the earlier jobs within lemon.window that failed unexplained on it.
    std::vector<UnexplainedFailures> unexplained_failures;
};

JobDecision Decide(const DecisionInput& input);

// What the controller epilog keeps of a decision (DecisionFile): read by the batch host's epilog
// (the explanation) and by `autoheal replay` (the facts, to decide the run again).
struct DecisionRecord {
    int version = kDecisionRecordVersion;
    std::string job;        // the job id (empty in records written before it was kept)
    std::int64_t time = 0;  // when it was decided, seconds since the epoch (0: not kept)
    std::string explanation;
    bool requeue = false;
    std::string cause;
    std::string rule;
    std::string outcome;
    std::vector<std::string> culprits;
    JobFacts facts;
    std::vector<NodeAction> node_actions;  // what each node must carry out itself (node_actions.h)
};
std::string DecisionRecordToJson(const DecisionRecord& record);
// Lenient: missing or mistyped fields keep their defaults; non-JSON and a version newer than
// kDecisionRecordVersion are errors (no version: version 1).
Result<DecisionRecord> DecisionRecordFromJson(const std::string& json);

// Short evidence words for a diagnosis: "xid 79, GPU 0000:3b:00.0" or the rule name.
std::string DescribeEvidence(const diag::Diagnosis& d);

// Nodes autoheal holds out of service: drained, down or rebooting with an autoheal reason.
int NodesTakenOut(const std::vector<NodeInfo>& nodes);

// The most nodes autoheal may hold out of service at once on a cluster of `total` nodes
// (at least one: a small cluster can still lose its one broken node).
int BreakerLimit(const BreakerConfig& config, int total);

}  // namespace autoheal::remediation
