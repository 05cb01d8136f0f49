// RecordIncidents: what the run's evidence shows, into the store, before anything is done.
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "autoheal/remediation/ctld_epilog_steps.h"

namespace autoheal::remediation {
namespace {

std::string EvidenceJson(const NodeVerdict& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const diag::Evidence& e : v.diagnosis.evidence) {
        a.push_back({{"source", v.evidence.sources[e.source]},
                     {"line", e.line},
                     {"signature", e.signature},
                     {"text", e.text}});
    }
    return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RunKey(const DecisionInput& in) {
    return in.job.job + "/run" + std::to_string(in.job.restart_count);
}

// One incident per node whose evidence fired a rule (a guess explains nothing: none).
std::map<std::string, std::int64_t> RecordNodeIncidents(const CtldEnv& env, const DecisionInput& in,
                                                        const JobDecision& d) {
    std::map<std::string, std::int64_t> incident_of;
    for (const NodeVerdict& v : d.verdicts) {
        if (!v.diagnosis.Explains()) continue;
        IncidentRecord rec;
        rec.time = in.cluster.now;
        rec.job = env.ctx.job_id;
        rec.node = v.node;
        rec.gpu = v.diagnosis.culprit.gpu;
        rec.cause = v.diagnosis.cause;
        rec.rule = v.diagnosis.rule;
        rec.confidence = v.diagnosis.confidence;
        rec.evidence_json = EvidenceJson(v);
        rec.dedup_key = RunKey(in) + "/" + v.node + "/" + v.diagnosis.rule + "/" + rec.gpu;
        for (const NodeReport& r : in.reports) {
            if (r.node != v.node || rec.gpu.empty()) continue;
            for (const GpuIdentity& g : r.gpus) {
                if (g.pci == rec.gpu) rec.gpu_serial = g.serial;
            }
        }
        auto id = env.store.RecordIncident(rec);
        if (id)
            incident_of[v.node] = *id;
        else
            spdlog::error("autoheal: epilog-ctld: {}", id.error());
    }
    return incident_of;
}

// Nodes that went down with the job (slurmd or the host died: no epilog report came): an
// incident each, so the failure is on record even when Slurm requeued the job itself.
void RecordFailedNodes(const CtldEnv& env, const DecisionInput& in) {
    for (const std::string& node : in.job.missing_reports) {
        const NodeInfo* info = nullptr;
        for (const NodeInfo& n : in.cluster.nodes) {
            if (n.name == node) info = &n;
        }
        if (info == nullptr || !info->down || !SafePathPart(node)) continue;
        IncidentRecord rec;
        rec.time = in.cluster.now;
        rec.job = env.ctx.job_id;
        rec.node = node;
        rec.cause = diag::ToString(diag::Cause::kUnknown);
        rec.rule = "node-failed";
        rec.confidence = 0.5;
        rec.evidence_json =
            nlohmann::json::array(
                {{{"source", "slurm"},
                  {"text", "the node went down with the job (state " + info->state +
                               (info->reason.empty() ? "" : ", reason: " + info->reason) +
                               ") and its epilog did not report"}}})
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        rec.dedup_key = RunKey(in) + "/" + node + "/node-failed";
        auto id = env.store.RecordIncident(rec);
        if (!id) spdlog::error("autoheal: epilog-ctld: {}", id.error());
    }
}

}  // namespace

Result<Incidents> RecordIncidents(const CtldEnv& env, const DecisionInput& in,
                                  const JobDecision& d) {
    Incidents incidents;
    incidents.of_node = RecordNodeIncidents(env, in, d);
    RecordFailedNodes(env, in);
    IncidentRecord job_rec;
    job_rec.time = in.cluster.now;
    job_rec.job = env.ctx.job_id;
    job_rec.cause = d.cause;
    job_rec.rule = d.rule;
    job_rec.confidence = d.confidence;
    job_rec.evidence_json = d.job_output ? EvidenceJson(*d.job_output) : "[]";
    job_rec.dedup_key = RunKey(in) + "/job";
    auto job_incident = env.store.RecordIncident(job_rec);
    if (!job_incident) return job_incident.status();
    incidents.job = *job_incident;
    return incidents;
}

}  // namespace autoheal::remediation
