#include "autoheal/agent/telemetry_sampler.h"

#include <algorithm>
#include <chrono>

#include "autoheal/core/files.h"
#include "autoheal/health/nvml_backend.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/job_records.h"

namespace autoheal::agent {
namespace rem = autoheal::remediation;

namespace {

diag::GpuSample SampleOf(const health::GpuSnapshot& g, std::int64_t time_ms) {
    diag::GpuSample s;
    s.time_ms = time_ms;
    s.power_mw = g.power_mw;
    s.temperature_c = g.temperature_c;
    s.sm_clock_mhz = g.sm_clock_mhz;
    s.clock_event_reasons = g.clock_event_reasons;
    s.power_violation_ns = g.power_violation_ns;
    s.thermal_violation_ns = g.thermal_violation_ns;
    return s;
}

diag::GpuTelemetry& GpuOf(rem::TelemetryRecord* record, const health::GpuSnapshot& g,
                          unsigned minor) {
    for (diag::GpuTelemetry& t : record->gpus) {
        if (t.minor == minor) return t;
    }
    diag::GpuTelemetry t;
    t.gpu = g.pci_bus_id;
    t.minor = minor;
    record->gpus.push_back(std::move(t));
    return record->gpus.back();
}

}  // namespace

// A job first seen (or a new run of it): its GPUs on this node and the record a previous agent
// left for this run, if any.
TelemetrySampler::Sampled& TelemetrySampler::Start(const rem::JobInfo& job) {
    Sampled& s = jobs_[job.id];
    if (s.restart == job.restart_count) return s;
    s = Sampled{.restart = job.restart_count};
    const std::string id = std::to_string(job.id);
    s.record.job = id;
    s.record.node = env_.node;
    s.record.restart = job.restart_count;
    auto baseline = rem::ReadPrologBaseline(env_.config.state_dir, id, env_.node);
    if (baseline && !baseline->job_gpus.empty()) {
        auto minors = health::ParseGpuList(baseline->job_gpus);
        if (minors) s.minors = *minors;
    }
    auto text =
        ReadSmallFile(rem::TelemetryFile(env_.config.state_dir, id, job.restart_count, env_.node),
                      rem::kMaxRecordBytes);
    auto kept =
        text ? rem::TelemetryRecordFromJson(*text) : Result<rem::TelemetryRecord>(text.status());
    if (kept && kept->restart == job.restart_count && kept->node == env_.node) {
        s.record = std::move(*kept);
    }
    return s;
}

std::vector<std::string> TelemetrySampler::Poll(const std::vector<rem::JobInfo>& jobs) {
    std::vector<std::string> problems;
    if (env_.agent.sample_seconds <= 0) return problems;
    const std::int64_t now_ms = SteadyMs(env_.clock);
    if (now_ms < next_ms_) return problems;
    next_ms_ = now_ms + static_cast<std::int64_t>(env_.agent.sample_seconds * 1000);
    std::map<std::uint32_t, Sampled> kept;
    std::vector<Sampled*> sampled;
    for (const rem::JobInfo& job : jobs) {
        if (auto it = jobs_.find(job.id); it != jobs_.end()) kept[job.id] = std::move(it->second);
    }
    jobs_ = std::move(kept);
    for (const rem::JobInfo& job : jobs) {
        Sampled& s = Start(job);
        if (!s.minors.empty()) sampled.push_back(&s);
    }
    if (sampled.empty()) return problems;
    const health::IsolatedSnapshot nvml = health::CollectSnapshotIsolated(
        env_.health.nvml_library, NvmlDeadline(env_), health::Scope::kTelemetry);
    if (!nvml.snapshot || !nvml.snapshot->driver_present) {
        problems.push_back("telemetry: NVML " + (nvml.timed_out
                                                     ? std::string("did not answer in time")
                                                 : nvml.snapshot ? nvml.snapshot->problem
                                                                 : "failed"));
        return problems;
    }
    const std::int64_t time_ms = SteadyMs(env_.clock);
    for (Sampled* s : sampled) {
        for (const health::GpuSnapshot& g : nvml.snapshot->gpus) {
            const unsigned minor = g.minor.value_or(g.index);
            if (std::find(s->minors.begin(), s->minors.end(), minor) == s->minors.end()) continue;
            diag::AddSample(&GpuOf(&s->record, g, minor), SampleOf(g, time_ms));
        }
        const std::string path =
            rem::TelemetryFile(env_.config.state_dir, s->record.job, s->record.restart, env_.node);
        auto w = rem::WriteJobRecord(env_.config.state_dir, path,
                                     rem::TelemetryRecordToJson(s->record), 0644);
        if (!w) problems.push_back("telemetry: " + w.error());
    }
    return problems;
}

}  // namespace autoheal::agent
