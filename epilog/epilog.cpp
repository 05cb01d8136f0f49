// autoheal-epilog — Epilog (slurmd, root, on every node of the job when it ends). Gathers the
// evidence of the job's lifetime on this node and leaves it for autoheal-epilog-ctld
// (remediation/controller.h). Always exits 0: a non-zero Epilog would drain the node for
// autoheal's own trouble ("Epilog error").
#include <spdlog/spdlog.h>

#include <exception>

#include "autoheal/core/program.h"
#include "autoheal/core/script_env.h"
#include "autoheal/remediation/controller.h"

int main() {
    try {
        autoheal::ProgramStart start = autoheal::StartProgram("autoheal-epilog");
        const autoheal::ScriptContext ctx =
            autoheal::ReadScriptContext(autoheal::ProcessEnvLookup());
        for (const std::string& problem : ctx.problems) {
            spdlog::warn("autoheal: epilog: ignoring job option: {} job={}", problem, ctx.job_id);
        }
        spdlog::info("autoheal: epilog: job seen: {}", autoheal::DescribeScriptContext(ctx));
        auto outcome =
            autoheal::remediation::RunNodeEpilog(start.config, ctx, autoheal::SelfExePath());
        if (outcome.ok) {
            spdlog::info("autoheal: epilog: {}", outcome.summary);
        } else {
            spdlog::error("autoheal: epilog: job={} node={}: {}", ctx.job_id, ctx.node,
                          outcome.summary);
        }
    } catch (const std::exception& e) {
        spdlog::error("autoheal: epilog: internal error: {}", e.what());
    } catch (...) {
        spdlog::error("autoheal: epilog: internal error");
    }
    return 0;
}
