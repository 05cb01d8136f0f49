#include "autoheal/core/resume_record.h"

#include <nlohmann/json.hpp>

namespace autoheal {

std::string ResumeRecordToJson(const ResumeRecord& r) {
    nlohmann::json j{{"restart", r.restart},
                     {"cause", r.cause},
                     {"explanation", r.explanation},
                     {"excluded", r.excluded}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<ResumeRecord> ResumeRecordFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
    auto str = [&](const char* k) {
        return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
    };
    ResumeRecord r;
    r.restart =
        j.contains("restart") && j["restart"].is_number_integer() ? j["restart"].get<int>() : 0;
    r.cause = str("cause");
    r.explanation = str("explanation");
    r.excluded = str("excluded");
    return r;
}

std::string ResumeRecordPath(const std::string& state_dir, const std::string& job) {
    return state_dir + "/jobs/" + job + "/resume.json";
}

}  // namespace autoheal
