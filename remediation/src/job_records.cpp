#include "autoheal/remediation/job_records.h"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {

bool SafePathPart(const std::string& s) {
    return !s.empty() && s.size() < 128 && s.front() != '.' &&
           s.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789._-") == std::string::npos;
}

std::string JobDir(const std::string& state_dir, const std::string& job) {
    return state_dir + "/jobs/" + job;
}
std::string PrologFile(const std::string& state_dir, const std::string& job,
                       const std::string& node) {
    return JobDir(state_dir, job) + "/" + node + ".prolog.json";
}
std::string DecisionFile(const std::string& state_dir, const std::string& job, int restart) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/decision.json";
}
std::string EpilogFile(const std::string& state_dir, const std::string& job, int restart,
                       const std::string& node) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/" + node + ".epilog.json";
}

namespace {

std::vector<std::string> Strings(const nlohmann::json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key) || !j[key].is_array()) return out;
    for (const auto& v : j[key]) {
        if (v.is_string()) out.push_back(v.get<std::string>());
    }
    return out;
}

std::string Str(const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// An integer field, or `fallback` when it is missing, not an integer or out of int's range.
template <typename T>
T Int(const nlohmann::json& j, const char* key, T fallback) {
    if (!j.contains(key) || !j[key].is_number_integer()) return fallback;
    const auto v = j[key].get<std::int64_t>();
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return fallback;
    return static_cast<T>(v);
}

bool Bool(const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

}  // namespace

std::string NodeReportToJson(const NodeReport& r) {
    nlohmann::json j;
    j["job"] = r.job;
    j["node"] = r.node;
    j["restart"] = r.restart;
    j["time"] = r.time;
    j["exit_code"] = r.exit_code;
    j["kernel"] = r.kernel;
    j["nvml"] = r.nvml;
    j["health"] = r.health;
    j["job_output"] = r.job_output;
    j["job_output_read"] = r.job_output_read;
    j["gpus"] = nlohmann::json::array();
    for (const GpuIdentity& g : r.gpus) {
        j["gpus"].push_back(
            {{"pci", g.pci}, {"uuid", g.uuid}, {"serial", g.serial}, {"name", g.name}});
    }
    j["local_cause"] = r.local_cause;
    j["problems"] = r.problems;
    // Invalid UTF-8 from a log is replaced rather than refused.
    return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<NodeReport> NodeReportFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
    NodeReport r;
    r.job = Str(j, "job");
    r.node = Str(j, "node");
    r.restart = Int(j, "restart", 0);
    r.time = Int(j, "time", std::int64_t{0});
    r.exit_code = Str(j, "exit_code");
    r.kernel = Strings(j, "kernel");
    r.nvml = Strings(j, "nvml");
    r.health = Strings(j, "health");
    r.job_output = Strings(j, "job_output");
    r.job_output_read = Bool(j, "job_output_read");
    if (j.contains("gpus") && j["gpus"].is_array()) {
        for (const auto& g : j["gpus"]) {
            if (!g.is_object()) continue;
            r.gpus.push_back({Str(g, "pci"), Str(g, "uuid"), Str(g, "serial"), Str(g, "name")});
        }
    }
    r.local_cause = Str(j, "local_cause");
    r.problems = Strings(j, "problems");
    if (r.node.empty()) return MakeError("no node named");
    return r;
}

std::string DecisionRecordToJson(const DecisionRecord& d) {
    nlohmann::json facts = {
        {"failed", d.facts.failed},           {"restart_count", d.facts.restart_count},
        {"requeueable", d.facts.requeueable}, {"nodes", d.facts.nodes},
        {"excluded", d.facts.excluded},       {"missing_reports", d.facts.missing_reports}};
    if (d.facts.auto_resume) facts["auto_resume"] = *d.facts.auto_resume;
    nlohmann::json node_actions = nlohmann::json::array();
    for (const NodeAction& a : d.node_actions) {
        node_actions.push_back({{"node", a.node}, {"action", a.action}, {"gpu", a.gpu}});
    }
    return nlohmann::json{{"node_actions", node_actions},
                          {"explanation", d.explanation},
                          {"requeue", d.requeue},
                          {"cause", d.cause},
                          {"rule", d.rule},
                          {"outcome", d.outcome},
                          {"culprits", d.culprits},
                          {"facts", facts}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<DecisionRecord> DecisionRecordFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
    DecisionRecord d;
    d.explanation = Str(j, "explanation");
    d.requeue = Bool(j, "requeue");
    d.cause = Str(j, "cause");
    d.rule = Str(j, "rule");
    d.outcome = Str(j, "outcome");
    d.culprits = Strings(j, "culprits");
    if (j.contains("node_actions") && j["node_actions"].is_array()) {
        for (const auto& a : j["node_actions"]) {
            if (!a.is_object()) continue;
            d.node_actions.push_back({Str(a, "node"), Str(a, "action"), Str(a, "gpu")});
        }
    }
    if (j.contains("facts") && j["facts"].is_object()) {
        const nlohmann::json& f = j["facts"];
        d.facts.failed = Bool(f, "failed");
        d.facts.restart_count = Int(f, "restart_count", 0);
        d.facts.requeueable = !f.contains("requeueable") || Bool(f, "requeueable");
        d.facts.nodes = Strings(f, "nodes");
        d.facts.excluded = Strings(f, "excluded");
        d.facts.missing_reports = Strings(f, "missing_reports");
        if (f.contains("auto_resume") && f["auto_resume"].is_number_integer()) {
            d.facts.auto_resume = Int(f, "auto_resume", 0);
        }
    }
    return d;
}

}  // namespace autoheal::remediation
