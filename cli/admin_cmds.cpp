// autoheal status | incidents | node | resume | tickets: what autoheal holds, what it saw and did,
// and the admin's hand on it. Tables for people, --json for scripts. They read the incident store
// under state_dir and ask slurmctld for node states (status, node, resume).
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "autoheal/core/submit_policy.h"
#include "autoheal/diag/taxonomy.h"
#include "autoheal/remediation/agent_heartbeat.h"
#include "autoheal/remediation/controller.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/metrics.h"
#include "autoheal/remediation/settings.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "cli_common.h"
#include "telemetry_report.h"

namespace autoheal::cli {
namespace {

using remediation::ActionRow;
using remediation::IncidentQuery;
using remediation::IncidentRow;
using remediation::NodeInfo;
using remediation::SlurmAdapter;
using remediation::TicketRow;

namespace fs = std::filesystem;

std::int64_t Now() { return static_cast<std::int64_t>(std::time(nullptr)); }

void PrintJson(const nlohmann::json& j) {
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// The first evidence line of an incident ("" when none).
std::string FirstEvidence(const std::string& evidence_json) {
    auto j = nlohmann::json::parse(evidence_json, nullptr, false);
    if (!j.is_array()) return "";
    for (const auto& e : j) {
        if (e.is_object() && e.contains("text") && e["text"].is_string()) {
            return e["text"].get<std::string>();
        }
        if (e.is_object() && e.contains("switch") && e["switch"].is_string()) {
            return "switch " + e["switch"].get<std::string>();
        }
    }
    return "";
}

nlohmann::json EvidenceOf(const std::string& evidence_json) {
    auto j = nlohmann::json::parse(evidence_json, nullptr, false);
    return j.is_discarded() ? nlohmann::json::array() : j;
}

nlohmann::json IncidentJson(const IncidentRow& r, const std::vector<ActionRow>& actions) {
    nlohmann::json a = nlohmann::json::array();
    for (const ActionRow& x : actions) {
        a.push_back({{"time", x.time},
                     {"action", x.action},
                     {"target", x.target},
                     {"outcome", x.outcome},
                     {"detail", x.detail}});
    }
    return {{"id", r.id},
            {"time", r.time},
            {"job", r.job},
            {"node", r.node},
            {"gpu", r.gpu},
            {"gpu_serial", r.gpu_serial},
            {"cause", r.cause},
            {"rule", r.rule},
            {"confidence", r.confidence},
            {"evidence", EvidenceOf(r.evidence_json)},
            {"actions", a}};
}

nlohmann::json TicketJson(const TicketRow& t) {
    return {{"id", t.id},
            {"incident", t.incident_id},
            {"kind", t.kind},
            {"node", t.node},
            {"opened", t.opened},
            {"state", t.state},
            {"attempts", t.attempts},
            {"next_attempt", t.next_attempt},
            {"sink", t.sink},
            {"last_error", t.last_error},
            {"key", t.dedup_key}};
}

// Actions grouped by incident id (the most recent kHistoryLimit actions since `since`).
std::map<std::int64_t, std::vector<ActionRow>> ActionsByIncident(remediation::IncidentStore& store,
                                                                 std::int64_t since,
                                                                 const std::string& target) {
    std::map<std::int64_t, std::vector<ActionRow>> out;
    if (auto actions = store.Actions(since, target)) {
        for (const ActionRow& a : *actions) out[a.incident_id].push_back(a);
    }
    for (auto& [id, list] : out) std::reverse(list.begin(), list.end());  // oldest first
    return out;
}

std::string ActionWords(const std::vector<ActionRow>& actions) {
    std::string s;
    for (const ActionRow& a : actions) {
        const bool done = diag::ParseOutcome(a.outcome) == diag::Outcome::kDone;
        s += (s.empty() ? "" : ",") + a.action + (done ? "" : "(" + a.outcome + ")");
    }
    return s;
}

struct Setup {
    remediation::Settings settings;
    std::unique_ptr<remediation::IncidentStore> store;
};

std::optional<Setup> SetUp(const char* command, bool create_store = false) {
    auto settings = LoadSettingsOrComplain(command);
    if (!settings) return std::nullopt;
    auto store = OpenStoreOrComplain(command, settings->core, create_store);
    if (!store) return std::nullopt;
    return Setup{std::move(*settings), std::move(store)};
}

constexpr const char* kStatusUsage =
    "usage: autoheal status [--json]\n"
    "  Nodes autoheal holds out of service (why, since when, their tickets), the breaker,\n"
    "  quarantined nodes, tickets not delivered yet and each node agent's last heartbeat.\n";

constexpr const char* kIncidentsUsage =
    "usage: autoheal incidents [--since 7d] [--until DATE] [--node NAME] [--cause CAUSE]\n"
    "                          [--job ID] [--jobs] [--limit N] [--json]\n"
    "  Incidents newest first with the actions taken. --since/--until take a duration back\n"
    "  from now (30m, 12h, 7d) or a date (2026-11-01). --jobs adds each job's own verdict.\n";

// The most GPU power and temperature rows `autoheal node` prints (--json: all in the window).
constexpr std::size_t kNodeTelemetryRows = 16;

constexpr const char* kNodeUsage =
    "usage: autoheal node NAME [--since 90d] [--json]\n"
    "  A node's state, incidents, actions and tickets, its GPUs by serial number with\n"
    "  their history on any node, and its GPUs' power and temperature in each job.\n";

constexpr const char* kResumeUsage =
    "usage: autoheal resume NODE --reason TEXT [--force]\n"
    "  Returns a node autoheal took out of service (after its repair) and lifts its\n"
    "  quarantine. A node drained by someone else is refused unless --force.\n";

constexpr const char* kTicketsUsage =
    "usage: autoheal tickets [--all] [--deliver] [--json]\n"
    "  Tickets not delivered yet (--all: every ticket), with attempts and the last error.\n"
    "  --deliver tries the due ones now.\n";

nlohmann::json AgentsJson(const std::vector<remediation::HeartbeatRecord>& agents) {
    nlohmann::json a = nlohmann::json::array();
    for (const remediation::HeartbeatRecord& h : agents) {
        a.push_back({{"node", h.node},
                     {"heartbeat", h.time},
                     {"pid", h.pid},
                     {"started", h.started},
                     {"faults", h.faults},
                     {"last_fault", h.last_fault},
                     {"last_fault_time", h.last_fault_time}});
    }
    return a;
}

// autoheal-agent's heartbeats (state_dir/jobs/agents/<node>.json), one line per node.
void PrintAgents(const std::vector<remediation::HeartbeatRecord>& agents, std::int64_t now) {
    std::printf("agents: %zu\n", agents.size());
    if (agents.empty()) return;
    Table t({"NODE", "LAST HEARTBEAT", "AGO", "UP SINCE", "FAULTS", "LAST FAULT"});
    for (const remediation::HeartbeatRecord& h : agents) {
        t.Add({h.node, FormatTime(h.time), FormatDuration(now - h.time), FormatTime(h.started),
               std::to_string(h.faults),
               h.last_fault.empty() ? "-" : h.last_fault + " " + FormatTime(h.last_fault_time)});
    }
    t.Print(stdout);
}

}  // namespace

int Status(const std::vector<std::string>& argv) {
    auto args = ParseArgs("status", argv, {}, {"--json"}, kStatusUsage);
    if (!args) return 2;
    if (!args->positional.empty()) {
        std::fprintf(stderr, "autoheal: status: unexpected argument '%s'\n",
                     args->positional[0].c_str());
        return 2;
    }
    auto s = SetUp("status");
    if (!s) return 1;
    const std::int64_t now = Now();
    SlurmAdapter slurm(s->settings.remediation.slurm_conf);
    auto nodes = slurm.ListNodes();
    if (!nodes) {
        std::fprintf(stderr, "autoheal: status: cannot read node states: %s\n",
                     nodes.error().c_str());
        return 1;
    }
    auto tickets = s->store->Tickets(false);
    std::vector<TicketRow> all_tickets = tickets ? *tickets : std::vector<TicketRow>{};
    const int taken = remediation::NodesTakenOut(*nodes);
    const int limit =
        remediation::BreakerLimit(s->settings.remediation.breaker, static_cast<int>(nodes->size()));
    const bool open = taken >= limit;
    std::vector<QuarantinedNode> quarantine;
    if (auto q = ReadQuarantineFile(s->settings.core.policy.quarantine_file)) {
        for (const QuarantinedNode& n : *q) {
            if (n.until > now) quarantine.push_back(n);
        }
    }
    int undelivered = 0;
    for (const TicketRow& t : all_tickets) undelivered += t.state != "delivered" ? 1 : 0;
    const std::vector<remediation::HeartbeatRecord> agents =
        remediation::ReadHeartbeats(s->settings.core.state_dir);

    nlohmann::json held = nlohmann::json::array();
    Table table({"NODE", "STATE", "SINCE", "FOR", "REASON", "TICKETS"});
    for (const NodeInfo& n : *nodes) {
        if (!n.ReasonIsOurs() || !(n.Out() || n.reboot_pending)) continue;
        std::string words;
        nlohmann::json tj = nlohmann::json::array();
        for (const TicketRow& t : all_tickets) {
            if (t.node != n.name || t.opened + 60 < n.reason_time) continue;
            words +=
                (words.empty() ? "" : ",") + t.kind + "#" + std::to_string(t.id) + " " + t.state;
            tj.push_back(TicketJson(t));
        }
        table.Add({n.name, n.state, FormatTime(n.reason_time), FormatDuration(now - n.reason_time),
                   n.reason, words});
        held.push_back({{"node", n.name},
                        {"state", n.state},
                        {"reason", n.reason},
                        {"since", n.reason_time},
                        {"reboot_pending", n.reboot_pending},
                        {"tickets", tj}});
    }
    if (args->Has("--json")) {
        nlohmann::json q = nlohmann::json::array();
        for (const QuarantinedNode& n : quarantine) {
            q.push_back({{"node", n.node}, {"until", n.until}, {"reason", n.reason}});
        }
        PrintJson(
            {{"held", held},
             {"breaker",
              {{"open", open}, {"taken_out", taken}, {"limit", limit}, {"nodes", nodes->size()}}},
             {"quarantine", q},
             {"tickets_undelivered", undelivered},
             {"agents", AgentsJson(agents)},
             {"dry_run", s->settings.remediation.dry_run}});
        return 0;
    }
    if (s->settings.remediation.dry_run)
        std::printf("mode: DRY-RUN (remediation.dry_run: actions are only logged)\n");
    std::printf("breaker: %s (%d of %d nodes held out of service by autoheal; cluster of %zu)\n",
                open ? "OPEN: new node actions are held" : "closed", taken, limit, nodes->size());
    std::printf("held by autoheal: %zu node(s)\n", held.size());
    if (!table.empty()) table.Print(stdout);
    if (!quarantine.empty()) {
        std::printf("quarantined (jobs avoid them unless they ask for them by name):\n");
        Table qt({"NODE", "UNTIL", "REASON"});
        for (const QuarantinedNode& n : quarantine) {
            qt.Add({n.node, FormatTime(n.until), n.reason});
        }
        qt.Print(stdout);
    }
    std::printf("tickets not delivered yet: %d%s\n", undelivered,
                undelivered > 0 ? " (autoheal tickets)" : "");
    PrintAgents(agents, now);
    return 0;
}

int Incidents(const std::vector<std::string>& argv) {
    auto args = ParseArgs("incidents", argv,
                          {"--since", "--until", "--node", "--cause", "--job", "--limit"},
                          {"--json", "--jobs"}, kIncidentsUsage);
    if (!args) return 2;
    if (!args->positional.empty()) {
        std::fprintf(stderr, "autoheal: incidents: unexpected argument '%s'\n",
                     args->positional[0].c_str());
        return 2;
    }
    const std::int64_t now = Now();
    IncidentQuery q;
    auto since = ParseSinceOrComplain("incidents", "--since", args->Value("--since", "7d"), now);
    if (!since) return 2;
    q.since = *since;
    if (args->values.count("--until")) {
        auto until = ParseSinceOrComplain("incidents", "--until", args->Value("--until"), now);
        if (!until) return 2;
        q.until = *until;
    }
    q.node = args->Value("--node");
    q.cause = args->Value("--cause");
    q.job = args->Value("--job");
    q.nodes_only = !args->Has("--jobs");
    if (args->values.count("--limit")) {
        // Kept alive here: `end` points into it.
        const std::string limit = args->Value("--limit");
        char* end = nullptr;
        const long n = std::strtol(limit.c_str(), &end, 10);
        if (end == nullptr || *end != '\0' || n < 1 || n > remediation::kHistoryLimit) {
            std::fprintf(stderr, "autoheal: incidents: --limit: expected 1 to %d\n",
                         remediation::kHistoryLimit);
            return 2;
        }
        q.limit = static_cast<int>(n);
    }
    auto s = SetUp("incidents");
    if (!s) return 1;
    auto rows = s->store->Incidents(q);
    if (!rows) {
        std::fprintf(stderr, "autoheal: incidents: %s\n", rows.error().c_str());
        return 1;
    }
    auto actions = ActionsByIncident(*s->store, q.since, "");
    if (args->Has("--json")) {
        nlohmann::json out = nlohmann::json::array();
        for (const IncidentRow& r : *rows) out.push_back(IncidentJson(r, actions[r.id]));
        PrintJson(out);
        return 0;
    }
    Table table({"TIME", "JOB", "NODE", "GPU", "CAUSE", "RULE", "ACTIONS", "EVIDENCE"}, 70);
    for (const IncidentRow& r : *rows) {
        table.Add({FormatTime(r.time), r.job, r.node.empty() ? "(job)" : r.node,
                   r.gpu_serial.empty() ? r.gpu : r.gpu + " sn " + r.gpu_serial, r.cause, r.rule,
                   ActionWords(actions[r.id]), FirstEvidence(r.evidence_json)});
    }
    if (table.empty()) {
        std::printf("no incidents since %s\n", FormatTime(q.since).c_str());
    } else {
        table.Print(stdout);
    }
    return 0;
}

int Node(const std::vector<std::string>& argv) {
    auto args = ParseArgs("node", argv, {"--since"}, {"--json"}, kNodeUsage);
    if (!args) return 2;
    if (args->positional.size() != 1) {
        std::fprintf(stderr, "autoheal: node: expected one node name\n%s", kNodeUsage);
        return 2;
    }
    const std::string name = args->positional[0];
    const std::int64_t now = Now();
    auto since = ParseSinceOrComplain("node", "--since", args->Value("--since", "90d"), now);
    if (!since) return 2;
    auto s = SetUp("node");
    if (!s) return 1;
    SlurmAdapter slurm(s->settings.remediation.slurm_conf);
    auto info = slurm.GetNode(name);

    IncidentQuery q;
    q.since = *since;
    q.node = name;
    auto rows = s->store->Incidents(q);
    if (!rows) {
        std::fprintf(stderr, "autoheal: node: %s\n", rows.error().c_str());
        return 1;
    }
    auto actions = ActionsByIncident(*s->store, *since, "");
    auto tickets = s->store->Tickets(false);

    // Its GPUs, by serial when known (a board keeps its history when it moves), else by slot.
    struct Gpu {
        std::string serial, pci, last_cause;
        int here = 0, anywhere = 0;
        std::int64_t last = 0;
        std::vector<std::string> other_nodes;
    };
    std::map<std::string, Gpu> gpus;
    for (const IncidentRow& r : *rows) {
        if (r.gpu.empty() && r.gpu_serial.empty()) continue;
        Gpu& g = gpus[r.gpu_serial.empty() ? "pci:" + r.gpu : r.gpu_serial];
        g.serial = r.gpu_serial;
        if (g.pci.empty()) g.pci = r.gpu;
        ++g.here;
        if (r.time > g.last) {
            g.last = r.time;
            g.last_cause = r.cause;
        }
    }
    for (auto& [key, g] : gpus) {
        if (g.serial.empty()) {
            g.anywhere = g.here;
            continue;
        }
        IncidentQuery bySerial;
        bySerial.gpu_serial = g.serial;
        if (auto all = s->store->Incidents(bySerial)) {
            g.anywhere = static_cast<int>(all->size());
            for (const IncidentRow& r : *all) {
                if (r.node != name && std::find(g.other_nodes.begin(), g.other_nodes.end(),
                                                r.node) == g.other_nodes.end()) {
                    g.other_nodes.push_back(r.node);
                }
            }
        }
    }
    auto telemetry = s->store->GpuTelemetry(*since, name);
    if (!telemetry) std::fprintf(stderr, "autoheal: node: %s\n", telemetry.error().c_str());
    int unexplained = 0;
    if (auto n = s->store->CountJobRuns(name, "unexplained",
                                        now - s->settings.remediation.lemon.window_seconds)) {
        unexplained = *n;
    }

    if (args->Has("--json")) {
        nlohmann::json j;
        j["node"] = name;
        if (info) {
            j["slurm"] = {{"state", info->state},
                          {"reason", info->reason},
                          {"reason_time", info->reason_time},
                          {"held_by_autoheal", info->ReasonIsOurs() && info->Out()}};
        } else {
            j["slurm"] = {{"error", info.error()}};
        }
        j["incidents"] = nlohmann::json::array();
        for (const IncidentRow& r : *rows) j["incidents"].push_back(IncidentJson(r, actions[r.id]));
        j["gpus"] = nlohmann::json::array();
        for (const auto& [key, g] : gpus) {
            j["gpus"].push_back({{"serial", g.serial},
                                 {"pci", g.pci},
                                 {"incidents_here", g.here},
                                 {"incidents_anywhere", g.anywhere},
                                 {"other_nodes", g.other_nodes},
                                 {"last_cause", g.last_cause},
                                 {"last_time", g.last}});
        }
        j["tickets"] = nlohmann::json::array();
        if (tickets) {
            for (const TicketRow& t : *tickets) {
                if (t.node == name) j["tickets"].push_back(TicketJson(t));
            }
        }
        j["unexplained_job_failures"] = unexplained;
        j["gpu_telemetry"] = telemetry ? NodeTelemetryJson(*telemetry) : nlohmann::json::array();
        PrintJson(j);
        return 0;
    }
    if (info) {
        std::printf("%s: %s%s\n", name.c_str(), info->state.c_str(),
                    info->reason.empty() ? ""
                                         : ("  reason: " + info->reason + " (since " +
                                            FormatTime(info->reason_time) + ")")
                                               .c_str());
    } else {
        std::printf("%s: Slurm state unknown (%s)\n", name.c_str(), info.error().c_str());
    }
    std::printf("unexplained job failures within %s: %d\n",
                FormatDuration(s->settings.remediation.lemon.window_seconds).c_str(), unexplained);
    std::printf("\nincidents since %s: %zu\n", FormatTime(*since).c_str(), rows->size());
    if (!rows->empty()) {
        Table t({"TIME", "JOB", "GPU", "CAUSE", "RULE", "ACTIONS", "EVIDENCE"}, 70);
        for (const IncidentRow& r : *rows) {
            t.Add({FormatTime(r.time), r.job, r.gpu, r.cause, r.rule, ActionWords(actions[r.id]),
                   FirstEvidence(r.evidence_json)});
        }
        t.Print(stdout);
    }
    if (!gpus.empty()) {
        std::printf("\nGPUs:\n");
        Table t({"SERIAL", "PCI", "HERE", "ANYWHERE", "ALSO_ON", "LAST_CAUSE", "LAST_SEEN"});
        for (const auto& [key, g] : gpus) {
            std::string also;
            for (const std::string& n : g.other_nodes) also += (also.empty() ? "" : ",") + n;
            t.Add({g.serial.empty() ? "(unknown)" : g.serial, g.pci, std::to_string(g.here),
                   std::to_string(g.anywhere), also, g.last_cause, FormatTime(g.last)});
        }
        t.Print(stdout);
    }
    if (telemetry) PrintNodeTelemetry(*telemetry, kNodeTelemetryRows);
    if (tickets) {
        Table t({"TICKET", "KIND", "OPENED", "STATE", "ATTEMPTS", "SINK"});
        for (const TicketRow& x : *tickets) {
            if (x.node != name) continue;
            t.Add({"#" + std::to_string(x.id), x.kind, FormatTime(x.opened), x.state,
                   std::to_string(x.attempts), x.sink});
        }
        if (!t.empty()) {
            std::printf("\ntickets:\n");
            t.Print(stdout);
        }
    }
    return 0;
}

namespace {

// Records a `resume` under the node's latest incident, or, when it has none or that incident
// already has a resume (the store keeps one row per incident, action and target), under a new
// `admin_resume` incident of its own: every resume stays in the node's history.
Result<bool> RecordResume(remediation::IncidentStore& store, const std::string& node,
                          diag::Outcome outcome, const std::string& detail) {
    const std::string action(diag::ToString(diag::Action::kResume));
    const std::string said(diag::ToString(outcome));
    IncidentQuery q;
    q.node = node;
    q.limit = 1;
    auto latest = store.Incidents(q);
    if (!latest) return MakeError(latest.error());
    if (!latest->empty()) {
        auto recorded = store.RecordAction(latest->front().id, action, node, said, detail);
        if (!recorded || *recorded) return recorded;
    }
    remediation::IncidentRecord rec;
    rec.time = Now();
    rec.node = node;
    rec.cause = diag::ToString(diag::Cause::kAdminResume);
    rec.rule = "autoheal-resume";
    auto id = store.RecordIncident(rec);
    if (!id) return MakeError(id.error());
    return store.RecordAction(*id, action, node, said, detail);
}

}  // namespace

int Resume(const std::vector<std::string>& argv) {
    auto args = ParseArgs("resume", argv, {"--reason"}, {"--force"}, kResumeUsage);
    if (!args) return 2;
    if (args->positional.size() != 1) {
        std::fprintf(stderr, "autoheal: resume: expected one node name\n%s", kResumeUsage);
        return 2;
    }
    const std::string name = args->positional[0];
    const std::string reason = args->Value("--reason");
    if (reason.empty()) {
        std::fprintf(stderr,
                     "autoheal: resume: --reason is required (what was repaired; it is kept in "
                     "the node's history)\n");
        return 2;
    }
    if (!IsValidQuarantineNodeName(name)) {
        std::fprintf(stderr, "autoheal: resume: '%s' is not a node name\n", name.c_str());
        return 2;
    }
    auto s = SetUp("resume", /*create_store=*/true);
    if (!s) return 1;
    SlurmAdapter slurm(s->settings.remediation.slurm_conf);
    auto node = slurm.GetNode(name);
    if (!node) {
        std::fprintf(stderr, "autoheal: resume: %s\n", node.error().c_str());
        return 1;
    }
    const bool force = args->Has("--force");
    if (node->Out() && !node->ReasonIsOurs() && !force) {
        std::fprintf(stderr,
                     "autoheal: resume: %s was taken out by someone else (reason: '%s'); "
                     "autoheal resumes only nodes it drained (--force to override)\n",
                     name.c_str(), node->reason.c_str());
        return 1;
    }
    const std::string before = node->reason;
    diag::Outcome outcome = diag::Outcome::kNotOut;
    if (node->Out()) {
        auto r = slurm.Resume(name, force);
        if (!r) {
            std::fprintf(stderr, "autoheal: resume: %s: %s\n", name.c_str(), r.error().c_str());
            return 1;
        }
        if (*r == SlurmAdapter::ResumeOutcome::kResumed) outcome = diag::Outcome::kDone;
    }
    auto unquarantined = RemoveFromQuarantine(s->settings.core.policy.quarantine_file, name, Now());
    if (!unquarantined) {
        std::fprintf(stderr, "autoheal: resume: quarantine: %s\n", unquarantined.error().c_str());
    }

    // Into the node's history: under its latest incident, or a new one for the resume itself.
    const struct passwd* pw = getpwuid(getuid());
    const std::string who = pw != nullptr ? pw->pw_name : std::to_string(getuid());
    const std::string detail = reason + " (by " + who + (force ? ", forced" : "") +
                               (before.empty() ? "" : "; was: " + before) + ")";
    if (auto recorded = RecordResume(*s->store, name, outcome, detail); !recorded) {
        std::fprintf(stderr, "autoheal: resume: not recorded in the history: %s\n",
                     recorded.error().c_str());
    }
    if (outcome == diag::Outcome::kDone) {
        std::printf("%s resumed%s\n", name.c_str(),
                    unquarantined && *unquarantined ? " and taken off the quarantine" : "");
    } else {
        std::printf("%s was not out of service%s\n", name.c_str(),
                    unquarantined && *unquarantined ? "; taken off the quarantine" : "");
    }
    return 0;
}

int Tickets(const std::vector<std::string>& argv) {
    auto args = ParseArgs("tickets", argv, {}, {"--all", "--deliver", "--json"}, kTicketsUsage);
    if (!args) return 2;
    if (!args->positional.empty()) {
        std::fprintf(stderr, "autoheal: tickets: unexpected argument '%s'\n",
                     args->positional[0].c_str());
        return 2;
    }
    auto s = SetUp("tickets");
    if (!s) return 1;
    bool delivered_ok = true;
    if (args->Has("--deliver")) {
        auto out = remediation::DeliverPendingTickets(s->settings, 60.0);
        std::fprintf(stderr, "autoheal: tickets: %s\n", out.summary.c_str());
        delivered_ok = out.ok;
    }
    auto tickets = s->store->Tickets(!args->Has("--all"));
    if (!tickets) {
        std::fprintf(stderr, "autoheal: tickets: %s\n", tickets.error().c_str());
        return 1;
    }
    if (args->Has("--json")) {
        nlohmann::json out = nlohmann::json::array();
        for (const TicketRow& t : *tickets) out.push_back(TicketJson(t));
        PrintJson(out);
        return delivered_ok ? 0 : 1;
    }
    if (tickets->empty()) {
        std::printf(args->Has("--all") ? "no tickets\n" : "no tickets waiting for delivery\n");
        return delivered_ok ? 0 : 1;
    }
    Table t(
        {"TICKET", "KIND", "NODE", "OPENED", "STATE", "ATTEMPTS", "NEXT_TRY", "SINK", "LAST_ERROR"},
        60);
    for (const TicketRow& x : *tickets) {
        t.Add({"#" + std::to_string(x.id), x.kind, x.node, FormatTime(x.opened), x.state,
               std::to_string(x.attempts),
               x.state == "delivered"                       ? ""
               : x.next_attempt == remediation::kNeverRetry ? "never"
                                                            : FormatTime(x.next_attempt),
               x.sink, x.last_error});
    }
    t.Print(stdout);
    return delivered_ok ? 0 : 1;
}

}  // namespace autoheal::cli

namespace autoheal::cli {

int Metrics(const std::vector<std::string>& argv) {
    constexpr const char* kUsage =
        "usage: autoheal metrics [--output FILE]\n"
        "  The cluster metrics in Prometheus text format (what the controller epilog writes to\n"
        "  remediation.metrics_dir/autoheal.prom after each decision), to stdout or to FILE\n"
        "  (replaced atomically).\n";
    auto args = ParseArgs("metrics", argv, {"--output"}, {}, kUsage);
    if (!args) return 2;
    if (!args->positional.empty()) {
        std::fprintf(stderr, "autoheal: metrics: unexpected argument '%s'\n",
                     args->positional[0].c_str());
        return 2;
    }
    auto s = SetUp("metrics");
    if (!s) return 1;
    SlurmAdapter slurm(s->settings.remediation.slurm_conf);
    auto nodes = slurm.ListNodes();
    if (!nodes) std::fprintf(stderr, "autoheal: metrics: %s\n", nodes.error().c_str());
    auto text = remediation::RenderControllerMetrics(*s->store, nodes ? &*nodes : nullptr,
                                                     s->settings.remediation, Now());
    if (!text) {
        std::fprintf(stderr, "autoheal: metrics: %s\n", text.error().c_str());
        return 1;
    }
    const std::string output = args->Value("--output");
    if (output.empty()) {
        std::fputs(text->c_str(), stdout);
        return 0;
    }
    const fs::path p(output);
    auto w = remediation::WriteMetricsFile(p.has_parent_path() ? p.parent_path().string() : ".",
                                           p.filename().string(), *text);
    if (!w) {
        std::fprintf(stderr, "autoheal: metrics: %s\n", w.error().c_str());
        return 1;
    }
    return 0;
}

}  // namespace autoheal::cli
