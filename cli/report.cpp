#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "autoheal/diag/taxonomy.h"

namespace autoheal::cli {
namespace {

constexpr double kHour = 3600.0;

double NodeSeconds(const remediation::RunRecord& r) {
    if (r.start_time <= 0 || r.end_time <= r.start_time) return 0;
    return static_cast<double>(std::max(r.nodes, 0)) *
           static_cast<double>(r.end_time - r.start_time);
}

// "faulty_gpu x2, nvlink": most frequent first, then by name.
std::string DescribeCauses(const std::map<std::string, int>& counts) {
    std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string out;
    for (const auto& [cause, n] : sorted) {
        if (!out.empty()) out += ", ";
        out += cause;
        if (n > 1) out += " x" + std::to_string(n);
    }
    return out;
}

std::string Join(const std::set<std::string>& items) {
    std::string out;
    for (const std::string& s : items) {
        if (!out.empty()) out += ", ";
        out += s;
    }
    return out;
}

struct OffenderTally {
    int incidents = 0;
    std::map<std::string, int> causes;
    std::set<std::string> nodes;
    std::string pci;
    std::int64_t first = 0;
    std::int64_t last = 0;

    void Add(const remediation::IncidentRow& i) {
        ++incidents;
        ++causes[i.cause.empty() ? "unknown" : i.cause];
        nodes.insert(i.node);
        if (pci.empty()) pci = i.gpu;
        first = first == 0 ? i.time : std::min(first, i.time);
        last = std::max(last, i.time);
    }
};

template <typename Row>
void SortOffenders(std::vector<Row>& rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        if (a.incidents != b.incidents) return a.incidents > b.incidents;
        return a.last > b.last;
    });
}

void CountOffenders(const std::vector<remediation::IncidentRow>& incidents,
                    ReliabilityReport& out) {
    // Node-level incidents only (the job's own incident has no node), and not the job's own bugs:
    // a node is not at fault for the programs run on it.
    std::vector<const remediation::IncidentRow*> counted;
    for (const auto& i : incidents) {
        if (i.node.empty() || diag::BlameOf(i.cause) == diag::Blame::kJob) continue;
        counted.push_back(&i);
    }
    out.node_incidents = static_cast<int>(counted.size());

    std::map<std::string, OffenderTally> by_node;
    for (const auto* i : counted) by_node[i->node].Add(*i);
    for (const auto& [node, t] : by_node) {
        if (t.incidents < 2) continue;
        out.node_offenders.push_back(
            NodeOffender{node, t.incidents, DescribeCauses(t.causes), t.first, t.last});
    }
    SortOffenders(out.node_offenders);

    // A GPU is its board serial when known. An incident without one (the epilog could not read
    // it) takes the serial seen at the same node and PCI id, if exactly one was seen there.
    std::map<std::pair<std::string, std::string>, std::set<std::string>> serials_at;
    for (const auto* i : counted) {
        if (!i->gpu.empty() && !i->gpu_serial.empty())
            serials_at[{i->node, i->gpu}].insert(i->gpu_serial);
    }
    // Key: ("s", serial) or ("p", node + " " + pci).
    std::map<std::pair<std::string, std::string>, OffenderTally> by_gpu;
    for (const auto* i : counted) {
        if (i->gpu.empty() && i->gpu_serial.empty()) continue;
        std::string serial = i->gpu_serial;
        if (serial.empty()) {
            auto it = serials_at.find({i->node, i->gpu});
            if (it != serials_at.end() && it->second.size() == 1) serial = *it->second.begin();
        }
        auto key = serial.empty() ? std::make_pair(std::string("p"), i->node + " " + i->gpu)
                                  : std::make_pair(std::string("s"), serial);
        by_gpu[key].Add(*i);
    }
    for (const auto& [key, t] : by_gpu) {
        if (t.incidents < 2) continue;
        GpuOffender g;
        g.serial = key.first == "s" ? key.second : "";
        g.nodes = Join(t.nodes);
        g.pci = t.pci;
        g.incidents = t.incidents;
        g.causes = DescribeCauses(t.causes);
        g.first = t.first;
        g.last = t.last;
        out.gpu_offenders.push_back(std::move(g));
    }
    SortOffenders(out.gpu_offenders);
}

}  // namespace

std::string CauseComponent(std::string_view cause) {
    const diag::CauseInfo* info = diag::FindCause(cause);
    return std::string(info != nullptr ? info->title : cause);
}

std::string CauseCategory(std::string_view cause) {
    const diag::CauseInfo* info = diag::FindCause(cause);
    return std::string(diag::Title(info != nullptr ? info->category : diag::Category::kUnknown));
}

