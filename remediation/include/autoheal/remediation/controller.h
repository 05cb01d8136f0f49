// The two epilogs' work, behind the thin programs in epilog/, as named steps
// (node_epilog_steps.h, ctld_epilog_steps.h) on the real Slurm client and the system clock:
// - RunNodeEpilog (Epilog, root, each node): gathers the evidence of the job's lifetime on this
//   node (evidence_sources.h), writes its NodeReport for the controller, and carries out the
//   node-side actions (a GPU reset) the controller's decision lists for it, only when no
//   process uses the GPU; it never acts on its own diagnosis.
// - RunControllerEpilog (EpilogSlurmctld, once per job, on the controller): waits, bounded, for
//   the node reports, decides (decision.h) under a lock shared by concurrent job ends, and
//   executes: drain/reboot through the Slurm client, tickets through the sinks, incidents and
//   actions into the store, quarantine for culprits the breaker kept in service, the requeue
//   with excluded nodes and an early begin time, the user's one-line explanation, and the
//   outcome of the node-side actions once the nodes report them.
// Both never fail the job or the node on their own bugs: the programs catch everything and exit 0.
#pragma once

#include <string>

#include "autoheal/core/script_env.h"
#include "autoheal/remediation/settings.h"

namespace autoheal::remediation {

struct EpilogOutcome {
    bool ok = true;
    std::string summary;  // one log line
};

EpilogOutcome RunNodeEpilog(const Settings& settings, const ScriptContext& ctx,
                            const std::string& self_exe);
EpilogOutcome RunControllerEpilog(const Settings& settings, const ScriptContext& ctx,
                                  const std::string& self_exe);

// Delivers the tickets that are due (the CLI and every controller epilog call it), unless another
// process is delivering them right now (then nothing, and ok: they are in hand).
EpilogOutcome DeliverPendingTickets(const Settings& settings, double budget_seconds);

}  // namespace autoheal::remediation
