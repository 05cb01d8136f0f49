// Reading rule files for the programs (the loader itself does no file I/O).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autoheal/diag/rules.h"

namespace autoheal::diag {

// Expands paths: a folder gives its *.yaml / *.yml files in name order; a file gives itself.
// Unreadable paths are reported in `errors`.
std::vector<std::string> ExpandRulePaths(const std::vector<std::string>& paths,
                                         std::vector<std::string>* errors);

struct LoadedRules {
    std::optional<RuleSet> rules;  // set when there was no error
    LoadResult result;
    std::vector<std::string> files;        // what was loaded, in order
    std::vector<std::string> read_errors;  // files that could not be read
};

// Loads the files of `paths` (see ExpandRulePaths) in order. Files over 4 MiB are refused.
LoadedRules LoadRuleFiles(const std::vector<std::string>& paths);

// Rules for the programs that act on them (the epilogs). Loads the files of `dir`; when they
// load, keeps a copy of them in `last_good_dir` (replaced only when they changed); when they do
// not (a file broken while being edited, during an `scontrol reconfigure`), loads that copy
// instead. `problem` says what was wrong (file:line:column) and which rules are in use.
struct RulesInUse {
    std::optional<RuleSet> rules;  // empty when neither `dir` nor the copy loads
    std::string source;            // the folder the rules came from
    std::string problem;           // "" when `dir` loaded
};
RulesInUse LoadRulesKeepingLastGood(const std::string& dir, const std::string& last_good_dir);

// The default rules folder: $AUTOHEAL_RULES_DIR, else <exe_dir>/../etc/autoheal/rules.d when it
// exists, else /etc/autoheal/rules.d.
std::string DefaultRulesDir(const char* env_value, const std::string& exe_path);

}  // namespace autoheal::diag
