// CarryOut: the node-side actions the controller's decision lists for this node.
#include "autoheal/diag/taxonomy.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/run_command.h"

namespace autoheal::remediation {
namespace {

std::string Word(diag::Outcome outcome) { return std::string(diag::ToString(outcome)); }

NodeActionResult ResetGpu(const RemediationConfig& rc, const std::string& gpu,
                          const health::NodeSnapshot& after) {
    NodeActionResult r{std::string(diag::ToString(diag::Action::kResetGpu)), gpu, "", ""};
    if (gpu.empty()) {
        r.outcome = Word(diag::Outcome::kFailed);
        r.detail = "no GPU named: not reset";
        return r;
    }
    for (const auto& g : after.gpus) {
        if ((g.pci_bus_id == gpu || g.uuid == gpu) && g.compute_processes.value_or(0) > 0) {
            r.outcome = Word(diag::Outcome::kRefused);
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
    r.outcome = Word(r.detail == "ok" ? diag::Outcome::kDone : diag::Outcome::kFailed);
    return r;
}

}  // namespace

std::vector<NodeActionResult> CarryOutNodeActions(const NodeEpilogEnv& env,
                                                  const DecisionRecord& decision,
                                                  const health::NodeSnapshot& after) {
    std::vector<NodeActionResult> results;
    for (const NodeAction& a : decision.node_actions) {
        if (a.node != env.ctx.node) continue;
        if (diag::ParseAction(a.action) == diag::Action::kResetGpu) {
            results.push_back(ResetGpu(env.rc, a.gpu, after));
        } else {
            results.push_back({a.action, a.gpu, Word(diag::Outcome::kFailed),
                               "not an action a node carries out"});
        }
    }
    return results;
}

}  // namespace autoheal::remediation
