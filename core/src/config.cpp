#include "autoheal/core/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <vector>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/escape.h"
#include "autoheal/core/files.h"

namespace autoheal {
namespace {

std::string Where(std::string_view source, const YAML::Mark& mark) {
    // yaml-cpp marks are 0-based; people count from 1.
    return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
           std::to_string(mark.column + 1);
}

Error At(std::string_view source, const YAML::Node& node, const std::string& what) {
    return MakeError(ErrorCode::kInvalid, Where(source, node.Mark()) + ": " + what);
}

// Settings whose value is one word out of a fixed list, and where each goes.
using Words = std::vector<std::string_view>;
const std::map<std::string, std::pair<Words, std::string Config::*>>& Choices() {
    static const std::map<std::string, std::pair<Words, std::string Config::*>> kChoices{
        {"log_level", {{"trace", "debug", "info", "warn", "error"}, &Config::log_level}},
        {"log_target", {{"file", "syslog"}, &Config::log_target}},
        {"log_format", {{"text", "json"}, &Config::log_format}},
    };
    return kChoices;
}

// One top-level string setting into `config`: false when `key` is none of them.
Result<bool> ParseStringKey(const std::string& key, const YAML::Node& value,
                            std::string_view source, Config* config) {
    const auto choice = Choices().find(key);
    if (key != "log_file" && key != "state_dir" && choice == Choices().end()) return false;
    if (!value.IsScalar()) return At(source, value, key + ": expected a string");
    const std::string s = value.as<std::string>();
    if (choice == Choices().end()) {
        if (s.empty() || s.front() != '/')
            return At(source, value, key + ": expected an absolute path");
        (key == "log_file" ? config->log_file : config->state_dir) = s;
        return true;
    }
    const auto& [allowed, field] = choice->second;
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return At(source, value, key + ": '" + s + "' is not one of " + list);
    }
    config->*field = s;
    return true;
}

// state_dir, `policy:` and health.allow_off are read by the job_submit plugin's scanner: the
// policy comes from it, and what this parser read must be what the plugins read.
Result<Config> WithScannedPolicy(Config config, std::string_view text, std::string_view source) {
    auto scanned = ScanSubmitSettings(text, source);
    if (!scanned) return scanned.status();
    if (scanned->state_dir != config.state_dir) {
        return MakeError(ErrorCode::kInternal,
                         std::string(source) + ": state_dir: the plugins' scanner read '" +
                             scanned->state_dir + "', the YAML parser '" + config.state_dir + "'");
    }
    config.policy = scanned->policy;
    return config;
}

}  // namespace

Config DefaultConfig(const std::string& state_dir) {
    Config config;
    config.state_dir = state_dir;
    config.policy.quarantine_file = DefaultQuarantineFile(state_dir);
    return config;
}

Result<YAML::Node> ParseConfigDocument(std::string_view text, std::string_view source) {
    auto text_ok = RefuseNulBytes(text, source);
    if (!text_ok) return text_ok.status();
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        // yaml-cpp quotes the offending character, which may be a line break: one line each.
        return MakeError(ErrorCode::kInvalid, Where(source, e.mark) + ": " + EscapeControl(e.msg));
    }
    if (!root.IsNull() && !root.IsMap()) return At(source, root, "expected a mapping of settings");
    return root;
}

Result<Config> ParseCoreConfig(const YAML::Node& root, std::string_view text,
                               std::string_view source,
                               const std::vector<std::string_view>& sections) {
    Config config;
    config.source = std::string(source);
    if (root.IsNull()) return WithScannedPolicy(std::move(config), text, source);  // all defaults
    try {
        for (const auto& item : root) {
            const std::string key = item.first.as<std::string>();
            const YAML::Node& value = item.second;
            if (key == "policy") continue;  // read with state_dir below, as the plugin does
            if (std::find(sections.begin(), sections.end(), key) != sections.end()) {
                if (!value.IsMap() && !value.IsNull()) {
                    return At(source, value, key + ": expected a mapping of settings");
                }
                continue;  // the section's owner parses it
            }
            auto read = ParseStringKey(key, value, source, &config);
            if (!read) return read.status();
            if (!*read) return At(source, item.first, "unknown setting '" + key + "'");
        }
    } catch (const YAML::Exception& e) {
        return MakeError(ErrorCode::kInvalid, Where(source, e.mark) + ": " + e.msg);
    }
    return WithScannedPolicy(std::move(config), text, source);
}

std::string LastGoodDir(const std::string& state_dir) { return state_dir + "/last-good"; }

namespace {

// `parse` of `text`, refused too when the file is not trusted: the state_dir, or why not.
Result<std::string> ParseTrusted(const std::string& path, const Result<std::string>& text,
                                 const ConfigTextParser& parse) {
    if (!text) return text.status();
    auto state_dir = parse(*text, path);
    if (!state_dir) return state_dir;
    if (auto trusted = CheckTrustedFile(path); !trusted) return trusted.status();
    return state_dir;
}

// Keeps a copy for the day the file breaks (best effort: e.g. the folder may not be writable by
// this program's user, and the file in use is good, so a failure is ignored).
void KeepLastGood(const std::string& state_dir, const std::string& text) {
    const std::string copy = LastGoodDir(state_dir) + "/autoheal.yaml";
    auto old = ReadSmallFile(copy, kMaxConfigBytes);
    if (!text.empty() && (!old || *old != text)) {
        static_cast<void>(WriteFileAtomically(copy, text, 0644, 0755));
    }
}

}  // namespace

ConfigLoad LoadConfigKeepingLastGood(const std::string& path, const ConfigTextParser& parse) {
    ConfigLoad out;
    bool missing = false;
    const auto text = ReadSmallFile(path, kMaxConfigBytes, &missing);
    if (missing) {
        out.problem = path + ": no such file: using the defaults";
        return out;
    }
    auto used = ParseTrusted(path, text, parse);
    if (used) {
        out.origin = ConfigOrigin::kFile;
        out.state_dir = *used;
        KeepLastGood(out.state_dir, *text);
        return out;
    }
    std::string state_dir = text ? ScanStateDir(*text) : "";
    if (state_dir.empty()) state_dir = kDefaultStateDir;
    const std::string copy = LastGoodDir(state_dir) + "/autoheal.yaml";
    bool copy_missing = false;
    const auto copy_text = ReadSmallFile(copy, kMaxConfigBytes, &copy_missing);
    if (!copy_missing) {
        if (auto good = ParseTrusted(copy, copy_text, parse)) {
            out.origin = ConfigOrigin::kLastGood;
            out.state_dir = *good;
            out.problem = used.error() + "; using the last good copy " + copy;
            return out;
        }
    }
    out.origin = ConfigOrigin::kBroken;
    out.state_dir = state_dir;
    out.problem = used.error() + "; no last good copy (" + copy +
                  "): using the defaults with remediation in dry-run";
    return out;
}

}  // namespace autoheal
