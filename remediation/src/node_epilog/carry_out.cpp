// CarryOut: the node-side actions the controller's decision lists for this node.
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/run_command.h"

namespace autoheal::remediation {
namespace {

NodeActionResult ResetGpu(const RemediationConfig& rc, const std::string& gpu,
                          const health::NodeSnapshot& after) {
    NodeActionResult r{"reset_gpu", gpu, "", ""};
    if (gpu.empty()) return {"reset_gpu", gpu, "failed", "no GPU named: not reset"};
    for (const auto& g : after.gpus) {
        if (g.pci_bus_id == gpu && g.compute_processes.value_or(0) > 0) {
            r.outcome = "refused";
            r.detail = "busy (" + std::to_string(*g.compute_processes) + " processes): not reset";
            return r;
        }
    }
    std::vector<std::string> argv;
    for (std::string a : rc.gpu_reset_command) {
        const std::size_t at = a.find("{gpu}");
        if (at != std::string::npos) a.replace(at, 5, gpu);
        argv.push_back(a);
    }
    r.detail = RunCommand(argv, 60);
    r.outcome = r.detail == "ok" ? "done" : "failed";
    return r;
}

}  // namespace

std::vector<NodeActionResult> CarryOutNodeActions(const NodeEpilogEnv& env,
                                                  const DecisionRecord& decision,
                                                  const health::NodeSnapshot& after) {
    std::vector<NodeActionResult> results;
    for (const NodeAction& a : decision.node_actions) {
        if (a.node != env.ctx.node) continue;
        if (a.action == "reset_gpu") {
            results.push_back(ResetGpu(env.rc, a.gpu, after));
        } else {
            results.push_back({a.action, a.gpu, "failed", "not an action a node carries out"});
        }
    }
    return results;
}

}  // namespace autoheal::remediation
