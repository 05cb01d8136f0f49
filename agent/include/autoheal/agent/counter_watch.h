// autoheal-agent's NVML counter watch (issue 15, point 1): every agent.counter_interval the
// node's GPUs are read in one bounded child (health::CollectSnapshotIsolated, the prolog's full
// snapshot: the GPUs NVML finds, ECC counts, retired pages, remapped rows, NVLink states, the
// recovery action) and compared with the previous reading by the epilog's own comparator
// (NvmlDeltaEvidence). Each change is an nvml-delta evidence item (source "nvml"), handled as a
// kernel record is (HandleEvidence): a GPU NVML no longer finds is the Xid 79 rule's gpu_lost, a
// failed row remap the Xid 64 rule's. What no kernel line says is found while the job runs, on
// an idle node before a job lands there. Each change is seen once (the next reading compares
// with this one). The first reading after the agent starts is only the baseline: a change while
// it was down is the node epilog's to find (it compares with the prolog's snapshot).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::agent {

class CounterWatch {
  public:
    explicit CounterWatch(const AgentEnv& env) : env_(env) {}

    // Reads the counters when agent.counter_interval has passed since the last reading; returns
    // one line per thing done or problem, for the log.
    std::vector<std::string> Poll();

  private:
    const AgentEnv& env_;
    std::optional<health::NodeSnapshot> last_;
    std::int64_t next_ms_ = 0;
};

}  // namespace autoheal::agent
