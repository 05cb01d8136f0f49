#include "autoheal/remediation/controller.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <exception>
#include <memory>
#include <optional>

#include "autoheal/core/submit_policy.h"
#include "autoheal/remediation/breaker_lock.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/file_lock.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {

// ---------------------------------------------------------------------------- node epilog

EpilogOutcome RunNodePipeline(const NodeEpilogEnv& env, SlurmClient& slurm) {
    NodeEvidence evidence = CollectNodeEvidence(env);
    // The job's output is read by the node that ran the batch script. The first node of the
    // allocation asks Slurm which node that was (one RPC per job, not one per node).
    const auto nodes = SlurmAdapter::ExpandHostlist(env.ctx.nodelist);
    if (!nodes.empty() && nodes.front() == env.ctx.node) CollectJobOutput(env, slurm, &evidence);
    const diag::Diagnosis local = DiagnoseNode(env, &evidence);
    const NodeReport& report = evidence.report;
    auto written = WriteNodeReport(env, report);
    if (!written) return {false, "cannot write the node report: " + written.error()};

    EpilogOutcome outcome;
    outcome.summary =
        "job=" + env.ctx.job_id + " node=" + env.ctx.node +
        " run=" + std::to_string(report.restart) + " evidence=" +
        std::to_string(report.evidence.items.size() + report.job_output.items.size()) + " items" +
        (local.rule.empty() ? "" : " local=" + report.local_cause);
    for (const std::string& p : report.problems) spdlog::warn("autoheal: epilog: {}", p);
    // The controller decides every node action once, with the history and the breaker: this
    // node carries out what the decision lists for it. Slurm refuses updates to a finished job,
    // so a job that is not requeued cannot carry the explanation in its AdminComment: the batch
    // host appends it to the job's output, where the user looks first.
    if (!NeedsDecision(evidence, local)) return outcome;
    const std::optional<DecisionRecord> decision =
        AwaitDecision(env, report.restart, evidence.run_began);
    if (!decision) {
        outcome.summary += "; no decision from the controller in time: nothing carried out";
        return outcome;
    }
    const auto results = CarryOutNodeActions(env, *decision, evidence.after);
    if (!results.empty()) {
        auto w = WriteNodeResults(env, report.restart, results);
        if (!w) spdlog::warn("autoheal: epilog: {}", w.error());
    }
    for (const NodeActionResult& r : results) {
        outcome.summary += "; " + r.action + " " + r.gpu + ": " + r.outcome + " (" + r.detail + ")";
    }
    AppendExplanation(env, *decision, evidence.output_path);
    return outcome;
}

EpilogOutcome RunNodeEpilog(const Settings& settings, const ScriptContext& ctx,
                            const std::string& self_exe) {
    if (!SafePathPart(ctx.job_id) || !SafePathPart(ctx.node)) {
        return {false, "job id or node name missing or unusable: nothing recorded"};
    }
    const RemediationConfig& rc = settings.remediation;
    auto engine = LoadEngine(self_exe, settings.core.state_dir);
    if (!engine) return {false, engine.error()};
    SystemClock clock;
    SlurmAdapter slurm(rc.slurm_conf);
    return RunNodePipeline({settings.core, ctx, rc, settings.health, *engine, self_exe, clock},
                           slurm);
}

// ------------------------------------------------------------------------ controller epilog
namespace {

// One delivery at a time on this controller (no ticket goes out twice), apart from the decision
// lock: a sink that hangs holds up no decision.
std::string TicketLockPath(const std::string& state_dir) { return state_dir + "/tickets.lock"; }
// Runs a step that must not stop the ones after it: an exception is logged and recorded as a
// failed "step" action on the job's incident.
template <typename Step>
void RunStep(const CtldEnv& env, std::int64_t job_incident, const char* name, const Step& step) {
    try {
        step();
    } catch (const std::exception& e) {
        spdlog::error("autoheal: epilog-ctld: step {} failed: {}", name, e.what());
        RecordOutcome(env, job_incident, diag::Action::kStep, name, diag::Outcome::kFailed,
                      e.what());
    } catch (...) {
        spdlog::error("autoheal: epilog-ctld: step {} failed", name);
        RecordOutcome(env, job_incident, diag::Action::kStep, name, diag::Outcome::kFailed,
                      "unknown exception");
    }
}

std::string Summary(const DecisionInput& in, const JobDecision& d,
                    const std::vector<std::string>& done) {
    std::string s =
        "job=" + in.job.job + " run=" + std::to_string(in.job.restart_count) + " cause=" + d.cause +
        (d.rule.empty() ? "" : " rule=" + d.rule) + " requeue=" + (d.requeue ? "yes" : "no") +
        " reports=" + std::to_string(in.reports.size()) + "/" + std::to_string(in.job.nodes.size());
    if (!in.job.missing_reports.empty()) {
        s += " missing=" + SlurmAdapter::CompressHostlist(in.job.missing_reports);
    }
    for (const std::string& x : done) s += "; " + x;
    if (!d.explanation.empty()) s += "; " + d.explanation;
    return s;
}

}  // namespace

