#include "autoheal/remediation/metrics.h"

#include <cstdio>
#include <map>

#include "autoheal/core/files.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/node_reason.h"

namespace autoheal::remediation {
namespace {

class Writer {
  public:
    void Help(const char* name, const char* type, const char* help) {
        out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    }
    void Sample(const std::string& name, const std::string& labels, double value) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", value);
        out_ += name + (labels.empty() ? "" : "{" + labels + "}") + " " + buf + "\n";
    }
    std::string Take() { return std::move(out_); }

  private:
    std::string out_;
};

std::string Label(const char* key, const std::string& value) {
    return std::string(key) + "=\"" + PromLabel(value) + "\"";
}

}  // namespace

std::string PromLabel(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

Result<std::string> RenderControllerMetrics(IncidentStore& store,
                                            const std::vector<NodeInfo>* nodes,
                                            const RemediationConfig& config, std::int64_t now) {
    Writer w;
    if (nodes != nullptr) {
        std::map<std::string, int> held;
        for (const NodeInfo& n : *nodes) {
            if (!n.Out() && !n.reboot_pending) continue;
            if (auto reason = ParseReason(n.reason)) ++held[std::string(ToString(reason->cause))];
        }
        w.Help("autoheal_nodes_held", "gauge",
               "Nodes autoheal holds out of service (drained, down or rebooting), by cause.");
        for (const auto& [cause, n] : held)
            w.Sample("autoheal_nodes_held", Label("cause", cause), n);
        if (held.empty()) w.Sample("autoheal_nodes_held", Label("cause", "none"), 0);
        const int taken = NodesTakenOut(*nodes);
        const int limit = BreakerLimit(config.breaker, static_cast<int>(nodes->size()));
        w.Help("autoheal_breaker_open", "gauge",
               "1 when autoheal holds out of service as many nodes as the breaker allows.");
        w.Sample("autoheal_breaker_open", "", taken >= limit ? 1 : 0);
        w.Help("autoheal_breaker_taken_out", "gauge",
               "Nodes autoheal holds out of service, as the breaker counts them.");
        w.Sample("autoheal_breaker_taken_out", "", taken);
        w.Help("autoheal_breaker_limit", "gauge", "The most nodes the breaker lets autoheal hold.");
        w.Sample("autoheal_breaker_limit", "", limit);
    }
    w.Help("autoheal_dry_run", "gauge", "1 when remediation.dry_run is set.");
    w.Sample("autoheal_dry_run", "", config.dry_run ? 1 : 0);

    auto causes = store.CountIncidentsByCause();
    if (!causes) return MakeError(causes.error());
    w.Help("autoheal_incidents_total", "counter", "Node incidents diagnosed, by cause.");
    for (const auto& [cause, n] : *causes) {
        w.Sample("autoheal_incidents_total", Label("cause", cause), static_cast<double>(n));
    }

    auto runs = store.Runs(0);
    if (!runs) return MakeError(runs.error());
    std::map<std::string, int> outcomes;
    std::map<std::pair<std::string, int>, std::int64_t> start_of;
    for (const RunRecord& r : *runs) {
        ++outcomes[r.outcome];
        start_of[{r.job, r.run}] = r.start_time;
    }
    int requeues = 0;
    int rerun_count = 0;
    double rerun_sum = 0;
    double decide_sum = 0;
    for (const RunRecord& r : *runs) {
        if (!r.requeued) continue;
        ++requeues;
        decide_sum += static_cast<double>(r.decided_at - r.end_time);
        auto next = start_of.find({r.job, r.run + 1});
        if (next != start_of.end() && next->second >= r.end_time) {
            ++rerun_count;
            rerun_sum += static_cast<double>(next->second - r.end_time);
        }
    }
    w.Help("autoheal_job_runs_total", "counter",
           "Job runs the controller epilog decided, by outcome (ok, own, blamed, unexplained, "
           "other).");
    for (const auto& [outcome, n] : outcomes) {
        w.Sample("autoheal_job_runs_total", Label("outcome", outcome), n);
    }
    w.Help("autoheal_requeues_total", "counter", "Job runs autoheal requeued.");
    w.Sample("autoheal_requeues_total", "", requeues);
    w.Help("autoheal_requeue_decision_seconds", "summary",
           "From a failed run's end to autoheal's requeue.");
    w.Sample("autoheal_requeue_decision_seconds_sum", "", decide_sum);
    w.Sample("autoheal_requeue_decision_seconds_count", "", requeues);
    w.Help("autoheal_time_to_rerun_seconds", "summary",
           "From a requeued run's end to the next run's start (runs whose next run was decided).");
    w.Sample("autoheal_time_to_rerun_seconds_sum", "", rerun_sum);
    w.Sample("autoheal_time_to_rerun_seconds_count", "", rerun_count);

    auto tickets = store.CountTicketsByState();
    if (!tickets) return MakeError(tickets.error());
    w.Help("autoheal_tickets", "gauge", "Tickets by delivery state.");
    for (const char* state : {"pending", "failed", "delivered"}) {
        std::int64_t n = 0;
        for (const auto& [s, c] : *tickets) {
            if (s == state) n = c;
        }
        w.Sample("autoheal_tickets", Label("state", state), static_cast<double>(n));
    }
    w.Help("autoheal_metrics_timestamp_seconds", "gauge", "When this file was written.");
    w.Sample("autoheal_metrics_timestamp_seconds", "", static_cast<double>(now));
    return w.Take();
}

std::string RenderHealthMetrics(const health::HealthReport& report, const std::string& node,
                                std::int64_t now) {
    Writer w;
    const std::string n = Label("node", node);
    w.Help("autoheal_health_verdict", "gauge",
           "The last prolog health check: 0 pass, 1 warn, 2 fail, 3 unknown.");
    const int verdict = report.status == health::Status::kPass   ? 0
                        : report.status == health::Status::kWarn ? 1
                        : report.status == health::Status::kFail ? 2
                                                                 : 3;
    w.Sample("autoheal_health_verdict",
             n + "," + Label("tier", std::string(HealthTierName(report.tier))), verdict);
    w.Help("autoheal_health_seconds", "gauge", "How long the last health check took.");
    w.Sample("autoheal_health_seconds", n, report.seconds);
    w.Help("autoheal_health_timestamp_seconds", "gauge", "When the last health check ended.");
    w.Sample("autoheal_health_timestamp_seconds", n, static_cast<double>(now));
    w.Help("autoheal_health_check_status", "gauge",
           "Each check of the last run: 1 for its status (pass, warn, fail, unknown).");
    for (const health::CheckResult& r : report.results) {
        w.Sample("autoheal_health_check_status",
                 n + "," + Label("check", r.check) + "," + Label("gpu", r.gpu) + "," +
                     Label("status", std::string(health::StatusName(r.status))),
                 1);
    }
    w.Help("autoheal_health_check_seconds", "gauge", "Each check's duration in the last run.");
    for (const health::CheckResult& r : report.results) {
        w.Sample("autoheal_health_check_seconds",
                 n + "," + Label("check", r.check) + "," + Label("gpu", r.gpu), r.seconds);
    }
    return w.Take();
}

Result<bool> WriteMetricsFile(const std::string& dir, const std::string& name,
                              const std::string& text) {
    return WriteFileAtomically(dir + "/" + name, text, 0644, 0755);
}

}  // namespace autoheal::remediation
