#include "autoheal/core/config.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace autoheal {
namespace {

constexpr std::size_t kMaxConfigBytes = 1 << 20;

std::string Where(std::string_view source, const YAML::Mark& mark) {
    // yaml-cpp marks are 0-based; people count from 1.
    return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
           std::to_string(mark.column + 1);
}

// The `policy:` section. Strict like the rest: unknown keys and bad values name the place.
Result<PolicySettings> ParsePolicy(const YAML::Node& section, std::string_view source) {
    PolicySettings policy;
    if (section.IsNull()) return policy;  // `policy:` with nothing under it
    if (!section.IsMap()) {
        return MakeError(Where(source, section.Mark()) +
                         ": policy: expected a mapping of settings");
    }
    for (const auto& item : section) {
        const std::string key = item.first.as<std::string>();
        const YAML::Node& value = item.second;
        if (key == "max_auto_resume") {
            int n = 0;
            if (!value.IsScalar() || !YAML::convert<int>::decode(value, n) || n < 0 || n > 100) {
                return MakeError(Where(source, value.Mark()) +
                                 ": policy.max_auto_resume: expected a whole number from 0 to 100");
            }
            policy.max_auto_resume = n;
        } else if (key == "quarantine_file") {
            std::string s = value.IsScalar() ? value.as<std::string>() : std::string();
            if (s.empty() || s.front() != '/') {
                return MakeError(Where(source, value.Mark()) +
                                 ": policy.quarantine_file: expected an absolute path");
            }
            policy.quarantine_file = s;
        } else {
            return MakeError(Where(source, item.first.Mark()) + ": unknown setting 'policy." + key +
                             "'");
        }
    }
    return policy;
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
    // The default quarantine file follows state_dir, which may come after `policy:`.
    auto finish = [&config]() -> Result<Config> {
        if (config.policy.quarantine_file.empty()) {
            config.policy.quarantine_file = config.state_dir + "/quarantine.json";
        }
        return config;
    };
    if (root.IsNull()) return finish();  // an empty file means all defaults
    if (!root.IsMap()) {
        return MakeError(Where(source_name, root.Mark()) + ": expected a mapping of settings");
    }
    static constexpr std::array kLevels{"trace", "debug", "info", "warn", "error"};
    try {
        for (const auto& item : root) {
            const std::string key = item.first.as<std::string>();
            const YAML::Node& value = item.second;
            if (key == "health" || key == "remediation") {
                if (!value.IsMap()) {
                    return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                     ": expected a mapping of settings");
                }
                (key == "health" ? config.health : config.remediation) = value;
                continue;
            }
            if (key == "policy") {
                auto policy = ParsePolicy(value, source_name);
                if (!policy) return MakeError(policy.error());
                config.policy = std::move(policy).value();
                continue;
            }
            if (key == "log_file" || key == "log_level" || key == "state_dir") {
                if (!value.IsScalar()) {
                    return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                     ": expected a string");
                }
                std::string s = value.as<std::string>();
                if (key == "log_file" || key == "state_dir") {
                    if (s.empty() || s.front() != '/') {
                        return MakeError(Where(source_name, value.Mark()) + ": " + key +
                                         ": expected an absolute path");
                    }
                    (key == "log_file" ? config.log_file : config.state_dir) = s;
                } else {
                    bool known = false;
                    for (const char* level : kLevels) known = known || s == level;
                    if (!known) {
                        return MakeError(Where(source_name, value.Mark()) + ": log_level: '" + s +
                                         "' is not one of trace, debug, info, warn, error");
                    }
                    config.log_level = s;
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
    std::ifstream in(path, std::ios::binary);
    if (!in) return MakeError(path + ": cannot open");
    std::string text;
    text.resize(kMaxConfigBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) {
        return MakeError(path + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
    }
    return ParseConfig(text, path);
}

std::string FindConfigPath(const char* env_value, const std::string& exe_path) {
    if (env_value != nullptr && env_value[0] != '\0') return env_value;
    if (!exe_path.empty()) {
        std::error_code ec;
        auto candidate = std::filesystem::path(exe_path).parent_path().parent_path() / "etc" /
                         "autoheal" / "autoheal.yaml";
        if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
    return "/etc/autoheal/autoheal.yaml";
}

}  // namespace autoheal