EpilogOutcome RunControllerPipeline(const CtldEnv& env) {
    DecisionInput in;
    in.rules = &env.engine.rules;
    in.config = &env.rc;
    in.job.job = env.ctx.job_id;
    in.job.restart_count = std::atoi(env.ctx.restart_count.c_str());
    // The records are the user's word (submit_policy.h): the site's cap applies whatever they say.
    in.job.auto_resume =
        CappedAutoResume(env.ctx.options.auto_resume, env.config.policy.max_auto_resume);
    in.job.nodes = SlurmAdapter::ExpandHostlist(env.ctx.nodelist);
    auto times = LoadFacts(env, &in);
    if (!times) return {false, times.error()};
    CollectReports(env, *times, &in);
    const AgentActed agent = AddAgentEvidence(env, &in, times->requeued_elsewhere);
    DropThisRunFromHistory(&in);
    // The agents' stores (an agent hands its store over before its record is final) and the
    // spool, before this run records: what the agent did to this run is on its incidents first.
    if (!env.spooling) ImportSpooledRuns(env);
    // autoheal-agent requeued or ended this run while it ran: one requeue per fault.
    times->agent_ended = agent.ended;
    times->requeued_elsewhere = times->requeued_elsewhere || agent.ended;
    if (agent.requeued) RenewBeginTime(env);

    ActOutcome acted;
    std::string requeue_failure;
    std::optional<JobDecision> decision;
    // When the store fails, the steps from RecordIncidents on record into `spooled` instead.
    std::unique_ptr<IncidentStore> spooled;
    std::optional<CtldEnv> spool_env;
    const CtldEnv* acting = &env;
    {
        // One decision at a time on this controller: the breaker counts what others just did,
        // and, under the breaker lock, what the prologs drain meanwhile.
        FileLock lock(env.config.state_dir + "/controller.lock");
        const BreakerLock breaker(env.config.state_dir, kBreakerLockWaitSeconds);
        auto d = DecideJob(env, &in, *times, breaker);
        if (!d) return {false, d.error()};
        decision = std::move(*d);
        auto incidents = RecordIncidents(env, in, *decision);
        if (!incidents) {
            spdlog::error(
                "autoheal: epilog-ctld: the incident store fails ({}): acting anyway, the run "
                "kept in the spool",
                incidents.error());
            auto memory = IncidentStore::OpenInMemory();
            if (!memory) return {false, incidents.error() + "; " + memory.error()};
            spooled = std::move(*memory);
            spool_env.emplace(CtldEnv{env.config, env.ctx, env.rc, env.tickets, env.engine,
                                      *spooled, env.slurm, env.clock, env.node_results_wait_seconds,
                                      env.ticket_budget_seconds, true});
            acting = &*spool_env;
            if (!times->requeued_elsewhere) RecordJobRunOf(*acting, in, *decision);
            incidents = RecordIncidents(*acting, in, *decision);
            if (!incidents) return {false, incidents.error()};
        }
        const CtldEnv& e = *acting;
        RunStep(e, incidents->job, "act", [&] { acted = Act(e, in, *decision, *incidents); });
        RunStep(e, incidents->job, "requeue",
                [&] { requeue_failure = Requeue(e, in, &*decision, *incidents); });
        RunStep(e, incidents->job, "explain",
                [&] { Explain(e, in, *decision, *times, requeue_failure, acted.asked); });
    }
    // Outside the lock: the nodes carry out what the decision file asks of them.
    std::vector<std::string> done = acted.done;
    for (const std::string& r : AwaitNodeResults(*acting, acted.asked)) done.push_back(r);
    if (acting->spooling) {
        SpoolRun(env, acting->store);
        done.push_back("store failing: run kept in the spool");
        return {true, Summary(in, *decision, done)};
    }
    {
        // The tickets this run queued in the store are delivered after the decision, by
        // whichever job end holds the ticket lock (bounded: ticket_budget_seconds plus one
        // sink's timeout); when another holds it, that one, the next job end or
        // `autoheal tickets --deliver` delivers them. No job end waits for another's delivery.
        FileLock lock(TicketLockPath(env.config.state_dir), FileLock::kTry);
        Finish(env, lock.held());
    }
    return {true, Summary(in, *decision, done)};
}

EpilogOutcome DeliverPendingTickets(const Settings& settings, double budget_seconds) {
    FileLock lock(TicketLockPath(settings.core.state_dir), FileLock::kTry);
    if (!lock.held()) {
        return {true, "tickets: another process is delivering them now; nothing done"};
    }
    auto store = IncidentStore::Open(settings.core.state_dir + "/incidents.sqlite");
    if (!store) return {false, store.error()};
    SystemClock clock;
    auto summary =
        DeliverDueTickets(**store, settings.remediation.tickets, clock.Now(), 100, budget_seconds);
    if (!summary) return {false, summary.error()};
    EpilogOutcome out;
    out.summary = "tickets delivered=" + std::to_string(summary->delivered) +
                  " failed=" + std::to_string(summary->failed) +
                  " skipped=" + std::to_string(summary->skipped);
    for (const std::string& e : summary->errors) out.summary += "; " + e;
    out.ok = summary->failed == 0;
    return out;
}

EpilogOutcome RunControllerEpilog(const Settings& settings, const ScriptContext& ctx,
                                  const std::string& self_exe) {
    if (!SafePathPart(ctx.job_id)) return {false, "job id missing or unusable"};
    const Config& config = settings.core;
    const RemediationConfig& rc = settings.remediation;
    auto engine = LoadEngine(self_exe, config.state_dir);
    if (!engine) return {false, engine.error()};
    auto store = IncidentStore::Open(config.state_dir + "/incidents.sqlite");
    const bool spooling = !store;
    if (spooling) {
        // Corrupt, locked or on a full disk: the drain and the requeue must still happen.
        spdlog::error(
            "autoheal: epilog-ctld: the incident store fails ({}): acting anyway, the run kept "
            "in the spool",
            store.error());
        store = IncidentStore::OpenInMemory();
        if (!store) return {false, store.error()};
    }
    SlurmAdapter slurm(rc.slurm_conf);
    SystemClock clock;
    CtldEnv env{config, ctx, rc, rc.tickets, *engine, **store, slurm, clock};
    env.spooling = spooling;
    return RunControllerPipeline(env);
}

}  // namespace autoheal::remediation
