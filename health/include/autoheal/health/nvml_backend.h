// NVML, loaded with dlopen (libnvidia-ml.so.1 by default; the path is configurable). NVML's C
// API is declared by this project for the functions it uses (nvml_api.h), so autoheal builds and
// runs where no NVIDIA driver is installed: a missing library is reported as "no NVIDIA driver",
// never as a failure.
//
// CollectSnapshot runs in the caller's process and may block for as long as the driver does
// (a GPU that fell off the bus can stall NVML for minutes): callers run it in a child process
// with a deadline (isolation.h).
#pragma once

#include <string>
#include <vector>

#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::health {

// Reads every GPU NVML sees. `library` is the path or soname to dlopen. Never throws; errors
// of single queries are recorded in GpuSnapshot::errors, a missing library or a failed
// nvmlInit in NodeSnapshot::problem with driver_present = false.
NodeSnapshot CollectSnapshot(const std::string& library);

}  // namespace autoheal::health
