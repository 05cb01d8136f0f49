// autoheal report: reliability figures from the incident store (cli/report.h computes them,
// docs/report.md explains them). Plain text by default, JSON with --json, a self-contained HTML
// page with --html FILE (written atomically). Exit 0 done, 1 store or file error, 2 usage.
#include <cstdio>
#include <ctime>

#include "autoheal/core/duration.h"
#include "autoheal/core/files.h"
#include "autoheal/remediation/remediation_config.h"
#include "cli_common.h"
#include "report.h"
#include "telemetry_report.h"

namespace autoheal::cli {
namespace {

constexpr const char* kReportUsage =
    "usage: autoheal report [--since 30d] [--until DATE] [--html FILE] [--json]\n"
    "                       [--job-nodes N] [--ckpt-interval 1h] [--ckpt-cost 60s]\n"
    "                       [--restart-overhead 10m]\n"
    "  Interruptions by cause (after Llama 3's Table 5), MTBF, hours lost, repeat offenders,\n"
    "  the effective training time ratio of an N-node job, and GPU power and temperature\n"
    "  (throttled GPU-hours by cause, the hottest nodes, power swing by hour), from the runs\n"
    "  that ended in the window. --since/--until take a duration back from now (7d) or a date "
    "(2026-11-01, its\n"
    "  midnight). --job-nodes: default the largest job in the window, else 1024.\n"
    "  --restart-overhead: used only when none was measured. See docs/report.md.\n";

std::optional<std::int64_t> DurationOption(const Args& a, const std::string& name,
                                           std::int64_t fallback) {
    if (a.values.count(name) == 0) return fallback;
    auto d = ParseDuration(a.Value(name));
    if (!d || *d <= 0) {
        std::fprintf(stderr, "autoheal: report: %s: '%s' is not a duration (60s, 30m, 1h)\n",
                     name.c_str(), a.Value(name).c_str());
        return std::nullopt;
    }
    return *d;
}

std::string Hours(const std::optional<double>& h) {
    if (!h) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f h", *h);
    return buf;
}

std::string Num(double v, const char* format = "%.1f") {
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

void PrintText(const ReliabilityReport& r) {
    std::printf("runs that ended %s .. %s: %d (ok %d, own %d, interrupted %d)\n",
                FormatTime(r.options.since).c_str(), FormatTime(r.options.until).c_str(), r.runs,
                r.ok, r.own, r.interruptions);
    for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    std::printf("\ninterruptions by cause\n");
    Table causes(
        {"COMPONENT", "CATEGORY", "CAUSE", "INTERRUPTIONS", "%", "NODE-H LOST", "RESTART NODE-H"});
    for (const CauseRow& c : r.causes) {
        causes.Add({c.component, c.category, c.cause, std::to_string(c.interruptions),
                    Num(c.percent), Num(c.lost_node_hours), Num(c.restart_node_hours)});
    }
    causes.Add({"total", "", "", std::to_string(r.interruptions), r.interruptions ? "100.0" : "-",
                Num(r.lost_node_hours), Num(r.restart_node_hours)});
    causes.Print(stdout);

    std::printf("\nMTBF: %s (cluster, %.1f h window), %s per node (%.1f node-hours run)\n",
                Hours(r.mtbf_hours).c_str(), r.window_hours, Hours(r.node_mtbf_hours).c_str(),
                r.node_hours);

    std::printf("\nrepeat offenders (2+ incidents)\n");
    Table nodes({"NODE", "INCIDENTS", "CAUSES", "LAST"});
    for (const NodeOffender& n : r.node_offenders)
        nodes.Add({n.node, std::to_string(n.incidents), n.causes, FormatTime(n.last)});
    if (nodes.empty()) {
        std::printf("nodes: none\n");
    } else {
        nodes.Print(stdout);
    }
    Table gpus({"SERIAL", "NODE", "PCI", "INCIDENTS", "CAUSES", "LAST"});
    for (const GpuOffender& g : r.gpu_offenders) {
        gpus.Add({g.serial.empty() ? "unknown" : g.serial, g.nodes, g.pci,
                  std::to_string(g.incidents), g.causes, FormatTime(g.last)});
    }
    if (gpus.empty()) {
        std::printf("gpus: none\n");
    } else {
        gpus.Print(stdout);
    }

    const EttrEstimate& e = r.ettr;
    std::printf("\nETTR for a %d-node job (%s)\n", e.job_nodes, e.job_nodes_from.c_str());
    if (!e.too_few.empty()) {
        std::printf("  not estimated: %s\n", e.too_few.c_str());
        return;
    }
    std::printf("  r  = %.3f failures / 1000 node-days\n", e.rate_per_node_hour * 24000);
    std::printf("  u0 = %s (%s)\n",
                FormatDuration(static_cast<std::int64_t>(e.restart_overhead)).c_str(),
                e.restart_overhead_measured
                    ? ("measured over " + std::to_string(e.restarts_measured) + " requeues").c_str()
                    : "assumed: not measured");
    std::printf("  dt = %s, C = %s\n",
                FormatDuration(static_cast<std::int64_t>(e.ckpt_interval)).c_str(),
                FormatDuration(static_cast<std::int64_t>(e.ckpt_cost)).c_str());
    std::printf("  job MTBF M = %s\n", Hours(e.job_mtbf_hours).c_str());
    std::printf("  ETTR = %.4f (with checkpoint writes %.4f)\n", e.ettr, e.ettr_with_ckpt_cost);
    if (e.optimal_interval) {
        std::printf("  Young/Daly interval = %s (ETTR with checkpoint writes %.4f)\n",
                    FormatDuration(static_cast<std::int64_t>(*e.optimal_interval)).c_str(),
                    e.ettr_at_optimum.value_or(0));
    } else {
        std::printf("  Young/Daly interval: none (no failures measured)\n");
    }
}

}  // namespace

int Report(const std::vector<std::string>& args) {
    auto a = ParseArgs("report", args,
                       {"--since", "--until", "--html", "--job-nodes", "--ckpt-interval",
                        "--ckpt-cost", "--restart-overhead"},
                       {"--json"}, kReportUsage);
    if (!a) return 2;
    if (!a->positional.empty()) {
        std::fprintf(stderr, "autoheal: report: unexpected argument '%s'\n%s",
                     a->positional.front().c_str(), kReportUsage);
        return 2;
    }
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    ReportOptions options;
    options.generated_at = now;
    auto since = ParseSinceOrComplain("report", "--since", a->Value("--since", "30d"), now);
    if (!since) return 2;
    options.since = *since;
    options.until = now;
    if (a->values.count("--until") != 0) {
        auto until = ParseSinceOrComplain("report", "--until", a->Value("--until"), now);
        if (!until) return 2;
        options.until = *until;
    }
    if (options.until <= options.since) {
        std::fprintf(stderr, "autoheal: report: --until must be later than --since\n");
        return 2;
    }
    if (a->values.count("--job-nodes") != 0) {
        const std::string v = a->Value("--job-nodes");
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || n <= 0 || n > 10000000) {
            std::fprintf(stderr, "autoheal: report: --job-nodes: '%s' is not a node count\n",
                         v.c_str());
            return 2;
        }
        options.job_nodes = static_cast<int>(n);
    }
    auto interval = DurationOption(*a, "--ckpt-interval", options.ckpt_interval);
    auto cost = DurationOption(*a, "--ckpt-cost", options.ckpt_cost);
    auto overhead = DurationOption(*a, "--restart-overhead", options.restart_overhead_fallback);
    if (!interval || !cost || !overhead) return 2;
    options.ckpt_interval = *interval;
    options.ckpt_cost = *cost;
    options.restart_overhead_fallback = *overhead;

