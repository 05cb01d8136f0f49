// Diagnose: the node's own diagnosis of its evidence, without history.
#include "autoheal/remediation/node_epilog_steps.h"

namespace autoheal::remediation {

diag::Diagnosis DiagnoseNode(const NodeEpilogEnv& env, NodeEvidence* evidence) {
    diag::EvidenceSet analyzed = evidence->report.evidence;  // the report carries it as found
    diag::Analyze(&analyzed);
    diag::DiagnoseOptions options;
    options.node = env.ctx.node;
    options.job = env.ctx.job_id;
    options.now = env.clock.Now();
    diag::Diagnosis local = diag::Diagnose(env.engine.rules, analyzed, options);
    evidence->report.local_cause = local.rule.empty() ? "" : local.cause + " (" + local.rule + ")";
    return local;
}

}  // namespace autoheal::remediation
