// libFuzzer target: autoheal.yaml, end to end through every section parser.
//
// Per input: ParseSettings (remediation/settings.h: the document, core's keys and policy, the
// `health:` section through ParseHealthConfig, the `remediation:` section through
// ParseRemediationConfig and its `tickets:` through ParseTicketConfig) and ScanSubmitSettings
// (core/config_scan.h, what the plugins read without yaml-cpp). Findings (libFuzzer reports each
// as a crash):
//   - any crash, leak, undefined behaviour or exception escaping a parser (each promises an
//     error naming file:line:column instead);
//   - an error that does not start with the file's name;
//   - an accepted config whose values break the documented ranges: relative paths, an unknown
//     log word, max_auto_resume outside 0..100, a non-finite or out-of-range number (the
//     programs turn these into durations and integer milliseconds);
//   - a result that differs between two parses of the same text;
//   - a text ParseSettings accepts whose state_dir, policy (max_auto_resume, flight_recorder) or
//     health.allow_off the scanner reads differently from yaml-cpp (so the job_submit plugin
//     would apply another policy).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "autoheal/core/config_scan.h"
#include "autoheal/remediation/settings.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;
using autoheal::fuzz::StartsWith;

namespace {

constexpr std::string_view kSource = "autoheal.yaml";

void CheckError(const std::string& what, const std::string& error) {
    if (!StartsWith(error, std::string(kSource) + ":")) {
        Fail(what + ": an error that does not name the file: " + error);
    }
}

void CheckAbsolute(const std::string& what, const std::string& path) {
    if (path.empty() || path.front() != '/') Fail(what + " is not an absolute path: " + path);
}

void CheckFinite(const std::string& what, double v, double lo, double hi) {
    if (!std::isfinite(v) || v < lo || v > hi) Fail(what + " out of range: " + std::to_string(v));
}

// ParseSettings takes the policy from the scanner: check it against yaml-cpp's own reading.
void CheckScannerAgrees(std::string_view text, const autoheal::Config& c) {
    auto scanned = autoheal::ScanSubmitSettings(text, kSource);
    if (!scanned) Fail("ParseSettings accepted what the scanner refuses: " + scanned.error());
    if (scanned->state_dir != c.state_dir) Fail("the scanner read another state_dir");
    const YAML::Node root = YAML::Load(std::string(text));
    int cap = 10;
    const YAML::Node policy = root.IsMap() ? root["policy"] : YAML::Node();
    if (policy && policy.IsMap() && policy["max_auto_resume"]) {
        YAML::convert<int>::decode(policy["max_auto_resume"], cap);
    }
    if (cap != scanned->policy.max_auto_resume) Fail("the scanner read another max_auto_resume");
    auto recorder = autoheal::FlightRecorderPolicy::kAutoResume;
    if (policy && policy.IsMap() && policy["flight_recorder"] &&
        policy["flight_recorder"].IsScalar()) {
        recorder = autoheal::FlightRecorderPolicyFromName(policy["flight_recorder"].Scalar())
                       .value_or(autoheal::FlightRecorderPolicy::kAutoResume);
    }
    if (recorder != scanned->policy.flight_recorder) {
        Fail("the scanner read another policy.flight_recorder");
    }
    bool allow_off = true;
    const YAML::Node health = root.IsMap() ? root["health"] : YAML::Node();
    if (health && health.IsMap() && health["allow_off"]) {
        YAML::convert<bool>::decode(health["allow_off"], allow_off);
    }
    if (allow_off != scanned->allow_health_off) Fail("the scanner read another health.allow_off");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = autoheal::fuzz::AsText(data, size);
    auto settings = autoheal::remediation::ParseSettings(text, kSource);
    auto again = autoheal::remediation::ParseSettings(text, kSource);
    if (settings.ok() != again.ok()) Fail("two parses of one text disagree");
    if (!settings) {
        // One problem per line (a section each), every one naming the file.
        const std::string& e = settings.error();
        for (std::size_t at = 0, nl = 0; at <= e.size(); at = nl + 1) {
            nl = e.find('\n', at);
            if (nl == std::string::npos) nl = e.size();
            CheckError("ParseSettings", e.substr(at, nl - at));
        }
        if (settings.error() != again.error()) Fail("two parses give different errors");
        return 0;
    }
    const autoheal::Config& c = settings->core;
    CheckAbsolute("state_dir", c.state_dir);
    CheckAbsolute("log_file", c.log_file);
    CheckAbsolute("policy.quarantine_file", c.policy.quarantine_file);
    if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" &&
        c.log_level != "warn" && c.log_level != "error") {
        Fail("log_level " + c.log_level);
    }
    if (c.log_target != "file" && c.log_target != "syslog") Fail("log_target " + c.log_target);
    if (c.log_format != "text" && c.log_format != "json") Fail("log_format " + c.log_format);
    if (c.policy.max_auto_resume < 0 || c.policy.max_auto_resume > 100) {
        Fail("policy.max_auto_resume " + std::to_string(c.policy.max_auto_resume));
    }
    if (c.state_dir != again->core.state_dir ||
        c.policy.quarantine_file != again->core.policy.quarantine_file) {
        Fail("two parses give different settings");
    }

    CheckScannerAgrees(text, c);

    const autoheal::health::HealthConfig& health = settings->health;
    CheckFinite("health.quick_budget_seconds", health.quick_budget_seconds, 0, 1e6);
    CheckFinite("health.full_budget_seconds", health.full_budget_seconds, 0, 1e6);
    CheckFinite("health.nvml_timeout_seconds", health.nvml_timeout_seconds, 0, 1e6);
    CheckFinite("health.perf_warn_fraction", health.perf_warn_fraction, 0, 1);
    CheckFinite("health.perf_fail_fraction", health.perf_fail_fraction, 0, 1);
    CheckFinite("health.hbm_test_fraction", health.hbm_test_fraction, 0, 1);
    for (const auto& m : health.models) (void)autoheal::health::FindModel(health, m.match);

    const autoheal::remediation::RemediationConfig& rc = settings->remediation;
    // The node epilog waits (results_wait_seconds + 10) * 1000 int milliseconds.
    CheckFinite("remediation.results_wait_seconds", rc.results_wait_seconds, 0, 2e6);
    CheckFinite("remediation.quarantine_hours", rc.quarantine_hours, 0, 24 * 365);
    CheckFinite("remediation.breaker.max_fraction", rc.breaker.max_fraction, 0, 1);
    if (rc.kernel_log != "kmsg") CheckAbsolute("remediation.kernel_log", rc.kernel_log);
    if (rc.gpu_reset_command.empty() || rc.gpu_reset_command.front().empty()) {
        Fail("remediation.gpu_reset_command without a program");
    }
    (void)autoheal::remediation::KernelLogFor(rc, "gpu-node-07");
    // Only an explicit `sinks: []` leaves no sink: absent, the spool under state_dir is one.
    if (rc.tickets.sinks.empty() && text.find("sinks") == std::string_view::npos) {
        Fail("a ticket config without sinks");
    }
    return 0;
}
