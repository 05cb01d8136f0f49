// autoheal-agent's heartbeat (agent/): state_dir/jobs/agents/<node>.json (the shared jobs/
// folder, job_records.h AgentsDir), rewritten atomically every agent.heartbeat_interval, read by
// `autoheal status` on the controller (one line per node):
//   {"version": 1, "node", "pid", "started", "time", "faults", "last_fault", "last_fault_time"}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

inline constexpr int kHeartbeatVersion = 1;

struct HeartbeatRecord {
    int version = kHeartbeatVersion;
    std::string node;
    long pid = 0;
    std::int64_t started = 0;
    std::int64_t time = 0;   // the last heartbeat
    int faults = 0;          // interrupting faults seen since it started
    std::string last_fault;  // the rule
    std::int64_t last_fault_time = 0;
};

std::string HeartbeatFile(const std::string& state_dir, const std::string& node);
std::string HeartbeatToJson(const HeartbeatRecord& record);
// Refuses non-JSON, a record without a node and another version.
Result<HeartbeatRecord> HeartbeatFromJson(const std::string& json);
// Every readable heartbeat under AgentsDir(state_dir), sorted by node.
std::vector<HeartbeatRecord> ReadHeartbeats(const std::string& state_dir);

class Heartbeat {
  public:
    Heartbeat(std::string state_dir, std::string node, std::int64_t now);
    void SawFault(const std::string& rule, std::int64_t now);
    Result<bool> Write(std::int64_t now);

  private:
    std::string state_dir_;
    HeartbeatRecord record_;
};

}  // namespace autoheal::remediation
