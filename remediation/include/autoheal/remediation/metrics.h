// Prometheus metrics through node_exporter's textfile collector: files in `metrics_dir`
// (remediation.metrics_dir), each replaced atomically so the collector never reads half a file.
//
// - autoheal.prom, by the controller epilog after every decision and by `autoheal metrics`:
//   nodes held by cause, the breaker, incidents by cause, job runs by outcome, requeues and the
//   time from a failed run's end to the rerun's start, tickets by state.
// - autoheal_health.prom, by the prolog on each node: the last health check's verdict, tier,
//   duration, and each check's status and duration per GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/health/check.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {

inline constexpr const char* kControllerMetricsFile = "autoheal.prom";
inline constexpr const char* kHealthMetricsFile = "autoheal_health.prom";

// The cluster-wide metrics. `nodes` may be null (Slurm unreachable): the node and breaker
// gauges are left out, the store's counters are still written.
Result<std::string> RenderControllerMetrics(IncidentStore& store,
                                            const std::vector<NodeInfo>* nodes,
                                            const RemediationConfig& config, std::int64_t now);

// This node's last health check.
std::string RenderHealthMetrics(const health::HealthReport& report, const std::string& node,
                                std::int64_t now);

// Writes `text` as `dir`/`name` atomically (mode 0644).
Result<bool> WriteMetricsFile(const std::string& dir, const std::string& name,
                              const std::string& text);

// A label value as the exposition format wants it (backslash, double quote, newline escaped).
std::string PromLabel(const std::string& value);

}  // namespace autoheal::remediation
