// The actions a node carries out itself after a run (today: reset_gpu), decided once by the
// controller epilog where the history and the breaker are known, and the node's answer:
//   run<N>/decision.json        "node_actions": [{"node","action","gpu"}]   (DecisionRecord)
//   run<N>/<node>.result.json {"version":1,"node","results":[{"action","gpu","outcome","detail"}]}
// A node epilog whose own diagnosis proposes a reset writes its report, waits (bounded) for the
// decision, executes what the decision lists for it (nothing when the breaker held the plan,
// in dry-run, or when the fault escalated to drain + RMA) and writes its result file; the
// controller waits (bounded, outside its lock) for that file and records the outcome.
#pragma once

#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

inline constexpr int kNodeResultVersion = 1;

struct NodeAction {
    std::string node;
    std::string action;  // a catalog action that runs on the node (diag/taxonomy.h): reset_gpu
    std::string gpu;     // PCI bus id
};

struct NodeActionResult {
    std::string action;
    std::string gpu;
    std::string outcome;  // a catalog outcome: done, failed, refused (a process used the GPU)
    std::string detail;
};

std::string NodeResultFile(const std::string& state_dir, const std::string& job, int restart,
                           const std::string& node);

std::string NodeResultsToJson(const std::string& node, const std::vector<NodeActionResult>& r);
// Refuses what is not a JSON object, or one of another version.
Result<std::vector<NodeActionResult>> NodeResultsFromJson(const std::string& json);

}  // namespace autoheal::remediation
