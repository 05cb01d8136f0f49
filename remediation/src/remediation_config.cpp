#include "autoheal/remediation/remediation_config.h"

#include "autoheal/core/duration.h"
#include "autoheal/core/yaml_read.h"

namespace autoheal::remediation {

std::string KernelLogFor(const RemediationConfig& config, const std::string& node) {
    std::string out;
    const std::string& s = config.kernel_log;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == 'n') {
            out += node;
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

namespace {

// "FILE:LINE:COL: remediation.NAME: expected WHAT"
Error Expected(const std::string& source, const YAML::Node& at, const std::string& name,
               const std::string& what) {
    return MakeError(ErrorCode::kInvalid,
                     YamlWhere(source, at) + ": remediation." + name + ": expected " + what);
}

Error Unknown(const std::string& source, const YAML::Node& key, const std::string& name,
              const std::string& known) {
    return MakeError(ErrorCode::kInvalid, YamlWhere(source, key) + ": remediation." + name +
                                              ": unknown setting" +
                                              (known.empty() ? "" : " (" + known + ")"));
}

bool ReadDuration(const YAML::Node& n, std::int64_t* out) {
    std::string s;
    if (!YamlRead(n, &s)) return false;
    auto d = ParseDuration(s);
    if (!d) return false;
    *out = *d;
    return true;
}

// The sub-sections: each key of the mapping `v` read into `out`.
Result<bool> ParseBreaker(const YAML::Node& v, const std::string& source, BreakerConfig* out) {
    if (!v.IsMap()) return Expected(source, v, "breaker", "a mapping");
    for (const auto& kv : v) {
        const std::string k = kv.first.as<std::string>();
        const YAML::Node& bv = kv.second;
        if (k == "max_fraction") {
            if (!YamlRead(bv, &out->max_fraction) || out->max_fraction <= 0 ||
                out->max_fraction > 1) {
                return Expected(source, bv, "breaker.max_fraction", "a fraction in (0, 1]");
            }
        } else if (k == "max_nodes") {
            if (!YamlRead(bv, &out->max_nodes) || out->max_nodes < 0) {
                return Expected(source, bv, "breaker.max_nodes", "a number of nodes");
            }
        } else if (k == "window") {
            // Read by earlier versions (nodes taken out within it counted); still checked, so a
            // file written for them loads, and has no effect: every node held counts now.
            std::int64_t ignored = 0;
            if (!ReadDuration(bv, &ignored)) {
                return Expected(source, bv, "breaker.window", "a duration such as 1h");
            }
        } else {
            return Unknown(source, kv.first, "breaker." + k, "max_fraction, max_nodes");
        }
    }
    return true;
}

Result<bool> ParseCorrelation(const YAML::Node& v, const std::string& source,
                              CorrelationConfig* out) {
    if (!v.IsMap()) return Expected(source, v, "correlation", "a mapping");
    for (const auto& kv : v) {
        const std::string k = kv.first.as<std::string>();
        const YAML::Node& cv = kv.second;
        if (k == "window") {
            if (!ReadDuration(cv, &out->window_seconds)) {
                return Expected(source, cv, "correlation.window", "a duration such as 10m");
            }
        } else if (k == "min_nodes") {
            if (!YamlRead(cv, &out->min_nodes) || out->min_nodes < 2) {
                return Expected(source, cv, "correlation.min_nodes", "2 or more");
            }
        } else {
            return Unknown(source, kv.first, "correlation." + k, "window, min_nodes");
        }
    }
    return true;
}

Result<bool> ParseLemon(const YAML::Node& v, const std::string& source, LemonConfig* out) {
    if (!v.IsMap()) return Expected(source, v, "lemon", "a mapping");
    for (const auto& kv : v) {
        const std::string k = kv.first.as<std::string>();
        const YAML::Node& lv = kv.second;
        if (k == "failures") {
            if (!YamlRead(lv, &out->failures) || out->failures < 0 || out->failures > 1000) {
                return Expected(source, lv, "lemon.failures", "a number of jobs (0 = off)");
            }
        } else if (k == "min_users") {
            if (!YamlRead(lv, &out->min_users) || out->min_users < 1 || out->min_users > 1000) {
                return Expected(source, lv, "lemon.min_users", "a number of users from 1 to 1000");
            }
        } else if (k == "window") {
            if (!ReadDuration(lv, &out->window_seconds)) {
                return Expected(source, lv, "lemon.window", "a duration such as 7d");
            }
        } else {
            return Unknown(source, kv.first, "lemon." + k, "failures, min_users, window");
        }
    }
    return true;
}

// A program and its arguments; the program an absolute path (no shell, no PATH lookup).
Result<std::vector<std::string>> ParseCommand(const YAML::Node& v, const std::string& source,
                                              const std::string& key) {
    if (!v.IsSequence()) return Expected(source, v, key, "a list: program and arguments");
    std::vector<std::string> argv;
    for (const YAML::Node& a : v) {
        std::string s;
        if (!YamlRead(a, &s)) return Expected(source, a, key, "a string");
        argv.push_back(s);
    }
    if (argv.empty() || argv.front().empty()) {
        return Expected(source, v, key, "a list: program and arguments");
    }
    if (argv.front().front() != '/') {
        return Expected(
            source, v[0], key,
            "an absolute program path (no shell, no PATH lookup): '" + argv.front() + "'");
    }
    return argv;
}

bool AbsolutePath(const std::string& s) { return !s.empty() && s.front() == '/'; }

// One top-level key of the section into `config`: true when read, false when the section has no
// such setting (the caller says where the key is), an error when its value is bad.
Result<bool> ParseKey(const std::string& key, const YAML::Node& v, const std::string& source,
                      const std::string& state_dir, RemediationConfig* config) {
    auto bad = [&](const std::string& what) { return Expected(source, v, key, what); };
    if (key == "dry_run") {
        if (!YamlRead(v, &config->dry_run)) return bad("true or false");
    } else if (key == "metrics_dir") {
        if (!YamlRead(v, &config->metrics_dir) ||
            (!config->metrics_dir.empty() && !AbsolutePath(config->metrics_dir))) {
            return bad("an absolute path (or empty: no metrics files)");
        }
    } else if (key == "slurm_conf") {
        if (!YamlRead(v, &config->slurm_conf) || !AbsolutePath(config->slurm_conf)) {
            return bad("an absolute path");
        }
    } else if (key == "kernel_log") {
        if (!YamlRead(v, &config->kernel_log) ||
            (config->kernel_log != "kmsg" && !AbsolutePath(config->kernel_log))) {
            return bad("kmsg or an absolute path");
        }
    } else if (key == "kernel_log_max_bytes" || key == "job_output_max_bytes") {
        std::uint64_t n = 0;
        if (!YamlRead(v, &n) || n < 4096 || n > (1ULL << 30)) {
            return bad("a size in bytes from 4096 to 1073741824");
        }
        (key == "kernel_log_max_bytes" ? config->kernel_log_max_bytes
                                       : config->job_output_max_bytes) = n;
    } else if (key == "results_wait_seconds") {
        if (!YamlRead(v, &config->results_wait_seconds) || config->results_wait_seconds < 0 ||
            config->results_wait_seconds > 600) {
            return bad("seconds from 0 to 600");
        }
    } else if (key == "requeue_delay_seconds") {
        if (!YamlRead(v, &config->requeue_delay_seconds) || config->requeue_delay_seconds < 1 ||
            config->requeue_delay_seconds > 3600) {
            return bad("seconds from 1 to 3600");
        }
    } else if (key == "jobs_retention_days") {
        if (!YamlRead(v, &config->jobs_retention_days) || config->jobs_retention_days < 1 ||
            config->jobs_retention_days > 3650) {
            return bad("days from 1 to 3650");
        }
    } else if (key == "escalation_min_users") {
        if (!YamlRead(v, &config->escalation_min_users) || config->escalation_min_users < 1 ||
            config->escalation_min_users > 1000) {
            return bad("a number of users from 1 to 1000");
        }
    } else if (key == "no_progress_requeues") {
        if (!YamlRead(v, &config->no_progress_requeues) || config->no_progress_requeues < 0 ||
            config->no_progress_requeues > 100) {
            return bad("a whole number from 0 (off) to 100");
        }
    } else if (key == "gpu_reset_command") {
        auto argv = ParseCommand(v, source, key);
        if (!argv) return argv.status();
        config->gpu_reset_command = std::move(argv).value();
    } else if (key == "quarantine_hours") {
        if (!YamlRead(v, &config->quarantine_hours) || config->quarantine_hours < 0 ||
            config->quarantine_hours > 24 * 365) {
            return bad("hours from 0 to 8760");
        }
    } else if (key == "breaker") {
        return ParseBreaker(v, source, &config->breaker);
    } else if (key == "correlation") {
        return ParseCorrelation(v, source, &config->correlation);
    } else if (key == "lemon") {
        return ParseLemon(v, source, &config->lemon);
    } else if (key == "tickets") {
        auto tickets = ParseTicketConfig(v, source, state_dir);
        if (!tickets) return tickets.status();
        config->tickets = std::move(tickets).value();
    } else {
        return false;  // not a setting of this section
    }
    return true;
}

}  // namespace

Result<RemediationConfig> ParseRemediationConfig(const YAML::Node& section,
                                                 const std::string& source,
                                                 const std::string& state_dir) {
    RemediationConfig config;
    // Absent, the tickets are the defaults for this state_dir (one spool sink under it).
    auto tickets = ParseTicketConfig(YAML::Node(), source, state_dir);
    if (!tickets) return tickets.status();
    config.tickets = std::move(tickets).value();
    if (!section || section.IsNull()) return config;
    if (!section.IsMap()) {
        return MakeError(ErrorCode::kInvalid,
                         YamlWhere(source, section) + ": remediation: expected a mapping");
    }
    try {
        for (const auto& kv : section) {
            const std::string key = kv.first.as<std::string>();
            auto parsed = ParseKey(key, kv.second, source, state_dir, &config);
            if (!parsed) return parsed.status();
            if (!*parsed) return Unknown(source, kv.first, key, "");
        }
    } catch (const YAML::Exception& e) {
        return MakeError(ErrorCode::kInvalid, source + ": remediation: " + e.what());
    }
    return config;
}

}  // namespace autoheal::remediation
