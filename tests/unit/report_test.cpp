// autoheal report's figures (cli/report.h) on hand-computed data, and its page's escaping.
#include "report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "autoheal/diag/taxonomy.h"
#include "telemetry_report.h"

namespace autoheal::cli {
namespace {

using remediation::IncidentRow;
using remediation::RunRecord;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kH = 3600;
constexpr std::int64_t kT0 = 1'700'000'000;
constexpr std::int64_t kUntil = kT0 + std::int64_t{10} * 24 * kH;

RunRecord MakeRun(const std::string& job, int run, int nodes, std::int64_t start, std::int64_t end,
                  const std::string& outcome, const std::string& cause, bool requeued) {
    RunRecord r;
    r.job = job;
    r.run = run;
    r.nodes = nodes;
    r.start_time = start;
    r.end_time = end;
    r.outcome = outcome;
    r.cause = cause;
    r.requeued = requeued;
    return r;
}

IncidentRow Incident(std::int64_t time, const std::string& node, const std::string& gpu,
                     const std::string& serial, const std::string& cause) {
    IncidentRow i;
    i.time = time;
    i.node = node;
    i.gpu = gpu;
    i.gpu_serial = serial;
    i.cause = cause;
    return i;
}

// Ten days; node-hours 156, 4 interruptions (2 faulty_gpu, 1 nccl_timeout, 1 dependency).
std::vector<RunRecord> SampleRuns() {
    return {
        MakeRun("A", 0, 4, kT0, kT0 + 10 * kH, "blamed", "faulty_gpu", true),        // 40 node-h
        MakeRun("A", 1, 4, kT0 + 10 * kH + kH / 2, kT0 + 20 * kH, "ok", "", false),  // 38
        MakeRun("B", 0, 2, kT0, kT0 + 5 * kH, "unexplained", "nccl_timeout", true),  // 10
        MakeRun("B", 1, 2, kT0 + 6 * kH, kT0 + 16 * kH, "ok", "", false),            // 20
        MakeRun("C", 0, 8, kT0, kT0 + 2 * kH, "own", "user_error", false),           // 16
        MakeRun("D", 0, 1, kT0, kT0 + 28 * kH, "ok", "", false),                     // 28
        MakeRun("E", 0, 2, kT0, kT0 + kH, "other", "dependency", false),             // 2
        MakeRun("H", 0, 2, kUntil - 2 * kH, kUntil - kH, "blamed", "faulty_gpu", true),  // 2
        // After the window: not counted, but H/1 is the run that followed H/0 (gap 2 h).
        MakeRun("H", 1, 2, kUntil + kH, kUntil + 5 * kH, "ok", "", false),
        MakeRun("G", 0, 100, kUntil, kUntil + kH + 1, "blamed", "nic", false),
    };
}

ReportOptions Window() {
    ReportOptions o;
    o.since = kT0;
    o.until = kUntil;
    return o;
}

TEST(Report, InterruptionsByCauseInTheShapeOfTable5) {
    const ReliabilityReport r = ComputeReport(SampleRuns(), {}, Window());
    EXPECT_EQ(r.runs, 8);
    EXPECT_EQ(r.ok, 3);
    EXPECT_EQ(r.own, 1);
    EXPECT_EQ(r.blamed, 2);
    EXPECT_EQ(r.unexplained, 1);
    EXPECT_EQ(r.other, 1);
    EXPECT_EQ(r.interruptions, 4);
    ASSERT_EQ(r.causes.size(), 3u);
    EXPECT_EQ(r.causes[0].cause, "faulty_gpu");
    EXPECT_EQ(r.causes[0].component, "Faulty GPU");
    EXPECT_EQ(r.causes[0].category, "GPU");
    EXPECT_EQ(r.causes[0].interruptions, 2);
    EXPECT_DOUBLE_EQ(r.causes[0].percent, 50.0);
    EXPECT_EQ(r.causes[1].cause, "dependency");  // ties: by name
    EXPECT_EQ(r.causes[1].category, "Software");
    EXPECT_DOUBLE_EQ(r.causes[1].percent, 25.0);
    EXPECT_EQ(r.causes[2].cause, "nccl_timeout");
    EXPECT_EQ(r.causes[2].category, "Unknown");
    ASSERT_EQ(r.categories.size(), 3u);
    EXPECT_EQ(r.categories[0].category, "GPU");
    EXPECT_DOUBLE_EQ(r.categories[0].percent, 50.0);
}

TEST(Report, MtbfAndHoursLost) {
    const ReliabilityReport r = ComputeReport(SampleRuns(), {}, Window());
    EXPECT_DOUBLE_EQ(r.window_hours, 240.0);
    EXPECT_DOUBLE_EQ(r.node_hours, 156.0);
    EXPECT_DOUBLE_EQ(r.own_node_hours, 16.0);
    ASSERT_TRUE(r.mtbf_hours.has_value());
    EXPECT_DOUBLE_EQ(*r.mtbf_hours, 60.0);        // 240 h / 4
    EXPECT_DOUBLE_EQ(*r.node_mtbf_hours, 39.0);   // 156 node-h / 4
    EXPECT_DOUBLE_EQ(r.lost_node_hours, 54.0);    // 40 + 10 + 2 + 2
    EXPECT_DOUBLE_EQ(r.restart_node_hours, 8.0);  // 4 × 0.5 + 2 × 1 + 2 × 2
    EXPECT_DOUBLE_EQ(r.causes[0].lost_node_hours, 42.0);
    EXPECT_DOUBLE_EQ(r.causes[0].restart_node_hours, 6.0);
    EXPECT_DOUBLE_EQ(r.causes[1].restart_node_hours, 0.0);  // dependency: not requeued
    EXPECT_DOUBLE_EQ(r.causes[2].restart_node_hours, 2.0);
    ASSERT_EQ(r.buckets.size(), 10u);  // a day each
    EXPECT_EQ(r.bucket_seconds, 86400);
    EXPECT_EQ(r.buckets[0].interruptions, 3);
    EXPECT_EQ(r.buckets[9].interruptions, 1);
    EXPECT_EQ(r.buckets[9].start, kT0 + 9 * std::int64_t{86400});
}

TEST(Report, EttrAndYoungDalyFromMeasuredFigures) {
    const ReliabilityReport r = ComputeReport(SampleRuns(), {}, Window());
    const EttrEstimate& e = r.ettr;
    EXPECT_EQ(e.job_nodes, 8);  // the largest job in the window (G's 100 nodes ended after it)
    EXPECT_EQ(e.job_nodes_from, "largest job in the window");
    EXPECT_DOUBLE_EQ(e.rate_per_node_hour, 4.0 / 156.0);
    EXPECT_TRUE(e.restart_overhead_measured);
    EXPECT_EQ(e.restarts_measured, 3);
    EXPECT_DOUBLE_EQ(e.restart_overhead, 4200.0);  // (1800 + 3600 + 7200) / 3
    // M = 1 / (8 × 4/156) = 4.875 h = 17550 s.
    ASSERT_TRUE(e.job_mtbf_hours.has_value());
    EXPECT_NEAR(*e.job_mtbf_hours, 4.875, 1e-12);
    // 1 − (4200 + 1800) / 17550 = 0.658120
    EXPECT_NEAR(e.ettr, 0.658120, 1e-6);
    // − 60/3600
    EXPECT_NEAR(e.ettr_with_ckpt_cost, 0.641453, 1e-6);
    // Δt* = sqrt(2 × 60 × 17550) = 1451.207
    ASSERT_TRUE(e.optimal_interval.has_value());
    EXPECT_NEAR(*e.optimal_interval, 1451.207, 1e-3);
    // 1 − 60/1451.207 − (4200 + 725.604) / 17550 = 0.677994
    ASSERT_TRUE(e.ettr_at_optimum.has_value());
    EXPECT_NEAR(*e.ettr_at_optimum, 0.677994, 1e-6);
    EXPECT_GT(*e.ettr_at_optimum, e.ettr_with_ckpt_cost);
    EXPECT_TRUE(r.notes.empty());
}

TEST(Report, JobNodesOptionWinsAndEttrIsClamped) {
    ReportOptions o = Window();
    o.job_nodes = 100000;
    const ReliabilityReport r = ComputeReport(SampleRuns(), {}, o);
    EXPECT_EQ(r.ettr.job_nodes, 100000);
    EXPECT_EQ(r.ettr.job_nodes_from, "--job-nodes");
    EXPECT_DOUBLE_EQ(r.ettr.ettr, 0.0);
    EXPECT_DOUBLE_EQ(r.ettr.ettr_with_ckpt_cost, 0.0);
    // Δt* = sqrt(2·60·M) > M here: the approximation is flagged.
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("Young/Daly")));
}

