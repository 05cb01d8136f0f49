#include "autoheal/diag/gpu_telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace autoheal::diag {
namespace {

// nvmlClocksEventReason* bits (health/gpu_snapshot.h names them for the checks; core sees no
// health type).
constexpr std::uint64_t kSwPowerCap = 0x4;
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermal = 0x20;
constexpr std::uint64_t kHwThermal = 0x40;
constexpr std::uint64_t kHwPowerBrake = 0x80;

void Counter(std::uint64_t value, std::int64_t time_ms, std::optional<std::uint64_t>* first,
             std::optional<std::int64_t>* first_ms, std::optional<std::uint64_t>* last,
             std::optional<std::int64_t>* last_ms) {
    // A counter that went back (the driver reloaded) starts the window again.
    if (!*first || (*last && value < **last)) {
        *first = value;
        *first_ms = time_ms;
    }
    *last = value;
    *last_ms = time_ms;
}

unsigned Percent(double part, double whole) {
    if (whole <= 0) return 0;
    return static_cast<unsigned>(std::lround(std::clamp(100 * part / whole, 0.0, 100.0)));
}

// Percent of the window between two counter readings that the counter grew (ns against ms).
std::optional<unsigned> CounterPercent(const std::optional<std::uint64_t>& first,
                                       const std::optional<std::uint64_t>& last,
                                       const std::optional<std::int64_t>& first_ms,
                                       const std::optional<std::int64_t>& last_ms) {
    if (!first || !last || !first_ms || !last_ms || *last_ms <= *first_ms) return std::nullopt;
    return Percent(static_cast<double>(*last - *first) / 1e6,
                   static_cast<double>(*last_ms - *first_ms));
}

unsigned Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double m = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return static_cast<unsigned>(std::lround(m));
}

std::uint64_t FieldNumber(const Evidence& e, std::string_view name) {
    auto v = e.Field(name);
    return v ? std::strtoull(std::string(*v).c_str(), nullptr, 10) : 0;
}

}  // namespace

void AddSample(GpuTelemetry* t, const GpuSample& s) {
    if (t->samples == 0) t->first_ms = s.time_ms;
    t->last_ms = std::max(t->last_ms, s.time_ms);
    ++t->samples;
    if (s.power_mw) ++t->power_bins[*s.power_mw / 1000 / kPowerBinWatts];
    if (s.temperature_c) {
        ++t->temperature_samples;
        t->temperature_sum += *s.temperature_c;
        t->temperature_max = std::max(t->temperature_max, *s.temperature_c);
    }
    if (s.sm_clock_mhz) {
        ++t->sm_clock_samples;
        t->sm_clock_sum += *s.sm_clock_mhz;
    }
    if (s.clock_event_reasons) {
        const std::uint64_t r = *s.clock_event_reasons;
        ++t->reason_samples;
        if (r & kSwPowerCap) ++t->power_cap_samples;
        if (r & (kSwThermal | kHwThermal)) ++t->thermal_samples;
        if (r & (kHwSlowdown | kHwThermal | kHwPowerBrake)) ++t->hw_slowdown_samples;
    }
    if (s.power_violation_ns) {
        Counter(*s.power_violation_ns, s.time_ms, &t->power_violation_first,
                &t->power_violation_first_ms, &t->power_violation_last,
                &t->power_violation_last_ms);
    }
    if (s.thermal_violation_ns) {
        Counter(*s.thermal_violation_ns, s.time_ms, &t->thermal_violation_first,
                &t->thermal_violation_first_ms, &t->thermal_violation_last,
                &t->thermal_violation_last_ms);
    }
}

unsigned PowerPercentile(const std::map<unsigned, std::uint64_t>& bins, double percent) {
    std::uint64_t total = 0;
    for (const auto& [bin, n] : bins) total += n;
    if (total == 0) return 0;
    // The smallest bin whose cumulative count reaches percent of the samples (nearest rank).
    const auto rank = static_cast<std::uint64_t>(
        std::max(1.0, std::ceil(percent / 100 * static_cast<double>(total))));
    std::uint64_t seen = 0;
    for (const auto& [bin, n] : bins) {
        seen += n;
        if (seen >= rank) return bin * kPowerBinWatts + kPowerBinWatts / 2;
    }
    return bins.rbegin()->first * kPowerBinWatts + kPowerBinWatts / 2;
}

GpuTelemetrySummary Summarize(const GpuTelemetry& t) {
    GpuTelemetrySummary s;
    s.gpu = t.gpu;
    s.samples = t.samples;
    s.seconds = (t.last_ms - t.first_ms) / 1000;
    const double reasons = static_cast<double>(t.reason_samples);
    s.power_throttle_pct =
        CounterPercent(t.power_violation_first, t.power_violation_last, t.power_violation_first_ms,
                       t.power_violation_last_ms)
            .value_or(Percent(static_cast<double>(t.power_cap_samples), reasons));
    s.thermal_throttle_pct =
        CounterPercent(t.thermal_violation_first, t.thermal_violation_last,
                       t.thermal_violation_first_ms, t.thermal_violation_last_ms)
            .value_or(Percent(static_cast<double>(t.thermal_samples), reasons));
    s.hw_slowdown_pct = Percent(static_cast<double>(t.hw_slowdown_samples), reasons);
    s.power_p5 = PowerPercentile(t.power_bins, 5);
    s.power_p95 = PowerPercentile(t.power_bins, 95);
    s.temp_max = t.temperature_max;
    if (t.temperature_samples > 0) {
        s.temp_mean = static_cast<unsigned>(
            std::lround(t.temperature_sum / static_cast<double>(t.temperature_samples)));
    }
    if (t.sm_clock_samples > 0) {
        s.sm_clock_mean = static_cast<unsigned>(
            std::lround(t.sm_clock_sum / static_cast<double>(t.sm_clock_samples)));
    }
    return s;
}

