// NVML, loaded with dlopen (libnvidia-ml.so.1 by default; the path is configurable). NVML's C
// API is declared by this project for the functions it uses (nvml_api.h), so autoheal builds and
// runs where no NVIDIA driver is installed: a missing library is reported as "no NVIDIA driver",
// never as a failure.
//
// CollectSnapshot runs in the caller's process and may block for as long as the driver does
// (a GPU that fell off the bus can stall NVML for minutes): callers run it in a child process
// with a deadline (isolation.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::health {

// What a snapshot reads of each GPU: everything (the checks, the prolog's baseline), or only
// what autoheal-agent samples while a job runs (PCI id, minor number, temperature, clock event
// reasons, power, SM clock, violation counters), which costs a few NVML calls per GPU.
enum class Scope { kFull, kTelemetry };

// Reads every GPU NVML sees. `library` is the path or soname to dlopen. Never throws; errors
// of single queries are recorded in GpuSnapshot::errors, a missing library or a failed
// nvmlInit in NodeSnapshot::problem with driver_present = false.
NodeSnapshot CollectSnapshot(const std::string& library, Scope scope = Scope::kFull);

// CollectSnapshot in a child process (isolation.h), waited for until `deadline`. `snapshot` is
// absent when the child did not finish: `timed_out` (NVML did not answer: it was killed) or it
// failed (`exit_status`). The caller must be single-threaded (it forks).
struct IsolatedSnapshot {
    std::optional<NodeSnapshot> snapshot;
    bool timed_out = false;
    int exit_status = -1;
};
IsolatedSnapshot CollectSnapshotIsolated(const std::string& library,
                                         std::chrono::steady_clock::time_point deadline,
                                         Scope scope = Scope::kFull);

}  // namespace autoheal::health
