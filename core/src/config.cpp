#include "autoheal/core/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "autoheal/core/files.h"

namespace autoheal {
namespace {

std::string Where(std::string_view source, const YAML::Mark& mark) {
    // yaml-cpp marks are 0-based; people count from 1.
    return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
           std::to_string(mark.column + 1);
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, std::string_view source_name) {
    Config config;
    config.source = std::string(source_name);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        return MakeError(Where(source_name, e.mark) + ": " + e.msg);
    }
    // state_dir, `policy:` and health.allow_off are read by the job_submit plugin's scanner:
    // the policy comes from it, and what this parser read must be what the plugins read.
    auto finish = [&config, text, source_name]() -> Result<Config> {
        auto scanned = ScanSubmitSettings(text, source_name);
        if (!scanned) return scanned.status();
        if (scanned->state_dir != config.state_dir) {
            return MakeError(ErrorCode::kInternal, std::string(source_name) +
                                                       ": state_dir: the plugins' scanner read '" +
                                                       scanned->state_dir + "', the YAML parser '" +
                                                       config.state_dir + "'");
        }
        config.policy = scanned->policy;
        return config;
    };
    if (root.IsNull()) return finish();  // an empty file means all defaults
    if (!root.IsMap()) {
        return MakeError(Where(source_name, root.Mark()) + ": expected a mapping of settings");
    }
    // Settings whose value is one word out of a fixed list, and where each goes.
    using Words = std::vector<std::string_view>;
    static const std::map<std::string, std::pair<Words, std::string Config::*>> kChoices{
        {"log_level", {{"trace", "debug", "info", "warn", "error"}, &Config::log_level}},
        {"log_target", {{"file", "syslog"}, &Config::log_target}},
        {"log_format", {{"text", "json"}, &Config::log_format}},
    };
    try {
        for (const auto& item : root) {
            const std::string key = item.first.as<std::string>();
            const YAML::Node& value = item.second;
            if (key == "health" || key == "remediation" || key == "agent") {
                if (!value.IsMap()) {
                    return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                     ": expected a mapping of settings");
                }
                (key == "health"        ? config.health
                 : key == "remediation" ? config.remediation
                                        : config.agent) = value;
                continue;
            }
            if (key == "policy") continue;  // read with state_dir below, as the plugin does
            const auto choice = kChoices.find(key);
            if (key == "log_file" || key == "state_dir" || choice != kChoices.end()) {
                if (!value.IsScalar()) {
                    return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                     ": expected a string");
                }
                std::string s = value.as<std::string>();
                if (choice == kChoices.end()) {
                    if (s.empty() || s.front() != '/') {
                        return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                         ": expected an absolute path");
                    }
                    (key == "log_file" ? config.log_file : config.state_dir) = s;
                } else {
                    const auto& [allowed, field] = choice->second;
                    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
                        std::string list;
                        for (std::string_view a : allowed)
                            list += (list.empty() ? "" : ", ") + std::string(a);
                        return MakeError(Where(source_name, value.Mark()) + ": " + key + ": '" + s +
                                         "' is not one of " + list);
                    }
                    config.*field = s;
                }
            } else {
                return MakeError(Where(source_name, item.first.Mark()) + ": unknown setting '" +
                                 key + "'");
            }
        }
    } catch (const YAML::Exception& e) {
        return MakeError(Where(source_name, e.mark) + ": " + e.msg);
    }
    return finish();
}

Result<Config> LoadConfigFile(const std::string& path) {
    auto text = ReadConfigText(path);
    if (!text) return MakeError(text.error());
    return ParseConfig(*text, path);
}

std::string LastGoodDir(const std::string& state_dir) { return state_dir + "/last-good"; }

namespace {

std::string Validate(const Result<Config>& c, const ConfigValidator& validate) {
    if (!c) return c.error();
    return validate ? validate(*c) : "";
}

}  // namespace

LoadedConfig LoadConfigKeepingLastGood(const std::string& path, const ConfigValidator& validate) {
    LoadedConfig out;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        out.problem = path + ": no such file: using the defaults";
        return out;
    }
    // Read once: parsed, and kept as the last good copy when it is good.
    const auto text = ReadConfigText(path);
    const Result<Config> loaded =
        text ? ParseConfig(*text, path) : Result<Config>(MakeError(text.error()));
    std::string problem = Validate(loaded, validate);
    if (auto trusted = CheckTrustedFile(path); !trusted) problem = trusted.error();
    if (problem.empty()) {
        out.config = *loaded;
        // Keep a copy for the day the file breaks (best effort: e.g. the folder may not be
        // writable by this program's user, and the file in use is good, so a failure is ignored).
        const std::string copy = LastGoodDir(out.config.state_dir) + "/autoheal.yaml";
        auto old = ReadSmallFile(copy, kMaxConfigBytes);
        if (!text->empty() && (!old || *old != *text)) {
            static_cast<void>(WriteFileAtomically(copy, *text, 0644, 0755));
        }
        return out;
    }
    std::string state_dir = loaded ? loaded->state_dir : ScanConfigStateDir(path);
    if (state_dir.empty()) state_dir = kDefaultStateDir;
    const std::string copy = LastGoodDir(state_dir) + "/autoheal.yaml";
    auto last_good = LoadConfigFile(copy);
    if (std::filesystem::exists(copy, ec) && Validate(last_good, validate).empty() &&
        CheckTrustedFile(copy)) {
        out.config = std::move(last_good).value();
        out.problem = problem + "; using the last good copy " + copy;
        return out;
    }
    out.config = Config{};
    out.config.state_dir = state_dir;
    out.config.remediation["dry_run"] = true;
    out.problem = problem + "; no last good copy (" + copy +
                  "): using the defaults with remediation in dry-run";
    return out;
}

}  // namespace autoheal
