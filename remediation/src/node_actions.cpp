#include "autoheal/remediation/node_actions.h"

#include <nlohmann/json.hpp>

#include "autoheal/remediation/job_records.h"

namespace autoheal::remediation {

std::string NodeResultFile(const std::string& state_dir, const std::string& job, int restart,
                           const std::string& node) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/" + node + ".result.json";
}

std::string NodeResultsToJson(const std::string& node, const std::vector<NodeActionResult>& r) {
    nlohmann::json results = nlohmann::json::array();
    for (const NodeActionResult& a : r) {
        results.push_back(
            {{"action", a.action}, {"gpu", a.gpu}, {"outcome", a.outcome}, {"detail", a.detail}});
    }
    return nlohmann::json{{"version", kNodeResultVersion}, {"node", node}, {"results", results}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::vector<NodeActionResult>> NodeResultsFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return MakeError(ErrorCode::kInvalid, "node result: not a JSON object");
    }
    if (!j.contains("version") || j["version"] != kNodeResultVersion) {
        return MakeError(ErrorCode::kInvalid, "node result: refused: version is not " +
                                                  std::to_string(kNodeResultVersion));
    }
    std::vector<NodeActionResult> out;
    if (!j.contains("results") || !j["results"].is_array()) return out;
    auto str = [](const nlohmann::json& o, const char* key) {
        return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
    };
    for (const auto& o : j["results"]) {
        if (!o.is_object()) continue;
        out.push_back({str(o, "action"), str(o, "gpu"), str(o, "outcome"), str(o, "detail")});
    }
    return out;
}

}  // namespace autoheal::remediation
