// What every autoheal program does first, whatever settings it reads: send logs where the
// config says, and find itself and its environment. The programs' start-up with the whole
// settings (StartProgram, RunJobScript) is remediation/program_start.h.
#pragma once

#include <string>
#include <string_view>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"

namespace autoheal {

// Installs the default spdlog logger, named after the program, per config.log_target,
// log_format and log_level: to config.log_file (its folder is created if missing) or to syslog.
// When the file cannot be opened, logs go to stderr. Never throws.
void InstallLogger(std::string_view program_name, const Config& config);

// Looks variables up in this process's environment.
EnvLookup ProcessEnvLookup();

// This program's own path (/proc/self/exe), or "" when it cannot be read.
std::string SelfExePath();

}  // namespace autoheal
