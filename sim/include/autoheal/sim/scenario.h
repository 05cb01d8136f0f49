// What `autoheal simulate` simulates (docs/report.md "Simulation"): the cluster, the job on it,
// the span, the faults (a cause mix and rate, each cause with the evidence autoheal would see)
// and the latency of every stage between a fault and the job training again, each with where
// its figure came from. Read from a YAML file (examples/simulate/llama3-54d.yaml is the default);
// every problem is refused naming the file and the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::sim {

// One NVML counter that changed on the faulty GPU between the prolog and the epilog
// (evidence_sources.h: the nvml-delta items the node epilog sends).
struct NvmlChange {
    std::string counter;  // gpu_lost, ecc_uncorrected_sram, remapped_rows_failure, ...
    std::string before, after;
};

struct Cause {
    std::string name;            // as the mix names it ("Faulty GPU")
    double count = 0;            // interruptions in `span` at `reference_gpus`
    std::string where = "node";  // node: one node; switch: nodes under one leaf switch; job: the
                                 // job's own code (no node is at fault)
    int switch_nodes = 2;        // where: switch, how many nodes under the leaf see it
    bool hangs = false;          // the job hangs (the NCCL watchdog ends it) instead of exiting
    bool node_down = false;      // the node dies: Slurm notices (SlurmdTimeout) and requeues
    std::vector<std::string> kernel;      // the faulty node's kernel log lines
    std::vector<NvmlChange> nvml;         // its NVML deltas
    std::vector<std::string> job_output;  // the job's output (read by the batch host)
};

// A stage's latency in seconds and where the figure came from.
struct Stage {
    double seconds = 0;
    std::string source;
};

// The stages, by name (Scenario::stages): detect_agent, detect_exit, nccl_watchdog, decision,
// requeue_to_start, prolog, restart, checkpoint_interval, reboot, repair, slurmd_timeout,
// slurm_requeue_delay, human_diagnosis. `decision` is the simulated time a decision takes (a
// measured figure, so that a seed gives the same run); the real steps' wall time in the loop is
// measured and reported beside it (SimResult::decision_ms).
const std::vector<std::string>& StageNames();

struct Scenario {
    std::string source;  // the file read, for messages and the output
    int nodes = 2048;    // the job's nodes
    int gpus_per_node = 8;
    int spare_nodes = 64;                // more nodes in the cluster, to replace those taken out
    int nodes_per_leaf = 32;             // leaf switch size (topology/tree)
    double span_seconds = 54 * 86400.0;  // how long to simulate
    double interruptions = 0;            // sum of the causes' counts
    double counts_span_seconds = 54 * 86400.0;  // the span the counts are for (the file's span)
    int reference_gpus = 16384;                 // the counts are for a job of this many GPUs
    std::uint64_t seed = 1;
    // Which of the job's nodes the real steps decide on: "all" (a report from each of them, as
    // the controller epilog gets them) or "leaf" (the fault's nodes, every node of the job under
    // the same leaf switch and the batch host; the rest of the job is left out of the decision:
    // the breaker still sees every node's state). "leaf" keeps the default run under a minute.
    std::string decide_on = "leaf";
    int auto_resume = 1000;      // the job's --auto-resume and the site's policy.max_auto_resume
    int breaker_max_nodes = 16;  // remediation.breaker (the shipped defaults)
    double breaker_max_fraction = 0.10;
    std::vector<Cause> causes;
    std::map<std::string, Stage> stages;
    double Seconds(const std::string& stage) const { return stages.at(stage).seconds; }
};

// Parses a scenario; `name` names it in errors ("FILE: key: why").
Result<Scenario> ParseScenario(const std::string& yaml, const std::string& name);
Result<Scenario> LoadScenario(const std::string& path);

}  // namespace autoheal::sim
