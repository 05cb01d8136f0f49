// libFuzzer target: autoheal.yaml, end to end through every section parser.
//
// Per input: ParseConfig (core/config.h) and ScanSubmitSettings (core/config_scan.h, what the
// plugins read without yaml-cpp); when it parses, the `health:` section through
// ParseHealthConfig, the `remediation:` section through ParseRemediationConfig and its
// `tickets:` through ParseTicketConfig. Findings (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour or exception escaping a parser (each promises an
//     error naming file:line:column instead);
//   - an error that does not start with the file's name;
//   - an accepted config whose values break the documented ranges: relative paths, an unknown
//     log word, max_auto_resume outside 0..100, a non-finite or out-of-range number (the
//     programs turn these into durations and integer milliseconds);
//   - a result that differs between two parses of the same text;
//   - a text ParseConfig accepts whose state_dir, policy or health.allow_off the scanner reads
//     differently from yaml-cpp (so the job_submit plugin would apply another policy).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "autoheal/core/config.h"
#include "autoheal/core/config_scan.h"
#include "autoheal/health/health_config.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/tickets.h"
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

// ParseConfig takes the policy from the scanner: check it against yaml-cpp's own reading.
void CheckScannerAgrees(std::string_view text, const autoheal::Config& c) {
    auto scanned = autoheal::ScanSubmitSettings(text, kSource);
    if (!scanned) Fail("ParseConfig accepted what the scanner refuses: " + scanned.error());
    if (scanned->state_dir != c.state_dir) Fail("the scanner read another state_dir");
    const YAML::Node root = YAML::Load(std::string(text));
    int cap = 10;
    const YAML::Node policy = root.IsMap() ? root["policy"] : YAML::Node();
    if (policy && policy.IsMap() && policy["max_auto_resume"]) {
        YAML::convert<int>::decode(policy["max_auto_resume"], cap);
    }
    if (cap != scanned->policy.max_auto_resume) Fail("the scanner read another max_auto_resume");
    bool allow_off = true;
    if (c.health.IsMap() && c.health["allow_off"]) {
        YAML::convert<bool>::decode(c.health["allow_off"], allow_off);
    }
    if (allow_off != scanned->allow_health_off) Fail("the scanner read another health.allow_off");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = autoheal::fuzz::AsText(data, size);
    auto config = autoheal::ParseConfig(text, kSource);
    auto again = autoheal::ParseConfig(text, kSource);
    if (config.ok() != again.ok()) Fail("two parses of one text disagree");
    if (!config) {
        CheckError("ParseConfig", config.error());
        if (config.error() != again.error()) Fail("two parses give different errors");
        return 0;
    }
    const autoheal::Config& c = *config;
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
    if (c.state_dir != again->state_dir ||
        c.policy.quarantine_file != again->policy.quarantine_file) {
        Fail("two parses give different settings");
    }

    CheckScannerAgrees(text, c);

    if (auto health = autoheal::health::ParseHealthConfig(c.health, c.source)) {
        CheckFinite("health.quick_budget_seconds", health->quick_budget_seconds, 0, 1e6);
        CheckFinite("health.full_budget_seconds", health->full_budget_seconds, 0, 1e6);
        CheckFinite("health.nvml_timeout_seconds", health->nvml_timeout_seconds, 0, 1e6);
        CheckFinite("health.perf_warn_fraction", health->perf_warn_fraction, 0, 1);
        CheckFinite("health.perf_fail_fraction", health->perf_fail_fraction, 0, 1);
        CheckFinite("health.hbm_test_fraction", health->hbm_test_fraction, 0, 1);
        for (const auto& m : health->models) (void)autoheal::health::FindModel(*health, m.match);
    } else {
        CheckError("ParseHealthConfig", health.error());
    }

    auto rc = autoheal::remediation::ParseRemediationConfig(c.remediation, c.source);
    if (!rc) {
        CheckError("ParseRemediationConfig", rc.error());
        return 0;
    }
    // The node epilog waits (results_wait_seconds + 10) * 1000 int milliseconds.
    CheckFinite("remediation.results_wait_seconds", rc->results_wait_seconds, 0, 2e6);
    CheckFinite("remediation.quarantine_hours", rc->quarantine_hours, 0, 24 * 365);
    CheckFinite("remediation.breaker.max_fraction", rc->breaker.max_fraction, 0, 1);
    if (rc->kernel_log != "kmsg") CheckAbsolute("remediation.kernel_log", rc->kernel_log);
    if (rc->gpu_reset_command.empty() || rc->gpu_reset_command.front().empty()) {
        Fail("remediation.gpu_reset_command without a program");
    }
    (void)autoheal::remediation::KernelLogFor(*rc, "gpu-node-07");

    auto tickets = autoheal::remediation::ParseTicketConfig(rc->tickets, c.source, c.state_dir);
    if (!tickets) {
        CheckError("ParseTicketConfig", tickets.error());
        return 0;
    }
    if (tickets->sinks.empty()) Fail("a ticket config without sinks");
    return 0;
}
