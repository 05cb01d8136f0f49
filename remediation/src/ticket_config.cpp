#include "autoheal/remediation/ticket_config.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "autoheal/core/yaml_read.h"

namespace autoheal::remediation {
namespace {

constexpr std::int64_t kMaxRetrySeconds = 30LL * 24 * 3600;
constexpr double kMaxTimeoutSeconds = 3600;

bool IsAbsolutePath(const std::string& s) {
    return !s.empty() && s[0] == '/' && s.find('\0') == std::string::npos;
}

bool ValidSinkName(const std::string& s) {
    if (s.empty() || s.size() > 64) return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
    });
}

bool StartsWithNoCase(const std::string& s, const std::string& prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
    }
    return true;
}

bool ValidUrl(const std::string& s) {
    const std::size_t scheme = StartsWithNoCase(s, "http://")    ? 7
                               : StartsWithNoCase(s, "https://") ? 8
                                                                 : 0;
    if (scheme == 0 || s.size() == scheme) return false;
    return std::none_of(s.begin(), s.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
}

bool ParseSinkType(const std::string& s, TicketSinkType* type) {
    if (s == "spool") {
        *type = TicketSinkType::kSpool;
    } else if (s == "webhook") {
        *type = TicketSinkType::kWebhook;
    } else if (s == "command") {
        *type = TicketSinkType::kCommand;
    } else {
        return false;
    }
    return true;
}

// One entry of `sinks:`. Throws YAML::Exception on malformed keys (caught by the caller).
Result<TicketSinkConfig> ParseSink(const YAML::Node& node, const std::string& source,
                                   std::size_t index, const std::string& state_dir) {
    const std::string path = "remediation.tickets.sinks[" + std::to_string(index) + "]";
    if (!node.IsMap())
        return MakeError(ErrorCode::kInvalid,
                         YamlWhere(source, node) + ": " + path + ": expected a mapping");
    TicketSinkConfig sink;
    const YAML::Node type_node = node["type"];
    if (!type_node) {
        return MakeError(ErrorCode::kInvalid, YamlWhere(source, node) + ": " + path +
                                                  ": needs a type (spool, webhook or command)");
    }
    std::string type;
    if (!YamlRead(type_node, &type) || !ParseSinkType(type, &sink.type)) {
        return MakeError(ErrorCode::kInvalid, YamlWhere(source, type_node) + ": " + path +
                                                  ".type: expected spool, webhook or command");
    }
    std::set<std::string> seen;
    bool has_name = false;
    bool has_timeout = false;
    for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        const YAML::Node& v = kv.second;
        if (!seen.insert(key).second) {
            return MakeError(ErrorCode::kInvalid, YamlWhere(source, kv.first) + ": " + path +
                                                      ": duplicate key '" + key + "'");
        }
        auto bad = [&](const std::string& what) {
            return MakeError(ErrorCode::kInvalid,
                             YamlWhere(source, v) + ": " + path + "." + key + ": expected " + what);
        };
        auto only = [&](TicketSinkType t) { return sink.type == t; };
        if (key == "type") continue;
        if (key == "name") {
            if (!YamlRead(v, &sink.name) || !ValidSinkName(sink.name)) {
                return bad("a name of letters, digits, '.', '_' or '-' (at most 64)");
            }
            has_name = true;
        } else if (key == "dir" && only(TicketSinkType::kSpool)) {
            if (!YamlRead(v, &sink.dir) || !IsAbsolutePath(sink.dir))
                return bad("an absolute path");
        } else if (key == "url" && only(TicketSinkType::kWebhook)) {
            if (!YamlRead(v, &sink.url) || !ValidUrl(sink.url)) {
                return bad("an http:// or https:// URL");
            }
        } else if (key == "secret_file" && only(TicketSinkType::kWebhook)) {
            if (!YamlRead(v, &sink.secret_file) || !IsAbsolutePath(sink.secret_file)) {
                return bad("an absolute path");
            }
        } else if (key == "argv" && only(TicketSinkType::kCommand)) {
            if (!v.IsSequence() || v.size() == 0)
                return bad("a list: [/absolute/program, args...]");
            for (const YAML::Node& arg : v) {
                std::string s;
                if (!YamlRead(arg, &s) || s.find('\0') != std::string::npos) {
                    return MakeError(ErrorCode::kInvalid, YamlWhere(source, arg) + ": " + path +
                                                              ".argv: expected a string");
                }
                sink.argv.push_back(std::move(s));
            }
            if (!IsAbsolutePath(sink.argv[0])) {
                return MakeError(ErrorCode::kInvalid,
                                 YamlWhere(source, v[0]) + ": " + path +
                                     ".argv: the program must be an absolute path (no shell, no "
                                     "PATH lookup)");
            }
        } else if (key == "timeout_seconds" &&
                   (only(TicketSinkType::kWebhook) || only(TicketSinkType::kCommand))) {
            if (!YamlRead(v, &sink.timeout_seconds) || !(sink.timeout_seconds > 0) ||
                sink.timeout_seconds > kMaxTimeoutSeconds) {
                return bad("seconds, more than 0 and at most 3600");
            }
            has_timeout = true;
        } else {
            return MakeError(ErrorCode::kInvalid, YamlWhere(source, kv.first) +
                                                      ": unknown setting '" + path + "." + key +
                                                      "' for a " + type + " sink");
        }
    }
    if (!has_name) sink.name = type;
    switch (sink.type) {
        case TicketSinkType::kSpool:
            if (sink.dir.empty()) sink.dir = state_dir + "/tickets";
            break;
        case TicketSinkType::kWebhook:
            if (sink.url.empty()) {
                return MakeError(ErrorCode::kInvalid, YamlWhere(source, node) + ": " + path +
                                                          ": a webhook sink needs url");
            }
            if (!has_timeout) sink.timeout_seconds = kDefaultWebhookTimeoutSeconds;
            break;
        case TicketSinkType::kCommand:
            if (sink.argv.empty()) {
                return MakeError(ErrorCode::kInvalid, YamlWhere(source, node) + ": " + path +
                                                          ": a command sink needs argv");
            }
            if (!has_timeout) sink.timeout_seconds = kDefaultCommandTimeoutSeconds;
            break;
    }
    return sink;
}

