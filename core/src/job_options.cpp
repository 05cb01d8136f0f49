#include "autoheal/core/job_options.h"

#include <charconv>
#include <cstdint>
#include <filesystem>

#include "autoheal/core/duration.h"

namespace autoheal {
namespace {

// Well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size()) return false;
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n + 1;
    }
    return true;
}

std::string Quote(std::string_view s) {
    const bool utf8 = IsValidUtf8(s);
    std::string out = "'";
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || (!utf8 && u >= 0x80)) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 0xf];
        } else {
            out += c;
        }
    }
    out += "'";
    return out;
}

bool HasControlCharacter(std::string_view s) {
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return true;
    }
    return false;
}

}  // namespace

std::string_view HealthTierName(HealthTier tier) {
    switch (tier) {
        case HealthTier::kOff:
            return "off";
        case HealthTier::kQuick:
            return "quick";
        case HealthTier::kFull:
            return "full";
    }
    return "off";
}

std::optional<HealthTier> HealthTierFromName(std::string_view name) {
    for (HealthTier t : {HealthTier::kQuick, HealthTier::kFull, HealthTier::kOff}) {
        if (HealthTierName(t) == name) return t;
    }
    return std::nullopt;
}

Result<int> ParseAutoResume(std::optional<std::string_view> value, const OptionLimits& limits) {
    std::string allowed =
        "allowed values are a whole number from 1 to " + std::to_string(limits.max_auto_resume);
    if (limits.default_auto_resume > 0) {
        allowed += ", or no value for " + std::to_string(limits.default_auto_resume);
    } else if (!value.has_value()) {
        return MakeError("--auto-resume: a value is required: " + allowed);
    }
    if (!value.has_value()) return limits.default_auto_resume;
    std::string_view v = *value;
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
        return MakeError("--auto-resume: invalid value " + Quote(v) + ": " + allowed);
    }
    if (n < 1 || n > limits.max_auto_resume) {
        return MakeError("--auto-resume: " + std::to_string(n) + " is out of range: " + allowed);
    }
    return n;
}

Result<std::string> ParseCkptDir(std::string_view value, std::string_view cwd) {
    if (value.empty()) {
        return MakeError("--ckpt-dir: a directory is required, e.g. --ckpt-dir=/scratch/run7");
    }
    if (HasControlCharacter(value)) {
        return MakeError("--ckpt-dir: invalid value " + Quote(value) +
                         ": control characters are not allowed in the path");
    }
    if (!IsValidUtf8(value)) {
        return MakeError("--ckpt-dir: invalid value " + Quote(value) + ": the path is not UTF-8");
    }
    std::filesystem::path p{std::string(value)};
    if (p.is_relative()) {
        std::filesystem::path base{std::string(cwd)};
        if (!base.is_absolute()) {
            return MakeError("--ckpt-dir: " + Quote(value) +
                             " is relative and the submit directory is unknown: give an "
                             "absolute path");
        }
        // The submit directory is the user's too: it may hold control characters as well.
        if (HasControlCharacter(cwd) || !IsValidUtf8(cwd)) {
            return MakeError("--ckpt-dir: " + Quote(value) +
                             " is relative and the submit directory's name has control "
                             "characters or is not UTF-8: give an absolute path");
        }
        p = base / p;
    }
    std::string normal = p.lexically_normal().string();
    // POSIX lets "//" at the start mean something else, so lexically_normal may keep it (a
    // submit directory of "//" gave "//ckpt", which reads back as "/ckpt"); on Linux it is "/".
    while (normal.size() > 1 && normal[0] == '/' && normal[1] == '/') normal.erase(0, 1);
    if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    if (normal.size() > kMaxCkptDirLength) {
        return MakeError("--ckpt-dir: path is " + std::to_string(normal.size()) +
                         " bytes long: at most " + std::to_string(kMaxCkptDirLength) +
                         " are allowed");
    }
    if (normal == "/") {
        return MakeError("--ckpt-dir: '/' is not a checkpoint directory");
    }
    return normal;
}

Result<HealthTier> ParseHealthCheck(std::string_view value) {
    if (auto tier = HealthTierFromName(value)) return *tier;
    return MakeError("--health-check: invalid value " + Quote(value) +
                     ": allowed values are quick, full, off");
}

Result<std::int64_t> ParseHangTimeout(std::string_view value) {
    static constexpr std::string_view kAllowed =
        ": allowed values are a duration from 1s to 30d (45s, 20m, 2h) or off";
    if (value == "off" || value == "0") return 0;
    auto seconds = ParseDuration(value);
    if (!seconds) {
        return MakeError("--hang-timeout: invalid value " + Quote(value) + std::string(kAllowed));
    }
    if (*seconds < 1 || *seconds > kMaxHangTimeoutSeconds) {
        return MakeError("--hang-timeout: " + Quote(value) + " is out of range" +
                         std::string(kAllowed));
    }
    return *seconds;
}

Result<bool> ParseFlightRecorder(std::string_view value) {
    if (value == "on") return true;
    if (value == "off") return false;
    return MakeError("--flight-recorder: invalid value " + Quote(value) +
                     ": allowed values are on, off");
}

std::optional<FlightRecorderPolicy> FlightRecorderPolicyFromName(std::string_view name) {
    if (name == "auto-resume") return FlightRecorderPolicy::kAutoResume;
    if (name == "on") return FlightRecorderPolicy::kOn;
    if (name == "off") return FlightRecorderPolicy::kOff;
    return std::nullopt;
}

