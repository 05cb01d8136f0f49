#include "autoheal/remediation/job_records.h"

#include <nlohmann/json.hpp>

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
    j["actions_done"] = r.actions_done;
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
    r.restart = j.value("restart", 0);
    r.time = j.value("time", static_cast<std::int64_t>(0));
    r.exit_code = Str(j, "exit_code");
    r.kernel = Strings(j, "kernel");
    r.nvml = Strings(j, "nvml");
    r.health = Strings(j, "health");
    r.job_output = Strings(j, "job_output");
    r.job_output_read = j.value("job_output_read", false);
    if (j.contains("gpus") && j["gpus"].is_array()) {
        for (const auto& g : j["gpus"]) {
            if (!g.is_object()) continue;
            r.gpus.push_back({Str(g, "pci"), Str(g, "uuid"), Str(g, "serial"), Str(g, "name")});
        }
    }
    r.local_cause = Str(j, "local_cause");
    r.actions_done = Strings(j, "actions_done");
    r.problems = Strings(j, "problems");
    if (r.node.empty()) return MakeError("no node named");
    return r;
}

}  // namespace autoheal::remediation
