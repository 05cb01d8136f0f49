#include "autoheal/core/program.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "autoheal/core/log_format.h"

namespace autoheal {

void InstallLogger(std::string_view program_name, const Config& c) {
    const std::string name(program_name);
    const bool json = c.log_format == "json";
    std::shared_ptr<spdlog::logger> logger;
    if (c.log_target == "syslog") {
        // journald reads syslog too; the formatter adds no line end (syslog frames records).
        logger = std::make_shared<spdlog::logger>(
            name, std::make_shared<spdlog::sinks::syslog_sink_mt>("autoheal", LOG_PID, LOG_DAEMON,
                                                                  /*enable_formatting=*/true));
        logger->set_formatter(json ? MakeJsonLogFormatter(name, "")
                                   : MakeTextLogFormatter(name, /*for_syslog=*/true));
    } else {
        std::string problem;
        try {
            std::error_code ec;
            std::filesystem::create_directories(std::filesystem::path(c.log_file).parent_path(),
                                                ec);
            logger = std::make_shared<spdlog::logger>(
                name, std::make_shared<spdlog::sinks::basic_file_sink_mt>(c.log_file));
        } catch (const std::exception& e) {
            problem = e.what();
            logger = std::make_shared<spdlog::logger>(
                name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
        }
        logger->set_formatter(json ? MakeJsonLogFormatter(name, "\n")
                                   : MakeTextLogFormatter(name, /*for_syslog=*/false));
        if (!problem.empty()) {
            logger->warn("autoheal: log: cannot open {}: {}: logging to stderr", c.log_file,
                         problem);
        }
    }
    logger->set_level(spdlog::level::from_str(c.log_level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
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
