// The power and temperature summary of a GPU's samples (diag/gpu_telemetry.h): throttle shares
// from NVML's violation counters and from clock event reasons, power percentiles from the
// histogram, the job's straggler; and the shipped telemetry rules matching the summary's numbers
// with {at_least: N}.
#include "autoheal/diag/gpu_telemetry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/rules.h"
#include "diag_test_util.h"

namespace autoheal::diag {
namespace {

using ::testing::ElementsAre;

GpuSample At(std::int64_t ms) {
    GpuSample s;
    s.time_ms = ms;
    return s;
}

TEST(GpuTelemetry, ThrottleSharesComeFromTheViolationCounters) {
    GpuTelemetry t;
    // 10 s: the thermal counter grows 4 s, the power counter 1 s.
    for (int i = 0; i <= 10; ++i) {
        GpuSample s = At(1000LL * i);
        s.thermal_violation_ns = 5'000'000'000ULL + 400'000'000ULL * i;
        s.power_violation_ns = 100'000'000ULL * i;
        s.clock_event_reasons = 0;
        AddSample(&t, s);
    }
    const GpuTelemetrySummary s = Summarize(t);
    EXPECT_EQ(s.samples, 11u);
    EXPECT_EQ(s.seconds, 10);
    EXPECT_EQ(s.thermal_throttle_pct, 40u);
    EXPECT_EQ(s.power_throttle_pct, 10u);
    EXPECT_EQ(s.hw_slowdown_pct, 0u);
}

TEST(GpuTelemetry, WithoutCountersTheReasonsSharesDecide) {
    GpuTelemetry t;
    // 4 samples: power cap in 1, HW slowdown in 2 (one of them HW thermal: thermal too).
    const std::uint64_t reasons[] = {0x4, 0x8, 0x40, 0x0};
    for (int i = 0; i < 4; ++i) {
        GpuSample s = At(1000LL * i);
        s.clock_event_reasons = reasons[i];
        AddSample(&t, s);
    }
    const GpuTelemetrySummary s = Summarize(t);
    EXPECT_EQ(s.power_throttle_pct, 25u);
    EXPECT_EQ(s.thermal_throttle_pct, 25u);
    EXPECT_EQ(s.hw_slowdown_pct, 50u);
}

TEST(GpuTelemetry, ACounterThatWentBackStartsItsWindowAgain) {
    GpuTelemetry t;
    GpuSample a = At(0), b = At(10'000), c = At(20'000);
    a.thermal_violation_ns = 90'000'000'000ULL;  // before a driver reload
    b.thermal_violation_ns = 0;
    c.thermal_violation_ns = 5'000'000'000ULL;  // 5 s of 10 s since the reload
    for (const GpuSample& s : {a, b, c}) AddSample(&t, s);
    EXPECT_EQ(Summarize(t).thermal_throttle_pct, 50u);
}

TEST(GpuTelemetry, PowerPercentilesAndTemperature) {
    GpuTelemetry t;
    // 100 samples: 300 W to 399 W, one per watt; temperatures 50..59.
    for (int i = 0; i < 100; ++i) {
        GpuSample s = At(100LL * i);
        s.power_mw = (300 + i) * 1000;
        s.temperature_c = 50 + i % 10;
        s.sm_clock_mhz = 1980;
        AddSample(&t, s);
    }
    const GpuTelemetrySummary s = Summarize(t);
    // The 5th sample is 304 W (bin 300-304: reported as its middle), the 95th 394 W (390-394).
    EXPECT_EQ(s.power_p5, 302u);
    EXPECT_EQ(s.power_p95, 392u);
    EXPECT_EQ(s.temp_max, 59u);
    EXPECT_EQ(s.temp_mean, 55u);  // 54.5 rounds up
    EXPECT_EQ(s.sm_clock_mean, 1980u);
    EXPECT_EQ(PowerPercentile({}, 50), 0u);
}

GpuTelemetrySummary Gpu(const std::string& id, unsigned clock, unsigned temp) {
    GpuTelemetrySummary s;
    s.gpu = id;
    s.samples = 10;
    s.sm_clock_mean = clock;
    s.temp_mean = temp;
    return s;
}

TEST(GpuTelemetry, TheSlowestGpuWellBelowTheMedianIsTheStraggler) {
    const std::vector<PeerStanding> p = ComparePeers(
        {Gpu("a", 1980, 60), Gpu("b", 1400, 75), Gpu("c", 1970, 61), Gpu("d", 1960, 59)});
    EXPECT_FALSE(p[0].straggler);
    EXPECT_TRUE(p[1].straggler);
    EXPECT_EQ(p[1].clock_vs_peers, 71u);   // 1400 of the median 1965
    EXPECT_EQ(p[1].temp_vs_peers, 14);     // 75 against the median 60.5, rounded to 61
    EXPECT_EQ(p[0].clock_vs_peers, 101u);  // faster than the median: over 100
    EXPECT_EQ(p[3].temp_vs_peers, -2);
}

TEST(GpuTelemetry, NoStragglerWhenAllRunAlike) {
    const std::vector<PeerStanding> p =
        ComparePeers({Gpu("a", 1980, 60), Gpu("b", 1900, 60), Gpu("c", 1970, 60)});
    for (const PeerStanding& s : p) EXPECT_FALSE(s.straggler);
    // One GPU alone has no peers: neutral.
    const std::vector<PeerStanding> one = ComparePeers({Gpu("a", 900, 90)});
    EXPECT_FALSE(one[0].straggler);
    EXPECT_EQ(one[0].clock_vs_peers, 100u);
    EXPECT_EQ(one[0].temp_vs_peers, 0);
}

TEST(GpuTelemetry, EvidenceRoundTripsTheSummary) {
    GpuTelemetrySummary s = Gpu("0000:3b:00.0", 1500, 70);
    s.hw_slowdown_pct = 42;
    s.power_p5 = 300;
    s.power_p95 = 650;
    Evidence e = TelemetryEvidence(s);
    EXPECT_EQ(e.signature, "gpu-telemetry");
    EXPECT_EQ(e.Field("power_swing"), "350");
    const GpuTelemetrySummary back = SummaryFromEvidence(e);
    EXPECT_EQ(back.gpu, s.gpu);
    EXPECT_EQ(back.hw_slowdown_pct, 42u);
    EXPECT_EQ(back.sm_clock_mean, 1500u);
    AddPeerFields(&e, PeerStanding{.clock_vs_peers = 76, .temp_vs_peers = 12, .straggler = true},
                  8);
    EXPECT_EQ(e.Field("straggler"), "yes");
    EXPECT_EQ(e.Field("peers"), "8");
}

// ---- The shipped rules on the summary's numbers.

Diagnosis DiagnoseItems(std::vector<Evidence> items) {
    EvidenceSet set;
    for (Evidence& e : items) AddEvidence(&set, "telemetry", std::move(e));
    return Diagnose(testing::ShippedRules(), set, {});
}

Evidence Item(const std::vector<std::pair<std::string, std::string>>& fields) {
    Evidence e = TelemetryEvidence(Gpu("0000:3b:00.0", 1980, 60));
    for (const auto& [k, v] : fields) e.SetField(k, v);
    return e;
}

TEST(GpuTelemetryRules, HardwareSlowdownOverAFifthOfTheJobDrains) {
    Diagnosis d = DiagnoseItems({Item({{"hw_slowdown_pct", "20"}})});
    EXPECT_EQ(d.rule, "gpu-slowdown-during-job");
    EXPECT_EQ(d.cause, "gpu_slowdown");
    EXPECT_THAT(d.actions, ElementsAre("drain", "notify"));
    EXPECT_EQ(d.culprit.gpu, "0000:3b:00.0");
    EXPECT_EQ(DiagnoseItems({Item({{"thermal_throttle_pct", "85"}})}).rule,
              "gpu-slowdown-during-job");
}

TEST(GpuTelemetryRules, LessSlowdownDoesNothing) {
    Diagnosis d = DiagnoseItems({Item({{"hw_slowdown_pct", "19"},
                                       {"thermal_throttle_pct", "5"},
                                       {"straggler", "no"},
                                       {"temp_vs_peers", "9"}})});
    EXPECT_EQ(d.cause, "unknown");
    EXPECT_TRUE(d.actions.empty());
}

TEST(GpuTelemetryRules, AStragglerOrAHotGpuIsNotified) {
    Diagnosis slow = DiagnoseItems({Item({{"straggler", "yes"}})});
    EXPECT_EQ(slow.rule, "gpu-straggler");
    EXPECT_EQ(slow.cause, "gpu_straggler");
    EXPECT_THAT(slow.actions, ElementsAre("notify"));
    EXPECT_EQ(DiagnoseItems({Item({{"temp_vs_peers", "10"}})}).rule, "gpu-straggler");
    // A negative standing (cooler than the median) is below any threshold.
    EXPECT_EQ(DiagnoseItems({Item({{"temp_vs_peers", "-12"}})}).cause, "unknown");
}

TEST(GpuTelemetryRules, AtLeastIsANumberTestAndNotTakesItsComplement) {
    const char* kRules = R"(
- rule: hot
  match: {signature: gpu-telemetry, where: {temp_max: {at_least: 85.5}}}
  cause: gpu_thermal
  actions: [notify]
- rule: not-hot
  match: {signature: gpu-telemetry, where: {temp_max: {not: {at_least: 85.5}}}}
  cause: unknown
  actions: []
  priority: 1
)";
    RuleLoader loader;
    loader.Add("t.yaml", kRules);
    LoadResult result;
    const std::optional<RuleSet> rules = loader.Compile(&result);
    ASSERT_TRUE(result.ok() && rules) << result.Format();
    auto rule_for = [&](const std::string& temp) {
        EvidenceSet set;
        AddEvidence(&set, "t", Item({{"temp_max", temp}}));
        return Diagnose(*rules, set, {}).rule;
    };
    EXPECT_EQ(rule_for("86"), "hot");
    EXPECT_EQ(rule_for("85.5"), "hot");
    EXPECT_EQ(rule_for("85"), "not-hot");
    EXPECT_EQ(rule_for("hot"), "not-hot");  // not a number: never at least anything

    RuleLoader bad;
    bad.Add("b.yaml", R"(
- rule: bad
  match: {signature: gpu-telemetry, where: {temp_max: {at_least: warm}}}
  cause: gpu_thermal
  actions: [notify]
)");
    LoadResult bad_result;
    EXPECT_FALSE(bad.Compile(&bad_result));
    ASSERT_FALSE(bad_result.ok());
    EXPECT_THAT(bad_result.Format(), ::testing::HasSubstr("at_least: expected a number"));
}

}  // namespace
}  // namespace autoheal::diag
