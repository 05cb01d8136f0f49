// Act: the plans executed (the one plan executor): the switch ticket, drains, reboots, tickets,
// node-side actions asked of the nodes, held actions, the breaker alert and quarantine.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "autoheal/core/submit_policy.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/ticket_payload.h"

namespace autoheal::remediation {
namespace {

// The switch incident first, so its nodes' plans know the ticket exists.
void ActOnSwitch(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
                 ActOutcome* out) {
    if (!d.network) return;
    IncidentRecord rec;
    rec.time = in.cluster.now;
    rec.job = env.ctx.job_id;
    rec.node = d.network->name;
    rec.cause = "network_switch_cable";
    rec.rule = "leaf-switch-correlation";
    rec.confidence = 0.8;
    nlohmann::json nodes_json = d.network->nodes;
    rec.evidence_json = nlohmann::json{{{"switch", d.network->name}, {"nodes", nodes_json}}}.dump();
    const std::int64_t bucket =
        in.cluster.now / std::max<std::int64_t>(env.rc.correlation.window_seconds, 1);
    rec.dedup_key = "switch/" + d.network->name + "/" + std::to_string(bucket);
    auto id = env.store.RecordIncident(rec);
    if (!id) return;
    if (env.rc.dry_run || d.breaker_open) {
        RecordOutcome(env, *id, "network_ticket", d.network->name,
                      env.rc.dry_run ? "dry-run" : "held", d.summary);
    } else {
        auto t = OpenTickets(env.store, *id, "network", rec.dedup_key,
                             TicketPayload("network", d, nullptr, nullptr, nullptr, {},
                                           env.ctx.job_id, env.clock.Now())
                                 .dump(),
                             env.tickets);
        RecordOutcome(env, *id, "network_ticket", d.network->name, t ? "opened" : "failed",
                      t ? d.summary : t.error());
    }
    out->done.push_back("network incident: switch " + d.network->name);
}

struct PlanContext {
    const NodePlan& plan;
    const NodeVerdict* verdict;
    const NodeReport* report;
    std::int64_t incident;
};

// An RMA or network ticket for a node, once per part, cause and 30-day period.
std::pair<std::string, std::string> OpenNodeTicket(const CtldEnv& env, const DecisionInput& in,
                                                   const JobDecision& d, const PlanContext& p,
                                                   const std::string& action) {
    const std::string kind = action == "rma_ticket" ? "rma" : "network";
    std::string part = p.plan.gpu;
    if (p.report != nullptr) {
        for (const GpuIdentity& g : p.report->gpus) {
            if (g.pci == p.plan.gpu && !g.serial.empty()) part = g.serial;
        }
    }
    const std::int64_t period = in.cluster.now / (30 * 86400);
    const std::string key = kind + "/" + p.plan.node + "/" + (part.empty() ? "node" : part) + "/" +
                            p.plan.cause + "/" + std::to_string(period);
    static const std::vector<diag::HistoryRecord> kNoHistory;
    const std::vector<diag::HistoryRecord>* hist = &kNoHistory;
    for (const auto& [n, h] : in.history) {
        if (n == p.plan.node) hist = &h;
    }
    auto t = OpenTickets(
        env.store, p.incident, kind, key,
        TicketPayload(kind, d, &p.plan, p.verdict, p.report, *hist, env.ctx.job_id, env.clock.Now())
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
        env.tickets);
    return {t ? "opened" : "failed", t ? key : t.error()};
}

// One action of a plan; returns its outcome and detail. A node-side action is asked of the node
// (listed in `out->asked`) and recorded when its result comes back.
std::optional<std::pair<std::string, std::string>> ActOnce(
    const CtldEnv& env, const DecisionInput& in, const JobDecision& d, const PlanContext& p,
    const std::string& action, ActOutcome* out) {
    const NodePlan& plan = p.plan;
    if (env.rc.dry_run) return std::pair<std::string, std::string>{"dry-run", plan.reason};
    if (action == "drain") {
        auto r = env.slurm.Drain(plan.node, plan.reason);
        if (!r) return std::pair<std::string, std::string>{"failed", r.error()};
        return std::pair<std::string, std::string>{
            *r == SlurmClient::DrainOutcome::kAdminOwned    ? "admin-owned"
            : *r == SlurmClient::DrainOutcome::kAlreadyOurs ? "already"
                                                            : "done",
            plan.reason};
    }
    if (action == "reboot") {
        auto r = env.slurm.Reboot(plan.node, plan.reason);
        if (!r) return std::pair<std::string, std::string>{"failed", r.error()};
        return std::pair<std::string, std::string>{
            *r == SlurmClient::RebootOutcome::kAdminOwned       ? "admin-owned"
            : *r == SlurmClient::RebootOutcome::kAlreadyPending ? "already"
                                                                : "done",
            plan.reason};
    }
    if (action == "reset_gpu") {
        out->asked.push_back({{plan.node, action, plan.gpu}, p.incident, plan.reason});
        return std::nullopt;
    }
    if (action == "rma_ticket" || action == "network_ticket") {
        return OpenNodeTicket(env, in, d, p, action);
    }
    spdlog::warn("autoheal: notify: node={} {}", plan.node, plan.reason);  // notify, none
    return std::pair<std::string, std::string>{"logged", plan.reason};
}

void ActOnPlan(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
               const Incidents& incidents, const NodePlan& plan, ActOutcome* out) {
    const auto found = incidents.of_node.find(plan.node);
    PlanContext p{plan, nullptr, nullptr,
                  found != incidents.of_node.end() ? found->second : incidents.job};
    for (const NodeVerdict& v : d.verdicts) {
        if (v.node == plan.node) p.verdict = &v;
    }
    for (const NodeReport& r : in.reports) {
        if (r.node == plan.node) p.report = &r;
    }
    for (const std::string& h : plan.held)
        RecordOutcome(env, p.incident, "held", plan.node, "held", h);
    for (const std::string& action : plan.actions) {
        auto result = ActOnce(env, in, d, p, action, out);
        if (!result) {
            out->done.push_back(action + " " + plan.node + ": asked of the node");
            continue;
        }
        RecordOutcome(env, p.incident, action, plan.node, result->first, result->second);
        out->done.push_back(action + " " + plan.node + ": " + result->first);
    }
}

// Past the breaker: alert, and soft-avoid the culprits left in service.
void ActOnBreaker(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
                  const Incidents& incidents) {
    if (d.breaker_open) {
        std::string held;
        for (const std::string& n : d.quarantine) held += (held.empty() ? "" : ",") + n;
        spdlog::error("autoheal: ALERT: {}; held: {}", d.breaker_note, held);
        RecordOutcome(env, incidents.job, "alert", "breaker", "raised", d.breaker_note);
    }
    if (d.quarantine.empty() || env.rc.dry_run || env.rc.quarantine_hours <= 0) return;
    for (const std::string& n : d.quarantine) {
        auto q = AddToQuarantine(
            env.config.policy.quarantine_file, n,
            in.cluster.now + static_cast<std::int64_t>(env.rc.quarantine_hours * 3600),
            "autoheal: " + d.cause + " (breaker held the drain)", in.cluster.now);
        RecordOutcome(env, incidents.job, "quarantine", n, q ? "done" : "failed",
                      q ? d.breaker_note : q.error());
    }
}

}  // namespace

ActOutcome Act(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
               const Incidents& incidents) {
    ActOutcome out;
    ActOnSwitch(env, in, d, &out);
    for (const NodePlan& plan : d.plans) ActOnPlan(env, in, d, incidents, plan, &out);
    ActOnBreaker(env, in, d, incidents);
    return out;
}

}  // namespace autoheal::remediation
