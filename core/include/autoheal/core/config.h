// /etc/autoheal/autoheal.yaml, core's part: the file read once into a YAML document, the
// top-level settings (Config: logging, state_dir, the `policy:` section), and the last good copy
// a program falls back to. The other top-level sections (`health:`, `remediation:`) are parsed
// from the same document by the layers that own them; remediation/settings.h assembles them into
// one typed Settings (one load, one pass). Unknown keys and bad values are errors that name
// file:line:column, so a typo never silently turns a setting off.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/result.h"

namespace autoheal {

// The top-level settings.
struct Config {
    std::string source;  // where it was read from, for messages
    std::string log_file = "/var/log/autoheal/autoheal.log";  // used when log_target is file
    std::string log_level = "info";                           // trace|debug|info|warn|error
    std::string log_target = "file";  // file (log_file) | syslog (ident autoheal, facility daemon)
    std::string log_format = "text";  // text | json (one JSON object per line)
    std::string state_dir = kDefaultStateDir;  // prolog snapshots and job records
    PolicySettings policy;  // read by ScanSubmitSettings (config_scan.h), the plugin's reader
};

// The defaults, placed under `state_dir` (the quarantine file included).
Config DefaultConfig(const std::string& state_dir = kDefaultStateDir);

// YAML text -> its root: null (an empty file) or a mapping. Errors: "source:line:column: why".
Result<YAML::Node> ParseConfigDocument(std::string_view text, std::string_view source);

// Config from the document's root (ParseConfigDocument of `text`). Every top-level key is a
// setting of Config, `policy`, or one of `sections`: the sections other layers parse, which
// must be mappings (or empty); any other key is refused. `policy:` and state_dir are read by the
// job_submit plugin's scanner from `text`, so that what this parser accepts is what the plugin
// reads.
Result<Config> ParseCoreConfig(const YAML::Node& root, std::string_view text,
                               std::string_view source,
                               const std::vector<std::string_view>& sections);

// Where a program's settings came from (LoadConfigKeepingLastGood).
enum class ConfigOrigin {
    kFile,      // the file itself
    kLastGood,  // the file was unusable: the last good copy
    kMissing,   // no file: the defaults
    kBroken,    // the file was unusable and no last good copy was: the caller's safe defaults
};
struct ConfigLoad {
    ConfigOrigin origin = ConfigOrigin::kMissing;
    std::string state_dir = kDefaultStateDir;  // with kMissing and kBroken: where to keep state
    std::string problem;  // why the file was not used (file:line:column) and what was used
};

// Parses a settings file's text (`source` names it in errors) and returns the parsed settings'
// state_dir; the parser keeps what it parsed.
using ConfigTextParser =
    std::function<Result<std::string>(std::string_view text, const std::string& source)>;

// What a program runs with. The file at `path` is read once (ReadSmallFile: no link, at most
// kMaxConfigBytes) and given to `parse`. A file that is missing gives kMissing. A file that does
// not parse or is not trusted (CheckTrustedFile) is not used: its last good copy is
// (state_dir/last-good/autoheal.yaml, kept by every load that succeeded), parsed by `parse`
// too, else kBroken, for which the caller uses defaults that change nothing (remediation in
// dry-run), so that a typo never turns remediation on. With kFile and kLastGood, the settings to
// use are those of `parse`'s last successful call.
ConfigLoad LoadConfigKeepingLastGood(const std::string& path, const ConfigTextParser& parse);

// Where the last good config and rules are kept.
std::string LastGoodDir(const std::string& state_dir);

}  // namespace autoheal
