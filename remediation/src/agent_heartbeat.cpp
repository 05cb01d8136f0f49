#include "autoheal/remediation/agent_heartbeat.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "autoheal/core/files.h"
#include "autoheal/remediation/job_records.h"

namespace autoheal::remediation {

std::string HeartbeatFile(const std::string& state_dir, const std::string& node) {
    return AgentsDir(state_dir) + "/" + node + ".json";
}

std::string HeartbeatToJson(const HeartbeatRecord& r) {
    return nlohmann::json{{"version", r.version},
                          {"node", r.node},
                          {"pid", r.pid},
                          {"started", r.started},
                          {"time", r.time},
                          {"faults", r.faults},
                          {"last_fault", r.last_fault},
                          {"last_fault_time", r.last_fault_time}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
}

Result<HeartbeatRecord> HeartbeatFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return MakeError(ErrorCode::kInvalid, "agent heartbeat: not a JSON object");
    }
    HeartbeatRecord r;
    r.version = j.value("version", 0);
    if (r.version != kHeartbeatVersion) {
        return MakeError(ErrorCode::kInvalid, "agent heartbeat: version " +
                                                  std::to_string(r.version) +
                                                  " is not read: this autoheal reads version " +
                                                  std::to_string(kHeartbeatVersion));
    }
    try {
        r.node = j.value("node", "");
        r.pid = j.value("pid", 0L);
        r.started = j.value("started", std::int64_t{0});
        r.time = j.value("time", std::int64_t{0});
        r.faults = j.value("faults", 0);
        r.last_fault = j.value("last_fault", "");
        r.last_fault_time = j.value("last_fault_time", std::int64_t{0});
    } catch (const nlohmann::json::exception& e) {
        return MakeError(ErrorCode::kInvalid, std::string("agent heartbeat: ") + e.what());
    }
    if (r.node.empty()) return MakeError(ErrorCode::kInvalid, "agent heartbeat: no node");
    return r;
}

std::vector<HeartbeatRecord> ReadHeartbeats(const std::string& state_dir) {
    std::vector<HeartbeatRecord> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(AgentsDir(state_dir), ec)) {
        if (e.path().extension() != ".json") continue;
        auto text = ReadSmallFile(e.path().string(), 1 << 16);
        if (!text) continue;
        auto r = HeartbeatFromJson(*text);
        if (r) out.push_back(std::move(*r));
    }
    std::sort(out.begin(), out.end(),
              [](const HeartbeatRecord& a, const HeartbeatRecord& b) { return a.node < b.node; });
    return out;
}

Heartbeat::Heartbeat(std::string state_dir, std::string node, std::int64_t now)
    : state_dir_(std::move(state_dir)) {
    record_.node = std::move(node);
    record_.pid = static_cast<long>(::getpid());
    record_.started = now;
    // Restarted (systemd, a crash): the faults seen so far stay counted.
    if (auto text = ReadSmallFile(HeartbeatFile(state_dir_, record_.node), 1 << 16)) {
        if (auto old = HeartbeatFromJson(*text)) {
            record_.faults = old->faults;
            record_.last_fault = old->last_fault;
            record_.last_fault_time = old->last_fault_time;
        }
    }
}

void Heartbeat::SawFault(const std::string& rule, std::int64_t now) {
    ++record_.faults;
    record_.last_fault = rule;
    record_.last_fault_time = now;
}

Result<bool> Heartbeat::Write(std::int64_t now) {
    record_.time = now;
    // As the agent's other records: given to the owner of jobs/.
    return WriteJobRecord(state_dir_, HeartbeatFile(state_dir_, record_.node),
                          HeartbeatToJson(record_), 0644);
}

}  // namespace autoheal::remediation
