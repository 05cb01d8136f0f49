#include "autoheal/remediation/agent_config.h"

#include "autoheal/core/duration.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/yaml_read.h"

namespace autoheal::remediation {

const char* OnFaultName(OnFault mode) {
    switch (mode) {
        case OnFault::kRequeue:
            return "requeue";
        case OnFault::kEnd:
            return "end";
        case OnFault::kNotify:
            return "notify";
    }
    return "requeue";
}

namespace {

Error Bad(const std::string& source, const YAML::Node& node, const std::string& what) {
    return MakeError(ErrorCode::kInvalid, YamlWhere(source, node) + ": agent: " + what);
}

// A duration setting within [low, high] seconds; `why` names the key and the range.
Result<std::int64_t> DurationIn(const std::string& source, const YAML::Node& value,
                                std::int64_t low, std::int64_t high, const std::string& why) {
    auto d = value.IsScalar() ? ParseDuration(value.Scalar())
                              : Result<std::int64_t>(MakeError("not a duration"));
    if (!d || *d < low || *d > high) return Bad(source, value, why);
    return *d;
}

// An interval of 1 s to 1 h in seconds, or `off` (0).
Result<double> IntervalOrOff(const std::string& source, const YAML::Node& value,
                             const std::string& key) {
    if (value.IsScalar() && value.Scalar() == "off") return 0.0;
    auto d = DurationIn(source, value, 1, 3600, key + ": expected a duration, 1s to 1h, or off");
    if (!d) return d.status();
    return static_cast<double>(*d);
}

}  // namespace

Result<AgentConfig> ParseAgentConfig(const YAML::Node& section, const std::string& source) {
    AgentConfig config;
    if (!section || section.IsNull()) return config;
    if (!section.IsMap()) return Bad(source, section, "expected a mapping of settings");
    for (const auto& item : section) {
        const std::string key = item.first.Scalar();
        const YAML::Node& value = item.second;
        if (key == "on_fault") {
            const std::string word = value.IsScalar() ? value.Scalar() : "";
            if (word == "requeue") {
                config.on_fault = OnFault::kRequeue;
            } else if (word == "end") {
                config.on_fault = OnFault::kEnd;
            } else if (word == "notify") {
                config.on_fault = OnFault::kNotify;
            } else {
                return Bad(source, value, "on_fault: expected requeue, end or notify");
            }
        } else if (key == "poll_interval_ms") {
            int ms = 0;
            if (!YamlRead(value, &ms) || ms < 10 || ms > 5000) {
                return Bad(source, value, "poll_interval_ms: expected a whole number, 10 to 5000");
            }
            config.poll_seconds = ms / 1000.0;
        } else if (key == "heartbeat_interval") {
            auto d = DurationIn(source, value, 1, 3600,
                                "heartbeat_interval: expected a duration, 1s to 1h");
            if (!d) return d.status();
            config.heartbeat_seconds = static_cast<double>(*d);
        } else if (key == "hang_timeout") {
            // The job option's own grammar and range (a duration or off).
            auto t = value.IsScalar() ? ParseHangTimeout(value.Scalar())
                                      : Result<std::int64_t>(MakeError("not a duration"));
            if (!t)
                return Bad(source, value, "hang_timeout: expected a duration, 1s to 30d, or off");
            config.hang_timeout_seconds = *t;
        } else if (key == "hang_check_interval") {
            auto d = DurationIn(source, value, 1, 3600,
                                "hang_check_interval: expected a duration, 1s to 1h");
            if (!d) return d.status();
            config.hang_check_seconds = static_cast<double>(*d);
        } else if (key == "hang_dump_wait") {
            auto d =
                DurationIn(source, value, 1, 600, "hang_dump_wait: expected a duration, 1s to 10m");
            if (!d) return d.status();
            config.hang_dump_wait_seconds = static_cast<double>(*d);
        } else if (key == "sample_interval" || key == "counter_interval") {
            auto d = IntervalOrOff(source, value, key);
            if (!d) return d.status();
            (key == "sample_interval" ? config.sample_seconds : config.counter_seconds) = *d;
        } else {
            return Bad(source, item.first,
                       "unknown setting '" + key +
                           "'; expected on_fault, poll_interval_ms, heartbeat_interval, "
                           "hang_timeout, hang_check_interval, hang_dump_wait, sample_interval, "
                           "counter_interval");
        }
    }
    return config;
}

}  // namespace autoheal::remediation