double EstimateEttr(int nodes, double rate_per_node_second, double restart_overhead,
                    double ckpt_interval) {
    const double lost = nodes * rate_per_node_second * (restart_overhead + ckpt_interval / 2);
    return std::clamp(1.0 - lost, 0.0, 1.0);
}

double EstimateEttrWithCheckpointCost(int nodes, double rate_per_node_second,
                                      double restart_overhead, double ckpt_interval,
                                      double ckpt_cost) {
    if (ckpt_interval <= 0) return 0;
    const double lost = nodes * rate_per_node_second * (restart_overhead + ckpt_interval / 2);
    return std::clamp(1.0 - ckpt_cost / ckpt_interval - lost, 0.0, 1.0);
}

std::optional<double> YoungDalyInterval(int nodes, double rate_per_node_second, double ckpt_cost) {
    const double job_rate = nodes * rate_per_node_second;
    if (job_rate <= 0 || ckpt_cost <= 0) return std::nullopt;
    return std::sqrt(2 * ckpt_cost / job_rate);
}

ReliabilityReport ComputeReport(const std::vector<remediation::RunRecord>& runs,
                                const std::vector<remediation::IncidentRow>& incidents,
                                const ReportOptions& options, Truncated truncated) {
    ReliabilityReport out;
    out.options = options;
    const std::int64_t span = std::max<std::int64_t>(options.until - options.since, 0);
    out.window_hours = static_cast<double>(span) / kHour;

    // The run that followed each (job, run): the lowest later run number recorded.
    std::map<std::pair<std::string, int>, const remediation::RunRecord*> by_job_run;
    for (const auto& r : runs) by_job_run[{r.job, r.run}] = &r;
    auto next_run = [&](const remediation::RunRecord& r) -> const remediation::RunRecord* {
        auto it = by_job_run.upper_bound({r.job, r.run});
        return it != by_job_run.end() && it->first.first == r.job ? it->second : nullptr;
    };

    // At most ~90 buckets: a day each for windows up to 90 days, wider beyond.
    const std::int64_t days = std::max<std::int64_t>((span + 86399) / 86400, 1);
    out.bucket_seconds = 86400 * ((days + 89) / 90);
    const std::int64_t n_buckets =
        std::max<std::int64_t>((span + out.bucket_seconds - 1) / out.bucket_seconds, 1);
    for (std::int64_t b = 0; b < n_buckets; ++b)
        out.buckets.push_back(Bucket{options.since + b * out.bucket_seconds, 0});

    std::map<std::string, CauseRow> by_cause;
    double restart_seconds = 0;
    int largest_job = 0;
    for (const auto& r : runs) {
        if (r.end_time < options.since || r.end_time > options.until) continue;
        ++out.runs;
        largest_job = std::max(largest_job, r.nodes);
        const double node_seconds = NodeSeconds(r);
        out.node_hours += node_seconds / kHour;
        const std::optional<diag::RunOutcome> outcome = diag::ParseRunOutcome(r.outcome);
        if (outcome == diag::RunOutcome::kOk) ++out.ok;
        if (outcome == diag::RunOutcome::kOwn) {
            ++out.own;
            out.own_node_hours += node_seconds / kHour;
        }
        if (!outcome || !diag::Info(*outcome).interruption) continue;
        ++out.interruptions;
        if (outcome == diag::RunOutcome::kBlamed) ++out.blamed;
        if (outcome == diag::RunOutcome::kUnexplained) ++out.unexplained;
        if (outcome == diag::RunOutcome::kOther) ++out.other;

        const std::string cause = r.cause.empty() ? "unknown" : r.cause;
        CauseRow& row = by_cause[cause];
        row.cause = cause;
        ++row.interruptions;
        row.lost_node_hours += node_seconds / kHour;
        out.lost_node_hours += node_seconds / kHour;
        if (r.requeued) {
            const remediation::RunRecord* next = next_run(r);
            if (next != nullptr && next->start_time >= r.end_time) {
                const double gap = static_cast<double>(next->start_time - r.end_time);
                restart_seconds += gap;
                ++out.ettr.restarts_measured;
                const double node_hours = std::max(r.nodes, 0) * gap / kHour;
                row.restart_node_hours += node_hours;
                out.restart_node_hours += node_hours;
            }
        }
        const std::int64_t b = (r.end_time - options.since) / out.bucket_seconds;
        out.buckets[static_cast<std::size_t>(std::min(b, n_buckets - 1))].interruptions++;
    }

    std::map<std::string, int> by_category;
    for (auto& [cause, row] : by_cause) {
        row.component = CauseComponent(cause);
        row.category = CauseCategory(cause);
        row.percent = 100.0 * row.interruptions / out.interruptions;
        by_category[row.category] += row.interruptions;
        out.causes.push_back(row);
    }
    std::stable_sort(out.causes.begin(), out.causes.end(), [](const auto& a, const auto& b) {
        return a.interruptions > b.interruptions;
    });
    for (const auto& [category, n] : by_category)
        out.categories.push_back(CategoryRow{category, n, 100.0 * n / out.interruptions});
    std::stable_sort(
        out.categories.begin(), out.categories.end(),
        [](const auto& a, const auto& b) { return a.interruptions > b.interruptions; });

    if (out.interruptions > 0) {
        out.mtbf_hours = out.window_hours / out.interruptions;
        if (out.node_hours > 0) out.node_mtbf_hours = out.node_hours / out.interruptions;
    }

    CountOffenders(incidents, out);

    EttrEstimate& e = out.ettr;
    if (options.job_nodes > 0) {
        e.job_nodes = options.job_nodes;
        e.job_nodes_from = "--job-nodes";
    } else if (largest_job > 0) {
        e.job_nodes = largest_job;
        e.job_nodes_from = "largest job in the window";
    } else {
        e.job_nodes = kDefaultJobNodes;
        e.job_nodes_from = "default";
    }
    const double rate_per_node_second =
        out.node_hours > 0 ? out.interruptions / (out.node_hours * kHour) : 0.0;
    e.rate_per_node_hour = rate_per_node_second * kHour;
    e.restart_overhead_measured = e.restarts_measured > 0;
    e.restart_overhead = e.restart_overhead_measured
                             ? restart_seconds / e.restarts_measured
                             : static_cast<double>(options.restart_overhead_fallback);
    e.ckpt_interval = static_cast<double>(options.ckpt_interval);
    e.ckpt_cost = static_cast<double>(options.ckpt_cost);
    e.ettr = EstimateEttr(e.job_nodes, rate_per_node_second, e.restart_overhead, e.ckpt_interval);
    e.ettr_with_ckpt_cost = EstimateEttrWithCheckpointCost(
        e.job_nodes, rate_per_node_second, e.restart_overhead, e.ckpt_interval, e.ckpt_cost);
    if (rate_per_node_second > 0)
        e.job_mtbf_hours = 1.0 / (e.job_nodes * rate_per_node_second) / kHour;
    e.optimal_interval = YoungDalyInterval(e.job_nodes, rate_per_node_second, e.ckpt_cost);
    if (e.optimal_interval) {
        e.ettr_at_optimum =
            EstimateEttrWithCheckpointCost(e.job_nodes, rate_per_node_second, e.restart_overhead,
                                           *e.optimal_interval, e.ckpt_cost);
    }

    if (out.runs < kMinRunsForRate || out.node_hours < kMinNodeHoursForRate) {
        char why[256];
        std::snprintf(why, sizeof why,
                      "only %d job run%s and %.1f node-hours in the window: too few to measure a "
                      "failure rate (at least %d runs and %.0f node-hours); no rate, job MTBF, "
                      "ETTR or checkpoint interval is estimated",
                      out.runs, out.runs == 1 ? "" : "s", out.node_hours, kMinRunsForRate,
                      kMinNodeHoursForRate);
        e.too_few = why;
        out.notes.push_back(why);
    }
    if (out.runs == 0) {
        out.notes.push_back("no decided job runs in the window: no failure rate could be measured");
    } else if (out.interruptions == 0) {
        out.notes.push_back("no failures measured: ETTR is 1 and there is no optimal interval");
    }
    if (!e.restart_overhead_measured) {
        out.notes.push_back(
            "restart overhead not measured (no requeued run with a recorded next "
            "run): assumed " +
            std::to_string(options.restart_overhead_fallback) + " s");
    }
    if (e.job_mtbf_hours && e.optimal_interval && *e.optimal_interval > *e.job_mtbf_hours * kHour)
        out.notes.push_back(
            "the optimal interval exceeds the job's MTBF: Young/Daly's "
            "approximation does not hold at this failure rate");
    if (truncated.runs)
        out.notes.push_back(
            "the store returned the most runs one query gives: the newest runs "
            "of the window are missing; narrow it with --until");
    if (truncated.incidents)
        out.notes.push_back(
            "the store returned the most incidents one query gives: repeat "
            "offenders count only the newest");
    return out;
}

}  // namespace autoheal::cli
