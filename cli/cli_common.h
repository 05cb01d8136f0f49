// Shared by the CLI's commands.
#pragma once

#include <string>
#include <vector>

#include "autoheal/diag/rule_files.h"

namespace autoheal::cli {

// Loads rules from `paths`, or the default rules folder when empty. Prints problems to stderr
// (with file:line:col and snippets) and returns nullopt when the rules are unusable.
std::optional<diag::RuleSet> LoadRulesOrComplain(const std::vector<std::string>& paths);

int Classify(const std::vector<std::string>& args);
int Rules(const std::vector<std::string>& args);
int Health(const std::vector<std::string>& args);
int ConfigCommand(const std::vector<std::string>& args);

}  // namespace autoheal::cli
