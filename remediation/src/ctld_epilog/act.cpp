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
    rec.cause = diag::ToString(diag::Cause::kNetworkSwitchCable);
    rec.rule = "leaf-switch-correlation";
    rec.confidence = 0.8;
    nlohmann::json nodes_json = d.network->nodes;
    rec.evidence_json = nlohmann::json{{{"switch", d.network->name}, {"nodes", nodes_json}}}.dump();
    const std::int64_t bucket =
        in.cluster.now / std::max<std::int64_t>(env.rc.correlation.window_seconds, 1);
    rec.dedup_key = "switch/" + d.network->name + "/" + std::to_string(bucket);
    auto id = env.store.RecordIncident(rec);
    if (!id) return;
    constexpr diag::Action kTicket = diag::Action::kNetworkTicket;
    if (env.rc.dry_run) {  // a ticket takes no node out: the breaker does not hold it
        RecordOutcome(env, *id, kTicket, d.network->name, diag::Outcome::kDryRun, d.summary);
    } else {
        const std::string kind(diag::ToString(diag::Info(kTicket).ticket));
        auto t = OpenTickets(
            env.store, *id, kind, rec.dedup_key,
            TicketPayload(kind, d, nullptr, nullptr, nullptr, {}, env.ctx.job_id, env.clock.Now())
                .dump(),
            env.tickets);
        RecordOutcome(env, *id, kTicket, d.network->name,
                      t ? diag::Outcome::kOpened : diag::Outcome::kFailed,
                      t ? d.summary : t.error());
    }
    out->done.push_back("network incident: switch " + d.network->name);
}

struct PlanContext {
    const NodePlan& plan;
    const NodeVerdict* verdict;
    const NodeReport* report;
    std::int64_t incident;
    std::string reason;  // the plan's node reason with inc=<incident>
};

using ActResult = std::pair<diag::Outcome, std::string>;  // the outcome and its detail

// The ticket `action` opens for a node (RMA or network), once per part, cause and 30-day period.
ActResult OpenNodeTicket(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
                         const PlanContext& p, diag::TicketKind ticket) {
    const std::string kind(diag::ToString(ticket));
    std::string part = p.plan.gpu;
    if (p.report != nullptr) {
        for (const GpuIdentity& g : p.report->gpus) {
            if (g.pci == p.plan.gpu && !g.serial.empty()) part = g.serial;
        }
    }
    const std::int64_t period = in.cluster.now / (30 * std::int64_t{86400});
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
    return {t ? diag::Outcome::kOpened : diag::Outcome::kFailed, t ? key : t.error()};
}

// One action of a plan; returns its outcome and detail. An action that runs on the node is asked
// of the node (listed in `out->asked`) and recorded when its result comes back.
std::optional<ActResult> ActOnce(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
                                 const PlanContext& p, const diag::ActionInfo& action,
                                 ActOutcome* out) {
    const NodePlan& plan = p.plan;
    if (env.rc.dry_run) return ActResult{diag::Outcome::kDryRun, p.reason};
    if (action.id == diag::Action::kDrain) {
        auto r = env.slurm.Drain(plan.node, p.reason);
        if (!r) return ActResult{diag::Outcome::kFailed, r.error()};
        return ActResult{*r == SlurmClient::DrainOutcome::kAdminOwned ? diag::Outcome::kAdminOwned
                         : *r == SlurmClient::DrainOutcome::kAlreadyOurs ? diag::Outcome::kAlready
                                                                         : diag::Outcome::kDone,
                         p.reason};
    }
    if (action.id == diag::Action::kReboot) {
        auto r = env.slurm.Reboot(plan.node, p.reason);
        if (!r) return ActResult{diag::Outcome::kFailed, r.error()};
        return ActResult{*r == SlurmClient::RebootOutcome::kAdminOwned ? diag::Outcome::kAdminOwned
                         : *r == SlurmClient::RebootOutcome::kAlreadyPending
                             ? diag::Outcome::kAlready
                             : diag::Outcome::kDone,
                         p.reason};
    }
    if (action.runs == diag::Place::kNode) {
        out->asked.push_back(
            {{plan.node, std::string(action.name), plan.gpu}, action.id, p.incident});
        return std::nullopt;
    }
    if (action.ticket != diag::TicketKind::kNone)
        return OpenNodeTicket(env, in, d, p, action.ticket);
    spdlog::warn("autoheal: notify: node={} {}", plan.node, p.reason);  // notify, none
    return ActResult{diag::Outcome::kLogged, p.reason};
}

