// GPU power and temperature in `autoheal report` and `autoheal node` (issue 17): from the store's
// per-run GPU summaries (IncidentStore::GpuTelemetry), the GPU-hours throttled by each cause, the
// hottest nodes, the power swing by hour of day (Meta saw diurnal effects on Llama 3), and the
// rows of one node.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autoheal/remediation/incident_store.h"

namespace autoheal::cli {

struct HotNode {
    std::string node;
    unsigned temp_max = 0;  // the highest of its GPUs' maxima, C
    double temp_mean = 0;   // the mean of its GPUs' means, C
    int gpu_runs = 0;       // GPU summaries it had
    int stragglers = 0;     // times one of its GPUs was a job's straggler
};

struct TelemetryReport {
    int gpu_runs = 0;              // GPU summaries in the window
    double gpu_hours = 0;          // sampled GPU-hours
    double power_gpu_hours = 0;    // of them, held down by the power policy
    double thermal_gpu_hours = 0;  // by the thermal policy
    double hw_slowdown_gpu_hours = 0;
    int stragglers = 0;
    std::vector<HotNode> hottest;  // at most kHottestNodes, hottest mean first
    // Per hour of the day (local time of the run's end) with data: the mean power swing
    // (p95 - p5, W) of the GPU summaries of runs that ended in it.
    std::vector<std::pair<int, double>> swing_by_hour;
};

inline constexpr std::size_t kHottestNodes = 5;

TelemetryReport ComputeTelemetryReport(const std::vector<remediation::GpuTelemetryRow>& rows);
void PrintTelemetryReport(const TelemetryReport& report);
nlohmann::json TelemetryReportJson(const TelemetryReport& report);
// The report page's section (report.h's parts): cards, throttled GPU-hours by cause and the
// hottest nodes as bars, the power swing by hour as a table.
std::string TelemetryHtml(const TelemetryReport& report);

// One node's rows (autoheal node): a table, newest first, at most `limit`; JSON: every row.
void PrintNodeTelemetry(const std::vector<remediation::GpuTelemetryRow>& rows, std::size_t limit);
nlohmann::json NodeTelemetryJson(const std::vector<remediation::GpuTelemetryRow>& rows);

}  // namespace autoheal::cli
