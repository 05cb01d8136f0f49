#include "telemetry_report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "cli_common.h"
#include "report.h"

namespace autoheal::cli {
namespace {

double Hours(const remediation::GpuTelemetryRow& r, unsigned percent) {
    return static_cast<double>(r.summary.seconds) * percent / 100 / 3600;
}

int HourOfDay(std::int64_t t) {
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    localtime_r(&tt, &tm);
    return tm.tm_hour;
}

std::string Num(double v, const char* format = "%.1f") {
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

}  // namespace

TelemetryReport ComputeTelemetryReport(const std::vector<remediation::GpuTelemetryRow>& rows) {
    TelemetryReport out;
    std::map<std::string, HotNode> nodes;
    std::map<std::string, double> temp_sums;
    std::map<int, std::pair<double, int>> swings;
    for (const remediation::GpuTelemetryRow& r : rows) {
        const diag::GpuTelemetrySummary& s = r.summary;
        ++out.gpu_runs;
        out.gpu_hours += Hours(r, 100);
        out.power_gpu_hours += Hours(r, s.power_throttle_pct);
        out.thermal_gpu_hours += Hours(r, s.thermal_throttle_pct);
        out.hw_slowdown_gpu_hours += Hours(r, s.hw_slowdown_pct);
        out.stragglers += r.straggler ? 1 : 0;
        HotNode& n = nodes[r.node];
        n.node = r.node;
        n.temp_max = std::max(n.temp_max, s.temp_max);
        ++n.gpu_runs;
        n.stragglers += r.straggler ? 1 : 0;
        temp_sums[r.node] += s.temp_mean;
        auto& [sum, count] = swings[HourOfDay(r.time)];
        sum += s.power_p95 - std::min(s.power_p5, s.power_p95);
        ++count;
    }
    for (auto& [name, n] : nodes) {
        n.temp_mean = temp_sums[name] / n.gpu_runs;
        out.hottest.push_back(n);
    }
    std::sort(out.hottest.begin(), out.hottest.end(), [](const HotNode& a, const HotNode& b) {
        return a.temp_mean != b.temp_mean ? a.temp_mean > b.temp_mean : a.node < b.node;
    });
    if (out.hottest.size() > kHottestNodes) out.hottest.resize(kHottestNodes);
    for (const auto& [hour, sc] : swings)
        out.swing_by_hour.emplace_back(hour, sc.first / sc.second);
    return out;
}

void PrintTelemetryReport(const TelemetryReport& r) {
    std::printf("\nGPU power and temperature (autoheal-agent's samples)\n");
    if (r.gpu_runs == 0) {
        std::printf("  none sampled\n");
        return;
    }
    std::printf(
        "  %.1f GPU-hours sampled over %d GPU runs; throttled: power %.1f GPU-h, thermal "
        "%.1f GPU-h, hardware slowdown %.1f GPU-h; %d straggler(s)\n",
        r.gpu_hours, r.gpu_runs, r.power_gpu_hours, r.thermal_gpu_hours, r.hw_slowdown_gpu_hours,
        r.stragglers);
    Table hot({"HOTTEST NODE", "MEAN C", "MAX C", "GPU RUNS", "STRAGGLERS"});
    for (const HotNode& n : r.hottest) {
        hot.Add({n.node, Num(n.temp_mean), std::to_string(n.temp_max), std::to_string(n.gpu_runs),
                 std::to_string(n.stragglers)});
    }
    hot.Print(stdout);
    std::printf("  power swing (p95 - p5, W) by hour of the runs' end:");
    for (const auto& [hour, swing] : r.swing_by_hour)
        std::printf(" %02d:%s", hour, Num(swing, "%.0f").c_str());
    std::printf("\n");
}

nlohmann::json TelemetryReportJson(const TelemetryReport& r) {
    nlohmann::json j{{"gpu_runs", r.gpu_runs},
                     {"gpu_hours", r.gpu_hours},
                     {"throttled_gpu_hours",
                      {{"power", r.power_gpu_hours},
                       {"thermal", r.thermal_gpu_hours},
                       {"hw_slowdown", r.hw_slowdown_gpu_hours}}},
                     {"stragglers", r.stragglers}};
    j["hottest_nodes"] = nlohmann::json::array();
    for (const HotNode& n : r.hottest) {
        j["hottest_nodes"].push_back({{"node", n.node},
                                      {"temp_mean", n.temp_mean},
                                      {"temp_max", n.temp_max},
                                      {"gpu_runs", n.gpu_runs},
                                      {"stragglers", n.stragglers}});
    }
    j["power_swing_by_hour"] = nlohmann::json::object();
    for (const auto& [hour, swing] : r.swing_by_hour) {
        j["power_swing_by_hour"][std::to_string(hour)] = swing;
    }
    return j;
}

std::string TelemetryHtml(const TelemetryReport& r) {
    std::string s = "<h2 id=\"gpu-telemetry\">GPU power and temperature</h2>\n";
    if (r.gpu_runs == 0) {
        return s +
               "<p class=\"empty\">No GPU was sampled in the window (autoheal-agent's "
               "agent.sample_interval).</p>\n";
    }
    s += "<div class=\"cards\">" + CardHtml(Fixed(r.gpu_hours, 1), "GPU-hours sampled") +
         CardHtml(std::to_string(r.gpu_runs), "GPU runs") +
         CardHtml(std::to_string(r.stragglers), "stragglers") + "</div>\n";
    s += "<p>GPU-hours held down, by cause (they overlap: a hardware thermal slowdown is also "
         "thermal).</p>\n";
    s += HorizontalBars(
        "throttled GPU-hours by cause",
        {{"power policy", r.power_gpu_hours, 0, Fixed(r.power_gpu_hours, 1) + " h"},
         {"thermal policy", r.thermal_gpu_hours, 0, Fixed(r.thermal_gpu_hours, 1) + " h"},
         {"hardware slowdown", r.hw_slowdown_gpu_hours, 0,
          Fixed(r.hw_slowdown_gpu_hours, 1) + " h"}});
    std::vector<BarRow> hot;
    hot.reserve(r.hottest.size());
    for (const HotNode& n : r.hottest) {
        hot.push_back({n.node, n.temp_mean, 0,
                       Fixed(n.temp_mean, 1) + " C mean, " + std::to_string(n.temp_max) +
                           " C max, " + std::to_string(n.gpu_runs) + " GPU runs, " +
                           std::to_string(n.stragglers) + " straggler(s)"});
    }
    s += "<p>The hottest nodes (their GPUs' mean temperature).</p>\n" +
         HorizontalBars("hottest nodes", hot);
    s += "<table><thead><tr><th>hour of the runs' end</th><th class=\"n\">power swing (p95 - "
         "p5, W)</th></tr></thead><tbody>";
    for (const auto& [hour, swing] : r.swing_by_hour) {
        s += "<tr><td>" + std::string(hour < 10 ? "0" : "") + std::to_string(hour) +
             ":00</td><td class=\"n\">" + Fixed(swing, 0) + "</td></tr>";
    }
    return s + "</tbody></table>\n";
}

void PrintNodeTelemetry(const std::vector<remediation::GpuTelemetryRow>& rows, std::size_t limit) {
    if (rows.empty()) return;
    std::printf("\nGPU power and temperature (newest first):\n");
    Table t({"TIME", "JOB", "GPU", "SECONDS", "POWER%", "THERMAL%", "HW-SLOW%", "POWER W", "MAX C",
             "CLOCK/PEERS", "STRAGGLER"});
    for (std::size_t i = 0; i < rows.size() && i < limit; ++i) {
        const remediation::GpuTelemetryRow& r = rows[i];
        const diag::GpuTelemetrySummary& s = r.summary;
        t.Add({FormatTime(r.time), r.job + (r.run > 0 ? "/" + std::to_string(r.run) : ""), s.gpu,
               std::to_string(s.seconds), std::to_string(s.power_throttle_pct),
               std::to_string(s.thermal_throttle_pct), std::to_string(s.hw_slowdown_pct),
               std::to_string(s.power_p5) + "-" + std::to_string(s.power_p95),
               std::to_string(s.temp_max), std::to_string(r.clock_vs_peers) + "%",
               r.straggler ? "yes" : ""});
    }
    t.Print(stdout);
}

nlohmann::json NodeTelemetryJson(const std::vector<remediation::GpuTelemetryRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const remediation::GpuTelemetryRow& r : rows) {
        const diag::GpuTelemetrySummary& s = r.summary;
        out.push_back({{"time", r.time},
                       {"job", r.job},
                       {"run", r.run},
                       {"gpu", s.gpu},
                       {"seconds", s.seconds},
                       {"power_throttle_pct", s.power_throttle_pct},
                       {"thermal_throttle_pct", s.thermal_throttle_pct},
                       {"hw_slowdown_pct", s.hw_slowdown_pct},
                       {"power_p5", s.power_p5},
                       {"power_p95", s.power_p95},
                       {"temp_max", s.temp_max},
                       {"temp_mean", s.temp_mean},
                       {"sm_clock_mean", s.sm_clock_mean},
                       {"clock_vs_peers", r.clock_vs_peers},
                       {"straggler", r.straggler}});
    }
    return out;
}

}  // namespace autoheal::cli
