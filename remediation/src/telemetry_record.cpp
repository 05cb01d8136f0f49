#include "autoheal/remediation/telemetry_record.h"

#include <nlohmann/json.hpp>

#include "autoheal/core/files.h"
#include "autoheal/remediation/job_records.h"

namespace autoheal::remediation {
namespace {

using nlohmann::json;

template <typename T>
void PutOptional(json& j, const char* key, const std::optional<T>& v) {
    if (v) j[key] = *v;
}

template <typename T>
void GetOptional(const json& j, const char* key, std::optional<T>* out) {
    if (auto it = j.find(key); it != j.end() && !it->is_null()) *out = it->get<T>();
}

template <typename T>
void Get(const json& j, const char* key, T* out) {
    if (auto it = j.find(key); it != j.end() && !it->is_null()) *out = it->get<T>();
}

json GpuJson(const diag::GpuTelemetry& t) {
    json j{{"gpu", t.gpu},
           {"minor", t.minor},
           {"samples", t.samples},
           {"first_ms", t.first_ms},
           {"last_ms", t.last_ms},
           {"reason_samples", t.reason_samples},
           {"power_cap_samples", t.power_cap_samples},
           {"thermal_samples", t.thermal_samples},
           {"hw_slowdown_samples", t.hw_slowdown_samples},
           {"temperature_samples", t.temperature_samples},
           {"temperature_max", t.temperature_max},
           {"temperature_sum", t.temperature_sum},
           {"sm_clock_samples", t.sm_clock_samples},
           {"sm_clock_sum", t.sm_clock_sum}};
    PutOptional(j, "power_violation_first", t.power_violation_first);
    PutOptional(j, "power_violation_last", t.power_violation_last);
    PutOptional(j, "power_violation_first_ms", t.power_violation_first_ms);
    PutOptional(j, "power_violation_last_ms", t.power_violation_last_ms);
    PutOptional(j, "thermal_violation_first", t.thermal_violation_first);
    PutOptional(j, "thermal_violation_last", t.thermal_violation_last);
    PutOptional(j, "thermal_violation_first_ms", t.thermal_violation_first_ms);
    PutOptional(j, "thermal_violation_last_ms", t.thermal_violation_last_ms);
    json bins = json::array();
    for (const auto& [bin, n] : t.power_bins) bins.push_back({bin, n});
    j["power_bins"] = std::move(bins);
    return j;
}

diag::GpuTelemetry GpuFrom(const json& j) {
    diag::GpuTelemetry t;
    Get(j, "gpu", &t.gpu);
    Get(j, "minor", &t.minor);
    Get(j, "samples", &t.samples);
    Get(j, "first_ms", &t.first_ms);
    Get(j, "last_ms", &t.last_ms);
    Get(j, "reason_samples", &t.reason_samples);
    Get(j, "power_cap_samples", &t.power_cap_samples);
    Get(j, "thermal_samples", &t.thermal_samples);
    Get(j, "hw_slowdown_samples", &t.hw_slowdown_samples);
    Get(j, "temperature_samples", &t.temperature_samples);
    Get(j, "temperature_max", &t.temperature_max);
    Get(j, "temperature_sum", &t.temperature_sum);
    Get(j, "sm_clock_samples", &t.sm_clock_samples);
    Get(j, "sm_clock_sum", &t.sm_clock_sum);
    GetOptional(j, "power_violation_first", &t.power_violation_first);
    GetOptional(j, "power_violation_last", &t.power_violation_last);
    GetOptional(j, "power_violation_first_ms", &t.power_violation_first_ms);
    GetOptional(j, "power_violation_last_ms", &t.power_violation_last_ms);
    GetOptional(j, "thermal_violation_first", &t.thermal_violation_first);
    GetOptional(j, "thermal_violation_last", &t.thermal_violation_last);
    GetOptional(j, "thermal_violation_first_ms", &t.thermal_violation_first_ms);
    GetOptional(j, "thermal_violation_last_ms", &t.thermal_violation_last_ms);
    if (auto it = j.find("power_bins"); it != j.end()) {
        for (const json& b : *it)
            t.power_bins[b.at(0).get<unsigned>()] = b.at(1).get<std::uint64_t>();
    }
    return t;
}

}  // namespace

std::string TelemetryFile(const std::string& state_dir, const std::string& job, int restart,
                          const std::string& node) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/" + node +
           ".telemetry.json";
}

std::string TelemetryRecordToJson(const TelemetryRecord& r) {
    json j{{"version", r.version}, {"job", r.job}, {"node", r.node}, {"restart", r.restart}};
    json gpus = json::array();
    for (const diag::GpuTelemetry& t : r.gpus) gpus.push_back(GpuJson(t));
    j["gpus"] = std::move(gpus);
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<TelemetryRecord> TelemetryRecordFromJson(const std::string& text) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return MakeError(ErrorCode::kInvalid, "telemetry record: not a JSON object");
    }
    try {
        TelemetryRecord r;
        Get(j, "version", &r.version);
        if (r.version != kTelemetryRecordVersion) {
            return MakeError(ErrorCode::kInvalid, "telemetry record: version " +
                                                      std::to_string(r.version) +
                                                      " is not read; this autoheal reads version " +
                                                      std::to_string(kTelemetryRecordVersion));
        }
        Get(j, "job", &r.job);
        Get(j, "node", &r.node);
        Get(j, "restart", &r.restart);
        if (auto it = j.find("gpus"); it != j.end()) {
            for (const json& g : *it) r.gpus.push_back(GpuFrom(g));
        }
        return r;
    } catch (const std::exception& e) {
        return MakeError(ErrorCode::kInvalid, std::string("telemetry record: ") + e.what());
    }
}

void AddTelemetryEvidence(const std::string& state_dir, const std::string& job, int restart,
                          const std::string& node, diag::EvidenceSet* evidence,
                          std::vector<std::string>* problems) {
    const std::string path = TelemetryFile(state_dir, job, restart, node);
    bool missing = false;  // no agent on the node, sampling off, or the job ran no GPU
    auto text = ReadSmallFile(path, kMaxRecordBytes, &missing);
    if (!text) {
        if (!missing) problems->push_back(text.error());
        return;
    }
    auto record = TelemetryRecordFromJson(*text);
    if (!record) {
        problems->push_back(path + ": " + record.error());
        return;
    }
    for (const diag::GpuTelemetry& t : record->gpus) {
        if (t.samples == 0) continue;
        diag::AddEvidence(evidence, "autoheal-agent telemetry",
                          diag::TelemetryEvidence(diag::Summarize(t)));
    }
}

void CompareJobGpus(const std::vector<diag::EvidenceSet*>& node_evidence) {
    std::vector<diag::Evidence*> items;
    std::vector<diag::GpuTelemetrySummary> summaries;
    for (diag::EvidenceSet* set : node_evidence) {
        for (diag::Evidence& e : set->items) {
            if (e.signature != diag::kGpuTelemetrySignature) continue;
            items.push_back(&e);
            summaries.push_back(diag::SummaryFromEvidence(e));
        }
    }
    const std::vector<diag::PeerStanding> standing = diag::ComparePeers(summaries);
    for (std::size_t i = 0; i < items.size(); ++i) {
        diag::AddPeerFields(items[i], standing[i], items.size());
    }
}

}  // namespace autoheal::remediation
