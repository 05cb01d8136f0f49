#include "autoheal/remediation/ticket_payload.h"

#include "autoheal/diag/taxonomy.h"

namespace autoheal::remediation {
namespace {

// The texts of a source's evidence items, in order (a ticket's "health" and "nvml" lines).
std::vector<std::string> SourceTexts(const diag::EvidenceSet& set, const std::string& source) {
    std::vector<std::string> texts;
    for (const diag::Evidence& e : set.items) {
        if (e.source < set.sources.size() && set.sources[e.source] == source) {
            texts.push_back(e.text);
        }
    }
    return texts;
}

}  // namespace

nlohmann::json TicketPayload(const std::string& kind, const JobDecision& d, const NodePlan* plan,
                             const NodeVerdict* verdict, const NodeReport* report,
                             const std::vector<diag::HistoryRecord>& history,
                             const std::string& cluster_job, std::int64_t now) {
    nlohmann::json j;
    j["kind"] = kind;
    j["created"] = now;
    j["job"] = cluster_job;
    if (plan != nullptr) {
        j["node"] = plan->node;
        j["cause"] = plan->cause;
        j["rule"] = plan->rule;
        j["gpu"] = {{"pci", plan->gpu}};
        if (report != nullptr) {
            for (const GpuIdentity& g : report->gpus) {
                if (g.pci == plan->gpu) {
                    j["gpu"] = {
                        {"pci", g.pci}, {"uuid", g.uuid}, {"serial", g.serial}, {"model", g.name}};
                }
            }
            j["health"] = SourceTexts(report->evidence, "health");
            j["nvml"] = SourceTexts(report->evidence, "nvml");
        }
    }
    if (d.network && plan == nullptr) {
        j["switch"] = d.network->name;
        j["nodes"] = d.network->nodes;
        j["cause"] = std::string(diag::ToString(diag::Cause::kNetworkSwitchCable));
    }
    j["evidence"] = nlohmann::json::array();
    if (verdict != nullptr) {
        for (const diag::Evidence& e : verdict->diagnosis.evidence) {
            j["evidence"].push_back(
                {{"source", verdict->evidence.sources[e.source]}, {"line", e.text}});
        }
    }
    j["history"] = nlohmann::json::array();
    for (const diag::HistoryRecord& h : history) {
        j["history"].push_back({{"time", h.time},
                                {"node", h.node},
                                {"gpu", h.gpu},
                                {"cause", h.cause},
                                {"rule", h.rule},
                                {"job", h.job}});
        if (j["history"].size() >= 50) break;
    }
    return j;
}

}  // namespace autoheal::remediation
