// The `tickets:` sub-section of `remediation:` in autoheal.yaml: the sinks that deliver the
// incident store's tickets, and the retry times (delivery: tickets.h). Parsing is strict
// (unknown keys, bad values, duplicate sink names are errors naming source:line:column) and
// touches no file: the same autoheal.yaml loads on every node, also where a sink's folder or
// secret does not exist.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

enum class TicketSinkType { kSpool, kWebhook, kCommand };

// "spool" | "webhook" | "command": the stable names used in the config.
const char* TicketSinkTypeName(TicketSinkType type);

struct TicketSinkConfig {
    TicketSinkType type = TicketSinkType::kSpool;
    std::string name;  // unique among the sinks; the store's `sink` column; default: the type
    // spool: the folder of JSON files (created 0750 if missing).
    std::string dir;
    // webhook: the URL (http or https) and an optional bearer-token file.
    std::string url;
    std::string secret_file;
    // command: argv[0] is an absolute path; run without a shell.
    std::vector<std::string> argv;
    // webhook and command: how long one delivery may take.
    double timeout_seconds = 0;
};

struct TicketConfig {
    std::int64_t retry_initial_seconds = 30;
    std::int64_t retry_max_seconds = 3600;
    std::vector<TicketSinkConfig> sinks;
};

inline constexpr double kDefaultWebhookTimeoutSeconds = 10;
inline constexpr double kDefaultCommandTimeoutSeconds = 30;

// Parses the `tickets:` node of the `remediation:` section (`source` names the file in errors,
// `state_dir` places the default spool sink). A null or absent node gives the defaults: the
// retry times above and one sink {type: spool, name: spool, dir: <state_dir>/tickets}.
Result<TicketConfig> ParseTicketConfig(const YAML::Node& node, const std::string& source,
                                       const std::string& state_dir);

}  // namespace autoheal::remediation