void ActOnPlan(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
               const Incidents& incidents, const NodePlan& plan, ActOutcome* out) {
    const auto found = incidents.of_node.find(plan.node);
    const std::int64_t incident = found != incidents.of_node.end() ? found->second : incidents.job;
    NodeReason why = plan.why;
    why.incident = incident;
    PlanContext p{plan, nullptr, nullptr, incident, FormatReason(why)};
    for (const NodeVerdict& v : d.verdicts) {
        if (v.node == plan.node) p.verdict = &v;
    }
    for (const NodeReport& r : in.reports) {
        if (r.node == plan.node) p.report = &r;
    }
    for (const std::string& h : plan.held) {
        RecordOutcome(env, p.incident, diag::Action::kHeld, plan.node, diag::Outcome::kHeld, h);
    }
    for (const std::string& word : plan.actions) {
        const diag::ActionInfo* action = diag::FindAction(word);
        if (action == nullptr) {  // a plan holds catalog words only (decision.cpp)
            spdlog::error("autoheal: epilog-ctld: node={}: action {}: not in the catalog",
                          plan.node, word);
            continue;
        }
        auto result = ActOnce(env, in, d, p, *action, out);
        if (!result) {
            // Until its result replaces it, the row says the node is busy with it: the next
            // decisions count the node against the breaker (NodesWithActionsAsked).
            RecordOutcome(env, p.incident, action->id, plan.node, diag::Outcome::kAsked,
                          plan.gpu + ": asked of the node");
            out->done.push_back(word + " " + plan.node + ": asked of the node");
            continue;
        }
        RecordOutcome(env, p.incident, action->id, plan.node, result->first, result->second);
        out->done.push_back(word + " " + plan.node + ": " +
                            std::string(diag::ToString(result->first)));
        // A node that needs a reboot and could not be given one still leaves service.
        if (action->id != diag::Action::kReboot || result->first != diag::Outcome::kFailed ||
            std::find(plan.actions.begin(), plan.actions.end(),
                      diag::ToString(diag::Action::kDrain)) != plan.actions.end()) {
            continue;
        }
        const diag::ActionInfo& drain = diag::Info(diag::Action::kDrain);
        auto drained = ActOnce(env, in, d, p, drain, out);  // runs here: always a result
        RecordOutcome(env, p.incident, drain.id, plan.node, drained->first,
                      "the reboot failed; " + drained->second);
        out->done.push_back(std::string(drain.name) + " " + plan.node +
                            " (reboot failed): " + std::string(diag::ToString(drained->first)));
    }
}

// Past the breaker: alert, and soft-avoid the culprits left in service.
void ActOnBreaker(const CtldEnv& env, const DecisionInput& in, const JobDecision& d,
                  const Incidents& incidents) {
    if (d.breaker_open) {
        std::string held;
        for (const std::string& n : d.quarantine) held += (held.empty() ? "" : ",") + n;
        spdlog::error("autoheal: ALERT: {}; held: {}", d.breaker_note, held);
        RecordOutcome(env, incidents.job, diag::Action::kAlert, "breaker", diag::Outcome::kRaised,
                      d.breaker_note);
    }
    if (d.quarantine.empty() || env.rc.dry_run || env.rc.quarantine_hours <= 0) return;
    for (const std::string& n : d.quarantine) {
        auto q = AddToQuarantine(
            env.config.policy.quarantine_file, n,
            in.cluster.now + static_cast<std::int64_t>(env.rc.quarantine_hours * 3600),
            "autoheal: " + d.cause + " (breaker held the drain)", in.cluster.now);
        RecordOutcome(env, incidents.job, diag::Action::kQuarantine, n,
                      q ? diag::Outcome::kDone : diag::Outcome::kFailed,
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
