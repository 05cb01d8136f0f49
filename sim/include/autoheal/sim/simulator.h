// `autoheal simulate`: a discrete-event simulation of one job on a cluster (Scenario), in
// simulated time, run twice on the same faults:
// - autoheal: each fault becomes the typed evidence the node epilogs send (kernel lines scanned
//   by the real scanner, NVML deltas, the job's output), and the controller's real steps decide
//   and act (ctld_epilog_steps.h: LoadFacts, DecideJob with Decide, RecordIncidents, Act,
//   Requeue) on a MemorySlurmClient, a ManualClock and an incident store in memory, with the
//   shipped rules. What they did (drains, reboots, requeues with excluded nodes, tickets, the
//   breaker) is what the simulated cluster does next.
// - slurm: the same faults with Slurm's own requeue (a node that dies) and otherwise a person who
//   diagnoses (human_diagnosis), takes the broken node out and resubmits.
// Stage latencies are the scenario's, each with its source; the real steps' wall time is
// measured in the loop and reported (decision_ms) beside the scenario's `decision` stage.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autoheal/diag/rules.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/sim/scenario.h"

namespace autoheal::sim {

struct CauseOutcome {
    int interruptions = 0;
    double gpu_hours_lost = 0;  // work since the last checkpoint plus the time until training again
    int human = 0;              // interruptions a person had to handle
};

// One mode's run.
struct ModeResult {
    std::string name;  // "autoheal" or "slurm"
    double ettr = 0;   // training time kept / span
    double productive_seconds = 0;
    int interruptions = 0;
    int automatic_requeues = 0;   // requeued without a person
    int human_interventions = 0;  // a person diagnosed and resubmitted
    int node_actions = 0;         // nodes taken out
    int false_node_actions = 0;   // nodes taken out that the fault was not on
    int rmas = 0;                 // RMA tickets opened
    int breaker_trips = 0;        // decisions whose node actions the breaker held
    int exclusions_cleared = 0;   // times the job's excluded nodes were given back to it
    double waiting_for_nodes_seconds = 0;
    std::map<std::string, CauseOutcome> by_cause;  // by Scenario cause name
    std::vector<int> out_of_service_by_day;        // most nodes out of service each day
};

// What the real code decided for one cause, the first time it was seen (for the output).
struct CauseVerdict {
    std::string decided_cause;  // Decide's cause
    std::string rule;
    std::string actions;  // "drain+reboot on the culprit; requeue"
};

// One fault in the autoheal mode, as the real steps left the simulated cluster.
struct FaultEvent {
    double time = 0;
    std::string cause;                     // the scenario's name
    std::vector<std::string> fault_nodes;  // where the evidence was
    std::string decided;                   // Decide's cause
    std::vector<std::string> taken_out;    // nodes drained (not held)
    std::vector<std::string> rebooted;     // of those, asked to reboot
    std::string switch_incident;           // the leaf switch named, if any
    bool requeued = false;                 // by autoheal or by Slurm (a node that died)
    std::string excluded;                  // the job's excluded nodes after the decision
    bool agent = false;                    // autoheal-agent would have acted while it ran
    bool breaker_held = false;             // the breaker held its node actions
};

struct SimResult {
    Scenario scenario;
    ModeResult autoheal, slurm;
    std::map<std::string, CauseVerdict> verdicts;
    std::vector<double> decision_ms;  // each real decision's wall time
    std::vector<FaultEvent> events;   // the autoheal mode's faults, in order
    double DecisionMedianMs() const;
    double wall_seconds = 0;
};

// REQUIRES: `rules` and `scanner` built from the same rule files. `work_dir` is an empty folder
// the steps may write their records into (the resume record, the quarantine file).
Result<SimResult> Simulate(const Scenario& scenario, const diag::RuleSet& rules,
                           std::shared_ptr<const diag::Scanner> scanner,
                           const std::string& work_dir);

}  // namespace autoheal::sim
