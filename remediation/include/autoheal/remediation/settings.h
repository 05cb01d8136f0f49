// autoheal.yaml as the programs use it: read once, each section parsed once by the layer that
// owns it, into one typed Settings (docs/architecture.md, "Settings"):
//
//   top level (log_*, state_dir) and policy:   core      ParseCoreConfig     (core/config.h)
//   health:                                    health    ParseHealthConfig   (health_config.h)
//   remediation: (its tickets: included)       here      ParseRemediationConfig
//                                                        (remediation_config.h, ticket_config.h)
//   agent:                                     here      ParseAgentConfig    (agent_config.h)
//
// A new section is one line in kSections (settings.cpp), one member here and its owner's parse
// function. Errors name file:line:column and the key; unknown keys are refused at every level.
#pragma once

#include <string>
#include <string_view>

#include "autoheal/core/config.h"
#include "autoheal/core/result.h"
#include "autoheal/health/check.h"
#include "autoheal/remediation/agent_config.h"
#include "autoheal/remediation/remediation_config.h"

namespace autoheal::remediation {

struct Settings {
    Config core;                    // the top-level keys and `policy:`
    health::HealthConfig health;    // `health:`
    RemediationConfig remediation;  // `remediation:`, with `tickets:` in remediation.tickets
    AgentConfig agent;              // `agent:`, autoheal-agent's
};

// The defaults, placed under `state_dir`.
Settings DefaultSettings(const std::string& state_dir = kDefaultStateDir);

// Parses autoheal.yaml's text (`source` names it in messages). A YAML or top-level error is the
// one problem; otherwise each section is parsed once and every section's problem is reported,
// one per line ("source:line:column: section.key: why").
Result<Settings> ParseSettings(std::string_view text, std::string_view source);

// Reads (ReadSmallFile, at most kMaxConfigBytes) and parses a settings file; a missing file is
// an error.
Result<Settings> LoadSettingsFile(const std::string& path);

// What a program runs with (LoadConfigKeepingLastGood): the file's settings; when it is broken,
// the last good copy's; with neither, the defaults with remediation in dry-run; without a file,
// the defaults. `problem` says what was wrong and what was used instead ("" when nothing was).
struct LoadedSettings {
    Settings settings;
    std::string problem;
};
LoadedSettings LoadSettingsKeepingLastGood(const std::string& path);

}  // namespace autoheal::remediation