// The `sinks:` list, each name used once.
Result<std::vector<TicketSinkConfig>> ParseSinks(const YAML::Node& v, const std::string& source,
                                                 const std::string& state_dir) {
    std::vector<TicketSinkConfig> sinks;
    std::size_t index = 0;
    for (const YAML::Node& s : v) {
        auto sink = ParseSink(s, source, index++, state_dir);
        if (!sink) return sink.status();
        for (const TicketSinkConfig& other : sinks) {
            if (other.name == sink->name) {
                return MakeError(ErrorCode::kInvalid,
                                 YamlWhere(source, s) +
                                     ": remediation.tickets.sinks: duplicate sink name '" +
                                     sink->name + "' (give each sink its own name)");
            }
        }
        sinks.push_back(std::move(sink).value());
    }
    return sinks;
}

}  // namespace

const char* TicketSinkTypeName(TicketSinkType type) {
    switch (type) {
        case TicketSinkType::kSpool:
            return "spool";
        case TicketSinkType::kWebhook:
            return "webhook";
        case TicketSinkType::kCommand:
            return "command";
    }
    return "unknown";
}

Result<TicketConfig> ParseTicketConfig(const YAML::Node& node, const std::string& source,
                                       const std::string& state_dir) {
    TicketConfig config;
    bool sinks_given = false;
    if (node && !node.IsNull()) {
        if (!node.IsMap()) {
            return MakeError(ErrorCode::kInvalid,
                             YamlWhere(source, node) + ": remediation.tickets: expected a mapping");
        }
        try {
            std::set<std::string> seen;
            for (const auto& kv : node) {
                const std::string key = kv.first.as<std::string>();
                const YAML::Node& v = kv.second;
                if (!seen.insert(key).second) {
                    return MakeError(ErrorCode::kInvalid,
                                     YamlWhere(source, kv.first) +
                                         ": remediation.tickets: duplicate key '" + key + "'");
                }
                auto bad = [&](const std::string& what) {
                    return MakeError(ErrorCode::kInvalid, YamlWhere(source, v) +
                                                              ": remediation.tickets." + key +
                                                              ": expected " + what);
                };
                if (key == "retry_initial_seconds" || key == "retry_max_seconds") {
                    std::int64_t seconds = 0;
                    if (!YamlRead(v, &seconds) || seconds < 1 || seconds > kMaxRetrySeconds) {
                        return bad("whole seconds from 1 to 2592000 (30 days)");
                    }
                    (key == "retry_initial_seconds" ? config.retry_initial_seconds
                                                    : config.retry_max_seconds) = seconds;
                } else if (key == "sinks") {
                    if (!v.IsSequence()) return bad("a list of sinks");
                    sinks_given = true;
                    auto sinks = ParseSinks(v, source, state_dir);
                    if (!sinks) return sinks.status();
                    config.sinks = std::move(sinks).value();
                } else {
                    return MakeError(ErrorCode::kInvalid,
                                     YamlWhere(source, kv.first) +
                                         ": unknown setting 'remediation.tickets." + key + "'");
                }
            }
        } catch (const YAML::Exception& e) {
            return MakeError(ErrorCode::kInvalid, source + ":" + std::to_string(e.mark.line + 1) +
                                                      ":" + std::to_string(e.mark.column + 1) +
                                                      ": " + e.msg);
        }
        if (config.retry_max_seconds < config.retry_initial_seconds) {
            return MakeError(ErrorCode::kInvalid,
                             YamlWhere(source, node) +
                                 ": remediation.tickets: retry_max_seconds is below "
                                 "retry_initial_seconds");
        }
    }
    if (!sinks_given) {
        TicketSinkConfig spool;
        spool.type = TicketSinkType::kSpool;
        spool.name = "spool";
        spool.dir = state_dir + "/tickets";
        config.sinks.push_back(std::move(spool));
    }
    return config;
}

}  // namespace autoheal::remediation
