// Start-up shared by autoheal's programs (prolog, epilogs, CLI): find and load the config,
// and send logs to the configured file.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "autoheal/core/config.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/script_env.h"

namespace autoheal {

struct ProgramStart {
    Config config;
    std::string config_problem;  // why the config file could not be used, and what was used instead
};

// Loads the config (see FindConfigPath) and installs the default spdlog logger, named after the
// program, writing to config.log_file (its folder is created if missing). When the file cannot
// be opened, logs go to stderr. Never throws.
// `validate` checks the sections core does not parse (see LoadConfigKeepingLastGood).
ProgramStart StartProgram(std::string_view program_name, const ConfigValidator& validate = {});

// Looks variables up in this process's environment.
EnvLookup ProcessEnvLookup();

// This program's own path (/proc/self/exe), or "" when it cannot be read.
std::string SelfExePath();

// The frame of a Prolog / Epilog / EpilogSlurmctld program: starts the program, reads Slurm's
// script environment, logs "autoheal: <area>: job seen: job=... node=... auto_resume=..." (and a
// warning per option value that failed validation), then returns body's exit code. Our own bugs
// fail open: an exception is logged and the exit code is 0. Never throws.
int RunJobScript(std::string_view program_name, std::string_view area,
                 const std::function<int(const ProgramStart&, const ScriptContext&)>& body,
                 const ConfigValidator& validate = {}) noexcept;

}  // namespace autoheal
