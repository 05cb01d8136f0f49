// The records under state_dir/jobs (remediation/job_records.h): round trips, and what each reader
// refuses by version.
#include "autoheal/remediation/job_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {
namespace {

using ::testing::HasSubstr;

NodeReport SampleReport() {
    NodeReport r;
    r.job = "77";
    r.node = "node2";
    r.restart = 1;
    r.time = 1'800'000'000;
    r.exit_code = "0:9";
    diag::AddEvidence(&r.evidence, "kernel",
                      {"xid",
                       0,
                       12,
                       "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                       {{"xid", "79"}, {"pci", "0000:3b:00"}}});
    // Another signature on the same line: its text travels once.
    diag::AddEvidence(&r.evidence, "kernel",
                      {"context-nvrm-gpu", 0, 12, r.evidence.items[0].text, {}});
    diag::AddEvidence(&r.evidence, "nvml",
                      {"nvml-delta",
                       0,
                       1,
                       "gpu 0000:3b:00.0 ecc_uncorrected_volatile increased by 3",
                       {{"gpu", "0000:3b:00.0"}, {"counter", "ecc_uncorrected_volatile"}}});
    r.evidence.counts[0].second = 700;  // more xid lines than were kept
    diag::AddEvidence(&r.job_output, "job-output",
                      {"cuda-oom", 0, 3, "torch.OutOfMemoryError: CUDA out of memory.", {}});
    r.job_output_read = true;
    r.gpus = {{"0000:3b:00.0", "GPU-1", "S1", "H100"}};
    r.local_cause = "faulty_gpu (xid-79-fallen-off-bus)";
    r.problems = {"kernel log: gone"};
    return r;
}

TEST(NodeReport, TypedEvidenceRoundTrips) {
    const NodeReport r = SampleReport();
    const std::string json = NodeReportToJson(r);
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["version"], kNodeReportVersion);
    EXPECT_TRUE(j["evidence"]["items"][1][3].is_null());  // the text travels once
    EXPECT_EQ(j["evidence"]["items"][0], nlohmann::json::parse(R"(["xid", "kernel", 12,
                  "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                  "xid", "79", "pci", "0000:3b:00"])"));
    auto back = NodeReportFromJson(json);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->version, 2);
    ASSERT_EQ(back->evidence.items.size(), 3u);
    EXPECT_EQ(back->evidence.items[1].text, r.evidence.items[0].text);
    const diag::Evidence& x = back->evidence.items[0];
    EXPECT_EQ(x.signature, "xid");
    EXPECT_EQ(back->evidence.sources[x.source], "kernel");
    EXPECT_EQ(x.line, 12u);
    EXPECT_EQ(x.text, r.evidence.items[0].text);
    EXPECT_EQ(x.Field("xid"), "79");
    EXPECT_EQ(x.Field("pci"), "0000:3b:00");
    const diag::Evidence& d = back->evidence.items[2];
    EXPECT_EQ(back->evidence.sources[d.source], "nvml");
    EXPECT_EQ(d.Field("counter"), "ecc_uncorrected_volatile");
    EXPECT_EQ(back->evidence.Count("xid"), 700u);
    EXPECT_EQ(back->evidence.Count("nvml-delta"), 1u);
    ASSERT_EQ(back->job_output.items.size(), 1u);
    EXPECT_EQ(back->job_output.sources[0], "job-output");
    EXPECT_TRUE(back->job_output_read);
    EXPECT_EQ(back->gpus[0].serial, "S1");
    EXPECT_EQ(back->local_cause, r.local_cause);
    EXPECT_EQ(back->problems, r.problems);
    EXPECT_EQ(NodeReportToJson(*back), json);
}

TEST(NodeReport, OldAndNewerVersionsAreRefusedNamingTheVersion) {
    auto j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j.erase("version");
    j["kernel"] = {"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."};
    auto old = NodeReportFromJson(j.dump());
    ASSERT_FALSE(old);
    EXPECT_EQ(old.code(), ErrorCode::kInvalid);
    EXPECT_THAT(old.error(), HasSubstr("node report: version 1 (no version field) is not read"));
    EXPECT_THAT(old.error(), HasSubstr("this autoheal reads version 2"));
    j["version"] = 3;
    auto newer = NodeReportFromJson(j.dump());
    ASSERT_FALSE(newer);
    EXPECT_THAT(newer.error(),
                HasSubstr("node report: version 3 is not read: this autoheal reads version 2"));
    j["version"] = "2";
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("version is not a whole number"));
}

