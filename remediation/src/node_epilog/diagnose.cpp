// Diagnose: the node's own diagnosis of its evidence, without history.
#include "autoheal/remediation/node_epilog_steps.h"

namespace autoheal::remediation {

diag::Diagnosis DiagnoseNode(const NodeEpilogEnv& env, NodeEvidence* evidence) {
    diag::Analyze(&evidence->set);
    diag::DiagnoseOptions options;
    options.node = env.ctx.node;
    options.job = env.ctx.job_id;
    options.now = env.clock.Now();
    diag::Diagnosis local = diag::Diagnose(env.engine.rules, evidence->set, options);
    evidence->report.local_cause = local.rule.empty() ? "" : local.cause + " (" + local.rule + ")";
    return local;
}

}  // namespace autoheal::remediation