TEST(Report, NoFailuresMeansEttrOneAndNoOptimum) {
    std::vector<RunRecord> runs = {MakeRun("A", 0, 16, kT0, kT0 + 10 * kH, "ok", "", false),
                                   MakeRun("B", 0, 4, kT0, kT0 + kH, "own", "user_error", false)};
    const ReliabilityReport r = ComputeReport(runs, {}, Window());
    EXPECT_EQ(r.interruptions, 0);
    EXPECT_TRUE(r.causes.empty());
    EXPECT_FALSE(r.mtbf_hours.has_value());
    EXPECT_EQ(r.ettr.job_nodes, 16);
    EXPECT_DOUBLE_EQ(r.ettr.rate_per_node_hour, 0.0);
    EXPECT_DOUBLE_EQ(r.ettr.ettr, 1.0);
    EXPECT_NEAR(r.ettr.ettr_with_ckpt_cost, 1.0 - 60.0 / 3600.0, 1e-12);
    EXPECT_FALSE(r.ettr.job_mtbf_hours.has_value());
    EXPECT_FALSE(r.ettr.optimal_interval.has_value());
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("no failures measured")));
}

TEST(Report, EmptyStoreUsesTheDefaultJobSize) {
    const ReliabilityReport r = ComputeReport({}, {}, Window());
    EXPECT_EQ(r.runs, 0);
    EXPECT_EQ(r.ettr.job_nodes, kDefaultJobNodes);
    EXPECT_EQ(r.ettr.job_nodes_from, "default");
    EXPECT_DOUBLE_EQ(r.ettr.ettr, 1.0);
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("no decided job runs")));
}

