// The report's page and its JSON. Every string that came from the store (node names, causes,
// serials, PCI ids) goes through HtmlEscape; the page loads nothing and runs no script, and its
// Content-Security-Policy makes a browser refuse anything that would.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "report.h"

namespace autoheal::cli {

std::string Fixed(double v, int precision) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

namespace {

std::string Date(std::int64_t epoch) { return FormatTime(epoch).substr(0, 10); }

std::string Seconds(double s) { return FormatDuration(static_cast<std::int64_t>(std::lround(s))); }

constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:60em;
color:#1d2430;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccd}
.meta{color:#556}.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.card{border:1px solid #ccd;border-radius:6px;padding:.5em .9em;min-width:9em}
.card b{display:block;font-size:1.4em}.card span{color:#556;font-size:.85em}
table{border-collapse:collapse;margin:.6em 0}th,td{padding:.25em .7em;border-bottom:1px solid #e3e6ee;
text-align:left}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tfoot td{font-weight:bold;border-top:1px solid #99a}
.notes{background:#fff6e0;border:1px solid #e8c36a;border-radius:6px;padding:.5em 1em}
.tag{font-size:.8em;padding:0 .4em;border-radius:4px;background:#e3e6ee}
.tag.assumed{background:#fde2c8}.empty{color:#556;font-style:italic}
svg.chart{display:block;margin:.5em 0}svg text{font-size:12px;fill:#1d2430}
.bar{fill:#4a78c2}.bar2{fill:#e0a040}.axis{stroke:#99a}
)";

}  // namespace

std::string HorizontalBars(const std::string& label, const std::vector<BarRow>& rows) {
    constexpr int kLabel = 230, kBars = 360, kRow = 22, kWidth = 780;
    double max = 0;
    for (const auto& r : rows) max = std::max(max, r.value + r.value2);
    const int height = static_cast<int>(rows.size()) * kRow + 8;
    std::string s = "<svg class=\"chart\" role=\"img\" aria-label=\"" + HtmlEscape(label) +
                    "\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
                    std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " +
                    std::to_string(height) + "\">";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const BarRow& r = rows[i];
        const int y = static_cast<int>(i) * kRow + 4;
        const double w1 = max > 0 ? kBars * r.value / max : 0;
        const double w2 = max > 0 ? kBars * r.value2 / max : 0;
        s += "<text x=\"" + std::to_string(kLabel - 6) + "\" y=\"" + std::to_string(y + 14) +
             "\" text-anchor=\"end\">" + HtmlEscape(r.label) + "</text>";
        s += "<rect class=\"bar\" x=\"" + std::to_string(kLabel) + "\" y=\"" + std::to_string(y) +
             "\" width=\"" + Fixed(w1, 1) + "\" height=\"" + std::to_string(kRow - 6) +
             "\"><title>" + HtmlEscape(r.label + ": " + r.text) + "</title></rect>";
        if (w2 > 0) {
            s += "<rect class=\"bar2\" x=\"" + Fixed(kLabel + w1, 1) + "\" y=\"" +
                 std::to_string(y) + "\" width=\"" + Fixed(w2, 1) + "\" height=\"" +
                 std::to_string(kRow - 6) + "\"/>";
        }
        s += "<text x=\"" + Fixed(kLabel + w1 + w2 + 6, 1) + "\" y=\"" + std::to_string(y + 14) +
             "\">" + HtmlEscape(r.text) + "</text>";
    }
    return s + "</svg>\n";
}

std::string PageHead(const std::string& title) {
    std::string s =
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">\n<title>" +
        HtmlEscape(title) + "</title>\n<style>";
    s += kStyle;
    return s + "</style></head><body>\n<h1>" + HtmlEscape(title) + "</h1>\n";
}

std::string CardHtml(const std::string& value, const std::string& label) {
    return "<div class=\"card\"><b>" + HtmlEscape(value) + "</b><span>" + HtmlEscape(label) +
           "</span></div>";
}

namespace {

// Vertical bars over time, one per bucket, with the first and last dates and the maximum.
std::string TimeBars(const ReliabilityReport& r) {
    constexpr int kWidth = 720, kHeight = 170, kLeft = 40, kBottom = 22, kTop = 10;
    const int plot_w = kWidth - kLeft - 10, plot_h = kHeight - kBottom - kTop;
    int max = 1;
    for (const auto& b : r.buckets) max = std::max(max, b.interruptions);
    const double bw = static_cast<double>(plot_w) / static_cast<double>(r.buckets.size());
    std::string s =
        "<svg class=\"chart\" role=\"img\" aria-label=\"interruptions over time\" "
        "width=\"" +
        std::to_string(kWidth) + "\" height=\"" + std::to_string(kHeight) + "\" viewBox=\"0 0 " +
        std::to_string(kWidth) + " " + std::to_string(kHeight) + "\">";
    const int base = kTop + plot_h;
    s += "<line class=\"axis\" x1=\"" + std::to_string(kLeft) + "\" y1=\"" + std::to_string(base) +
         "\" x2=\"" + std::to_string(kLeft + plot_w) + "\" y2=\"" + std::to_string(base) + "\"/>";
    s += "<text x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + std::to_string(kTop + 10) +
         "\" text-anchor=\"end\">" + std::to_string(max) + "</text>";
    s += "<text x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + std::to_string(base) +
         "\" text-anchor=\"end\">0</text>";
    for (std::size_t i = 0; i < r.buckets.size(); ++i) {
        const Bucket& b = r.buckets[i];
        const double h = static_cast<double>(plot_h) * b.interruptions / max;
        const double x = kLeft + bw * static_cast<double>(i);
        s += "<rect class=\"bar\" x=\"" + Fixed(x + 1, 1) + "\" y=\"" + Fixed(base - h, 1) +
             "\" width=\"" + Fixed(std::max(bw - 2, 1.0), 1) + "\" height=\"" + Fixed(h, 1) +
             "\"><title>" + HtmlEscape(Date(b.start)) + ": " + std::to_string(b.interruptions) +
             "</title></rect>";
    }
    s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kHeight - 4) + "\">" +
         HtmlEscape(Date(r.buckets.front().start)) + "</text>";
    s += "<text x=\"" + std::to_string(kLeft + plot_w) + "\" y=\"" + std::to_string(kHeight - 4) +
         "\" text-anchor=\"end\">" + HtmlEscape(Date(r.buckets.back().start)) + "</text>";
    return s + "</svg>\n";
}

// An HTML table: column names with their alignment (true: a number, right-aligned), rows of
// text (escaped here) or of trusted markup, an optional total row.
class HtmlTable {
  public:
    HtmlTable(std::string id, std::vector<std::pair<std::string, bool>> columns)
        : id_(std::move(id)), columns_(std::move(columns)) {}
    void Add(const std::vector<std::string>& texts) { body_ += Row(texts, true); }
    void AddMarkup(const std::vector<std::string>& html) { body_ += Row(html, false); }
    void Total(const std::vector<std::string>& texts) { foot_ = Row(texts, true); }
    std::string Render() const {
        std::string s = "<table id=\"" + HtmlEscape(id_) + "\"><thead><tr>";
        for (const auto& [name, numeric] : columns_)
            s += std::string(numeric ? "<th class=\"n\">" : "<th>") + HtmlEscape(name) + "</th>";
        s += "</tr></thead><tbody>" + body_ + "</tbody>";
        if (!foot_.empty()) s += "<tfoot>" + foot_ + "</tfoot>";
        return s + "</table>\n";
    }

  private:
    std::string Row(const std::vector<std::string>& cells, bool escape) const {
        std::string s = "<tr>";
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool numeric = i < columns_.size() && columns_[i].second;
            s += std::string(numeric ? "<td class=\"n\">" : "<td>") +
                 (escape ? HtmlEscape(cells[i]) : cells[i]) + "</td>";
        }
        return s + "</tr>";
    }

    std::string id_;
    std::vector<std::pair<std::string, bool>> columns_;
    std::string body_;
    std::string foot_;
};

std::string Optional(const std::optional<double>& v, int precision, const std::string& none) {
    return v ? Fixed(*v, precision) : none;
}

std::string Tag(bool measured) {
    return measured ? "<span class=\"tag\">measured</span>"
                    : "<span class=\"tag assumed\">assumed</span>";
}

std::string CausesSection(const ReliabilityReport& r) {
    std::string s = "<h2 id=\"interruptions\">Interruptions by cause</h2>\n";
    s += "<p>Runs that failed for a reason other than the job's own bug (outcome blamed, "
         "unexplained or other), by the cause autoheal decided, in the shape of Llama 3's "
         "Table 5.</p>\n";
    if (r.causes.empty()) {
        s += "<p class=\"empty\">No interruptions in the window.</p>\n";
    } else {
        HtmlTable t("causes", {{"Component", false},
                               {"Category", false},
                               {"Cause", false},
                               {"Interruptions", true},
                               {"% of interruptions", true},
                               {"Node-hours lost", true},
                               {"Restart node-hours", true}});
        std::vector<BarRow> bars;
        for (const CauseRow& c : r.causes) {
            t.Add({c.component, c.category, c.cause, std::to_string(c.interruptions),
                   Fixed(c.percent, 1), Fixed(c.lost_node_hours, 1),
                   Fixed(c.restart_node_hours, 1)});
            bars.push_back(
                BarRow{c.component, static_cast<double>(c.interruptions), 0,
                       std::to_string(c.interruptions) + " (" + Fixed(c.percent, 1) + "%)"});
        }
        t.Total({"Total", "", "", std::to_string(r.interruptions), "100.0",
                 Fixed(r.lost_node_hours, 1), Fixed(r.restart_node_hours, 1)});
        s += t.Render() + HorizontalBars("interruptions by cause", bars);
    }
    s += "<p>Not counted as interruptions: " + std::to_string(r.own) +
         " run(s) that failed of the job's own error (" + Fixed(r.own_node_hours, 1) +
         " node-hours), " + std::to_string(r.ok) + " run(s) that ended well.</p>\n";
    if (!r.categories.empty()) {
        HtmlTable t("categories", {{"Category", false}, {"Interruptions", true}, {"%", true}});
        for (const CategoryRow& c : r.categories)
            t.Add({c.category, std::to_string(c.interruptions), Fixed(c.percent, 1)});
        s += t.Render();
    }
    s += "<h2 id=\"over-time\">Interruptions over time</h2>\n<p>Per " +
         std::string(r.bucket_seconds == 86400 ? "day" : FormatDuration(r.bucket_seconds)) +
         ", by the time the interrupted run ended.</p>\n" + TimeBars(r);
    return s;
}

std::string LostSection(const ReliabilityReport& r) {
    std::string s = "<h2 id=\"hours-lost\">Hours lost by cause</h2>\n";
    s += "<p><b>Node-hours lost</b> = nodes &times; (end &minus; start) of each interrupted run: "
         "an upper bound of the work lost, which is only what ran since the last checkpoint. "
         "<b>Restart node-hours</b> = nodes &times; (next run's start &minus; failed run's end), "
         "where the job was requeued and its next run is recorded (blue: lost, orange: "
         "restart).</p>\n";
    if (r.causes.empty()) return s + "<p class=\"empty\">No interruptions in the window.</p>\n";
    std::vector<BarRow> bars;
    for (const CauseRow& c : r.causes) {
        bars.push_back(BarRow{
            c.component, c.lost_node_hours, c.restart_node_hours,
            Fixed(c.lost_node_hours, 1) + " + " + Fixed(c.restart_node_hours, 1) + " node-h"});
    }
    return s + HorizontalBars("node-hours lost by cause", bars);
}

std::string MtbfSection(const ReliabilityReport& r) {
    HtmlTable t("mtbf-table", {{"Figure", false}, {"Value", true}, {"How", false}});
    t.Add({"Window", Fixed(r.window_hours, 1) + " h", "until − since"});
    t.Add({"Interruptions", std::to_string(r.interruptions),
           std::to_string(r.blamed) + " blamed, " + std::to_string(r.unexplained) +
               " unexplained, " + std::to_string(r.other) + " other"});
    t.Add({"MTBF (cluster)", Optional(r.mtbf_hours, 2, "no failures") + " h",
           "window hours / interruptions"});
    t.Add(
        {"Node-hours run", Fixed(r.node_hours, 1), "Σ nodes × (end − start) of the window's runs"});
    t.Add({"MTBF per node", Optional(r.node_mtbf_hours, 1, "no failures") + " h",
           "node-hours / interruptions"});
    t.Add({"Failure rate r",
           r.ettr.too_few.empty()
               ? Fixed(r.ettr.rate_per_node_hour * 1000 * 24, 3) + " /1000 node-days"
               : "not measured",
           r.ettr.too_few.empty() ? "interruptions / node-hours" : "too few runs or node-hours"});
    return "<h2 id=\"mtbf\">Mean time between failures</h2>\n" + t.Render();
}

std::string OffendersSection(const ReliabilityReport& r) {
    std::string s =
        "<h2 id=\"offenders\">Repeat offenders</h2>\n<p>Named by two or more "
        "node-level incidents in the window (" +
        std::to_string(r.node_incidents) +
        " counted; the job's own errors left out).</p>\n<h3>Nodes</h3>\n";
    if (r.node_offenders.empty()) {
        s += "<p class=\"empty\">No node was named twice.</p>\n";
    } else {
        HtmlTable t("node-offenders", {{"Node", false},
                                       {"Incidents", true},
                                       {"Causes", false},
                                       {"First", false},
                                       {"Last", false}});
        for (const NodeOffender& n : r.node_offenders) {
            t.Add({n.node, std::to_string(n.incidents), n.causes, FormatTime(n.first),
                   FormatTime(n.last)});
        }
        s += t.Render();
    }
    s += "<h3>GPUs</h3>\n";
    if (r.gpu_offenders.empty()) return s + "<p class=\"empty\">No GPU was named twice.</p>\n";
    HtmlTable t("gpu-offenders", {{"Serial", false},
                                  {"Node", false},
                                  {"PCI id", false},
                                  {"Incidents", true},
                                  {"Causes", false},
                                  {"Last", false}});
    for (const GpuOffender& g : r.gpu_offenders) {
        t.Add({g.serial.empty() ? "unknown" : g.serial, g.nodes, g.pci, std::to_string(g.incidents),
               g.causes, FormatTime(g.last)});
    }
    return s + t.Render();
}

std::string EttrSection(const ReliabilityReport& r) {
    const EttrEstimate& e = r.ettr;
    std::string s = "<h2 id=\"ettr\">Effective training time ratio</h2>\n";
    s += "<p>For a job of N nodes: ETTR &asymp; 1 &minus; N&middot;r&middot;(u<sub>0</sub> + "
         "&Delta;t/2), the share of its allocation spent on useful training when each failure "
         "costs the restart overhead u<sub>0</sub> and, on average, half a checkpoint interval "
         "&Delta;t of work. Counting the time spent writing checkpoints, it loses "
         "C/&Delta;t more; the Young/Daly interval &Delta;t* = &radic;(2&middot;C&middot;M) "
         "maximises that, M = 1/(N&middot;r) being the job's MTBF.</p>\n";
    if (!e.too_few.empty()) {
        return s +
               "<p class=\"empty\" id=\"ettr-too-few\">Not estimated: " + HtmlEscape(e.too_few) +
               ".</p>\n";
    }
    HtmlTable t("ettr-table", {{"Figure", false}, {"Value", true}, {"From", false}});
    // The last column is markup (the measured / assumed tags); everything in it is escaped here.
    auto row = [&](const std::string& name, const std::string& value, const std::string& from) {
        t.AddMarkup({HtmlEscape(name), HtmlEscape(value), from});
    };
    row("Job size N", std::to_string(e.job_nodes) + " nodes", HtmlEscape(e.job_nodes_from));
    row("Failure rate r", Fixed(e.rate_per_node_hour * 1000 * 24, 3) + " /1000 node-days",
        Tag(r.runs > 0) + " " + std::to_string(r.interruptions) + " / " + Fixed(r.node_hours, 1) +
            " node-hours");
    row("Restart overhead u₀", Seconds(e.restart_overhead),
        Tag(e.restart_overhead_measured) + " " +
            (e.restart_overhead_measured
                 ? "mean over " + std::to_string(e.restarts_measured) + " requeue(s)"
                 : std::string("no requeue followed by a recorded run")));
    row("Checkpoint interval Δt", Seconds(e.ckpt_interval), "--ckpt-interval");
    row("Checkpoint write time C", Seconds(e.ckpt_cost), "--ckpt-cost");
    row("Job MTBF M",
        e.job_mtbf_hours ? Fixed(*e.job_mtbf_hours, 2) + " h" : "no failures measured",
        "1 / (N·r)");
    row("ETTR", Fixed(e.ettr, 4), "1 − N·r·(u₀ + Δt/2), in [0, 1]");
    row("ETTR with checkpoint writes", Fixed(e.ettr_with_ckpt_cost, 4),
        "1 − C/Δt − N·r·(u₀ + Δt/2)");
    row("Optimal interval Δt*",
        e.optimal_interval ? Seconds(*e.optimal_interval) : "none: no failures measured",
        "Young/Daly √(2·C·M)");
    row("ETTR with checkpoint writes at Δt*",
        e.ettr_at_optimum ? Fixed(*e.ettr_at_optimum, 4) : "-", "");
    return s + t.Render();
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string ReportHtml(const ReliabilityReport& r, const std::string& more) {
    const ReportOptions& o = r.options;
    std::string s = PageHead("autoheal reliability report");
    s += "<p class=\"meta\">Runs that ended from " + HtmlEscape(FormatTime(o.since)) + " to " +
         HtmlEscape(FormatTime(o.until)) + " (" + Fixed(r.window_hours / 24, 1) +
         " days); generated " + HtmlEscape(FormatTime(o.generated_at)) + ".</p>\n";
    s += "<div class=\"cards\">" + CardHtml(std::to_string(r.runs), "job runs decided") +
         CardHtml(std::to_string(r.interruptions), "interruptions") +
         CardHtml(std::to_string(r.own), "own failures (not counted)") +
         CardHtml(r.mtbf_hours ? Fixed(*r.mtbf_hours, 1) + " h" : "-", "MTBF (cluster)") +
         CardHtml(Fixed(r.lost_node_hours + r.restart_node_hours, 1),
                  "node-hours lost + restarting") +
         CardHtml(r.ettr.too_few.empty() ? Fixed(r.ettr.ettr, 3) : "-",
                  "ETTR, " + std::to_string(r.ettr.job_nodes) + " nodes") +
         "</div>\n";
    if (!r.notes.empty()) {
        s += "<div class=\"notes\" id=\"notes\"><ul>";
        for (const std::string& n : r.notes) s += "<li>" + HtmlEscape(n) + "</li>";
        s += "</ul></div>\n";
    }
    s += CausesSection(r) + LostSection(r) + MtbfSection(r) + OffendersSection(r) + EttrSection(r);
    s += more;
    s += "<p class=\"meta\">Formulas and their limits: docs/report.md in autoheal.</p>\n"
         "</body></html>\n";
    return s;
}

std::string ReportJson(const ReliabilityReport& r) {
    using nlohmann::json;
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    json causes = json::array();
    for (const CauseRow& c : r.causes) {
        causes.push_back({{"cause", c.cause},
                          {"component", c.component},
                          {"category", c.category},
                          {"interruptions", c.interruptions},
                          {"percent", c.percent},
                          {"lost_node_hours", c.lost_node_hours},
                          {"restart_node_hours", c.restart_node_hours}});
    }
    json categories = json::array();
    for (const CategoryRow& c : r.categories) {
        categories.push_back(
            {{"category", c.category}, {"interruptions", c.interruptions}, {"percent", c.percent}});
    }
    json buckets = json::array();
    for (const Bucket& b : r.buckets)
        buckets.push_back({{"start", b.start}, {"interruptions", b.interruptions}});
    json nodes = json::array();
    for (const NodeOffender& n : r.node_offenders) {
        nodes.push_back({{"node", n.node},
                         {"incidents", n.incidents},
                         {"causes", n.causes},
                         {"first", n.first},
                         {"last", n.last}});
    }
    json gpus = json::array();
    for (const GpuOffender& g : r.gpu_offenders) {
        gpus.push_back({{"serial", g.serial},
                        {"nodes", g.nodes},
                        {"pci", g.pci},
                        {"incidents", g.incidents},
                        {"causes", g.causes},
                        {"first", g.first},
                        {"last", g.last}});
    }
    const EttrEstimate& e = r.ettr;
    json out = {
        {"since", r.options.since},
        {"until", r.options.until},
        {"runs", r.runs},
        {"outcomes",
         {{"ok", r.ok},
          {"own", r.own},
          {"blamed", r.blamed},
          {"unexplained", r.unexplained},
          {"other", r.other}}},
        {"interruptions", r.interruptions},
        {"window_hours", r.window_hours},
        {"node_hours", r.node_hours},
        {"own_node_hours", r.own_node_hours},
        {"mtbf_hours", opt(r.mtbf_hours)},
        {"node_mtbf_hours", opt(r.node_mtbf_hours)},
        {"lost_node_hours", r.lost_node_hours},
        {"restart_node_hours", r.restart_node_hours},
        {"causes", causes},
        {"categories", categories},
        {"bucket_seconds", r.bucket_seconds},
        {"buckets", buckets},
        {"node_offenders", nodes},
        {"gpu_offenders", gpus},
        {"ettr",
         {{"too_few", e.too_few.empty() ? json(nullptr) : json(e.too_few)},
          {"job_nodes", e.job_nodes},
          {"job_nodes_from", e.job_nodes_from},
          {"rate_per_node_hour", e.rate_per_node_hour},
          {"restart_overhead_seconds", e.restart_overhead},
          {"restart_overhead_measured", e.restart_overhead_measured},
          {"restarts_measured", e.restarts_measured},
          {"ckpt_interval_seconds", e.ckpt_interval},
          {"ckpt_cost_seconds", e.ckpt_cost},
          {"job_mtbf_hours", opt(e.job_mtbf_hours)},
          {"ettr", e.too_few.empty() ? json(e.ettr) : json(nullptr)},
          {"ettr_with_ckpt_cost", e.too_few.empty() ? json(e.ettr_with_ckpt_cost) : json(nullptr)},
          {"optimal_interval_seconds", opt(e.optimal_interval)},
          {"ettr_at_optimum", opt(e.ettr_at_optimum)}}},
        {"notes", r.notes},
    };
    // Node names and causes are stored verbatim: replace bytes that are not UTF-8.
    return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace autoheal::cli
