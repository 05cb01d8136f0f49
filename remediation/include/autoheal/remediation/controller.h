// The two epilogs' work, behind the thin programs in epilog/:
// - RunNodeEpilog (Epilog, root, each node): gathers the evidence of the job's lifetime on this
//   node (evidence_sources.h), resets a GPU the node's own diagnosis asks to reset (only when
//   no process uses it), and writes its NodeReport for the controller.
// - RunControllerEpilog (EpilogSlurmctld, once per job, on the controller): waits, bounded, for
//   the node reports, decides (decision.h) under a lock shared by concurrent job ends, and
//   executes: drain/reboot through the Slurm adapter, tickets through the sinks, incidents and
//   actions into the store, quarantine for culprits the breaker kept in service, the requeue
//   with excluded nodes and an early begin time, and the user's one-line explanation.
// Both never fail the job or the node on their own bugs: the programs catch everything and exit 0.
#pragma once

#include <string>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"

namespace autoheal::remediation {

struct EpilogOutcome {
    bool ok = true;
    std::string summary;  // one log line
};

EpilogOutcome RunNodeEpilog(const Config& config, const ScriptContext& ctx,
                            const std::string& self_exe);
EpilogOutcome RunControllerEpilog(const Config& config, const ScriptContext& ctx,
                                  const std::string& self_exe);

// Delivers the tickets that are due (the CLI and every controller epilog call it).
EpilogOutcome DeliverPendingTickets(const Config& config, double budget_seconds);

}  // namespace autoheal::remediation