std::vector<PeerStanding> ComparePeers(const std::vector<GpuTelemetrySummary>& gpus) {
    std::vector<PeerStanding> out(gpus.size());
    std::vector<double> clocks, temps;
    for (const GpuTelemetrySummary& g : gpus) {
        if (g.sm_clock_mean > 0) clocks.push_back(g.sm_clock_mean);
        if (g.samples > 0) temps.push_back(g.temp_mean);
    }
    if (temps.size() >= 2) {
        const int median = static_cast<int>(Median(temps));
        for (std::size_t i = 0; i < gpus.size(); ++i) {
            if (gpus[i].samples > 0) {
                out[i].temp_vs_peers = static_cast<int>(gpus[i].temp_mean) - median;
            }
        }
    }
    if (clocks.size() < 2) return out;
    const unsigned median = Median(clocks);
    if (median == 0) return out;
    std::optional<std::size_t> slowest;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        if (gpus[i].sm_clock_mean == 0) continue;
        out[i].clock_vs_peers =
            static_cast<unsigned>(std::lround(100.0 * gpus[i].sm_clock_mean / median));
        if (!slowest || gpus[i].sm_clock_mean < gpus[*slowest].sm_clock_mean) slowest = i;
    }
    if (slowest && out[*slowest].clock_vs_peers < kStragglerPercent) {
        out[*slowest].straggler = true;
    }
    return out;
}

Evidence TelemetryEvidence(const GpuTelemetrySummary& s) {
    Evidence e;
    e.signature = kGpuTelemetrySignature;
    auto n = [](auto v) { return std::to_string(v); };
    e.text = "GPU " + s.gpu + " over " + n(s.seconds) + " s (" + n(s.samples) +
             " samples): throttled " + n(s.power_throttle_pct) + "% by power, " +
             n(s.thermal_throttle_pct) + "% by temperature, " + n(s.hw_slowdown_pct) +
             "% in hardware slowdown; power " + n(s.power_p5) + "-" + n(s.power_p95) +
             " W (p5-p95), temperature max " + n(s.temp_max) + " C, SM clock " +
             n(s.sm_clock_mean) + " MHz";
    e.fields = {{"gpu", s.gpu},
                {"samples", n(s.samples)},
                {"seconds", n(s.seconds)},
                {"power_throttle_pct", n(s.power_throttle_pct)},
                {"thermal_throttle_pct", n(s.thermal_throttle_pct)},
                {"hw_slowdown_pct", n(s.hw_slowdown_pct)},
                {"power_p5", n(s.power_p5)},
                {"power_p95", n(s.power_p95)},
                {"power_swing", n(s.power_p95 - std::min(s.power_p5, s.power_p95))},
                {"temp_max", n(s.temp_max)},
                {"temp_mean", n(s.temp_mean)},
                {"sm_clock_mean", n(s.sm_clock_mean)}};
    return e;
}

GpuTelemetrySummary SummaryFromEvidence(const Evidence& e) {
    GpuTelemetrySummary s;
    s.gpu = std::string(e.Field("gpu").value_or(""));
    s.samples = FieldNumber(e, "samples");
    s.seconds = static_cast<std::int64_t>(FieldNumber(e, "seconds"));
    s.power_throttle_pct = static_cast<unsigned>(FieldNumber(e, "power_throttle_pct"));
    s.thermal_throttle_pct = static_cast<unsigned>(FieldNumber(e, "thermal_throttle_pct"));
    s.hw_slowdown_pct = static_cast<unsigned>(FieldNumber(e, "hw_slowdown_pct"));
    s.power_p5 = static_cast<unsigned>(FieldNumber(e, "power_p5"));
    s.power_p95 = static_cast<unsigned>(FieldNumber(e, "power_p95"));
    s.temp_max = static_cast<unsigned>(FieldNumber(e, "temp_max"));
    s.temp_mean = static_cast<unsigned>(FieldNumber(e, "temp_mean"));
    s.sm_clock_mean = static_cast<unsigned>(FieldNumber(e, "sm_clock_mean"));
    return s;
}

void AddPeerFields(Evidence* e, const PeerStanding& p, std::size_t peers) {
    e->SetField("clock_vs_peers", std::to_string(p.clock_vs_peers));
    e->SetField("temp_vs_peers", std::to_string(p.temp_vs_peers));
    e->SetField("straggler", p.straggler ? "yes" : "no");
    e->SetField("peers", std::to_string(peers));
    if (p.straggler) {
        e->text += "; the job's straggler: SM clock " + std::to_string(p.clock_vs_peers) +
                   "% of its peers' median";
    }
}

}  // namespace autoheal::diag
