#include "autoheal/agent/counter_watch.h"

#include <chrono>

#include "autoheal/health/nvml_backend.h"
#include "autoheal/remediation/evidence_sources.h"

namespace autoheal::agent {

std::vector<std::string> CounterWatch::Poll() {
    std::vector<std::string> done;
    if (env_.agent.counter_seconds <= 0) return done;
    const std::int64_t now_ms = SteadyMs(env_.clock);
    if (now_ms < next_ms_) return done;
    next_ms_ = now_ms + static_cast<std::int64_t>(env_.agent.counter_seconds * 1000);
    health::IsolatedSnapshot nvml = health::CollectSnapshotIsolated(
        env_.health.nvml_library, NvmlDeadline(env_), health::Scope::kFull);
    if (!nvml.snapshot) {
        done.push_back(std::string("counters: NVML ") +
                       (nvml.timed_out ? "did not answer in time" : "failed"));
        return done;
    }
    if (last_) {
        diag::EvidenceSet found;
        for (diag::Evidence& e : remediation::NvmlDeltaEvidence(
                 *last_, *nvml.snapshot, remediation::DeltaSpan::kReadings)) {
            diag::AddEvidence(&found, "nvml", std::move(e));
        }
        if (!found.items.empty()) {
            const FaultHandled h = HandleEvidence(env_, found);
            for (const std::string& d : h.done) {
                done.push_back("counters: " + h.cause + " (" + h.rule + "): " + d);
            }
        }
    }
    last_ = std::move(*nvml.snapshot);
    return done;
}

}  // namespace autoheal::agent