bool FlightRecorderWanted(const JobOptions& options, FlightRecorderPolicy site) {
    if (site == FlightRecorderPolicy::kOff) return false;
    if (options.flight_recorder) return *options.flight_recorder;
    return site == FlightRecorderPolicy::kOn || options.auto_resume.has_value();
}

namespace {

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kFieldAutoResume = "auto_resume=";
constexpr std::string_view kFieldHealthCheck = "health_check=";
constexpr std::string_view kFieldHangTimeout = "hang_timeout=";
constexpr std::string_view kFieldFlightRecorder = "flight_recorder=";
constexpr std::string_view kFieldCkptDir = "ckpt_dir=";

// The raw values of an options record (kEnvOptions), not yet parsed.
struct RecordFields {
    std::optional<std::string> auto_resume;
    std::optional<std::string> health_check;
    std::optional<std::string> hang_timeout;
    std::optional<std::string> flight_recorder;
    std::optional<std::string> ckpt_dir;
};

Result<RecordFields> SplitRecord(std::string_view record) {
    RecordFields fields;
    std::string_view rest = record;
    auto take = [&](std::string_view key, std::optional<std::string>* out) {
        if (!rest.starts_with(key)) return;
        rest.remove_prefix(key.size());
        const std::size_t end = rest.find(';');
        *out = std::string(rest.substr(0, end));
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    };
    take(kFieldAutoResume, &fields.auto_resume);
    take(kFieldHealthCheck, &fields.health_check);
    take(kFieldHangTimeout, &fields.hang_timeout);
    take(kFieldFlightRecorder, &fields.flight_recorder);
    if (rest.starts_with(kFieldCkptDir)) {
        fields.ckpt_dir = std::string(rest.substr(kFieldCkptDir.size()));
        rest = {};
    }
    if (!rest.empty()) {
        return MakeError(std::string(kEnvOptions) + ": malformed record at " + Quote(rest) +
                         ": expected auto_resume=, health_check=, hang_timeout=, "
                         "flight_recorder=, ckpt_dir= in that order");
    }
    return fields;
}

}  // namespace

EnvPairs ToJobControlEnv(const JobOptions& options) {
    std::string record;
    auto add = [&](std::string_view key, std::string_view value) {
        if (!record.empty()) record += ';';
        record += key;
        record += value;
    };
    if (options.auto_resume) add(kFieldAutoResume, std::to_string(*options.auto_resume));
    if (options.health_check) add(kFieldHealthCheck, HealthTierName(*options.health_check));
    if (options.hang_timeout) add(kFieldHangTimeout, std::to_string(*options.hang_timeout));
    if (options.flight_recorder) add(kFieldFlightRecorder, *options.flight_recorder ? "on" : "off");
    if (options.ckpt_dir) add(kFieldCkptDir, *options.ckpt_dir);
    if (record.empty()) return {};
    return {{std::string(kEnvOptions), record}};
}

EnvPairs ToJobScriptEnv(const JobOptions& options) {
    EnvPairs env;
    if (options.auto_resume) {
        env.emplace_back(kScriptEnvAutoResume, std::to_string(*options.auto_resume));
    }
    if (options.ckpt_dir) env.emplace_back(kScriptEnvCkptDir, *options.ckpt_dir);
    if (options.health_check) {
        env.emplace_back(kScriptEnvHealthCheck, HealthTierName(*options.health_check));
    }
    if (options.hang_timeout) {
        env.emplace_back(kScriptEnvHangTimeout, std::to_string(*options.hang_timeout));
    }
    if (options.flight_recorder) {
        env.emplace_back(kScriptEnvFlightRecorder, *options.flight_recorder ? "on" : "off");
    }
    return env;
}

JobOptions JobOptionsFromEnv(const EnvLookup& lookup, std::string_view prefix,
                             std::vector<std::string>* problems, const OptionLimits& limits) {
    JobOptions options;
    auto report = [&](const std::string& message) {
        if (problems != nullptr) problems->push_back(message);
    };
    const std::optional<std::string> record =
        lookup(std::string(prefix) + std::string(kEnvOptions));
    if (!record) return options;
    Result<RecordFields> fields = SplitRecord(*record);
    if (!fields) {
        report(fields.error());
        return options;
    }
    // Each recorded value through its option's own parser: kept when valid, else reported.
    auto read = [&](const std::optional<std::string>& raw, auto parse, auto* out) {
        if (!raw) return;
        auto parsed = parse(std::string_view(*raw));
        if (parsed) {
            *out = *parsed;
        } else {
            report(parsed.error());
        }
    };
    read(
        fields->auto_resume, [&](std::string_view v) { return ParseAutoResume(v, limits); },
        &options.auto_resume);
    // Recorded values are already absolute; a relative one is refused here.
    read(
        fields->ckpt_dir, [](std::string_view v) { return ParseCkptDir(v, ""); },
        &options.ckpt_dir);
    read(fields->health_check, ParseHealthCheck, &options.health_check);
    read(fields->hang_timeout, ParseHangTimeout, &options.hang_timeout);
    read(fields->flight_recorder, ParseFlightRecorder, &options.flight_recorder);
    return options;
}

std::optional<std::string> LookupEnvArray(const char* const* env, std::size_t count,
                                          std::string_view name) {
    if (env == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < count; ++i) {
        if (env[i] == nullptr) continue;
        std::string_view entry{env[i]};
        if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
            entry[name.size()] == '=') {
            return std::string(entry.substr(name.size() + 1));
        }
    }
    return std::nullopt;
}

}  // namespace autoheal
