// /etc/autoheal/autoheal.yaml: the node-local settings every autoheal program reads.
// Unknown keys and bad values are errors that name file:line:column, so a typo never silently
// turns a setting off.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <string_view>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/result.h"

namespace autoheal {

struct Config {
    std::string source;  // where it was read from, for messages
    std::string log_file = "/var/log/autoheal/autoheal.log";  // used when log_target is file
    std::string log_level = "info";                           // trace|debug|info|warn|error
    std::string log_target = "file";  // file (log_file) | syslog (ident autoheal, facility daemon)
    std::string log_format = "text";  // text | json (one JSON object per line)
    std::string state_dir = kDefaultStateDir;  // prolog snapshots and job records
    YAML::Node health;       // the `health:` section, parsed by health/ (ParseHealthConfig)
    PolicySettings policy;   // read by ScanSubmitSettings (config_scan.h), the plugin's reader
    YAML::Node remediation;  // the `remediation:` section, parsed by remediation/
                             // (ParseRemediationConfig)
    YAML::Node agent;        // the `agent:` section, parsed by agent/ (ParseAgentConfig)
};

// Parses YAML text; `source_name` is used in messages ("autoheal.yaml:3:5: ...").
Result<Config> ParseConfig(std::string_view text, std::string_view source_name);

// Reads and parses a file (size-capped).
Result<Config> LoadConfigFile(const std::string& path);

// What a program runs with. A file that is missing gives the defaults. A file that does not
// parse, or whose sections `validate` rejects (it returns the problems, "" when usable), is not
// used: the last good copy is (state_dir/last-good/autoheal.yaml, kept by every load that
// succeeded), else the defaults with remediation in dry-run, so that a typo never turns
// remediation on. `problem` then says what was wrong (file:line:column) and what was used.
struct LoadedConfig {
    Config config;
    std::string problem;
};
using ConfigValidator = std::function<std::string(const Config&)>;
LoadedConfig LoadConfigKeepingLastGood(const std::string& path,
                                       const ConfigValidator& validate = {});

// Where the last good config and rules are kept.
std::string LastGoodDir(const std::string& state_dir);

}  // namespace autoheal