// The demo's store: one run of two nodes that failed after a minute. Its rate would be
// 1 / (2 node-minutes), 720,000 per 1,000 node-days, and its ETTR 0: the report says why not.
TEST(Report, TooFewRunsSaySoInsteadOfAnAbsurdRateAndEttr) {
    std::vector<RunRecord> runs = {MakeRun("A", 0, 2, kT0, kT0 + 60, "blamed", "faulty_gpu", true)};
    const ReliabilityReport r = ComputeReport(runs, {}, Window());
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_THAT(r.ettr.too_few, HasSubstr("only 1 job run and 0.0 node-hours"));
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("too few to measure a failure rate")));
    const auto j = nlohmann::json::parse(ReportJson(r));
    EXPECT_TRUE(j["ettr"]["ettr"].is_null());
    EXPECT_FALSE(j["ettr"]["too_few"].is_null());
    const std::string html = ReportHtml(r);
    EXPECT_THAT(html, HasSubstr("id=\"ettr-too-few\""));
    EXPECT_THAT(html, testing::Not(HasSubstr("id=\"ettr-table\"")));
    // Enough of them: estimated, no such note.
    EXPECT_TRUE(ComputeReport(SampleRuns(), {}, Window()).ettr.too_few.empty());
}

TEST(Report, RestartOverheadFallsBackWhenNoneWasMeasured) {
    ReportOptions o = Window();
    o.restart_overhead_fallback = 900;
    // Requeued, but its next run is not recorded (still running): nothing measured.
    std::vector<RunRecord> runs = {
        MakeRun("A", 0, 10, kT0, kT0 + 100 * kH, "blamed", "nic", true),
    };
    const ReliabilityReport r = ComputeReport(runs, {}, o);
    EXPECT_FALSE(r.ettr.restart_overhead_measured);
    EXPECT_DOUBLE_EQ(r.ettr.restart_overhead, 900.0);
    EXPECT_DOUBLE_EQ(r.restart_node_hours, 0.0);
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("restart overhead not measured")));
    // r = 1 / 1000 node-h; N = 10: 1 − 10/1000 × (900 + 1800)/3600 = 0.9925
    EXPECT_NEAR(r.ettr.ettr, 0.9925, 1e-12);
    EXPECT_EQ(r.causes[0].category, "Network");
}

