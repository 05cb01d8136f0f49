// Start-up shared by autoheal's programs (prolog, epilogs, CLI): find and load the settings
// (settings.h: read once, every section parsed once, the last good copy when the file is broken),
// and send logs where they say.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "autoheal/core/script_env.h"
#include "autoheal/remediation/settings.h"

namespace autoheal::remediation {

struct ProgramStart {
    Settings settings;
    std::string config_problem;  // why the config file could not be used, and what was used instead
};

// Loads the settings (FindConfigPath, LoadSettingsKeepingLastGood), installs the logger they
// name (InstallLogger, core/program.h) and logs config_problem as an error. Never throws.
ProgramStart StartProgram(std::string_view program_name);

// The frame of a Prolog / Epilog / EpilogSlurmctld program: starts the program, reads Slurm's
// script environment, logs "autoheal: <area>: job seen: job=... node=... auto_resume=..." (and a
// warning per option value that failed validation), then returns body's exit code. Our own bugs
// fail open: an exception is logged and the exit code is 0. Never throws.
int RunJobScript(
    std::string_view program_name, std::string_view area,
    const std::function<int(const ProgramStart&, const ScriptContext&)>& body) noexcept;

}  // namespace autoheal::remediation
