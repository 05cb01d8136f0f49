// CollectSnapshotIsolated: the NVML snapshot in a child with a deadline, for the prolog's and
// epilog's checks (runner.cpp), autoheal-agent's hang watch and its telemetry sampling.
#include "autoheal/health/gpu_snapshot.h"
#include "autoheal/health/nvml_backend.h"
#include "isolation.h"

namespace autoheal::health {

IsolatedSnapshot CollectSnapshotIsolated(const std::string& library,
                                         std::chrono::steady_clock::time_point deadline,
                                         Scope scope) {
    const std::vector<Child> child = RunInChildren(
        {[&](int fd) { WriteAll(fd, SnapshotToJson(CollectSnapshot(library, scope))); }}, deadline);
    IsolatedSnapshot out;
    out.timed_out = child[0].timed_out;
    out.exit_status = child[0].exit_status;
    if (child[0].finished) out.snapshot = SnapshotFromJson(child[0].output);
    return out;
}

}  // namespace autoheal::health
