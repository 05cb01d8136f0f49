#include "autoheal/agent/fault_handler.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "autoheal/core/files.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/taxonomy.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/slurm_retry.h"

namespace autoheal::agent {
namespace rem = autoheal::remediation;

namespace {

rem::CtldEnv CtldEnvOf(const AgentEnv& env, rem::IncidentStore& store, const ScriptContext& ctx) {
    return {env.config, ctx, env.rc, env.tickets, env.engine, store, env.slurm, env.clock};
}

// The job's options as its prolog recorded them on this node (none: not opted in).
JobOptions OptionsOf(const AgentEnv& env, const std::string& job) {
    auto text =
        ReadSmallFile(rem::PrologFile(env.config.state_dir, job, env.node), rem::kMaxRecordBytes);
    if (!text) return {};
    auto baseline = rem::PrologBaselineFromJson(*text);
    return baseline ? baseline->options : JobOptions{};
}

rem::DecisionInput InputFor(const AgentEnv& env, const diag::EvidenceSet& found,
                            const diag::EvidenceSet& job_output, const std::string& job,
                            int restart) {
    rem::DecisionInput in;
    in.rules = &env.engine.rules;
    in.config = &env.rc;
    in.job.job = job;
    in.job.restart_count = restart;
    rem::NodeReport report;
    report.job = job;
    report.node = env.node;
    report.restart = restart;
    report.time = env.clock.Now();
    report.evidence = found;
    report.job_output = job_output;
    report.job_output_read = !job_output.items.empty();
    in.reports.push_back(std::move(report));
    return in;
}

void WriteRecord(const AgentEnv& env, const rem::AgentRecord& rec) {
    // As the node reports: handed to the owner of jobs/ (SlurmUser), which the controller runs as.
    auto w = rem::WriteJobRecord(
        env.config.state_dir, rem::AgentFile(env.config.state_dir, rec.job, rec.restart, rec.node),
        rem::AgentRecordToJson(rec), 0640);
    if (!w) spdlog::error("autoheal: agent: {}", w.error());
}

// The tail of a decision's explanation that says why it was not requeued ("; not requeued: ...").
std::string WhyNotRequeued(const std::string& explanation, OnFault mode, bool would_requeue) {
    if (would_requeue) {
        return std::string("; not requeued: agent.on_fault is ") + OnFaultName(mode);
    }
    const std::size_t at = explanation.find("not requeued: ");
    return at == std::string::npos ? "" : "; " + explanation.substr(at);
}

// Ends the job (or leaves it running, notify) with the explanation in its AdminComment.
// Returns the outcome word.
std::string EndWithExplanation(const rem::CtldEnv& env, const AgentEnv& agent, rem::JobDecision* d,
                               const rem::Incidents& incidents, std::uint32_t job) {
    const bool notify = agent.agent.on_fault == OnFault::kNotify;
    d->explanation = notify ? "autoheal: " + d->summary + " on " + agent.node +
                                  "; the job was left running (agent.on_fault: notify)"
                            : "autoheal: ended the job: " + d->summary + " on " + agent.node +
                                  WhyNotRequeued(d->explanation, agent.agent.on_fault, d->requeue);
    d->requeue = false;
    if (agent.rc.dry_run) {
        rem::RecordOutcome(env, incidents.job, diag::Action::kExplain, env.ctx.job_id,
                           diag::Outcome::kDryRun, d->explanation);
        return "dry-run";
    }
    rem::JobUpdate u;
    u.admin_comment = d->explanation;
    auto up = agent.slurm.UpdateJob(job, u);
    if (!up) spdlog::warn("autoheal: agent: {}", up.error());
    std::string failure;
    if (!notify) {
        auto ended = rem::UntilSlurmAnswers(agent.clock, [&] { return agent.slurm.EndJob(job); });
        if (!ended) failure = ended.error();
    }
    rem::RecordOutcome(env, incidents.job, diag::Action::kExplain, env.ctx.job_id,
                       failure.empty() ? diag::Outcome::kDone : diag::Outcome::kFailed,
                       failure.empty() ? d->explanation : failure);
    return failure.empty() ? "done" : "failed";
}

// Decides the run under the controller's steps and ends the job by agent.on_fault; sets
// rec->job_action and rec->outcome when it acted. Returns the line for the log.
std::string DecideAndAct(const AgentEnv& env, const rem::CtldEnv& cenv, rem::DecisionInput* in,
                         const rem::JobInfo& job, rem::AgentRecord* rec) {
    const std::string& id = cenv.ctx.job_id;
    auto times = rem::LoadFacts(cenv, in);
    if (!times) return "job " + id + ": " + times.error();
    if (times->requeued_elsewhere) {
        rec->job_action = "none";
        rec->explanation = "the job was being requeued already";
        return "job " + id + ": requeued already, left alone";
    }
    in->job.failed = true;  // the fault stops it, whether or not it has noticed yet
    // The breaker lock (state_dir/jobs/breaker.lock) makes the breaker's count and the drains one
    // step across the cluster's deciders; without it no node is taken out.
    const rem::BreakerLock breaker(env.config.state_dir, rem::kBreakerLockWaitSeconds);
    auto d = rem::DecideJob(cenv, in, *times, breaker);
    if (!d) return "job " + id + ": " + d.error();
    auto incidents = rem::RecordIncidents(cenv, *in, *d);
    if (!incidents) return "job " + id + ": " + incidents.error();
    const rem::ActOutcome acted = rem::Act(cenv, *in, *d, *incidents);
    std::string failure;
    if (d->requeue && env.agent.on_fault == OnFault::kRequeue) {
        failure = rem::Requeue(cenv, *in, &*d, *incidents);
        rec->job_action = "requeue";
        rec->outcome = env.rc.dry_run ? "dry-run" : failure.empty() ? "done" : "failed";
    } else {
        rec->job_action = env.agent.on_fault == OnFault::kNotify ? "notify" : "end";
        rec->outcome = EndWithExplanation(cenv, env, &*d, *incidents, job.id);
    }
    rem::Explain(cenv, *in, *d, *times, failure, acted.asked);
    rec->explanation = d->explanation;
    std::string line = "job " + id + ": " + rec->job_action + " " + rec->outcome;
    for (const std::string& x : acted.done) line += "; " + x;
    return line + "; " + d->explanation;
}

// The agent record of the run is written first with no job_action (the controller epilog waits
// for it, AddAgentEvidence); `*rec` is left final, whatever happened, to be written once the
// fault's store is handed over.
std::string ActOnJob(const AgentEnv& env, rem::IncidentStore& store, const diag::EvidenceSet& found,
                     const diag::EvidenceSet& job_output, const diag::Diagnosis& local,
                     const rem::JobInfo& job, rem::AgentRecord* out) {
    ScriptContext ctx;
    ctx.job_id = std::to_string(job.id);
    ctx.node = env.node;
    ctx.nodelist = job.nodes;
    ctx.restart_count = std::to_string(job.restart_count);
    ctx.options = OptionsOf(env, ctx.job_id);
    const rem::CtldEnv cenv = CtldEnvOf(env, store, ctx);
    rem::DecisionInput in = InputFor(env, found, job_output, ctx.job_id, job.restart_count);
    in.job.auto_resume = ctx.options.auto_resume;
    in.job.nodes = rem::SlurmAdapter::ExpandHostlist(job.nodes);

    rem::AgentRecord rec;
    rec.job = ctx.job_id;
    rec.node = env.node;
    rec.restart = job.restart_count;
    rec.time = env.clock.Now();
    rec.rule = local.rule;
    rec.cause = local.cause;
    rec.gpu = local.culprit.gpu;
    rec.evidence = found;
    rec.job_output = job_output;
    rec.dump_requested = out->dump_requested;
    WriteRecord(env, rec);  // the evidence is on record before anything is done
    std::string line = DecideAndAct(env, cenv, &in, job, &rec);
    if (rec.job_action.empty()) {  // it stopped before acting
        rec.job_action = "none";
        rec.outcome = "failed";
        rec.explanation = line;
    }
    *out = std::move(rec);
    return line;
}

// No job on the node: record the fault and carry out its plan, so no job lands on the node.
std::string ActOnIdleNode(const AgentEnv& env, rem::IncidentStore& store,
                          const diag::EvidenceSet& found) {
    ScriptContext ctx;
    ctx.node = env.node;
    const rem::CtldEnv cenv = CtldEnvOf(env, store, ctx);
    rem::DecisionInput in = InputFor(env, found, {}, "", 0);
    in.job.nodes = {env.node};
    const std::int64_t now = env.clock.Now();
    rem::JobTimes times;
    times.requeued_elsewhere = true;  // no job: no job run to record
    // The breaker lock (state_dir/jobs/breaker.lock) makes the breaker's count and this drain one
    // step across the cluster's deciders; without it no node is taken out.
    const rem::BreakerLock breaker(env.config.state_dir, rem::kBreakerLockWaitSeconds);
    auto d = rem::DecideJob(cenv, &in, times, breaker);
    if (!d) return "node " + env.node + " (idle): " + d.error();
    rem::Incidents incidents;
    std::string texts;
    for (const diag::Evidence& e : found.items) texts += e.text + "\n";
    for (const rem::NodeVerdict& v : d->verdicts) {
        if (!v.diagnosis.Explains()) continue;
        rem::IncidentRecord rec;
        rec.time = now;
        rec.node = v.node;
        rec.gpu = v.diagnosis.culprit.gpu;
        rec.cause = v.diagnosis.cause;
        rec.rule = v.diagnosis.rule;
        rec.confidence = v.diagnosis.confidence;
        rec.evidence_json = rem::EvidenceSetToJson(v.evidence);
        rec.dedup_key = "agent/" + v.node + "/" + v.diagnosis.rule + "/" +
                        std::to_string(std::hash<std::string>{}(texts));
        auto id = store.RecordIncident(rec);
        if (!id) return "node " + env.node + " (idle): " + id.error();
        incidents.of_node[v.node] = *id;
        incidents.job = *id;
    }
    const rem::ActOutcome acted = rem::Act(cenv, in, *d, incidents);
    std::string line = "node " + env.node + " (idle): " + d->summary;
    for (const std::string& x : acted.done) line += "; " + x;
    return line;
}

// Saves the fault's store whole into AgentSpoolDir (through a temporary file of this node:
// SQLite writes the copy, the one atomic writer puts it in place, given to the owner of jobs/),
// where the controller epilog imports it. Returns the file's path.
Result<std::string> HandOver(const AgentEnv& env, rem::IncidentStore& store,
                             const std::string& what) {
    static int handed = 0;
    const std::string name = env.node + "-" + what + "-" + std::to_string(env.clock.Now()) + "-" +
                             std::to_string(::getpid()) + "-" + std::to_string(++handed);
    std::string tmp = (std::filesystem::temp_directory_path() / "autoheal-agent-XXXXXX").string();
    const int fd = ::mkstemp(tmp.data());  // empty: VACUUM INTO writes an empty file
    if (fd < 0) return MakeError(tmp + ": " + std::strerror(errno));
    ::close(fd);
    auto saved = store.SaveTo(tmp);
    auto bytes =
        saved ? ReadSmallFile(tmp, rem::kMaxRecordBytes) : Result<std::string>(saved.status());
    std::remove(tmp.c_str());
    if (!bytes) return bytes.status();
    const std::string path = rem::AgentSpoolDir(env.config.state_dir) + "/" + name + ".sqlite";
    auto w = rem::WriteJobRecord(env.config.state_dir, path, *bytes, 0640);
    if (!w) return w.status();
    return path;
}

// The node's own diagnosis of `found` (analyzed on a copy), without history.
diag::Diagnosis DiagnoseHere(const AgentEnv& env, const diag::EvidenceSet& found) {
    diag::EvidenceSet analyzed = found;
    diag::Analyze(&analyzed);
    diag::DiagnoseOptions options;
    options.node = env.node;
    options.now = env.clock.Now();
    return diag::Diagnose(env.engine.rules, analyzed, options);
}

}  // namespace

FaultHandled HandleKernelLines(const AgentEnv& env, const std::string& lines) {
    diag::EvidenceSet found;
    env.engine.scanner->ScanText(lines, "kernel", &found, diag::InputKind::kKernelLog);
    if (found.items.empty()) return {};
    return HandleEvidence(env, found);
}

std::int64_t SteadyMs(rem::Clock& clock) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Steady().time_since_epoch())
        .count();
}