TEST(Report, RepeatOffendersByNodeAndByGpu) {
    std::vector<IncidentRow> incidents = {
        Incident(kT0 + 1, "n1", "0000:3b:00.0", "S1", "faulty_gpu"),
        Incident(kT0 + 2, "n1", "0000:3b:00.0", "S1", "faulty_gpu"),
        Incident(kT0 + 3, "n2", "", "", "nvlink"),
        Incident(kT0 + 4, "n3", "0000:5d:00.0", "", "gpu_hbm_memory"),
        Incident(kT0 + 5, "n3", "0000:5d:00.0", "", "gpu_hbm_memory"),
        Incident(kT0 + 6, "n3", "", "", "user_error"),  // not the node's fault
        Incident(kT0 + 7, "n4", "0000:9a:00.0", "S2", "gpu_sram_memory"),
        Incident(kT0 + 8, "n4", "0000:9a:00.0", "", "faulty_gpu"),  // serial not read: S2
        Incident(kT0 + 9, "n5", "0000:1b:00.0", "S3", "faulty_gpu"),
        Incident(kT0 + 10, "n6", "0000:1b:00.0", "S3", "faulty_gpu"),  // the board moved
        Incident(kT0 + 11, "", "", "", "faulty_gpu"),                  // job-level incidents
        Incident(kT0 + 12, "", "", "", "faulty_gpu"),
    };
    const ReliabilityReport r = ComputeReport({}, incidents, Window());
    EXPECT_EQ(r.node_incidents, 9);
    ASSERT_EQ(r.node_offenders.size(), 3u);
    EXPECT_EQ(r.node_offenders[0].node, "n4");  // same count: most recent first
    EXPECT_EQ(r.node_offenders[0].causes, "faulty_gpu, gpu_sram_memory");
    EXPECT_EQ(r.node_offenders[1].node, "n3");
    EXPECT_EQ(r.node_offenders[1].incidents, 2);
    EXPECT_EQ(r.node_offenders[1].causes, "gpu_hbm_memory x2");
    EXPECT_EQ(r.node_offenders[2].node, "n1");
    EXPECT_EQ(r.node_offenders[2].first, kT0 + 1);
    EXPECT_EQ(r.node_offenders[2].last, kT0 + 2);

    ASSERT_EQ(r.gpu_offenders.size(), 4u);
    EXPECT_EQ(r.gpu_offenders[0].serial, "S3");
    EXPECT_EQ(r.gpu_offenders[0].nodes, "n5, n6");
    EXPECT_EQ(r.gpu_offenders[1].serial, "S2");
    EXPECT_EQ(r.gpu_offenders[1].incidents, 2);
    EXPECT_EQ(r.gpu_offenders[2].serial, "");
    EXPECT_EQ(r.gpu_offenders[2].nodes, "n3");
    EXPECT_EQ(r.gpu_offenders[2].pci, "0000:5d:00.0");
    EXPECT_EQ(r.gpu_offenders[3].serial, "S1");
}

TEST(Report, TruncatedAnswersAreNoted) {
    Truncated truncated;
    truncated.runs = true;
    truncated.incidents = true;
    const ReliabilityReport r = ComputeReport(SampleRuns(), {}, Window(), truncated);
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("newest runs of the window are missing")));
    EXPECT_THAT(r.notes, testing::Contains(HasSubstr("count only the newest")));
}

