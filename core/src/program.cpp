#include "autoheal/core/program.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace autoheal {
ProgramStart StartProgram(std::string_view program_name) {
    ProgramStart start;
    const std::string path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfExePath());
    auto loaded = LoadConfigFile(path);
    if (loaded) {
        start.config = std::move(loaded).value();
    } else {
        start.config_problem = loaded.error();
    }
    const std::string name(program_name);
    std::shared_ptr<spdlog::logger> logger;
    try {
        std::error_code ec;
        std::filesystem::create_directories(
            std::filesystem::path(start.config.log_file).parent_path(), ec);
        logger = spdlog::basic_logger_mt(name, start.config.log_file);
    } catch (const std::exception& e) {
        logger = spdlog::stderr_logger_mt(name + "-stderr");
        logger->warn("autoheal: log: cannot open {}: {}: logging to stderr", start.config.log_file,
                     e.what());
    }
    logger->set_pattern(std::string("%Y-%m-%dT%H:%M:%S.%e%z ") + name + "[%P] %l: %v");
    logger->set_level(spdlog::level::from_str(start.config.log_level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    if (!start.config_problem.empty()) {
        spdlog::error("autoheal: config: {}: using defaults", start.config_problem);
    }
    return start;
}

std::string SelfExePath() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.string();
}

EnvLookup ProcessEnvLookup() {
    return [](std::string_view name) -> std::optional<std::string> {
        const char* v = std::getenv(std::string(name).c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
    };
}

}  // namespace autoheal

namespace autoheal {

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

}  // namespace autoheal
