// autoheal-agent's power and temperature sampling (issue 17, point 5): every
// agent.sample_interval, the GPUs of the jobs running on the node (the hang watch's job list;
// each job's GPUs from its prolog baseline) are read by NVML in one bounded child
// (health::CollectSnapshotIsolated, Scope::kTelemetry: PCI id, minor number, temperature, clock
// event reasons, power draw, SM clock, the power and thermal violation counters), and each
// sample is added to the run's telemetry record on this node (telemetry_record.h), rewritten
// atomically: the node epilog summarises it into `gpu-telemetry` evidence. A restarted agent
// reads the record back and goes on. No job with GPUs on the node: nothing is read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/remediation/telemetry_record.h"

namespace autoheal::agent {

class TelemetrySampler {
  public:
    explicit TelemetrySampler(const AgentEnv& env) : env_(env) {}

    // Samples the GPUs of `jobs` (the node's running jobs) when agent.sample_interval has
    // passed since the last sample; returns one line per problem, for the log.
    std::vector<std::string> Poll(const std::vector<remediation::JobInfo>& jobs);

  private:
    struct Sampled {
        int restart = -1;
        std::vector<unsigned> minors;  // the job's GPUs on this node; empty: none
        remediation::TelemetryRecord record;
    };

    Sampled& Start(const remediation::JobInfo& job);

    const AgentEnv& env_;
    std::map<std::uint32_t, Sampled> jobs_;
    std::int64_t next_ms_ = 0;
};

}  // namespace autoheal::agent
