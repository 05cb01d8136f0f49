// autoheal-epilog-ctld — EpilogSlurmctld (slurmctld's script runner, once per job when it ends;
// it starts before the node epilogs finish). Waits for the node epilogs' reports, decides, acts
// on nodes, opens tickets and requeues the job when it may (remediation/controller.h).
// Always exits 0: the job's completion never depends on autoheal.
#include <spdlog/spdlog.h>

#include <exception>

#include "autoheal/core/program.h"
#include "autoheal/core/script_env.h"
#include "autoheal/remediation/controller.h"

int main() {
    try {
        autoheal::ProgramStart start = autoheal::StartProgram("autoheal-epilog-ctld");
        const autoheal::ScriptContext ctx =
            autoheal::ReadScriptContext(autoheal::ProcessEnvLookup());
        for (const std::string& problem : ctx.problems) {
            spdlog::warn("autoheal: epilog-ctld: ignoring job option: {} job={}", problem,
                         ctx.job_id);
        }
        spdlog::info("autoheal: epilog-ctld: job seen: {}", autoheal::DescribeScriptContext(ctx));
        auto outcome =
            autoheal::remediation::RunControllerEpilog(start.config, ctx, autoheal::SelfExePath());
        if (outcome.ok) {
            spdlog::info("autoheal: epilog-ctld: {}", outcome.summary);
        } else {
            spdlog::error("autoheal: epilog-ctld: job={}: {}", ctx.job_id, outcome.summary);
        }
    } catch (const std::exception& e) {
        spdlog::error("autoheal: epilog-ctld: internal error: {}", e.what());
    } catch (...) {
        spdlog::error("autoheal: epilog-ctld: internal error");
    }
    return 0;
}
