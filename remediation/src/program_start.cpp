#include "autoheal/remediation/program_start.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>

#include "autoheal/core/program.h"

namespace autoheal::remediation {

ProgramStart StartProgram(std::string_view program_name) {
    const std::string path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfExePath());
    LoadedSettings loaded = LoadSettingsKeepingLastGood(path);
    ProgramStart start{std::move(loaded.settings), std::move(loaded.problem)};
    InstallLogger(program_name, start.settings.core);
    if (!start.config_problem.empty()) {
        spdlog::error("autoheal: config: {}", start.config_problem);
    }
    return start;
}

int RunJobScript(
    std::string_view program_name, std::string_view area,
    const std::function<int(const ProgramStart&, const ScriptContext&)>& body) noexcept {
    try {
        const ProgramStart start = StartProgram(program_name);
        const ScriptContext ctx = ReadScriptContext(ProcessEnvLookup());
        for (const std::string& problem : ctx.problems) {
            spdlog::warn("autoheal: {}: ignoring job option: {} job={}", area, problem, ctx.job_id);
        }
        spdlog::info("autoheal: {}: job seen: {}", area, DescribeScriptContext(ctx));
        return body(start, ctx);
    } catch (const std::exception& e) {
        spdlog::error("autoheal: {}: internal error, failing open: {}", area, e.what());
    } catch (...) {
        spdlog::error("autoheal: {}: internal error, failing open", area);
    }
    return 0;
}

}  // namespace autoheal::remediation
