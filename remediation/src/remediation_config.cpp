#include "autoheal/remediation/remediation_config.h"

#include "autoheal/core/duration.h"
#include "autoheal/core/yaml_read.h"
#include "autoheal/health/health_config.h"
#include "autoheal/remediation/tickets.h"

namespace autoheal::remediation {
namespace {}  // namespace

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

Result<RemediationConfig> ParseRemediationConfig(const YAML::Node& section,
                                                 const std::string& source) {
    RemediationConfig config;
    if (!section || section.IsNull()) return config;
    if (!section.IsMap()) {
        return MakeError(YamlWhere(source, section) + ": remediation: expected a mapping");
    }
    try {
        for (const auto& kv : section) {
            const std::string key = kv.first.as<std::string>();
            const YAML::Node& v = kv.second;
            auto bad_at = [&](const YAML::Node& at, const std::string& name,
                              const std::string& what) {
                return MakeError(YamlWhere(source, at) + ": remediation." + name + ": expected " +
                                 what);
            };
            auto bad = [&](const std::string& what) { return bad_at(v, key, what); };
            auto duration = [&](const YAML::Node& n, std::int64_t* out) {
                std::string s;
                if (!YamlRead(n, &s)) return false;
                auto d = ParseDuration(s);
                if (!d) return false;
                *out = *d;
                return true;
            };
            if (key == "dry_run") {
                if (!YamlRead(v, &config.dry_run)) return bad("true or false");
            } else if (key == "metrics_dir") {
                if (!YamlRead(v, &config.metrics_dir) ||
                    (!config.metrics_dir.empty() && config.metrics_dir.front() != '/')) {
                    return bad("an absolute path (or empty: no metrics files)");
                }
            } else if (key == "slurm_conf") {
                if (!YamlRead(v, &config.slurm_conf) || config.slurm_conf.empty() ||
                    config.slurm_conf.front() != '/') {
                    return bad("an absolute path");
                }
            } else if (key == "kernel_log") {
                if (!YamlRead(v, &config.kernel_log) ||
                    (config.kernel_log != "kmsg" &&
                     (config.kernel_log.empty() || config.kernel_log.front() != '/'))) {
                    return bad("kmsg or an absolute path");
                }
            } else if (key == "kernel_log_max_bytes" || key == "job_output_max_bytes") {
                std::uint64_t n = 0;
                if (!YamlRead(v, &n) || n < 4096 || n > (1ULL << 30)) {
                    return bad("a size in bytes from 4096 to 1073741824");
                }
                (key == "kernel_log_max_bytes" ? config.kernel_log_max_bytes
                                               : config.job_output_max_bytes) = n;
            } else if (key == "results_wait_seconds") {
                if (!YamlRead(v, &config.results_wait_seconds) || config.results_wait_seconds < 0 ||
                    config.results_wait_seconds > 600) {
                    return bad("seconds from 0 to 600");
                }
            } else if (key == "requeue_delay_seconds") {
                if (!YamlRead(v, &config.requeue_delay_seconds) ||
                    config.requeue_delay_seconds < 1 || config.requeue_delay_seconds > 3600) {
                    return bad("seconds from 1 to 3600");
                }
            } else if (key == "gpu_reset_command") {
                std::vector<std::string> argv;
                if (!v.IsSequence()) return bad("a list: program and arguments");
                for (const YAML::Node& a : v) {
                    std::string s;
                    if (!YamlRead(a, &s)) return bad_at(a, key, "a string");
                    argv.push_back(s);
                }
                if (argv.empty() || argv.front().empty()) {
                    return bad("a list: program and arguments");
                }
                if (argv.front().front() != '/') {
                    return bad_at(v[0], key,
                                  "an absolute program path (no shell, no PATH lookup): '" +
                                      argv.front() + "'");
                }
                config.gpu_reset_command = argv;
            } else if (key == "quarantine_hours") {
                if (!YamlRead(v, &config.quarantine_hours) || config.quarantine_hours < 0 ||
                    config.quarantine_hours > 24 * 365) {
                    return bad("hours from 0 to 8760");
                }
            } else if (key == "breaker") {
                if (!v.IsMap()) return bad("a mapping");
                for (const auto& bk : v) {
                    const std::string k = bk.first.as<std::string>();
                    const YAML::Node& bv = bk.second;
                    if (k == "max_fraction") {
                        if (!YamlRead(bv, &config.breaker.max_fraction) ||
                            config.breaker.max_fraction <= 0 || config.breaker.max_fraction > 1) {
                            return bad_at(bv, "breaker.max_fraction", "a fraction in (0, 1]");
                        }
                    } else if (k == "max_nodes") {
                        if (!YamlRead(bv, &config.breaker.max_nodes) ||
                            config.breaker.max_nodes < 0) {
                            return bad_at(bv, "breaker.max_nodes", "a number of nodes");
                        }
                    } else if (k == "window") {
                        if (!duration(bv, &config.breaker.window_seconds)) {
                            return bad_at(bv, "breaker.window", "a duration such as 1h");
                        }
                    } else {
                        return MakeError(YamlWhere(source, bk.first) + ": remediation.breaker." +
                                         k + ": unknown setting (max_fraction, max_nodes, window)");
                    }
                }
            } else if (key == "correlation") {
                if (!v.IsMap()) return bad("a mapping");
                for (const auto& ck : v) {
                    const std::string k = ck.first.as<std::string>();
                    const YAML::Node& cv = ck.second;
                    if (k == "window") {
                        if (!duration(cv, &config.correlation.window_seconds)) {
                            return bad_at(cv, "correlation.window", "a duration such as 10m");
                        }
                    } else if (k == "min_nodes") {
                        if (!YamlRead(cv, &config.correlation.min_nodes) ||
                            config.correlation.min_nodes < 2) {
                            return bad_at(cv, "correlation.min_nodes", "2 or more");
                        }
                    } else {
                        return MakeError(YamlWhere(source, ck.first) +
                                         ": remediation.correlation." + k +
                                         ": unknown setting (window, min_nodes)");
                    }
                }
            } else if (key == "lemon") {
                if (!v.IsMap()) return bad("a mapping");
                for (const auto& lk : v) {
                    const std::string k = lk.first.as<std::string>();
                    const YAML::Node& lv = lk.second;
                    if (k == "failures") {
                        if (!YamlRead(lv, &config.lemon.failures) || config.lemon.failures < 0 ||
                            config.lemon.failures > 1000) {
                            return bad_at(lv, "lemon.failures", "a number of jobs (0 = off)");
                        }
                    } else if (k == "window") {
                        if (!duration(lv, &config.lemon.window_seconds)) {
                            return bad_at(lv, "lemon.window", "a duration such as 7d");
                        }
                    } else {
                        return MakeError(YamlWhere(source, lk.first) + ": remediation.lemon." + k +
                                         ": unknown setting (failures, window)");
                    }
                }
            } else if (key == "tickets") {
                config.tickets = v;
            } else {
                return MakeError(YamlWhere(source, kv.first) + ": remediation." + key +
                                 ": unknown setting");
            }
        }
    } catch (const YAML::Exception& e) {
        return MakeError(source + ": remediation: " + e.what());
    }
    return config;
}

std::string ValidateConfigSections(const Config& config) {
    std::string problems;
    auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "\n") + p; };
    if (auto hc = health::ParseHealthConfig(config.health, config.source); !hc) add(hc.error());
    auto rc = ParseRemediationConfig(config.remediation, config.source);
    if (!rc) {
        add(rc.error());
    } else if (auto t = ParseTicketConfig(rc->tickets, config.source, config.state_dir); !t) {
        add(t.error());
    }
    return problems;
}

}  // namespace autoheal::remediation
