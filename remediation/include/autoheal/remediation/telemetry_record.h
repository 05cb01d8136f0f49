// autoheal-agent's samples of a run's GPUs on one node (issue 17, point 5), handed to that
// node's epilog: jobs/<job>/run<N>/<node>.telemetry.json (TelemetryFile), one accumulator per
// GPU of the job on the node (diag::GpuTelemetry: counts, sums, the violation counters' first
// and last readings, a histogram of the power draw), rewritten atomically after each sample
// (agent.sample_interval), so its size does not grow with the job's length and the epilog reads
// all of it or the previous one. A restarted agent reads it back and goes on. The node epilog
// summarises it into `gpu-telemetry` evidence (AddTelemetryEvidence).
#pragma once

#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/diag/gpu_telemetry.h"

namespace autoheal::remediation {

inline constexpr int kTelemetryRecordVersion = 1;

struct TelemetryRecord {
    int version = kTelemetryRecordVersion;
    std::string job;
    std::string node;
    int restart = 0;
    std::vector<diag::GpuTelemetry> gpus;  // by minor number
};

std::string TelemetryFile(const std::string& state_dir, const std::string& job, int restart,
                          const std::string& node);
std::string TelemetryRecordToJson(const TelemetryRecord& record);
// Refuses non-JSON, a version other than kTelemetryRecordVersion and fields of the wrong type,
// naming them.
Result<TelemetryRecord> TelemetryRecordFromJson(const std::string& json);

// The node epilog: one `gpu-telemetry` item per GPU of the run's telemetry record on this node
// (none when the agent sampled nothing: no record, or no sample). A record that cannot be read
// is a problem line, not evidence.
void AddTelemetryEvidence(const std::string& state_dir, const std::string& job, int restart,
                          const std::string& node, diag::EvidenceSet* evidence,
                          std::vector<std::string>* problems);

// The controller: compares the `gpu-telemetry` items of all the job's node reports
// (diag::ComparePeers) and adds each item's standing among them (clock_vs_peers, temp_vs_peers,
// straggler, peers), before the rules read them.
void CompareJobGpus(const std::vector<diag::EvidenceSet*>& node_evidence);

}  // namespace autoheal::remediation
