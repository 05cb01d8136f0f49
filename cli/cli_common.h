// Shared by the CLI's commands.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autoheal/core/config.h"
#include "autoheal/diag/rule_files.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/settings.h"

namespace autoheal::cli {

// The folder the commands keep compiled scanners in (diag::DefaultScannerCacheDir from the
// environment).
std::string ScannerCacheDir();

// Loads rules from `paths`, or the default rules folder when empty. Prints problems to stderr
// (with file:line:col and snippets) and returns nullopt when the rules are unusable.
std::optional<diag::RuleSet> LoadRulesOrComplain(const std::vector<std::string>& paths);

// autoheal.yaml ($AUTOHEAL_CONFIG, else next to the program, else /etc/autoheal), every section
// parsed (remediation/settings.h). A missing or broken file is reported (file:line:column) and
// gives nullopt.
std::optional<remediation::Settings> LoadSettingsOrComplain(const char* command);

// The incident store under the config's state_dir, or nullptr after saying why. Only commands
// that record something (`create`) make a store where none is: the others say where to look.
// Run as root, the files this process made (the store, its -wal and -shm) are handed to
// state_dir's owner, so `autoheal resume` never leaves a store the controller cannot write.
std::unique_ptr<remediation::IncidentStore> OpenStoreOrComplain(const char* command,
                                                                const Config& config,
                                                                bool create = false);

// A command's arguments: `--name value` options, `--flag` switches and positionals. Unknown
// options, a missing value or a repeated option are refused with a message naming them.
struct Args {
    std::map<std::string, std::string> values;
    std::set<std::string> flags;
    std::vector<std::string> positional;
    bool Has(const std::string& flag) const { return flags.count(flag) != 0; }
    std::string Value(const std::string& name, const std::string& fallback = "") const {
        auto it = values.find(name);
        return it == values.end() ? fallback : it->second;
    }
};
std::optional<Args> ParseArgs(const char* command, const std::vector<std::string>& args,
                              const std::set<std::string>& value_options,
                              const std::set<std::string>& flag_options, const char* usage);

// "--since 7d" (a duration back from now) or a date (2026-11-01, local time) -> seconds since
// the epoch; nullopt after a message naming the option.
std::optional<std::int64_t> ParseSinceOrComplain(const char* command, const std::string& option,
                                                 const std::string& text, std::int64_t now);

std::string FormatTime(std::int64_t epoch);        // "2026-11-29 22:19:44" (local time); "-" for 0
std::string FormatDuration(std::int64_t seconds);  // "45s", "12m", "3h05m", "2d04h"

// Aligned columns for people; every cell on one line (newlines and tabs become spaces, other
// control characters are escaped as \xHH by EscapeControl, cells are cut at `max_width`
// characters with "...").
class Table {
  public:
    explicit Table(std::vector<std::string> header, std::size_t max_width = 80);
    void Add(std::vector<std::string> row);
    bool empty() const { return rows_.empty(); }
    void Print(std::FILE* out) const;

  private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
    std::size_t max_width_;
};

int Classify(const std::vector<std::string>& args);
int Rules(const std::vector<std::string>& args);
int RulesCatalog(const std::vector<std::string>& args);  // rules_catalog.cpp
int Health(const std::vector<std::string>& args);
int Status(const std::vector<std::string>& args);
int Incidents(const std::vector<std::string>& args);
int Node(const std::vector<std::string>& args);
int Resume(const std::vector<std::string>& args);
int Tickets(const std::vector<std::string>& args);
int Replay(const std::vector<std::string>& args);
int Metrics(const std::vector<std::string>& args);
int ConfigCommand(const std::vector<std::string>& args);
int Report(const std::vector<std::string>& args);
int Simulate(const std::vector<std::string>& args);  // simulate_cmd.cpp

}  // namespace autoheal::cli
