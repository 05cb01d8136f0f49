// autoheal-epilog — Epilog (slurmd, root, on every node of the job when it ends). Gathers the
// evidence of the job's lifetime on this node and leaves it for autoheal-epilog-ctld
// (remediation/controller.h). Always exits 0: a non-zero Epilog would drain the node for
// autoheal's own trouble ("Epilog error").
#include <spdlog/spdlog.h>

#include "autoheal/core/program.h"
#include "autoheal/remediation/controller.h"
#include "autoheal/remediation/program_start.h"

int main() {
    return autoheal::remediation::RunJobScript(
        "autoheal-epilog", "epilog",
        [](const autoheal::remediation::ProgramStart& start, const autoheal::ScriptContext& ctx) {
            auto outcome =
                autoheal::remediation::RunNodeEpilog(start.settings, ctx, autoheal::SelfExePath());
            if (outcome.ok) {
                spdlog::info("autoheal: epilog: {}", outcome.summary);
            } else {
                spdlog::error("autoheal: epilog: job={} node={}: {}", ctx.job_id, ctx.node,
                              outcome.summary);
            }
            return 0;
        });
}