std::chrono::steady_clock::time_point NvmlDeadline(const AgentEnv& env) {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(
                                                  env.health.nvml_timeout_seconds * 1000));
}

std::string XidKey(const std::string& pci, const std::string& xid) {
    std::string gpu;
    for (char c : pci) gpu += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t dot = gpu.rfind('.');
    if (dot != std::string::npos && dot + 2 == gpu.size()) gpu.resize(dot);  // ".0": the function
    return gpu + "/" + xid;
}

FaultHandled HandleEvidence(const AgentEnv& env, const diag::EvidenceSet& found) {
    FaultHandled out;
    for (const diag::Evidence& e : found.items) {
        if (e.signature != "xid") continue;
        out.xids.push_back(XidKey(std::string(e.Field("pci").value_or("")),
                                  std::string(e.Field("xid").value_or(""))));
    }
    const diag::Diagnosis local = DiagnoseHere(env, found);
    out.rule = local.rule;
    out.cause = local.cause;
    out.interrupting = local.interrupts_job;
    if (!local.interrupts_job) return out;
    auto jobs =
        rem::UntilSlurmAnswers(env.clock, [&] { return env.slurm.RunningJobsOn(env.node); });
    if (!jobs) {
        out.done.push_back("node " + env.node + ": " + jobs.error());
        return out;
    }
    // The fault's own store, in memory; handed to the controller when done (no store on a node).
    auto store = rem::IncidentStore::OpenInMemory();
    if (!store) {
        out.done.push_back("node " + env.node + ": " + store.error());
        return out;
    }
    std::vector<rem::AgentRecord> records(jobs->size());
    if (jobs->empty()) {
        out.done.push_back(ActOnIdleNode(env, **store, found));
    } else {
        for (std::size_t i = 0; i < jobs->size(); ++i) {
            out.done.push_back(ActOnJob(env, **store, found, {}, local, (*jobs)[i], &records[i]));
        }
    }
    auto handed = HandOver(env, **store, jobs->empty() ? "idle" : std::to_string(jobs->front().id));
    out.done.push_back(handed ? "handed to the controller: " + *handed
                              : "the fault's records are in this log only: " + handed.error());
    // Final once the store is there: the controller epilog imports it when the records are.
    for (const rem::AgentRecord& rec : records) WriteRecord(env, rec);
    return out;
}

