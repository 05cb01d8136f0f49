// autoheal-epilog-ctld — EpilogSlurmctld (slurmctld's script runner, once per job when it ends;
// it starts before the node epilogs finish). Waits for the node epilogs' reports, decides, acts
// on nodes, opens tickets and requeues the job when it may (remediation/controller.h).
// Always exits 0: the job's completion never depends on autoheal.
#include <spdlog/spdlog.h>

#include "autoheal/core/program.h"
#include "autoheal/remediation/controller.h"
#include "autoheal/remediation/program_start.h"

int main() {
    return autoheal::remediation::RunJobScript(
        "autoheal-epilog-ctld", "epilog-ctld",
        [](const autoheal::remediation::ProgramStart& start, const autoheal::ScriptContext& ctx) {
            auto outcome = autoheal::remediation::RunControllerEpilog(start.settings, ctx,
                                                                      autoheal::SelfExePath());
            if (outcome.ok) {
                spdlog::info("autoheal: epilog-ctld: {}", outcome.summary);
            } else {
                spdlog::error("autoheal: epilog-ctld: job={}: {}", ctx.job_id, outcome.summary);
            }
            return 0;
        });
}
