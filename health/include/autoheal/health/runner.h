// Runs the checks of a tier on a node's GPUs within a hard time budget. GPU work happens in
// child processes: NVML's snapshot in one, the CUDA checks in one per GPU (in parallel), so a
// GPU that hangs the driver cannot hang the caller. A child that misses its deadline is killed
// and its checks are `unknown` with the reason.
#pragma once

#include <string>
#include <vector>

#include "autoheal/health/check.h"

namespace autoheal::health {

struct RunRequest {
    HealthTier tier = HealthTier::kQuick;
    std::vector<unsigned> gpu_minors;  // the job's GPUs (/dev/nvidiaN); empty: every GPU
    HealthConfig config;
    std::string cuda_module;  // resolved path of the CUDA check module; empty: none
    bool after_job = false;   // the epilog's check: a GPU still hot from the job is no fault
};

HealthReport RunHealthChecks(const RunRequest& request);

// "0,1,4-5" (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES) -> {0, 1, 4, 5}; nullopt on bad syntax.
std::optional<std::vector<unsigned>> ParseGpuList(std::string_view list);

// One line per result and the verdict, for logs and the CLI.
std::string FormatReport(const HealthReport& report);
std::string ReportToJson(const HealthReport& report);

}  // namespace autoheal::health