TEST(Report, FormulasByHand) {
    // 1 − 10 × 1e-5 × (100 + 1800) = 0.81
    EXPECT_NEAR(EstimateEttr(10, 1e-5, 100, 3600), 0.81, 1e-12);
    EXPECT_NEAR(EstimateEttrWithCheckpointCost(10, 1e-5, 100, 3600, 36), 0.80, 1e-12);
    EXPECT_DOUBLE_EQ(EstimateEttr(10, 0, 100, 3600), 1.0);
    EXPECT_DOUBLE_EQ(EstimateEttr(10, 1, 100, 3600), 0.0);
    // sqrt(2 × 60 / 1e-4) = sqrt(1.2e6)
    ASSERT_TRUE(YoungDalyInterval(10, 1e-5, 60).has_value());
    EXPECT_NEAR(*YoungDalyInterval(10, 1e-5, 60), 1095.445115, 1e-6);
    EXPECT_FALSE(YoungDalyInterval(10, 0, 60).has_value());
    EXPECT_FALSE(YoungDalyInterval(10, 1e-5, 0).has_value());
}

TEST(Report, EveryTaxonomyCauseHasAComponentAndACategory) {
    for (const diag::CauseInfo& c : diag::Causes()) {
        EXPECT_NE(CauseComponent(c.name), c.name) << c.name;
        EXPECT_NE(CauseCategory(c.name), "") << c.name;
    }
    EXPECT_EQ(CauseCategory("network_switch_cable"), "Network");
    EXPECT_EQ(CauseCategory("host_memory"), "Host");
    EXPECT_EQ(CauseCategory("io_network"), "Storage");
    EXPECT_EQ(CauseCategory("not_a_cause"), "Unknown");
    EXPECT_EQ(CauseComponent("not_a_cause"), "not_a_cause");
}

TEST(Report, PageEscapesWhatTheStoreSaysAndLoadsNothing) {
    std::vector<IncidentRow> incidents = {
        Incident(kT0 + 1, "<script>alert(1)</script>", "0000:3b:00.0", "\"><img src=x>",
                 "faulty_gpu"),
        Incident(kT0 + 2, "<script>alert(1)</script>", "0000:3b:00.0", "\"><img src=x>",
                 "faulty_gpu"),
    };
    std::vector<RunRecord> runs = {
        MakeRun("A", 0, 4, kT0, kT0 + kH, "blamed", "<b>cause</b>", false),
    };
    const std::string html = ReportHtml(ComputeReport(runs, incidents, Window()));
    EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
    EXPECT_THAT(html, HasSubstr("&quot;&gt;&lt;img src=x&gt;"));
    EXPECT_THAT(html, HasSubstr("&lt;b&gt;cause&lt;/b&gt;"));
    EXPECT_THAT(html, Not(HasSubstr("<script")));
    EXPECT_THAT(html, Not(HasSubstr("<img")));
    EXPECT_THAT(html, Not(HasSubstr("<b>cause")));
    EXPECT_THAT(html, Not(HasSubstr("http:")));
    EXPECT_THAT(html, Not(HasSubstr("https:")));
    EXPECT_THAT(html, Not(HasSubstr("url(")));
    EXPECT_THAT(html, HasSubstr("Content-Security-Policy\" content=\"default-src 'none'"));
    EXPECT_THAT(html, HasSubstr("<svg"));
    EXPECT_THAT(html, HasSubstr("<table id=\"causes\">"));
}

TEST(Report, JsonCarriesTheFigures) {
    const auto j = nlohmann::json::parse(ReportJson(ComputeReport(SampleRuns(), {}, Window())));
    EXPECT_EQ(j["interruptions"], 4);
    EXPECT_EQ(j["outcomes"]["own"], 1);
    EXPECT_EQ(j["causes"][0]["cause"], "faulty_gpu");
    EXPECT_DOUBLE_EQ(j["mtbf_hours"].get<double>(), 60.0);
    EXPECT_EQ(j["ettr"]["job_nodes"], 8);
    EXPECT_NEAR(j["ettr"]["optimal_interval_seconds"].get<double>(), 1451.207, 1e-3);
    const auto none = nlohmann::json::parse(ReportJson(ComputeReport({}, {}, Window())));
    EXPECT_TRUE(none["mtbf_hours"].is_null());
    EXPECT_TRUE(none["ettr"]["optimal_interval_seconds"].is_null());
}