    auto settings = LoadSettingsOrComplain("report");
    if (!settings) return 1;
    auto store = OpenStoreOrComplain("report", settings->core);
    if (!store) return 1;
    auto runs = store->Runs(options.since);
    if (!runs) {
        std::fprintf(stderr, "autoheal: report: %s\n", runs.error().c_str());
        return 1;
    }
    remediation::IncidentQuery query;
    query.since = options.since;
    query.until = options.until;
    query.limit = remediation::kRunsLimit;
    auto incidents = store->Incidents(query);
    if (!incidents) {
        std::fprintf(stderr, "autoheal: report: %s\n", incidents.error().c_str());
        return 1;
    }
    Truncated truncated;
    truncated.runs = runs->size() >= static_cast<std::size_t>(remediation::kRunsLimit);
    truncated.incidents = incidents->size() >= static_cast<std::size_t>(query.limit);
    const ReliabilityReport report = ComputeReport(*runs, *incidents, options, truncated);
    auto gpu_rows = store->GpuTelemetry(options.since, "");
    if (!gpu_rows) {
        std::fprintf(stderr, "autoheal: report: %s\n", gpu_rows.error().c_str());
        return 1;
    }
    std::erase_if(*gpu_rows,
                  [&](const remediation::GpuTelemetryRow& r) { return r.time > options.until; });
    const TelemetryReport gpus = ComputeTelemetryReport(*gpu_rows);

    if (a->values.count("--html") != 0) {
        const std::string path = a->Value("--html");
        auto written =
            WriteFileAtomically(path, ReportHtml(report, TelemetryHtml(gpus)), 0644, 0755);
        if (!written) {
            std::fprintf(stderr, "autoheal: report: %s\n", written.error().c_str());
            return 1;
        }
        if (!a->Has("--json"))
            std::printf("wrote %s (%d runs, %d interruptions)\n", path.c_str(), report.runs,
                        report.interruptions);
    }
    if (a->Has("--json")) {
        nlohmann::json j = nlohmann::json::parse(ReportJson(report));
        j["gpu_telemetry"] = TelemetryReportJson(gpus);
        std::printf("%s\n", j.dump(2).c_str());
    } else if (a->values.count("--html") == 0) {
        PrintText(report);
        PrintTelemetryReport(gpus);
    }
    return 0;
}

}  // namespace autoheal::cli