std::string HandleHungJob(const AgentEnv& env, const rem::JobInfo& job,
                          const diag::EvidenceSet& job_output, std::int64_t dump_requested) {
    const diag::Diagnosis local = DiagnoseHere(env, job_output);
    auto store = rem::IncidentStore::OpenInMemory();
    if (!store) return "job " + std::to_string(job.id) + ": " + store.error();
    rem::AgentRecord rec;
    rec.dump_requested = dump_requested;
    std::string line = ActOnJob(env, **store, {}, job_output, local, job, &rec);
    auto handed = HandOver(env, **store, std::to_string(job.id));
    line += handed ? "; handed to the controller: " + *handed
                   : "; the records are in this log only: " + handed.error();
    WriteRecord(env, rec);  // final once the store is there
    return line;
}

void WriteHangRecord(const AgentEnv& env, const rem::JobInfo& job,
                     const diag::EvidenceSet& job_output, std::int64_t dump_requested) {
    rem::AgentRecord rec;
    rec.job = std::to_string(job.id);
    rec.node = env.node;
    rec.restart = job.restart_count;
    rec.time = env.clock.Now();
    rec.cause = std::string(diag::ToString(diag::Cause::kJobHang));
    rec.job_output = job_output;
    rec.dump_requested = dump_requested;
    WriteRecord(env, rec);
}

}  // namespace autoheal::agent
