// The health check contract. A check has a name, a tier, what it needs (NVML or the CUDA
// module) and a scope (the node or one GPU); its verdict is a CheckResult. Verdict logic is
// pure (values in, result out) so every boundary is unit-tested with fake values; the GPU
// work that produces the values runs in isolated child processes (runner.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/core/job_options.h"
#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::health {

enum class Status { kPass, kWarn, kFail, kUnknown };
std::string_view StatusName(Status status);  // "pass" | "warn" | "fail" | "unknown"

struct CheckResult {
    std::string check;  // stable name, e.g. "ecc-uncorrected"
    std::string gpu;    // PCI bus id; empty for node-level checks
    Status status = Status::kUnknown;
    std::string summary;  // one line for people and node reasons
    std::vector<std::pair<std::string, std::string>> values;  // measured values
    double seconds = 0;
    // Why it did not pass, where the check can say it in a stable word that rules match
    // (health-check evidence's `reason`): wrong-result, peer-mismatch, cuda-error, slow,
    // pattern-mismatch, timeout. Empty when the check name says it all.
    std::string reason;

    void Set(std::string key, std::string value) {
        values.emplace_back(std::move(key), std::move(value));
    }
};

// What a GPU model is expected to do; the first entry whose `match` is a substring of the
// GPU's name applies.
struct GpuModel {
    std::string match;            // "H100", "H200", "A100"
    double gemm_tflops_bf16 = 0;  // 0: no expectation
    double hbm_gbps = 0;
    double d2d_gbps = 0;
    double h2d_gbps = 0;
    unsigned pcie_gen = 0;  // 0: use the GPU's own maximum
    unsigned pcie_width = 0;
    unsigned nvlinks = 0;  // active links expected; 0: no expectation
};

struct HealthConfig {
    std::string nvml_library = "libnvidia-ml.so.1";
    std::string cuda_module;  // empty: the module next to the programs
    HealthTier default_tier = HealthTier::kQuick;
    bool allow_off = true;  // may a job say --health-check=off
    double quick_budget_seconds = 10;
    double full_budget_seconds = 300;
    double nvml_timeout_seconds = 5;   // an NVML snapshot slower than this is a hang
    bool timeout_is_failure = true;    // a GPU that does not answer fails the node
    double perf_warn_fraction = 0.90;  // of expectation or of the peers' median
    double perf_fail_fraction = 0.75;
    unsigned temperature_margin_c = 5;  // fail at slowdown threshold minus this
    double hbm_test_fraction = 0.02;    // quick tier; full tests 0.5
    std::vector<GpuModel> models;
};

const GpuModel* FindModel(const HealthConfig& config, std::string_view gpu_name);

// The verdict of a whole run.
struct HealthReport {
    HealthTier tier = HealthTier::kQuick;
    Status status = Status::kPass;  // worst of the results (unknown counts as fail when
                                    // config.timeout_is_failure and it was a timeout)
    std::vector<CheckResult> results;
    NodeSnapshot snapshot;  // the NVML baseline
    double seconds = 0;

    // The result that decides the verdict (first fail, else first unknown, else warn).
    const CheckResult* Worst() const;
};

// --- NVML verdicts: one function per check, pure --------------------------------------------
// Node level.
CheckResult CheckDriver(const NodeSnapshot& node);
CheckResult CheckGpuCount(const NodeSnapshot& node, const std::vector<unsigned>& allocated_minors);
// Per GPU.
CheckResult CheckEcc(const GpuSnapshot& gpu);
CheckResult CheckRemappedRows(const GpuSnapshot& gpu);
CheckResult CheckRetiredPages(const GpuSnapshot& gpu);
CheckResult CheckRecoveryAction(const GpuSnapshot& gpu);
CheckResult CheckPcieLink(const GpuSnapshot& gpu, const GpuModel* model);
CheckResult CheckNvLink(const GpuSnapshot& gpu, const GpuModel* model);
// Before a job: fails at the slowdown temperature minus temperature_margin_c. Right after one
// (`after_job`, the epilog's check) a GPU still hot from the job's load is no fault: the same
// reading is a warning, and the next prolog checks that it cooled.
CheckResult CheckThermal(const GpuSnapshot& gpu, const HealthConfig& config,
                         bool after_job = false);
CheckResult CheckClockEvents(const GpuSnapshot& gpu);
CheckResult CheckPersistence(const GpuSnapshot& gpu);
CheckResult CheckLeftovers(const GpuSnapshot& gpu);

// The registry: every NVML check in the order it runs, with its tier.
struct NvmlCheckInfo {
    const char* name;
    HealthTier tier;  // kQuick checks run in both tiers
    const char* what;
};
const std::vector<NvmlCheckInfo>& NvmlChecks();

}  // namespace autoheal::health
