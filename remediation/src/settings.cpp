#include "autoheal/remediation/settings.h"

#include <vector>

#include "autoheal/core/escape.h"
#include "autoheal/core/files.h"
#include "autoheal/health/health_config.h"

namespace autoheal::remediation {
namespace {

// The top-level sections other layers own; any other top-level key is core's (or refused).
const std::vector<std::string_view> kSections = {"health", "remediation", "agent"};

}  // namespace

Settings DefaultSettings(const std::string& state_dir) {
    Settings s;
    s.core = DefaultConfig(state_dir);
    s.remediation = ParseRemediationConfig(YAML::Node(), "defaults", state_dir).value();
    return s;
}

Result<Settings> ParseSettings(std::string_view text, std::string_view source_name) {
    auto root = ParseConfigDocument(text, source_name);
    if (!root) return root.status();
    auto core = ParseCoreConfig(*root, text, source_name, kSections);
    // A message may quote a key or value with a line break in it: one problem, one line.
    if (!core) return MakeError(core.status().code, EscapeControl(core.error()));
    Settings s;
    s.core = std::move(core).value();
    const std::string& source = s.core.source;
    const YAML::Node& doc = *root;
    // Each section on its own, so that one run names a problem in each.
    std::string problems;
    auto add = [&problems](const std::string& p) {
        problems += (problems.empty() ? "" : "\n") + EscapeControl(p);
    };
    if (auto health = health::ParseHealthConfig(doc["health"], source)) {
        s.health = std::move(health).value();
    } else {
        add(health.error());
    }
    if (auto rc = ParseRemediationConfig(doc["remediation"], source, s.core.state_dir)) {
        s.remediation = std::move(rc).value();
    } else {
        add(rc.error());
    }
    if (auto agent = ParseAgentConfig(doc["agent"], source)) {
        s.agent = std::move(agent).value();
    } else {
        add(agent.error());
    }
    if (!problems.empty()) return MakeError(ErrorCode::kInvalid, problems);
    return s;
}

Result<Settings> LoadSettingsFile(const std::string& path) {
    auto text = ReadSmallFile(path, kMaxConfigBytes);
    if (!text) return text.status();
    return ParseSettings(*text, path);
}

LoadedSettings LoadSettingsKeepingLastGood(const std::string& path) {
    LoadedSettings out;
    const ConfigLoad load =
        LoadConfigKeepingLastGood(path, [&out](std::string_view text, const std::string& source) {
            auto parsed = ParseSettings(text, source);
            if (!parsed) return Result<std::string>(parsed.status());
            out.settings = std::move(parsed).value();
            return Result<std::string>(out.settings.core.state_dir);
        });
    out.problem = load.problem;
    switch (load.origin) {
        case ConfigOrigin::kFile:
        case ConfigOrigin::kLastGood:
            break;  // the settings `parse` kept
        case ConfigOrigin::kMissing:
            out.settings = DefaultSettings(load.state_dir);
            break;
        case ConfigOrigin::kBroken:
            out.settings = DefaultSettings(load.state_dir);
            out.settings.remediation.dry_run = true;  // a typo never turns remediation on
            break;
    }
    return out;
}

}  // namespace autoheal::remediation
