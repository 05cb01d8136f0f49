// A GPU's power, temperature and clocks over one run of a job (issue 17, point 5): what
// autoheal-agent samples (agent/telemetry_sampler.h), what it keeps for the node epilog
// (GpuTelemetry, in the run's telemetry record, job_records.h), and the summary the node epilog
// turns into `gpu-telemetry` evidence (Summarize), which the controller compares across the
// job's GPUs (ComparePeers: the straggler, the GPUs hotter than their peers). Pure maths: no
// NVML, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/diag/evidence.h"

namespace autoheal::diag {

// One reading of one GPU. Absent: NVML could not tell.
struct GpuSample {
    std::int64_t time_ms = 0;  // when it was read (ms since 1970)
    std::optional<unsigned> power_mw;
    std::optional<unsigned> temperature_c;
    std::optional<unsigned> sm_clock_mhz;
    std::optional<std::uint64_t> clock_event_reasons;  // nvmlClocksEventReason* bits
    std::optional<std::uint64_t> power_violation_ns;   // NVML's counters: they only grow
    std::optional<std::uint64_t> thermal_violation_ns;
};

// The width of the power histogram's bins, in watts.
inline constexpr unsigned kPowerBinWatts = 5;

// Samples of one GPU, accumulated: a bounded size whatever the job's length (the power
// distribution as a histogram of kPowerBinWatts bins).
struct GpuTelemetry {
    std::string gpu;  // PCI id, "0000:3b:00.0"
    unsigned minor = 0;
    std::uint64_t samples = 0;
    std::int64_t first_ms = 0;
    std::int64_t last_ms = 0;
    // The violation counters at the first and the last sample that had them.
    std::optional<std::uint64_t> power_violation_first, power_violation_last;
    std::optional<std::int64_t> power_violation_first_ms, power_violation_last_ms;
    std::optional<std::uint64_t> thermal_violation_first, thermal_violation_last;
    std::optional<std::int64_t> thermal_violation_first_ms, thermal_violation_last_ms;
    // Samples whose clock event reasons were read, and those with each kind of reason active.
    std::uint64_t reason_samples = 0;
    std::uint64_t power_cap_samples = 0;    // software power cap
    std::uint64_t thermal_samples = 0;      // software or hardware thermal slowdown
    std::uint64_t hw_slowdown_samples = 0;  // hardware slowdown, hardware thermal, power brake
    std::uint64_t temperature_samples = 0;
    unsigned temperature_max = 0;
    double temperature_sum = 0;
    std::uint64_t sm_clock_samples = 0;
    double sm_clock_sum = 0;
    std::map<unsigned, std::uint64_t> power_bins;  // watts / kPowerBinWatts -> samples
};

void AddSample(GpuTelemetry* t, const GpuSample& s);

// What the node epilog reports of one GPU (whole numbers, as the evidence's fields are text).
struct GpuTelemetrySummary {
    std::string gpu;
    std::uint64_t samples = 0;
    std::int64_t seconds = 0;  // from the first sample to the last
    // Percent of the time the clocks were held down: by the power policy and by the thermal
    // policy (NVML's violation counters where the GPU has them, else the share of samples with
    // the reason active), and the share of samples in hardware slowdown.
    unsigned power_throttle_pct = 0;
    unsigned thermal_throttle_pct = 0;
    unsigned hw_slowdown_pct = 0;
    unsigned power_p5 = 0, power_p95 = 0;  // watts
    unsigned temp_max = 0, temp_mean = 0;  // C
    unsigned sm_clock_mean = 0;            // MHz; 0 when never read
};

GpuTelemetrySummary Summarize(const GpuTelemetry& t);

// The watts below which `percent` of the samples fall (the middle of that bin); 0 when empty.
unsigned PowerPercentile(const std::map<unsigned, std::uint64_t>& bins, double percent);

// One GPU of a job against the job's others.
struct PeerStanding {
    unsigned clock_vs_peers = 100;  // its mean SM clock, percent of the job's median
    int temp_vs_peers = 0;          // its mean temperature minus the job's median, C
    bool straggler = false;         // the job's slowest GPU, below kStragglerPercent
};

// A GPU whose mean SM clock is below this percent of its job's median is slow enough to name
// (the slowest such GPU is the job's straggler).
inline constexpr unsigned kStragglerPercent = 95;

// One standing per summary, in order. Fewer than two GPUs with a clock: every standing neutral.
std::vector<PeerStanding> ComparePeers(const std::vector<GpuTelemetrySummary>& gpus);

// The `gpu-telemetry` evidence item of a summary (fields in docs/rules.md, "Typed evidence"),
// and the fields ComparePeers adds to it (`clock_vs_peers`, `temp_vs_peers`, `straggler`,
// `peers`).
inline constexpr const char* kGpuTelemetrySignature = "gpu-telemetry";
Evidence TelemetryEvidence(const GpuTelemetrySummary& s);
GpuTelemetrySummary SummaryFromEvidence(const Evidence& e);
void AddPeerFields(Evidence* e, const PeerStanding& p, std::size_t peers);

}  // namespace autoheal::diag
