#include "simulate_output.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "report.h"

namespace autoheal::cli {
namespace {

std::string Secs(double s) {
    return s < 60 ? Fixed(s, s < 10 ? 2 : 0) + "s" : FormatDuration(static_cast<std::int64_t>(s));
}

double Lost(const sim::ModeResult& m) {
    double h = 0;
    for (const auto& [c, o] : m.by_cause) h += o.gpu_hours_lost;
    return h;
}

int MaxOut(const sim::ModeResult& m) {
    int most = 0;
    for (int d : m.out_of_service_by_day) most = std::max(most, d);
    return most;
}

// The side-by-side rows: label, autoheal, slurm.
std::vector<std::vector<std::string>> Rows(const sim::SimResult& r) {
    const sim::ModeResult& a = r.autoheal;
    const sim::ModeResult& s = r.slurm;
    auto i = [](int v) { return std::to_string(v); };
    return {{"ETTR", Fixed(a.ettr, 4), Fixed(s.ettr, 4)},
            {"interruptions", i(a.interruptions), i(s.interruptions)},
            {"GPU-hours lost", Fixed(Lost(a), 0), Fixed(Lost(s), 0)},
            {"requeued without a person", i(a.automatic_requeues), i(s.automatic_requeues)},
            {"handled by a person", i(a.human_interventions), i(s.human_interventions)},
            {"nodes taken out", i(a.node_actions), i(s.node_actions)},
            {"false node actions", i(a.false_node_actions), "-"},
            {"RMA tickets", i(a.rmas), "-"},
            {"breaker trips", i(a.breaker_trips), "-"},
            {"most nodes out of service", i(MaxOut(a)), i(MaxOut(s))},
            {"waiting for nodes", Secs(a.waiting_for_nodes_seconds),
             Secs(s.waiting_for_nodes_seconds)}};
}

std::string ScenarioLine(const sim::SimResult& r) {
    const sim::Scenario& s = r.scenario;
    return std::to_string(s.nodes) + " nodes x " + std::to_string(s.gpus_per_node) + " GPUs (+" +
           std::to_string(s.spare_nodes) + " spare), " + Fixed(s.span_seconds / 86400, 1) +
           " days, faults at " + Fixed(s.interruptions, 0) + " interruptions per " +
           std::to_string(s.reference_gpus) + " GPUs per " +
           Fixed(s.counts_span_seconds / 86400, 0) + " days, seed " + std::to_string(s.seed) +
           " (" + s.source + ")";
}

}  // namespace

std::string SimulationText(const sim::SimResult& r) {
    std::string s = "autoheal simulate: " + ScenarioLine(r) + "\n\n";
    Table t({"", "autoheal", "slurm + a person"});
    for (auto& row : Rows(r)) t.Add(row);
    char* buf = nullptr;
    std::size_t len = 0;
    std::FILE* mem = open_memstream(&buf, &len);
    t.Print(mem);
    std::fputc('\n', mem);
    Table causes({"cause", "n", "GPU-h lost autoheal", "GPU-h lost slurm", "autoheal decided"});
    for (const sim::Cause& c : r.scenario.causes) {
        auto a = r.autoheal.by_cause.find(c.name);
        auto b = r.slurm.by_cause.find(c.name);
        auto v = r.verdicts.find(c.name);
        causes.Add(
            {c.name, a == r.autoheal.by_cause.end() ? "0" : std::to_string(a->second.interruptions),
             a == r.autoheal.by_cause.end() ? "0" : Fixed(a->second.gpu_hours_lost, 0),
             b == r.slurm.by_cause.end() ? "0" : Fixed(b->second.gpu_hours_lost, 0),
             v == r.verdicts.end() ? "-" : v->second.decided_cause + ": " + v->second.actions});
    }
    causes.Print(mem);
    std::fputc('\n', mem);
    Table stages({"stage", "seconds", "source"}, 110);
    stages.Add({"(decision here)", Fixed(r.DecisionMedianMs() / 1000, 3),
                "measured in this run: the real controller steps' wall time, median of " +
                    std::to_string(r.decision_ms.size())});
    for (const std::string& name : sim::StageNames()) {
        const sim::Stage& st = r.scenario.stages.at(name);
        stages.Add({name, Fixed(st.seconds, st.seconds < 10 ? 2 : 0), st.source});
    }
    stages.Print(mem);
    std::fclose(mem);
    s += std::string(buf, len);
    std::free(buf);
    s += "\nnodes out of service, most each day (autoheal): ";
    for (int d : r.autoheal.out_of_service_by_day) s += std::to_string(d) + " ";
    s += "\nsimulated in " + Fixed(r.wall_seconds, 1) + " s; see docs/report.md (Simulation)\n";
    return s;
}

std::string SimulationJson(const sim::SimResult& r) {
    using nlohmann::json;
    auto mode = [](const sim::ModeResult& m) {
        json causes = json::object();
        for (const auto& [c, o] : m.by_cause) {
            causes[c] = {{"interruptions", o.interruptions},
                         {"gpu_hours_lost", o.gpu_hours_lost},
                         {"human", o.human}};
        }
        return json{{"ettr", m.ettr},
                    {"interruptions", m.interruptions},
                    {"gpu_hours_lost", Lost(m)},
                    {"automatic_requeues", m.automatic_requeues},
                    {"human_interventions", m.human_interventions},
                    {"node_actions", m.node_actions},
                    {"false_node_actions", m.false_node_actions},
                    {"rmas", m.rmas},
                    {"breaker_trips", m.breaker_trips},
                    {"exclusions_cleared", m.exclusions_cleared},
                    {"waiting_for_nodes_seconds", m.waiting_for_nodes_seconds},
                    {"out_of_service_by_day", m.out_of_service_by_day},
                    {"by_cause", causes}};
    };
    json stages = json::object();
    for (const auto& [name, st] : r.scenario.stages) {
        stages[name] = {{"seconds", st.seconds}, {"source", st.source}};
    }
    stages["decision_measured_here"] = {{"seconds", r.DecisionMedianMs() / 1000},
                                        {"source", "the real steps' wall time, median"}};
    json verdicts = json::object();
    for (const auto& [c, v] : r.verdicts) {
        verdicts[c] = {{"cause", v.decided_cause}, {"rule", v.rule}, {"actions", v.actions}};
    }
    const sim::Scenario& sc = r.scenario;
    json out = {{"scenario",
                 {{"source", sc.source},
                  {"nodes", sc.nodes},
                  {"gpus_per_node", sc.gpus_per_node},
                  {"spare_nodes", sc.spare_nodes},
                  {"span_days", sc.span_seconds / 86400},
                  {"interruptions", sc.interruptions},
                  {"reference_gpus", sc.reference_gpus},
                  {"seed", sc.seed}}},
                {"stages", stages},
                {"autoheal", mode(r.autoheal)},
                {"slurm", mode(r.slurm)},
                {"verdicts", verdicts},
                {"decisions", r.decision_ms.size()},
                {"decision_ms_median", r.DecisionMedianMs()},
                {"wall_seconds", r.wall_seconds}};
    return out.dump(2) + "\n";
}

std::string SimulationHtml(const sim::SimResult& r) {
    std::string s = PageHead("autoheal simulate");
    s += "<p class=\"meta\">" + HtmlEscape(ScenarioLine(r)) + "</p>\n<div class=\"cards\">" +
         CardHtml(Fixed(r.autoheal.ettr, 4), "ETTR with autoheal") +
         CardHtml(Fixed(r.slurm.ettr, 4), "ETTR, Slurm + a person") +
         CardHtml(std::to_string(r.autoheal.interruptions), "interruptions") +
         CardHtml(Fixed(r.DecisionMedianMs(), 1) + " ms", "decision (real code, median)") +
         "</div>\n<h2>Side by side</h2>\n<table><thead><tr><th></th><th class=\"n\">autoheal</th>"
         "<th class=\"n\">slurm + a person</th></tr></thead><tbody>";
    for (const auto& row : Rows(r)) {
        s += "<tr><td>" + HtmlEscape(row[0]) + "</td><td class=\"n\">" + HtmlEscape(row[1]) +
             "</td><td class=\"n\">" + HtmlEscape(row[2]) + "</td></tr>";
    }
    s += "</tbody></table>\n<h2>GPU-hours lost by cause</h2>\n";
    std::vector<BarRow> bars;
    for (const sim::Cause& c : r.scenario.causes) {
        auto a = r.autoheal.by_cause.find(c.name);
        auto b = r.slurm.by_cause.find(c.name);
        const double ah = a == r.autoheal.by_cause.end() ? 0 : a->second.gpu_hours_lost;
        const double sl = b == r.slurm.by_cause.end() ? 0 : b->second.gpu_hours_lost;
        bars.push_back({c.name, ah, std::max(0.0, sl - ah),
                        Fixed(ah, 0) + " with autoheal, " + Fixed(sl, 0) + " without"});
    }
    s += HorizontalBars("GPU-hours lost by cause", bars);
    s += "<p class=\"meta\">Blue: lost with autoheal; orange: more lost without it.</p>\n";
    s += "<h2>Nodes out of service (most each day, autoheal)</h2>\n";
    std::vector<BarRow> days;
    for (std::size_t d = 0; d < r.autoheal.out_of_service_by_day.size(); ++d) {
        const int n = r.autoheal.out_of_service_by_day[d];
        days.push_back(
            {"day " + std::to_string(d + 1), static_cast<double>(n), 0, std::to_string(n)});
    }
    s += HorizontalBars("nodes out of service by day", days);
    s += "<h2>What the real code decided, per cause</h2>\n<table><thead><tr><th>cause</th>"
         "<th>decided</th><th>rule</th><th>actions</th></tr></thead><tbody>";
    for (const auto& [c, v] : r.verdicts) {
        s += "<tr><td>" + HtmlEscape(c) + "</td><td>" + HtmlEscape(v.decided_cause) + "</td><td>" +
             HtmlEscape(v.rule) + "</td><td>" + HtmlEscape(v.actions) + "</td></tr>";
    }
    s += "</tbody></table>\n<h2>Stages</h2>\n<table><thead><tr><th>stage</th><th class=\"n\">"
         "seconds</th><th>source</th></tr></thead><tbody>";
    s += "<tr><td>(decision here)</td><td class=\"n\">" + Fixed(r.DecisionMedianMs() / 1000, 3) +
         "</td><td>the real steps' wall time in this run (median)</td></tr>";
    for (const auto& [name, st] : r.scenario.stages) {
        s += "<tr><td>" + HtmlEscape(name) + "</td><td class=\"n\">" + Fixed(st.seconds, 2) +
             "</td><td>" + HtmlEscape(st.source) + "</td></tr>";
    }
    s += "</tbody></table>\n<p class=\"meta\">What the figures mean and assume: docs/report.md "
         "(Simulation) in autoheal.</p>\n</body></html>\n";
    return s;
}

}  // namespace autoheal::cli
