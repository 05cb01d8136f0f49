// The diagnosis engine: from evidence and rules to a cause, a culprit and a plan.
//   1. Analyze() adds what no single line shows: NCCL watchdog timeouts compared across ranks
//      (desync, the rank that never entered, a hang on the first collective), PCI addresses
//      normalised, the GPU of a multi-line driver message ("The NVIDIA GPU <bdf>" and the
//      lines after it), the host of a line.
//   2. Diagnose() evaluates every rule; a rule suppressed by another that fired is never the
//      root cause; the firing rule with the highest priority names the cause (a guess only
//      when no other rule fires); rules that contribute actions (e.g. Xid 154's recovery
//      action) join its plan; history escalates.
//      The culprit GPU is the first evidence field named pci, uuid ("GPU-...", as the
//      Kubernetes device plugin and GPUd name it), bdf or gpu.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/diag/evidence.h"
#include "autoheal/diag/rules.h"

namespace autoheal::diag {

// One earlier incident, for escalation (`repeats` within a window, per GPU or node).
struct HistoryRecord {
    std::int64_t time = 0;  // seconds since the epoch
    std::string node;
    std::string gpu;
    std::string rule;
    std::string cause;
    std::string job;
    // The incident's deduplication key in the store: "<job>/run<N>/..." for a job run's.
    std::string key;
    std::string user;  // the job's user (uid), when known
};

struct DiagnoseOptions {
    std::string node;  // the node the logs come from, when known
    std::string job;   // the job the logs belong to, when known
    std::string user;  // the job's user (uid), when known
    std::vector<HistoryRecord> history;
    std::int64_t now = 0;  // seconds since the epoch
    // An escalation step that counts distinct jobs (`distinct: job`) also needs at least this
    // many distinct users among them (this job's user and the history's known users).
    int escalation_min_users = 1;
};

struct Culprit {
    std::string node;
    std::string gpu;  // PCI bus id, 0000:3b:00.0
    std::optional<int> rank;
    std::optional<int> gpu_index;  // where the evidence names the GPU only by index (GPU4)
};

struct Finding {
    std::string rule;
    std::string cause;
    int priority = 0;
    bool suppressed = false;
    bool contributes_actions = false;
    std::vector<Evidence> evidence;  // its first lines (at most 3), for `classify --explain`
};

struct Diagnosis {
    std::string cause = "unknown";
    std::vector<std::string> actions;
    bool requeue = false;
    bool interrupts_job = false;  // the deciding rule's interrupts_job
    Culprit culprit;
    std::string rule;  // the rule that named the cause; empty when none fired
    // The deciding rule is a guess (`guess: true`): the cause is the likeliest for lines no
    // rule reads, and explains nothing (no culprit node, no plan, no requeue).
    bool guess = false;
    std::vector<Evidence> evidence;  // what that rule matched (and contributing rules)
    double confidence = 0.0;  // the rule's, capped by the evidence's kind, lower on a conflict
    // The strongest kind among the deciding lines, which caps the confidence: "kernel record"
    // (the kernel or a driver logged the fault), "nvml counter" (a counter or health check the
    // node epilog read), "tool or job output" (nvidia-smi, dcgmi, NCCL, a framework); empty
    // when no rule fired.
    std::string evidence_kind;
    std::vector<Finding> findings;  // every rule that fired, winner first
    std::string escalation;         // why the plan was escalated, when it was

    // A rule that is not a guess named the cause.
    bool Explains() const { return !rule.empty() && !guess; }
};

void Analyze(EvidenceSet* set);

Diagnosis Diagnose(const RuleSet& rules, const EvidenceSet& set, const DiagnoseOptions& options);

// Whether `condition` holds on `set` (as in a rule's match; the rule loader checks rules'
// examples with it).
bool ConditionHolds(const Condition& condition, const EvidenceSet& set);

// Orders actions by the catalog's plan order and removes duplicates.
std::vector<std::string> NormalizePlan(std::vector<std::string> actions);

}  // namespace autoheal::diag
