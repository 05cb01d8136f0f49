#include "autoheal/core/resume_record.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace autoheal {

std::string ResumeRecordToJson(const ResumeRecord& r) {
    nlohmann::json j{{"restart", r.restart},
                     {"cause", r.cause},
                     {"explanation", r.explanation},
                     {"excluded", r.excluded},
                     {"stalled_requeues", r.stalled_requeues}};
    if (r.checkpoint_step) {
        j["checkpoint"] = {{"step", *r.checkpoint_step}, {"mtime", r.checkpoint_mtime}};
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<ResumeRecord> ResumeRecordFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
    auto str = [&](const char* k) {
        return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
    };
    ResumeRecord r;
    // An integer outside int's range (a corrupted or hand-edited file) reads as 0, like a
    // missing one, rather than wrapping to some other run's number.
    if (j.contains("restart") && j["restart"].is_number_integer()) {
        const nlohmann::json& v = j["restart"];
        if (v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::numeric_limits<int>::max()
                                   : v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                         v.get<std::int64_t>() <= std::numeric_limits<int>::max()) {
            r.restart = static_cast<int>(v.get<std::int64_t>());
        }
    }
    r.cause = str("cause");
    r.explanation = str("explanation");
    r.excluded = str("excluded");
    if (j.contains("stalled_requeues") && j["stalled_requeues"].is_number_integer()) {
        r.stalled_requeues = static_cast<int>(
            std::clamp<std::int64_t>(j["stalled_requeues"].get<std::int64_t>(), 0, 1000));
    }
    if (j.contains("checkpoint") && j["checkpoint"].is_object()) {
        const nlohmann::json& c = j["checkpoint"];
        if (c.contains("step") && c["step"].is_number_integer()) {
            r.checkpoint_step = c["step"].get<std::int64_t>();
        }
        if (c.contains("mtime") && c["mtime"].is_number_integer()) {
            r.checkpoint_mtime = c["mtime"].get<std::int64_t>();
        }
    }
    return r;
}

std::string ResumeRecordPath(const std::string& state_dir, const std::string& job) {
    return state_dir + "/jobs/" + job + "/resume.json";
}

}  // namespace autoheal
