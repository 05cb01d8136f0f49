// Reliability figures for `autoheal report`: interruptions by cause in the shape of Llama 3's
// Table 5, mean time between failures, hours lost, repeat offenders, and the effective training
// time ratio (ETTR) of a job of a given size with the Young/Daly checkpoint interval.
//
// Pure: it takes rows already read from the incident store (runs and incidents) and does no I/O,
// no Slurm, no clock. docs/report.md says what each figure measures and where it stops being
// true; the comments here say how it is computed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/remediation/incident_store.h"

namespace autoheal::cli {

// Job size for ETTR when neither --job-nodes nor any run in the window gives one.
inline constexpr int kDefaultJobNodes = 1024;
// Restart overhead assumed when no requeued run was followed by a recorded next run.
inline constexpr std::int64_t kDefaultRestartOverhead = 600;
// Below either, the window is too small to measure a failure rate: a demo's one short run would
// give millions of failures per 1,000 node-days and an ETTR of 0. The report says so instead.
inline constexpr int kMinRunsForRate = 5;
inline constexpr double kMinNodeHoursForRate = 24;  // one node-day

struct ReportOptions {
    std::int64_t since = 0;  // window: runs that ended in [since, until]
    std::int64_t until = 0;
    std::int64_t generated_at = 0;  // shown on the page only
    int job_nodes = 0;              // 0: the largest run seen in the window, else kDefaultJobNodes
    std::int64_t ckpt_interval = 3600;  // Δt, seconds
    std::int64_t ckpt_cost = 60;        // C, seconds to write one checkpoint
    // u₀ when none was measured (the page says it is assumed).
    std::int64_t restart_overhead_fallback = kDefaultRestartOverhead;
};

// One row of the Table 5 shaped table: the interruptions of one cause.
struct CauseRow {
    std::string cause;      // the taxonomy's word ("faulty_gpu")
    std::string component;  // Table 5's wording ("Faulty GPU")
    std::string category;   // GPU, Network, Host, Storage, Software, Unknown
    int interruptions = 0;
    double percent = 0;             // of all interruptions
    double lost_node_hours = 0;     // Σ nodes × (end − start) of the interrupted runs
    double restart_node_hours = 0;  // Σ nodes × (next run's start − end), where measured
};

struct CategoryRow {
    std::string category;
    int interruptions = 0;
    double percent = 0;
};

// Interruptions of the runs that ended in [start, start + ReliabilityReport::bucket_seconds).
struct Bucket {
    std::int64_t start = 0;
    int interruptions = 0;
};

// A node named by two or more node-level incidents in the window.
struct NodeOffender {
    std::string node;
    int incidents = 0;
    std::string causes;  // "faulty_gpu x2, nvlink", most frequent first
    std::int64_t first = 0;
    std::int64_t last = 0;
};

// A GPU named by two or more incidents: by board serial when known, else by node and PCI id.
struct GpuOffender {
    std::string serial;  // empty when never read
    std::string nodes;   // the nodes it was seen in (a board can move), comma separated
    std::string pci;
    int incidents = 0;
    std::string causes;
    std::int64_t first = 0;
    std::int64_t last = 0;
};

struct EttrEstimate {
    // Why no rate, MTBF per job, ETTR or interval is estimated (too few runs or node-hours in
    // the window); empty when they are.
    std::string too_few;
    int job_nodes = 0;              // N
    std::string job_nodes_from;     // "--job-nodes", "largest job in the window", "default"
    double rate_per_node_hour = 0;  // r
    double restart_overhead = 0;    // u₀, seconds
    bool restart_overhead_measured = false;
    int restarts_measured = 0;             // requeued runs whose next run is recorded
    double ckpt_interval = 0;              // Δt, seconds
    double ckpt_cost = 0;                  // C, seconds
    std::optional<double> job_mtbf_hours;  // M = 1 / (N·r); none when r = 0
    double ettr = 1;                       // 1 − N·r·(u₀ + Δt/2), clamped to [0, 1]
    // The same with the time spent writing checkpoints: 1 − C/Δt − N·r·(u₀ + Δt/2), clamped.
    double ettr_with_ckpt_cost = 1;
    std::optional<double> optimal_interval;  // Δt* = sqrt(2·C·M), seconds; none when r = 0
    std::optional<double> ettr_at_optimum;   // ettr_with_ckpt_cost at Δt*
};

struct ReliabilityReport {
    ReportOptions options;
    int runs = 0;  // runs that ended in the window
    int ok = 0;
    int own = 0;  // failed of the job's own bug (not an interruption)
    int blamed = 0;
    int unexplained = 0;
    int other = 0;
    int interruptions = 0;  // blamed + unexplained + other
    double window_hours = 0;
    double node_hours = 0;                  // Σ nodes × (end − start) over the window's runs
    double own_node_hours = 0;              // of the runs that failed of their own bug
    std::optional<double> mtbf_hours;       // window hours / interruptions
    std::optional<double> node_mtbf_hours;  // node-hours / interruptions
    double lost_node_hours = 0;
    double restart_node_hours = 0;
    std::vector<CauseRow> causes;  // most interruptions first
    std::vector<CategoryRow> categories;
    std::int64_t bucket_seconds = 86400;
    std::vector<Bucket> buckets;
    std::vector<NodeOffender> node_offenders;  // most incidents first
    std::vector<GpuOffender> gpu_offenders;
    int node_incidents = 0;  // node-level incidents counted for offenders
    EttrEstimate ettr;
    std::vector<std::string> notes;  // caveats the reader must see (assumed values, truncation)
};

// Which of the store's answers stopped at its limit (a note on the page says so).
struct Truncated {
    bool runs = false;       // Runs() gave kRunsLimit rows: the newest runs are missing
    bool incidents = false;  // Incidents() gave as many as asked: the oldest are missing
};

// `runs`: every run that ended at or after options.since (later ones are used only to find the
// run that followed a requeue). `incidents`: the incidents of the window, any order.
ReliabilityReport ComputeReport(const std::vector<remediation::RunRecord>& runs,
                                const std::vector<remediation::IncidentRow>& incidents,
                                const ReportOptions& options, Truncated truncated = {});

// The model, for a job of `nodes` nodes on nodes that fail at `rate_per_node_second`.
// ETTR ≈ 1 − N·r·(u₀ + Δt/2), clamped to [0, 1].
double EstimateEttr(int nodes, double rate_per_node_second, double restart_overhead,
                    double ckpt_interval);
// ETTR less the time spent writing checkpoints (C/Δt), clamped to [0, 1].
double EstimateEttrWithCheckpointCost(int nodes, double rate_per_node_second,
                                      double restart_overhead, double ckpt_interval,
                                      double ckpt_cost);
// Young/Daly: Δt* = sqrt(2·C·M) with M = 1/(N·r); none when N·r = 0 or C <= 0.
std::optional<double> YoungDalyInterval(int nodes, double rate_per_node_second, double ckpt_cost);

// The catalog's title of a cause (Table 5's wording where it has a row) and its category's
// title; a word outside the catalog is its own component, category "Unknown".
std::string CauseComponent(std::string_view cause);
std::string CauseCategory(std::string_view cause);

// Escapes & < > " ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);

// The pages' shared parts (report_html.cpp; `autoheal simulate --html` uses them too): the head
// (doctype, the Content-Security-Policy, the style) and the title; a card (a figure and its
// label); horizontal bars, one row each, labels on the left (value2: a second, stacked segment).
std::string PageHead(const std::string& title);
std::string Fixed(double v, int precision);  // "%.*f"
std::string CardHtml(const std::string& value, const std::string& label);
struct BarRow {
    std::string label;
    double value = 0;
    double value2 = 0;
    std::string text;  // shown after the bar
};
std::string HorizontalBars(const std::string& label, const std::vector<BarRow>& rows);

// A self-contained page: inline CSS and SVG, no script, no external URL, and a
// Content-Security-Policy that forbids loading anything. `more` (HTML sections, such as
// TelemetryHtml's) goes after the report's own sections.
std::string ReportHtml(const ReliabilityReport& report, const std::string& more = "");
std::string ReportJson(const ReliabilityReport& report);

}  // namespace autoheal::cli