TEST(NodeReport, MalformedEvidenceItemsAreRefused) {
    auto j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][2][0] = "";
    auto r = NodeReportFromJson(j.dump());
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error(), HasSubstr("node report: evidence: item 3: no signature"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["job_output"]["items"][0][1] = "";
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("job_output: item 1: no source"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][0].push_back("lonely-field");
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("item 1: not a list"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][0][5] = 79;
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(),
                HasSubstr("item 1: a field or value that is not text"));
}

TEST(PrologBaseline, RoundTripsAndReadsVersion1WithoutAVersionField) {
    PrologBaseline b;
    b.time = 1'800'000'000;
    b.kernel_cursor = "kmsg:42";
    health::NodeSnapshot snap;
    snap.driver_present = true;
    health::GpuSnapshot g;
    g.pci_bus_id = "0000:3b:00.0";
    g.ecc_uncorrected_volatile = 1;
    snap.gpus = {g};
    b.snapshot = snap;
    health::HealthReport report;
    report.results = {{"ecc-uncorrected", "0000:3b:00.0", health::Status::kPass, "ok", {}, 0, ""}};
    const std::string json = PrologBaselineToJson(b, &report);
    auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["results"][0]["check"], "ecc-uncorrected");  // for people
    auto back = PrologBaselineFromJson(json);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->kernel_cursor, "kmsg:42");
    EXPECT_EQ(back->time, b.time);
    ASSERT_TRUE(back->snapshot);
    ASSERT_EQ(back->snapshot->gpus.size(), 1u);
    EXPECT_EQ(back->snapshot->gpus[0].ecc_uncorrected_volatile, 1u);

    j.erase("version");  // what the prolog wrote before versions
    back = PrologBaselineFromJson(j.dump());
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->version, 1);
    EXPECT_EQ(back->kernel_cursor, "kmsg:42");

    auto none = PrologBaselineFromJson(PrologBaselineToJson(PrologBaseline{}, nullptr));
    ASSERT_TRUE(none) << none.error();
    EXPECT_FALSE(none->snapshot);

    j["version"] = 2;
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(),
                HasSubstr("prolog baseline: version 2 is not read: this autoheal reads version 1"));
    j["version"] = 1;
    j["kernel_cursor"] = 7;
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(), HasSubstr("kernel_cursor is not text"));
    j["kernel_cursor"] = "kmsg:1";
    j["snapshot"] = "none";
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(), HasSubstr("not an NVML snapshot"));
}

TEST(DecisionRecord, CarriesAVersionAndRefusesNewerOnes) {
    DecisionRecord d;
    d.explanation = "autoheal: requeued 1/3 after faulty_gpu on node2";
    d.cause = "faulty_gpu";
    d.facts.nodes = {"node1", "node2"};
    auto j = nlohmann::json::parse(DecisionRecordToJson(d));
    EXPECT_EQ(j["version"], kDecisionRecordVersion);
    auto back = DecisionRecordFromJson(j.dump());
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->explanation, d.explanation);
    EXPECT_EQ(back->facts.nodes, d.facts.nodes);
    j.erase("version");  // written before versions: version 1
    EXPECT_TRUE(DecisionRecordFromJson(j.dump()));
    j["version"] = 2;
    EXPECT_THAT(DecisionRecordFromJson(j.dump()).error(),
                HasSubstr("decision record: version 2 is not read: this autoheal reads version 1"));
}

}  // namespace
}  // namespace autoheal::remediation