remediation::GpuTelemetryRow GpuRow(const std::string& node, unsigned temp, unsigned thermal,
                                    bool straggler) {
    remediation::GpuTelemetryRow r;
    r.job = "1";
    r.node = node;
    r.time = 1'700'000'000;
    r.summary.seconds = 7200;  // 2 GPU-hours
    r.summary.temp_mean = temp;
    r.summary.temp_max = temp + 5;
    r.summary.thermal_throttle_pct = thermal;
    r.summary.power_p5 = 300;
    r.summary.power_p95 = 500;
    r.straggler = straggler;
    return r;
}

TEST(TelemetryReport, ThrottledGpuHoursHottestNodesAndSwings) {
    const TelemetryReport r =
        ComputeTelemetryReport({GpuRow("node1", 60, 0, false), GpuRow("node2", 80, 50, true),
                                GpuRow("node2", 70, 25, false), GpuRow("node3", 65, 0, false)});
    EXPECT_EQ(r.gpu_runs, 4);
    EXPECT_DOUBLE_EQ(r.gpu_hours, 8);
    EXPECT_DOUBLE_EQ(r.thermal_gpu_hours, 1.5);  // half of 2 h, a quarter of 2 h
    EXPECT_DOUBLE_EQ(r.power_gpu_hours, 0);
    EXPECT_EQ(r.stragglers, 1);
    ASSERT_EQ(r.hottest.size(), 3u);
    EXPECT_EQ(r.hottest[0].node, "node2");
    EXPECT_DOUBLE_EQ(r.hottest[0].temp_mean, 75);
    EXPECT_EQ(r.hottest[0].temp_max, 85u);
    EXPECT_EQ(r.hottest[0].stragglers, 1);
    EXPECT_EQ(r.hottest[1].node, "node3");
    ASSERT_EQ(r.swing_by_hour.size(), 1u);
    EXPECT_DOUBLE_EQ(r.swing_by_hour[0].second, 200);
    const nlohmann::json j = TelemetryReportJson(r);
    EXPECT_DOUBLE_EQ(j["throttled_gpu_hours"]["thermal"].get<double>(), 1.5);
    EXPECT_EQ(j["hottest_nodes"][0]["node"], "node2");
    EXPECT_TRUE(ComputeTelemetryReport({}).hottest.empty());
}

// The page's section: the figures, the node names escaped, a note when nothing was sampled.
TEST(TelemetryReport, HtmlSectionShowsTheFiguresAndEscapesNames) {
    const TelemetryReport r =
        ComputeTelemetryReport({GpuRow("node<1>", 60, 0, false), GpuRow("node2", 80, 50, true)});
    const std::string html = TelemetryHtml(r);
    EXPECT_NE(html.find("id=\"gpu-telemetry\""), std::string::npos);
    EXPECT_NE(html.find("<b>4.0</b><span>GPU-hours sampled"), std::string::npos) << html;
    EXPECT_NE(html.find("1.0 h"), std::string::npos) << html;  // thermal: half of 2 h
    EXPECT_NE(html.find("node&lt;1&gt;"), std::string::npos) << html;
    EXPECT_EQ(html.find("node<1>"), std::string::npos);
    EXPECT_NE(html.find("<td class=\"n\">200</td>"), std::string::npos) << html;
    EXPECT_NE(TelemetryHtml(ComputeTelemetryReport({})).find("No GPU was sampled"),
              std::string::npos);
    const std::string page = ReportHtml(ComputeReport({}, {}, Window()), html);
    EXPECT_NE(page.find("id=\"gpu-telemetry\""), std::string::npos);
    EXPECT_LT(page.find("id=\"gpu-telemetry\""), page.find("</body>"));
}

}  // namespace
}  // namespace autoheal::cli
